"""Swing trajectories (limbtree.skills.climbing.swing): seed 004 eq. 2's Bezier and ClimbLab's
two cubic segments, against their boundary conditions and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from limbtree.skills.climbing import (
    BezierSwing,
    ClimbingInputError,
    CubicSwing,
    apex_point,
    bernstein,
    bezier_basis,
    swing_heights,
)

START = np.array([-0.14, 0.14, 0.01])
END = np.array([-0.06, 0.15, 0.03])
T = 1.75
H = 0.04


def finite_difference(swing, t, h=1e-6):
    """Central differences of position (velocity) and velocity (acceleration)."""
    ahead, behind = swing.evaluate(t + h), swing.evaluate(t - h)
    return (
        (ahead.position - behind.position) / (2 * h),
        (ahead.velocity - behind.velocity) / (2 * h),
    )


def test_bernstein_basis_is_a_partition_of_unity_and_matches_the_binomial_formula():
    tau = np.linspace(0.0, 1.0, 11)
    basis = bernstein(7, tau)
    np.testing.assert_allclose(basis.sum(axis=1), 1.0, atol=1e-14)
    j = 3
    np.testing.assert_allclose(basis[:, j], 35 * tau**3 * (1 - tau) ** 4, atol=1e-14)


@pytest.mark.parametrize("seed", range(5))
def test_bezier_swing_starts_and_ends_at_rest_whatever_its_free_points(seed):
    rng = np.random.default_rng(seed)
    swing = BezierSwing.from_free_points(
        START, END, rng.normal(0, 0.1, 3), rng.normal(0, 0.1, 3), T
    )
    sample = swing.evaluate([0.0, T])
    np.testing.assert_allclose(sample.position, [START, END], atol=1e-15)
    np.testing.assert_allclose(sample.velocity, 0.0, atol=1e-13)
    np.testing.assert_allclose(sample.acceleration, 0.0, atol=1e-12)
    # control points 0..2 and 5..7 repeat the ends (eq. 2's boundary conditions)
    np.testing.assert_array_equal(swing.control_points[:3], [START] * 3)
    np.testing.assert_array_equal(swing.control_points[5:], [END] * 3)


def test_bezier_derivatives_match_finite_differences():
    swing = BezierSwing.from_free_points(START, END, [0.0, 0.2, 0.1], [0.05, 0.1, 0.12], T)
    t = np.linspace(0.05, T - 0.05, 17)
    velocity, acceleration = finite_difference(swing, t)
    sample = swing.evaluate(t)
    np.testing.assert_allclose(sample.velocity, velocity, atol=1e-7)
    np.testing.assert_allclose(sample.acceleration, acceleration, atol=1e-6)


def test_bezier_position_is_the_sum_of_its_bernstein_terms():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(8, 3))
    swing = BezierSwing(points, T)
    t = np.array([0.3, 0.9, 1.4])
    tau = t / T
    expected = sum(
        math.comb(7, j) * ((1 - tau) ** (7 - j) * tau**j)[:, None] * points[j] for j in range(8)
    )
    np.testing.assert_allclose(swing.evaluate(t).position, expected, atol=1e-14)


def test_bezier_through_apex_passes_the_apex_at_half_time_at_twice_the_mean_velocity():
    swing = BezierSwing.through_apex(START, END, T, H)
    middle = swing.evaluate(T / 2)
    apex = apex_point(START, END, H)
    np.testing.assert_allclose(middle.position[0], apex, atol=1e-14)
    np.testing.assert_allclose(middle.velocity[0], 2 * (END - START) / T, atol=1e-13)
    # the apex: the middle of the step, h above the higher foothold
    np.testing.assert_allclose(apex[:2], 0.5 * (START + END)[:2])
    assert apex[2] == pytest.approx(max(START[2], END[2]) + H)


def test_bezier_basis_is_linear_in_the_control_points():
    p, v, a = bezier_basis([0.0, 0.4, T], T)
    assert p.shape == v.shape == a.shape == (3, 8)
    np.testing.assert_allclose(v.sum(axis=1), 0.0, atol=1e-12)  # a constant curve does not move
    np.testing.assert_allclose(a.sum(axis=1), 0.0, atol=1e-10)


def test_cubic_swing_reaches_the_apex_at_half_time_and_stops_there_vertically():
    swing = CubicSwing.between(START, END, T, H)
    sample = swing.evaluate([0.0, T / 2, T])
    np.testing.assert_allclose(sample.position, [START, apex_point(START, END, H), END], atol=1e-15)
    np.testing.assert_allclose(sample.velocity[[0, 2]], 0.0, atol=1e-15)
    assert sample.velocity[1, 2] == pytest.approx(0.0, abs=1e-15)  # at rest along up
    # across up it passes the apex at 1.5 times the half's mean speed, without acceleration
    half_mean = (END - START)[:2] / 2 / (T / 2)
    np.testing.assert_allclose(sample.velocity[1, :2], 1.5 * half_mean, atol=1e-14)
    np.testing.assert_allclose(sample.acceleration[1, :2], 0.0, atol=1e-14)


def test_cubic_swing_is_continuous_in_velocity_and_its_derivatives_are_consistent():
    swing = CubicSwing.between(START, END, T, H)
    before, after = swing.evaluate(T / 2 - 1e-9), swing.evaluate(T / 2 + 1e-9)
    np.testing.assert_allclose(before.position, after.position, atol=1e-9)
    np.testing.assert_allclose(before.velocity, after.velocity, atol=1e-8)
    t = np.array([0.2, 0.6, 1.1, 1.6])
    velocity, acceleration = finite_difference(swing, t)
    np.testing.assert_allclose(swing.evaluate(t).velocity, velocity, atol=1e-8)
    np.testing.assert_allclose(swing.evaluate(t).acceleration, acceleration, atol=1e-6)


def test_cubic_swing_along_a_tilted_up_keeps_its_apex_along_that_up():
    up = np.array([0.0, 0.3, 1.0]) / math.hypot(0.3, 1.0)
    swing = CubicSwing.between(START, END, T, H, up)
    heights = swing_heights(swing.evaluate(np.linspace(0, T, 201)).position, START, END, up)
    assert heights.max() == pytest.approx(H, abs=1e-12)
    sample = swing.evaluate(T / 2)
    assert float(sample.velocity[0] @ up) == pytest.approx(0.0, abs=1e-15)


def test_times_outside_the_swing_hold_the_ends_at_rest():
    for swing in (CubicSwing.between(START, END, T, H), BezierSwing.through_apex(START, END, T, H)):
        sample = swing.evaluate([-1.0, T + 1.0])
        np.testing.assert_allclose(sample.position, [START, END], atol=1e-15)
        np.testing.assert_allclose(sample.velocity, 0.0, atol=1e-15)


def test_bad_swings_are_refused_with_the_reason():
    with pytest.raises(ClimbingInputError, match="duration_s"):
        BezierSwing.through_apex(START, END, 0.0, H)
    with pytest.raises(ClimbingInputError, match="control_points"):
        BezierSwing(np.zeros((7, 3)), T)
    with pytest.raises(ClimbingInputError, match="up"):
        CubicSwing.between(START, END, T, H, (0.0, 0.0, 0.0))
    with pytest.raises(ClimbingInputError, match="NaN"):
        BezierSwing.from_free_points(START, END, [np.nan, 0, 0], [0, 0, 0], T)
