"""A looping synchronized move advances at most one lap per tick (issue 19 part 2).

A lap whose segments all lie inside the hypersphere lets the clamp reach each segment's end
at once; before the fix the loop went round for ever inside one step. These tests drive the
core in-process with point limbs that track their command, so every tick must return and
the lap count must grow by at most one per tick, whatever the waypoints and p_e / r_e.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from limbtree.kinematics import Pose, SE3Metric
from limbtree.robots.registry import load_robot
from limbtree.skills import (
    JointSpace,
    Outcome,
    PoseSpace,
    StepTimer,
    SyncConfig,
    SyncMove,
    SyncObservation,
    offset_pose,
)

#: The robots of seed 000's experiments (Table I): heavy and light limbs, the quadruped.
SEED_000_ROBOTS = ("heavy_limb", "light_limb", "moonbot_zero")


def _limb_count(robot: str) -> int:
    return len(load_robot(robot).limbs)


def _track(states: list[Pose], command: tuple[Pose, ...], step_m: float) -> list[Pose]:
    """Each limb moves towards its command by at most ``step_m`` [m] and takes its rotation."""
    out = []
    for state, target in zip(states, command, strict=True):
        d = target.position - state.position
        n = float(np.linalg.norm(d))
        position = target.position if n <= step_m else state.position + d / n * step_m
        out.append(Pose(position, target.quaternion))
    return out


def _run(move: SyncMove[Pose], start: list[Pose], ticks: int, step_m: float) -> list[int]:
    """Tick ``move`` ``ticks`` times at 50 Hz; the lap count after each tick."""
    timer = StepTimer()
    states = list(start)
    laps = []
    for i in range(ticks):
        t = i * 0.02
        step = move.step(SyncObservation(t, tuple(states)), timer.dt(t))
        assert step.outcome is Outcome.RUNNING  # a loop never finishes
        assert step.laps == step.telemetry.laps == move.laps
        laps.append(step.laps)
        if step.command is not None:
            states = _track(states, step.command, step_m)
    return laps


def _loop_move(
    start: list[Pose], offsets: list[list[float]], metric: SE3Metric, *, chained: bool = False
) -> SyncMove[Pose]:
    """A looping move through ``offsets`` from each limb's start, or, ``chained``, each
    waypoint offset from the previous one."""
    waypoints = [tuple(start)]
    for offset in offsets:
        origins = waypoints[-1] if chained else start
        waypoints.append(tuple(offset_pose(origin, offset) for origin in origins))
    space = PoseSpace(tuple(metric for _ in start))
    names = [f"limb{i}" for i in range(len(start))]
    return SyncMove(space, waypoints, SyncConfig(loop=True), names)


def test_a_lap_inside_the_hypersphere_advances_one_lap_per_tick() -> None:
    # issue 19: 20 mm out and back under p_e = 20 mm: the whole lap is inside the sphere.
    start = [Pose((0.3, 0.0, 0.2))]
    move = _loop_move(start, [[0.02, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 1]], SE3Metric(0.02))
    laps = _run(move, start, 10, step_m=1.0)
    assert all(b - a <= 1 for a, b in zip([0, *laps], laps, strict=False))
    assert laps[-1] >= 3  # it does go round, a lap every tick or two


def test_the_same_point_twice_advances_one_lap_per_tick() -> None:
    start = [Pose((0.3, 0.0, 0.2))]
    still = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    move = _loop_move(start, [still, still], SE3Metric(0.02))
    laps = _run(move, start, 6, step_m=0.0)
    assert all(b - a <= 1 for a, b in zip([0, *laps], laps, strict=False))


def test_a_small_rotation_and_back_under_r_e_advances_one_lap_per_tick() -> None:
    start = [Pose((0.3, 0.0, 0.2))]
    half = math.radians(4.0) / 2
    turn = [0.0, 0.0, 0.0, 0.0, 0.0, math.sin(half), math.cos(half)]
    back = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    move = _loop_move(start, [turn, back], SE3Metric(0.02, math.radians(5.0)))
    laps = _run(move, start, 6, step_m=0.0)
    assert all(b - a <= 1 for a, b in zip([0, *laps], laps, strict=False))


def test_a_single_waypoint_loop_counts_a_back_and_forth_as_a_lap() -> None:
    start = [Pose((0.3, 0.0, 0.2))]
    move = _loop_move(start, [[0.01, 0, 0, 0, 0, 0, 1]], SE3Metric(0.02))
    laps = _run(move, start, 5, step_m=1.0)
    # A step passes each segment at most once and stops before the one it would pass
    # again: out and back in one step, then back and out in the next.
    assert laps == [0, 1, 1, 2, 2]


def test_a_joint_space_loop_inside_its_hypersphere_ends_its_step() -> None:
    space = JointSpace(q_e=(0.1,))
    start = (np.zeros(3),)
    waypoints = [start, (np.full(3, 0.01),), (np.zeros(3),)]
    move = SyncMove(space, waypoints, SyncConfig(loop=True), ["arm"])
    timer = StepTimer()
    laps = []
    for i in range(4):
        step = move.step(SyncObservation(i * 0.02, start), timer.dt(i * 0.02))
        laps.append(step.laps)
    assert laps == [0, 1, 1, 2]  # the step stops before the segment it would pass twice


_translations = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)


@st.composite
def _offset(draw: st.DrawFn, p_e: float, r_e: float) -> list[float]:
    """A waypoint 0 to 3 p_e from the previous (and 0 to 3 r_e of rotation, r_e finite)."""
    direction = np.array(draw(_translations))
    norm = float(np.linalg.norm(direction))
    direction = direction / norm if norm > 1e-6 else np.array([1.0, 0.0, 0.0])
    translation = direction * draw(st.floats(0.0, 3.0)) * p_e
    quaternion = [0.0, 0.0, 0.0, 1.0]
    if math.isfinite(r_e) and draw(st.booleans()):
        axis = np.array(draw(_translations))
        axis_norm = float(np.linalg.norm(axis))
        axis = axis / axis_norm if axis_norm > 1e-6 else np.array([0.0, 0.0, 1.0])
        angle = draw(st.floats(0.0, 3.0)) * r_e
        quaternion = [*(axis * math.sin(angle / 2)), math.cos(angle / 2)]
    return [*translation.tolist(), *quaternion]


@st.composite
def looping_moves(draw: st.DrawFn) -> tuple[SyncMove[Pose], list[Pose], float]:
    """A looping move of a seed-000 robot's limbs, its start and how fast its limbs track."""
    robot = draw(st.sampled_from(SEED_000_ROBOTS))
    n = _limb_count(robot)
    p_e = draw(st.sampled_from([0.005, 0.02, 0.05]))
    r_e = draw(st.sampled_from([math.inf, math.radians(5.0), 0.5]))
    offsets = draw(st.lists(_offset(p_e, r_e), min_size=1, max_size=4))
    start = [Pose((0.3 + i, 0.0, 0.2)) for i in range(n)]
    step_m = draw(st.sampled_from([0.0, 0.001, 0.01, 1.0]))
    return _loop_move(start, offsets, SE3Metric(p_e, r_e), chained=True), start, step_m


@settings(max_examples=60, deadline=None)
@given(looping_moves())
def test_every_tick_of_a_looping_move_returns_with_at_most_one_more_lap(
    case: tuple[SyncMove[Pose], list[Pose], float],
) -> None:
    move, start, step_m = case
    laps = _run(move, start, 30, step_m)
    previous = 0
    for count in laps:
        assert previous <= count <= previous + 1
        previous = count


def test_the_looping_behaviour_reports_its_laps_one_tick_at_a_time() -> None:
    import py_trees
    from fake_limbs import FakeLink, handles

    from limbtree.trees.behaviours import SyncMoveBehaviour
    from limbtree.trees.context import MissionContext

    now = [0.0]
    link = FakeLink(speed=0.5, clock=lambda: now[0])
    context = MissionContext(handles({"arm": link}), lambda: now[0])
    params = {
        "limbs": ["arm"],
        "waypoints": [{"arm": [0.02, 0, 0, 0, 0, 0, 1]}, {"arm": [0, 0, 0, 0, 0, 0, 1]}],
        "p_e": 0.02,
        "loop": True,
    }
    move = SyncMoveBehaviour("loop", context, params)
    laps = [0]
    for k in range(30):
        now[0] = 0.02 * k
        link.step(now[0])
        context.telemetry.new_tick()
        move.tick_once()
        assert move.status is py_trees.common.Status.RUNNING
        count = context.telemetry.tick["loop"].laps
        assert laps[-1] <= count <= laps[-1] + 1
        assert move.feedback_message.endswith(f", lap {count + 1}")
        laps.append(count)
    assert laps[-1] >= 5
