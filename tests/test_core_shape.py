"""Every core has one shape: ``step(observation, dt)`` returns an outcome, a command and typed
telemetry whose map keeps the keys the run record and ``limbtree report`` read."""

import math

import numpy as np
import pytest

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import (
    Align,
    AlignObservation,
    AlignTelemetry,
    AlignV1,
    AlignV1Params,
    AlignV2,
    AlignV2Params,
    Outcome,
    PoseSpace,
    SkillTelemetry,
    SpeedSegment,
    StepTimer,
    SyncConfig,
    SyncMove,
    SyncObservation,
    VelocityMove,
)

SYNC_KEYS = {"skill", "mode", "segment", "t", "distance", "message", "laps"}
V1_KEYS = {
    "dd_mm", "dtheta_deg", "dd_raw_mm", "dtheta_raw_deg", "e_avg_mm", "jump", "step_mm",
    "step_deg", "delta_p_mm", "stepped", "settled", "settle_timed_out", "phase", "outcome",
}  # fmt: skip
V2_KEYS = {
    "dd_mm", "dtheta_deg", "jump", "delta_t", "delta_r", "delta_t_eff", "delta_r_eff", "f_j",
    "f_k", "f_s", "sigma_jitter_mm", "d_change_mm", "rms_perp_mm", "v_raw", "v_clamped",
    "v_cmd", "phase", "outcome",
}  # fmt: skip
ALIGN_EXTRA = {"skill", "version", "ee_mm", "goal_mm"}
EE = Pose((0.0, 0.0, 0.0))
TARGET = Pose((0.1, 0.0, 0.0))


def test_a_synchronized_move_reports_its_mode_segment_t_and_distance():
    space = PoseSpace((SE3Metric(0.02),))
    move = SyncMove(space, [(EE,), (TARGET,)], SyncConfig(), ["a"])
    step = move.step(SyncObservation(0.0, (EE,)), 0.0)
    assert step.outcome is Outcome.RUNNING and step.command is not None
    figures = step.telemetry.as_map()
    assert set(figures) == SYNC_KEYS and figures["skill"] == "sync"
    assert figures["mode"] == "nominal" and figures["distance"] == pytest.approx(1.0)


def test_a_synchronized_move_refuses_an_observation_of_the_wrong_width():
    move = SyncMove(PoseSpace((SE3Metric(),)), [(EE,), (TARGET,)], SyncConfig(), ["a"])
    with pytest.raises(ValueError, match="1 limbs"):
        move.step(SyncObservation(0.0, (EE, EE)), 0.0)


def test_a_velocity_move_integrates_its_speed_over_dt():
    move = VelocityMove([SE3Metric(0.05)], [SpeedSegment(1.0, (0.1, 0.0, 0.0))], ["a"])
    move.step(SyncObservation(0.0, (EE,)), 0.0)
    step = move.step(SyncObservation(0.1, (EE,)), 0.1)
    assert step.command is not None
    assert step.command[0].position[0] == pytest.approx(0.01)
    assert set(step.telemetry.as_map()) == SYNC_KEYS


@pytest.mark.parametrize(("core", "keys"), [(AlignV1, V1_KEYS), (AlignV2, V2_KEYS)])
def test_each_alignment_controller_reports_the_papers_internals(core, keys):
    controller = core()
    step = controller.step(AlignObservation(0.0, EE, TARGET), 0.0)
    assert isinstance(step.telemetry, SkillTelemetry)
    figures = step.telemetry.as_map()
    assert set(figures) == keys | {"skill"}
    assert figures["dd_mm"] == pytest.approx(100.0)


def test_align_version_2_commands_a_twist_towards_the_target_and_reports_where_things_are():
    align = Align(AlignV2Params(N=1), SE3Metric(0.02, math.radians(10)))
    timer = StepTimer()
    result = None
    for k in range(20):
        result = align.step(AlignObservation(0.01 * k, EE, TARGET, EE), timer.dt(0.01 * k))
    assert result is not None and result.outcome is Outcome.RUNNING
    assert result.pose is None and result.twist is not None and result.twist[0] > 0.0
    assert isinstance(result.telemetry, AlignTelemetry)
    figures = result.telemetry.as_map()
    assert set(figures) == V2_KEYS | ALIGN_EXTRA and figures["skill"] == "align"
    assert figures["goal_mm"] == pytest.approx([100.0, 0.0, 0.0])


def test_align_version_1_commands_poses_inside_the_hypersphere_around_the_limb():
    metric = SE3Metric(0.02, math.radians(10))
    align = Align(AlignV1Params(), metric, max_speed=0.05)
    timer = StepTimer()
    sent = []
    for k in range(200):
        t = 0.01 * k
        result = align.step(AlignObservation(t, EE, TARGET, EE), timer.dt(t))
        if result.pose is not None:
            assert result.center is not None and result.distance is not None
            assert metric.distance(result.center, result.pose) <= 1.0 + 1e-9
            sent.append(result.pose)
    assert sent and sent[-1].position[0] > 0.0
    assert set(result.telemetry.as_map()) == V1_KEYS | ALIGN_EXTRA


def test_align_out_of_time_fails_saying_how_far_it_got():
    align = Align(AlignV2Params(), SE3Metric(), timeout_s=0.5)
    align.step(AlignObservation(0.0, EE, TARGET), 0.0)
    result = align.step(AlignObservation(0.6, EE, TARGET), 0.6)
    assert result.outcome is Outcome.FAILURE and result.telemetry is None
    assert result.message.startswith("not aligned after 0.5 s: Δd 100.0 mm")


def test_align_refuses_a_bound_that_is_not_positive():
    with pytest.raises(ValueError, match="max_speed"):
        Align(AlignV1Params(), SE3Metric(), max_speed=0.0)


def _turn(axis: str, degrees: float):
    """A 4x4 turn about a world axis."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis]
    m = np.eye(4)
    m[i, i] = m[j, j] = c
    m[j, i], m[i, j] = s, -s
    return m


def about_z(degrees: float) -> tuple[float, float, float, float]:
    half = math.radians(degrees) / 2
    return (0.0, 0.0, math.sin(half), math.cos(half))


def test_align_targets_the_goal_moved_into_the_limbs_own_frame():
    # The capture sees the end-effector 5 mm off the limb's own pose and turned 10 deg
    # about z: the limb is to end where its own pose plus the captured gap takes it.
    ee = Pose((0.005, 0.0, 0.0), about_z(10))
    limb = Pose((0.0, 0.0, 0.0))
    goal = Pose((0.105, 0.02, 0.0), about_z(40))
    align = Align(AlignV2Params(N=1), SE3Metric(0.02, math.radians(10)))
    result = align.step(AlignObservation(0.0, ee, goal, limb), 0.0)
    assert result.target is not None
    assert result.target.position.tolist() == pytest.approx([0.1, 0.02, 0.0])
    assert result.target.angle_to(Pose((0.1, 0.02, 0.0), about_z(30))) == pytest.approx(0.0)
    # Turns that do not commute: the captured turn from the end-effector to the goal, in
    # the world frame, is applied to the limb's own orientation (R_goal R_ee^T R_limb).
    turns = {
        axis: Pose.from_matrix(_turn(axis, deg)) for axis, deg in (("x", 30), ("y", 40), ("z", 20))
    }
    skew = Align(AlignV2Params(N=1), SE3Metric()).step(
        AlignObservation(0.0, turns["x"], turns["y"], turns["z"]), 0.0
    )
    expected = turns["y"].rotation @ turns["x"].rotation.T @ turns["z"].rotation
    assert skew.target is not None
    assert skew.target.rotation == pytest.approx(expected, abs=1e-9)
    # Not seen this step: the last target stays.
    again = align.step(AlignObservation(0.01, None, None, limb), 0.01)
    assert again.target == result.target
    # Without the limb's own pose: the captured goal.
    alone = Align(AlignV2Params(N=1), SE3Metric()).step(AlignObservation(0.0, ee, goal), 0.0)
    assert alone.target is not None and alone.target.position.tolist() == pytest.approx(
        [0.105, 0.02, 0.0]
    )


def test_a_synchronized_move_heads_for_its_segment_end_or_while_recovering_its_recovery_point():
    space = PoseSpace((SE3Metric(0.02),))
    move = SyncMove(space, [(EE,), (TARGET,)], SyncConfig(), ["a"])
    move.step(SyncObservation(0.0, (EE,)), 0.0)
    assert move.heading == (TARGET,)
    pushed = Pose((0.03, 0.2, 0.0))  # shoved far off the path
    step = move.step(SyncObservation(0.1, (pushed,)), 0.1)
    assert step.mode.value == "recovering"
    (point,) = move.heading
    assert point != TARGET and abs(point.position[1]) < 1e-12  # back onto the path
