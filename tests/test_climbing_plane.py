"""The footholds' regression plane and the desired base pose (seed 004 Sec. 2.1, eq. 1)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from limbtree.skills.climbing import (
    BaseFootprint,
    ClimbingInputError,
    RegressionPlane,
    base_penetration,
    desired_base_pose,
    fit_plane,
    level_base_pose,
)

FEET = np.array([[0.14, 0.14, 0.0], [-0.14, 0.14, 0.0], [-0.14, -0.14, 0.0], [0.14, -0.14, 0.0]])
FOOTPRINT = BaseFootprint(0.08, 0.08, 0.03)


def on_plane(normal, offset, xy):
    """Points ``(x, y, z)`` with ``normal · p = offset``."""
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    z = (offset - xy @ n[:2]) / n[2]
    return np.column_stack([xy, z]), n


def test_the_plane_of_coplanar_points_is_exact():
    xy = np.random.default_rng(0).uniform(-0.2, 0.2, size=(6, 2))
    points, normal = on_plane([0.2, -0.1, 1.0], 0.03, xy)
    plane = fit_plane(points)
    np.testing.assert_allclose(plane.normal, normal, atol=1e-12)
    np.testing.assert_allclose(plane.centroid, points.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(plane.distances(points), 0.0, atol=1e-14)
    assert plane.residual_rms_m == pytest.approx(0.0, abs=1e-12)


def test_the_normal_points_up_whatever_the_order_of_the_points():
    points, normal = on_plane([0.1, 0.0, 1.0], 0.0, FEET[:, :2])
    assert fit_plane(points[::-1]).normal @ [0, 0, 1] > 0
    np.testing.assert_allclose(fit_plane(points[::-1]).normal, normal, atol=1e-12)
    assert fit_plane(points, up=(0, 0, -1)).normal[2] < 0


def test_the_plane_of_noisy_points_is_the_orthogonal_least_squares_one():
    rng = np.random.default_rng(1)
    points, _ = on_plane([0.3, 0.2, 1.0], 0.01, rng.uniform(-0.2, 0.2, size=(40, 2)))
    points += rng.normal(0.0, 0.01, size=points.shape)
    plane = fit_plane(points)
    # In the fitted plane's own frame, the ordinary least-squares fit of the heights on the
    # in-plane coordinates (numpy.linalg.lstsq) has zero slopes and zero intercept: the
    # normal is a principal axis of the scatter (the stationarity condition of orthogonal
    # least squares).
    frame = plane.frame()
    local = (points - plane.centroid) @ frame
    design = np.column_stack([local[:, 0], local[:, 1], np.ones(len(local))])
    coefficients = np.linalg.lstsq(design, local[:, 2], rcond=None)[0]
    np.testing.assert_allclose(coefficients, 0.0, atol=1e-12)
    # ... and it is the minimum: no worse than the vertical least-squares plane, or any
    # plane through the centroid tilted from it
    design_world = np.column_stack([points[:, 0], points[:, 1], np.ones(len(points))])
    a, b, _ = np.linalg.lstsq(design_world, points[:, 2], rcond=None)[0]
    ordinary = np.array([-a, -b, 1.0]) / np.linalg.norm([-a, -b, 1.0])
    ours = float(np.sum(plane.distances(points) ** 2))
    assert ours <= float(np.sum(((points - points.mean(0)) @ ordinary) ** 2))
    for axis in np.eye(3):
        tilted = Rotation.from_rotvec(0.01 * axis).as_matrix() @ plane.normal
        assert ours <= float(np.sum(((points - plane.centroid) @ tilted) ** 2))
    assert plane.residual_rms_m == pytest.approx(np.sqrt(ours / len(points)), rel=1e-9)


def test_points_on_a_line_define_no_plane():
    line = np.outer(np.linspace(0, 1, 5), [1.0, 2.0, 0.5])
    with pytest.raises(ClimbingInputError, match="one line"):
        fit_plane(line)
    with pytest.raises(ClimbingInputError, match="at least 3"):
        fit_plane(FEET[:2])


def test_the_desired_base_pose_sits_h_n_above_the_centroid_in_the_planes_frame():
    points, normal = on_plane([0.0, -0.2, 1.0], 0.02, FEET[:, :2] + [0.05, 0.0])
    target = desired_base_pose(points, 0.11)
    centroid = points.mean(axis=0)
    np.testing.assert_allclose(target.pose[:3, 3], centroid + [0, 0, 0.11], atol=1e-14)
    rotation = target.pose[:3, :3]
    np.testing.assert_allclose(rotation[:, 2], normal, atol=1e-12)  # z: the plane normal
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-14)
    assert rotation[1, 0] == pytest.approx(0.0, abs=1e-14)  # x: world x projected
    assert rotation[0, 0] > 0.99
    assert target.raise_m == 0.0 and target.penetration_m is None


def test_a_rock_under_the_base_raises_it_by_the_penetration_plus_h_add():
    rock = 0.14  # a bump 140 mm high at the centroid, 30 mm wide

    def terrain(x, y):
        return rock * np.exp(-(x**2 + y**2) / (2 * 0.03**2))

    target = desired_base_pose(FEET, 0.11, terrain=terrain, footprint=FOOTPRINT, h_add_m=0.02)
    # the lower face at z = 0.11 - 0.03 = 0.08 is hit by the bump's top (0.14) at its centre
    assert target.penetration_m == pytest.approx(rock - 0.08, abs=1e-12)
    assert target.raise_m == pytest.approx(rock - 0.08 + 0.02, abs=1e-12)
    assert target.pose[2, 3] == pytest.approx(0.11 + target.raise_m, abs=1e-12)
    # eq. 1's purpose: the lower face now clears the terrain by exactly h_add
    assert base_penetration(target.pose, FOOTPRINT, terrain) == pytest.approx(-0.02, abs=1e-12)


def test_no_collision_no_raise():
    def terrain(x, y):
        return np.full_like(x, 0.05)

    target = desired_base_pose(FEET, 0.11, terrain=terrain, footprint=FOOTPRINT)
    assert target.penetration_m == pytest.approx(0.05 - 0.08)
    assert target.raise_m == 0.0 and target.pose[2, 3] == pytest.approx(0.11)


def test_the_collision_check_needs_a_footprint_and_a_sane_terrain():
    with pytest.raises(ClimbingInputError, match="footprint"):
        desired_base_pose(FEET, 0.11, terrain=lambda x, y: 0 * x)
    with pytest.raises(ClimbingInputError, match="terrain"):
        desired_base_pose(FEET, 0.11, terrain=lambda x, y: 0.0, footprint=FOOTPRINT)


def test_the_lower_face_follows_the_base_pose():
    pose = np.eye(4)
    pose[:3, :3] = Rotation.from_euler("y", 0.3).as_matrix()
    pose[:3, 3] = [0.0, 0.0, 0.1]
    flat = base_penetration(pose, FOOTPRINT, lambda x, y: np.zeros_like(x))
    corners = FOOTPRINT.lower_face() @ pose[:3, :3].T + pose[:3, 3]
    assert flat == pytest.approx(-corners[:, 2].min(), abs=1e-15)


def test_the_baseline_pose_is_level_over_the_centroid_at_a_fixed_height():
    points, _ = on_plane([0.0, -0.2, 1.0], 0.02, FEET[:, :2])
    pose = level_base_pose(points, 0.2, heading=(1.0, 1.0, 0.3))
    np.testing.assert_allclose(pose[:3, 3], [*points[:, :2].mean(0), 0.2])
    np.testing.assert_allclose(pose[:3, 2], [0, 0, 1])
    np.testing.assert_allclose(pose[:3, 0], np.array([1, 1, 0]) / np.sqrt(2), atol=1e-15)


def test_a_plane_refuses_a_heading_along_its_normal():
    plane = RegressionPlane(np.zeros(3), np.array([0.0, 0.0, 1.0]))
    with pytest.raises(ClimbingInputError, match="normal to the plane"):
        plane.frame((0.0, 0.0, 2.0))
