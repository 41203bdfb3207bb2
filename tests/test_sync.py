"""The synchronizer core (seed 000 Sec. II-B to II-D) against simulated point limbs."""

import itertools
import math
import weakref

import numpy as np
import pytest

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import (
    JointSpace,
    Mode,
    Outcome,
    PoseSpace,
    Recovery,
    StepTimer,
    SyncConfig,
    SyncMove,
    SyncObservation,
)

_TIMERS: weakref.WeakKeyDictionary[object, StepTimer] = weakref.WeakKeyDictionary()


def tick(move, time, states):
    """Step ``move`` at ``time`` [s], dt from its previous tick here (0 at the first)."""
    timer = _TIMERS.setdefault(move, StepTimer())
    return move.step(SyncObservation(time, tuple(states)), timer.dt(time))


SQUARE = [(0, 0, 0), (0.1, 0.1, 0), (0, 0.2, 0), (-0.1, 0.1, 0), (0, 0, 0)]


def square_move(speeds, config=None, p_e=0.02):
    config = config or SyncConfig()
    origins = [np.array([i * 1.0, 0, 0]) for i in range(len(speeds))]
    waypoints = [tuple(Pose(o + c) for o in origins) for c in SQUARE]
    space = PoseSpace(tuple(SE3Metric(p_e) for _ in speeds))
    names = [f"limb{i}" for i in range(len(speeds))]
    return SyncMove(space, waypoints, config, names), list(waypoints[0])


def track(state, command, speeds):
    """Each limb moves towards its command at its own speed [m per tick]."""
    out = []
    for s, c, v in zip(state, command, speeds, strict=True):
        d = c.position - s.position
        n = np.linalg.norm(d)
        out.append(Pose(s.position + (d if n <= v else d / n * v), c.quaternion))
    return out


def run(move, state, speeds, ticks=2000, disturb=None):
    steps = []
    for i in range(ticks):
        if disturb:
            state = disturb(i, state)
        step = tick(move, i * 0.01, state)
        steps.append(step)
        if step.outcome is not Outcome.RUNNING:
            break
        if step.command is not None:
            state = track(state, step.command, speeds)
    return steps, state


def test_every_command_stays_within_the_hypersphere_of_the_state():
    speeds = [0.001, 0.01, 0.004]
    move, state = square_move(speeds)
    steps, _ = run(move, state, speeds)
    assert steps[-1].outcome is Outcome.SUCCESS
    assert all(s.distance <= 1.0 for s in steps if s.distance is not None)


def test_fast_limbs_wait_for_the_slowest():
    speeds = [0.001, 0.02]
    move, state = square_move(speeds)
    for i in range(300):
        step = tick(move, i * 0.01, state)
        state = track(state, step.command, speeds)
        # Both limbs' progress along the square differ by at most two radii.
        offsets = [s.position - np.array([k * 1.0, 0, 0]) for k, s in enumerate(state)]
        assert np.linalg.norm(offsets[0] - offsets[1]) <= 2 * 0.02 + 1e-9


def test_move_succeeds_only_once_every_limb_has_settled_at_the_last_waypoint():
    speeds = [0.005, 0.005]
    move, state = square_move(speeds)
    steps, state = run(move, state, speeds)
    assert steps[-1].outcome is Outcome.SUCCESS and steps[-1].mode is Mode.DONE
    for k, s in enumerate(state):
        assert np.linalg.norm(s.position - [k * 1.0, 0, 0]) <= 0.002


def push(at, limb, offset):
    def disturb(i, state):
        if i == at:
            state = list(state)
            state[limb] = Pose(state[limb].position + offset)
        return state

    return disturb


@pytest.mark.parametrize("strategy", [Recovery.LAST_VALID, Recovery.NEAREST, Recovery.RESTART])
def test_a_limb_knocked_off_the_path_recovers_and_the_move_completes(strategy):
    speeds = [0.004, 0.004]
    move, state = square_move(speeds, SyncConfig(recovery=strategy))
    steps, _ = run(move, state, speeds, disturb=push(60, 1, [0, 0, 0.15]))
    modes = [s.mode for s in steps]
    assert Mode.RECOVERING in modes
    assert any(s.recovered for s in steps) or strategy is Recovery.RESTART
    assert steps[-1].outcome is Outcome.SUCCESS
    assert all(s.distance <= 1.0 for s in steps if s.distance is not None)


def test_recovery_to_last_valid_holds_the_undisturbed_limbs():
    speeds = [0.004, 0.004]
    move, state = square_move(speeds)
    steps, _ = run(move, state, speeds, ticks=200, disturb=push(60, 1, [0, 0, 0.15]))
    first = next(i for i, s in enumerate(steps) if s.mode is Mode.RECOVERING)
    last_valid = steps[first - 1].command[0].position
    # The undisturbed limb closes in on its own last valid command and goes no further.
    for step in steps[first:]:
        if step.mode is not Mode.RECOVERING:
            break
        assert np.linalg.norm(step.command[0].position - last_valid) <= 0.02 + 1e-9


def test_strategy_none_waits_without_commanding():
    speeds = [0.004, 0.004]
    move, state = square_move(speeds, SyncConfig(recovery=Recovery.NONE))
    steps, _ = run(move, state, speeds, ticks=100, disturb=push(50, 1, [0, 0, 0.15]))
    waiting = [s for s in steps if s.mode is Mode.WAITING]
    assert waiting and all(s.command is None for s in waiting)
    assert "waiting" in waiting[0].message and "limb1" in waiting[0].message


def test_monotonic_t_never_goes_back_when_a_limb_is_pushed_backwards():
    speeds = [0.004, 0.004]
    move, state = square_move(speeds, SyncConfig(monotonic=True))
    steps, _ = run(move, state, speeds, ticks=120, disturb=push(40, 0, [-0.015, -0.015, 0]))
    progress = [s.segment + s.t for s in steps]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(progress))


def test_stale_limb_holds_then_fails_with_a_message_naming_it():
    speeds = [0.004, 0.004]
    move, state = square_move(speeds, SyncConfig(stale_timeout=0.5))
    tick(move, 0.0, state)
    held = tick(move, 0.1, [state[0], None])
    assert held.outcome is Outcome.RUNNING and held.command is None and held.mode is Mode.STALE
    failed = tick(move, 0.7, [state[0], None])
    assert failed.outcome is Outcome.FAILURE
    assert "limb1" in failed.message and "stale_timeout_s" in failed.message


def test_stale_limb_that_returns_in_time_lets_the_move_go_on():
    speeds = [0.004, 0.004]
    move, state = square_move(speeds, SyncConfig(stale_timeout=0.5))
    tick(move, 0.0, state)
    tick(move, 0.3, [state[0], None])
    assert tick(move, 0.4, state).outcome is Outcome.RUNNING


def test_max_speed_paces_the_command():
    speeds = [0.05, 0.05]
    move, state = square_move(speeds, SyncConfig(max_speed=1.0), p_e=0.02)  # 1 radius/s
    step = None
    for i in range(11):
        step = tick(move, i * 0.1, state)
        state = track(state, step.command, speeds)
    # 1 radius/s over 1 s on a segment of 0.1414 m = 7.07 radii: t ~ 1/7.07.
    assert step.t == pytest.approx(1 / (0.1 * math.sqrt(2) / 0.02), rel=1e-6)


def test_loop_goes_round_again_instead_of_finishing():
    speeds = [0.01, 0.01]
    move, state = square_move(speeds, SyncConfig(loop=True))
    segments = []
    for i in range(400):
        step = tick(move, i * 0.01, state)
        assert step.outcome is Outcome.RUNNING
        segments.append(step.segment)
        state = track(state, step.command, speeds)
    # Reached the closing segment (last waypoint back to the first), then went round again
    # from the first waypoint without revisiting the start.
    last = segments.index(move.segments - 1)
    assert 1 in segments[last:] and 0 not in segments[last:]


def test_joint_space_move_clamps_each_joint():
    space = JointSpace(q_e=(0.1, 0.1))
    start = (np.zeros(3), np.zeros(2))
    goal = (np.ones(3), np.ones(2))
    move = SyncMove(space, [start, goal], SyncConfig(), ["arm", "leg"])
    step = tick(move, 0.0, start)
    # Each joint may lead by at most 0.1 rad: t = 0.1 / sqrt(3) for the 3-joint limb.
    assert step.t == pytest.approx(0.1 / math.sqrt(3))
    assert step.distance == pytest.approx(1.0)


def test_a_move_needs_a_start_and_a_waypoint():
    with pytest.raises(ValueError, match="at least one waypoint"):
        SyncMove(PoseSpace((SE3Metric(),)), [(Pose(),)], SyncConfig(), ["a"])


# ---------------------------------------------------------------------- stalls


def test_a_limb_blocked_for_good_fails_the_move_after_stall_timeout_naming_where_it_heads():
    # A move on a limb that cannot move (a blockage with no end) held for ever.
    speeds = [0.004, 0.0]  # limb1 does not move at all
    move, state = square_move(speeds, SyncConfig(stall_timeout=2.0))
    steps, _ = run(move, state, speeds, ticks=1000)
    last = steps[-1]
    assert last.outcome is Outcome.FAILURE and last.mode is Mode.STALLED
    assert last.command is None
    assert last.message == "stalled: for 2.0 s the limbs came no closer to waypoint 1/4"
    # The clock ran from the last progress (limb0 moving up to the hypersphere's edge).
    assert 2.0 <= len(steps) * 0.01 < 2.5


def test_a_slow_move_that_keeps_coming_closer_never_stalls():
    speeds = [0.0001, 0.0001]  # 10 mm/s at 100 Hz: 0.5 settle tolerance (1 mm) each 0.1 s
    move, state = square_move(speeds, SyncConfig(stall_timeout=0.5))
    steps, _ = run(move, state, speeds, ticks=3000)
    assert all(s.mode is not Mode.STALLED for s in steps)
    assert steps[-1].outcome is Outcome.RUNNING  # (still going: slow, not stalled)


def test_a_move_that_cannot_settle_stalls_at_the_last_waypoint():
    # limb1 stops 5 mm short of every goal: t reaches 1, the limbs never settle within 2 mm.
    def short(state, command, speeds):
        out = track(state, command, speeds)
        goal = command[1].position
        gap = out[1].position - goal
        n = np.linalg.norm(gap)
        if n < 0.005:
            out[1] = Pose(goal + (gap / n * 0.005 if n > 0 else np.array([0.005, 0, 0])))
        return out

    speeds = [0.01, 0.01]
    move, state = square_move(speeds, SyncConfig(stall_timeout=1.0))
    for i in range(5000):
        step = tick(move, i * 0.01, state)
        if step.outcome is not Outcome.RUNNING:
            break
        state = short(state, step.command, speeds)
    assert step.mode is Mode.STALLED
    assert step.message.endswith("came no closer to waypoint 4/4")


def test_steps_without_every_limbs_state_restart_the_stall_clock():
    speeds = [0.0, 0.0]
    move, state = square_move(speeds, SyncConfig(stall_timeout=1.0, stale_timeout=10.0))
    tick(move, 0.0, state)
    assert tick(move, 0.9, state).outcome is Outcome.RUNNING
    tick(move, 0.95, [state[0], None])  # limb1 powered off: MissingStates times that
    assert tick(move, 1.5, state).outcome is Outcome.RUNNING  # the clock restarted at 1.5
    assert tick(move, 2.4, state).outcome is Outcome.RUNNING
    assert tick(move, 2.5, state).mode is Mode.STALLED


def test_without_a_stall_timeout_a_blocked_move_holds():
    speeds = [0.0, 0.0]
    move, state = square_move(speeds)  # SyncConfig's default: inf
    assert tick(move, 0.0, state).outcome is Outcome.RUNNING
    assert tick(move, 1e6, state).outcome is Outcome.RUNNING


def test_a_joint_move_on_a_blocked_joint_stalls():
    space = JointSpace(q_e=(0.1,), settle=math.radians(1.0))
    start = (np.zeros(2),)
    move = SyncMove(space, [start, (np.ones(2),)], SyncConfig(stall_timeout=1.0), ["arm"])
    assert tick(move, 0.0, start).outcome is Outcome.RUNNING
    assert tick(move, 0.99, start).outcome is Outcome.RUNNING
    assert tick(move, 1.0, start).mode is Mode.STALLED


@pytest.mark.parametrize("config", [{"stall_timeout": 0.0}, {"stall_progress": 0.0}])
def test_a_stall_setting_that_is_not_positive_is_refused(config):
    with pytest.raises(ValueError, match="must be > 0"):
        SyncConfig(**config)
