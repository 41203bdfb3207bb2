"""Run a mission: start or connect the limbs, tick the tree, record, show progress.

One tick (DESIGN.md): the runner asks its clock for the tick time; in the ``sim`` clock it
steps every agent to that time (lockstep) and injects the faults that are due; the limb
clients hold each limb's latest state; the tree ticks, its skills send commands through the
clients without blocking; the recorder appends the tick.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

import py_trees

from limbtree.transport.driver import CommandMode
from limbtree.transport.errors import TransportError
from limbtree.trees.context import MissionContext, Operator, Telemetry
from limbtree.trees.limbs import CommandRecord, LimbHandle
from limbtree.trees.recorder import Recorder


class RunOutcome(StrEnum):
    """How a run ended (``summary.json``'s ``outcome``)."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ABORTED = "ABORTED"


class SteppedLink(Protocol):
    """What the runner needs of a limb client beyond :class:`~limbtree.trees.limbs.LimbLink`."""

    def poll(self) -> object:
        """Take in whatever the agent sent, without blocking."""

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Sim clock: ask the agent to advance to ``t``, without waiting."""

    def finish_step(self) -> object:
        """Sim clock: wait (bounded) for the step's reply and take the state."""

    def fault(self, kind: str, timeout_s: float = 1.0, **params: Any) -> object:
        """Inject a fault (simulated agents)."""


@dataclass
class ScheduledFault:
    """A fault the runner injects at a mission time, and what became of it.

    Attributes:
        at: injection time [s].
        limb: the limb's name.
        kind: the fault kind (``power_off``, ...).
        duration: how long it lasts [s], or None for the rest of the run.
        params: the fault's parameters.
        injected: whether it was injected.
        recovered_at: when the mission drove the limb on its trajectory again after the
            fault ended [s], or None.
    """

    at: float
    limb: str
    kind: str
    duration: float | None
    params: Mapping[str, Any] = field(default_factory=dict)
    injected: bool = False
    recovered_at: float | None = None

    @property
    def end(self) -> float:
        """When the fault ends [s] (infinity if it never does)."""
        return math.inf if self.duration is None else self.at + self.duration


class TickClock:
    """The mission clock: the time of the current tick [s], set by the runner.

    Behaviours, decorators and limb clients read it (it is their only clock), so a run in
    the ``sim`` clock never depends on the wall clock.
    """

    def __init__(self) -> None:
        self._t = 0.0

    def now(self) -> float:
        """The current tick's time [s]."""
        return self._t

    def set(self, t: float) -> None:
        """Move to the next tick's time [s]."""
        self._t = t


class Keyboard(Protocol):
    """Keys pressed by the operator, read without blocking (the live view provides it)."""

    def pressed(self) -> str:
        """The keys pressed since the last call."""


class Progress(Protocol):
    """Shows the run: a live tree in a terminal, or plain lines (``--headless``)."""

    def update(self, runner: Runner, force: bool = False) -> None:
        """Show the state after a tick (throttled by the implementation unless forced)."""

    def message(self, text: str) -> None:
        """Show a one-off line (start, pause, end)."""


@dataclass
class RunOptions:
    """How to run (the ``limbtree run`` flags).

    Attributes:
        clock: ``sim`` (lockstep, deterministic) or ``real`` (monotonic time).
        rate_hz: tick rate [Hz].
        speed: sim clock pacing: ``x`` times real time, or None for as fast as possible.
        seed: the run's seed.
        record_dir: where to write the run record, or None.
        step_timeout_s: how long a sim step may wait for each agent [s].
        max_time_s: stop with FAILURE after this much mission time [s] (a safety net).
    """

    clock: str = "sim"
    rate_hz: float = 100.0
    speed: float | None = None
    seed: int = 0
    record_dir: Path | None = None
    step_timeout_s: float = 2.0
    max_time_s: float = math.inf


class Runner:
    """Ticks one mission tree over its limbs until the root ends or the operator aborts.

    Args:
        name: the mission's name.
        clock: the mission clock the tree and the clients read; the runner sets it.
        root: the built tree.
        context: the mission context the tree was built with.
        links: per limb, its client.
        stepped: limbs whose agents are stepped in the sim clock.
        faults: faults to inject (sim clock only).
        options: run options.
        progress: what shows the run.
        keyboard: the operator's keys, or None.
        time_source: the wall clock [s] for pacing and ``wall_time_s`` only.
    """

    def __init__(
        self,
        name: str,
        clock: TickClock,
        root: py_trees.behaviour.Behaviour,
        context: MissionContext,
        links: Mapping[str, SteppedLink],
        stepped: frozenset[str],
        faults: list[ScheduledFault],
        options: RunOptions,
        progress: Progress,
        keyboard: Keyboard | None = None,
        time_source: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.clock = clock
        self.root = root
        self.context = context
        self.links = links
        self.stepped = stepped
        self.faults = sorted(faults, key=lambda f: f.at)
        self.options = options
        self.progress = progress
        self.keyboard = keyboard
        self.wall = time_source
        self.tree = py_trees.trees.BehaviourTree(root)
        self.snapshot = py_trees.visitors.SnapshotVisitor()
        self.tree.add_visitor(self.snapshot)
        self.t = 0.0
        self.ticks = 0
        self.paused = False
        self.outcome: RunOutcome | None = None
        self.events: list[dict[str, Any]] = []
        self.wall_start = 0.0
        self.recorder = Recorder(options.record_dir) if options.record_dir else None
        self._link_problems: dict[str, str] = {}
        self._in_flight: dict[str, TransportError | None] | None = None
        self._next_events: list[dict[str, Any]] = []

    # -- the loop ---------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        """Tick until the root succeeds or fails, or the operator aborts."""
        dt = 1.0 / self.options.rate_hz
        self.wall_start = self.wall()
        self.progress.message(
            f"running {self.name} in the {self.options.clock} clock at {self.options.rate_hz:g} Hz"
        )
        try:
            while self.outcome is None:
                if self._handle_keys():
                    continue
                if self.paused:
                    time.sleep(0.05)
                    self.progress.update(self)
                    continue
                if self.options.clock == "sim":
                    t = self.ticks * dt
                else:
                    t = self.wall() - self.wall_start
                self._tick(t)
                self._pace(dt)
        except KeyboardInterrupt:
            self._abort("interrupted (Ctrl-C)")
        finally:
            if self.outcome is None:
                self.outcome = RunOutcome.ABORTED
            self._hold_all()
            self.progress.update(self, force=True)
        return self.outcome

    def _tick(self, t: float) -> None:
        self.t = t
        self.clock.set(t)
        self.events = self._next_events
        self._next_events = []
        if self.options.clock == "sim":
            if self._in_flight is None:  # the first tick
                self._inject_faults(t, self.events)
                self._begin_step(t)
            self._finish_step(t)
        for link in self.links.values():
            link.poll()
        self.context.telemetry.new_tick()
        for limb in self.context.limbs.values():
            limb.tick_record = CommandRecord()
        self.tree.tick()
        self._track_faults(t)
        status = self.root.status
        if status == py_trees.common.Status.SUCCESS:
            self.outcome = RunOutcome.SUCCESS
        elif status == py_trees.common.Status.FAILURE:
            self.outcome = RunOutcome.FAILURE
        elif t >= self.options.max_time_s:
            self.outcome = RunOutcome.FAILURE
            self.events.append({"kind": "time_limit", "t": t})
        entry = None
        if self.recorder is not None:
            entry = self.recorder.entry(
                t=t,
                index=self.ticks,
                limbs=self.context.limbs,
                nodes=self._visited(),
                skills=self.context.telemetry.tick,
                events=self.events,
            )
        self.ticks += 1
        self.progress.update(self)
        if self.options.clock == "sim" and self.outcome is None and not self.paused:
            # Pipelined lockstep: ask for the next step now, right behind this tick's
            # commands, so each agent takes both in one wake-up and computes while the
            # runner writes the record. Nothing below may read the limbs' states.
            t_next = self.ticks / self.options.rate_hz
            self._inject_faults(t_next, self._next_events)
            self._begin_step(t_next)
        if entry is not None and self.recorder is not None:
            self.recorder.write(entry)

    def _begin_step(self, t: float) -> None:
        """Send ``step(t)`` to every sim agent without waiting: they compute in parallel."""
        timeout = self.options.step_timeout_s
        in_flight: dict[str, TransportError | None] = {}
        for name in sorted(self.stepped):
            try:
                self.links[name].send_step(t, timeout)
                in_flight[name] = None
            except TransportError as exc:
                in_flight[name] = exc
        self._in_flight = in_flight

    def _finish_step(self, t: float) -> None:
        """Collect the step replies; a limb whose step failed goes stale."""
        in_flight, self._in_flight = self._in_flight or {}, None
        for name, problem in in_flight.items():
            if problem is None:
                try:
                    self.links[name].finish_step()
                except TransportError as exc:
                    problem = exc
            if problem is not None:
                # Disassembled, dead or late: the limb's state goes stale, and the skills over
                # it hold or recover. The run goes on.
                self._note_link_problem(name, t, problem)

    def _pace(self, dt: float) -> None:
        if self.options.clock == "real":
            target = self.wall_start + self.ticks * dt
        elif self.options.speed is not None:
            target = self.wall_start + self.ticks * dt / self.options.speed
        else:
            return
        delay = target - self.wall()
        if delay > 0:
            time.sleep(delay)

    def _visited(self) -> dict[str, str]:
        by_id = {node.id: node for node in self.root.iterate()}
        return {
            by_id[node_id].name: status.value
            for node_id, status in self.snapshot.visited.items()
            if node_id in by_id
        }

    # -- faults -----------------------------------------------------------------------------

    def _inject_faults(self, t: float, events: list[dict[str, Any]]) -> None:
        for fault in self.faults:
            if fault.injected or fault.at > t:
                continue
            params = dict(fault.params)
            if fault.duration is not None:
                params["duration_s"] = fault.duration
            try:
                self.links[fault.limb].fault(fault.kind, self.options.step_timeout_s, **params)
            except TransportError as exc:
                events.append({"kind": "fault_refused", "limb": fault.limb, "t": t})
                self.progress.message(
                    f"t={t:7.2f} s  could not inject {fault.kind} on {fault.limb}: {exc}"
                )
                continue
            fault.injected = True
            events.append(
                {"kind": "fault_injected", "limb": fault.limb, "fault": fault.kind, "t": t}
            )
            self.progress.message(f"t={t:7.2f} s  fault injected: {fault.kind} on {fault.limb}")

    def _note_link_problem(self, limb: str, t: float, exc: Exception) -> None:
        kind = type(exc).__name__
        if self._link_problems.get(limb) != kind:
            self._link_problems[limb] = kind
            self.events.append({"kind": "link", "limb": limb, "t": t, "error": str(exc)})

    def _track_faults(self, t: float) -> None:
        nominal = self.context.telemetry.nominal_limbs
        for fault in self.faults:
            if not fault.injected or fault.recovered_at is not None:
                continue
            if fault.end <= t < fault.end + 1.0 / self.options.rate_hz:
                self.events.append(
                    {"kind": "fault_ended", "limb": fault.limb, "fault": fault.kind, "t": t}
                )
            if t >= fault.end and fault.limb in nominal:
                fault.recovered_at = t
                self.events.append(
                    {"kind": "fault_recovered", "limb": fault.limb, "fault": fault.kind, "t": t}
                )
                self.progress.message(
                    f"t={t:7.2f} s  recovered from {fault.kind} on {fault.limb} "
                    f"({t - fault.end:.2f} s after it ended)"
                )

    # -- operator ---------------------------------------------------------------------------

    def _handle_keys(self) -> bool:
        if self.keyboard is None:
            return False
        for key in self.keyboard.pressed():
            if key in "qQ\x03":
                self._abort("aborted by the operator")
                return True
            if key == " ":
                self.paused = not self.paused
                kind = "paused" if self.paused else "resumed"
                self.events.append({"kind": kind, "t": self.t})
                if self.paused:
                    self._hold_all()
                self.progress.message(f"t={self.t:7.2f} s  {kind} (space to toggle, q to abort)")
        return False

    def _abort(self, why: str) -> None:
        self.outcome = RunOutcome.ABORTED
        self.events.append({"kind": "aborted", "t": self.t, "why": why})
        self.progress.message(f"t={self.t:7.2f} s  {why}: limbs hold, record closed")

    def _hold_all(self) -> None:
        for limb in self.context.limbs.values():
            limb.link.send_command(CommandMode.HOLD)

    # -- the record -------------------------------------------------------------------------

    def summary(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        """The ``summary.json`` content of this run (see ``docs/record.md``)."""
        telemetry: Telemetry = self.context.telemetry
        injected = [f for f in self.faults if f.injected]
        nodes = {}
        for node in self.root.iterate():
            entry: dict[str, Any] = {"type": getattr(node, "node_type", type(node).__name__)}
            entry["ticks"] = getattr(node, "ticks", None)
            entry["busy_s"] = getattr(node, "busy_s", None)
            nodes[node.name] = entry
        return {
            **extra,
            "outcome": (self.outcome or RunOutcome.ABORTED).value,
            "seed": self.options.seed,
            "clock": self.options.clock,
            "rate_hz": self.options.rate_hz,
            "sim_time_s": self.t,
            "wall_time_s": self.wall() - self.wall_start,
            "ticks": self.ticks,
            "faults_injected": len(injected),
            "faults_recovered": sum(1 for f in injected if f.recovered_at is not None),
            "recoveries": telemetry.recoveries,
            "max_command_state_distance": telemetry.max_command_state_distance,
            "metrics": telemetry.metrics,
            "faults": [
                {
                    "at_s": f.at,
                    "limb": f.limb,
                    "kind": f.kind,
                    "duration_s": f.duration,
                    "recovered_at_s": f.recovered_at,
                }
                for f in injected
            ],
            "nodes": nodes,
            "failure": self.failure_message(),
        }

    def failure_message(self) -> str | None:
        """The feedback of the deepest failed node, when the run failed."""
        if self.outcome is not RunOutcome.FAILURE:
            return None
        failed = [
            node
            for node in self.root.iterate()
            if node.status == py_trees.common.Status.FAILURE and node.feedback_message
        ]
        if not failed:
            return "the tree failed"
        node = failed[0]
        return f"{node.name}: {node.feedback_message}"

    def close(self, extra: Mapping[str, Any]) -> Path | None:
        """Write ``summary.json`` and close the log (if recording); returns the summary path."""
        if self.recorder is None:
            return None
        return self.recorder.close(self.summary(extra))


def default_log_dir(record_dir: Path | None) -> Path:
    """Where agent output goes: the record directory, or a fresh temporary folder."""
    if record_dir is not None:
        return record_dir / "agents"
    return Path(tempfile.mkdtemp(prefix="limbtree-agents-"))


def limb_handles(
    descriptions: Mapping[str, Any],
    links: Mapping[str, Any],
    bases: Mapping[str, Any],
    postures: Mapping[str, Mapping[str, tuple[float, ...]]],
) -> dict[str, LimbHandle]:
    """One :class:`LimbHandle` per limb."""
    return {
        name: LimbHandle(name, descriptions[name], links[name], bases[name], postures[name])
        for name in descriptions
    }


__all__ = [
    "Operator",
    "RunOptions",
    "RunOutcome",
    "Runner",
    "ScheduledFault",
    "TickClock",
]
