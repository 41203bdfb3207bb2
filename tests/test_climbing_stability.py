"""The GIA stability margin (seed 004 Fig. 5; ClimbLab lib/equ_gia) against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from limbtree.skills.climbing import ClimbingInputError, counter_clockwise, gia_margin

A = 0.14  # half the side of the square of feet [m]
H = 0.11  # height of the centre of mass above them [m]
M = 2.254  # HubRobo [kg]
F = 0.9  # holding force [N]
G = 9.80665e-6  # 1e-6 g [m/s^2]
FEET = np.array([[A, A, 0.0], [-A, A, 0.0], [-A, -A, 0.0], [A, -A, 0.0]])
COM = np.array([0.0, 0.0, H])
GRAVITY = (0.0, 0.0, -G)


def margin(grasping, **kwargs):
    options = {"hold_force_n": F, "gravity": GRAVITY, **kwargs}
    return gia_margin(FEET, grasping, COM, M, **options)


def test_four_grasping_legs_on_a_square_give_the_hand_computed_margin():
    # Axis (p0, p1): the two other grippers each hold with a lever of 4 A^2 (the cross product
    # of their offsets), so M_ab = 8 F A^2; n_ab = (0, 2 A H, 2 A^2), |n_ab| = 2 A sqrt(H^2 + A^2)
    # a_lim = 4 F A / (m sqrt(H^2 + A^2)); gravity adds g A / sqrt(H^2 + A^2). All four
    # axes alike by symmetry.
    result = margin([True] * 4)
    root = math.sqrt(H**2 + A**2)
    expected = (4 * F * A + M * G * A) / (M * root)
    assert result.equilibrium
    assert result.margin_m_s2 == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(result.limits, 4 * F * A / (M * root), rtol=1e-12)
    assert len(result.axes) == 4


def test_three_grasping_legs_are_limited_by_the_diagonal_axis():
    # Legs 0, 1, 2 hold. Side axes (0,1) and (1,2): one gripper at lever 4 A^2 -> 2 F A / (m root),
    # plus gravity's g A / root. Diagonal axis (2, 0): gripper 1 at lever 4 A^2,
    # n = (2 A H, -2 A H, 0): a_lim = 4 F A^2 / (m 2 sqrt(2) A H) = sqrt(2) F A / (m H), and
    # gravity is horizontal to it.
    result = margin([True, True, True, False])
    root = math.sqrt(H**2 + A**2)
    side = (2 * F * A + M * G * A) / (M * root)
    diagonal = math.sqrt(2) * F * A / (M * H)
    assert result.equilibrium
    assert result.margin_m_s2 == pytest.approx(min(side, diagonal), rel=1e-12)
    assert sorted(result.axis_margins) == pytest.approx(sorted([side, side, diagonal]), rel=1e-12)


def test_fewer_than_two_grasping_legs_give_no_margin():
    for grasping in ([False] * 4, [True, False, False, False]):
        result = margin(grasping)
        assert result.margin_m_s2 == 0.0 and not result.equilibrium and result.axes == ()


def test_two_grasping_legs_hold_nothing_up_in_microgravity():
    # One axis both ways, no third gripper: both limits 0, and gravity leans out of one face.
    result = margin([True, True, False, False])
    assert sorted(result.axes) == [(0, 1), (1, 0)]
    np.testing.assert_allclose(result.limits, 0.0)
    assert result.margin_m_s2 == 0.0 and not result.equilibrium
    assert min(result.axis_margins) < 0.0 < max(result.axis_margins)


def test_the_order_of_the_contacts_does_not_matter():
    order = [2, 0, 3, 1]
    shuffled = gia_margin(FEET[order], [True] * 4, COM, M, hold_force_n=F, gravity=GRAVITY)
    assert shuffled.margin_m_s2 == pytest.approx(margin([True] * 4).margin_m_s2, rel=1e-12)
    # FEET are counter-clockwise; shuffled, rows 1, 3, 0, 2 hold FEET 0, 1, 2, 3
    rotations = ((1, 3, 0, 2), (3, 0, 2, 1), (0, 2, 1, 3), (2, 1, 3, 0))
    assert counter_clockwise(FEET[order]) in rotations


def test_a_hard_acceleration_of_the_centre_of_mass_leaves_equilibrium():
    quiet = margin([True] * 4)
    # the GIA is g - a_g: accelerating down (towards the ground) pushes the GIA up, out of
    # the polyhedron's top faces once it exceeds the limit there
    pushed = margin([True] * 4, com_acceleration=(0.0, 0.0, -5.0))
    assert not pushed.equilibrium and pushed.margin_m_s2 == 0.0
    slight = margin([True] * 4, com_acceleration=(0.05, 0.0, 0.0))
    assert 0.0 < slight.margin_m_s2 < quiet.margin_m_s2


def test_an_external_moment_shifts_each_axis_limit_by_its_moment_about_the_axis():
    # ClimbLab adds M_0 · (p_a - p_b): for M_0 along x, +2 A M_0x on axis (0, 1), -2 A M_0x on
    # axis (2, 3), nothing on the two others
    moment = 0.02
    result = margin([True] * 4, external_moment=(moment, 0.0, 0.0))
    root = math.sqrt(H**2 + A**2)
    size = 2 * A * root
    holding = 8 * F * A**2
    expected = {
        (0, 1): (holding + 2 * A * moment) / (M * size),
        (2, 3): (holding - 2 * A * moment) / (M * size),
        (1, 2): holding / (M * size),
        (3, 0): holding / (M * size),
    }
    for axis, limit in zip(result.axes, result.limits, strict=True):
        assert limit == pytest.approx(expected[axis], rel=1e-12)
    assert result.margin_m_s2 == pytest.approx(expected[(2, 3)] + G * A / root, rel=1e-12)


def test_bad_inputs_are_refused():
    with pytest.raises(ClimbingInputError, match="grasping"):
        gia_margin(FEET, [True] * 3, COM, M, hold_force_n=F, gravity=GRAVITY)
    with pytest.raises(ClimbingInputError, match="mass_kg"):
        gia_margin(FEET, [True] * 4, COM, 0.0, hold_force_n=F, gravity=GRAVITY)
