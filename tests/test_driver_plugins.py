"""Hardware drivers from the user's own package: ``limbtree agent --driver module:Class``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_hardware import LoopbackArm

import limbtree.robots.factory as factory
from limbtree.robots.factory import (
    DriverOptionError,
    DriverStartError,
    UnknownDriverError,
    make_driver,
)
from limbtree.transport import LimbClient
from limbtree.transport.driver import CommandMode, Health

TESTS = Path(__file__).resolve().parent
PLUGIN = "fake_hardware:LoopbackArm"


def test_a_driver_is_loaded_by_its_import_path_and_built_with_its_options():
    driver = make_driver("light_limb", driver=PLUGIN, options={"power": "off"})
    assert type(driver).__name__ == "LoopbackArm" and driver.describe().driver == "loopback_arm"
    driver.advance(0.0)
    assert driver.state().health & Health.POWER_OFF


def test_a_registered_name_stands_for_its_import_path(monkeypatch):
    monkeypatch.setattr(factory, "registered_drivers", lambda: {"loopback": PLUGIN})
    assert isinstance(make_driver("light_limb", driver="loopback"), LoopbackArm)
    with pytest.raises(UnknownDriverError, match="valid drivers: sim, loopback"):
        make_driver("light_limb", driver="serial")


@pytest.mark.parametrize(
    ("driver", "words"),
    [
        ("serial_arm", "valid drivers: sim"),
        ("no_such_package.driver:Arm", "cannot import 'no_such_package.driver'"),
        ("fake_hardware:Nothing", "fake_hardware has no class 'Nothing'"),
        ("fake_hardware:HardwareDriver", "HardwareDriver is abstract"),
        ("limbtree.robots.sim:SimConfig", "has no LimbDriver class 'SimConfig'"),
    ],
)
def test_a_driver_that_cannot_be_found_says_why(driver, words):
    with pytest.raises(UnknownDriverError, match=words) as raised:
        make_driver("light_limb", driver=driver)
    assert raised.value.driver == driver


def test_options_the_driver_does_not_take_name_its_signature():
    with pytest.raises(DriverOptionError, match=r"LoopbackArm\(robot.*power.*voltage"):
        make_driver("light_limb", driver=PLUGIN, options={"voltage": "48"})


def test_a_driver_that_fails_to_start_is_named_with_its_error():
    with pytest.raises(DriverStartError, match="fake_hardware:LoopbackArm could not start: "
                       "ValueError: power must be on or off, got 'maybe'"):  # fmt: skip
        make_driver("light_limb", driver=PLUGIN, options={"power": "maybe"})


def test_a_driver_that_forgets_super_init_says_so_not_a_traceback():
    # It raised AttributeError: 'ForgetsSuper' object has no attribute '_tracker' from
    # deep in the agent's start, with a traceback.
    with pytest.raises(DriverStartError, match=r"fake_hardware:ForgetsSuper started but cannot "
                       r"describe its limb: AttributeError: .*ForgetsSuper.__init__ must call "
                       r"super\(\).__init__\(robot, limb\) first"):  # fmt: skip
        make_driver("light_limb", driver="fake_hardware:ForgetsSuper")


def test_a_constructor_that_does_not_take_the_robot_and_limb_says_how_it_is_called():
    # It said "multiple values for argument 'device'; give its settings with
    # --driver-option KEY=VALUE" to a user who had given device with --driver-option.
    with pytest.raises(DriverOptionError) as raised:
        make_driver("light_limb", driver="fake_hardware:TakesNoRobot", options={"device": "x"})
    message = str(raised.value)
    assert "TakesNoRobot('light_limb', None, device='x')" in message
    assert "its constructor is TakesNoRobot(device:" in message
    assert "take the robot and limb names first" in message
    assert "give its settings with --driver-option" not in message


def test_simulator_settings_are_refused_for_hardware_and_options_for_sim():
    from limbtree.robots.sim import SimConfig

    with pytest.raises(DriverOptionError, match="--driver sim"):
        make_driver("light_limb", driver=PLUGIN, config=SimConfig(flex=0.1))
    with pytest.raises(DriverOptionError, match="--sim-option"):
        make_driver("light_limb", driver="sim", options={"power": "on"})


def _agent(port: int, *args: str) -> subprocess.Popen[bytes]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, "-m", "limbtree", "agent", "--robot", "light_limb",
         "--bind", f"tcp://127.0.0.1:{port}", "--driver", PLUGIN, *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_limbtree_agent_serves_a_hardware_driver_from_the_command_line(free_port):
    port = free_port()
    process = _agent(port, "--driver-option", "power=on", "--rate", "200")
    try:
        with LimbClient(f"tcp://127.0.0.1:{port}") as client:
            assert client.describe(timeout_s=30.0).limb.driver == "loopback_arm"
            target = [0.1, -0.2, 0.1, 0.3, 0.0, 0.2, 0.0]
            client.send_command(CommandMode.JOINT_POSITION, q=target)
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                client.poll()
                state = client.state
                reached = state is not None and all(
                    abs(a - b) < 1e-6 for a, b in zip(state.q, target, strict=True)
                )
                if reached:
                    break
                time.sleep(0.01)
            else:
                pytest.fail(f"the limb did not reach {target}: {client.state}")
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_limbtree_agent_refuses_a_bad_driver_option_with_the_signature(free_port):
    process = _agent(free_port(), "--driver-option", "volts=48")
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 1
    assert b"limbtree agent: driver fake_hardware:LoopbackArm is built as LoopbackArm(" in out
