"""Seed 002 Sec. II-B: alignment Version 2, the continuous adaptive hypersphere clamp."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_alignment import TARGET, LaggyLimb, random_start, run_loop, step_core, turn_z

from limbtree.kinematics import Pose
from limbtree.kinematics.so3 import quaternion_from_rotation_vector
from limbtree.skills import (
    AlignmentParameterError,
    AlignObservation,
    AlignPhase,
    AlignV1,
    AlignV2,
    AlignV2Params,
    Outcome,
)
from limbtree.skills.align_v2 import (
    base_radii,
    effective_radii,
    ellipsoid_clamp,
    jitter,
    low_pass,
    off_axis_rms,
    raw_twist,
    shrink_factors,
)
from limbtree.skills.alignment import goal_pose, pose_error

DT = 1.0 / 30.0
P = AlignV2Params()
SEEDS = (1, 2, 3)
vectors = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array)

# Eqs. 5-6 ----------------------------------------------------------------------------------


def test_base_radii_are_eqs_5_and_6():
    p = AlignV2Params(
        t_min=0.005,
        t_max=0.05,
        D_near=0.01,
        D_far=0.11,
        r_min=0.02,
        r_max=0.12,
        A_near=0.1,
        A_far=0.3,
    )
    assert base_radii(0.005, 0.05, p) == (0.005, 0.02)  # below the near thresholds
    assert base_radii(0.5, 1.0, p) == (0.05, 0.12)  # beyond the far thresholds
    # alpha = (0.035 - 0.01) / 0.1 = 0.25, beta = (0.25 - 0.1) / 0.2 = 0.75.
    assert base_radii(0.035, 0.25, p) == pytest.approx((0.005 + 0.25 * 0.045, 0.02 + 0.075))


# Eq. 7 -------------------------------------------------------------------------------------


def test_shrink_factors_are_eq_7():
    p = AlignV2Params(alpha_j=200.0, alpha_k=100.0, tau_jitter=0.005, epsilon=0.01)
    f_j, f_k, f_s = shrink_factors(0.001, -0.002, 0.002, p)
    assert f_j == pytest.approx(1.0 / 1.2)
    assert f_k == pytest.approx(1.0 / 1.2)  # |Delta d_k - Delta d_k-1|
    assert f_s == pytest.approx(0.6)
    assert shrink_factors(0.0, 0.0, 0.0, p) == (1.0, 1.0, 1.0)
    assert shrink_factors(0.0, 0.0, 0.05, p)[2] == 0.01  # floored at epsilon


@given(st.floats(0.0, 1.0), st.floats(-1.0, 1.0), st.floats(0.0, 1.0))
def test_every_shrink_factor_lies_in_0_1(sigma, change, rms):
    for f in shrink_factors(sigma, change, rms, P):
        assert 0.0 < f <= 1.0


def test_effective_radii_are_eq_8():
    assert effective_radii(0.04, 0.1, 0.5, 0.8, 0.25) == pytest.approx((0.004, 0.04))


def test_jitter_ignores_steady_motion_and_measures_the_rest():
    times = np.arange(10) * DT
    line = np.outer(times, [0.03, -0.01, 0.0]) + [0.1, 0.2, 0.3]
    assert jitter(times, line) == pytest.approx(0.0, abs=1e-12)
    # +-1 mm on x on alternate samples (a pattern with no straight-line part left).
    wobble = line.copy()
    wobble[:, 0] += 0.001 * np.array([1, -1, -1, 1, 1, -1, -1, 1, 1, -1])
    residual = jitter(times, wobble)
    assert 0.0009 < residual <= 0.001 + 1e-12
    assert jitter(times[:2], line[:2]) == 0.0


def test_off_axis_rms_counts_only_motion_across_the_error_direction():
    along = np.outer(np.linspace(0, 0.05, 8), [1.0, 0.0, 0.0])
    assert off_axis_rms(along, np.array([2.0, 0.0, 0.0])) == pytest.approx(0.0)
    across = along + np.outer([1, -1] * 4, [0.0, 0.002, 0.0])
    assert off_axis_rms(across, np.array([1.0, 0.0, 0.0])) == pytest.approx(0.002)
    # Without a direction, all motion is off-axis.
    assert off_axis_rms(across[:2], np.zeros(3)) == pytest.approx(math.hypot(0.05 / 7, 0.004) / 2)


# Eqs. 9-12 ---------------------------------------------------------------------------------


def test_the_raw_twist_is_eq_9():
    error = pose_error(Pose((0.0, 0.0, 0.0), turn_z(90.0)), Pose((0.03, 0.04, 0.0)))
    v_raw, omega_raw = raw_twist(error)
    assert v_raw == pytest.approx([0.03, 0.04, 0.0])
    assert omega_raw == pytest.approx([0.0, 0.0, -math.pi / 2])


def test_the_ellipsoid_clamp_is_eqs_10_and_11():
    # u = [3, 4, 0, 0, 0, 0]: ||u|| = 5, so everything is scaled by 1/5.
    v_c, omega_c = ellipsoid_clamp(np.array([0.03, 0.04, 0.0]), np.zeros(3), 0.01, 0.1)
    assert v_c == pytest.approx([0.006, 0.008, 0.0])
    assert omega_c == pytest.approx([0.0, 0.0, 0.0])
    # u = [0.3, 0, 0, 0, 0.4, 0]: inside, unchanged.
    v_c, omega_c = ellipsoid_clamp(np.array([0.003, 0, 0]), np.array([0, 0.04, 0]), 0.01, 0.1)
    assert v_c == pytest.approx([0.003, 0.0, 0.0]) and omega_c == pytest.approx([0.0, 0.04, 0.0])
    # u = [3, 0, 0, 0, 4, 0]: both scaled by 1/5, so they shrink together.
    v_c, omega_c = ellipsoid_clamp(np.array([0.03, 0, 0]), np.array([0, 0.4, 0]), 0.01, 0.1)
    assert v_c == pytest.approx([0.006, 0.0, 0.0]) and omega_c == pytest.approx([0.0, 0.08, 0.0])


@given(vectors, vectors, st.floats(1e-3, 0.1), st.floats(1e-3, 1.0))
def test_the_clamped_twist_is_in_the_ellipsoid_and_parallel_to_the_raw_one(v, w, dt_eff, dr_eff):
    v_c, omega_c = ellipsoid_clamp(v, w, dt_eff, dr_eff)
    u = np.concatenate([v / dt_eff, w / dr_eff])
    u_c = np.concatenate([v_c / dt_eff, omega_c / dr_eff])
    assert np.linalg.norm(u_c) <= 1.0 + 1e-9
    scale = 1.0 / max(1.0, float(np.linalg.norm(u)))
    assert u_c == pytest.approx(u * scale, abs=1e-9)


def test_the_low_pass_filter_is_eq_12():
    out = low_pass(np.zeros(3), np.array([1.0, 0.0, -2.0]), 0.1, 0.3)
    assert out == pytest.approx([0.25, 0.0, -0.5])
    assert low_pass(np.ones(3), np.zeros(3), 0.0, 0.3) == pytest.approx([1.0, 1.0, 1.0])
    assert low_pass(np.ones(3), np.zeros(3), 0.1, 0.0) == pytest.approx([0.0, 0.0, 0.0])


# Parameters --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("t_min", 0.0),
        ("t_max", 0.001),  # below t_min
        ("D_near", -0.001),
        ("D_far", 0.005),  # not above D_near
        ("r_min", -1.0),
        ("r_max", 0.001),
        ("A_near", math.nan),
        ("A_far", 0.01),
        ("alpha_j", -1.0),
        ("alpha_k", math.inf),
        ("tau_jitter", 0.0),
        ("epsilon", 0.0),
        ("epsilon", 1.5),
        ("tau_lin", -0.1),
        ("tau_rot", "0.3"),
        ("history_s", 0.0),
        ("N", 0),
    ],
)
def test_a_bad_v2_parameter_raises_an_error_naming_it(name, value):
    with pytest.raises(AlignmentParameterError, match=name) as info:
        AlignV2Params(**{name: value})
    assert info.value.parameter == name


def test_v2_defaults():
    assert P.N == 1  # eq. 9 uses the latest poses
    assert P.epsilon == 0.01  # the paper's value
    assert (P.t_min, P.t_max, P.D_near, P.D_far) == (0.005, 0.05, 0.005, 0.05)


# One step at a time, with hand-fed measurements ---------------------------------------------

EE = Pose((0.0, 0.0, 0.0))
GOAL = Pose((0.2, 0.0, 0.0))


def feed(controller, k, ee=EE, target=GOAL):
    return step_core(controller, AlignObservation(k * DT, ee, target))


def test_the_first_steps_match_hand_computed_values():
    controller = AlignV2()
    first = feed(controller, 0)
    # Delta d = 200 mm > D_far: Delta_t = t_max; no history yet, so no shrinking.
    assert first.delta_t == pytest.approx(P.t_max)
    assert (first.f_j, first.f_k, first.f_s) == (1.0, 1.0, 1.0)
    assert first.v_raw == pytest.approx((0.2, 0, 0, 0, 0, 0))
    assert first.v_clamped == pytest.approx((P.t_max, 0, 0, 0, 0, 0))
    assert first.twist == (0.0,) * 6  # dt = 0: the filter has not moved
    second = feed(controller, 1)
    alpha = DT / (P.tau_lin + DT)
    assert second.twist == pytest.approx((alpha * P.t_max, 0, 0, 0, 0, 0))
    third = feed(controller, 2)
    assert third.twist[0] == pytest.approx(P.t_max * (1 - (1 - alpha) ** 2))
    assert third.phase is AlignPhase.MOVING and third.outcome is Outcome.RUNNING


def test_measured_instability_shrinks_the_effective_radii():
    controller = AlignV2()
    for k in range(10):
        noisy = Pose((0.0, 0.003 * (-1) ** k, 0.0))  # 3 mm of lateral wobble
        step = feed(controller, k, ee=noisy)
    assert step.sigma_jitter > 0.001 and step.rms_perp == pytest.approx(0.003, rel=1e-3)
    assert step.f_j < 0.8 and step.f_s == pytest.approx(1.0 - 0.003 / P.tau_jitter, rel=1e-3)
    assert step.delta_t_eff == pytest.approx(step.delta_t * step.f_j * step.f_k * step.f_s)
    assert step.delta_r_eff == pytest.approx(step.delta_r * step.f_j * step.f_k)
    assert np.linalg.norm(step.v_clamped[:3]) == pytest.approx(step.delta_t_eff)


def test_the_twist_is_in_the_end_effector_frame_and_also_given_in_the_common_frame():
    q_e = turn_z(90.0)
    # The goal is turned 10 deg about the end-effector's x axis (the common frame's y axis).
    q_t = quaternion_from_rotation_vector([0.0, math.radians(10.0), 0.0])
    q_t = (Pose((0, 0, 0), q_t) @ Pose((0, 0, 0), q_e)).quaternion
    controller = AlignV2()
    for k in range(3):
        step = feed(controller, k, ee=Pose((0, 0, 0), q_e), target=Pose((0, 0, 0), q_t))
    assert step.v_raw == pytest.approx((0, 0, 0, math.radians(10), 0, 0), abs=1e-9)
    assert step.twist[4] == pytest.approx(0.0, abs=1e-12) and step.twist[3] > 0.0
    assert step.twist_world[3] == pytest.approx(0.0, abs=1e-12)
    assert step.twist_world[4] == pytest.approx(step.twist[3])


def test_a_jump_zeroes_the_clamped_twist_and_the_filter_ramps_down():
    controller = AlignV2()
    for k in range(20):
        step = feed(controller, k)
    before = step.twist[0]
    jumped = Pose((0.25, 0.0, 0.0))
    step = feed(controller, 20, target=jumped)
    assert step.jump and step.phase is AlignPhase.HOLDING
    assert step.v_clamped == (0.0,) * 6
    alpha = DT / (P.tau_lin + DT)
    assert step.twist[0] == pytest.approx(before * (1 - alpha))  # ramps, does not stop dead
    assert "jumped by 50.0 mm" in step.message
    step = feed(controller, 21)  # and back: another jump
    assert step.jump and step.v_clamped == (0.0,) * 6
    step = feed(controller, 22)
    assert not step.jump and step.phase is AlignPhase.MOVING
    assert step.v_clamped[0] > 0.0


def test_losing_sight_stops_the_twist_at_once_then_fails_after_the_timeout():
    controller = AlignV2(AlignV2Params(target_timeout_s=1.0))
    for k in range(20):
        feed(controller, k)
    step = feed(controller, 20, ee=None)
    assert step.phase is AlignPhase.LOST and step.twist == (0.0,) * 6
    assert step.dd is None and step.telemetry.as_map()["v_raw"] is None
    k = 21
    while step.outcome is Outcome.RUNNING:
        step = feed(controller, k, ee=None)
        k += 1
    assert step.outcome is Outcome.FAILURE and step.phase is AlignPhase.FAILED
    assert "has not seen the end-effector" in step.message
    assert step.time - 20 * DT == pytest.approx(1.0, abs=2 * DT)
    assert feed(controller, k) is step  # latched


def test_within_the_thresholds_it_confirms_then_succeeds_and_stops():
    controller = AlignV2()
    near = Pose((0.004, 0.0, 0.0))
    steps = [feed(controller, k, target=near) for k in range(30)]
    assert steps[0].phase is AlignPhase.CONFIRMING
    done = next(s for s in steps if s.outcome is Outcome.SUCCESS)
    assert done.time == pytest.approx(P.confirm_s, abs=DT)
    assert done.phase is AlignPhase.DONE and done.twist == (0.0,) * 6


def test_the_record_has_the_papers_internals_in_report_units():
    controller = AlignV2()
    feed(controller, 0)
    record = feed(controller, 1).telemetry.as_map()
    for key in (
        "dd_mm",
        "dtheta_deg",
        "delta_t",
        "delta_r",
        "delta_t_eff",
        "delta_r_eff",
        "f_j",
        "f_k",
        "f_s",
        "v_raw",
        "v_clamped",
        "v_cmd",
        "jump",
        "phase",
    ):
        assert key in record
    assert record["dd_mm"] == pytest.approx(200.0)
    assert record["v_raw"] == pytest.approx([0.2, 0.0, 0.0, 0.0, 0.0, 0.0])
    assert len(record["v_clamped"]) == 6 and isinstance(record["v_clamped"][0], float)


# Closed loop -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def both_versions():
    """Both controllers from the same random starts on the same test limb."""
    return {
        name: {seed: run_loop(controller(), seed) for seed in SEEDS}
        for name, controller in (("V1", AlignV1), ("V2", AlignV2))
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_v2_converges_on_a_limb_with_lag_backlash_flex_and_mocap_noise(both_versions, seed):
    result = both_versions["V2"][seed]
    assert result.outcome is Outcome.SUCCESS, result.steps[-1].message
    assert result.final_dd <= 0.010
    assert result.final_dtheta <= math.radians(2.0)
    # The clamp held the commanded speed within the effective radii all along.
    for step in result.steps:
        if step.v_clamped is not None:
            assert np.linalg.norm(step.v_clamped[:3]) <= step.delta_t_eff * (1 + 1e-9)
            assert np.linalg.norm(step.twist[:3]) <= P.t_max * (1 + 1e-9)


def test_v2_is_faster_than_v1_in_closed_loop(both_versions):
    v1 = [both_versions["V1"][s].duration for s in SEEDS]
    v2 = [both_versions["V2"][s].duration for s in SEEDS]
    print(
        f"\nclosed-loop durations [s]: V1 {v1} (mean {np.mean(v1):.2f}), "
        f"V2 {v2} (mean {np.mean(v2):.2f}), V2/V1 {np.mean(v2) / np.mean(v1):.2f}"
    )
    for seed in SEEDS:
        assert both_versions["V2"][seed].duration < both_versions["V1"][seed].duration
    assert np.mean(v2) < 0.9 * np.mean(v1)


def test_v2_reaches_the_point_150_mm_above_the_target():
    offset = Pose((0.0, 0.0, 0.15))
    goal = goal_pose(TARGET, offset)
    limb = LaggyLimb(random_start(5, goal), 5)
    result = run_loop(AlignV2(AlignV2Params(offset=offset)), 5, limb=limb, goal=goal)
    assert result.outcome is Outcome.SUCCESS
    assert result.final_dd <= 0.010 and result.final_dtheta <= math.radians(2.0)


def test_v2_fails_when_the_limb_moves_the_wrong_way():
    limb = LaggyLimb(random_start(7, TARGET), 7, mirror=True)
    result = run_loop(AlignV2(), 7, limb=limb, max_time=60.0)
    assert result.outcome is Outcome.FAILURE
    assert "diverging" in result.steps[-1].message
    assert result.steps[-1].twist == (0.0,) * 6


def test_v2_fails_when_the_target_is_lost_in_closed_loop():
    result = run_loop(AlignV2(), 8, target_at=None, see=lambda t: t < 3.0)
    assert result.outcome is Outcome.FAILURE
    assert result.duration == pytest.approx(3.0 + P.target_timeout_s, abs=2 * DT)
    assert "has not seen" in result.steps[-1].message


def test_v2_holds_through_a_measurement_glitch_in_closed_loop():
    glitch = Pose(TARGET.position + np.array([0.0, 0.06, 0.0]), TARGET.quaternion)
    result = run_loop(AlignV2(), 9, target_at=lambda t: glitch if 2.0 <= t < 2.1 else TARGET)
    assert result.outcome is Outcome.SUCCESS
    held = [s for s in result.steps if s.jump]
    assert [s.time for s in held] == pytest.approx([2.0, 2.1])
    assert all(s.v_clamped == (0.0,) * 6 for s in held)
    # The command never turned towards the glitch: its y speed stays what it was.
    before = next(s for s in result.steps if s.time >= 2.0 - DT / 2 - DT)
    for s in result.steps:
        if 2.0 <= s.time <= 2.2:
            assert abs(s.twist[1]) <= abs(before.twist[1]) + 1e-9
