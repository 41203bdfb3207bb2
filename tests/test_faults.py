"""Tests of the faults of seed 000 Table II, injected live and scheduled.

The fault decorator (``FaultyPlant``) wraps a one-limb kinematic plant; each test drives the
limb through a one-limb view of that plant.
"""

import dataclasses

import numpy as np
import pytest

from limbtree.kinematics import Pose
from limbtree.robots import FaultyPlant, KinematicPlant, builtin_robot_dir, load_robot, robot_names
from limbtree.robots.sim import ScheduledFault, SimConfig
from limbtree.transport.driver import CommandMode, DriverError, GripperAction, Health
from limbtree.transport.plant import PlantLimbDriver

SHIPPED = [builtin_robot_dir()]
SPECS = {name: load_robot(name, SHIPPED) for name in robot_names(SHIPPED)}
DT = 0.01
LEG = ("moonbot_zero", "leg_0")
SLUMPED = np.array(SPECS["moonbot_zero"].limb("leg_0").postures["slumped"])


class FaultyLimb(PlantLimbDriver):
    """One limb of a faulty kinematic plant; the simulated limb's ground truth shows through."""

    def __getattr__(self, name):
        return getattr(self.plant.inner.limb(self.limb), name)


def sim(robot="moonbot_zero", limb="leg_0", **config):
    spec = SPECS[robot]
    name = limb or spec.limb_names[0]
    settings = SimConfig(**config)
    plant = KinematicPlant(spec, [name], config=dataclasses.replace(settings, faults=()))
    return FaultyLimb(FaultyPlant(plant, settings.faults), name)


def run(limb, seconds, dt=DT):
    start = limb.time
    states = []
    for k in range(1, round(seconds / dt) + 1):
        limb.advance(start + k * dt)
        states.append(limb.state())
    return states


def move_all_joints(limb, delta):
    target = np.array(limb.state().q) + delta
    limb.command(CommandMode.JOINT_POSITION, {"q": target.tolist()})
    return target


def ee_pose_payload(limb, offset):
    (pose,) = limb.state().ee_poses.values()
    pose = Pose.from_array(pose)
    return {"pose": Pose(pose.position + np.array(offset), pose.quaternion).as_array().tolist()}


# ---------------------------------------------------------------------- blockage, slowdown


def test_blockage_stops_the_given_joints_only_and_flags_blocked():
    limb = sim()
    q0 = np.array(limb.state().q)
    limb.fault("blockage", {"joints": [1]})
    target = move_all_joints(limb, 0.5)
    state = run(limb, 0.5)[-1]
    assert state.health & Health.BLOCKED
    assert state.detail["faults"] == ["blockage"]
    assert state.q[1] == q0[1]
    assert state.q[0] == pytest.approx(target[0])
    assert state.q[2] == pytest.approx(target[2])


def test_blockage_by_joint_name_and_by_default_of_every_joint():
    named = sim()
    named.fault("blockage", {"joints": [named.tracker.limb.joint_names[2]]})
    everything = sim()
    everything.fault("blockage", {})
    for limb in (named, everything):
        q0 = np.array(limb.state().q)
        move_all_joints(limb, 0.3)
        moved = np.array(run(limb, 0.2)[-1].q) != q0
        assert moved.tolist() == ([True, True, False] if limb is named else [False] * 3)


def test_blockage_ends_after_its_duration_and_the_joints_catch_up():
    limb = sim()
    limb.fault("blockage", {"duration_s": 0.3})
    target = move_all_joints(limb, 0.5)
    states = run(limb, 0.5)
    assert states[28].health & Health.BLOCKED
    assert states[28].q == states[0].q
    assert not states[30].health & Health.BLOCKED
    assert states[-1].q == pytest.approx(target.tolist())


def test_slowdown_scales_the_joint_speed_and_flags_slowed():
    limb = sim("light_limb", None)
    limb.fault("slowdown", {"factor": 0.25})
    q0 = np.array(limb.state().q)
    move_all_joints(limb, 1.0)
    states = run(limb, 0.5)
    assert states[-1].health & Health.SLOWED
    speed = np.abs(np.array(states[-1].q) - states[-2].q) / DT
    assert speed == pytest.approx([3.1 * 0.25] * 7)
    assert np.all(np.array(states[-1].q) - q0 < 3.1 * 0.25 * 0.5 + 1e-9)


def test_slowdown_defaults_to_half_speed_and_ends_after_its_duration():
    limb = sim("light_limb", None)
    limb.fault("slowdown", {"duration_s": 0.2})
    move_all_joints(limb, 2.0)
    states = run(limb, 0.4)
    slow = abs(states[10].q[0] - states[9].q[0]) / DT
    assert slow == pytest.approx(3.1 / 2)
    assert not states[25].health & Health.SLOWED
    assert abs(states[-1].q[0] - states[-2].q[0]) / DT == pytest.approx(3.1)


# ---------------------------------------------------------------------- disassembly


def test_disassembly_makes_the_limb_unavailable_and_freezes_its_state():
    limb = sim()
    move_all_joints(limb, 0.4)
    run(limb, 0.02)
    limb.fault("disassembly", {})
    assert not limb.available
    states = run(limb, 0.5)
    assert all(s.t == states[0].t for s in states)
    assert states[-1].health & Health.DISASSEMBLED
    frozen_truth = limb.true_joint_positions()
    run(limb, 0.5)
    assert np.array_equal(limb.true_joint_positions(), frozen_truth)
    with pytest.raises(DriverError) as raised:
        limb.command(CommandMode.HOLD, {})
    assert raised.value.code == "unavailable"
    with pytest.raises(DriverError):
        limb.gripper(GripperAction.OPEN)


def test_reassemble_brings_the_limb_back_holding_where_it_was():
    limb = sim()
    move_all_joints(limb, 0.4)
    run(limb, 0.02)
    limb.fault("disassembly", {})
    run(limb, 0.3)
    stopped = limb.true_joint_positions()
    limb.fault("reassemble", {})
    assert limb.available
    states = run(limb, 0.5)
    assert states[-1].t == pytest.approx(limb.time)
    assert not states[-1].health & Health.DISASSEMBLED
    assert np.allclose(states[-1].q, stopped)
    assert states[-1].detail["mode"] == "hold"
    target = move_all_joints(limb, -0.2)
    assert run(limb, 0.5)[-1].q == pytest.approx(target.tolist())


def test_disassembly_with_a_duration_reassembles_by_itself():
    limb = sim()
    limb.fault("disassembly", {"duration_s": 0.25})
    run(limb, 0.2)
    assert not limb.available
    run(limb, 0.1)
    assert limb.available


# ---------------------------------------------------------------------- power off


def test_power_off_freezes_the_state_ignores_commands_and_the_limb_falls():
    limb = sim()
    run(limb, 0.05)
    last = limb.state()
    limb.fault("power_off", {})
    limb.command(CommandMode.JOINT_POSITION, {"q": [0.5, 0.5, 0.5]})
    states = run(limb, 2.0)
    assert all(s.t == last.t and s.q == last.q for s in states)
    assert states[-1].health & Health.POWER_OFF
    assert states[-1].detail["ignored_commands"] == 1
    assert np.allclose(limb.true_joint_positions(), SLUMPED, atol=1e-3)


def test_when_power_returns_the_state_jumps_to_the_fallen_pose_and_commands_work_again():
    limb = sim()
    home = limb.state().q
    limb.fault("power_off", {})
    run(limb, 2.0)
    limb.fault("power_on", {})
    state = run(limb, DT)[-1]
    assert not state.health & Health.POWER_OFF
    assert np.allclose(state.q, SLUMPED, atol=1e-3)
    assert state.detail["mode"] == "hold"
    assert np.allclose(run(limb, 0.5)[-1].q, state.q)
    limb.command(CommandMode.JOINT_POSITION, {"q": list(home)})
    assert run(limb, 1.0)[-1].q == pytest.approx(home)


def test_power_off_with_a_duration_comes_back_by_itself_after_falling():
    limb = sim()
    limb.fault("power_off", {"duration_s": 0.5})
    states = run(limb, 0.6)
    assert states[40].health & Health.POWER_OFF
    assert not states[-1].health & Health.POWER_OFF
    assert np.linalg.norm(np.array(states[-1].q) - limb.state().q) == 0.0
    fallen = np.array(states[-1].q)
    home = np.array(SPECS["moonbot_zero"].limb("leg_0").postures["home"])
    assert np.linalg.norm(fallen - SLUMPED) < 0.2 * np.linalg.norm(home - SLUMPED)


def test_a_blocked_joint_does_not_fall_when_the_power_is_cut():
    limb = sim()
    home = limb.state().q
    limb.fault("blockage", {"joints": [2]})
    limb.fault("power_off", {})
    run(limb, 2.0)
    truth = limb.true_joint_positions()
    assert truth[2] == home[2]
    assert truth[1] == pytest.approx(SLUMPED[1], abs=1e-3)


# ---------------------------------------------------------------------- IK error


def test_ik_error_makes_ee_pose_commands_fail_until_it_ends():
    limb = sim("heavy_limb", None)
    limb.fault("ik_error", {"duration_s": 0.5})
    for _ in range(2):
        with pytest.raises(DriverError, match="ik_error") as raised:
            limb.command(CommandMode.EE_POSE, ee_pose_payload(limb, (0.0, 0.0, 0.01)))
        assert raised.value.code == "ik_failed"
        states = run(limb, 0.1)
        assert states[-1].health & Health.IK_FAILED
        assert states[-1].q == states[0].q
    run(limb, 0.4)
    limb.command(CommandMode.EE_POSE, ee_pose_payload(limb, (0.0, 0.0, 0.01)))
    assert not run(limb, 0.1)[-1].health & Health.IK_FAILED


def test_ik_error_with_a_count_fails_only_that_many_commands():
    limb = sim("heavy_limb", None)
    limb.fault("ik_error", {"count": 1})
    with pytest.raises(DriverError):
        limb.command(CommandMode.EE_POSE, ee_pose_payload(limb, (0.0, 0.0, 0.01)))
    limb.command(CommandMode.EE_POSE, ee_pose_payload(limb, (0.0, 0.0, 0.01)))
    assert run(limb, DT)[-1].detail["faults"] == []


# ---------------------------------------------------------------------- clear, schedule, errors


def test_clear_ends_every_fault():
    limb = sim()
    for kind in ("blockage", "slowdown", "power_off", "ik_error", "disassembly"):
        limb.fault(kind, {})
    run(limb, 0.1)
    assert limb.state().health & Health.DISASSEMBLED
    limb.fault("clear", {})
    state = run(limb, DT)[-1]
    assert limb.available
    assert state.health == Health.OK
    assert state.detail["faults"] == []


def test_a_new_fault_of_the_same_kind_replaces_the_old_one():
    limb = sim()
    limb.fault("blockage", {"joints": [0], "duration_s": 0.1})
    limb.fault("blockage", {"joints": [1]})
    q0 = limb.state().q
    move_all_joints(limb, 0.3)
    q = run(limb, 0.5)[-1].q
    assert q[0] != q0[0]
    assert q[1] == q0[1]


def test_scheduled_faults_start_at_their_exact_time_even_inside_a_step():
    faults = (ScheduledFault(0.05, "blockage", {"duration_s": 0.1}),)
    limb = sim("light_limb", None, faults=faults)
    q0 = np.array(limb.state().q)
    target = move_all_joints(limb, 1.0)
    q = [np.array(s.q) for s in run(limb, 1.0, dt=0.03)]
    # The command acts from the first step (no step of lag); the joints move at 3.1 rad/s
    # until the blockage at 0.05 s, and stand still until it ends at 0.15 s.
    assert q[1][0] - q0[0] == pytest.approx(0.05 * 3.1)
    assert np.array_equal(q[2], q[4])
    assert q[-1] == pytest.approx(target)


def test_scheduled_power_loss_then_return_shows_the_slumped_pose():
    faults = (ScheduledFault(0.2, "power_off", {"duration_s": 1.5}),)
    limb = sim(faults=faults)
    states = run(limb, 2.0)
    assert states[50].health & Health.POWER_OFF
    assert np.allclose(states[-1].q, SLUMPED, atol=1e-3)


@pytest.mark.parametrize(
    ("kind", "params", "words"),
    [
        ("earthquake", {}, "valid: blockage, slowdown, disassembly, reassemble, power_off"),
        ("slowdown", {"factor": 1.5}, "factor"),
        ("slowdown", {"factor": "fast"}, "factor"),
        ("blockage", {"joints": [7]}, "joints"),
        ("blockage", {"joints": ["elbow"]}, "valid: indices 0..2 or names"),
        ("blockage", {"joints": []}, "joints"),
        ("power_off", {"duration_s": -1.0}, "duration_s"),
        ("ik_error", {"count": 0}, "count"),
        ("reassemble", {"duration_s": 1.0}, "no parameter 'duration_s'"),
        ("blockage", {"speed": 1.0}, "no parameter 'speed'; valid: joints, duration_s"),
    ],
)
def test_bad_faults_are_refused_with_a_message_naming_the_problem(kind, params, words):
    limb = sim()
    with pytest.raises(DriverError, match=words) as raised:
        limb.fault(kind, params)
    assert raised.value.code == ("unknown_fault" if kind == "earthquake" else "bad_value")
    assert raised.value.field == ("kind" if kind == "earthquake" else "params")  # the reply's
    assert limb.state().detail["faults"] == []


def test_a_bad_scheduled_fault_is_refused_when_the_limb_is_made():
    with pytest.raises(DriverError, match="factor"):
        sim(faults=(ScheduledFault(1.0, "slowdown", {"factor": 2.0}),))
