"""A hardware limb whose bus fails is not driven blind.

Found by review: while ``read_joints`` raised, the agent went on writing setpoints towards the
commanded target (the limb moved without feedback at full speed), accepted new commands, set
no health flag, and logged one line for the first outage and nothing for the next.

Now (``HardwareDriver``): from the first failed read or write no setpoint goes out; the state
says ``BUS_FAULT`` with ``detail["bus_fault"]``; commands and gripper actions are refused
with ``internal`` naming the failure; when the bus works again the limb holds where it is
until commanded; each outage is logged once, with a summary every few seconds and its
recovery. The agent refuses commands the same way while a plant's updates raise, and logs
each such outage once with its recovery.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import pytest
from fake_driver import FakeDriver, free_port_pair, wait_until

from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.transport import ConfigError, Health, LimbAgent, LimbClient, RemoteError
from limbtree.transport.driver import CommandMode, DriverError, GripperAction

pytestmark = pytest.mark.timeout(60)

LIGHT = load_robot("light_limb", [builtin_robot_dir()])
DT = 0.01
UNPLUGGED = "serial cable unplugged"
WRITE_FAILED = "write failed"

MakeAgent = Callable[..., LimbAgent]
MakeClient = Callable[..., LimbClient]


class FlakyBus(HardwareDriver):
    """Servos that reach each setpoint at once, over a bus the test makes fail.

    Attributes:
        read_error: while set, ``read_joints`` raises ``OSError`` with this message.
        write_error: while set, ``write_joint_targets`` raises ``OSError`` with this message.
        nan: while True, ``read_joints`` reads NaN.
        power_error: while set, ``power_state`` raises ``OSError`` with this message.
        written: the setpoints that went through [rad].
        refused: the setpoints whose write raised [rad].
        failed_reads: how many reads raised (or read NaN).
        blind_writes: setpoints written while ``read_error`` or ``nan`` is set and a read
            has failed already: written without feedback.
    """

    driver_name = "flaky_bus"

    def __init__(self) -> None:
        super().__init__(LIGHT)
        self.q = np.array(self.tracker.limb.postures["home"], dtype=np.float64)
        self.read_error: str | None = None
        self.write_error: str | None = None
        self.nan = False
        self.power_error: str | None = None
        self.written: list[np.ndarray] = []
        self.refused: list[np.ndarray] = []
        self.failed_reads = 0
        self.blind_writes = 0

    def read_joints(self) -> JointReading:
        if self.read_error is not None:
            self.failed_reads += 1
            raise OSError(self.read_error)
        if self.nan:
            self.failed_reads += 1
            return JointReading(np.full_like(self.q, np.nan), np.zeros_like(self.q))
        return JointReading(self.q.copy(), np.zeros_like(self.q))

    def write_joint_targets(self, q: np.ndarray) -> None:
        if (self.read_error is not None or self.nan) and self.failed_reads:
            self.blind_writes += 1
        if self.write_error is not None:
            self.refused.append(np.array(q))
            raise OSError(self.write_error)
        self.written.append(np.array(q))
        self.q = np.array(q)

    def power_state(self) -> bool:
        if self.power_error is not None:
            raise OSError(self.power_error)
        return True


def run(driver: HardwareDriver, seconds: float) -> None:
    start = driver.time
    for k in range(1, round(seconds / DT) + 1):
        driver.advance(start + k * DT)


def far_target(driver: FlakyBus) -> list[float]:
    """A joint target 1 rad from home on every joint (0.3 s away at 3.1 rad/s)."""
    chain = LIGHT.chain()
    return np.clip(driver.q + 1.0, chain.lower, chain.upper).tolist()


def moving_driver() -> FlakyBus:
    """A driver 0.1 s into a joint move towards :func:`far_target`."""
    driver = FlakyBus()
    driver.advance(0.0)
    driver.command(CommandMode.JOINT_POSITION, {"q": far_target(driver)})
    run(driver, 0.1)
    return driver


# --- the driver ------------------------------------------------------------------------------


def test_from_the_first_failed_read_no_setpoint_is_written_and_the_state_stops_updating() -> None:
    driver = moving_driver()
    before = driver.state()
    driver.read_error = UNPLUGGED
    run(driver, 1.0)
    assert driver.failed_reads == 100
    assert driver.blind_writes == 0  # not one setpoint towards the target
    state = driver.state()
    assert (state.t, state.q) == (before.t, before.q)
    assert state.health & Health.BUS_FAULT
    fault = state.detail["bus_fault"]
    assert fault["call"] == "read_joints"
    assert fault["since"] == pytest.approx(0.11)
    assert fault["error"] == "OSError: serial cable unplugged"
    assert fault["failed_ticks"] == 100


def test_while_reads_fail_commands_and_gripper_actions_are_refused_as_internal() -> None:
    driver = moving_driver()
    driver.read_error = UNPLUGGED
    run(driver, 0.5)
    expected = (
        r"limb 'arm' \(light_limb\): its joint reads fail since t=0\.11 s \(OSError: serial "
        r"cable unplugged; 50 failed ticks\); it holds; commands are refused until joint "
        r"reads succeed"
    )
    for mode, payload in (
        (CommandMode.JOINT_POSITION, {"q": [0.0] * 7}),
        (CommandMode.HOLD, {}),
        (CommandMode.EE_TWIST, {"twist": [0.01, 0, 0, 0, 0, 0]}),
    ):
        with pytest.raises(DriverError, match=expected) as refused:
            driver.command(mode, payload)
        assert refused.value.code == "internal"
    with pytest.raises(DriverError, match=expected) as refused:
        driver.gripper(GripperAction.CLOSE)
    assert refused.value.code == "internal"
    assert driver.state().gripper == "open"


def test_when_reads_succeed_again_the_limb_holds_where_it_is_until_commanded() -> None:
    driver = moving_driver()
    driver.read_error = UNPLUGGED
    run(driver, 0.5)
    driver.read_error = None
    where = driver.q.copy()
    writes = len(driver.written)
    run(driver, 1.0)
    after = np.array(driver.written[writes:])
    assert len(after) == 100
    assert np.allclose(after, where)  # holding, not resuming the old target
    state = driver.state()
    assert not state.health & Health.BUS_FAULT
    assert "bus_fault" not in state.detail
    assert state.detail["mode"] == "hold"
    assert np.allclose(state.q, where)
    target = far_target(driver)
    driver.command(CommandMode.JOINT_POSITION, {"q": target})
    run(driver, 1.0)
    assert np.allclose(driver.state().q, target)


def test_a_failing_write_stops_the_limb_flags_it_and_refuses_commands_until_one_succeeds() -> None:
    driver = moving_driver()
    where = driver.q.copy()
    driver.write_error = WRITE_FAILED
    run(driver, 0.5)
    # The first refused write was the step towards the target; every later one holds the
    # measured joints: nothing is computed from the old goal any more.
    assert len(driver.refused) == 50
    assert np.allclose(driver.refused[1:], where)
    state = driver.state()
    assert state.health & Health.BUS_FAULT
    assert state.detail["bus_fault"]["call"] == "write_joint_targets"
    assert state.t == pytest.approx(0.6)  # reads work: the state goes on updating
    expected = (
        r"its setpoint writes fail since t=0\.11 s \(OSError: write failed; 50 failed "
        r"ticks\); it holds; commands are refused until setpoint writes succeed"
    )
    with pytest.raises(DriverError, match=expected) as refused:
        driver.command(CommandMode.JOINT_POSITION, {"q": far_target(driver)})
    assert refused.value.code == "internal"
    driver.write_error = None
    run(driver, 0.5)
    assert np.allclose(driver.q, where)
    state = driver.state()
    assert not state.health & Health.BUS_FAULT
    assert state.detail["mode"] == "hold"
    driver.command(CommandMode.HOLD, {})


def test_each_outage_is_logged_once_with_summaries_and_its_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="limbtree.robots.driver")
    driver = moving_driver()

    def lines() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == "limbtree.robots.driver"]

    # A long outage: its first failure with the exception, a summary every 5 s, the recovery.
    driver.read_error = UNPLUGGED
    run(driver, 12.0)
    driver.read_error = None
    run(driver, 0.1)
    records = lines()
    assert len(records) == 4  # the failure, at 5 s and 10 s a summary, the recovery
    first = records[0]
    assert first.levelno == logging.ERROR and first.exc_info is not None
    assert re.fullmatch(
        r"limb 'arm' \(light_limb\): its joint reads fail at t=0\.110 s \(OSError: serial "
        r"cable unplugged\); it holds and commands are refused until they succeed",
        first.getMessage(),
    )
    assert all("still fail" in r.getMessage() for r in records[1:-1])
    assert records[-1].getMessage() == (
        "limb 'arm' (light_limb): its joint reads succeed again after 1200 failed ticks, "
        "12.00 s (since t=0.110 s); it holds where it is until commanded"
    )
    # A second, short outage is logged again, not silenced by the first.
    caplog.clear()
    driver.write_error = WRITE_FAILED
    run(driver, 3.0)
    driver.write_error = None
    run(driver, 0.1)
    messages = [r.getMessage() for r in lines()]
    assert len(messages) == 2
    assert "its setpoint writes fail at t=12.210 s (OSError: write failed)" in messages[0]
    assert "setpoint writes succeed again after 300 failed ticks, 3.00 s" in messages[1]


def test_a_flapping_bus_is_summarised_not_logged_tick_by_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="limbtree.robots.driver")
    driver = moving_driver()
    for k in range(1, 1201):  # 12 s: every other read fails
        driver.read_error = UNPLUGGED if k % 2 else None
        driver.advance(0.1 + k * DT)
    driver.read_error = None
    run(driver, 6.0)
    messages = [r.getMessage() for r in caplog.records if r.name == "limbtree.robots.driver"]
    # 600 outages in 12 s: three every 5 s logged with their ends, the others counted in the
    # next line logged, the last ones on their own 5 s after the last line.
    assert len(messages) == 19
    assert "more short outages" not in "".join(messages[:6])
    assert "(248 more short outages since t=0.170 s, 248 failed ticks in all" in messages[6]
    assert "(248 more short outages since t=5.190 s, 248 failed ticks in all" in messages[12]
    assert re.fullmatch(
        r"limb 'arm' \(light_limb\): 95 more short outages since t=10\.210 s, 95 failed ticks "
        r"in all, not logged one by one; the last: its joint reads: OSError: serial cable "
        r"unplugged; it holds where it is until commanded",
        messages[-1],
    )
    assert driver.bus_fault is None
    assert driver.state().detail["mode"] == "hold"


def test_a_failing_power_read_is_a_bus_outage_and_the_limb_then_holds_where_it_is() -> None:
    # power_state() is a bus read too ("P?" on the serial arm of docs/drivers.md). When it
    # raised, advance raised (the agent's plant updates failed, with no BUS_FAULT on the
    # limb), and once it worked again the limb went on to its old goal.
    driver = moving_driver()
    before = driver.state()
    written = len(driver.written)
    driver.power_error = "power register read timed out"
    run(driver, 0.5)
    assert len(driver.written) == written  # nothing written while it fails
    state = driver.state()
    assert (state.t, state.q) == (before.t, before.q)
    assert state.health & Health.BUS_FAULT and not state.health & Health.POWER_OFF
    assert state.detail["bus_fault"]["call"] == "read_joints"  # (the wire's two calls)
    assert state.detail["bus_fault"]["error"] == "OSError: power register read timed out"
    with pytest.raises(DriverError, match=r"its power reads fail since t=0\.11 s") as refused:
        driver.command(CommandMode.HOLD, {})
    assert refused.value.code == "internal"
    driver.power_error = None
    run(driver, 0.5)
    state = driver.state()
    assert not state.health & Health.BUS_FAULT
    assert state.q == before.q  # it holds where it is, not on towards the old goal
    driver.command(CommandMode.JOINT_POSITION, {"q": far_target(driver)})
    run(driver, 0.1)
    assert driver.state().q != before.q


def test_a_power_read_that_fails_in_a_command_refuses_it_as_internal() -> None:
    driver = moving_driver()
    driver.power_error = "power register read timed out"
    with pytest.raises(DriverError, match="its power reads fail") as refused:
        driver.command(CommandMode.HOLD, {})
    assert refused.value.code == "internal"
    assert driver.bus_fault is not None


def test_a_bus_that_fails_from_the_first_read_is_read_once_per_advance() -> None:
    # With no state yet, state() (which the agent asks after each advance) read the joints
    # again: two reads a tick on a failing bus, and failed_ticks counted twice the ticks.
    driver = FlakyBus()
    driver.read_error = UNPLUGGED
    for k in range(10):
        driver.advance(k * DT)
        with pytest.raises(DriverError, match="its joint reads fail") as refused:
            driver.state()
        assert refused.value.code == "internal"
    assert driver.failed_reads == 10
    assert driver.bus_fault is not None and driver.bus_fault.failed_ticks == 10


def test_a_reading_that_is_not_finite_is_a_failed_read() -> None:
    driver = moving_driver()
    driver.nan = True
    run(driver, 0.2)
    assert driver.failed_reads == 20
    assert driver.blind_writes == 0
    assert driver.state().health & Health.BUS_FAULT
    assert driver.state().detail["bus_fault"]["error"].startswith("DriverError: read_joints q")


# --- the agent -------------------------------------------------------------------------------


def test_a_sim_clock_agent_flags_the_step_replies_and_refuses_commands_as_internal(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    driver = FlakyBus()
    agent = make_agent(driver, clock="sim")
    client = make_client(agent.request_endpoint)
    client.command("joint_position", q=far_target(driver), timeout_s=5)
    client.step(0.1, timeout_s=5)
    driver.read_error = UNPLUGGED
    for k in range(2, 11):
        state = client.step(k * 0.1, timeout_s=5)
        assert state.health & Health.BUS_FAULT
    assert driver.failed_reads >= 9
    assert driver.blind_writes == 0
    with pytest.raises(RemoteError, match=r"its joint reads fail since t=0\.20 s") as refused:
        client.command("joint_position", q=[0.0] * 7, timeout_s=5)
    assert refused.value.code == "internal"
    driver.read_error = None
    where = driver.q.copy()
    state = client.step(1.1, timeout_s=5)
    assert not state.health & Health.BUS_FAULT
    state = client.step(2.0, timeout_s=5)
    assert np.allclose(state.q, where)
    client.command("hold", timeout_s=5)


def test_a_real_clock_agent_streams_the_flag_and_refuses_commands_while_reads_fail(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    now = [0.0]
    driver = FlakyBus()
    agent = make_agent(driver, clock="real", stream_rate_hz=100, time_source=lambda: now[0])
    client = make_client(agent.request_endpoint)
    client.command("joint_position", q=far_target(driver), timeout_s=5)
    now[0] = 0.02
    assert wait_until(lambda: len(driver.written) >= 2, 5)  # moving
    driver.read_error = UNPLUGGED
    now[0] = 0.04

    def health() -> Health:
        client.poll()
        state = client.state
        return Health.OK if state is None else state.health

    assert wait_until(lambda: health() & Health.BUS_FAULT, 5)
    with pytest.raises(RemoteError, match=r"its joint reads fail since t=0\.04 s") as refused:
        client.command("joint_position", q=[0.0] * 7, timeout_s=5)
    assert refused.value.code == "internal"
    now[0] = 1.0
    assert wait_until(lambda: driver.failed_reads >= 2, 5)
    assert driver.blind_writes == 0
    driver.read_error = None
    where = driver.q.copy()
    writes = len(driver.written)
    now[0] = 1.5
    assert wait_until(lambda: not health() & Health.BUS_FAULT, 5)
    assert np.allclose(driver.written[writes:], where)
    client.command("hold", timeout_s=5)


class FailingPoint(FakeDriver):
    """A :class:`FakeDriver` whose updates raise while ``error`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.error: Exception | None = None

    def advance(self, t: float) -> None:
        if self.error is not None:
            raise self.error
        super().advance(t)


def _command(agent: LimbAgent, seq: int) -> dict[str, Any]:
    payload = msgpack.packb(
        {"v": 2, "type": "command", "seq": seq, "mode": "joint_position", "q": [1.0, 1.0, 1.0]}
    )
    reply = agent._handle(payload)
    assert reply is not None
    answer: dict[str, Any] = msgpack.unpackb(reply)
    return answer


def test_a_real_clock_agent_refuses_commands_while_its_plant_fails_and_logs_each_outage_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="limbtree.transport.agent")
    driver = FailingPoint()
    agent = None
    for _ in range(5):
        try:
            agent = LimbAgent(driver, f"tcp://127.0.0.1:{free_port_pair()}", clock="real")
            break
        except ConfigError:
            continue
    assert agent is not None
    try:

        def lines() -> list[str]:
            return [r.getMessage() for r in caplog.records if r.name == "limbtree.transport.agent"]

        agent._tick(0.0)
        assert _command(agent, 1)["type"] == "command_reply"
        driver.error = RuntimeError("bus gone")
        for k in range(1, 1201):  # 12 s at 100 Hz
            agent._tick(k * DT)
        refusal = _command(agent, 2)
        assert refusal["type"] == "error" and refusal["code"] == "internal"
        assert refusal["message"].startswith(
            "the plant fails to update since t=0.01 s (RuntimeError: bus gone; 1200 failed ticks)"
        )
        driver.error = None
        agent._tick(12.01)
        assert _command(agent, 3)["type"] == "command_reply"
        messages = lines()
        assert len(messages) == 4  # the failure, at 5 s and 10 s a summary, the recovery
        assert messages[0] == (
            "plant agent: its plant's updates fail at t=0.010 s (RuntimeError: bus gone); its "
            "state is not published and commands are refused until they succeed"
        )
        assert messages[-1] == (
            "plant agent: its plant's updates succeed again after 1200 failed ticks, 12.00 s "
            "(since t=0.010 s); commands are taken again"
        )
        caplog.clear()
        driver.error = RuntimeError("bus gone again")
        for k in range(1202, 1502):
            agent._tick(k * DT)
        driver.error = None
        agent._tick(15.02)
        messages = lines()
        assert len(messages) == 2
        assert "updates fail at t=12.020 s (RuntimeError: bus gone again)" in messages[0]
        assert "succeed again after 300 failed ticks" in messages[1]
    finally:
        agent.close()
