"""The crawl gait (seed 004 Sec. 3), the next foothold and the support phase's base motion."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from climbing_robot import climber
from scipy.spatial.transform import Rotation

from limbtree.skills.climbing import (
    BaseMotion,
    ClimbingInputError,
    CrawlGait,
    PhaseKind,
    Profile,
    RegressionPlane,
    advance_foothold,
    fit_plane,
    rear_first_order,
)

ORDER = ("leg_1", "leg_2", "leg_0", "leg_3")


def test_the_papers_gait_lasts_14_s_a_cycle_and_walks_0_57_cm_per_s():
    gait = CrawlGait(ORDER)  # T_sw 1.75 s, stride 8 cm, h_sw 4 cm (Sec. 3)
    assert gait.period_s == pytest.approx(14.0)  # T = 2 n T_sw
    assert gait.support_s == gait.swing_s == 1.75
    assert gait.speed_m_s * 100 == pytest.approx(0.571, abs=1e-3)
    assert gait.step_height_m == 0.04


def test_each_leg_swings_then_the_base_moves_in_order_cycle_after_cycle():
    gait = CrawlGait(ORDER)
    phases = gait.phases(2)
    assert len(phases) == 16
    assert [p.leg for p in phases[:8:2]] == list(ORDER)
    assert [p.kind for p in phases[:4]] == [PhaseKind.SWING, PhaseKind.SUPPORT] * 2
    assert phases[8].cycle == 1 and phases[8].leg == "leg_1" and phases[8].start_s == 14.0
    for before, after in itertools.pairwise(phases):
        assert after.start_s == pytest.approx(before.end_s)
    at = gait.phase_at(5.3)  # the 4th phase (5.25 to 7 s): the base moves after leg_2's swing
    assert (at.cycle, at.step, at.kind, at.leg) == (0, 1, PhaseKind.SUPPORT, "leg_2")
    assert (at.start_s, at.end_s) == (pytest.approx(5.25), pytest.approx(7.0))


def test_phase_at_returns_the_phase_containing_the_time():
    gait = CrawlGait(ORDER)
    for phase in gait.phases(1):
        middle = 0.5 * (phase.start_s + phase.end_s)
        assert gait.phase_at(middle) == phase
        assert phase.fraction(middle) == pytest.approx(0.5)
    with pytest.raises(ClimbingInputError, match="t"):
        gait.phase_at(-1.0)


def test_rear_legs_swing_first_left_before_right():
    robot = climber()
    feet = {name: robot.legs[name].fk(robot.home)[0] for name in robot.legs}
    assert rear_first_order(feet) == ORDER
    # walking backwards turns it round
    assert rear_first_order(feet, heading=(-1.0, 0.0, 0.0)) == ("leg_3", "leg_0", "leg_2", "leg_1")


def test_a_foothold_moves_the_stride_along_the_plane():
    normal = np.array([0.0, -0.3, 1.0]) / math.hypot(0.3, 1.0)
    plane = RegressionPlane(np.zeros(3), normal)
    foot = np.array([0.1, 0.2, -0.06])
    nxt = advance_foothold(foot, 0.08, plane, heading=(1.0, 0.2, 0.0))
    step = nxt - foot
    assert np.linalg.norm(step) == pytest.approx(0.08)
    assert float(step @ normal) == pytest.approx(0.0, abs=1e-15)
    # along the heading's projection onto the plane
    heading = np.array([1.0, 0.2, 0.0])
    along = heading - (heading @ normal) * normal
    np.testing.assert_allclose(step / 0.08, along / np.linalg.norm(along), atol=1e-15)


def test_a_foothold_lands_on_the_terrain():
    plane = fit_plane([[0, 0, 0], [1, 0, 0], [0, 1, 0]])

    def terrain(x, y):
        return 0.1 * x + 0.02

    nxt = advance_foothold([0.2, 0.1, 0.0], 0.08, plane, terrain=terrain)
    np.testing.assert_allclose(nxt, [0.28, 0.1, 0.1 * 0.28 + 0.02], atol=1e-15)
    with pytest.raises(ClimbingInputError, match="terrain"):
        advance_foothold([0.2, 0.1, 0.0], 0.08, plane, terrain=lambda x, y: np.array([np.nan]))


def pose(rotvec, position):
    g = np.eye(4)
    g[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    g[:3, 3] = position
    return g


@pytest.mark.parametrize("profile", list(Profile))
def test_the_base_motion_goes_from_rest_to_rest(profile):
    start = pose([0.0, 0.0, 0.1], [0.0, 0.0, 0.11])
    end = pose([0.05, -0.02, 0.2], [0.02, 0.01, 0.13])
    motion = BaseMotion(start, end, 1.75, profile)
    np.testing.assert_allclose(motion.at(0.0).pose, start, atol=1e-15)
    np.testing.assert_allclose(motion.at(1.75).pose, end, atol=1e-14)
    np.testing.assert_allclose(motion.at(0.0).twist, 0.0, atol=1e-15)
    np.testing.assert_allclose(motion.at(1.75).twist, 0.0, atol=1e-15)
    np.testing.assert_allclose(motion.at(5.0).pose, end, atol=1e-14)
    if profile is Profile.QUINTIC:
        np.testing.assert_allclose(motion.at(0.0).acceleration, 0.0, atol=1e-15)
        np.testing.assert_allclose(motion.at(1.75).acceleration, 0.0, atol=1e-15)


def test_the_base_motions_twist_is_the_body_twist_of_its_poses():
    motion = BaseMotion(
        pose([0, 0, 0.1], [0, 0, 0.11]), pose([0.1, -0.1, 0.3], [0.03, 0, 0.1]), 2.0
    )
    h = 1e-6
    for t in (0.3, 1.0, 1.6):
        g0, g1 = motion.at(t - h).pose, motion.at(t + h).pose
        sample = motion.at(t)
        rotation = sample.pose[:3, :3]
        v = rotation.T @ (g1[:3, 3] - g0[:3, 3]) / (2 * h)
        w = Rotation.from_matrix(g0[:3, :3].T @ g1[:3, :3]).as_rotvec() / (2 * h)
        np.testing.assert_allclose(sample.twist, np.concatenate([v, w]), atol=1e-7)
        a = motion.at(t + h).pose[:3, 3] - 2 * sample.pose[:3, 3] + motion.at(t - h).pose[:3, 3]
        np.testing.assert_allclose(sample.acceleration, a / h**2, atol=1e-3)


def test_a_gait_needs_distinct_legs_and_positive_times():
    with pytest.raises(ClimbingInputError, match="order"):
        CrawlGait(("leg_0", "leg_0"))
    with pytest.raises(ClimbingInputError, match="swing_s"):
        CrawlGait(ORDER, swing_s=0.0)


def test_the_package_exports_each_public_name_once():
    import limbtree.skills.climbing as climbing
    from limbtree.skills.climbing import errors, gait, leg, lrst, md, plane, stability, swing

    for name in climbing.__all__:
        assert getattr(climbing, name) is not None
    assert len(set(climbing.__all__)) == len(climbing.__all__)
    modules = (errors, gait, leg, lrst, md, plane, stability, swing)
    assert sorted(climbing.__all__) == sorted({n for m in modules for n in m.__all__})
