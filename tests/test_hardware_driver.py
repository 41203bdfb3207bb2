"""Tests of limbtree.robots.driver: the HardwareDriver base class over fake buses."""

import re
from pathlib import Path

import numpy as np
import pytest

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.transport.driver import CommandMode, DriverError, GripperAction, Health

LIGHT = load_robot("light_limb", [builtin_robot_dir()])
DRIVERS_MD = Path(__file__).resolve().parents[1] / "docs" / "drivers.md"


class FakeBus(HardwareDriver):
    """Servos that reach each setpoint at once; the test flips the power and reads the log."""

    driver_name = "fake_bus"

    def __init__(self, robot=LIGHT, **kwargs):
        super().__init__(robot, **kwargs)
        self.q = np.array(self.tracker.limb.postures["home"])
        self.powered = True
        self.written = []
        self.reads = 0
        self.n_values = self.tracker.n

    def read_joints(self):
        self.reads += 1
        return JointReading(self.q[: self.n_values].copy(), np.zeros(self.n_values))

    def write_joint_targets(self, q):
        self.written.append(np.array(q))
        self.q = np.array(q)

    def power_state(self):
        return self.powered


def run(driver, seconds, dt=0.01):
    start = driver.time
    for k in range(1, round(seconds / dt) + 1):
        driver.advance(start + k * dt)
    return driver.state()


def test_describe_comes_from_the_registry_with_the_drivers_name():
    description = FakeBus().describe()
    assert description.driver == "fake_bus"
    assert description.robot == "light_limb"
    assert [j.max_speed for j in description.joints] == [3.1] * 7
    assert CommandMode.JOINT_TORQUE not in description.command_modes
    assert description.has_gripper


def test_setpoints_stay_inside_the_limits_and_within_the_speed_limits():
    driver = FakeBus()
    driver.advance(0.0)
    driver.command(CommandMode.JOINT_POSITION, {"q": [5.0, -5.0, 5.0, -5.0, 5.0, -5.0, 5.0]})
    run(driver, 5.0)
    written = np.array(driver.written)
    chain = LIGHT.chain()
    assert np.all(written >= chain.lower) and np.all(written <= chain.upper)
    assert np.max(np.abs(np.diff(written, axis=0))) <= 3.1 * 0.01 * (1 + 1e-9)
    assert np.allclose(written[-1], np.clip([5.0, -5.0] * 3 + [5.0], chain.lower, chain.upper))
    assert driver.state().health & Health.JOINT_LIMIT


def test_ee_pose_goes_through_seeded_ik_and_the_state_reports_fk_of_the_joints():
    driver = FakeBus()
    start = Pose.from_array(driver.state().ee_poses["ee_link"])
    target = Pose(start.position + [0.05, 0.05, 0.0], start.quaternion)
    driver.command(CommandMode.EE_POSE, {"pose": target.as_array().tolist(), "ee": "ee_link"})
    state = run(driver, 2.0)
    assert Pose.from_array(state.ee_poses["ee_link"]).distance_to(target) < 1e-3
    assert state.detail["mode"] == "ee_pose"
    assert state.detail["ik_residual"] < 1e-8


def test_the_same_ik_seed_gives_the_same_setpoints():
    def trial():
        driver = FakeBus(ik_seed=11)
        driver.command(CommandMode.EE_POSE, {"pose": [0.3, 0.2, 0.3, 0.0, 1.0, 0.0, 0.0]})
        run(driver, 1.0)
        return np.array(driver.written)

    assert np.array_equal(trial(), trial())


def test_while_the_power_is_off_nothing_is_read_or_written_and_commands_are_ignored():
    driver = FakeBus()
    last = run(driver, 0.1)
    driver.powered = False
    writes, reads = len(driver.written), driver.reads
    driver.command(CommandMode.JOINT_POSITION, {"q": [0.3] * 7})
    driver.gripper(GripperAction.CLOSE)
    state = run(driver, 0.5)
    assert (len(driver.written), driver.reads) == (writes, reads)
    assert (state.t, state.q, state.gripper) == (last.t, last.q, "open")
    assert state.health & Health.POWER_OFF
    assert state.detail["ignored_commands"] == 2


def test_when_power_returns_the_driver_holds_the_measured_joints():
    driver = FakeBus()
    driver.command(CommandMode.JOINT_POSITION, {"q": [1.0] * 7})
    run(driver, 0.1)
    driver.powered = False
    run(driver, 0.1)
    driver.q = np.array([0.2] * 7)  # the limb fell while limp
    driver.powered = True
    state = run(driver, 0.5)
    assert state.q == (0.2,) * 7
    assert np.allclose(driver.written[-1], 0.2)
    assert state.detail["mode"] == "hold"
    assert not state.health & Health.POWER_OFF


def test_ee_twist_and_hold_work_on_hardware_too():
    driver = FakeBus()
    start = Pose.from_array(driver.state().ee_poses["ee_link"])
    driver.command(CommandMode.EE_TWIST, {"twist": [0.0, 0.0, 0.05, 0.0, 0.0, 0.0]})
    moved = Pose.from_array(run(driver, 1.0).ee_poses["ee_link"])
    assert moved.position - start.position == pytest.approx([0.0, 0.0, 0.05], abs=1e-3)
    driver.command(CommandMode.HOLD, {})
    assert run(driver, 0.5).q == driver.state().q


def test_a_bus_returning_the_wrong_number_of_joints_is_a_failed_read_refused_as_internal():
    driver = FakeBus()
    driver.n_values = 6
    driver.advance(0.0)  # a reading that cannot be used is no reading: nothing is written
    assert driver.written == []
    with pytest.raises(DriverError, match="7 finite numbers") as raised:
        driver.state()
    assert raised.value.code == "internal"


def test_a_driver_without_write_gripper_refuses_gripper_requests():
    driver = FakeBus()
    with pytest.raises(DriverError, match="write_gripper") as raised:
        driver.gripper(GripperAction.CLOSE)
    assert raised.value.code == "unsupported_mode"
    with pytest.raises(DriverError, match="valid: open, close"):
        driver.gripper("squeeze")


def test_hardware_refuses_faults_and_torque_and_is_always_available():
    driver = FakeBus()
    assert driver.available
    with pytest.raises(DriverError) as raised:
        driver.fault("power_off", {})
    assert raised.value.code == "not_simulated"
    with pytest.raises(DriverError) as raised:
        driver.command(CommandMode.JOINT_TORQUE, {"tau": [0.0] * 7})
    assert raised.value.code == "unsupported_mode"


def test_hardware_driver_is_abstract():
    with pytest.raises(TypeError, match="read_joints"):
        HardwareDriver(LIGHT)  # type: ignore[abstract]


# ---------------------------------------------------------------------- the docs example


class FakeSerialArm:
    """The imaginary serial arm of docs/drivers.md: one text line per request."""

    def __init__(self, q):
        self.q = list(q)
        self.power = True
        self.gripper = 0
        self._reply = b""

    def write(self, data):
        words = data.decode().split()
        if words == ["Q?"]:
            values = self.q + [0.0] * len(self.q)
            self._reply = ("Q " + " ".join(map(str, values)) + "\n").encode()
        elif words == ["P?"]:
            self._reply = b"P 1\n" if self.power else b"P 0\n"
        elif words[0] == "S":
            self.q = [float(w) for w in words[1:]]
        elif words[0] == "G":
            self.gripper = int(words[1])
        return len(data)

    def readline(self):
        reply, self._reply = self._reply, b""
        return reply


def docs_code_blocks():
    return re.findall(r"```python\n(.*?)```", DRIVERS_MD.read_text(), re.DOTALL)


def test_the_serial_arm_example_of_the_docs_runs_against_a_fake_serial_arm(capsys):
    example, usage = docs_code_blocks()[:2]
    port = FakeSerialArm(LIGHT.limb().postures["home"])
    namespace = {"port": port}
    exec(compile(example + usage, str(DRIVERS_MD), "exec"), namespace)
    driver = namespace["driver"]
    reached = Pose.from_array(driver.state().ee_poses["ee_link"])
    assert reached.distance_to(Pose((0.4, 0.0, 0.25), (0.0, 1.0, 0.0, 0.0))) < 1e-3
    assert driver.describe().driver == "serial_arm"
    driver.gripper(GripperAction.CLOSE)
    assert port.gripper == 1
    port.power = False
    driver.advance(1.5)
    assert driver.state().health & Health.POWER_OFF
    assert "ee_link" in capsys.readouterr().out


def test_a_late_advance_moves_the_setpoint_at_most_a_twentieth_of_a_second_of_motion():
    # A read that blocked 2 s (or a stalled loop): the next setpoint was 2 s of motion at
    # the speed limits from the last, 6.2 rad for the light limb, which a position servo
    # covers at its own speed. It now covers max_setpoint_step_s (1/20 s) at most.
    driver = FakeBus()
    driver.advance(0.0)
    driver.command(CommandMode.JOINT_POSITION, {"q": [1.5] * 7})
    driver.advance(0.01)
    driver.advance(2.01)
    jumps = np.max(np.abs(np.diff(np.array(driver.written), axis=0)), axis=1)
    assert np.all(jumps <= 3.1 * 0.05 * (1 + 1e-9)), jumps
    assert jumps[-1] > 0.0  # (it still moves on)
    assert HardwareDriver.max_setpoint_step_s == 0.05


def test_the_simulated_limb_and_motion_capture_examples_of_the_docs_run():
    # The motion capture example used a time ``t`` it never set: a NameError as written.
    simulated, capture = docs_code_blocks()[2:4]
    namespace: dict[str, object] = {}
    exec(compile(simulated + capture, str(DRIVERS_MD), "exec"), namespace)
    poses = namespace["poses"]
    assert set(poses) == {"ee", "wheel"}
    assert all(len(pose) == 7 for pose in poses.values())


@pytest.mark.parametrize("name", ["make_driver", "make_plant"])
def test_the_factory_signatures_in_the_docs_are_the_real_ones(name):
    # docs/drivers.md gave make_driver's limb no default and both without their keyword-only
    # marker; make_plant lacked plant= and physics=.
    import inspect

    import limbtree.robots.factory as factory

    signature = inspect.signature(getattr(factory, name))
    parts = []
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        default = parameter.default
        if default is parameter.empty:
            parts.append(parameter.name)
        else:
            parts.append(f"{parameter.name}={default!r}".replace("'", '"'))
    documented = f"{name}({', '.join(parts)})"
    text = " ".join(DRIVERS_MD.read_text().split())
    assert documented in text, documented
