"""The runner's fault schedule: which tick injects each scheduled fault, ends it, recovers it.

Windows are decided in whole ticks, never by comparing float times. A fault scheduled at
``at_s`` for ``duration_s`` owns the ticks ``[k0, k1)`` with ``k0 = ceil(at_s * rate_hz)`` and
``k1 = ceil((at_s + duration_s) * rate_hz)`` computed on exact fractions of the numbers as
written (``0.1`` is one tenth), and at least one tick long. The runner asks the fault's agent
to inject it just before stepping to tick ``k0`` (the agent's plant is then at the previous
tick's time), with a duration that ends it exactly at tick ``k1``'s time; the limb's health
shows the fault from tick ``k0`` and no longer at tick ``k1``, the tick that records
``fault_ended``.

A fault the agent cannot take when it is due (its limb is disassembled, or the agent does
not answer) is deferred: ``fault_deferred`` once, then the runner asks again before every
tick and injects it at the first tick the agent accepts it, for what is left of its window:
it still ends at tick ``k1``. When the window is over first, the fault is skipped
(``fault_skipped`` at tick ``k1``, with the reason). Any other refusal is final
(``fault_refused``). A fault of a kind already in force on the limb replaces it in the plant,
so the older one is recorded ended (``fault_ended``, "replaced by ...") at the newer one's
injection tick (or, when both were due on that same tick, skipped: it never took effect).
``fault_recovered`` follows ``fault_ended``, at the first tick from then on
where the skills drive the limb on its trajectory again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from limbtree.transport.errors import TransportError
from limbtree.trees.errors import AgentError
from limbtree.trees.lockstep import goes_stale
from limbtree.trees.stream import EventKind, RunEvent

__all__ = ["FaultAgent", "FaultSchedule", "ScheduledFault", "duration_to", "exact_tick"]


def exact_tick(time_s: float, rate_hz: float) -> int:
    """The first tick at or after ``time_s``: ``ceil(time_s * rate_hz)`` on exact fractions.

    Each number is taken as its shortest decimal form (what a mission file says), so
    ``exact_tick(0.28, 25)`` is 7, where ``math.ceil(0.28 * 25)`` is 8.

    Args:
        time_s: a mission time [s], >= 0.
        rate_hz: the tick rate [Hz], > 0.
    """
    return math.ceil(Fraction(repr(float(time_s))) * Fraction(repr(float(rate_hz))))


def duration_to(start_s: float, end_s: float) -> float:
    """The longest duration that takes a plant at ``start_s`` no further than ``end_s`` [s].

    ``end_s - start_s`` rounds, and the agent adds the duration back to its plant's time. The
    result is the largest float with ``start_s + duration <= end_s`` in floats: the fault
    ends at ``end_s`` exactly when a float sum can land there, otherwise one ulp (about
    1e-13 s) before it, so it always ends within the step to ``end_s``, never a step late.

    Args:
        start_s: the plant's time now [s].
        end_s: when the fault must end [s], > ``start_s``.
    """
    duration = end_s - start_s
    while start_s + duration > end_s:
        duration = math.nextafter(duration, -math.inf)
    longer = math.nextafter(duration, math.inf)
    while start_s + longer <= end_s:
        duration, longer = longer, math.nextafter(longer, math.inf)
    return duration


@dataclass
class ScheduledFault:
    """A fault the runner injects at a mission time, and what became of it.

    Attributes:
        at: scheduled injection time [s].
        limb: the limb's name.
        kind: the fault kind (``power_off``, ...).
        duration: how long it lasts [s], or None for the rest of the run.
        params: the fault's parameters.
        injected: whether the agent accepted it.
        recovered_at: when the mission drove the limb on its trajectory again after the
            fault ended [s], or None.
        injected_at: the time of the tick from which it was in force [s], or None.
        ended_at: the time of the first tick it was no longer in force [s], or None.
        skipped: why it was never injected (deferred past its window, or refused), or None.
        start_tick: its window's first tick (set by :class:`FaultSchedule`).
        end_tick: the first tick after its window, or None (set by :class:`FaultSchedule`).
        deferred: why the agent could not take it when it was first due, or None.
        injected_tick: the tick it was injected for, or -1.
        event: its ``fault_injected`` event, or None.
    """

    at: float
    limb: str
    kind: str
    duration: float | None
    params: Mapping[str, Any] = field(default_factory=dict)
    injected: bool = False
    recovered_at: float | None = None
    injected_at: float | None = None
    ended_at: float | None = None
    skipped: str | None = None
    start_tick: int = -1
    end_tick: int | None = None
    deferred: str | None = None
    injected_tick: int = -1
    event: RunEvent | None = None

    @property
    def end(self) -> float:
        """When the fault is scheduled to end [s] (infinity if it never does)."""
        return math.inf if self.duration is None else self.at + self.duration

    def window(self, rate_hz: float) -> tuple[int, int | None]:
        """The ticks ``[k0, k1)`` the fault owns at ``rate_hz`` (``k1`` None: no end)."""
        start = exact_tick(self.at, rate_hz)
        if self.duration is None:
            return start, None
        end = math.ceil(
            (Fraction(repr(float(self.at))) + Fraction(repr(float(self.duration))))
            * Fraction(repr(float(rate_hz)))
        )
        return start, max(end, start + 1)


class FaultAgent(Protocol):
    """What the schedule needs of an agent: injecting a fault into one of its limbs."""

    def fault(self, limb: str, kind: str, timeout_s: float, **params: Any) -> object:
        """Inject a fault; raises TransportError when the agent refuses or does not answer."""


class FaultSchedule:
    """Injects scheduled faults on the tick grid and records what became of each.

    Args:
        faults: the faults to inject.
        rate_hz: the tick rate [Hz].
        tick_time: the mission time of a tick index [s] (the run clock's).
        agents: the agent serving each limb.
        timeout_s: how long a ``fault`` request may wait [s].
        message: where progress lines go.
    """

    def __init__(
        self,
        faults: Sequence[ScheduledFault],
        rate_hz: float,
        tick_time: Callable[[int], float],
        agents: Mapping[str, FaultAgent],
        timeout_s: float,
        message: Callable[[str], None],
    ) -> None:
        for fault in faults:
            fault.start_tick, fault.end_tick = fault.window(rate_hz)
        self.faults = sorted(faults, key=lambda f: f.start_tick)
        self.tick_time = tick_time
        self.agents = agents
        self.timeout_s = timeout_s
        self.message = message
        self._pending = list(self.faults)
        self._in_force: list[ScheduledFault] = []
        self._ended: list[ScheduledFault] = []

    def inject(self, tick: int, plant_t: float, events: list[RunEvent]) -> None:
        """Inject the faults due at ``tick``, just before the agents are stepped to it.

        Args:
            tick: the index of the tick about to be stepped to.
            plant_t: the time the agents' plants are at now (the last step) [s].
            events: the tick's events, to add to.

        Raises:
            AgentError: when a fault names a limb no agent serves.
        """
        t = self.tick_time(tick)
        still: list[ScheduledFault] = []
        for fault in self._pending:
            if fault.start_tick > tick:
                still.append(fault)
                continue
            if fault.end_tick is not None and tick >= fault.end_tick:
                reason = f"its window ended while the agent could not take it ({fault.deferred})"
                self._skip(fault, t, reason, events)
                continue
            if not self._try(fault, tick, t, plant_t, events):
                still.append(fault)
        self._pending = still

    def _try(
        self, fault: ScheduledFault, tick: int, t: float, plant_t: float, events: list[RunEvent]
    ) -> bool:
        """Ask the agent to inject ``fault`` now; False when it is deferred."""
        params = dict(fault.params)
        if fault.end_tick is not None:
            # Ends exactly at tick end_tick's time: the plant is at plant_t now.
            params["duration_s"] = duration_to(plant_t, self.tick_time(fault.end_tick))
        agent = self.agents.get(fault.limb)
        if agent is None:
            raise AgentError(
                (fault.limb,),
                f"a fault is scheduled on limb {fault.limb}, which no agent serves; "
                f"the agents serve {', '.join(sorted(self.agents))}",
            )
        try:
            agent.fault(fault.limb, fault.kind, self.timeout_s, **params)
        except TransportError as exc:
            if goes_stale(exc):
                if fault.deferred is None:
                    fault.deferred = str(exc)
                    events.append(
                        RunEvent(EventKind.FAULT_DEFERRED, t, fault.limb, fault.kind, str(exc))
                    )
                    self.message(
                        f"t={t:7.2f} s  {fault.kind} on {fault.limb} deferred "
                        f"(retried every tick): {exc}"
                    )
                return False
            events.append(RunEvent(EventKind.FAULT_REFUSED, t, fault.limb, fault.kind, str(exc)))
            fault.skipped = f"the agent refused it: {exc}"
            self.message(f"t={t:7.2f} s  could not inject {fault.kind} on {fault.limb}: {exc}")
            return True
        replaced = f"replaced by the {fault.kind} due at {fault.at:g} s"
        for older in [f for f in self._in_force if (f.limb, f.kind) == (fault.limb, fault.kind)]:
            if older.injected_tick == tick:
                # Injected just before, for this same tick: it never took effect.
                self._in_force.remove(older)
                events[:] = [e for e in events if e is not older.event]
                older.injected, older.injected_at, older.event = False, None, None
                self._skip(older, t, f"{replaced}, before it took effect", events)
            else:
                self._end(older, tick, t, events, replaced)
        fault.injected = True
        fault.injected_at = t
        fault.injected_tick = tick
        self._in_force.append(fault)
        fault.event = RunEvent(EventKind.FAULT_INJECTED, t, fault.limb, fault.kind)
        events.append(fault.event)
        self.message(f"t={t:7.2f} s  fault injected: {fault.kind} on {fault.limb}")
        return True

    def _skip(self, fault: ScheduledFault, t: float, reason: str, events: list[RunEvent]) -> None:
        fault.skipped = reason
        events.append(RunEvent(EventKind.FAULT_SKIPPED, t, fault.limb, fault.kind, reason))
        self.message(f"t={t:7.2f} s  {fault.kind} on {fault.limb} skipped: {reason}")

    def _end(
        self,
        fault: ScheduledFault,
        tick: int,
        t: float,
        events: list[RunEvent],
        why: str | None = None,
    ) -> None:
        self._in_force.remove(fault)
        fault.ended_at = t
        self._ended.append(fault)
        events.append(RunEvent(EventKind.FAULT_ENDED, t, fault.limb, fault.kind, why))

    def track(self, tick: int, nominal: Collection[str], events: list[RunEvent]) -> None:
        """After the tree's tick: end the faults whose window is over, note the recoveries.

        Args:
            tick: the tick's index.
            nominal: the limbs the skills drove on their trajectories this tick.
            events: the tick's events, to add to.
        """
        t = self.tick_time(tick)
        for fault in list(self._in_force):
            if fault.end_tick is not None and tick >= fault.end_tick:
                self._end(fault, tick, t, events)
        for fault in list(self._ended):
            if fault.limb in nominal:
                self._ended.remove(fault)
                fault.recovered_at = t
                events.append(RunEvent(EventKind.FAULT_RECOVERED, t, fault.limb, fault.kind))
                ended = fault.ended_at if fault.ended_at is not None else t
                self.message(
                    f"t={t:7.2f} s  recovered from {fault.kind} on {fault.limb} "
                    f"({t - ended:.2f} s after it ended)"
                )

    def summary(self) -> list[dict[str, Any]]:
        """``summary.json``'s ``faults``: each injected fault and what became of it."""
        return [
            {
                "at_s": f.at,
                "limb": f.limb,
                "kind": f.kind,
                "duration_s": f.duration,
                "injected_at_s": f.injected_at,
                "ended_at_s": f.ended_at,
                "recovered_at_s": f.recovered_at,
            }
            for f in self.faults
            if f.injected
        ]

    def skipped(self, ended_at: float | None = None) -> list[dict[str, Any]]:
        """``summary.json``'s ``faults_skipped``: each fault never injected, and why.

        Args:
            ended_at: the run's end [s of mission time] once it ended: the faults still
                waiting for their time are listed too (the run ended before they were due).
        """
        never = f"not due before the run ended at {ended_at:g} s" if ended_at is not None else None
        return [
            {
                "at_s": f.at,
                "limb": f.limb,
                "kind": f.kind,
                "duration_s": f.duration,
                "reason": f.skipped if f.skipped is not None else never,
            }
            for f in self.faults
            if f.skipped is not None or (never is not None and not f.injected)
        ]
