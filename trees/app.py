"""``limbtree run``, ``check`` and ``tree``: from a mission file to a finished run.

1. Load and validate the mission (every problem as ``file:line:column``), before anything
   moves.
2. Start a simulated agent process for each plant marked ``sim`` (a ``robots`` entry: one
   agent for all its limbs; a ``limbs`` entry: one for its limb); connect one client to
   every agent and check that it describes the robot the mission declares.
3. Build the tree over the limbs, run it, write the record, stop the agents.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TextIO

import zmq

from limbtree.kinematics import Pose
from limbtree.robots import RobotSpec, load_robot, robot_names
from limbtree.tempdirs import OwnedTempDir
from limbtree.transport import AgentClient, AgentDescription, ping_endpoint
from limbtree.transport.clock import ClockMode
from limbtree.transport.driver import JointInfo, LimbDescription
from limbtree.transport.errors import TransportError
from limbtree.transport.orphan import watch_parent
from limbtree.transport.plant import BaseState
from limbtree.trees.behaviours.climbing import physics_of, terrain_from_physics
from limbtree.trees.builder import build_tree
from limbtree.trees.connection import AgentTarget, unreachable_message, unresolved
from limbtree.trees.context import AutoConfirm, MissionContext, Operator
from limbtree.trees.control import SharedOperator
from limbtree.trees.display import HeadlessProgress, LiveView, TerminalKeyboard, TerminalOperator
from limbtree.trees.errors import AgentError, RunError
from limbtree.trees.export.values import plural
from limbtree.trees.header import limb_info, world_of
from limbtree.trees.interrupts import SWEEP_ENDED, AbortSignals, signals_abort
from limbtree.trees.launcher import STARTUP_TIMEOUT_S, SimAgents, SimAgentSpec
from limbtree.trees.limbs import BasePoses, LimbHandle
from limbtree.trees.lockstep import PlantAgent
from limbtree.trees.mission import Mission, load_mission
from limbtree.trees.mission.errors import MissionError, Problem
from limbtree.trees.mission.loops import mission_warnings
from limbtree.trees.mission.model import PlantKind, RobotDecl
from limbtree.trees.nodes import NodeRegistry, default_registry
from limbtree.trees.reach import reach_problems, recover_problems, world_grasp_points
from limbtree.trees.recorder import BEING_WRITTEN, being_written
from limbtree.trees.runner import (
    RunInfo,
    Runner,
    RunOptions,
    RunOutcome,
    ScheduledFault,
    TickClock,
    agent_log_dir,
    interrupted_why,
)
from limbtree.trees.stream import RobotInfo, TickSink
from limbtree.trees.targets import start_postures, target_problems

if TYPE_CHECKING:  # the web view's imports wait for --view web
    from limbtree.kinematics import KinematicChain
    from limbtree.trees.web.link import WebLink

#: A limb is stale after this long without a state [s of mission time].
STALE_AFTER_S = 0.25
#: How long the runner waits for an agent it did not start to release its limbs at the end [s].
RELEASE_TIMEOUT_S = 0.5
#: How long the runner waits for each agent to describe its plant at the start [s].
DESCRIBE_TIMEOUT_S = 5.0


def robot_catalogue() -> dict[str, tuple[str, ...]]:
    """Robot name -> its limb (chain) names, for the mission validator."""
    return {name: load_robot(name).limb_names for name in robot_names()}


def load(
    path: Path,
    overrides: Mapping[str, str] | None = None,
    seed: int = 0,
    registry: NodeRegistry | None = None,
) -> Mission:
    """Load and validate a mission file (raises ``MissionError`` listing every problem).

    Besides the file's own checks: no ``sync_move`` waypoint lies beyond its limb's reach
    (absolute ones, and relative ones of a limb's first move: :mod:`limbtree.trees.reach`);
    align targets, posture names and joint counts fit the world and the robots
    (:mod:`limbtree.trees.targets`).

    ``registry``: the node types (built once per run and shared with the builder: it scans
    the installed packages' entry points; the reach check asks it which limbs each node
    commands); None builds the default.
    """
    from limbtree.robots.modules import module_names

    mission = load_mission(
        path,
        robots=robot_catalogue(),
        overrides=overrides or {},
        seed=seed,
        modules=module_names(),
        registry=registry,
    )
    problems = (
        reach_problems(mission, registry)
        + recover_problems(mission, registry)
        + target_problems(mission, registry)
    )
    if problems:  # (in file order, as the file's own problems are)
        problems.sort(key=_place)
        raise MissionError(problems)
    return mission


def check_fault_clock(mission: Mission, clock: str | None = None) -> None:
    """Refuse scheduled faults in a run whose clock cannot inject them (the real clock).

    Args:
        mission: the loaded mission.
        clock: the clock the run is given (``--clock``), or None for the mission's own.

    Raises:
        MissionError: at the file's first fault, naming the clock and how to change it.
    """
    if (clock or mission.clock) != "real" or not mission.faults:
        return
    first = min(mission.faults, key=lambda f: (f.location.line, f.location.column))  # in the file
    why = "but clock: real" if clock is None else "but --clock real"
    fix = "set clock: sim (or run with --clock sim)" if clock is None else "run with --clock sim"
    raise MissionError(
        [
            Problem(
                first.location,
                f"{faults_text(mission)} scheduled {why}; faults are injected into simulated "
                f"limbs in lockstep, so they need the sim clock: {fix}, or remove the faults",
            )
        ]
    )


def faults_text(mission: Mission) -> str:
    """How many faults a mission schedules: ``4 faults``, or ``29 disruptions (58 limb faults)``.

    A drawn fault that hits several limbs at once is one disruption (as seed 000 Table II and
    the README count them) and one fault per limb (as the run's summary counts them).
    """
    disruptions = {
        (f.at_s, f.kind, f.duration_s, f.location) if f.drawn else (i,)
        for i, f in enumerate(mission.faults)
    }
    count = len(mission.faults)
    if len(disruptions) == count:
        return f"{count} fault{'s' if count != 1 else ''}"
    groups = len(disruptions)
    return (
        f"{groups} disruption{'s' if groups != 1 else ''} "
        f"({count} limb fault{'s' if count != 1 else ''})"
    )


def _place(problem: Problem) -> tuple[bool, str, int, int]:
    """Command-line values first, then each file's problems in the order of its lines."""
    at = problem.location
    return (not at.on_command_line, at.file, at.line, at.column)


def world_physics(mission: Mission) -> dict[str, Any]:
    """The first ``mujoco`` robot's plant settings as a map (empty without one)."""
    for robot in mission.robots:
        if robot.plant is PlantKind.MUJOCO:
            return physics_of(physics_json(mission, robot))
    return {}


def world_json(mission: Mission, base: Pose) -> str | None:
    """The mission's world modules in one limb's base frame, as ``limbtree agent --world``."""
    if not mission.world:
        return None
    to_base = base.inverse()
    entries = [
        {
            "name": item.name,
            "module": item.module,
            "pose": (to_base @ Pose.from_array(item.pose)).as_list(),
        }
        for item in mission.world
    ]
    return json.dumps(entries)


@dataclass
class RunRequest:
    """What ``limbtree run`` was asked (its flags)."""

    mission: Path
    clock: str | None = None
    speed: float | None = None
    seed: int = 0
    overrides: Mapping[str, str] | None = None
    record: Path | None = None
    headless: bool = False
    auto_confirm: bool = False
    web: WebOptions | None = None
    #: A process whose end aborts the run (a sweep's: ``LIMBTREE_STOP_WITH``), or None.
    stop_with: int | None = None
    #: Where the signals that abort the run are noted, already while the command line
    #: imported the libraries (a SIGTERM then aborts the run at its first safe point).
    signals: AbortSignals | None = None


@dataclass
class WebOptions:
    """``--view web``: where to serve the page (``docs/visualization.md``).

    Attributes:
        host: the address to bind (127.0.0.1: this machine only).
        port: the port (0 picks a free one).
        token: the token every request then needs, or None (one is drawn for control).
        insecure: serve a non-loopback ``host`` without a token.
    """

    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    insecure: bool = False


def _kinematics(
    robot: RobotSpec, limb: str | None, description: LimbDescription
) -> Callable[[], KinematicChain] | None:
    """A loader of the limb's chain, for :meth:`LimbHandle.pose_at`.

    None unless the chain ends at the limb's default end-effector (the frame its state
    reports): a limb whose first end is another link has no target frames from it.
    """
    spec = robot.limb(limb)
    ends = description.end_effectors
    if ends and spec.interfaces.get(ends[0], ends[0]) != spec.ee_link:
        return None
    return functools.partial(robot.chain, limb)


def _joints_differ(robot: RobotSpec, chain: str | None, described: LimbDescription) -> str | None:
    """How the joints an agent describes differ from the local description's, or None.

    Names, limits [rad or m] and speed limits [rad/s or m/s], to 1e-9 (they came through
    msgpack as float 64). The link lengths are not on the wire: those are not compared.
    """
    local = robot.limb(chain).joints
    theirs = described.joints
    names = [j.name for j in theirs]
    ours = [j.name for j in local]
    if names != ours:
        return f"the agent's joints are {', '.join(names)}; here {', '.join(ours)}"
    for mine, other in zip(local, theirs, strict=True):
        for what, a, b in (
            ("lower limit", mine.lower, other.lower),
            ("upper limit", mine.upper, other.upper),
            ("speed limit", mine.max_speed, other.max_speed),
        ):
            if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
                return f"joint {mine.name}'s {what} is {b:g} at the agent, {a:g} here"
    return None


def _postures(robot: RobotSpec, chain: str | None) -> dict[str, tuple[float, ...]]:
    limb = robot.limb(chain)
    return {name: tuple(values) for name, values in limb.postures.items()}


@contextlib.contextmanager
def _agents(
    mission: Mission,
    endpoints: Mapping[str, str],
    stale_after: float,
    clock: Any,
    lockstep: bool,
    release: Collection[str] = (),
) -> Iterator[dict[str, AgentClient]]:
    """One client per plant (robot), following the stream topics of its limbs.

    In lockstep (the sim clock) each tick's commands ride on the agent's ``step``: one
    message each way per agent per tick. At the end the agents of the robots in
    ``release`` (those this run did not start) are told that it commands their limbs no
    more, after its last commands (the limbs hold): the next run may command them at once,
    instead of after this one's lease.
    """
    # One ZeroMQ context (one I/O thread) for every agent: a context per client would start
    # as many I/O threads, and each send would wake its own (64 limbs: 3x slower ticks).
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    clients: dict[str, AgentClient] = {}
    try:
        for robot in mission.robots:
            try:
                clients[robot.name] = AgentClient(
                    endpoints[robot.name],
                    keys_dir=robot.keys,
                    stale_after_s=stale_after,
                    clock=clock,
                    context=context,
                    limbs=[mission.limb(name).limb for name in robot.limbs],
                    commands_ride_on_steps=lockstep,
                )
            except TransportError as exc:
                raise RunError(
                    unreachable_message(
                        agent_target(robot, endpoints), "setting up a client", exc, "-"
                    )
                ) from None
        yield clients
    finally:
        for name, client in clients.items():
            if name in release:
                with contextlib.suppress(TransportError):  # (gone: its lease runs out)
                    client.release(timeout_s=RELEASE_TIMEOUT_S)
            client.close()
        context.term()


def agent_specs(mission: Mission, clock_mode: str, seed: int) -> list[SimAgentSpec]:
    """One simulated agent per simulated plant.

    A ``robots`` entry's agent serves the whole robot, a ``limbs`` entry's its one limb
    (``limbtree agent --limb``).

    The seeds follow the plants' order (``seed * 1000 + i``), so a mission that declares
    only ``limbs`` draws the same noise as when every limb had its own agent.
    """
    specs = []
    simulated = [robot for robot in mission.robots if robot.simulated]
    for i, robot in enumerate(simulated):
        first = mission.limb(robot.limbs[0])
        base = Pose.from_array(robot.base_pose) if robot.base_pose else Pose()
        specs.append(
            SimAgentSpec(
                robot.name,
                robot.robot,
                None if robot.declared else first.limb,
                seed * 1000 + i,
                clock_mode,
                options=tuple((key, repr(float(value))) for key, value in first.sim.items()),
                world=world_json(mission, base),
                base=tuple(robot.base_pose) if robot.base_pose else None,
                plant=robot.plant.value,
                physics=physics_json(mission, robot) if robot.plant is PlantKind.MUJOCO else None,
            )
        )
    return specs


def physics_json(mission: Mission, robot: RobotDecl) -> str:
    """The ``limbtree agent --physics`` settings of a ``mujoco`` robot of the mission."""
    physics: dict[str, Any] = {
        "timestep_s": mission.timestep_s,
        "gravity": [0.0, 0.0, -mission.gravity_m_s2],
        "latched": dict(robot.latched),
        "postures": start_postures(mission, robot),
    }
    if mission.terrain is not None:
        physics["terrain"] = dict(mission.terrain)
    if mission.contact is not None:
        physics["contact"] = dict(mission.contact)
    if robot.servo is not None:
        physics["servo"] = dict(robot.servo)
    return json.dumps(physics)


def check_agent_clock(robot: str, endpoint: str, agent_clock: str, run_clock: str) -> None:
    """Refuse to run when an agent's clock is not the run's (issue 12, safety item 1).

    A ``sim`` run against a ``real``-clock agent races mission time past the limb's own (the
    skills then command it as if it moved many times faster); a ``real`` run cannot step a
    ``sim``-clock agent at all. Every agent is checked before the tree starts.

    Args:
        robot: the mission's robot (plant) name.
        endpoint: the agent's request endpoint.
        agent_clock: the clock the agent's ``describe`` reported (``real`` or ``sim``).
        run_clock: the run's clock (``real`` or ``sim``).

    Raises:
        RunError: naming the robot, the endpoint, both clocks and the two ways to fix it.
    """
    if agent_clock == run_clock:
        return
    raise RunError(
        f"robot {robot}: the agent at {endpoint} runs the {agent_clock} clock, but this run "
        f"uses the {run_clock} clock; run with --clock {agent_clock}, or start the agent with "
        f"--clock {run_clock}"
    )


def _handles(
    mission: Mission,
    clients: Mapping[str, AgentClient],
    endpoints: Mapping[str, str],
    *,
    clock_mode: str | None = None,
) -> dict[str, LimbHandle]:
    """Each limb's handle over its plant's agent; every agent must drive the robot declared.

    Args:
        mission: the mission.
        clients: one client per robot (plant).
        endpoints: each robot's agent endpoint.
        clock_mode: the run's clock; every agent must run it (None: not checked).

    Raises:
        RunError: naming the limb, the agent and both robots, when they differ; naming the
            robot, the agent and both clocks when the clocks differ; one line each when
            several agents cannot serve the run. An unreachable agent is named at once.
    """
    handles: dict[str, LimbHandle] = {}
    problems: list[str] = []
    for robot in mission.robots:
        not_found = unresolved(endpoints[robot.name])
        if not_found is not None:  # (said now, not after the describe's wait)
            target = agent_target(robot, endpoints)
            raise RunError(unreachable_message(target, "looking up its host name", not_found, "-"))
        try:
            described = clients[robot.name].describe(timeout_s=DESCRIBE_TIMEOUT_S)
        except TransportError as exc:
            tried = (
                "connecting and asking it to describe its plant, "
                f"waiting up to {DESCRIBE_TIMEOUT_S:g} s"
            )
            raise RunError(
                unreachable_message(agent_target(robot, endpoints), tried, exc)
            ) from None
        try:
            handles.update(
                _robot_handles(
                    mission,
                    robot,
                    described,
                    clients[robot.name],
                    endpoints[robot.name],
                    clock_mode,
                )
            )
        except RunError as exc:  # every agent that cannot serve the run is named, not the first
            problems.append(str(exc))
    if len(problems) > 1:
        raise RunError(
            f"the agents of {len(problems)} robots cannot serve this run:\n"
            + "\n".join(f"  - {problem}" for problem in problems)
        )
    if problems:
        raise RunError(problems[0])
    return handles


def _robot_handles(
    mission: Mission,
    robot: RobotDecl,
    described: AgentDescription,
    client: AgentClient,
    endpoint: str,
    clock_mode: str | None,
) -> dict[str, LimbHandle]:
    """The handles of one robot's limbs, over the agent at ``endpoint`` that described itself so.

    Raises:
        RunError: when the agent cannot serve the robot (see :func:`_handles`).
    """
    handles: dict[str, LimbHandle] = {}
    if clock_mode is not None:
        check_agent_clock(robot.name, endpoint, described.clock.value, clock_mode)
    if described.clock is ClockMode.SIM and described.agent_time > 0:
        raise RunError(
            f"robot {robot.name}: the sim-clock agent at {endpoint} was "
            f"stepped to t={described.agent_time:g} s already: another run is stepping "
            "it now, or an earlier run did. A sim-clock agent serves one run, from t=0: "
            "wait for the other run to end, then restart the agent (not while a run "
            "uses it: its limbs would jump back to their start)"
        )
    plant = described.plant
    base_poses = BasePoses()  # one per robot: its limbs share the base's pose
    for name in robot.limbs:
        limb = mission.limb(name)
        if limb.limb not in plant.limb_names:
            raise RunError(
                f"limb {name}: the agent at {endpoint} serves limbs "
                f"{', '.join(plant.limb_names)}, not {limb.limb}: give the limb's agent "
                f"the address of {limb.robot} {limb.limb}'s agent, or start this one for "
                f"it (limbtree agent --robot {limb.robot} --limb {limb.limb})"
            )
        description = plant.limb(limb.limb).description
        if description.robot != limb.robot:
            raise RunError(
                f"limb {name}: the agent at {endpoint} drives "
                f"{description.robot}, but the mission declares {limb.robot}: give the "
                f"limb's agent the address of a {limb.robot} agent, or start this one "
                f"with --robot {limb.robot}"
            )
        spec = load_robot(limb.robot)
        differs = _joints_differ(spec, limb.limb, description)
        if differs is not None:
            raise RunError(
                f"limb {name}: the agent at {endpoint} drives a {limb.robot} whose joints "
                f"differ from this computer's description of it ({spec.source}): {differs}; "
                "the run would command it with the wrong postures and limits: give both "
                "computers the same robot description (LIMBTREE_ROBOT_PATH, docs/robots.md)"
            )
        base = Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
        live_base: Callable[[], BaseState | None] | None = None
        if plant.floating_base:

            def live_base(client: AgentClient = client) -> BaseState | None:
                return client.base

        handles[name] = LimbHandle(
            name,
            description,
            client.link(limb.limb),
            base,
            _postures(spec, limb.limb),
            live_base=live_base,
            mount=Pose.from_array(plant.limb(limb.limb).mount),
            base_poses=base_poses,
            kinematics=_kinematics(spec, limb.limb, description),
        )
    return handles


def agent_target(robot: RobotDecl, endpoints: Mapping[str, str]) -> AgentTarget:
    """The agent of ``robot`` as connection errors name it."""
    return AgentTarget(
        robot.name, robot.robot, tuple(robot.limbs), endpoints[robot.name], robot.keys
    )


def _robots_info(mission: Mission, handles: Mapping[str, LimbHandle]) -> dict[str, RobotInfo]:
    """The header's robots: each plant with its limbs as the agents described them."""
    return {
        robot.name: RobotInfo(
            robot=robot.robot,
            plant=robot.plant.value,
            agent=robot.agent,
            limbs=MappingProxyType(
                {name: limb_info(handles[name], mission.limb(name).limb) for name in robot.limbs}
            ),
            base=Pose.from_array(robot.base_pose) if robot.base_pose else Pose(),
        )
        for robot in mission.robots
    }


#: The files of a run's record in its directory (``docs/record.md``).
RECORD_FILES: Final = ("summary.json", "log.msgpack")


def prepare_record_dir(directory: Path) -> None:
    """Make ``--record``'s directory, refusing one that holds a record already.

    A second run into the same directory would replace the first's summary and log and
    leave its agents' output and report plots beside the new ones: a mix no one could
    read. ``limbtree sweep`` clears a run's directory itself before running it again.

    Raises:
        RunError: the path is a file, holds a record, or cannot be made or written to;
            the message says what to do instead.
    """
    where = f"--record {directory}"
    if directory.exists() and not directory.is_dir():
        raise RunError(
            f"{where}: that is a file, not a directory; give the directory the record goes "
            "into (it is made when missing)"
        )
    if directory.is_dir() and being_written(directory):
        raise RunError(f"{where}: {BEING_WRITTEN}")
    old = [name for name in RECORD_FILES if (directory / name).exists()]
    if old:
        raise RunError(
            f"{where}: it already holds a run's record ({', '.join(old)}); a new run would "
            "overwrite it and leave that run's other files beside the new ones. Give a new "
            f"directory, or remove this one first (rm -r {directory})"
        )
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(
            f"{where}: cannot make the directory ({exc.strerror or exc}); give one you can write to"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RunError(f"{where}: the directory is not writable; give one you can write to")


def run_mission(
    request: RunRequest, out: TextIO | None = None, stdin: TextIO | None = None
) -> RunOutcome:
    """Run a mission file end to end; returns how it ended.

    SIGINT (Ctrl-C), SIGTERM and SIGHUP abort the run, during the agents' start-up too: the
    limbs hold, the record is closed with outcome ABORTED, the agents are stopped and the
    temporary folder of their output (when there is no ``--record``) is removed.

    Args:
        request: the flags.
        out: where progress goes (``sys.stdout`` when None).
        stdin: the operator's input (keys from a terminal, or ``p`` / ``r`` / ``a`` lines);
            ``sys.stdin`` when None.

    Raises:
        MissionError: the mission file is wrong (nothing was started).
        RunError: an agent could not be started or reached, or describes another robot, or
            an operator gate has no one to answer it (nothing was started).
    """
    out = sys.stdout if out is None else out  # (read now: a caller may have replaced it)
    registry = default_registry()
    mission = load(request.mission, request.overrides, request.seed, registry)
    for warning in mission_warnings(mission):
        print(warning, file=out)
    clock_mode = request.clock or mission.clock
    if clock_mode == "real" and request.speed is not None:
        raise RunError(
            f"--speed {request.speed:g} paces the sim clock; {mission.path} runs in the real "
            "clock, at the limbs' own pace: drop --speed, or add --clock sim"
        )
    check_fault_clock(mission, request.clock)
    keyboard = TerminalKeyboard(stdin)
    keyboard.answers = request.web is not None and not request.auto_confirm
    if request.web is not None:
        from limbtree.trees.web.server import check_binding, check_port

        check_binding(request.web.host, request.web.token, request.web.insecure)
        check_port(request.web.host, request.web.port)  # (before the agents start)
    if not request.auto_confirm and request.web is None:  # (the page can answer them)
        check_operator(mission, keyboard.interactive)
    made_record = request.record is not None and not request.record.exists()
    if request.record is not None:  # (made only once every other check has passed)
        prepare_record_dir(request.record)
    remote = [robot for robot in mission.robots if not robot.simulated]
    if clock_mode == "sim" and remote:
        names = ", ".join(robot.name for robot in remote)
        if len(remote) > 1:
            which = f"robots {names} use remote agents; the sim clock steps them"
        else:
            which = f"robot {names} uses a remote agent; the sim clock steps it"
        print(f"note: {which} as it steps simulated ones", file=out)
    live = not request.headless and out.isatty()
    progress: LiveView | HeadlessProgress
    view: LiveView | None = None
    if live:
        view = LiveView(out)
        progress = view
    else:
        progress = HeadlessProgress(out)
    operator: Operator
    if request.auto_confirm:
        operator = AutoConfirm()
    else:
        terminal_operator = TerminalOperator(keyboard, progress.on_message)
        if view is not None:
            view.operator = terminal_operator
        operator = terminal_operator
        if request.web is not None:
            terminal_operator.web = True
            operator = SharedOperator(terminal_operator, progress.on_message)
    keep_logs = request.record is not None
    started = _Started()
    log_dir: Path | None = None
    temporary: OwnedTempDir | None = None  # (log_dir, when there is no record)
    try:
        with signals_abort(state=request.signals) as signals:
            started.signals = signals
            if request.stop_with is not None:
                stop_with_process(request.stop_with, signals)
            signals.check()  # (one noted as the libraries imported: no agent is started)
            log_dir, temporary = agent_log_dir(request.record)
            return _run(
                request, mission, registry, clock_mode, keyboard, progress, view, operator,
                log_dir, started,
            )  # fmt: skip
    except KeyboardInterrupt as exc:
        if started.doing == "running":  # the runner closed its record: keep it
            return RunOutcome.ABORTED
        why = f"{interrupted_why(exc)} while {started.doing}"
        return _aborted_before_start(
            request, mission, registry, clock_mode, progress, why, started.startup_s()
        )
    except RunError as exc:
        # The message may name an agent's output file there: keep it.
        keep_logs = keep_logs or str(log_dir) in str(exc)
        # A run refused before it started leaves no folder of its own without a record in it
        # (a script would find a run folder with no outcome): only what an agent wrote.
        if request.record is not None and log_dir is not None:
            for empty in (log_dir, request.record) if made_record else (log_dir,):
                with contextlib.suppress(OSError):  # (not empty, or gone: left as it is)
                    empty.rmdir()
        raise
    finally:
        if temporary is not None:
            if keep_logs or started.keep_logs:
                temporary.keep()  # (an error message names a file in it)
            else:
                temporary.remove()


#: How long a run whose sweep is gone may take to abort and close its record [s], after
#: which its process ends (with status 3, as an orphaned agent's).
ORPHANED_RUN_GRACE_S = 30.0


def stop_with_process(pid: int, signals: AbortSignals) -> None:
    """Abort the run, as SIGTERM would, once process ``pid`` (the sweep that started it) ends.

    A sweep killed with SIGKILL cannot stop its runs; without this they would go on writing
    into folders that the sweep's next attempt clears and runs again.
    """
    watch_parent(pid, lambda: signals.note(SWEEP_ENDED), grace_s=ORPHANED_RUN_GRACE_S)


@dataclass
class _Started:
    """What the start-up was doing, for the message of a run interrupted during it."""

    doing: str = "starting the agents"
    signals: AbortSignals | None = None
    #: Whether a message of the run named an agent's output file (the file is then kept).
    keep_logs: bool = False
    #: When the command started [s, monotonic].
    since: float = field(default_factory=time.monotonic)

    def startup_s(self) -> float:
        """Wall time since the command started [s]."""
        return time.monotonic() - self.since


def _run(
    request: RunRequest,
    mission: Mission,
    registry: NodeRegistry,
    clock_mode: str,
    keyboard: TerminalKeyboard,
    progress: LiveView | HeadlessProgress,
    view: LiveView | None,
    operator: Operator,
    log_dir: Path,
    started: _Started,
) -> RunOutcome:
    """Start the agents, connect, build the tree and run it (inside the signal handlers)."""
    specs = agent_specs(mission, clock_mode, request.seed)
    remote = [robot for robot in mission.robots if not robot.simulated]
    clock = TickClock()
    with SimAgents(specs, log_dir) as agents:
        if specs:
            progress.on_message(
                f"starting {plural(len(specs), 'simulated agent')}: waiting until each "
                f"answers (up to {STARTUP_TIMEOUT_S:g} s)"
            )
        endpoints = agents.start(
            lambda endpoint, timeout: _answers(endpoint, timeout),
            started.signals.check if started.signals is not None else None,
        )
        endpoints.update({robot.name: robot.agent for robot in remote})
        started.doing = "connecting to the agents"
        lockstep = clock_mode == "sim"
        theirs = [robot.name for robot in remote]
        with _agents(mission, endpoints, STALE_AFTER_S, clock.now, lockstep, theirs) as clients:
            handles = _handles(mission, clients, endpoints, clock_mode=clock_mode)
            if started.signals is not None:
                started.signals.check()
            started.doing = "building the tree"
            physics = world_physics(mission)
            context = MissionContext(
                handles,
                clock.now,
                operator,
                grasp_points=world_grasp_points(mission),
                terrain=terrain_from_physics(physics),
                physics=physics,
            )
            root = build_tree(mission.root, context, registry)
            options = _options(request, mission, clock_mode)
            faults = [
                ScheduledFault(f.at_s, f.limb, f.kind, f.duration_s, dict(f.params))
                for f in mission.faults
            ]
            if started.signals is not None:  # (before the runner opens its record)
                started.signals.check()
            sinks: list[TickSink] = [progress]
            web = _web_view(request, root, operator, progress) if request.web else None
            if web is not None:
                sinks.append(web.sink)
            runner = Runner(
                mission.name,
                clock,
                root,
                context,
                [
                    PlantAgent(
                        clients[robot.name],
                        {name: mission.limb(name).limb for name in robot.limbs},
                        robot.name,
                    )
                    for robot in mission.robots
                ],
                faults,
                options,
                sinks,
                keyboard,
                info=_info(mission, handles),
                control=web.control if web is not None else None,
            )
            if web is not None:
                web.sink.recorder = runner.recorder  # (its packed maps go to the page)
                web.prepare(runner.header())
            # From here a signal is the runner's to act on: it stops before its first tick
            # (or between two), records the abort and closes the record it opened.
            started.doing = "running"
            signals = started.signals
            if signals is not None:
                runner.signalled = lambda: signals.received
            runner.agent_exit = agents.exit_of  # (remote agents are not its: None)
            runner.startup_s = started.startup_s()
            try:
                try:
                    with keyboard.raw():
                        outcome = runner.run()
                except AgentError as exc:
                    if not runner.started:  # (refused before it started: the command's error)
                        raise
                    # (its message names a dead agent's output file: that file is kept)
                    started.keep_logs = str(log_dir) in str(exc)
                    # The run stopped (limbs hold, record closed) and said why as it did:
                    # close as any aborted run does, the why once more in its summary, not a
                    # third time as the command's error.
                    outcome = RunOutcome.ABORTED
                _print_closing(runner, outcome, progress, view)
                if web is not None:
                    _linger(web, keyboard, progress.stream)
            finally:
                if web is not None:
                    web.close()
            return outcome


def _web_view(
    request: RunRequest, root: Any, operator: Operator, progress: LiveView | HeadlessProgress
) -> WebLink:
    """Serve the live run's page from a process of its own; prints its URL."""
    from limbtree.trees.identity import walk
    from limbtree.trees.web.link import WebLink

    assert request.web is not None
    options = request.web
    nodes = list(walk(root))
    web = WebLink(
        [node_id for node_id, _ in nodes],
        operator if isinstance(operator, SharedOperator) else None,
        host=options.host,
        port=options.port,
        token=options.token,
        say=progress.on_message,
        recovering=[node_id for node_id, b in nodes if getattr(b, "recovers", False)],
    )
    progress.on_message(f"web view: {web.url}")
    return web


def _linger(web: WebLink, keyboard: TerminalKeyboard, stream: TextIO) -> None:
    """In a terminal, keep the page up after the run until Enter or Ctrl-C."""
    web.linger()
    if not keyboard.interactive:
        return
    print(
        f"the run is over; its page stays up at {web.url}: press Enter to quit",
        file=stream,
        flush=True,
    )
    with contextlib.suppress(KeyboardInterrupt, EOFError):
        keyboard.stream.readline()


def _options(request: RunRequest, mission: Mission, clock_mode: str) -> RunOptions:
    return RunOptions(
        clock=clock_mode,
        rate_hz=mission.rate_hz,
        speed=request.speed,
        seed=request.seed,
        record_dir=request.record,
        max_tick_s=mission.max_tick_s,
    )


def _info(mission: Mission, handles: Mapping[str, LimbHandle]) -> RunInfo:
    return RunInfo(
        mission_file=str(mission.path),
        parameters=mission.parameters,
        robots=_robots_info(mission, handles),
        agents={limb.name: limb.agent for limb in mission.limbs},
        world=world_of(mission.terrain),
    )


def _print_closing(
    runner: Runner,
    outcome: RunOutcome,
    progress: LiveView | HeadlessProgress,
    view: LiveView | None,
) -> None:
    closing = _closing_line(runner, outcome, runner.recorder is not None)
    for failure in runner.sink_failures:
        closing += (
            f"\nwarning: {failure.sink} failed at t={failure.t:.2f} s and was "
            f"detached: {failure.error}"
        )
    if view is not None:
        view.print_below(closing)  # below the final frame, wrapped to the terminal
    else:
        progress.on_message(closing)


def _aborted_before_start(
    request: RunRequest,
    mission: Mission,
    registry: NodeRegistry,
    clock_mode: str,
    progress: LiveView | HeadlessProgress,
    why: str,
    startup_s: float | None = None,
) -> RunOutcome:
    """A run interrupted before its tree ran: the record says ABORTED, and why.

    The record's header describes the limbs from their robot descriptions (no agent
    answered yet); the log holds that header and one map with the ``aborted`` event.
    """
    handles = _offline_handles(mission)
    clock = TickClock()
    context = MissionContext(handles, clock.now)
    root = build_tree(mission.root, context, registry)
    runner = Runner(
        mission.name,
        clock,
        root,
        context,
        [],
        [],
        _options(request, mission, clock_mode),
        [progress],
        info=_info(mission, handles),
    )
    runner.startup_s = startup_s
    outcome = runner.abort_before_start(why)
    _print_closing(runner, outcome, progress, None)
    return outcome


def check_operator(mission: Mission, interactive: bool) -> None:
    """Refuse a mission whose operator gates no one can answer (before anything starts).

    Args:
        mission: the mission.
        interactive: whether stdin is a terminal (someone can press y or n).

    Raises:
        RunError: naming each gate (``file:line:column``) and ``--auto-confirm``.
    """
    if interactive:
        return
    gates = [node for node in mission.root.walk() if node.type == "operator_gate"]
    if not gates:
        return
    listed = "\n".join(
        f'{gate.location}: operator_gate "{gate.name}" asks "{gate.params.get("prompt", "")}"'
        for gate in gates
    )
    raise RunError(
        f"no one can answer the mission's operator gates: stdin is not a terminal (or is "
        "closed). Run with --auto-confirm to pass them by themselves, with --view web to "
        f"answer them in the web page, or from a terminal to answer them with y / n.\n{listed}"
    )


class _Offline:
    """A limb link for building a tree without agents (``limbtree tree``): never fresh."""

    state = None
    is_stale = True
    disassembled = False

    def send_command(self, mode: object, **fields: object) -> bool:
        return False

    def send_gripper(self, action: object) -> bool:
        return False


def offline_tree(path: Path, overrides: Mapping[str, str] | None = None) -> Any:
    """Build a mission's tree over placeholder limbs, to print it; nothing is started."""
    registry = default_registry()
    mission = load(path, overrides, registry=registry)
    context = MissionContext(_offline_handles(mission), lambda: 0.0)
    return build_tree(mission.root, context, registry)


def _offline_handles(mission: Mission) -> dict[str, LimbHandle]:
    """Placeholder limbs described from the robot descriptions (no agent answers)."""
    handles = {}
    for limb in mission.limbs:
        robot = load_robot(limb.robot)
        spec = robot.limb(limb.limb)
        description = LimbDescription(
            robot=limb.robot,
            driver="offline",
            joints=tuple(JointInfo(j.name, j.lower, j.upper, j.max_speed) for j in spec.joints),
            end_effectors=tuple(spec.end_effectors),
            command_modes=(),
        )
        base = Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
        handles[limb.name] = LimbHandle(
            limb.name, description, _Offline(), base, _postures(robot, limb.limb)
        )
    return handles


def _answers(endpoint: str, timeout_s: float) -> bool:
    try:
        ping_endpoint(endpoint, timeout_s=timeout_s)
    except Exception:
        return False
    return True


def _closing_line(runner: Runner, outcome: RunOutcome, recorded: bool) -> str:
    s = runner.end.summary if runner.end is not None else runner.summary()
    parts = [
        f"{outcome.value}: {runner.name} in {s['sim_time_s']:.2f} s mission time "
        f"({s['wall_time_s']:.2f} s wall, {plural(s['ticks'], 'tick')}"
        + (
            f"; stopped after {s['startup_s']:.2f} s of start-up)"
            if not s["ticks"] and s.get("startup_s") is not None and not runner.started
            else ")"
        ),
        f"faults {s['faults_recovered']}/{s['faults_injected']} recovered, "
        + (
            f"{len(skipped)} scheduled not injected (faults_skipped), "
            if (skipped := s.get("faults_skipped"))
            else ""
        )
        + f"{plural(s['recoveries'], 'recovery', 'recoveries')}"
        # (the hypersphere's distance, <= 1: said only when a skill clamped its commands)
        + (
            f", max clamp distance {s['max_command_state_distance']:.3f} (<= 1)"
            if runner.context.telemetry.clamped
            else ""
        ),
    ]
    if s["failure"]:  # (the deepest failed node's message, or why the run was aborted)
        why = "aborted: " if outcome is RunOutcome.ABORTED else "failed at "
        parts.append(f"{why}{s['failure']}")
    if recorded and runner.options.record_dir is not None:
        parts.append(f"record: {runner.options.record_dir}")
    return "\n".join(parts)
