"""Tests of limbtree.robots.assembly: grasping modules, motion capture in the state, the world."""

import json
import math

import msgpack
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.assembly import (
    DEFAULT_MOCAP_NOISE_RAD,
    AssemblyLimb,
    WorldError,
    WorldModule,
    world_from_json,
)
from limbtree.robots.factory import DriverOptionError, make_driver
from limbtree.robots.faulty import FaultyPlant
from limbtree.robots.kinematic import KinematicPlant
from limbtree.robots.mocap import MotionCapture, MotionCaptureError
from limbtree.robots.modules import load_module
from limbtree.robots.sim import SimConfig, SimConfigError, SimulatedLimb
from limbtree.transport.driver import CommandMode, GripperAction
from limbtree.transport.schema import state_from_map, state_to_map, unpack

V1 = load_robot("moonbot_limb_v1", [builtin_robot_dir()])
V2 = load_robot("moonbot_limb_v2", [builtin_robot_dir()])
WHEEL = load_module("moonbot_wheel_v2")
GRASP = WHEEL.grasp_point("grasp").pose
TOLERANCE = WHEEL.grasp_tolerance
SEED_002 = {"backlash_rad": math.radians(5.0), "flex": 0.05}


def true_start(robot=V2, seed=0, **config):
    """The true end-effector pose of a fresh limb (base frame)."""
    return SimulatedLimb(robot, seed=seed, config=SimConfig(**config)).true_ee_pose()


def limb_with_wheel(grasp_in_base, *, robot=V2, seed=0, mocap=None, **config):
    """A limb whose world holds one Wheel V2, its grasp point at ``grasp_in_base``."""
    wheel = WorldModule("wheel", "moonbot_wheel_v2", grasp_in_base @ GRASP.inverse())
    return AssemblyLimb(robot, seed=seed, config=SimConfig(**config), world=[wheel], mocap=mocap)


def limb_at_wheel(*, offset=None, seed=0, **config):
    """A limb whose true end-effector is at the wheel's grasp point, moved by ``offset``."""
    ee = true_start(seed=seed, **config)
    return limb_with_wheel(ee if offset is None else ee @ offset, seed=seed, **config)


def close(limb, t=None):
    limb.gripper(GripperAction.CLOSE)
    limb.advance(limb.time + 0.02 if t is None else t)
    return limb.state()


def move_joints(limb, delta, seconds=1.0, dt=0.02):
    q = np.array(limb.state().q) + np.asarray(delta)
    limb.command(CommandMode.JOINT_POSITION, {"q": q.tolist()})
    start = limb.time
    for k in range(1, round(seconds / dt) + 1):
        limb.advance(start + k * dt)
    return limb.state()


def observed(state, body):
    return Pose.from_array(state.detail["mocap"][body])


# ---------------------------------------------------------------------- grasping


def test_closing_the_gripper_at_the_grasp_point_attaches_the_module():
    limb = limb_at_wheel(**SEED_002)
    limb.advance(0.0)
    state = limb.state()
    assert state.gripper == "open"
    assert state.detail["attached"] is None
    state = close(limb)
    assert state.gripper == "closed"
    assert state.detail["attached"] == "wheel"
    assert limb.attached == "wheel"
    assert limb.attached_grasp_point == "grasp"


@pytest.mark.parametrize("axis", [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)])
def test_closing_a_few_millimetres_outside_the_tolerance_closes_on_nothing(axis):
    outside = Pose((TOLERANCE.position_m + 0.003) * np.array(axis))
    limb = limb_at_wheel(offset=outside, **SEED_002)
    state = close(limb)
    assert state.gripper == "closed"
    assert state.detail["attached"] is None
    assert limb.attached is None


def test_closing_a_millimetre_inside_the_tolerance_attaches():
    inside = Pose((0.0, TOLERANCE.position_m - 0.001, 0.0))
    assert close(limb_at_wheel(offset=inside, **SEED_002)).detail["attached"] == "wheel"


def test_closing_turned_beyond_the_angle_tolerance_closes_on_nothing():
    half = (TOLERANCE.angle_rad + math.radians(1.0)) / 2.0
    turned = Pose(quaternion=(0.0, 0.0, math.sin(half), math.cos(half)))
    assert close(limb_at_wheel(offset=turned)).detail["attached"] is None
    half = (TOLERANCE.angle_rad - math.radians(1.0)) / 2.0
    turned = Pose(quaternion=(0.0, 0.0, math.sin(half), math.cos(half)))
    assert close(limb_at_wheel(offset=turned)).detail["attached"] == "wheel"


def test_the_grasp_is_judged_on_the_true_end_effector_not_on_the_limbs_own_fk():
    config = {"flex": 0.1}
    limb = SimulatedLimb(V2, config=SimConfig(**config))
    limb.advance(0.0)
    fk = Pose.from_array(limb.state().ee_poses["end_b"])
    assert fk.distance_to(limb.true_ee_pose()) > 0.05  # the limb sags by centimetres
    assert close(limb_with_wheel(fk, **config)).detail["attached"] is None
    assert close(limb_with_wheel(limb.true_ee_pose(), **config)).detail["attached"] == "wheel"


def test_closing_again_after_closing_on_nothing_tries_again():
    delta = [0.2, 0.1, 0.0, -0.1, 0.0, 0.0, 0.0]
    probe = AssemblyLimb(V2)
    move_joints(probe, delta)
    limb = limb_with_wheel(probe.true_ee_pose())  # the wheel is where the move ends
    assert close(limb).detail["attached"] is None
    move_joints(limb, delta)
    assert limb.state().gripper == "closed"
    assert close(limb).detail["attached"] == "wheel"


def test_an_attached_module_follows_the_true_end_effector_rigidly():
    limb = limb_at_wheel(**SEED_002)
    close(limb)
    start_ee = limb.true_ee_pose()
    offset = start_ee.inverse() @ limb.module_pose("wheel")
    state = move_joints(limb, [0.3, -0.2, 0.0, 0.2, 0.0, 0.1, 0.4])
    ee = limb.true_ee_pose()
    assert ee.distance_to(start_ee) > 0.1
    assert limb.module_pose("wheel").isclose(ee @ offset, atol_m=1e-9, atol_rad=1e-9)
    # The grasp point stays on the end-effector, and the motion capture sees it there.
    assert limb.grasp_pose("wheel", "grasp").isclose(ee, atol_m=1e-9, atol_rad=1e-9)
    assert observed(state, "wheel/grasp").distance_to(ee) < 0.003
    assert (
        observed(state, "wheel/grasp_back").distance_to(limb.grasp_pose("wheel", "grasp_back"))
        < 0.003
    )


def test_opening_releases_the_module_where_it_is():
    limb = limb_at_wheel(**SEED_002)
    close(limb)
    move_joints(limb, [0.3, 0.0, 0.0, 0.2, 0.0, 0.0, 0.0])
    left_at = limb.module_pose("wheel")
    limb.gripper(GripperAction.OPEN)
    limb.advance(limb.time + 0.02)
    assert limb.state().gripper == "open"
    assert limb.state().detail["attached"] is None
    move_joints(limb, [-0.3, 0.0, 0.0, -0.2, 0.0, 0.0, 0.0])
    assert limb.module_pose("wheel").isclose(left_at, atol_m=1e-12, atol_rad=1e-12)
    assert limb.true_ee_pose().distance_to(left_at) > 0.1


def test_a_released_module_can_be_grasped_again_where_it_was_left():
    limb = limb_at_wheel()
    close(limb)
    move_joints(limb, [0.2, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    limb.gripper(GripperAction.OPEN)
    state = close(limb)
    assert state.detail["attached"] == "wheel"


def test_the_nearest_grasp_point_in_tolerance_is_the_one_grasped():
    ee = true_start()
    near = WorldModule("near", "moonbot_wheel_v2", (ee @ Pose((0.004, 0.0, 0.0))) @ GRASP.inverse())
    far = WorldModule("far", "moonbot_wheel_v2", (ee @ Pose((0.0, 0.008, 0.0))) @ GRASP.inverse())
    limb = AssemblyLimb(V2, world=[far, near])
    assert close(limb).detail["attached"] == "near"


def test_while_the_power_is_off_closing_does_not_grasp():
    limb = limb_at_wheel()
    plant = FaultyPlant(KinematicPlant.from_limbs(V2.name, {"arm": limb}))
    plant.advance(0.0)
    plant.fault("arm", "power_off", {})
    plant.gripper("arm", GripperAction.CLOSE)
    assert limb.attached is None


# ---------------------------------------------------------------------- motion capture


def test_the_state_publishes_the_end_effector_and_every_grasp_point_as_7_floats():
    limb = limb_at_wheel(**SEED_002)
    limb.advance(0.0)
    mocap = limb.state().detail["mocap"]
    assert set(mocap) == {"ee", "wheel/grasp", "wheel/grasp_back"}
    for values in mocap.values():
        assert isinstance(values, list)
        assert len(values) == 7
        assert all(type(v) is float for v in values)
    assert limb.state().detail["mocap_t"] == 0.0
    # Base frame: each body is near its true pose in the limb's base frame.
    assert observed(limb.state(), "ee").distance_to(limb.true_ee_pose()) < 0.003
    grasp_back = limb.grasp_pose("wheel", "grasp_back")
    assert observed(limb.state(), "wheel/grasp_back").distance_to(grasp_back) < 0.003


def test_the_state_keeps_the_simulated_limbs_own_detail():
    plant = FaultyPlant(KinematicPlant.from_limbs(V2.name, {"arm": limb_at_wheel()}))
    plant.advance(0.0)
    plant.fault("arm", "slowdown", {})
    plant.advance(0.02)
    detail = plant.limb_state("arm").detail
    assert detail["faults"] == ["slowdown"]
    assert set(detail["mocap"]) == {"ee", "wheel/grasp", "wheel/grasp_back"}


@pytest.mark.slow
def test_mocap_noise_is_unbiased_with_the_default_spread_of_0_3_mm_and_0_1_degree():
    limb = limb_at_wheel(seed=4)
    truth = limb.true_ee_pose()
    grasp = limb.grasp_pose("wheel", "grasp_back")
    frames = 3000
    ee, wheel = [], []
    for k in range(frames):
        limb.advance(k / 180.0)
        mocap = limb.state().detail["mocap"]
        ee.append(mocap["ee"])
        wheel.append(mocap["wheel/grasp_back"])
    for samples, true in ((np.array(ee), truth), (np.array(wheel), grasp)):
        errors = samples[:, :3] - true.position
        assert errors.std(axis=0) == pytest.approx([0.0003] * 3, rel=0.06)
        assert np.all(np.abs(errors.mean(axis=0)) < 3e-5)
        turns = Rotation.from_quat(samples[:, 3:]) * Rotation.from_quat(true.quaternion).inv()
        rotvecs = turns.as_rotvec()
        assert rotvecs.std(axis=0) == pytest.approx([DEFAULT_MOCAP_NOISE_RAD] * 3, rel=0.06)
        assert np.all(np.abs(rotvecs.mean(axis=0)) < 2e-4)
    assert math.degrees(DEFAULT_MOCAP_NOISE_RAD) == pytest.approx(0.1)


def test_mocap_observations_are_held_between_180_hz_frames():
    limb = limb_at_wheel()
    limb.command(CommandMode.JOINT_POSITION, {"q": (np.array(limb.state().q) + 0.2).tolist()})
    seen = {}
    for k in range(200):
        t = k * 0.001
        limb.advance(t)
        state = limb.state()
        frame_t = state.detail["mocap_t"]
        assert frame_t == math.floor(t * 180.0 + 1e-9) / 180.0
        assert frame_t <= t < frame_t + 1 / 180.0
        ee = tuple(state.detail["mocap"]["ee"])
        assert seen.setdefault(frame_t, ee) == ee  # held within the frame
    values = list(seen.values())
    assert len(values) == 36
    assert len(set(values)) == 36  # and new at each frame


def test_a_given_motion_capture_sets_rate_and_noise():
    capture = MotionCapture(rate_hz=50.0, noise_m=0.0, noise_rad=0.0, seed=1)
    limb = limb_with_wheel(true_start(), mocap=capture)
    assert limb.mocap is capture
    limb.advance(0.03)
    state = limb.state()
    assert state.detail["mocap_t"] == 0.02
    assert observed(state, "ee").isclose(limb.true_ee_pose(), atol_m=1e-12, atol_rad=1e-9)


@pytest.mark.slow
def test_the_sim_config_sets_the_captures_noise():
    # seed 002: Limb V2's "higher sensor jitter" (missions/self_assembly_minimal.yaml).
    limb = limb_at_wheel(seed=2, mocap_noise_m=0.0012, mocap_rot_noise_rad=0.004)
    assert limb.mocap.noise_m == 0.0012 and limb.mocap.noise_rad == 0.004
    truth = limb.true_ee_pose()
    samples = []
    for k in range(2000):
        limb.advance(k / 180.0)
        samples.append(limb.state().detail["mocap"]["ee"])
    errors = np.array(samples)[:, :3] - truth.position
    assert errors.std(axis=0) == pytest.approx([0.0012] * 3, rel=0.07)
    quiet = limb_at_wheel(seed=2, mocap_noise_m=0.0, mocap_rot_noise_rad=0.0)
    quiet.advance(0.01)
    assert observed(quiet.state(), "ee").isclose(quiet.true_ee_pose(), atol_m=1e-12)


def test_capture_noise_without_a_world_is_refused_not_ignored():
    with pytest.raises(DriverOptionError, match="no world: give --world"):
        make_driver(V2, config=SimConfig(mocap_noise_m=0.001))
    with pytest.raises(SimConfigError, match="mocap_rot_noise_rad"):
        SimConfig(mocap_rot_noise_rad=-0.1)
    assert SimConfig.from_options({"mocap_noise_m": "0.0006"}).mocap_noise_m == 0.0006


def test_with_flex_the_mocap_sees_the_sagging_end_effector_but_the_limbs_fk_does_not():
    limb = limb_with_wheel(Pose((0.5, 0.0, 0.0)), flex=0.1)
    limb.advance(0.0)
    state = limb.state()
    fk = Pose.from_array(state.ee_poses["end_b"])
    rigid = V2.chain("arm").fk(np.array(state.q))
    assert fk.isclose(rigid, atol_m=1e-9, atol_rad=1e-9)  # the limb's own FK is rigid
    seen = observed(state, "ee")
    sag = fk.position[2] - limb.true_ee_pose().position[2]
    assert sag > 0.05  # centimetres, down along gravity
    assert seen.distance_to(limb.true_ee_pose()) < 0.003
    assert seen.distance_to(fk) > 0.05


def test_with_backlash_the_mocap_sees_the_true_joints():
    limb = limb_with_wheel(Pose((0.5, 0.0, 0.0)), backlash_rad=math.radians(10.0))
    state = move_joints(limb, [0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    state = move_joints(limb, [-0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])  # reversal: in the play
    fk = Pose.from_array(state.ee_poses["end_b"])
    true = limb.true_ee_pose()
    assert fk.distance_to(true) > 0.01
    assert observed(state, "ee").distance_to(true) < 0.003


def test_the_detail_survives_the_wire():
    limb = limb_at_wheel(**SEED_002)
    state = close(limb)
    packed = msgpack.packb(state_to_map(state, seq=1, agent_time=0.0), use_bin_type=True)
    back = state_from_map(unpack(packed)).state
    assert back.detail["attached"] == "wheel"
    assert {body: list(pose) for body, pose in back.detail["mocap"].items()} == state.detail[
        "mocap"
    ]
    assert back.detail["mocap_t"] == state.detail["mocap_t"]


# ---------------------------------------------------------------------- determinism


def run_states(seed, steps=60):
    limb = limb_at_wheel(seed=seed, joint_noise_rad=0.001, **SEED_002)
    states = [close(limb, 0.0)]
    limb.command(CommandMode.JOINT_POSITION, {"q": (np.array(states[0].q) + 0.1).tolist()})
    for k in range(1, steps):
        limb.advance(k * 0.02)
        states.append(limb.state())
    return states


def test_the_same_seed_gives_the_same_states_and_observations_bit_for_bit():
    assert run_states(7) == run_states(7)


def test_another_seed_gives_other_noise():
    first, other = run_states(7, steps=3), run_states(8, steps=3)
    assert first[-1].detail["mocap"]["ee"] != other[-1].detail["mocap"]["ee"]


# ---------------------------------------------------------------------- building a world


def test_make_driver_gives_an_assembly_limb_with_a_world_and_a_plain_one_without():
    world = (WorldModule("wheel", "moonbot_wheel_v1", Pose((0.8, 0.0, 0.1))),)
    driver = make_driver("moonbot_limb_v1", world=world, seed=3)
    assert isinstance(driver, AssemblyLimb)
    assert driver.world == world
    plain = make_driver("moonbot_limb_v1")
    assert type(plain) is SimulatedLimb
    assert isinstance(make_driver("moonbot_limb_v1", world=()), AssemblyLimb)


def test_an_assembly_limb_with_the_same_seed_moves_like_the_plain_simulated_limb():
    config = SimConfig(**SEED_002, joint_noise_rad=0.001)
    plain = SimulatedLimb(V1, seed=5, config=config)
    world = [WorldModule("wheel", "moonbot_wheel_v1", Pose((0.8, 0.0, 0.1)))]
    assembly = AssemblyLimb(V1, seed=5, config=config, world=world)
    for limb in (plain, assembly):
        limb.command(CommandMode.JOINT_POSITION, {"q": [0.1] * 7})
        for k in range(20):
            limb.advance(k * 0.02)
    assert assembly.state().q == plain.state().q
    assert assembly.state().ee_poses == plain.state().ee_poses


def test_an_unknown_module_in_the_world_lists_the_valid_modules():
    with pytest.raises(
        WorldError, match="valid modules: mirror_tile, moonbot_wheel_v1, moonbot_wheel_v2"
    ) as info:
        AssemblyLimb(V2, world=[WorldModule("wheel", "moonbot_wheel_v9", Pose())])
    assert info.value.name == "wheel"
    assert info.value.index == 0


def test_a_world_name_used_twice_is_refused():
    wheel = WorldModule("wheel", "moonbot_wheel_v2", Pose())
    with pytest.raises(WorldError, match="used twice"):
        AssemblyLimb(V2, world=[wheel, wheel])


@pytest.mark.parametrize("name", ["", "wheel/grasp", 3])
def test_a_world_module_name_must_be_a_plain_name(name):
    with pytest.raises(WorldError, match="letters, digits"):
        WorldModule(name, "moonbot_wheel_v2", Pose())


def test_a_world_module_pose_must_be_a_pose():
    with pytest.raises(WorldError, match="must be a Pose"):
        WorldModule("wheel", "moonbot_wheel_v2", [0, 0, 0, 0, 0, 0, 1])


def test_a_motion_capture_that_already_tracks_the_end_effector_is_refused():
    capture = MotionCapture()
    capture.add_target("ee", Pose())
    with pytest.raises(MotionCaptureError, match="already tracked"):
        AssemblyLimb(V2, mocap=capture)


def test_module_pose_of_an_unknown_module_lists_the_modules():
    limb = limb_at_wheel()
    with pytest.raises(WorldError, match="modules: wheel"):
        limb.module_pose("crate")


# ---------------------------------------------------------------------- world_from_json


def test_world_from_json_reads_the_agents_world_argument():
    text = json.dumps(
        [
            {"name": "wheel", "module": "moonbot_wheel_v2", "pose": [0.8, 0.1, 0.1, 0, 0, 0, 1]},
            {"name": "spare", "module": "moonbot_wheel_v1", "pose": [0.5, 0, 0, 1, 0, 0, 0]},
        ]
    )
    world = world_from_json(text)
    assert [(w.name, w.module) for w in world] == [
        ("wheel", "moonbot_wheel_v2"),
        ("spare", "moonbot_wheel_v1"),
    ]
    assert world[0].pose_in_base.position == pytest.approx([0.8, 0.1, 0.1])
    assert world[1].pose_in_base.quaternion == pytest.approx([1.0, 0.0, 0.0, 0.0])
    assert world_from_json("[]") == ()


GOOD = {"name": "wheel", "module": "moonbot_wheel_v2", "pose": [0.8, 0, 0, 0, 0, 0, 1]}


@pytest.mark.parametrize(
    ("world", "words", "index"),
    [
        ({"wheel": GOOD}, "expected a list", None),
        ([GOOD, "wheel"], "world[1]: expected an object", 1),
        ([{**GOOD, "pos": [0] * 7}], "world[0] ('wheel'): unknown key 'pos'; valid keys: name", 0),
        ([{"name": "wheel", "module": "moonbot_wheel_v2"}], "missing key 'pose'", 0),
        ([{**GOOD, "name": "a/b"}], "world[0] ('a/b'): name must be letters", 0),
        ([{**GOOD, "name": 7}], "world[0]: name must be letters", 0),
        (
            [{**GOOD, "module": "wheel"}],
            "unknown module 'wheel'; valid modules: "
            "mirror_tile, moonbot_wheel_v1, moonbot_wheel_v2",
            0,
        ),
        ([GOOD, {**GOOD}], "world[1] ('wheel'): the name 'wheel' is used twice (also world[0])", 1),
        ([{**GOOD, "pose": [0.8, 0, 0]}], "pose must be 7 finite numbers", 0),
        ([{**GOOD, "pose": [0.8, 0, 0, 0, 0, 0, "1"]}], "pose must be 7 finite numbers", 0),
        ([{**GOOD, "pose": [0.8, 0, 0, 0, 0, 0, 2]}], "world[0] ('wheel'): pose: ", 0),
    ],
)
def test_world_from_json_names_the_bad_entry(world, words, index):
    with pytest.raises(WorldError) as info:
        world_from_json(json.dumps(world))
    assert words in str(info.value)
    assert info.value.index == index


def test_world_from_json_refuses_text_that_is_not_json():
    with pytest.raises(WorldError, match="not valid JSON"):
        world_from_json("[{name: wheel}]")
