"""Seed 002 eqs. 1-2 and what both alignment controllers share; the closed-loop test limb."""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import poses, unit_quaternions

import limbtree.skills as skills
from limbtree.errors import LimbtreeError
from limbtree.kinematics import Pose
from limbtree.kinematics.so3 import (
    quaternion_conjugate,
    quaternion_from_rotation_vector,
    quaternion_multiply,
    rotation_vector,
)
from limbtree.skills import (
    AlignmentParameterError,
    AlignObservation,
    AlignParams,
    AlignV1,
    AlignV1Params,
    AlignV1Step,
    AlignV2,
    AlignV2Params,
    Outcome,
)
from limbtree.skills.align import minimum_jerk, path_figures, step_duration
from limbtree.skills.alignment import (
    ErrorBuffer,
    PoseError,
    Supervisor,
    average_errors,
    goal_pose,
    interpolate_clamped,
    pose_error,
)
from limbtree.skills.core import StepTimer

_TIMERS: weakref.WeakKeyDictionary[object, StepTimer] = weakref.WeakKeyDictionary()


def step_core(core, observation):
    """``core.step(observation, dt)``, with dt from the core's previous step here (0 first)."""
    timer = _TIMERS.setdefault(core, StepTimer())
    return core.step(observation, timer.dt(observation.time))


# The closed-loop test limb -----------------------------------------------------------------

#: Seed 002 Fig. 4: the wheel target at (871, -459, 221) mm; here turned 30 deg about z.
TARGET = Pose((0.871, -0.459, 0.221), quaternion_from_rotation_vector([0, 0, math.radians(30)]))
TICK_HZ = 30.0  # the paper's high-level loop
MOCAP_HZ = 180.0  # the paper's OptiTrack: each tick sees the frame taken at its time
PLANT_SUBSTEPS = 3  # the limb is integrated at 90 Hz
HALF_TURN_Z = np.array([0.0, 0.0, 1.0, 0.0])  # 180 deg about z


def rotate(q, r):
    """``exp(r) q``: q turned by the rotation vector r (common frame)."""
    out = quaternion_multiply(quaternion_from_rotation_vector(r), q)
    return out / np.linalg.norm(out)


def relative(q_from, q_to):
    """Rotation vector (common frame) that turns q_from into q_to."""
    return rotation_vector(quaternion_multiply(q_to, quaternion_conjugate(q_from)))


def toward(current, goal, fraction, cap):
    """Move a vector a fraction of the way to goal, at most cap."""
    step = (goal - current) * fraction
    norm = np.linalg.norm(step)
    return current + (step * cap / norm if norm > cap else step)


@dataclass
class LaggyLimb:
    """An end-effector that follows a pose target, with the non-idealities of seed 002.

    The motor side follows the command with a first-order lag (``lag_s``) and a speed cap
    (the synchronizer's LERP); the output lags the motor by a dead-band (backlash); the true
    end-effector is the output plus a constant sag (flex) that the limb's own sensing does not
    see. The motion capture reads the true pose at 180 Hz with Gaussian noise. ``mirror``
    turns the limb's frame half a turn about z against the capture's: commands then push the
    wrong way, and the alignment diverges.
    """

    start: Pose
    seed: int
    lag_s: float = 0.15
    max_speed: float = 0.06  # m/s
    max_rate: float = math.radians(15.0)  # rad/s
    deadband_m: float = 0.002
    deadband_rad: float = math.radians(0.5)
    sag: tuple[float, float, float] = (0.0, 0.0, -0.02)
    noise_m: float = 0.0003
    noise_rad: float = math.radians(0.1)
    mirror: bool = False
    settle_m: float = 0.0005
    rng: np.random.Generator = field(init=False)

    def __post_init__(self):
        self.rng = np.random.default_rng(self.seed)
        # The limb frame's poses of its command, motor side and output side.
        start = self.to_limb(self.start.position - np.array(self.sag), self.start.quaternion)
        self.cmd_p, self.cmd_q = start
        self.motor_p, self.motor_q = start[0].copy(), start[1].copy()
        self.out_p, self.out_q = start[0].copy(), start[1].copy()

    def to_limb(self, p, q):
        if not self.mirror:
            return np.array(p, dtype=float), np.array(q, dtype=float)
        return np.array([-p[0], -p[1], p[2]]), quaternion_multiply(HALF_TURN_Z, q)

    def true_pose(self):
        p, q = self.to_limb(self.out_p, self.out_q)  # a half turn is its own inverse
        return Pose(p + np.array(self.sag), q / np.linalg.norm(q))

    def limb_pose(self):
        return Pose(self.motor_p, self.motor_q / np.linalg.norm(self.motor_q))

    def settled(self):
        return np.linalg.norm(self.cmd_p - self.motor_p) < self.settle_m and np.linalg.norm(
            relative(self.motor_q, self.cmd_q)
        ) < math.radians(0.1)

    def measure(self, pose):
        p = pose.position + self.rng.normal(0.0, self.noise_m, 3)
        q = rotate(pose.quaternion, self.rng.normal(0.0, self.noise_rad, 3))
        return Pose(p, q)

    def advance(self, dt, twist_world=None):
        fraction = 1.0 - math.exp(-dt / self.lag_s)
        if twist_world is not None:  # a velocity command integrates into the pose target
            self.cmd_p = self.cmd_p + np.asarray(twist_world[:3]) * dt
            self.cmd_q = rotate(self.cmd_q, np.asarray(twist_world[3:]) * dt)
        self.motor_p = toward(self.motor_p, self.cmd_p, fraction, self.max_speed * dt)
        r = toward(np.zeros(3), relative(self.motor_q, self.cmd_q), fraction, self.max_rate * dt)
        self.motor_q = rotate(self.motor_q, r)
        gap = self.motor_p - self.out_p
        norm = np.linalg.norm(gap)
        if norm > self.deadband_m:
            self.out_p = self.out_p + gap * (1.0 - self.deadband_m / norm)
        turn = relative(self.out_q, self.motor_q)
        angle = np.linalg.norm(turn)
        if angle > self.deadband_rad:
            self.out_q = rotate(self.out_q, turn * (1.0 - self.deadband_rad / angle))


@dataclass
class LoopResult:
    outcome: Outcome
    duration: float
    final_dd: float  # true, at the end [m]
    final_dtheta: float  # true [rad]
    steps: list = field(default_factory=list)
    limb: LaggyLimb | None = None


def random_start(seed, goal, distance=(0.15, 0.30), angle=(10.0, 30.0)):
    rng = np.random.default_rng(1000 + seed)
    direction = rng.normal(size=3)
    direction /= np.linalg.norm(direction)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    p = goal.position + direction * rng.uniform(*distance)
    q = rotate(goal.quaternion, axis * math.radians(rng.uniform(*angle)))
    return Pose(p, q)


def run_loop(
    controller,
    seed,
    *,
    limb=None,
    goal=TARGET,
    max_time=120.0,
    give_limb_state=True,
    see=None,
    target_at=None,
):
    """Close the loop at 30 Hz against a LaggyLimb, in simulated time (no sleeping)."""
    limb = limb if limb is not None else LaggyLimb(random_start(seed, goal), seed)
    dt = 1.0 / (TICK_HZ * PLANT_SUBSTEPS)
    twist = None
    t = 0.0
    steps = []
    k = 0
    while t <= max_time:
        visible = see(t) if see is not None else True
        target = target_at(t) if target_at is not None else TARGET
        observation = AlignObservation(
            time=t,
            ee_pose=limb.measure(limb.true_pose()) if visible else None,
            target_pose=limb.measure(target) if visible else None,
            limb_pose=limb.limb_pose() if give_limb_state else None,
            limb_settled=limb.settled() if give_limb_state else None,
        )
        step = step_core(controller, observation)
        steps.append(step)
        if step.outcome is not Outcome.RUNNING:
            break
        if isinstance(step, AlignV1Step):
            if step.stepped:
                limb.cmd_p, limb.cmd_q = step.command.position, step.command.quaternion
        else:
            twist = step.twist_world
        for _ in range(PLANT_SUBSTEPS):
            limb.advance(dt, twist)
        k += 1
        t = k / TICK_HZ
    truth = limb.true_pose()
    final_goal = goal_pose(TARGET, controller.params.offset)
    return LoopResult(
        outcome=steps[-1].outcome,
        duration=steps[-1].time,
        final_dd=truth.distance_to(final_goal),
        final_dtheta=truth.angle_to(final_goal),
        steps=steps,
        limb=limb,
    )


# Eq. 1 -------------------------------------------------------------------------------------


def turn_z(degrees):
    return quaternion_from_rotation_vector([0.0, 0.0, math.radians(degrees)])


def test_pose_error_matches_hand_computed_values():
    ee = Pose((0.1, 0.2, 0.3))
    goal = Pose((0.13, 0.24, 0.3), turn_z(90.0))
    error = pose_error(ee, goal)
    assert error.e_xyz == pytest.approx([0.03, 0.04, 0.0])
    assert error.dd == pytest.approx(0.05)
    assert error.dtheta == pytest.approx(math.pi / 2)
    assert error.rotation_vector == pytest.approx([0.0, 0.0, math.pi / 2])


def test_rotation_error_is_in_the_end_effector_frame_and_converted_to_the_common_one():
    # The end-effector is turned 90 deg about z; the goal is a further 30 deg about the
    # end-effector's own x axis, which is the common frame's y axis.
    q_e = turn_z(90.0)
    q_t = quaternion_multiply(q_e, quaternion_from_rotation_vector([math.radians(30), 0, 0]))
    error = pose_error(Pose((0, 0, 0), q_e), Pose((0, 0, 0), q_t))
    assert error.rotation_vector == pytest.approx([math.radians(30), 0.0, 0.0])
    assert error.rotation_vector_world == pytest.approx([0.0, math.radians(30), 0.0])


@settings(max_examples=200, deadline=None)
@given(poses(), poses())
def test_pose_error_is_blind_to_the_sign_of_either_quaternion(ee, goal):
    flipped_ee = Pose(ee.position, -ee.quaternion)
    flipped_goal = Pose(goal.position, -goal.quaternion)
    reference = pose_error(ee, goal)
    for a, b in ((flipped_ee, goal), (ee, flipped_goal), (flipped_ee, flipped_goal)):
        error = pose_error(a, b)
        assert error.dd == pytest.approx(reference.dd)
        assert error.dtheta == pytest.approx(reference.dtheta, abs=1e-9)
        assert error.q_err[3] >= 0.0
        if reference.dtheta < math.pi - 1e-6:  # at a half turn both axes are right
            assert error.rotation_vector == pytest.approx(reference.rotation_vector, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(unit_quaternions(), unit_quaternions())
def test_dtheta_is_eq_1s_arccos_of_the_scalar_part(q_e, q_t):
    error = pose_error(Pose((0, 0, 0), q_e), Pose((0, 0, 0), q_t))
    scalar = quaternion_multiply(quaternion_conjugate(q_t), q_e)[3]
    expected = 2.0 * math.acos(min(1.0, abs(scalar)))
    assert error.dtheta == pytest.approx(expected, abs=1e-6)
    assert 0.0 <= error.dtheta <= math.pi + 1e-12


@settings(max_examples=200, deadline=None)
@given(unit_quaternions(), unit_quaternions())
def test_the_rotation_vector_turns_the_end_effector_onto_the_goal_the_short_way(q_e, q_t):
    error = pose_error(Pose((0, 0, 0), q_e), Pose((0, 0, 0), q_t))
    assert np.linalg.norm(error.rotation_vector) == pytest.approx(error.dtheta, abs=1e-9)
    body = quaternion_multiply(q_e, quaternion_from_rotation_vector(error.rotation_vector))
    world = quaternion_multiply(quaternion_from_rotation_vector(error.rotation_vector_world), q_e)
    for reached in (body, world):
        assert abs(float(reached @ q_t)) == pytest.approx(1.0, abs=1e-9)


def test_goal_is_the_offset_expressed_in_the_target_frame():
    target = Pose((1.0, 0.0, 0.0), turn_z(90.0))
    goal = goal_pose(target, Pose((0.15, 0.0, 0.0)))
    assert goal.position == pytest.approx([1.0, 0.15, 0.0])
    assert goal_pose(target) is target


# Eq. 2 -------------------------------------------------------------------------------------


def error_of(e_xyz, q_err, q_ee=(0.0, 0.0, 0.0, 1.0)):
    q = np.array(q_err, dtype=float)
    return PoseError(
        np.array(e_xyz, dtype=float),
        q / np.linalg.norm(q),
        np.array(q_ee, dtype=float),
        float(np.linalg.norm(e_xyz)),
        2 * math.atan2(np.linalg.norm(q[:3]), abs(q[3])),
    )


def test_the_buffer_average_is_eq_2():
    errors = [error_of((0.01 * i, 0.002, 0.0), (0, 0, 0, 1)) for i in (1, 2, 3)]
    mean = average_errors(errors)
    assert mean.e_xyz == pytest.approx([0.02, 0.002, 0.0])
    assert mean.dd == pytest.approx(math.hypot(0.02, 0.002))
    assert mean.dtheta == pytest.approx(0.0)


def test_averaging_rotations_near_a_half_turn_respects_the_sign_ambiguity():
    # 179.9 and 180.1 deg about z: stored with w >= 0, their z components have opposite signs,
    # so a naive mean would cancel to nothing.
    a, b = (
        pose_error(Pose(), Pose((0, 0, 0), turn_z(179.9))),
        pose_error(Pose(), Pose((0, 0, 0), turn_z(180.1))),
    )
    assert a.q_err[2] * b.q_err[2] < 0.0
    mean = average_errors([a, b, a, b])
    assert mean.dtheta == pytest.approx(math.pi, abs=1e-6)
    assert abs(mean.rotation_vector[2]) == pytest.approx(math.pi, abs=1e-6)


def test_averaging_nothing_is_refused():
    with pytest.raises(AlignmentParameterError):
        average_errors([])


@settings(max_examples=100, deadline=None)
@given(unit_quaternions(), st.lists(st.booleans(), min_size=1, max_size=8))
def test_averaging_copies_of_a_rotation_with_mixed_signs_gives_that_rotation(q, signs):
    errors = [error_of((0, 0, 0), q if s else -q) for s in signs]
    mean = average_errors(errors)
    assert abs(float(mean.q_err @ q)) == pytest.approx(1.0, abs=1e-9)


# Interpolation (eqs. 3, 5-6) ---------------------------------------------------------------


def test_clamped_interpolation_matches_hand_values():
    assert interpolate_clamped(0.0, 0.02, 0.15, 1.0, 3.0) == 1.0
    assert interpolate_clamped(0.5, 0.02, 0.15, 1.0, 3.0) == 3.0
    assert interpolate_clamped(0.085, 0.02, 0.15, 1.0, 3.0) == pytest.approx(2.0)


@given(st.floats(-1.0, 2.0), st.floats(-1.0, 2.0))
def test_clamped_interpolation_is_monotonic_and_bounded(x1, x2):
    lo, hi = sorted((x1, x2))
    y_lo = interpolate_clamped(lo, 0.1, 0.9, 2.0, 5.0)
    y_hi = interpolate_clamped(hi, 0.1, 0.9, 2.0, 5.0)
    assert 2.0 <= y_lo <= y_hi <= 5.0


# The jump check ----------------------------------------------------------------------------


def test_a_jump_is_not_buffered_and_the_buffer_needs_n_fresh_samples():
    buffer = ErrorBuffer(N=3, delta_jump=0.02, delta_jump_rot=math.radians(5))
    still = error_of((0.1, 0.0, 0.0), (0, 0, 0, 1))
    for i in range(3):
        assert buffer.push(i * 0.1, still) is False
    assert buffer.ready
    jumped = error_of((0.15, 0.0, 0.0), (0, 0, 0, 1))
    assert buffer.push(0.3, jumped) is True
    assert not buffer.ready
    assert buffer.mean().e_xyz == pytest.approx([0.1, 0.0, 0.0])  # the jump is not in
    assert buffer.last_jump_m == pytest.approx(0.05)
    for i in range(2):
        assert buffer.push(0.4 + i * 0.1, jumped) is False
        assert not buffer.ready
    assert buffer.push(0.6, jumped) is False
    assert buffer.ready
    assert buffer.mean().e_xyz == pytest.approx([0.15, 0.0, 0.0])


def test_a_rotation_jump_counts_too():
    buffer = ErrorBuffer(N=1, delta_jump=0.02, delta_jump_rot=math.radians(5))
    buffer.push(0.0, error_of((0, 0, 0), (0, 0, 0, 1)))
    assert buffer.push(0.1, error_of((0, 0, 0), turn_z(6.0)))
    assert buffer.last_jump_rad == pytest.approx(math.radians(6.0))


# Parameters --------------------------------------------------------------------------------

BAD_VALUES = {
    "dd_tol_m": [0.0, -0.01, math.nan, math.inf, "1"],
    "dtheta_tol_rad": [0.0, -1.0],
    "confirm_s": [-1.0],
    "N": [0, 2.5, True],
    "delta_jump": [0.0],
    "delta_jump_rot": [-0.1],
    "offset": [(0.0, 0.0, 0.15)],
    "target_timeout_s": [-0.5],
    "divergence_factor": [0.5],
    "divergence_min_m": [0.0],
    "divergence_min_rad": [4.0],
    "divergence_max_m": [-1.0],
    "divergence_time_s": [math.nan],
}


@pytest.mark.parametrize("cls", [AlignParams, AlignV1Params, AlignV2Params])
@pytest.mark.parametrize(
    ("name", "value"), [(n, v) for n, values in BAD_VALUES.items() for v in values]
)
def test_a_bad_common_parameter_raises_an_error_naming_it(cls, name, value):
    with pytest.raises(AlignmentParameterError, match=name) as info:
        cls(**{name: value})
    assert info.value.parameter == name
    assert isinstance(info.value, ValueError) and isinstance(info.value, LimbtreeError)


def test_default_parameters_are_valid_and_immutable():
    params = AlignParams()
    assert params.dd_tol_m == 0.010
    assert params.dtheta_tol_rad == pytest.approx(math.radians(2))
    with pytest.raises(AttributeError):
        params.dd_tol_m = 0.02  # type: ignore[misc]
    assert "offset" in AlignParams.names()


def test_an_observation_needs_a_finite_time():
    with pytest.raises(AlignmentParameterError, match="time"):
        AlignObservation(math.nan, None, None)


# Supervision -------------------------------------------------------------------------------


def test_losing_sight_holds_then_fails_after_the_timeout_with_a_message():
    supervisor = Supervisor(AlignParams(target_timeout_s=2.0))
    outcome, message = supervisor.lost(10.0, True, False)
    assert outcome is Outcome.RUNNING and "holding" in message
    outcome, message = supervisor.lost(12.1, True, False)
    assert outcome is Outcome.FAILURE
    assert "has not seen the target for 2.10 s" in message and "markers" in message
    supervisor.found()
    assert supervisor.lost(13.0, False, True)[0] is Outcome.RUNNING


def test_divergence_must_last_before_it_fails():
    supervisor = Supervisor(AlignParams(divergence_time_s=2.0))
    assert supervisor.diverging(0.0, 0.1, 0.1) is None  # the initial error
    assert supervisor.diverging(1.0, 0.25, 0.1) is None  # beyond 2x, but not for long
    assert supervisor.diverging(2.0, 0.15, 0.1) is None  # back within: the clock restarts
    assert supervisor.diverging(3.0, 0.25, 0.1) is None
    message = supervisor.diverging(5.0, 0.3, 0.1)
    assert message is not None and "diverging" in message and "frame" in message


def test_divergence_has_a_floor_for_small_initial_errors_and_an_absolute_bound():
    supervisor = Supervisor(AlignParams(divergence_time_s=0.0))
    assert supervisor.diverging(0.0, 0.002, 0.0) is None
    assert supervisor.diverging(0.1, 0.04, 0.0) is None  # 20x, but under divergence_min_m
    assert supervisor.diverging(0.2, 0.06, 0.0) is not None
    far = Supervisor(AlignParams(divergence_time_s=0.0, divergence_max_m=1.0))
    assert far.diverging(0.0, 0.9, 0.0) is None
    assert "divergence_max_m" in (far.diverging(0.1, 1.1, 0.0) or "")


def test_an_error_that_comes_no_closer_stalls_after_stall_time_s_naming_the_reach():
    supervisor = Supervisor(AlignParams(stall_time_s=10.0))
    assert supervisor.stalled(0.0, 0.510, 2.0) is None
    # Noise about a stuck limb (under 1 mm, 0.5 deg) is no progress.
    assert supervisor.stalled(5.0, 0.5095, 1.995) is None
    assert supervisor.stalled(9.9, 0.5105, 2.0) is None
    message = supervisor.stalled(10.0, 0.510, 2.0)
    assert message is not None
    assert "stalled: Δd 510.0 mm, Δθ 114.6 deg, not 1 mm or 0.5 deg closer" in message
    assert (
        "than 510.0 mm / 114.6 deg 10.0 s ago" in message
        and "reach" in message
        and "stall_timeout_s" in message
    )


def test_a_slow_steady_approach_never_stalls_however_small_its_steps():
    supervisor = Supervisor(AlignParams(stall_time_s=1.0))
    for k in range(600):  # 0.1 mm a step at 30 Hz: 1 mm every 1/3 s
        assert supervisor.stalled(k / 30.0, 0.5 - 1e-4 * k, 1.0) is None
    # Turning counts as progress too.
    turning = Supervisor(AlignParams(stall_time_s=1.0))
    for k in range(600):
        assert turning.stalled(k / 30.0, 0.5, 1.0 - math.radians(0.05) * k) is None


def test_hovering_near_the_thresholds_is_no_stall_and_infinity_never_stalls():
    near = Supervisor(AlignParams(stall_time_s=1.0))  # thresholds 10 mm, 2 deg
    for k in range(100):
        assert near.stalled(float(k), 0.015, math.radians(3.0)) is None
    # Far again: the clock starts from there.
    assert near.stalled(100.0, 0.3, 0.0) is None
    assert near.stalled(100.5, 0.3, 0.0) is None
    assert near.stalled(101.0, 0.3, 0.0) is not None
    never = Supervisor(AlignParams(stall_time_s=math.inf))
    assert all(never.stalled(float(k), 0.3, 0.0) is None for k in range(0, 10_000, 100))
    with pytest.raises(AlignmentParameterError, match="stall_time_s"):
        AlignParams(stall_time_s=0.0)


# The public API ----------------------------------------------------------------------------


def test_every_exported_name_imports():
    for name in skills.__all__:
        assert getattr(skills, name) is not None
    for name in ("AlignV1", "AlignV2", "AlignObservation", "AlignV1Params", "AlignV2Params"):
        assert name in skills.__all__


def test_the_test_limb_converges_to_its_pose_target_within_its_dead_band():
    limb = LaggyLimb(Pose(TARGET.position), seed=0)
    limb.cmd_p = limb.cmd_p + np.array([0.05, 0.0, 0.0])
    for _ in range(int(5 * MOCAP_HZ)):
        limb.advance(1.0 / MOCAP_HZ)
    assert limb.settled()
    moved = limb.true_pose().position - TARGET.position
    assert moved[0] == pytest.approx(0.05 - limb.deadband_m, abs=1e-6)


@pytest.mark.parametrize("controller", [AlignV1, AlignV2])
def test_a_controller_started_on_its_goal_succeeds_without_moving(controller):
    limb = LaggyLimb(TARGET, seed=4)
    result = run_loop(controller(), 4, limb=limb, max_time=10.0)
    assert result.outcome is Outcome.SUCCESS
    assert result.duration < 2.0
    assert result.final_dd < 0.003


# The path figures of the align leaf (summary.json metrics) --------------------------------


def test_a_straight_path_at_any_pace_has_no_deviation_and_no_wobble():
    # Stop-and-go along a line: 10 samples moving, 10 standing, twice.
    s = np.concatenate([np.linspace(0, 0.1, 10), np.full(10, 0.1), np.linspace(0.1, 0.2, 10)])
    points = [(0.3 * x, -0.4 * x, 0.0) for x in s]
    figures = path_figures(points)
    assert figures["path_length_mm"] == pytest.approx(100.0)  # |(0.3, -0.4)| x 0.2 m
    assert figures["deviation_rms_mm"] == pytest.approx(0.0, abs=1e-9)
    assert figures["wobble_rms_mm"] == pytest.approx(0.0, abs=1e-9)


def test_sideways_oscillation_is_wobble_and_a_bow_is_deviation():
    x = np.linspace(0.0, 0.3, 61)
    wobbly = [(v, 0.002 * math.sin(2 * math.pi * k / 4), 0.0) for k, v in enumerate(x)]
    bowed = [(v, 0.05 * math.sin(math.pi * v / 0.3), 0.0) for v in x]
    w, b = path_figures(wobbly), path_figures(bowed)
    assert 1.0 < w["wobble_rms_mm"] < 2.0  # 2 mm sideways at 2.5 Hz (10 Hz samples)
    assert b["wobble_rms_mm"] < 0.5  # a slow bow is not wobble...
    assert b["deviation_rms_mm"] == pytest.approx(50 / math.sqrt(2), rel=0.05)  # ...but indirect
    assert path_figures([(0.0, 0.0, 0.0)]) == {
        "path_length_mm": 0.0,
        "deviation_rms_mm": 0.0,
        "wobble_rms_mm": 0.0,
    }


# Version 1's step interpolation in the align leaf ------------------------------------------


def test_a_minimum_jerk_step_starts_and_stops_at_rest():
    tau = np.linspace(0.0, 1.0, 2001)
    s = np.array([minimum_jerk(t) for t in tau])
    v = np.gradient(s, tau)
    a = np.gradient(v, tau)
    assert s[0] == 0.0 and s[-1] == 1.0 and np.all(np.diff(s) >= 0.0)
    assert abs(v[0]) < 1e-3 and abs(v[-1]) < 1e-3  # no jolt at either end
    assert v.max() == pytest.approx(15 / 8, rel=1e-4)
    assert np.abs(a).max() == pytest.approx(10 / math.sqrt(3), rel=1e-2)


@pytest.mark.parametrize(
    ("length", "speed", "accel"),
    [
        (0.03, 0.05, 0.15),
        (0.005, 0.05, 0.15),
        (0.2, 0.05, 0.15),
        (0.01, None, 0.15),
        (0.01, 0.05, None),
    ],
)
def test_a_step_lasts_just_long_enough_for_both_caps(length, speed, accel):
    duration = step_duration(length, speed, accel)
    tau = np.linspace(0.0, 1.0, 4001)
    position = length * np.array([minimum_jerk(t) for t in tau])
    velocity = np.gradient(position, tau * duration)
    acceleration = np.gradient(velocity, tau * duration)
    peaks = []
    if speed is not None:
        assert velocity.max() <= speed * 1.001
        peaks.append(velocity.max() / speed)
    if accel is not None:
        assert np.abs(acceleration).max() <= accel * 1.01
        peaks.append(np.abs(acceleration).max() / accel)
    assert max(peaks) == pytest.approx(1.0, rel=1e-2)  # the binding cap is reached
    assert step_duration(length, None, None) == 0.0
