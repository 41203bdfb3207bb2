import math

import numpy as np
import pytest
from hypothesis import given
from strategies import poses

from limbtree.kinematics import PiecewiseTrajectory, Pose, ShapeMismatchError, Trajectory


@given(poses(), poses())
def test_trajectory_starts_at_start_and_ends_at_end(s, f):
    trajectory = Trajectory(s, f)
    assert trajectory(0.0)[0].isclose(s, atol_m=1e-12, atol_rad=1e-7)
    assert trajectory(1.0)[0].isclose(f, atol_m=1e-12, atol_rad=1e-7)


@given(poses(), poses())
def test_position_is_a_lerp_and_rotation_moves_at_constant_rate(s, f):
    trajectory = Trajectory(s, f)
    total = s.angle_to(f)
    for t in (0.25, 0.5, 0.8):
        point = trajectory(t)[0]
        assert np.allclose(point.position, (1 - t) * s.position + t * f.position, atol=1e-12)
        # SLERP along the shortest arc: angle from s grows linearly, and the remaining
        # angle to f shrinks linearly.
        assert s.angle_to(point) == pytest.approx(t * total, abs=1e-6)
        assert point.angle_to(f) == pytest.approx((1 - t) * total, abs=1e-6)


def test_slerp_takes_the_shortest_arc_for_opposite_quaternion_signs():
    q = np.array([0.0, 0.0, math.sin(0.3), math.cos(0.3)])
    s = Pose((0, 0, 0), (0, 0, 0, 1))
    f = Pose((0, 0, 0), -q)  # same rotation as q, other sign
    middle = Trajectory(s, f)(0.5)[0]
    assert s.angle_to(middle) == pytest.approx(0.3, abs=1e-12)


def test_stacked_trajectory_interpolates_each_limb_with_one_t():
    s = [Pose((0, 0, 0)), Pose((1, 0, 0))]
    f = [Pose((0, 1, 0)), Pose((1, 0, 2))]
    points = Trajectory(s, f)(0.5)
    assert np.allclose(points[0].position, [0, 0.5, 0])
    assert np.allclose(points[1].position, [1, 0, 1])


def test_vectorised_evaluation_matches_pointwise():
    s = [Pose((0, 0, 0)), Pose((1, 0, 0), (0, 0, 1, 0))]
    f = [Pose((0, 1, 0), (1, 0, 0, 0)), Pose((1, 0, 2))]
    trajectory = Trajectory(s, f)
    ts = np.linspace(0, 1, 7)
    positions, quaternions = trajectory.arrays(ts)
    assert positions.shape == (7, 2, 3) and quaternions.shape == (7, 2, 4)
    for k, t in enumerate(ts):
        for limb, point in enumerate(trajectory(float(t))):
            assert np.allclose(positions[k, limb], point.position)
            assert abs(abs(quaternions[k, limb] @ point.quaternion) - 1) < 1e-12


def test_mismatched_limb_counts_are_refused():
    with pytest.raises(ShapeMismatchError, match="start has 2 poses but end has 1"):
        Trajectory([Pose(), Pose()], [Pose()])


def test_piecewise_trajectory_passes_through_every_waypoint():
    corners = [Pose((x, y, 0)) for x, y in [(0, 0), (1, 0), (1, 1), (0, 1), (0, 0)]]
    path = PiecewiseTrajectory(corners)
    assert path.segments == 4
    for k, corner in enumerate(corners):
        assert path(float(k))[0].isclose(corner)
    assert np.allclose(path(1.5)[0].position, [1, 0.5, 0])


def test_piecewise_trajectory_needs_two_waypoints_of_equal_width():
    with pytest.raises(ValueError, match="two waypoints"):
        PiecewiseTrajectory([Pose()])
    with pytest.raises(ShapeMismatchError):
        PiecewiseTrajectory([[Pose()], [Pose(), Pose()]])
