"""Tests of limbtree.robots.sim: tracking, commands, non-idealities and determinism."""

import math

import numpy as np
import pytest

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot, robot_names
from limbtree.robots.factory import DRIVERS, UnknownDriverError, make_driver
from limbtree.robots.faulty import FaultyPlant
from limbtree.robots.kinematic import KinematicPlant
from limbtree.robots.sim import (
    ScheduledFault,
    SimConfig,
    SimConfigError,
    SimulatedLimb,
    _Wobble,
    sagged_pose,
)
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    GripperAction,
    Health,
    LimbDriver,
)
from limbtree.transport.plant import PlantLimbDriver

SHIPPED = [builtin_robot_dir()]
SPECS = {name: load_robot(name, SHIPPED) for name in robot_names(SHIPPED)}
LIMBS = [(robot, limb.name) for robot, spec in SPECS.items() for limb in spec.limbs]
DT = 0.01

# Seed 000 Table I: the speed limit of each kind of limb [rad/s].
TABLE_I = [("heavy_limb", "arm", 0.15), ("moonbot_zero", "leg_0", 10.0), ("light_limb", "arm", 3.1)]


def sim(robot="heavy_limb", limb=None, *, seed=0, **config):
    return SimulatedLimb(SPECS[robot], limb, seed=seed, config=SimConfig(**config))


def run(limb, seconds, dt=DT):
    """Advance ``limb`` by ``seconds`` in steps of ``dt``; returns the states seen."""
    start = limb.time
    steps = round(seconds / dt)
    states = []
    for k in range(1, steps + 1):
        limb.advance(start + k * dt)
        states.append(limb.state())
    return states


def ee(state):
    (pose,) = state.ee_poses.values()
    return Pose.from_array(pose)


# ---------------------------------------------------------------------- tracking


@pytest.mark.parametrize(("robot", "limb", "speed"), TABLE_I)
def test_each_table_one_limb_tracks_a_joint_target_no_faster_than_its_speed_limit(
    robot, limb, speed
):
    driver = sim(robot, limb)
    q0 = np.array(driver.state().q)
    target = q0.copy()
    target[0] += 1.0
    driver.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    dt = min(DT, 0.1 / speed)
    states = run(driver, 1.0 / speed + 0.5, dt)
    q = np.array([q0] + [s.q for s in states])
    assert np.max(np.abs(np.diff(q, axis=0))) <= speed * dt * (1 + 1e-9)
    assert np.allclose(q[-1], target, atol=1e-9)
    arrival = next(s.t for s in states if abs(s.q[0] - target[0]) < 1e-9)
    assert 1.0 / speed <= arrival <= 1.0 / speed + 2 * dt


def test_heavy_limb_needs_more_than_six_seconds_for_one_radian():
    driver = sim("heavy_limb")
    target = np.array(driver.state().q) + np.array([1.0, 0, 0, 0, 0, 0, 0])
    driver.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    states = run(driver, 6.0)
    assert abs(states[-1].q[0] - target[0]) > 0.05
    run(driver, 1.0)
    assert driver.state().q[0] == pytest.approx(target[0])


def test_all_joints_arrive_together_on_a_straight_line_in_joint_space():
    driver = sim("light_limb")
    q0 = np.array(driver.state().q)
    target = q0 + np.array([1.0, -0.5, 0.25, 0.0, 0.1, -0.2, 0.3])
    driver.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    for state in run(driver, 0.2):
        fraction = (state.q[0] - q0[0]) / (target[0] - q0[0])
        assert np.allclose(np.array(state.q) - q0, fraction * (target - q0), atol=1e-12)


def test_a_joint_target_outside_the_limits_is_clipped_and_flagged():
    driver = sim("light_limb")
    chain = SPECS["light_limb"].chain()
    target = np.array(driver.state().q)
    target[1] = chain.upper[1] + 1.0
    driver.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    run(driver, 2.0)
    state = driver.state()
    assert state.health & Health.JOINT_LIMIT
    assert state.q[1] == pytest.approx(chain.upper[1])
    driver.command(CommandMode.JOINT_POSITION, {"q": list(state.q)})
    run(driver, 0.05)
    assert not driver.state().health & Health.JOINT_LIMIT


def test_hold_stops_the_limb_where_it_is():
    driver = sim("light_limb")
    target = np.array(driver.state().q) + 1.0
    driver.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    run(driver, 0.1)
    driver.command(CommandMode.HOLD, {})
    held = driver.state().q
    states = run(driver, 0.5)
    assert np.allclose(states[-1].q, held, atol=1e-12)
    assert states[-1].detail["mode"] == "hold"


# ---------------------------------------------------------------------- end-effector commands


@pytest.mark.parametrize(
    ("robot", "limb", "offset"),
    [
        ("heavy_limb", "arm", (0.05, -0.03, -0.04)),
        ("light_limb", "arm", (-0.05, 0.05, 0.02)),
        ("moonbot_limb_v1", None, (0.03, 0.05, 0.05)),
        ("moonbot_zero", "leg_1", (0.02, -0.01, -0.02)),
    ],
)
def test_ee_pose_command_reaches_the_target_and_fk_reports_it(robot, limb, offset):
    driver = sim(robot, limb)
    start = ee(driver.state())
    target = Pose(start.position + np.array(offset), start.quaternion)
    driver.command(CommandMode.EE_POSE, {"pose": target.as_array().tolist()})
    run(driver, 20.0, 0.05)
    reached = ee(driver.state())
    assert reached.distance_to(target) < 1e-3
    if SPECS[robot].limb(limb).ik_mask is None:
        assert reached.angle_to(target) < 1e-3
    assert not driver.state().health & Health.IK_FAILED


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_redundant_limb_streamed_one_pose_target_stands_still_in_its_null_space(seed):
    # A 7-joint limb sent an ee_pose every tick (the align and sync_move leaves do) must
    # not move in its null space. Seeded from the measured joints, which lag the goal by a
    # tick, the IK answers alternated between two null-space solutions whose gap grew
    # while the limb moved and stayed when it stopped: the motors chattered at half the
    # command rate (0.008 rad, 1 mm at the tip; seen in the Minimal self-assembly).
    noise = math.radians(0.02)
    driver = sim("moonbot_limb_v2", joint_noise_rad=noise, seed=seed)
    # Limb V2 halfway to its approach pose in missions/self_assembly_minimal.yaml.
    q = [-0.1456, 0.6889, -0.6158, 0.8734, 0.3798, 1.61, 2.5049]
    driver.command(CommandMode.JOINT_POSITION, {"q": q})
    dt = 1.0 / 30.0
    run(driver, 3.0, dt)
    start = ee(driver.state())
    line = np.array([0.0, -0.03, -0.02])
    readings = []
    for k in range(1, 91):
        tau = min(1.0, k / 45)
        goal = Pose(start.position + line * tau * tau * (3.0 - 2.0 * tau), start.quaternion)
        driver.command(CommandMode.EE_POSE, {"pose": goal.as_array().tolist()})
        driver.advance(driver.time + dt)
        readings.append(np.array(driver.state().q))
    steps = np.diff(np.array(readings), axis=0)
    alternating = (steps[1:] * steps[:-1] < 0) & (np.abs(steps[1:]) > 6 * noise)
    assert not alternating.any()  # noise alone: no tick-to-tick back and forth
    assert ee(driver.state()).distance_to(goal) < 2e-3


def test_an_unreachable_ee_pose_fails_sets_ik_failed_and_does_not_move():
    driver = sim("light_limb")
    before = driver.state().q
    with pytest.raises(DriverError, match="no IK solution") as raised:
        driver.command(CommandMode.EE_POSE, {"pose": [3.0, 0, 0, 0, 0, 0, 1]})
    assert raised.value.code == "ik_failed"
    states = run(driver, 0.5)
    assert states[-1].q == before
    assert states[-1].health & Health.IK_FAILED


def test_a_successful_ee_pose_clears_ik_failed():
    driver = sim("light_limb")
    with pytest.raises(DriverError):
        driver.command(CommandMode.EE_POSE, {"pose": [3.0, 0, 0, 0, 0, 0, 1]})
    run(driver, 0.05)
    start = ee(driver.state())
    target = Pose(start.position + [0.0, 0.0, 0.01], start.quaternion)
    driver.command(CommandMode.EE_POSE, {"pose": target.as_array().tolist()})
    run(driver, 0.05)
    assert not driver.state().health & Health.IK_FAILED


def test_ee_twist_moves_the_end_effector_at_the_commanded_velocity_until_the_next_command():
    driver = sim("light_limb")
    start = ee(driver.state())
    driver.command(CommandMode.EE_TWIST, {"twist": [0.0, 0.02, -0.01, 0.0, 0.0, 0.0]})
    run(driver, 2.0)
    moved = ee(driver.state()).position - start.position
    assert np.allclose(moved, [0.0, 0.04, -0.02], atol=1e-3)
    assert ee(driver.state()).angle_to(start) < 1e-3
    driver.command(CommandMode.HOLD, {})
    held = ee(driver.state())
    run(driver, 1.0)
    assert ee(driver.state()).distance_to(held) < 1e-9


@pytest.mark.parametrize("axis", [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0)])
def test_an_ee_twist_faster_than_the_joints_keeps_to_its_line(axis):
    # 3 m/s: the joints cannot keep up, and the end-effector goes along the twist's line as
    # fast as they let it. It once followed the joint line towards each step's full target
    # and drifted off the line: 9.4 mm across in 282 mm along +y.
    driver = sim("light_limb")
    start = ee(driver.state())
    direction = np.array(axis)
    driver.command(CommandMode.EE_TWIST, {"twist": [*(3.0 * direction), 0.0, 0.0, 0.0]})
    run(driver, 0.3)
    moved = ee(driver.state()).position - start.position
    along = float(moved @ direction)
    assert along > 0.1  # it went (slower than asked)
    assert np.linalg.norm(moved - along * direction) < 0.5e-3
    assert ee(driver.state()).angle_to(start) < 1e-3


def test_an_ee_twist_past_the_reach_stops_at_the_edge_and_comes_back_at_once():
    driver = sim("light_limb")
    driver.command(CommandMode.EE_TWIST, {"twist": [0.3, 0.0, 0.0, 0.0, 0.0, 0.0]})
    run(driver, 10.0)
    edge = ee(driver.state()).position
    assert np.linalg.norm(edge) < 1.0
    # stopped at the edge, and the state says so and why
    state = driver.state()
    assert state.health & Health.IK_FAILED
    assert state.detail["ik_failure"].startswith("the twist leads where the limb cannot follow")
    driver.command(CommandMode.EE_TWIST, {"twist": [-0.05, 0.0, 0.0, 0.0, 0.0, 0.0]})
    run(driver, 1.0)
    assert ee(driver.state()).position[0] < edge[0] - 0.03
    assert not driver.state().health & Health.IK_FAILED  # moving again
    assert "ik_failure" not in driver.state().detail
    # stopped again, then any other command: the stopped twist is no longer followed
    for other, payload in ((CommandMode.HOLD, {}), (CommandMode.JOINT_POSITION, {"q": [0.1] * 7})):
        driver.command(CommandMode.EE_TWIST, {"twist": [0.3, 0.0, 0.0, 0.0, 0.0, 0.0]})
        run(driver, 10.0)
        assert driver.state().health & Health.IK_FAILED
        driver.command(other, payload)
        run(driver, 0.1)
        assert not driver.state().health & Health.IK_FAILED, other


def test_joint_torque_is_refused_as_an_unsupported_mode():
    driver = sim("heavy_limb")
    with pytest.raises(DriverError, match="joint_position, ee_pose") as raised:
        driver.command(CommandMode.JOINT_TORQUE, {"tau": [0.0] * 7})
    assert raised.value.code == "unsupported_mode"
    assert CommandMode.JOINT_TORQUE not in driver.describe().command_modes


@pytest.mark.parametrize(
    ("mode", "payload", "words"),
    [
        (CommandMode.JOINT_POSITION, {"q": [0.0] * 6}, "7 numbers"),
        (CommandMode.JOINT_POSITION, {"q": [math.nan] * 7}, "NaN"),
        (CommandMode.JOINT_POSITION, {}, "missing field 'q'"),
        (CommandMode.EE_POSE, {"pose": [0.5, 0, 0.3, 0, 0, 0, 2]}, "norm"),
        (CommandMode.EE_POSE, {"ee": "hand", "pose": [0.5, 0, 0.3, 0, 0, 0, 1]}, "ee_link"),
        (CommandMode.EE_TWIST, {"twist": [0.0] * 3}, "6 numbers"),
        ("fly", {}, "valid: joint_position"),
    ],
)
def test_bad_commands_are_refused_with_bad_value_and_a_message(mode, payload, words):
    driver = sim("heavy_limb")
    with pytest.raises(DriverError, match=words) as raised:
        driver.command(mode, payload)
    assert raised.value.code == "bad_value"


def test_time_going_back_is_refused():
    driver = sim("heavy_limb")
    driver.advance(1.0)
    with pytest.raises(DriverError, match="went back") as raised:
        driver.advance(0.5)
    assert raised.value.code == "bad_value"


def test_a_repeated_time_changes_nothing():
    driver = sim("light_limb", joint_noise_rad=0.01)
    driver.advance(1.0)
    state = driver.state()
    driver.advance(1.0)
    assert driver.state() is state


# ---------------------------------------------------------------------- description, gripper


@pytest.mark.parametrize(("robot", "limb"), LIMBS)
def test_every_limb_of_the_registry_can_be_simulated_from_its_home_posture(robot, limb):
    driver = make_driver(robot, limb) if len(SPECS[robot].limbs) > 1 else sim(robot)
    spec = SPECS[robot].limb(limb)
    description = driver.describe()
    assert description.robot == robot
    assert description.driver == "sim"
    assert [j.name for j in description.joints] == list(spec.joint_names)
    assert [j.max_speed for j in description.joints] == [j.max_speed for j in spec.joints]
    assert description.end_effectors == (spec.ee_link,)
    assert description.has_gripper == bool(spec.grippers)
    state = driver.state()
    assert state.q == spec.postures["home"]
    assert state.health == Health.OK
    assert ee(state).isclose(SPECS[robot].chain(limb).fk(state.q))


def test_the_initial_posture_is_configurable():
    driver = sim("heavy_limb", initial_posture="safe")
    assert driver.state().q == SPECS["heavy_limb"].limb().postures["safe"]


def test_the_gripper_opens_and_closes_and_legs_have_none():
    driver = sim("heavy_limb")
    assert driver.state().gripper == "open"
    driver.gripper(GripperAction.CLOSE)
    driver.advance(0.01)
    assert driver.state().gripper == "closed"
    leg = sim("moonbot_zero", "leg_2")
    assert leg.state().gripper == "none"
    with pytest.raises(DriverError) as raised:
        leg.gripper(GripperAction.CLOSE)
    assert raised.value.code == "unsupported_mode"


def test_make_driver_makes_a_simulated_limb_and_lists_the_valid_drivers():
    driver = make_driver("moonbot_zero", "leg_3", seed=4, config=SimConfig(latency_s=0.01))
    assert isinstance(driver, SimulatedLimb)
    assert isinstance(driver, LimbDriver)
    assert driver.config.latency_s == 0.01
    with pytest.raises(UnknownDriverError, match="valid drivers: sim") as raised:
        make_driver("heavy_limb", driver="dynamixel")
    assert raised.value.valid_drivers == DRIVERS


# ---------------------------------------------------------------------- non-idealities


def test_the_default_config_is_ideal_so_the_true_pose_is_the_fk_pose():
    driver = sim("moonbot_limb_v2")
    driver.command(CommandMode.JOINT_POSITION, {"q": [0.3, 0.2, -0.1, 1.0, 0.2, 0.5, 0.1]})
    run(driver, 3.0)
    assert driver.true_ee_pose().isclose(ee(driver.state()), atol_m=1e-12, atol_rad=1e-12)
    assert np.array_equal(driver.true_joint_positions(), driver.state().q)


def test_latency_delays_the_start_of_motion_by_latency_s():
    ideal, late = sim("light_limb"), sim("light_limb", latency_s=0.2)
    target = (np.array(ideal.state().q) + 0.5).tolist()
    for driver in (ideal, late):
        driver.command(CommandMode.JOINT_POSITION, {"q": target})
    ideal_states, late_states = run(ideal, 1.0), run(late, 1.0)
    # The setpoint for t = 0.01 s goes out at 0 s (before the bus moves) and acts from
    # 0.20 s: the joints have moved at 0.21 s. Without latency they move in the first step.
    assert late_states[19].q == late.tracker.limb.postures["home"]
    assert late_states[20].q != late_states[19].q
    assert ideal_states[0].q != ideal.tracker.limb.postures["home"]
    for k in range(30, 100):
        assert late_states[k].q == pytest.approx(ideal_states[k - 20].q, abs=1e-12)


def test_joint_noise_is_on_the_reported_joints_only_and_has_the_configured_spread():
    driver = sim("heavy_limb", joint_noise_rad=0.002)
    home = np.array(SPECS["heavy_limb"].limb().postures["home"])
    q = np.array([s.q for s in run(driver, 20.0)])
    assert np.std(q - home) == pytest.approx(0.002, rel=0.05)
    assert abs(np.mean(q - home)) < 2e-4
    assert np.array_equal(driver.true_joint_positions(), home)


def test_the_same_seed_and_inputs_give_identical_states():
    def trial(seed):
        config = {
            "joint_noise_rad": 0.001,
            "backlash_rad": 0.05,
            "latency_s": 0.03,
        }
        schedule = (ScheduledFault(0.4, "slowdown", {"factor": 0.3, "duration_s": 0.3}),)
        limb = sim("light_limb", seed=seed, **config)
        plant = FaultyPlant(KinematicPlant.from_limbs("light_limb", {"arm": limb}), schedule)
        driver = PlantLimbDriver(plant, "arm")
        start = ee(driver.state())
        target = Pose(start.position + [0.05, 0.02, -0.03], start.quaternion)
        driver.command(CommandMode.EE_POSE, {"pose": target.as_array().tolist()})
        states = run(driver, 1.0)
        driver.command(CommandMode.EE_TWIST, {"twist": [0.0, 0.0, 0.02, 0.0, 0.1, 0.0]})
        states += run(driver, 0.5)
        return states, limb.true_ee_pose().as_array()

    first, second, other = trial(7), trial(7), trial(8)
    assert first[0] == second[0]
    assert np.array_equal(first[1], second[1])
    assert first[0] != other[0]


def test_noise_off_makes_the_seed_irrelevant():
    a, b = sim("light_limb", seed=1), sim("light_limb", seed=2)
    for driver in (a, b):
        driver.command(CommandMode.JOINT_POSITION, {"q": [0.5] * 7})
    assert run(a, 1.0) == run(b, 1.0)


def test_backlash_makes_a_dead_band_on_direction_reversal():
    backlash = math.radians(10.0)
    driver = sim("moonbot_limb_v1", backlash_rad=backlash)
    home = np.array(driver.state().q)
    forward = home.copy()
    forward[1] += 0.4
    driver.command(CommandMode.JOINT_POSITION, {"q": forward.tolist()})
    run(driver, 2.0)
    # Going forward, the output trails the motor by half the play.
    assert driver.true_joint_positions()[1] == pytest.approx(forward[1] - backlash / 2)
    out_before = driver.true_ee_pose()
    # Reversing by less than the play: the motor (and FK) move, the output does not.
    back = forward.copy()
    back[1] -= 0.9 * backlash
    driver.command(CommandMode.JOINT_POSITION, {"q": back.tolist()})
    run(driver, 2.0)
    assert driver.state().q[1] == pytest.approx(back[1])
    assert driver.true_joint_positions()[1] == pytest.approx(forward[1] - backlash / 2)
    assert driver.true_ee_pose().isclose(out_before, atol_m=1e-12, atol_rad=1e-12)
    assert ee(driver.state()).distance_to(out_before) > 0.01
    # Past the play, the output follows again, half the play ahead of the motor.
    further = back.copy()
    further[1] -= 0.3
    driver.command(CommandMode.JOINT_POSITION, {"q": further.tolist()})
    run(driver, 2.0)
    assert driver.true_joint_positions()[1] == pytest.approx(further[1] + backlash / 2)


def test_backlash_can_differ_per_joint_and_must_match_the_joint_count():
    driver = sim("moonbot_zero", "leg_0", backlash_rad=(0.0, 0.1, 0.2))
    target = (np.array(driver.state().q) + 0.3).tolist()
    driver.command(CommandMode.JOINT_POSITION, {"q": target})
    run(driver, 0.5)
    lag = np.array(driver.state().q) - driver.true_joint_positions()
    assert np.allclose(lag, [0.0, 0.05, 0.1])
    with pytest.raises(SimConfigError, match="one per joint"):
        sim("moonbot_zero", "leg_0", backlash_rad=(0.1, 0.1))


@pytest.mark.parametrize("robot", ["moonbot_limb_v1", "moonbot_limb_v2", "heavy_limb"])
def test_flex_moves_the_true_end_effector_within_the_papers_bounds_while_fk_does_not(robot):
    rigid, flexible = sim(robot), sim(robot, flex=0.1)
    for driver in (rigid, flexible):
        driver.command(CommandMode.JOINT_POSITION, {"q": [0.2, 0.9, 0.0, 0.4, 0.0, 0.3, 0.0]})
    run(rigid, 15.0, 0.05)
    run(flexible, 15.0, 0.05)
    fk = ee(flexible.state())
    assert fk.isclose(ee(rigid.state()), atol_m=1e-12, atol_rad=1e-12)
    true = flexible.true_ee_pose()
    error = true.distance_to(fk)
    h = float(np.linalg.norm(fk.position[:2]))
    assert error == pytest.approx(0.1 * h * h)
    assert 0.01 < error < 0.15  # seed 002 Sec. V: "on the order of 10 cm"
    assert true.position[2] < fk.position[2]
    assert np.allclose(true.position[:2], fk.position[:2])
    assert true.angle_to(fk) == pytest.approx(math.atan(2 * error / h))


def test_flex_of_a_tenth_puts_the_seed_002_grasp_point_about_ten_centimetres_low():
    # Seed 002 Fig. 4: the wheel grasp point at (871, -459, 221) mm from the limb base.
    grasp = Pose((0.871, -0.459, 0.221))
    sagged = sagged_pose(grasp, 0.1, np.array([0.0, 0.0, -1.0]))
    assert grasp.position[2] - sagged.position[2] == pytest.approx(0.097, abs=0.001)
    assert sagged_pose(grasp, 0.0, np.array([0.0, 0.0, -1.0])) is grasp


def test_flex_grows_with_extension_and_with_payload():
    def sag(**config):
        driver = sim("moonbot_limb_v2", flex=0.1, **config)
        return driver.true_ee_pose().distance_to(ee(driver.state()))

    folded = sim("moonbot_limb_v2", flex=0.1, initial_posture="safe")
    assert folded.true_ee_pose().distance_to(ee(folded.state())) < sag()
    assert sag(payload_kg=9.0) == pytest.approx(2 * sag())


@pytest.mark.parametrize(
    ("config", "option"),
    [
        ({"latency_s": -0.1}, "latency_s"),
        ({"joint_noise_rad": math.nan}, "joint_noise_rad"),
        ({"backlash_rad": -0.01}, "backlash_rad"),
        ({"flex": math.inf}, "flex"),
        ({"gravity": (0.0, 0.0, 0.0)}, "gravity"),
        ({"fall_time_s": 0.0}, "fall_time_s"),
        ({"vibration_hz": -1.0}, "vibration_hz"),
        ({"vibration_damping": 0.0}, "vibration_damping"),
        ({"vibration_damping": 1.0}, "vibration_damping"),
        ({"ik_searches": 0}, "ik_searches"),
        ({"initial_posture": ""}, "initial_posture"),
    ],
)
def test_sim_config_refuses_bad_values_naming_the_field(config, option):
    with pytest.raises(SimConfigError, match=option) as raised:
        SimConfig(**config)
    assert raised.value.option == option


def test_a_negative_seed_is_refused():
    with pytest.raises(SimConfigError, match="seed"):
        SimulatedLimb(SPECS["heavy_limb"], seed=-1)


def test_sim_config_reads_text_options_and_lists_the_valid_ones():
    config = SimConfig.from_options(
        {"latency_s": "0.02", "backlash_rad": "0.1,0.2,0.3", "initial_posture": "safe"}
    )
    assert config.latency_s == 0.02
    assert config.backlash_rad == (0.1, 0.2, 0.3)
    assert config.initial_posture == "safe"
    assert SimConfig.from_options({"gravity": "0,0,-2"}).gravity == (0.0, 0.0, -1.0)
    with pytest.raises(SimConfigError, match="valid: latency_s, joint_noise_rad"):
        SimConfig.from_options({"wobble": "1"})
    with pytest.raises(SimConfigError, match="flex"):
        SimConfig.from_options({"flex": "lots"})


# Vibration: the arm's first bending mode ------------------------------------------------


def swing_after_a_stop(hz, damping=0.1, seconds=6.0, dt=1 / 30):
    """Turn the base joint of Limb V2 and stop; the true end-effector's offset from rest."""
    limb = sim("moonbot_limb_v2", vibration_hz=hz, vibration_damping=damping)
    q = np.array(limb.read_joints().q)
    q[0] += 0.3
    limb.write_joint_targets(q)
    positions, fk = [], []
    for k in range(round(seconds / dt)):
        limb.sync((k + 1) * dt)
        positions.append(limb.true_ee_pose().position)
        fk.append(ee(limb.state()).position)
    rest = positions[-1]
    return np.array([np.linalg.norm(p - rest) for p in positions]), np.array(fk)


def test_a_rigid_limb_stands_still_as_soon_as_it_stops():
    offsets, _ = swing_after_a_stop(0.0)
    stopped = int(np.argmax(offsets == 0.0))
    assert 0 < stopped < 30 and np.all(offsets[stopped:] == 0.0)


def test_a_limb_with_a_bending_mode_swings_after_it_stops_and_settles_at_its_damping():
    hz, damping, dt = 2.0, 0.1, 1 / 30
    offsets, fk = swing_after_a_stop(hz, damping)
    rigid, _ = swing_after_a_stop(0.0)
    stopped = int(np.argmax(rigid == 0.0))
    swing = offsets[stopped:]
    # It overshoots by millimetres (the arm stopped from about 0.4 m/s), then decays with
    # the envelope exp(-zeta omega t).
    assert 0.005 < swing.max() < 0.05
    decay = damping * 2 * math.pi * hz
    one_second = round(1.0 / dt)
    first, later = swing[:one_second].max(), swing[2 * one_second : 3 * one_second].max()
    assert later / first == pytest.approx(math.exp(-2.0 * decay), rel=0.35)
    assert swing[-one_second:].max() < 0.02 * first
    # The limb's own FK does not see it: it stood still once the joints stopped.
    assert np.all(fk[stopped + 1 :] == fk[-1])


def test_the_swing_has_the_modes_frequency():
    hz, dt = 2.0, 1 / 300
    limb = sim("moonbot_limb_v2", vibration_hz=hz, vibration_damping=0.02)
    q = np.array(limb.read_joints().q)
    q[0] += 0.3
    limb.write_joint_targets(q)
    xs = []
    for k in range(round(4.0 / dt)):
        limb.sync((k + 1) * dt)
        xs.append(limb.true_ee_pose().position[1])
    tail = np.array(xs[round(1.5 / dt) :])
    tail -= tail.mean()
    crossings = np.count_nonzero(np.diff(np.sign(tail)) != 0)
    duration = len(tail) * dt
    assert crossings / (2 * duration) == pytest.approx(hz, rel=0.1)


def test_the_wobble_is_exact_for_any_step_length_along_a_straight_line():

    coarse, fine = _Wobble(2.0, 0.1, np.zeros(3)), _Wobble(2.0, 0.1, np.zeros(3))
    velocity = np.array([0.1, -0.05, 0.02])  # [m/s], for 0.4 s, then standing
    coarse.advance(velocity * 0.4, 0.4)
    coarse.advance(velocity * 0.4, 0.35)
    for k in range(40):
        fine.advance(velocity * 0.01 * (k + 1), 0.01)
    for _ in range(35):
        fine.advance(velocity * 0.4, 0.01)
    assert np.allclose(coarse.offset, fine.offset, atol=1e-12)
    assert np.allclose(coarse.rate, fine.rate, atol=1e-12)
    # Against the closed form of a velocity step: e = -(v / omega_d) exp(-z w t) sin(w_d t).
    w = 2 * math.pi * 2.0
    wd = w * math.sqrt(1 - 0.01)
    expected = -(velocity / wd) * math.exp(-0.1 * w * 0.4) * math.sin(wd * 0.4)
    probe = _Wobble(2.0, 0.1, np.zeros(3))
    probe.advance(velocity * 0.4, 0.4)
    assert np.allclose(probe.offset, expected, atol=1e-12)
