"""Tests of limbtree.robots.mocap: frame rate, sample and hold, noise, true poses."""

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.mocap import MotionCapture, MotionCaptureError
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.transport.driver import CommandMode

WHEEL = (0.871, -0.459, 0.221, 0.0, 0.0, 0.0, 1.0)  # seed 002 Fig. 4 grasp point [m]
V1 = load_robot("moonbot_limb_v1", [builtin_robot_dir()])


def test_the_defaults_are_seed_002s_optitrack_180_hz_with_sub_millimetre_noise():
    capture = MotionCapture()
    assert capture.rate_hz == 180.0
    assert capture.noise_m < 0.001


def test_frames_are_taken_at_the_frame_rate_and_held_in_between():
    clock = {"x": 0.0}
    capture = MotionCapture(noise_m=0.0, noise_rad=0.0)
    capture.track("body", lambda: Pose((clock["x"], 0.0, 0.0)))
    seen = []
    for k in range(1000):
        t = k * 0.001
        clock["x"] = t
        frame = capture.frame(t)
        seen.append((frame.index, frame.t, frame.poses["body"][0]))
    indices = sorted({index for index, _, _ in seen})
    assert indices == list(range(180))
    for index, frame_t, x in seen:
        assert frame_t == index / 180.0
        # Sample and hold: the pose is the one sampled when the frame was first asked for.
        assert frame_t <= x < frame_t + 1 / 180.0


def test_a_frame_time_belongs_to_its_own_frame():
    capture = MotionCapture()
    assert capture.frame_index(1 / 180.0) == 1
    assert capture.frame_index(180 / 180.0) == 180
    assert capture.frame_index(0.0) == 0


def test_position_and_rotation_noise_have_the_configured_spread_and_no_bias():
    capture = MotionCapture(noise_m=0.0003, noise_rad=0.002, seed=5)
    capture.add_target("wheel", WHEEL)
    frames = [capture.observe(k / 180.0)["wheel"] for k in range(4000)]
    positions = np.array([f[:3] for f in frames]) - WHEEL[:3]
    assert positions.std(axis=0) == pytest.approx([0.0003] * 3, rel=0.05)
    assert np.all(np.abs(positions.mean(axis=0)) < 2e-5)
    rotvecs = Rotation.from_quat([f[3:] for f in frames]).as_rotvec()
    assert rotvecs.std(axis=0) == pytest.approx([0.002] * 3, rel=0.05)
    assert np.all(np.abs(np.linalg.norm(np.array(frames)[:, 3:], axis=1) - 1) < 1e-12)


def test_the_same_seed_gives_the_same_frames_however_often_it_is_asked():
    dense, sparse, other = (MotionCapture(seed=s) for s in (1, 1, 2))
    for capture in (dense, sparse, other):
        capture.add_target("wheel", WHEEL)
    for k in range(500):
        dense.observe(k * 0.001)
    t = 0.499
    assert np.array_equal(dense.observe(t)["wheel"], sparse.observe(t)["wheel"])
    assert not np.array_equal(dense.observe(t)["wheel"], other.observe(t)["wheel"])


def test_the_capture_sees_the_flexed_true_pose_that_fk_misses():
    limb = SimulatedLimb(V1, config=SimConfig(flex=0.1, backlash_rad=math.radians(10)))
    capture = MotionCapture(seed=3)
    capture.track("ee", limb.true_ee_pose)
    capture.add_target("wheel", WHEEL)
    target = np.array(limb.state().q) + 0.3
    limb.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    for k in range(1, 201):
        limb.advance(k * 0.01)
    seen = capture.observe(2.0)
    (fk,) = limb.state().ee_poses.values()
    truth = limb.true_ee_pose().as_array()
    assert np.linalg.norm(seen["ee"][:3] - truth[:3]) < 0.002
    assert np.linalg.norm(seen["ee"][:3] - np.array(fk[:3])) > 0.02
    assert np.linalg.norm(seen["wheel"][:3] - WHEEL[:3]) < 0.002


def test_a_tracked_body_is_reported_in_the_world_through_its_base_pose():
    capture = MotionCapture(noise_m=0.0, noise_rad=0.0)
    base = Pose((1.0, 2.0, 0.0), (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)))
    capture.track("ee", lambda: Pose((0.5, 0.0, 0.3)), base_pose=base)
    assert np.allclose(capture.observe(0.0)["ee"][:3], [1.0, 2.5, 0.3])
    assert capture.names == ("ee",)


def test_frames_are_read_only():
    capture = MotionCapture()
    capture.add_target("wheel", WHEEL)
    poses = capture.observe(0.0)
    with pytest.raises(ValueError):
        poses["wheel"][0] = 1.0
    with pytest.raises(TypeError):
        poses["x"] = poses["wheel"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"rate_hz": 0.0}, "rate_hz"),
        ({"noise_m": -1.0}, "noise_m"),
        ({"noise_rad": math.nan}, "noise_rad"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_settings_are_refused(kwargs, words):
    with pytest.raises(MotionCaptureError, match=words):
        MotionCapture(**kwargs)


def test_names_must_be_unique_and_time_must_not_go_back_a_frame():
    capture = MotionCapture()
    capture.add_target("wheel", WHEEL)
    with pytest.raises(MotionCaptureError, match="already tracked"):
        capture.track("wheel", Pose)
    with pytest.raises(MotionCaptureError, match="pose of 'bad'"):
        capture.add_target("bad", [0.0, 0.0])
    capture.observe(1.0)
    capture.observe(1.0 + 0.001)
    with pytest.raises(MotionCaptureError, match="before the last frame"):
        capture.observe(0.5)
