"""IK is accepted only on the branch the limb is on (issue 17, item 1).

An ``ee_pose`` command is followed along the straight end-effector path from the joint
setpoint's pose to the target, in substeps whose IK solutions must each stay within the
branch bound of the previous joints; anything else is ``ik_failed``, naming the joint at its
limit. These tests drive simulated limbs in process: a synchronized move (the core of the
``sync_move`` leaf) sends its clamped command every tick, as the runner does.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from limbtree.kinematics import Pose, SE3Metric
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.robots.tracking import CommandTracker
from limbtree.skills import PoseSpace, SyncConfig, SyncMove, SyncObservation
from limbtree.transport.driver import CommandMode, DriverError, Health
from limbtree.trees.recorder import node_ids_named, read_header, read_log

SHIPPED = [builtin_robot_dir()]
RATE_HZ = 50.0
DT = 1.0 / RATE_HZ
#: The limbs of the property: the three seed-000 robots and the MoonBot limbs of seed 002.
LIMBS = [
    ("heavy_limb", "arm"),
    ("light_limb", "arm"),
    ("moonbot_zero", "leg_0"),
    ("moonbot_zero", "leg_2"),
    ("moonbot_limb_v1", "arm"),
    ("moonbot_limb_v2", "arm"),
]
#: How far the ideal simulated limb may be from its path besides p_e [m]: IK's tolerance
#: (about 0.14 mm) and the chord of a substep's straight joint line.
TRACKING_M = 1e-3


def rotated_about_world(pose: Pose, rotvec: np.ndarray) -> Pose:
    turned = Rotation.from_rotvec(rotvec) * Rotation.from_quat(pose.quaternion)
    return Pose(pose.position, turned.as_quat())


def ee(limb: SimulatedLimb) -> Pose:
    (values,) = limb.state().ee_poses.values()
    return Pose.from_array(values)


def at(limb: SimulatedLimb, q: np.ndarray) -> SimulatedLimb:
    """``limb`` moved to joints ``q`` and settled there."""
    limb.command(CommandMode.JOINT_POSITION, {"q": q.tolist()})
    t = limb.time
    while not np.allclose(limb.state().q, q, atol=1e-9):
        t += 0.5  # long steps: the servos only move at their speed limits
        limb.advance(t)
    return limb


def path_distance(pose: Pose, start: Pose, end: Pose, metric: SE3Metric) -> float:
    """How far ``pose`` is from the straight path, 1 = ``p_e`` on position and ``r_e`` on
    rotation from one point of the path (LERP and short-arc SLERP, as the clamp's)."""
    ts = np.linspace(0.0, 1.0, 401)
    positions = start.position + ts[:, None] * (end.position - start.position)
    gaps = np.linalg.norm(positions - pose.position, axis=1) / metric.p_e
    if math.isfinite(metric.r_e):
        q0, q1 = start.quaternion, end.quaternion
        if q0 @ q1 < 0.0:
            q1 = -q1
        angle = 2.0 * math.acos(min(1.0, abs(float(q0 @ q1))))
        if angle > 1e-9:
            w0 = np.sin((1.0 - ts) * angle / 2) / math.sin(angle / 2)
            w1 = np.sin(ts * angle / 2) / math.sin(angle / 2)
            quats = w0[:, None] * q0 + w1[:, None] * q1
        else:
            quats = np.tile(q0, (len(ts), 1))
        quats /= np.linalg.norm(quats, axis=1)[:, None]
        dots = np.clip(np.abs(quats @ pose.quaternion), 0.0, 1.0)
        gaps = np.maximum(gaps, 2.0 * np.arccos(dots) / metric.r_e)
    return float(np.min(gaps))


def sync_move(
    limb: SimulatedLimb, goal: Pose, metric: SE3Metric, seconds: float
) -> tuple[list[Pose], list[str]]:
    """Drive ``limb`` from where it is to ``goal`` with the synchronizer, one limb.

    Returns:
        The end-effector pose at every tick, and the ``ik_failed`` messages the agent gave.
    """
    start = ee(limb)
    move = SyncMove(PoseSpace((metric,)), [(start,), (goal,)], SyncConfig(), ("limb",))
    poses = [start]
    failures: list[str] = []
    t = limb.time
    for _ in range(round(seconds * RATE_HZ)):
        result = move.step(SyncObservation(t, (poses[-1],)), DT)
        if result.command is not None:
            try:
                limb.command(CommandMode.EE_POSE, {"pose": result.command[0].as_array().tolist()})
            except DriverError as exc:
                assert exc.code == "ik_failed"
                failures.append(str(exc))
        t += DT
        limb.advance(t)
        poses.append(ee(limb))
        if result.outcome.name != "RUNNING":
            break
    return poses, failures


# ---------------------------------------------------------------------- the issue's case


def test_a_turn_whose_short_arc_passes_a_joint_limit_stops_there_and_names_the_joint():
    # Issue 17 item 1: light_limb turned 150 deg about z, then towards -60 deg: the short arc
    # runs through 180 deg and needs joint_7 past its -175 deg limit.
    limb = SimulatedLimb(load_robot("light_limb", SHIPPED), seed=0, config=SimConfig())
    start = ee(limb)
    metric = SE3Metric(0.01, math.radians(10.0))
    turned = rotated_about_world(start, np.array([0.0, 0.0, math.radians(150.0)]))
    poses, failures = sync_move(limb, turned, metric, 3.0)
    assert poses[-1].angle_to(turned) < math.radians(1.0)
    assert not failures
    back = rotated_about_world(start, np.array([0.0, 0.0, math.radians(-60.0)]))
    poses, failures = sync_move(limb, back, metric, 3.0)
    moved = np.array([p.position for p in poses])
    # No translation in this move: the end-effector stays where it started.
    assert np.max(np.linalg.norm(moved - start.position, axis=1)) < TRACKING_M
    assert failures and all("joint_7" in f and "lower limit" in f for f in failures)
    # The pose in words a person reads (millimetres), not a Python repr.
    assert (
        "for the end-effector pose at (" in failures[0]
        and ") mm, quaternion (x, y, z, w) (" in failures[0]
    )
    assert "Pose(" not in failures[0]
    state = limb.state()
    assert state.health & Health.IK_FAILED
    assert "joint_7" in state.detail["ik_failure"]
    assert math.degrees(state.q[6]) > -175.0 - 1e-6


def test_an_ik_solution_on_another_branch_is_refused_even_when_it_reaches_the_target():
    spec = load_robot("light_limb", SHIPPED)
    tracker = CommandTracker(spec)
    chain = tracker.chain
    q0 = np.array(spec.limb().postures["home"])
    target = chain.fk(q0)
    # The same pose from other joints: another branch of the 7-joint limb's IK.
    rng = np.random.default_rng(3)
    other = None
    for _ in range(50):
        found = chain.ik(target, rng.uniform(chain.lower, chain.upper) * 0.9, slimit=1)
        if found.success and np.max(np.abs(found.q - q0)) > math.radians(60.0):
            other = found
            break
    assert other is not None
    plan = tracker.plan_path(target, q0, lambda pose, seed: other)
    assert not plan.success
    assert "another branch" in plan.reason
    assert plan.joint in chain.joint_names
    assert tracker.plan_path(target, q0).success  # the solver from q0 stays on the branch


def test_a_leg_lying_straight_near_its_singularity_can_still_move_back_along_its_path():
    # After a power loss the quadruped's legs lie slumped, knees almost straight: a 5 mm step
    # of the foot needs a large knee step, which is still on the branch (the foot keeps to
    # its path). A bound on the joint step alone refused it and the legs never recovered.
    spec = load_robot("moonbot_zero", SHIPPED)
    leg = spec.limb("leg_0")
    limb = at(SimulatedLimb(spec, "leg_0", seed=0, config=SimConfig()), leg.posture("slumped"))
    start = ee(limb)
    home = spec.chain("leg_0").fk(leg.posture("home"))
    towards = home.position - start.position
    goal = Pose(start.position + 0.02 * towards / np.linalg.norm(towards), start.quaternion)
    limb.command(CommandMode.EE_POSE, {"pose": goal.as_array().tolist()})
    for _ in range(2):  # the setpoint moves, then the servos follow
        limb.advance(limb.time + 1.0)
    assert ee(limb).distance_to(goal) < 1e-3
    assert not limb.state().health & Health.IK_FAILED


def test_a_large_turn_is_followed_along_its_path_not_along_a_joint_space_line():
    # r_e = inf lets sync_move command a whole 90 deg turn at once: the limb must still turn
    # about its tip, never swinging the tip round a straight line in joint space.
    limb = SimulatedLimb(load_robot("heavy_limb", SHIPPED), seed=0, config=SimConfig())
    start = ee(limb)
    goal = rotated_about_world(start, np.array([0.0, 0.0, math.radians(90.0)]))
    limb.command(CommandMode.EE_POSE, {"pose": goal.as_array().tolist()})
    t = limb.time
    worst = 0.0
    for _ in range(round(30.0 / DT)):
        t += DT
        limb.advance(t)
        worst = max(worst, float(np.linalg.norm(ee(limb).position - start.position)))
    assert ee(limb).angle_to(goal) < 1e-3
    assert worst < TRACKING_M


# ---------------------------------------------------------------------- the property


@st.composite
def moves_near_limits(draw: st.DrawFn, robot: str, limb_name: str) -> tuple:
    """Joints with one or two of them near a limit, and a move that pushes on it."""
    spec = load_robot(robot, SHIPPED)
    chain = spec.chain(limb_name)
    lower, upper = chain.lower, chain.upper
    fractions = draw(st.lists(st.floats(0.15, 0.85), min_size=chain.n, max_size=chain.n))
    q = lower + np.array(fractions) * (upper - lower)
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, chain.n - 1))
        margin = math.radians(draw(st.floats(0.5, 10.0)))
        q[i] = upper[i] - margin if draw(st.booleans()) else lower[i] + margin
    translation = np.array(draw(st.lists(st.floats(-0.08, 0.08), min_size=3, max_size=3)))
    axis = np.array(draw(st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)))
    angle = math.radians(draw(st.floats(0.0, 150.0)))
    rotvec = axis / np.linalg.norm(axis) * angle if np.linalg.norm(axis) > 1e-3 else np.zeros(3)
    return q, translation, rotvec


@pytest.mark.parametrize(("robot", "limb_name"), LIMBS)
def test_the_end_effector_never_leaves_the_clamped_path_near_joint_limits(robot, limb_name):
    spec = load_robot(robot, SHIPPED)
    position_only = spec.limb(limb_name).ik_mask is not None
    metric = SE3Metric(0.02, math.inf if position_only else math.radians(10.0))
    # The slow heavy limb needs more time for the same move.
    seconds = 4.0 if spec.limb(limb_name).joints[0].max_speed < 1.0 else 1.5

    # Each example simulates seconds of a move: no shrinking (it would rerun hundreds).
    @settings(
        max_examples=6,
        deadline=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(moves_near_limits(robot, limb_name))
    def check(case: tuple) -> None:
        q, translation, rotvec = case
        limb = at(SimulatedLimb(spec, limb_name, seed=0, config=SimConfig()), q)
        start = ee(limb)
        goal = Pose(start.position + translation, start.quaternion)
        if not position_only:
            goal = rotated_about_world(goal, rotvec)
        poses, _ = sync_move(limb, goal, metric, seconds)
        for pose in poses:
            assert path_distance(pose, start, goal, metric) <= 1.0 + TRACKING_M / metric.p_e

    check()


# ---------------------------------------------------------------------- the issue's mission

MISSION = Path(__file__).resolve().parent / "missions" / "rotation_past_joint_limit.yaml"


def test_the_issue_mission_stops_at_the_joint_limit_without_leaving_its_path(tmp_path):
    # Through the runner, real agent processes, the sim clock: as a user runs it.
    record = tmp_path / "record"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(MISSION), "--clock", "sim",
         "--speed", "max", "--headless", "--record", str(record)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    summary = json.loads((record / "summary.json").read_text())
    # The honest outcome: the move waits at the limit until its IK has failed for
    # ik_timeout (10 s), which ends it.
    assert done.returncode != 0
    assert summary["outcome"] == "FAILURE"
    assert "waypoint 2/2 cannot be reached: IK failed for 10 s on end" in summary["failure"]
    assert summary["recoveries"] == 0
    assert summary["max_command_state_distance"] <= 1.0 + 1e-9
    header = read_header(record / "log.msgpack")
    assert header is not None
    (turn,) = node_ids_named(header, "turn")
    ticks = list(read_log(record / "log.msgpack"))
    poses = [Pose.from_array(t["limbs"]["arm"]["state"]) for t in ticks]
    start = poses[0].position
    p_e, r_e = 0.010, math.radians(10.0)
    for before, pose in pairwise(poses):
        # No translation in this move: within p_e (plus tracking) of the start, every tick,
        assert np.linalg.norm(pose.position - start) <= p_e + TRACKING_M
        # and no jump: the tip stays put, and turns less than r_e per tick.
        assert np.linalg.norm(pose.position - before.position) <= TRACKING_M
        assert pose.angle_to(before) <= r_e
    joint_7 = [t["limbs"]["arm"]["q"][6] for t in ticks]
    assert min(joint_7) >= math.radians(-175.0) - 1e-6
    last = ticks[-1]
    assert last["limbs"]["arm"]["health"] & Health.IK_FAILED
    message = last["messages"][turn]
    assert "IK failed" in message and "joint_7" in message and "lower limit" in message


def _tolerance_needed(
    tracker: CommandTracker, start: Pose, end: Pose, t0: float, t1: float, q0, q1
) -> float:
    """The path check written out with numpy and scipy, point by point, as the factor by which
    its tolerances would have to grow for the joint line to pass (it passes at 1 or less):
    the tip at each check point within PATH_TOL_M of the path's segment from t0 to t1, and
    (when rotation matters) within PATH_TOL_RAD plus half the segment's turn of its middle
    rotation (SLERP on the short arc)."""
    from limbtree.robots import tracking

    largest = float(np.max(np.abs(q1 - q0)))
    checks = min(tracking._MAX_CHECKS, max(1, math.ceil(largest / tracking._CHECK_STEP)))
    a = start.position + t0 * (end.position - start.position)
    b = start.position + t1 * (end.position - start.position)
    ab = b - a
    r0, r1 = Rotation.from_quat(start.quaternion), Rotation.from_quat(end.quaternion)
    turn = (r0.inv() * r1).magnitude()
    relative = (r0.inv() * r1).as_rotvec()
    middle = r0 * Rotation.from_rotvec(relative * (t0 + t1) / 2.0)
    tips = [tracker.chain.fk(q0 + i / (checks + 1) * (q1 - q0)) for i in range(1, checks + 1)]
    points = np.array([tip.position for tip in tips]) - a
    u = np.zeros(checks) if ab @ ab == 0.0 else np.clip(points @ ab / (ab @ ab), 0.0, 1.0)
    needed = np.max(np.linalg.norm(points - u[:, None] * ab, axis=1)) / tracking.PATH_TOL_M
    if tracker._rotation_matters:
        angles = (middle.inv() * Rotation.from_quat([tip.quaternion for tip in tips])).magnitude()
        needed = max(needed, np.max(angles - 0.5 * (t1 - t0) * turn) / tracking.PATH_TOL_RAD)
    return float(needed)


@pytest.mark.parametrize(("robot", "limb_name"), [("heavy_limb", None), ("moonbot_zero", "leg_0")])
def test_the_path_check_agrees_with_a_point_by_point_reference(robot, limb_name):
    # The check runs on every ee_pose command (issue 17's branch jumps), on Python floats for
    # speed: it must say what the plain geometry says, for joint lines that keep to the path,
    # leave it sideways, or turn the tip away from it.
    from limbtree.robots.tracking import _StraightPath

    tracker = CommandTracker(load_robot(robot, SHIPPED), limb_name)
    chain = tracker.chain
    rng = np.random.default_rng(11)
    lower, upper = np.maximum(chain.lower, -3.0), np.minimum(chain.upper, 3.0)
    verdicts = []
    for _ in range(400):
        q0 = lower + (upper - lower) * rng.uniform(0.2, 0.8, chain.n)
        q1 = q0 + rng.normal(0.0, 10 ** rng.uniform(-3.0, -0.7), chain.n)
        start, reached = chain.fk(q0), chain.fk(q1)
        # The target: where q1 reaches, moved a little sideways or turned a little.
        offset = rng.normal(0.0, 10 ** rng.uniform(-4.0, -2.0), 3)
        turned = Rotation.from_rotvec(rng.normal(0.0, 10 ** rng.uniform(-3.0, -0.8), 3))
        rotation = turned * Rotation.from_quat(reached.quaternion)
        end = Pose(reached.position + offset, rotation.as_quat())
        t0, t1 = (0.0, 1.0) if rng.uniform() < 0.5 else tuple(sorted(rng.uniform(0.0, 1.0, 2)))
        got = tracker._keeps_to(_StraightPath(start, end), t0, t1, q0, q1)
        needed = _tolerance_needed(tracker, start, end, t0, t1, q0, q1)
        if abs(needed - 1.0) <= 1e-3:  # at the tolerances' edge rounding decides: skip it
            continue
        assert got == (needed <= 1.0)
        verdicts.append(got)
    assert len(verdicts) > 50 and 0.1 < np.mean(verdicts) < 0.9  # both answers were tested
