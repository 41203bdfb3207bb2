"""Seed 002 Sec. II-A: alignment Version 1, step and settle (eqs. 2-4)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_alignment import TARGET, LaggyLimb, random_start, run_loop, step_core, turn_z

from limbtree.kinematics import Pose
from limbtree.skills import (
    AlignmentParameterError,
    AlignObservation,
    AlignPhase,
    AlignV1,
    AlignV1Params,
    Outcome,
)
from limbtree.skills.align_v1 import offset_step, rotation_step, step_size
from limbtree.skills.alignment import goal_pose

DT = 1.0 / 30.0
P = AlignV1Params()

# Eqs. 3 and 4, the rotation clamp ------------------------------------------------------------


def test_step_size_is_eq_3():
    p = AlignV1Params(s_min=0.005, s_max=0.030, r_low=0.020, r_high=0.150)
    assert step_size(0.5, p) == 0.030  # beyond r_high
    assert step_size(0.010, p) == 0.005  # below r_low
    # Half way between r_low and r_high: half way between s_min and s_max.
    assert step_size(0.085, p) == pytest.approx(0.0175)
    assert step_size(0.046, p) == pytest.approx(0.005 + 0.2 * 0.025)


@given(st.floats(0.0, 1.0))
def test_step_size_stays_between_its_bounds(dd):
    assert P.s_min <= step_size(dd, P) <= P.s_max


def test_the_offset_step_is_eq_4():
    assert offset_step(np.array([0.03, 0.04, 0.0]), 0.01) == pytest.approx([0.006, 0.008, 0.0])
    assert offset_step(np.zeros(3), 0.01) == pytest.approx([0.0, 0.0, 0.0])


@given(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3), st.floats(0.001, 0.05))
def test_the_offset_step_has_length_s_and_points_at_the_target(e, s):
    e_avg = np.array(e)
    if np.linalg.norm(e_avg) < 1e-6:
        return
    delta_p = offset_step(e_avg, s)
    assert np.linalg.norm(delta_p) == pytest.approx(s)
    assert float(delta_p @ e_avg) > 0.0


def test_the_rotation_step_is_clamped_between_theta_min_and_theta_max():
    lo, hi = math.radians(0.5), math.radians(5.0)
    assert rotation_step(math.radians(10.0), lo, hi) == pytest.approx(hi)
    assert rotation_step(math.radians(0.1), lo, hi) == pytest.approx(lo)
    assert rotation_step(math.radians(3.0), lo, hi) == pytest.approx(math.radians(3.0))


# Parameters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("s_min", 0.0),
        ("s_max", -0.01),
        ("s_max", 0.001),  # below s_min
        ("r_low", -0.01),
        ("r_high", 0.010),  # below r_low
        ("theta_min", 0.0),
        ("theta_max", math.radians(0.1)),  # below theta_min
        ("theta_max", 4.0),
        ("settle_window_s", 0.0),
        ("settle_tol_m", -1e-3),
        ("settle_tol_rad", math.nan),
        ("settle_timeout_s", 0.0),
    ],
)
def test_a_bad_v1_parameter_raises_an_error_naming_it(name, value):
    with pytest.raises(AlignmentParameterError, match=name) as info:
        AlignV1Params(**{name: value})
    assert info.value.parameter == name


def test_v1_defaults():
    assert (P.N, P.s_min, P.s_max, P.r_low, P.r_high) == (10, 0.005, 0.030, 0.020, 0.150)
    assert (P.theta_min, P.theta_max) == pytest.approx((math.radians(0.5), math.radians(5)))


# One step at a time, with hand-fed measurements ---------------------------------------------

EE = Pose((0.0, 0.0, 0.0))
GOAL = Pose((0.1, 0.0, 0.0), turn_z(10.0))


def feed(controller, k, ee=EE, target=GOAL, **extra):
    return step_core(controller, AlignObservation(k * DT, ee, target, **extra))


def test_after_n_samples_a_step_of_eq_3_and_4_is_issued_towards_the_target():
    controller = AlignV1()
    limb = Pose((0.5, 0.5, 0.5), turn_z(-20.0))  # the limb's own idea of its pose
    for k in range(P.N - 1):
        step = feed(controller, k, limb_pose=limb)
        assert step.phase is AlignPhase.AVERAGING and step.command is None
        assert not step.stepped
    step = feed(controller, P.N - 1, limb_pose=limb)
    assert step.stepped and step.phase is AlignPhase.STEPPING
    s = 0.005 + (0.1 - 0.02) / 0.13 * 0.025  # eq. 3
    assert step.s == pytest.approx(s)
    assert step.delta_p == pytest.approx((s, 0.0, 0.0))
    # Applied to the limb's pose: translated by Delta p, turned by theta_max about z.
    assert step.command.position == pytest.approx([0.5 + s, 0.5, 0.5])
    assert step.command.angle_to(Pose((0, 0, 0), turn_z(-15.0))) == pytest.approx(0.0, abs=1e-9)
    assert step.theta_step == pytest.approx(math.radians(5.0))
    assert not step.settled


def test_without_the_limbs_pose_the_step_is_applied_to_the_measured_pose():
    controller = AlignV1()
    for k in range(P.N):
        step = feed(controller, k)
    assert step.stepped
    assert step.command.position == pytest.approx([step.s, 0.0, 0.0])


def test_only_the_error_beyond_its_threshold_is_stepped():
    controller = AlignV1()
    target = Pose((0.1, 0.0, 0.0), turn_z(1.0))  # 1 deg: within dtheta_tol_rad
    for k in range(P.N):
        step = feed(controller, k, target=target)
    assert step.stepped
    assert step.command.angle_to(EE) == pytest.approx(0.0, abs=1e-12)
    controller = AlignV1()
    target = Pose((0.005, 0.0, 0.0), turn_z(10.0))  # 5 mm: within dd_tol_m
    for k in range(P.N):
        step = feed(controller, k, target=target)
    assert step.stepped
    assert step.command.position == pytest.approx([0.0, 0.0, 0.0])
    assert step.command.angle_to(EE) == pytest.approx(math.radians(5.0))


def test_the_next_step_waits_until_the_measured_pose_stands_still():
    controller = AlignV1()
    k = 0
    for k in range(P.N):
        step = feed(controller, k)
    first = step.command
    # The limb moves 3 mm per tick for 20 ticks: settling, no new step.
    for i in range(1, 21):
        step = feed(controller, k + i, ee=Pose((0.003 * i, 0.0, 0.0)))
        assert step.phase is AlignPhase.SETTLING and not step.stepped
        assert step.command is first
    k += 20
    # Still from now on: a new step once the pose stood still over settle_window_s.
    still = Pose((0.06, 0.0, 0.0))
    ticks = 0
    while not step.stepped:
        ticks += 1
        step = feed(controller, k + ticks, ee=still)
        assert ticks < 40
    # The window's parts agree to settle_tol_m a little before it is all still.
    assert P.settle_window_s - 0.15 <= ticks * DT <= P.settle_window_s + DT
    # The step is measured from where it stood still, and applied there.
    assert step.e_avg == pytest.approx((0.04, 0.0, 0.0))
    assert step.command.position[0] == pytest.approx(0.06 + step_size(0.04, P))


@pytest.mark.parametrize("phase", [0.0, 0.25, 0.5, 0.75])
def test_a_tip_still_swinging_with_the_windows_period_has_not_settled(phase):
    # A 3 mm swing at 2 Hz, the period of the 0.5 s window (a bending mode rung by the
    # step), decaying at a damping ratio of 0.1. The two half-window means this check used
    # to compare both average to the middle for a swing in cosine phase: the next step went
    # out while the tip still swung by 3 mm.
    controller = AlignV1()
    for k in range(P.N):
        step = feed(controller, k)
    issued = step.time

    def swing(t):
        decay = math.exp(-0.1 * 4 * math.pi * t)
        return 0.003 * decay * math.cos(4 * math.pi * t + 2 * math.pi * phase)

    k = P.N
    step = feed(controller, k, ee=Pose((0.05 + swing(DT), 0.0, 0.0)))
    while not step.stepped:
        k += 1
        step = feed(controller, k, ee=Pose((0.05 + swing(k * DT - issued), 0.0, 0.0)))
        assert k < 400
    t = step.time - issued
    # Stepped only once the swing had died down to about settle_tol_m.
    assert 0.003 * math.exp(-0.1 * 4 * math.pi * t) < 1.2 * P.settle_tol_m
    assert not step.settle_timed_out


def test_the_next_step_waits_for_the_limb_to_report_it_finished():
    controller = AlignV1(AlignV1Params(settle_timeout_s=5.0))
    for k in range(P.N):
        step = feed(controller, k)
    for k in range(P.N, P.N + 60):  # two seconds standing still, but the limb is not done
        step = feed(controller, k, limb_settled=False)
        assert not step.stepped and not step.settled
    step = feed(controller, P.N + 60, limb_settled=True)
    assert step.stepped


def test_a_limb_that_never_stands_still_is_declared_settled_after_the_timeout():
    controller = AlignV1(AlignV1Params(settle_timeout_s=2.0))
    for k in range(P.N):
        step = feed(controller, k)
    issued = step.time
    k = P.N
    step = feed(controller, k, ee=Pose((0.004, 0.0, 0.0)))
    while not step.stepped:
        wobble = Pose((0.004 * (k % 2) + 0.0003 * k, 0.0, 0.0))  # jitter, 9 mm/s creep
        step = feed(controller, k, ee=wobble)
        k += 1
        assert k < 200
    assert step.time - issued >= 2.0
    assert step.settle_timed_out
    assert step.telemetry.as_map()["settle_timed_out"] is True


def test_a_jump_in_the_measured_error_holds_all_motion_and_re_averages():
    controller = AlignV1()
    for k in range(P.N - 1):
        feed(controller, k)
    jumped = Pose((0.15, 0.0, 0.0), turn_z(10.0))  # the target jumps by 50 mm
    step = feed(controller, P.N - 1, target=jumped)
    assert step.jump and step.phase is AlignPhase.HOLDING and not step.stepped
    assert "jumped by 50.0 mm" in step.message
    # No step until N samples were taken after the jump...
    for i in range(P.N - 1):
        step = feed(controller, P.N + i, target=jumped)
        assert not step.stepped and step.phase is AlignPhase.AVERAGING
    step = feed(controller, 2 * P.N - 1, target=jumped)
    # ... then one from the new error alone.
    assert step.stepped
    assert step.e_avg == pytest.approx((0.15, 0.0, 0.0))
    assert step.s == pytest.approx(step_size(0.15, P))


def test_a_glitch_of_one_sample_is_never_stepped_towards():
    controller = AlignV1()
    glitch = Pose((0.1, 0.08, 0.0), turn_z(10.0))
    steps = [feed(controller, k, target=glitch if k == 5 else GOAL) for k in range(40)]
    assert [s.jump for s in steps[:8]] == [False] * 5 + [True, True, False]
    issued = [s for s in steps if s.stepped]
    assert issued[0].time == pytest.approx((6 + P.N) * DT)  # N samples after the glitch
    assert issued[0].delta_p[1] == pytest.approx(0.0)


def test_within_the_thresholds_it_confirms_and_succeeds_without_moving():
    controller = AlignV1()
    near = Pose((0.006, 0.0, 0.0), turn_z(1.0))
    steps = [feed(controller, k, target=near) for k in range(40)]
    assert not any(s.stepped for s in steps)
    assert steps[P.N - 1].phase is AlignPhase.CONFIRMING
    done = next(s for s in steps if s.outcome is Outcome.SUCCESS)
    assert done.time - steps[P.N - 1].time == pytest.approx(P.confirm_s, abs=DT)
    assert done.phase is AlignPhase.DONE and "6.0 mm" in done.message
    assert steps[-1] is done  # latched


def test_losing_the_target_holds_the_last_command_then_fails_with_a_message():
    controller = AlignV1(AlignV1Params(target_timeout_s=1.0))
    for k in range(P.N):
        step = feed(controller, k)
    command = step.command
    k = P.N
    while step.outcome is Outcome.RUNNING:
        step = feed(controller, k, target=None)
        assert step.command is command
        k += 1
    assert step.outcome is Outcome.FAILURE and step.phase is AlignPhase.FAILED
    assert "has not seen the target" in step.message
    assert "target_timeout_s is 1 s" in step.message
    assert (k - 1 - P.N) * DT == pytest.approx(1.0, abs=2 * DT)


def test_the_record_has_the_papers_internals_in_report_units():
    controller = AlignV1()
    for k in range(P.N):
        step = feed(controller, k)
    record = step.telemetry.as_map()
    assert record["dd_mm"] == pytest.approx(100.0)
    assert record["dtheta_deg"] == pytest.approx(10.0)
    assert record["step_mm"] == pytest.approx(step.s * 1e3)
    assert record["delta_p_mm"] == pytest.approx([step.s * 1e3, 0.0, 0.0])
    assert record["e_avg_mm"] == pytest.approx([100.0, 0.0, 0.0])
    assert record["jump"] is False and record["stepped"] is True and record["settled"] is False
    assert record["phase"] == "stepping" and record["outcome"] == "RUNNING"
    lost = step_core(controller, AlignObservation(1.0, None, GOAL)).telemetry.as_map()
    assert lost["dd_mm"] is None and lost["phase"] == "lost"


# Closed loop -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_v1_converges_on_a_limb_with_lag_backlash_flex_and_mocap_noise(seed):
    result = run_loop(AlignV1(), seed)
    assert result.outcome is Outcome.SUCCESS, result.steps[-1].message
    assert result.final_dd <= 0.010
    assert result.final_dtheta <= math.radians(2.0)
    # Step and settle: every step is followed by settling before the next.
    stepped = [i for i, s in enumerate(result.steps) if s.stepped]
    assert len(stepped) >= 5
    for a, b in itertools.pairwise(stepped):
        assert any(s.phase is AlignPhase.SETTLING for s in result.steps[a + 1 : b])


def test_v1_reaches_the_point_150_mm_above_the_target():
    offset = Pose((0.0, 0.0, 0.15))
    goal = goal_pose(TARGET, offset)
    limb = LaggyLimb(random_start(5, goal), 5)
    result = run_loop(AlignV1(AlignV1Params(offset=offset)), 5, limb=limb, goal=goal)
    assert result.outcome is Outcome.SUCCESS
    assert result.final_dd <= 0.010 and result.final_dtheta <= math.radians(2.0)
    assert limb.true_pose().position[2] == pytest.approx(TARGET.position[2] + 0.15, abs=0.01)


def test_v1_converges_without_the_limbs_own_state_when_its_kinematics_agree():
    limb = LaggyLimb(random_start(6, TARGET), 6, sag=(0.0, 0.0, 0.0))
    result = run_loop(AlignV1(), 6, limb=limb, give_limb_state=False)
    assert result.outcome is Outcome.SUCCESS
    assert result.final_dd <= 0.010 and result.final_dtheta <= math.radians(2.0)


def test_v1_fails_when_the_limb_moves_the_wrong_way():
    limb = LaggyLimb(random_start(7, TARGET), 7, mirror=True)
    result = run_loop(AlignV1(), 7, limb=limb, max_time=60.0)
    assert result.outcome is Outcome.FAILURE
    assert "diverging" in result.steps[-1].message
    assert "frame" in result.steps[-1].message


def test_v1_fails_when_the_target_is_lost_in_closed_loop():
    result = run_loop(AlignV1(), 8, see=lambda t: t < 3.0)
    assert result.outcome is Outcome.FAILURE
    assert result.duration == pytest.approx(3.0 + P.target_timeout_s, abs=2 * DT)
    assert "motion capture has not seen the end-effector and the target" in result.steps[-1].message


def test_v1_holds_through_a_measurement_glitch_in_closed_loop():
    glitch = Pose(TARGET.position + np.array([0.0, 0.06, 0.0]), TARGET.quaternion)
    result = run_loop(AlignV1(), 9, target_at=lambda t: glitch if 2.0 <= t < 2.1 else TARGET)
    assert result.outcome is Outcome.SUCCESS
    jumps = [s.time for s in result.steps if s.jump]
    assert jumps == pytest.approx([2.0, 2.1])  # into the glitch and back out
    # No step from the glitch until N clean samples were averaged after it.
    quiet = [s for s in result.steps if 2.0 <= s.time < 2.1 + (P.N - 0.5) * DT]
    assert quiet and not any(s.stepped for s in quiet)


def test_at_a_slow_tick_rate_a_still_pose_settles_without_waiting_for_the_timeout():
    # 5 Hz: the 0.5 s window holds three samples, fewer than SETTLE_PARTS.
    controller = AlignV1()
    dt = 0.2
    t = 0.0
    for _ in range(P.N):
        step = step_core(controller, AlignObservation(t, EE, GOAL))
        t += dt
    assert step.stepped
    issued = step.time
    step = step_core(controller, AlignObservation(t, EE, GOAL))
    while not step.stepped:
        t += dt
        step = step_core(controller, AlignObservation(t, EE, GOAL))
        assert t < 5.0
    # Settled after the window; then N fresh samples for the next average (eq. 2).
    assert step.time - issued <= P.settle_window_s + (P.N + 1) * dt
    assert not step.settle_timed_out
