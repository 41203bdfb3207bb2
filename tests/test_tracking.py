"""Tests of limbtree.robots.tracking: speed-limited steps, twists and quaternion helpers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.tracking import (
    CommandTracker,
    integrate_twist,
    quaternion_from_rotvec,
    rotated,
    speed_limited_step,
)
from limbtree.transport.driver import CommandMode, Health

vectors = st.lists(st.floats(-3.0, 3.0), min_size=4, max_size=4).map(np.array)
steps = st.lists(st.floats(0.0, 0.5), min_size=4, max_size=4).map(np.array)


@settings(max_examples=200, deadline=None)
@given(vectors, vectors, steps)
def test_a_speed_limited_step_never_moves_a_joint_more_than_its_max_step(q, target, max_step):
    stepped, limited = speed_limited_step(q, target, max_step)
    assert np.all(np.abs(stepped - q) <= max_step * (1 + 1e-12) + 1e-15)
    assert np.all(stepped[max_step == 0.0] == q[max_step == 0.0])
    if not limited:
        assert np.allclose(stepped, target)


@settings(max_examples=200, deadline=None)
@given(vectors, vectors, st.floats(1e-3, 0.5))
def test_a_speed_limited_step_keeps_the_direction_towards_the_target(q, target, speed):
    stepped, _ = speed_limited_step(q, target, np.full(4, speed))
    moved, wanted = stepped - q, target - q
    assert np.allclose(np.cross(moved[:3], wanted[:3]), 0.0, atol=1e-9)
    assert moved @ wanted >= 0.0


def test_a_speed_limited_step_reaches_a_near_target_exactly():
    q = np.zeros(3)
    stepped, limited = speed_limited_step(q, np.array([0.1, -0.2, 0.0]), np.full(3, 0.2))
    assert stepped.tolist() == [0.1, -0.2, 0.0]
    assert not limited


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-4.0, 4.0), min_size=3, max_size=3).map(np.array))
def test_quaternion_from_rotvec_matches_scipy(rotvec):
    ours = quaternion_from_rotvec(rotvec)
    theirs = Rotation.from_rotvec(rotvec).as_quat()
    assert np.allclose(ours, theirs, atol=1e-12) or np.allclose(ours, -theirs, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(vectors, st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3).map(np.array))
def test_rotated_turns_a_pose_in_the_base_frame_like_scipy(q, rotvec):
    if np.linalg.norm(q) < 1e-3:
        return
    pose = Pose((0.1, 0.2, 0.3), q / np.linalg.norm(q))
    ours = Rotation.from_quat(rotated(pose, rotvec)).as_matrix()
    theirs = (Rotation.from_rotvec(rotvec) * Rotation.from_quat(pose.quaternion)).as_matrix()
    assert np.allclose(ours, theirs, atol=1e-12)


def test_integrating_a_twist_moves_and_turns_the_pose_in_the_base_frame():
    pose = Pose((1.0, 0.0, 0.0))
    moved = integrate_twist(pose, np.array([0.1, 0.0, 0.0, 0.0, 0.0, np.pi]), 0.5)
    assert np.allclose(moved.position, [1.05, 0.0, 0.0])
    assert moved.angle_to(pose) == pytest.approx(np.pi / 2)


def test_the_tracker_describes_the_limb_and_counts_ik_seeds_per_command():
    spec = load_robot("heavy_limb", [builtin_robot_dir()])
    tracker = CommandTracker(spec, ik_seed=2)
    assert tracker.describe("sim").joints[0].max_speed == 0.15
    assert tracker.mode is CommandMode.HOLD
    assert tracker.reference is None
    home = np.array(spec.limb().postures["home"])
    tracker.hold(home)
    assert np.array_equal(tracker.reference, home)
    with pytest.raises(ValueError, match="ik_searches"):
        CommandTracker(spec, ik_searches=0)


def test_a_joint_that_cannot_move_limits_the_step_but_does_not_hold_back_the_others():
    q = np.zeros(3)
    stepped, limited = speed_limited_step(q, np.array([0.1, 0.1, -0.1]), np.array([0.2, 0.0, 0.2]))
    assert stepped.tolist() == [0.1, 0.0, -0.1]
    assert limited


def test_ik_gives_what_one_chain_call_with_every_search_and_the_commands_seed_gives():
    spec = load_robot("heavy_limb", [builtin_robot_dir()])
    tracker = CommandTracker(spec, ik_searches=3, ik_seed=2)
    chain = tracker.chain
    home = np.array(spec.limb().postures["home"])
    rng = np.random.default_rng(0)
    targets = [chain.fk(rng.uniform(chain.lower, chain.upper)) for _ in range(8)]
    targets.append(Pose((10.0, 0.0, 0.0)))  # out of reach: every search fails
    outcomes = set()
    for k, target in enumerate(targets, start=1):
        ours = tracker.solve_ik(target, home)
        seed = int(np.random.SeedSequence([2, k]).generate_state(1)[0])
        theirs = chain.ik(target, home, slimit=3, seed=seed)
        assert ours.q.tobytes() == theirs.q.tobytes()
        assert (ours.success, ours.residual, ours.iterations, ours.searches) == (
            theirs.success,
            theirs.residual,
            theirs.iterations,
            theirs.searches,
        )
        outcomes.add((ours.success, ours.searches > 1))
    # Hits of the first search, hits after restarts, and a miss.
    assert outcomes == {(True, False), (True, True), (False, True)}


def test_ee_poses_are_fk_of_the_joints_asked_about_each_time():
    spec = load_robot("light_limb", [builtin_robot_dir()])
    tracker = CommandTracker(spec)
    chain = tracker.chain
    home = np.array(spec.limb().postures["home"])
    zeros = np.zeros(spec.limb().n)
    for q in (home, home, home + 0.1, home, zeros, -zeros):
        (pose,) = tracker.ee_poses(q).values()
        assert np.array(pose).tobytes() == chain.fk(q).as_array().tobytes()  # -0.0 included


def test_a_hold_past_a_joint_limit_comes_back_onto_it_at_the_speed_limit():
    # A hold wrote back the measured joints as the target, past a limit as they were.
    spec = load_robot("heavy_limb", [builtin_robot_dir()])
    tracker = CommandTracker(spec)
    upper = tracker.chain.upper
    q = np.array(spec.limb().postures["home"])
    q[1] = upper[1] + 0.05  # 50 mrad past joint 1's upper limit
    tracker.hold(q)
    assert tracker.health() & Health.JOINT_LIMIT
    first = tracker.step(q, 0.1)  # 0.15 rad/s: 15 mrad a step, from where the joint is
    assert first[1] == pytest.approx(upper[1] + 0.035)
    assert np.array_equal(np.delete(first, 1), np.delete(q, 1))  # the others stay
    for _ in range(3):
        last = tracker.step(q, 0.1)
    assert last[1] == pytest.approx(upper[1])  # onto the limit, not past it
    assert tracker.mode is CommandMode.HOLD
    tracker.hold(np.array(spec.limb().postures["home"]))  # within the limits: held as is
    assert not tracker.health() & Health.JOINT_LIMIT
    assert np.array_equal(tracker.step(q, 0.1), spec.limb().postures["home"])
