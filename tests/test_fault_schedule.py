"""The runner's fault schedule (trees/faults.py): windows in whole ticks, and each fault's fate."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from limbtree.transport.errors import LimbUnavailableError, RemoteError
from limbtree.trees.errors import AgentError
from limbtree.trees.faults import FaultSchedule, ScheduledFault, duration_to, exact_tick
from limbtree.trees.report import RunLog
from limbtree.trees.stream import EventKind

RATES = [25, 30, 50, 60, 100, 120, 1000]


def test_exact_tick_reads_times_as_written_where_float_products_misround():
    assert math.ceil(0.28 * 25) == 8  # 0.28 * 25 is 7.000000000000001 in floats
    assert exact_tick(0.28, 25) == 7
    assert exact_tick(0.5, 30) == 15 and exact_tick(1.0, 30) == 30
    assert exact_tick(0.0, 1000) == 0


@given(st.sampled_from(RATES), st.integers(0, 10**7))
def test_exact_tick_of_a_time_in_milliseconds_is_the_integer_ceiling(rate, ms):
    assert exact_tick(ms / 1000, rate) == -(-ms * rate // 1000)


def test_a_window_is_at_least_one_tick_and_ends_on_the_tick_grid():
    assert ScheduledFault(0.5, "a", "blockage", 0.5).window(30) == (15, 30)
    assert ScheduledFault(0.01, "a", "blockage", 0.001).window(25) == (1, 2)
    assert ScheduledFault(1.0, "a", "blockage", None).window(25) == (25, None)


@given(
    st.sampled_from(RATES),
    st.integers(0, 200_000),
    st.integers(1, 50_000),
)
def test_duration_to_ends_within_the_step_to_the_end_tick_never_after(rate, k0, n):
    dt = 1.0 / rate
    start, end, before = k0 * dt, (k0 + n) * dt, (k0 + n - 1) * dt
    duration = duration_to(start, end)
    assert before < start + duration <= end
    assert start + math.nextafter(duration, math.inf) > end


class Agent:
    """Accepts faults, or refuses them with ``error`` while ``error`` is set."""

    def __init__(self):
        self.error = None
        self.calls = []

    def fault(self, limb, kind, timeout_s, **params):
        self.calls.append((limb, kind, params))
        if self.error is not None:
            raise self.error


def schedule(faults, agent, rate=25.0):
    lines = []
    return (
        FaultSchedule(faults, rate, lambda k: k / rate, {"a": agent}, 1.0, lines.append),
        lines,
    )


def run(book, ticks, agent=None, refuse_until=None, nominal=("a",)):
    """Tick the schedule; the agent refuses (unavailable) before tick ``refuse_until``."""
    out = []
    for k in range(ticks):
        events = []
        if agent is not None and refuse_until is not None:
            agent.error = (
                LimbUnavailableError(
                    "unavailable", "limb 'a' is disassembled", endpoint="tcp://x:1"
                )
                if k < refuse_until
                else None
            )
        book.inject(k, (k - 1) / 25 if k else 0.0, events)
        book.track(k, nominal, events)
        out += [(k, e.kind, e.fault) for e in events]
    return out


def test_a_fault_is_injected_at_its_tick_and_ends_once_at_its_end_tick():
    agent = Agent()
    book, _ = schedule([ScheduledFault(0.2, "a", "blockage", 0.4)], agent)
    assert run(book, 20) == [
        (5, EventKind.FAULT_INJECTED, "blockage"),
        (15, EventKind.FAULT_ENDED, "blockage"),
        (15, EventKind.FAULT_RECOVERED, "blockage"),
    ]
    ((_, _, params),) = agent.calls
    assert 0.16 + params["duration_s"] == pytest.approx(0.6, abs=1e-12)


def test_a_deferred_fault_gets_the_rest_of_its_window_and_keeps_its_end():
    agent = Agent()
    book, lines = schedule([ScheduledFault(0.2, "a", "power_off", 0.4)], agent)
    assert run(book, 20, agent, refuse_until=9) == [
        (5, EventKind.FAULT_DEFERRED, "power_off"),
        (9, EventKind.FAULT_INJECTED, "power_off"),
        (15, EventKind.FAULT_ENDED, "power_off"),
        (15, EventKind.FAULT_RECOVERED, "power_off"),
    ]
    assert len(agent.calls) == 5  # asked before ticks 5, 6, 7, 8 and 9
    assert agent.calls[-1][2]["duration_s"] == pytest.approx(0.6 - 8 / 25)
    assert any("deferred" in line for line in lines)


def test_a_fault_whose_window_passes_while_deferred_is_skipped_with_the_reason():
    agent = Agent()
    book, _ = schedule([ScheduledFault(0.2, "a", "power_off", 0.4)], agent)
    assert run(book, 20, agent, refuse_until=18) == [
        (5, EventKind.FAULT_DEFERRED, "power_off"),
        (15, EventKind.FAULT_SKIPPED, "power_off"),
    ]
    (skipped,) = book.skipped()
    assert "disassembled" in skipped["reason"] and book.summary() == []


def test_a_refusal_that_is_not_an_absence_is_recorded_once_and_not_retried():
    agent = Agent()
    agent.error = RemoteError("not_simulated", "this limb is not simulated", endpoint="tcp://x:1")
    book, _ = schedule([ScheduledFault(0.2, "a", "power_off", 0.4)], agent)
    assert run(book, 20) == [(5, EventKind.FAULT_REFUSED, "power_off")]
    assert len(agent.calls) == 1
    assert "not simulated" in book.skipped()[0]["reason"]


def test_a_fault_of_a_kind_in_force_replaces_it_and_the_older_one_ends_then():
    agent = Agent()
    faults = [
        ScheduledFault(0.2, "a", "blockage", 0.8),
        ScheduledFault(0.4, "a", "blockage", 0.2),
    ]
    book, _ = schedule(faults, agent)
    assert run(book, 30, nominal=()) == [
        (5, EventKind.FAULT_INJECTED, "blockage"),
        (10, EventKind.FAULT_ENDED, "blockage"),
        (10, EventKind.FAULT_INJECTED, "blockage"),
        (15, EventKind.FAULT_ENDED, "blockage"),
    ]
    first, second = book.summary()
    assert (first["injected_at_s"], first["ended_at_s"]) == (0.2, 0.4)
    assert (second["injected_at_s"], second["ended_at_s"]) == (0.4, 0.6)


def test_recovery_waits_for_the_end_and_for_the_skills():
    agent = Agent()
    book, lines = schedule([ScheduledFault(0.2, "a", "blockage", 0.4)], agent)
    out = run(book, 15, nominal=())  # ends at 15: not yet run
    assert out == [(5, EventKind.FAULT_INJECTED, "blockage")]
    events = []
    book.track(15, (), events)
    assert [e.kind for e in events] == [EventKind.FAULT_ENDED]
    events = []
    book.track(18, ("a",), events)
    assert [e.kind for e in events] == [EventKind.FAULT_RECOVERED]
    assert book.summary()[0]["recovered_at_s"] == 18 / 25
    assert "0.12 s after it ended" in lines[-1]


def test_a_fault_on_a_limb_no_agent_serves_stops_the_run_naming_the_limbs():
    book, _ = schedule([ScheduledFault(0.0, "b", "blockage", 0.4)], Agent())
    with pytest.raises(AgentError, match="limb b, which no agent serves; the agents serve a"):
        book.inject(0, 0.0, [])


def test_the_report_pairs_overlapping_faults_on_one_limb_by_their_kind():
    events = [
        {"kind": "fault_injected", "limb": "a", "fault": "blockage", "t": 1.0},
        {"kind": "fault_injected", "limb": "a", "fault": "power_off", "t": 1.5},
        {"kind": "fault_ended", "limb": "a", "fault": "power_off", "t": 2.0},
        {"kind": "fault_ended", "limb": "a", "fault": "blockage", "t": 3.0},
        {"kind": "fault_recovered", "limb": "a", "fault": "blockage", "t": 3.5},
    ]
    blockage, power_off = RunLog(events=events).disruptions()
    assert (blockage.fault, blockage.end, blockage.recovered) == ("blockage", 3.0, 3.5)
    assert (power_off.fault, power_off.end, power_off.recovered) == ("power_off", 2.0, None)


def test_faults_of_one_kind_due_on_one_tick_leave_only_the_last_one_injected():
    agent = Agent()
    faults = [
        ScheduledFault(0.2, "a", "power_off", 0.4),
        ScheduledFault(0.2, "a", "power_off", 0.1),
    ]
    book, _ = schedule(faults, agent)
    assert run(book, 20, nominal=()) == [
        (5, EventKind.FAULT_SKIPPED, "power_off"),
        (5, EventKind.FAULT_INJECTED, "power_off"),
        (8, EventKind.FAULT_ENDED, "power_off"),
    ]
    (reason,) = [f["reason"] for f in book.skipped()]
    assert "before it took effect" in reason
    assert [f["duration_s"] for f in book.summary()] == [0.1]
