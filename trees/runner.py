"""Run a mission: tick the tree over its limbs and emit one snapshot per tick.

One tick (DESIGN.md): the runner asks its clock for the tick time (:mod:`.clocks`); in the
``sim`` clock it steps every agent to that time and injects the faults that are due
(:mod:`.lockstep`); the limb clients hold each limb's latest state; the tree ticks, its
skills send commands through the clients without blocking; the runner emits one immutable
:class:`~limbtree.trees.stream.TickSnapshot` to its sinks (:mod:`.stream`): the recorder,
the live view or ``--headless`` progress, the web viewer. None of them reaches into the
runner.

The lockstep is pipelined: right after a tick's commands are sent, the runner asks every
agent for the next step, so each agent takes both in one wake-up and computes while the
sinks take the snapshot.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Protocol

import py_trees

from limbtree.kinematics import Pose
from limbtree.tempdirs import OwnedTempDir
from limbtree.transport.driver import CommandMode
from limbtree.transport.errors import RemoteError, TransportError
from limbtree.transport.schema import ErrorCode
from limbtree.trees.clocks import RunClock, TickClock, make_clock
from limbtree.trees.context import MissionContext, Operator, Telemetry
from limbtree.trees.control import BREAK_VERBS, BreakpointHit, ControlOp, RunControl
from limbtree.trees.errors import AgentError
from limbtree.trees.faults import FaultSchedule, ScheduledFault
from limbtree.trees.header import RunInfo, robots_of, tree_of
from limbtree.trees.identity import assign_node_ids, walk
from limbtree.trees.limbs import CommandRecord
from limbtree.trees.lockstep import Lockstep, SteppedAgent, SteppedLink, one_limb_agents
from limbtree.trees.recorder import Recorder
from limbtree.trees.sinks import SinkFailure, Sinks
from limbtree.trees.stream import (
    EventKind,
    LimbTick,
    NodeStatus,
    NodeTick,
    RunEnd,
    RunEvent,
    RunHeader,
    RunOutcome,
    TickSink,
    TickSnapshot,
    plain,
)
from limbtree.trees.watchdog import DEFAULT_MAX_TICK_S, TickOverrun, TickWatchdog

#: How long a restarted agent has to say what it drives [s] (it answers a describe at once).
RESTART_DESCRIBE_TIMEOUT_S = 2.0
#: The longest sleep between two looks at the keys, signals and controls while pacing [s].
PACE_SLICE_S = 0.05

_STATUS: Mapping[py_trees.common.Status, NodeStatus] = MappingProxyType(
    {status: NodeStatus(status.value) for status in py_trees.common.Status}
)
_RUNNING = py_trees.common.Status.RUNNING
_INVALID = py_trees.common.Status.INVALID


class Keyboard(Protocol):
    """Keys pressed by the operator, read without blocking (the live view provides it)."""

    def pressed(self) -> str:
        """The keys pressed since the last call."""


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
        max_tick_s: abort the run when one tick of the tree runs longer than this [s of wall time]
            (the mission key ``max_tick_s``; a safety net, see :mod:`.watchdog`).
    """

    clock: str = "sim"
    rate_hz: float = 100.0
    speed: float | None = None
    seed: int = 0
    record_dir: Path | None = None
    step_timeout_s: float = 2.0
    max_time_s: float = math.inf
    max_tick_s: float = DEFAULT_MAX_TICK_S


class _TickVisitor(py_trees.visitors.VisitorBase):  # type: ignore[misc]
    """Collects each ticked node with its status, message and the time its tick ended."""

    def __init__(self) -> None:
        super().__init__(full=False)
        self.visits: list[tuple[Any, py_trees.common.Status, str, float]] = []
        self.clock = time.perf_counter

    def initialise(self) -> None:
        """A new tick."""
        self.visits = []

    def run(self, behaviour: py_trees.behaviour.Behaviour) -> None:
        """``behaviour`` finished its tick."""
        self.visits.append((behaviour, behaviour.status, behaviour.feedback_message, self.clock()))


#: The refusals after which a run cannot go on, and why. ``commanded_elsewhere``: another
#: client (another runner, most likely) commands the limb, and the two would take turns
#: moving it. ``unsupported_mode``: the limb never takes that kind of command (a
#: ``sync_move``'s poses on a plant that takes joints), so the node would wait, the limb
#: still, until its timeout or for ever.
_FOR_GOOD: Final = MappingProxyType(
    {
        ErrorCode.COMMANDED_ELSEWHERE: "one limb takes one commander",
        ErrorCode.UNSUPPORTED_MODE: "the limb never takes such a command: command it with "
        "nodes that send what it accepts",
    }
)


#: How often a real-clock run claims each of its limbs again, running or paused [s of wall
#: time]. Each claim renews the run's command of the limb (the agent's lease: 1 s after the
#: last command or claim) and moves nothing, so that no other client takes a limb the run
#: sends no command for a while (one limb waits while another moves, between two nodes, a
#: pause). An agent older than ``claim`` gets holds instead while the run is paused.
HOLD_RENEW_S: Final = 0.25
#: How long the claim of each limb before a real-clock run's first tick may wait [s].
CLAIM_TIMEOUT_S: Final = 2.0


def failed_leaf(root: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour | None:
    """The deepest node with a message on the path of the failure that ended ``root``.

    From the root, each step goes to the child whose FAILURE failed its parent (of several,
    the last: a fallback's last resort). A node that failed earlier and was absorbed on the
    way up (under ``force_success`` or ``inverter``, or before a fallback's next child
    succeeded) keeps its FAILURE status, but is on no such path, so it is never the reason.

    Args:
        root: the tree's root, in FAILURE.

    Returns:
        The deepest node of that path that says why (its ``feedback_message``), or None when
        the root did not fail or no node of the path says anything.
    """
    failure = py_trees.common.Status.FAILURE
    if root.status != failure:
        return None
    node, reason = root, root if root.feedback_message else None
    while True:
        failed = [child for child in node.children if child.status == failure]
        if not failed:
            return reason
        node = failed[-1]
        if node.feedback_message:
            reason = node


class Runner:
    """Ticks one mission tree over its agents until the root ends or the operator aborts.

    Args:
        name: the mission's name.
        clock: the mission clock the tree and the clients read; the runner sets it.
        root: the built tree.
        context: the mission context the tree was built with.
        agents: the agents to poll (and, in the sim clock, to step), one per agent process;
            a mapping of one-limb clients by limb name is adapted
            (:func:`~limbtree.trees.lockstep.one_limb_agents`).
        faults: faults to inject (sim clock only).
        options: run options.
        sinks: what consumes the tick stream (the recorder of ``options.record_dir`` is
            added first).
        keyboard: the operator's keys, or None.
        time_source: the wall clock [s], for pacing and ``wall_time_s`` only.
        sleep: how the clock waits [s].
        info: the mission file, parameters and robots for the header.
        control: requests from another thread (the web debugger's pause, resume, abort,
            step and breakpoints, :mod:`.control`), or None.

    A sink that raises is detached (the others, the recorder first among them, go on), a
    ``sink_failed`` event goes into the next tick, and :attr:`sink_failures` lists it.
    """

    def __init__(
        self,
        name: str,
        clock: TickClock,
        root: py_trees.behaviour.Behaviour,
        context: MissionContext,
        agents: Sequence[SteppedAgent] | Mapping[str, SteppedLink],
        faults: list[ScheduledFault],
        options: RunOptions,
        sinks: Sequence[TickSink] = (),
        keyboard: Keyboard | None = None,
        time_source: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        info: RunInfo | None = None,
        control: RunControl | None = None,
    ) -> None:
        self.name = name
        self.control = control
        self._steps_left = 0
        self._gate_asked: tuple[str, str] | None = None
        self.clock = clock
        self.root = root
        self.context = context
        self.agents: list[SteppedAgent] = (
            list(one_limb_agents(agents)) if isinstance(agents, Mapping) else list(agents)
        )
        self.options = options
        self.keyboard = keyboard
        self.info = info or RunInfo()
        self.run_clock: RunClock = make_clock(
            options.clock, options.rate_hz, options.speed, time_source, sleep
        )
        self.lockstep = Lockstep(self.agents, options.step_timeout_s)
        self._agent_of = {limb: agent for agent in self.agents for limb in agent.limbs}
        self.fault_schedule = FaultSchedule(
            faults,
            options.rate_hz,
            self.run_clock.tick_time,
            self._agent_of,
            options.step_timeout_s,
            self._message,
        )
        self.faults = self.fault_schedule.faults
        self.recorder = Recorder(options.record_dir) if options.record_dir else None
        self.sinks = Sinks(
            [*([self.recorder] if self.recorder else []), *sinks],
            lambda: self.t,
            self._sink_failed,
        )
        self.sink_failures = self.sinks.failures
        self.tree = py_trees.trees.BehaviourTree(root)
        self._visitor = _TickVisitor()
        self.tree.visitors.append(self._visitor)
        self.nodes = assign_node_ids(root)
        self.t = 0.0
        self.ticks = 0
        self.paused = False
        self.outcome: RunOutcome | None = None
        self.error: AgentError | None = None
        #: Whether the run started ticking (False: it stopped before, its limbs not claimed).
        self.started = False
        self.end: RunEnd | None = None
        self.events: list[RunEvent] = []
        self._next_events: list[RunEvent] = []
        self._link_problems: dict[str, str] = {}
        self._restarts_seen = [agent.restarts for agent in self.agents]
        self._abort_reason: str | None = None
        self._time_holds: set[str] = set()
        self._claimed_at = -math.inf  # when the limbs were last claimed or held [s, wall]
        #: The non-blocking claims of the limbs (real clock), and the limbs whose agents
        #: take no claim (older than it): holds keep those while the run is paused.
        self._claims: list[Callable[[], object]] = []
        self._unclaimed: list[str] = []
        #: Wall time from the command's start to the run's (the agents' start-up, the
        #: connections, the tree) [s], or None when not measured (``summary.json``).
        self.startup_s: float | None = None
        #: Polled at each loop: the name of a signal that asked the run to stop, or None
        #: (``limbtree run`` notes SIGTERM here, so the run stops between ticks).
        self.signalled: Callable[[], str | None] | None = None
        #: How the agent process of a robot (a plant) ended, or None while it runs or when
        #: it is not this run's own (``limbtree run`` gives its simulated agents'): a silent
        #: agent whose process is gone cannot come back, and the run stops at once.
        self.agent_exit: Callable[[str], str | None] | None = None
        self._collected: list[tuple[SteppedAgent, TransportError]] | None = None
        self._stats: dict[str, list[Any]] = {node_id: [0, 0.0, None] for node_id in self.nodes}
        # The bases: each robot's from the header, then each plant's agent's latest.
        if self.info.robots is not None:
            poses = {name: robot.base or Pose() for name, robot in self.info.robots.items()}
        else:
            poses = {name: limb.base for name, limb in context.limbs.items()}
        self._base_poses: dict[str, Pose] = poses
        self._bases = MappingProxyType(dict(poses))
        self._base_seen: dict[str, tuple[float, ...]] = {
            name: tuple(pose.as_list()) for name, pose in poses.items()
        }
        self._live_bases = [
            (robot, agent)
            for agent in self.agents
            if (robot := getattr(agent, "robot", "")) and robot in poses
        ]
        self._wall = time_source
        self._watchdog = TickWatchdog(options.max_tick_s, time_source)
        self.tick_overruns = 0
        self.max_tick_wall_s = 0.0

    # -- the header ---------------------------------------------------------------------------

    def header(self) -> RunHeader:
        """The run's header: mission, parameters, clock, tree (with ids), robots, world."""
        robots = self.info.robots
        if robots is None:
            robots = robots_of(self.context.limbs, self.info.agents)
        return RunHeader(
            mission=self.name,
            mission_file=self.info.mission_file,
            parameters=MappingProxyType(plain(self.info.parameters)),
            seed=self.options.seed,
            clock=self.options.clock,
            rate_hz=self.options.rate_hz,
            tree=tree_of(self.root),
            robots=MappingProxyType(dict(robots)),
            world=MappingProxyType(plain(self.info.world)),
        )

    # -- the loop -----------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        """Tick until the root succeeds or fails, or the operator aborts.

        Raises:
            AgentError: when an agent answered a step with an error (the limbs were told to
                hold and the record was closed first).
        """
        if not self.run_clock.lockstep:
            try:
                self._claim_limbs()
            except AgentError as exc:
                self.error = exc
                self.abort_before_start(str(exc))
                raise
        self.sinks.start(self.header())
        self._message(
            f"running {self.name} in the {self.options.clock} clock at {self.options.rate_hz:g} Hz"
        )
        self.run_clock.start()
        self.started = True
        try:
            self._watchdog.start()
            while self.outcome is None:
                if self._handle_keys() or self._handle_control():
                    continue
                if self.paused and self._nothing_can_resume():
                    self._abort(
                        "paused, and stdin, the only way to resume, was closed (lines p, r, a "
                        "on stdin; keep it open, or use --view web or a terminal)"
                    )
                    continue
                if self.paused or self._gate_holds_time():
                    self._keep_limbs()
                    self.run_clock.idle(0.05)
                    continue
                self._watched_tick(self.run_clock.tick_time(self.ticks))
                self._pace()
            self._pause_at_end()
        except KeyboardInterrupt as exc:
            self._abort(interrupted_why(exc))
        except AgentError as exc:
            self.error = exc
            self._abort(str(exc))
        except TickOverrun:
            self._tick_overran()
        finally:
            self._watchdog.stop()
            if self.outcome is None:
                self._abort_reason = self._abort_reason or "the run stopped before its tree ended"
                self.outcome = RunOutcome.ABORTED
            self._hold_all()
            if self.outcome is RunOutcome.ABORTED:
                self._record_abort()
            self.end = RunEnd(
                self.outcome, self.t, self.ticks, self.failure_message(), self.summary()
            )
            self.sinks.end(self.end)
            if self.control is not None:
                self.control.set_state(paused=False, ended=True)
        if self.error is not None:
            raise self.error
        return self.outcome

    def abort_before_start(self, why: str) -> RunOutcome:
        """End a run that was stopped before its first tick (during the agents' start-up).

        The sinks get the header, one map with the ``aborted`` event, and the end: the
        record says ABORTED and why, like that of a run aborted later.
        """
        self.run_clock.start()
        self.sinks.start(self.header())
        self._abort(why)
        self._record_abort()
        self.end = RunEnd(
            RunOutcome.ABORTED, self.t, self.ticks, self.failure_message(), self.summary()
        )
        self.sinks.end(self.end)
        if self.control is not None:
            self.control.set_state(paused=False, ended=True)
        return RunOutcome.ABORTED

    def _tick(self, t: float) -> None:
        self.t = t
        self.clock.set(t)
        events = self.events = self._next_events
        self._next_events = []
        if self.run_clock.lockstep:
            stale, self._collected = self._collected, None
            if stale is None:  # (else the step was collected when mission time stopped)
                if not self.lockstep.started:  # the first tick
                    self._inject_faults(t, events)
                    self.lockstep.begin(t)
                stale = self.lockstep.finish()
            self._note_link_problems(t, stale)
        self._keep_limbs()  # (real clock: its refusals come in with a later poll)
        for agent in self.agents:
            agent.poll()
        self._note_restarts(t, events)
        self._check_refusals()
        self.context.telemetry.new_tick()
        for limb in self.context.limbs.values():
            limb.tick_record = CommandRecord()
        began = time.perf_counter()
        self._tick_tree()
        self._note_gates(t, events)
        events.extend(self.context.claims.drain())  # one commander per limb (claims.py)
        self._track_faults(t)
        status = self.root.status
        if status == py_trees.common.Status.SUCCESS:
            self.outcome = RunOutcome.SUCCESS
        elif status == py_trees.common.Status.FAILURE:
            self.outcome = RunOutcome.FAILURE
        elif t >= self.options.max_time_s:
            self.outcome = RunOutcome.FAILURE
            events.append(RunEvent(EventKind.TIME_LIMIT, t))
        snapshot = self._snapshot(t, began, events)
        self.ticks += 1
        pause_why = None
        if self.control is not None:  # (the tick that ends the tree too: break on failure)
            pause_why = self._pause_after_tick(snapshot)
            if pause_why is not None and self.outcome is not None:
                # No tick follows to carry the pause: this last one does.
                paused = RunEvent(EventKind.PAUSED, t, detail=pause_why[0], node=pause_why[1])
                snapshot = replace(snapshot, events=(*snapshot.events, paused))
        if self.run_clock.lockstep and self.outcome is None and not self.paused:
            # Pipelined lockstep: ask for the next step now, right behind this tick's
            # commands, so each agent takes both in one wake-up and computes while the
            # sinks take the snapshot. Nothing below may read the limbs' states.
            t_next = self.run_clock.tick_time(self.ticks)
            self._inject_faults(t_next, self._next_events)
            self.lockstep.begin(t_next)
        self.sinks.tick(snapshot)
        if pause_why is not None:  # as a key pressed between two ticks would
            self._set_paused(True, *pause_why)

    def _snapshot(self, t: float, began: float, events: list[RunEvent]) -> TickSnapshot:
        """This tick, taken from the tree and the limbs now."""
        nodes: dict[str, NodeTick] = {}
        starts: dict[str, float] = {}
        previous = began
        stats = self._stats
        for behaviour, status, message, ended in self._visitor.visits:
            node_id = behaviour.node_id
            start = previous
            for child in behaviour.children:
                child_start = starts.get(child.node_id)
                if child_start is not None and child_start < start:
                    start = child_start
            starts[node_id] = start
            previous = ended
            node_status = _STATUS[status]
            if status is _RUNNING and behaviour.status is _INVALID:
                # Halted later in this tick by its parent (a parallel that ended with
                # this child still running): not running after the tick.
                node_status = NodeStatus.INVALID
            nodes[node_id] = NodeTick(node_status, message, ended - start)
            entry = stats[node_id]
            entry[0] += 1
            entry[1] += ended - start
            entry[2] = node_status
        limbs: dict[str, LimbTick] = {}
        targets = self.context.telemetry.targets
        for name, limb in self.context.limbs.items():
            record = limb.tick_record
            command = record.command
            link = limb.link
            state = link.state
            # (with DISASSEMBLED while the agent says so: the last state would not say why
            # the limb went stale)
            health = int(limb.health)
            if state is None:
                limbs[name] = LimbTick(
                    None, command, None, record.joints, health, True, targets.get(name)
                )
                continue
            limbs[name] = LimbTick(
                record.center if command is not None else limb.last_pose(),
                command,
                state.q if type(state.q) is tuple else tuple(state.q),
                record.joints,
                health,
                link.is_stale,
                targets.get(name),
            )
        return TickSnapshot(
            t=t,
            tick=self.ticks,
            nodes=MappingProxyType(nodes),
            limbs=MappingProxyType(limbs),
            bases=self._current_bases(),
            events=tuple(events),
            skills=MappingProxyType(dict(self.context.telemetry.tick)),
        )

    def _current_bases(self) -> Mapping[str, Pose]:
        """Each robot's base pose: as its agent last reported it, else as declared."""
        changed = False
        for robot, agent in self._live_bases:
            state = agent.base  # type: ignore[attr-defined]
            if state is None or state.pose == self._base_seen[robot]:
                continue
            self._base_seen[robot] = state.pose
            self._base_poses[robot] = Pose.from_array(state.pose)
            changed = True
        if changed:
            self._bases = MappingProxyType(dict(self._base_poses))
        return self._bases

    # -- the sinks ----------------------------------------------------------------------------

    def _sink_failed(self, failure: SinkFailure) -> None:
        self._next_events.append(
            RunEvent(
                EventKind.SINK_FAILED, failure.t, detail=f"{failure.sink} detached: {failure.error}"
            )
        )

    def _message(self, text: str) -> None:
        self.sinks.message(text)

    # -- faults -------------------------------------------------------------------------------

    def _inject_faults(self, t: float, events: list[RunEvent]) -> None:
        self.fault_schedule.inject(self.ticks, self.lockstep.t, events)

    def _note_link_problems(
        self, t: float, stale: list[tuple[SteppedAgent, TransportError]]
    ) -> None:
        """A ``link`` event when a limb's step starts failing, ``link_restored`` when it ends."""
        problems = self._link_problems
        failed: set[str] = set()
        if stale and self.agent_exit is not None:
            self._check_exits(agent for agent, _ in stale)
        for agent, exc in stale:
            kind = type(exc).__name__
            new = []
            for limb in agent.limbs:
                failed.add(limb)
                if problems.get(limb) != kind:
                    problems[limb] = kind
                    self.events.append(RunEvent(EventKind.LINK, t, limb, detail=str(exc)))
                    new.append(limb)
            if new:
                # What happens first, the details after: a terminal line is cut at its width.
                self._message(
                    f"t={t:7.2f} s  link lost to {', '.join(new)}, "
                    f"{'they hold' if len(new) > 1 else 'it holds'} until its agent answers: {exc}"
                )
        if len(problems) > len(failed):
            restored = [name for name in problems if name not in failed]
            for limb in restored:
                del problems[limb]
                self.events.append(
                    RunEvent(EventKind.LINK_RESTORED, t, limb, detail="its agent answers again")
                )
            self._message(f"t={t:7.2f} s  link restored to {', '.join(restored)}")

    def _note_restarts(self, t: float, events: list[RunEvent]) -> None:
        """An ``agent_restarted`` event per limb when its agent comes back as a new process.

        The new process must drive what the old one did (the robot, its joints and end
        effectors, as described when the run began): its limbs are commanded with that
        robot's kinematics.

        Raises:
            AgentError: when it drives something else or cannot say what it drives; the
                run stops before the tree commands it.
        """
        seen = self._restarts_seen
        for i, agent in enumerate(self.agents):
            restarts = agent.restarts
            if restarts != seen[i]:
                seen[i] = restarts
                self._check_restarted(agent)
                self._message(
                    f"t={t:7.2f} s  the agent of {', '.join(agent.limbs)} restarted (a new "
                    "process): its state comes from the new one"
                )
                for limb in agent.limbs:
                    events.append(
                        RunEvent(
                            EventKind.AGENT_RESTARTED,
                            t,
                            limb,
                            detail="its agent restarted (a new session): the limb's state "
                            "and health now come from the new process",
                        )
                    )

    def _check_refusals(self) -> None:
        """Stop the run when an agent refused its command for good (:data:`_FOR_GOOD`).

        Raises:
            AgentError: naming the limb, what the agent said and why the run stops.
        """
        for name, limb in self.context.limbs.items():
            error = getattr(limb.link, "last_error", None)
            why = None if error is None else _FOR_GOOD.get(error.code)
            if why is not None and getattr(error, "request", None) == "claim":
                raise AgentError(
                    (name,),
                    f"limb {name}: another client commands it, its agent refused this run's "
                    f"claim: {error}; the run stops ({why}): stop the other client (another "
                    "runner, a tool) and run again",
                )
            if why is not None:
                raise AgentError(
                    (name,),
                    f"limb {name}: its agent refused this run's command: {error}; the run "
                    f"stops ({why})",
                )

    def _check_exits(self, silent: Iterable[SteppedAgent]) -> None:
        """Stop the run when a silent agent is one of its own whose process ended.

        Raises:
            AgentError: naming its limbs, how its process ended and where its output is.
        """
        assert self.agent_exit is not None
        first: str | None = None
        gone: list[str] = []  # (the limbs of every agent whose process ended: one process
        for agent in silent:  # may have served several)
            ended = self.agent_exit(getattr(agent, "robot", "") or agent.limbs[0])
            if ended is not None:
                if first is None:
                    first = f"the simulated agent of {', '.join(agent.limbs)} {ended}"
                gone += agent.limbs
        if first is not None:
            raise AgentError(
                tuple(gone), f"{first}: its limbs cannot answer again, the run stops", gone=True
            )

    def _check_restarted(self, agent: SteppedAgent) -> None:
        limbs = ", ".join(agent.limbs)
        try:
            described = agent.describe(RESTART_DESCRIBE_TIMEOUT_S)
        except TransportError as exc:
            raise AgentError(
                agent.limbs,
                f"the agent of {limbs} restarted and did not say what it drives ({exc}): "
                "the run stops rather than command a limb it cannot check",
            ) from None
        for limb in agent.limbs:
            expected = self.context.limbs[limb].description
            now = described.get(limb)
            if now is None:
                problem = "no longer serves it"
            elif now.robot != expected.robot:
                problem = f"drives {now.robot}, but the mission declares {expected.robot}"
            elif now.joints != expected.joints or now.end_effectors != expected.end_effectors:
                problem = (
                    f"drives a {now.robot} whose joints or end effectors differ from those "
                    "described when the run began"
                )
            else:
                continue
            raise AgentError(
                agent.limbs,
                f"limb {limb}: its agent restarted and {problem}: the run stops; start the "
                "right agent and run again",
            )

    def _track_faults(self, t: float) -> None:
        self.fault_schedule.track(self.ticks, self.context.telemetry.nominal_limbs, self.events)

    # -- operator -----------------------------------------------------------------------------

    def _handle_keys(self) -> bool:
        """Act on the operator's keys; True when the run was aborted.

        A terminal's space toggles the pause and q or Ctrl-C aborts; a non-terminal stdin's
        lines ``p``, ``r`` and ``a`` pause, resume and abort.
        """
        signalled = self.signalled() if self.signalled is not None else None
        if signalled:
            self._abort(f"interrupted ({signalled})")
            return True
        if self.keyboard is None:
            return False
        keys = self.keyboard.pressed()
        ignored: list[tuple[int, str]] = getattr(self.keyboard, "ignored", None) or []
        lines = list(ignored)  # (said in their place among the keys, each once)
        ignored.clear()

        def say_ignored(before: int) -> None:
            while lines and lines[0][0] <= before:
                self._message(f"t={self.t:7.2f} s  ignored the line {lines.pop(0)[1]}")

        for index, key in enumerate(keys):
            say_ignored(index)
            if key in "qQ\x03aA":
                self._abort("aborted by the operator")
                say_ignored(len(keys))
                return True
            if key == " ":
                self._set_paused(not self.paused)
            elif key in "pP":
                self._set_paused(True)
            elif key in "rR":
                self._set_paused(False)
        say_ignored(len(keys))
        return False

    def _nothing_can_resume(self) -> bool:
        """Whether a paused run could never be resumed: no page, and stdin at its end."""
        return self.control is None and bool(getattr(self.keyboard, "closed", False))

    def _pace(self) -> None:
        """Wait until the next tick is due, answering keys, signals and controls meanwhile.

        A slow pace (``--speed 0.001``, a real-clock mission at 0.1 Hz) waits long between
        ticks: an abort, a pause or a signal is taken within :data:`PACE_SLICE_S`, not when the
        wait is over.
        """
        clock = self.run_clock
        while (left := clock.remaining(self.ticks)) > 0.0:
            if self._handle_keys() or self._handle_control() or self.paused:
                return
            self._keep_limbs()  # (a slow tick rate keeps its limbs between two ticks)
            clock.idle(min(left, PACE_SLICE_S))

    def _pause_at_end(self) -> None:
        """Hold a pause that came on the tick that ended the tree until the operator goes on.

        A breakpoint (on failure, most often) or a step may stop the run on its last tick:
        the tree is over, but the operator inspects it (the page shows that tick) before
        the run ends. Resume, step, abort and a signal all end the run, with the tree's
        outcome: no tick is left to take.
        """
        if not self.paused or self.outcome is RunOutcome.ABORTED:
            return
        outcome = self.outcome
        while self.paused:  # (until resumed, or a step: its tick would be past the end)
            if self._handle_keys() or self._handle_control():
                break
            self._keep_limbs()
            self.run_clock.idle(0.05)
        self.outcome, self._abort_reason = outcome, None
        self._steps_left = 0

    def _set_paused(self, paused: bool, why: str | None = None, node: str | None = None) -> None:
        """Pause (mission time stops, the limbs hold) or resume; nothing if already so.

        Args:
            paused: pause (True) or resume.
            why: who asked and why (the event's detail), or None for the operator's keys.
            node: the node concerned (a breakpoint's), or None.
        """
        if paused == self.paused:
            return
        self.paused = paused
        kind = EventKind.PAUSED if paused else EventKind.RESUMED
        self._next_events.append(RunEvent(kind, self.t, detail=why, node=node))
        if paused:
            self._hold_all()
        self._hold_time("pause", paused)
        if self.control is not None:
            self.control.set_state(paused=paused)
        self.sinks.pause(paused, self.t)
        how = why or getattr(self.keyboard, "hint", "")
        self._message(f"t={self.t:7.2f} s  {kind.value}" + (f" ({how})" if how else ""))

    def _handle_control(self) -> bool:
        """Act on the page's requests (:mod:`.control`); True when the run was aborted."""
        if self.control is None:
            return False
        for op in self.control.take():
            if op is ControlOp.ABORT:
                self._abort("aborted from the web page")
                return True
            if op is ControlOp.PAUSE:
                self._set_paused(True, "paused from the web page")
            elif op is ControlOp.RESUME:
                self._steps_left = 0
                self._set_paused(False, "resumed from the web page")
            elif op is ControlOp.STEP:
                if self.paused:
                    self._steps_left += 1
                    self._set_paused(False, "one step from the web page")
                else:  # a step while running pauses after the next tick
                    self._steps_left = 1
        return False

    def _pause_after_tick(self, snapshot: TickSnapshot) -> tuple[str, str | None] | None:
        """Whether the run pauses after this tick: a breakpoint hit, or a step done."""
        assert self.control is not None
        hit = self.control.observe(snapshot.tick, snapshot.t, snapshot.nodes, snapshot.skills)
        if hit is not None:
            self._steps_left = 0
            return (self._hit_text(hit), hit.node)
        if self._steps_left > 0:
            self._steps_left -= 1
            if self._steps_left == 0:
                return (f"stepped to tick {snapshot.tick}", None)
        return None

    def _hit_text(self, hit: BreakpointHit) -> str:
        behaviour = self.nodes.get(hit.node)
        name = behaviour.name if behaviour is not None else hit.node
        return f"breakpoint: {name} ({hit.node}) {BREAK_VERBS[hit.on]} at tick {hit.tick}"

    def _note_gates(self, t: float, events: list[RunEvent]) -> None:
        """This tick's gate events.

        Each answer given (``gate_answered``, saying by whom), and a gate that started waiting
        for its answer (``gate``): both in the tick in which they happened.
        """
        operator = self.context.operator
        take = getattr(operator, "take_answers", None)
        for node, answer in take() if take is not None else ():
            events.append(RunEvent(EventKind.GATE_ANSWERED, t, node=node, detail=answer))
        question = getattr(operator, "question", None)
        if question != self._gate_asked:
            self._gate_asked = question
            if question is not None:
                node, prompt = question
                events.append(RunEvent(EventKind.GATE, t, node=node, detail=prompt))

    def _gate_holds_time(self) -> bool:
        """Sim clock: whether an operator gate waits for its answer (time does not advance).

        In the ``real`` clock time goes on (the limbs hold where the last skill left them).
        """
        waiting = getattr(self.context.operator, "waiting", None)
        holds = bool(self.run_clock.lockstep and waiting is not None and waiting())
        self._hold_time("gate", holds)
        return holds

    def _hold_time(self, reason: str, hold: bool) -> None:
        """Stop mission time for ``reason`` (a pause, a waiting gate), or let it go on."""
        before = bool(self._time_holds)
        if hold:
            self._time_holds.add(reason)
        else:
            self._time_holds.discard(reason)
        if self._time_holds and not before:
            self.run_clock.pause()
            if self.run_clock.lockstep and self.lockstep.started:
                # Take the step in flight now: its replies are in, and would count as late
                # (a link error) once its deadline passed during the hold.
                self._collected = self.lockstep.finish()
        elif before and not self._time_holds:
            self.run_clock.resume()

    def _abort(self, why: str) -> None:
        self.outcome = RunOutcome.ABORTED
        self._abort_reason = why
        closed = ", record closed" if self.recorder is not None else ""
        self._message(f"t={self.t:7.2f} s  {why}: limbs hold{closed}")

    def _record_abort(self) -> None:
        """One last map for the record: the ``aborted`` event (and any pause not yet logged).

        It is a tick map at the last tick's time, not counted in ``ticks`` (the tree was not
        ticked again): the nodes as they stood, the limbs holding, so the log says why it
        ends where it does.
        """
        reason = self._abort_reason
        events = (*self._next_events, RunEvent(EventKind.ABORTED, self.t, detail=reason))
        self._next_events = []
        nodes = {
            node_id: NodeTick(_STATUS[behaviour.status], behaviour.feedback_message, 0.0)
            for node_id, behaviour in walk(self.root)
            if behaviour.status != py_trees.common.Status.INVALID
        }
        # (the limbs of an agent whose process ended are stale: they cannot answer again,
        # though their last state is not old enough yet to be called so)
        gone = self.error.limbs if self.error is not None and self.error.gone else ()
        limbs: dict[str, LimbTick] = {}
        for name, limb in self.context.limbs.items():
            state = limb.link.state
            if state is None:
                limbs[name] = LimbTick(None, None, None, None, 0, True)
                continue
            q = state.q if type(state.q) is tuple else tuple(state.q)
            stale = limb.link.is_stale or name in gone
            pose = None if name in gone else limb.last_pose()
            limbs[name] = LimbTick(pose, None, q, None, int(limb.health), stale)
        snapshot = TickSnapshot(
            t=self.t,
            tick=self.ticks,
            nodes=MappingProxyType(nodes),
            limbs=MappingProxyType(limbs),
            bases=self._current_bases(),
            events=events,
            skills=MappingProxyType({}),
        )
        self.sinks.tick(snapshot)

    def _hold_all(self) -> None:
        for limb in self.context.limbs.values():
            limb.link.send_command(CommandMode.HOLD)
        self._claimed_at = self._wall()  # (a hold renews the lease as a claim does)

    def _claim_limbs(self) -> None:
        """Before a real-clock run's first tick, claim every limb (blocking, section 5.9).

        It makes the run each limb's commander before its tree commands any, and finds a
        limb another client (another runner, a tool) commands before the run moves anything.
        A link without ``claim`` (a test's fake) and a limb whose agent is older than
        ``claim`` (it answers ``unknown_type``) are kept as before: by the run's commands, and
        by holds while the run is paused. A limb whose agent does not answer in time is
        claimed again by :meth:`_keep_limbs` (its link goes stale if the agent is gone).

        Raises:
            AgentError: naming the limb, its agent's endpoint, how long ago the other
                client's last command came and what to do, when another client commands a
                limb: the run does not start.
        """
        for name, limb in self.context.limbs.items():
            link = limb.link
            claim = getattr(link, "claim", None)
            send_claim = getattr(link, "send_claim", None)
            if not callable(claim) or not callable(send_claim):
                self._unclaimed.append(name)
                continue
            try:
                claim(CLAIM_TIMEOUT_S)
            except RemoteError as exc:
                if exc.code == ErrorCode.COMMANDED_ELSEWHERE:
                    raise AgentError(
                        (name,),
                        f"limb {name}: another client commands it, its agent refused this "
                        f"run's claim: {exc}; the run does not start (one limb takes one "
                        "commander): stop the other client (another runner, a tool) or let it "
                        "finish, then run again",
                    ) from None
                if exc.code != ErrorCode.UNKNOWN_TYPE:
                    raise AgentError(
                        (name,),
                        f"limb {name}: its agent refused this run's claim of it: {exc}; the "
                        "run does not start",
                    ) from None
                self._message(
                    f"limb {name}: its agent ({exc.endpoint}) is older than the claim request "
                    "(protocol section 5.9): the run keeps the limb by its commands only (and "
                    "by holds while paused), so another client may take it while the run "
                    "sends it none for over 1 s; update the agent"
                )
                self._unclaimed.append(name)
                continue
            except TransportError as exc:  # (no answer in time: claimed again while it runs)
                self._message(f"limb {name}: its claim before the first tick failed ({exc})")
            self._claims.append(send_claim)
        self._claimed_at = self._wall()

    def _keep_limbs(self) -> None:
        """In the real clock, claim every limb again each :data:`HOLD_RENEW_S`, moving nothing.

        Only a command (or a claim) renews the agents' one-commander lease (1 s): a limb the
        run sends no command for a while (it waits while another limb moves, between two
        nodes, while the run is paused) would otherwise be free for another client to move
        under the run (a reviewer's second client did). The claims renew the lease without
        changing what the limb does; an agent older than ``claim`` gets holds instead, while
        the run is paused only. Each claim is sent to every limb, commanded this interval or
        not: a command sent renews nothing when the agent refuses it before taking it, or
        when the limb is away (disassembled), and one claim per limb per 0.25 s is little
        next to the commands. Paused, the replies are read here; running, the next tick
        reads them. (A sim-clock agent keeps the limbs of the run that steps it without a
        lease.)

        Raises:
            AgentError: when an agent refused a claim or a hold for good (another client
                commands the limb): the run stops rather than take turns with it.
        """
        if self.run_clock.lockstep:
            return
        if self._wall() - self._claimed_at >= HOLD_RENEW_S:
            for send_claim in self._claims:
                send_claim()
            if self.paused:
                for name in self._unclaimed:
                    self.context.limbs[name].link.send_command(CommandMode.HOLD)
            self._claimed_at = self._wall()
        if self.paused:
            for agent in self.agents:
                agent.poll()
            self._check_refusals()

    # -- the summary --------------------------------------------------------------------------

    def node_summaries(self) -> list[dict[str, Any]]:
        """``summary.json``'s ``nodes``: per node id its name, type, ticks, busy time, status."""
        out = []
        for node_id, behaviour in walk(self.root):
            ticks, busy, last = self._stats.get(node_id, (0, 0.0, None))
            out.append(
                {
                    "id": node_id,
                    "name": behaviour.name,
                    "type": getattr(behaviour, "node_type", "") or type(behaviour).__name__,
                    "ticks": ticks,
                    "busy_s": busy,
                    "last_status": None if last is None else last.value,
                }
            )
        return out

    def summary(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``summary.json`` content of this run (see ``docs/record.md``)."""
        telemetry: Telemetry = self.context.telemetry
        injected = [f for f in self.faults if f.injected]
        return {
            "v": 2,
            "mission": self.name,
            "mission_file": self.info.mission_file,
            **(extra or {}),
            "outcome": (self.outcome or RunOutcome.ABORTED).value,
            "seed": self.options.seed,
            "clock": self.options.clock,
            "rate_hz": self.options.rate_hz,
            "sim_time_s": self.t,
            "wall_time_s": self.run_clock.elapsed(),
            "startup_s": self.startup_s,
            "ticks": self.ticks,
            "faults_injected": len(injected),
            "faults_recovered": sum(1 for f in injected if f.recovered_at is not None),
            "recoveries": telemetry.recoveries,
            "max_command_state_distance": telemetry.max_command_state_distance,
            "metrics": telemetry.metrics,
            "faults": self.fault_schedule.summary(),
            "faults_skipped": self.fault_schedule.skipped(
                self.t if self.outcome is not None else None
            ),
            **self._tick_figures(),
            "nodes": self.node_summaries(),
            "failure": self.failure_message(),
        }

    def failure_message(self) -> str | None:
        """Why the run did not succeed: the deepest failed node's feedback, or the abort."""
        if self.outcome is RunOutcome.ABORTED:
            return self._abort_reason
        if self.outcome is not RunOutcome.FAILURE:
            return None
        node = failed_leaf(self.root)
        message = "the tree failed" if node is None else f"{node.name}: {node.feedback_message}"
        refused = self._refusals_text()
        return f"{message} ({refused})" if refused else message

    def _refusals_text(self) -> str:
        """The limbs whose agents refused the run's commands: how many, and the last refusal.

        A move that times out or stalls says how far its limbs got; the agent may have
        refused every command it sent (a driver whose ``command`` raises, a bus that fails:
        ``internal``), which only the replies said. IK failures are left out: the moves
        report them themselves.
        """
        notes = []
        for name, limb in self.context.limbs.items():
            error = getattr(limb.link, "last_error", None)
            if not isinstance(error, RemoteError) or error.code == ErrorCode.IK_FAILED:
                continue
            count = getattr(limb.link, "command_errors", 0)
            notes.append(
                f"limb {name}: its agent refused {count} of the run's commands, the last: {error}"
            )
        return "; ".join(notes)

    # -- the tick limits (issue 19) ------------------------------------------------------------

    def _watched_tick(self, t: float) -> None:
        """One tick, its wall time counted against the tick period.

        Raises:
            TickOverrun: when the tree's tick ran longer than ``max_tick_s`` and was
                interrupted (:meth:`_tick_tree`).
        """
        began = self._wall()
        self._tick(t)
        took = self._wall() - began
        self.max_tick_wall_s = max(self.max_tick_wall_s, took)
        if not self.run_clock.lockstep and took > 1.0 / self.options.rate_hz:
            self.tick_overruns += 1

    def _tick_tree(self) -> None:
        """Tick the tree under the watchdog: the nodes' updates, where a tick can hang.

        The rest of a tick is bounded already (the lockstep waits at most
        ``step_timeout_s``), so a loaded machine's slow steps never count against
        ``max_tick_s``.

        Raises:
            TickOverrun: when the tree's tick ran longer than ``max_tick_s``.
        """
        self._watchdog.enter(self.ticks)
        self.tree.tick()
        self._watchdog.leave()

    def _tick_overran(self) -> None:
        """The watchdog interrupted a tick: abort, naming the node it was ticking."""
        overrun = self._watchdog.overrun
        if overrun is None:  # raised by a node itself: still a tick that did not end
            self._abort(f"tick {self.ticks} was interrupted (TickOverrun raised in a node)")
            return
        self.max_tick_wall_s = max(self.max_tick_wall_s, overrun.elapsed_s)
        self._abort(overrun.message)

    def _tick_figures(self) -> dict[str, Any]:
        """``summary.json``'s tick figures: overruns of the period (real clock), longest tick."""
        return {
            "tick_overruns": None if self.run_clock.lockstep else self.tick_overruns,
            "max_tick_wall_s": self.max_tick_wall_s,
            "max_tick_s": self.options.max_tick_s,
        }


def interrupted_why(exc: BaseException) -> str:
    """Why an interrupted run stopped: the signal's name, or Ctrl-C."""
    signal_name = getattr(exc, "signal_name", None)
    return f"interrupted ({signal_name or 'Ctrl-C'})"


#: The start of the name of the temporary folder of a run's agent output (no ``--record``).
AGENTS_DIR_PREFIX: Final = "limbtree-agents-"


def agent_log_dir(record_dir: Path | None) -> tuple[Path, OwnedTempDir | None]:
    """Where agent output goes: the record's ``agents`` folder, or a fresh temporary one.

    Returns:
        The folder, and the temporary folder's handle (None with a record): the run
        removes it at its end, or keeps it when an error message points into it.
    """
    if record_dir is not None:
        return record_dir / "agents", None
    # (the folders of runs killed with SIGKILL go first: limbtree.tempdirs)
    temporary = OwnedTempDir(AGENTS_DIR_PREFIX)
    return temporary.path, temporary


__all__ = [
    "Operator",
    "RunInfo",
    "RunOptions",
    "RunOutcome",
    "Runner",
    "ScheduledFault",
    "SinkFailure",
    "TickClock",
]
