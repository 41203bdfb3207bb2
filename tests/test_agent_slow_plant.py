"""Agents whose driver misbehaves: too slow for its rate, or a ``command`` that raises.

A driver whose ``advance`` takes 20 ms served at ``--rate 1000`` cannot be updated 1000 times a
second. The agent used to serve one request per update then (the next tick's deadline being
long past), so a mission's commands queued up and reached the limb seconds late, later and
later. Requests are counted against the driver's updates, not timed.

A driver whose ``command`` raises had every command logged with its traceback.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import numpy.typing as npt
import pytest
from raw_client import raw_sockets

from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.transport import PlantAgent

pytestmark = pytest.mark.timeout(60)

#: How long each of the slow driver's joint reads takes [s].
READ_S = 0.02
#: Requests sent in one burst.
BURST = 40


class SlowBus(HardwareDriver):
    """The light limb whose joint reads take :data:`READ_S`, counting them."""

    driver_name = "slow_bus"

    def __init__(self) -> None:
        super().__init__("light_limb")
        self.q = np.array(self.tracker.limb.postures["home"], dtype=np.float64)
        self.reads = 0
        self._lock = threading.Lock()

    def read_joints(self) -> JointReading:
        time.sleep(READ_S)
        with self._lock:
            self.reads += 1
        return JointReading(self.q.copy(), np.zeros_like(self.q))

    def write_joint_targets(self, q: npt.NDArray[np.float64]) -> None:
        self.q = np.array(q, dtype=np.float64)

    def power_state(self) -> bool:
        return True

    def read_count(self) -> int:
        """How many reads so far (from another thread)."""
        with self._lock:
            return self.reads


def test_an_agent_slower_than_its_rate_answers_a_burst_within_a_few_updates(
    make_agent: Callable[..., PlantAgent], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="limbtree.transport.agent")
    driver = SlowBus()
    agent = make_agent(driver, clock="real", stream_rate_hz=1000.0)
    with raw_sockets(agent) as (dealer, _):
        dealer.send(msgpack.packb({"v": 2, "type": "ping", "seq": 1}))
        assert msgpack.unpackb(dealer.recv())["type"] == "ping_reply"
        before = driver.read_count()
        for seq in range(2, BURST + 2):
            dealer.send(msgpack.packb({"v": 2, "type": "ping", "seq": seq}))
        replies: list[dict[str, Any]] = [msgpack.unpackb(dealer.recv()) for _ in range(BURST)]
        updates = driver.read_count() - before
    assert [r["seq"] for r in replies] == list(range(2, BURST + 2))
    # One request per update took BURST updates; all of them fit in the first few.
    assert updates <= 5, f"{BURST} pings took {updates} updates of the slow driver"
    assert any(
        "longer than the 1.0 ms period of its 1000 Hz rate" in r.getMessage()
        and "lower --rate" in r.getMessage()
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]


class RefusingArm(SlowBus):
    """The light limb whose driver's ``command`` raises (not a ``DriverError``)."""

    def read_joints(self) -> JointReading:
        return JointReading(self.q.copy(), np.zeros_like(self.q))

    def command(self, mode: Any, payload: Any) -> None:
        raise RuntimeError("servo controller rejected the packet")


def test_a_driver_whose_command_raises_is_logged_once_not_per_command(
    make_agent: Callable[..., PlantAgent], caplog: pytest.LogCaptureFixture
) -> None:
    # Each command got its own "request failed inside the agent" and traceback: 100 a
    # second from a mission. Now the first failure is logged with its traceback, then a
    # summary every 5 s of agent time while they go on (none here: the clock is stepped).
    caplog.set_level(logging.WARNING, logger="limbtree.transport.agent")
    agent = make_agent(RefusingArm(), clock="sim")
    with raw_sockets(agent) as (dealer, _):
        dealer.send(msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 0.01}))
        assert msgpack.unpackb(dealer.recv())["type"] == "step_reply"
        for seq in range(2, BURST + 2):
            dealer.send(msgpack.packb({"v": 2, "type": "command", "seq": seq, "mode": "hold"}))
        replies = [msgpack.unpackb(dealer.recv()) for _ in range(BURST)]
    assert {(r["type"], r["code"]) for r in replies} == {("error", "internal")}
    assert "servo controller rejected the packet" in replies[-1]["message"]
    logged = [r for r in caplog.records if r.name == "limbtree.transport.agent"]
    assert len(logged) == 1, [r.getMessage() for r in logged]
    assert logged[0].exc_info is not None
    assert "its command requests fail at t=0.010 s (RuntimeError: servo controller " in (
        logged[0].getMessage()
    )
