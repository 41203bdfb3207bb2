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
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TextIO

import zmq

from limbtree.kinematics import Pose
from limbtree.robots import load_robot, robot_names
from limbtree.transport import AgentClient, ping_endpoint
from limbtree.transport.driver import JointInfo, LimbDescription
from limbtree.trees.builder import build_tree
from limbtree.trees.context import AutoConfirm, MissionContext, Operator
from limbtree.trees.display import HeadlessProgress, LiveView, TerminalKeyboard, TerminalOperator
from limbtree.trees.errors import RunError
from limbtree.trees.header import limb_info
from limbtree.trees.launcher import SimAgents, SimAgentSpec
from limbtree.trees.limbs import LimbHandle
from limbtree.trees.lockstep import PlantAgent
from limbtree.trees.mission import Mission, load_mission
from limbtree.trees.nodes import NodeRegistry, default_registry
from limbtree.trees.runner import (
    RunInfo,
    Runner,
    RunOptions,
    RunOutcome,
    ScheduledFault,
    TickClock,
    default_log_dir,
)
from limbtree.trees.stream import RobotInfo, TickSink

#: A limb is stale after this long without a state [s of mission time].
STALE_AFTER_S = 0.25


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

    ``registry``: the node types (built once per run and shared with the builder: it scans
    the installed packages' entry points); None builds the default.
    """
    from limbtree.robots.modules import module_names

    return load_mission(
        path,
        robots=robot_catalogue(),
        overrides=overrides or {},
        seed=seed,
        modules=module_names(),
        registry=registry,
    )


def world_json(mission: Mission, base: Pose) -> str | None:
    """The mission's world modules in one limb's base frame, as ``limbtree agent --world``."""
    if not mission.world:
        return None
    to_base = base.inverse()
    entries = [
        {
            "name": item.name,
            "module": item.module,
            "pose": (to_base @ Pose.from_array(item.pose)).as_array().tolist(),
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


def _postures(robot: str, chain: str | None) -> dict[str, tuple[float, ...]]:
    limb = load_robot(robot).limb(chain)
    return {name: tuple(values) for name, values in limb.postures.items()}


@contextlib.contextmanager
def _agents(
    mission: Mission, endpoints: Mapping[str, str], stale_after: float, clock: Any
) -> Iterator[dict[str, AgentClient]]:
    """One client per plant (robot), following the stream topics of its limbs."""
    # One ZeroMQ context (one I/O thread) for every agent: a context per client would start
    # as many I/O threads, and each send would wake its own (64 limbs: 3x slower ticks).
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    clients: dict[str, AgentClient] = {}
    try:
        for robot in mission.robots:
            clients[robot.name] = AgentClient(
                endpoints[robot.name],
                keys_dir=robot.keys,
                stale_after_s=stale_after,
                clock=clock,
                context=context,
                limbs=[mission.limb(name).limb for name in robot.limbs],
            )
        yield clients
    finally:
        for client in clients.values():
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
            )
        )
    return specs


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
            robot, the agent and both clocks when the clocks differ.
    """
    handles: dict[str, LimbHandle] = {}
    for robot in mission.robots:
        described = clients[robot.name].describe(timeout_s=5.0)
        if clock_mode is not None:
            check_agent_clock(robot.name, endpoints[robot.name], described.clock.value, clock_mode)
        plant = described.plant
        for name in robot.limbs:
            limb = mission.limb(name)
            if limb.limb not in plant.limb_names:
                raise RunError(
                    f"limb {name}: the agent at {endpoints[robot.name]} serves limbs "
                    f"{', '.join(plant.limb_names)}, not {limb.limb}"
                )
            description = plant.limb(limb.limb).description
            if description.robot != limb.robot:
                raise RunError(
                    f"limb {name}: the agent at {endpoints[robot.name]} drives "
                    f"{description.robot}, but the mission declares {limb.robot}"
                )
            base = Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
            handles[name] = LimbHandle(
                name,
                description,
                clients[robot.name].link(limb.limb),
                base,
                _postures(limb.robot, limb.limb),
            )
    return handles


def _robots_info(mission: Mission, handles: Mapping[str, LimbHandle]) -> dict[str, RobotInfo]:
    """The header's robots: each plant with its limbs as the agents described them."""
    return {
        robot.name: RobotInfo(
            robot=robot.robot,
            plant=robot.plant.value,
            agent=robot.agent,
            limbs=MappingProxyType({name: limb_info(handles[name]) for name in robot.limbs}),
            base=Pose.from_array(robot.base_pose) if robot.base_pose else Pose(),
        )
        for robot in mission.robots
    }


def run_mission(request: RunRequest, out: TextIO = sys.stdout) -> RunOutcome:
    """Run a mission file end to end; returns how it ended.

    Raises:
        MissionError: the mission file is wrong (nothing was started).
        RunError: an agent could not be started or reached, or describes another robot.
    """
    registry = default_registry()
    mission = load(request.mission, request.overrides, request.seed, registry)
    clock_mode = request.clock or mission.clock
    if clock_mode == "real" and mission.faults:
        raise RunError(f"{mission.path}: scheduled faults need the sim clock; run with --clock sim")
    remote = [robot for robot in mission.robots if not robot.simulated]
    if clock_mode == "sim" and remote:
        names = ", ".join(robot.name for robot in remote)
        print(
            f"note: robots {names} use remote agents; they are stepped like simulated ones",
            file=out,
        )
    specs = agent_specs(mission, clock_mode, request.seed)
    log_dir = default_log_dir(request.record)
    keyboard = TerminalKeyboard()
    live = not request.headless and out.isatty()
    progress: LiveView | HeadlessProgress
    operator: Operator
    view: LiveView | None = None
    if live:
        view = LiveView(out)
        progress = view
    else:
        progress = HeadlessProgress(out)
    if request.auto_confirm:
        operator = AutoConfirm()
    else:
        terminal_operator = TerminalOperator(keyboard, progress.on_message)
        if view is not None:
            view.operator = terminal_operator
        operator = terminal_operator

    clock = TickClock()

    with SimAgents(specs, log_dir) as agents:
        progress.on_message(f"starting {len(specs)} simulated agent(s)...")
        endpoints = agents.start(lambda endpoint, timeout: _answers(endpoint, timeout))
        endpoints.update({robot.name: robot.agent for robot in remote})
        with _agents(mission, endpoints, STALE_AFTER_S, clock.now) as clients:
            handles = _handles(mission, clients, endpoints, clock_mode=clock_mode)
            context = MissionContext(handles, clock.now, operator)
            root = build_tree(mission.root, context, registry)
            options = RunOptions(
                clock=clock_mode,
                rate_hz=mission.rate_hz,
                speed=request.speed,
                seed=request.seed,
                record_dir=request.record,
            )
            faults = [
                ScheduledFault(f.at_s, f.limb, f.kind, f.duration_s, dict(f.params))
                for f in mission.faults
            ]
            info = RunInfo(
                mission_file=str(mission.path),
                parameters=mission.parameters,
                robots=_robots_info(mission, handles),
                agents={limb.name: limb.agent for limb in mission.limbs},
            )
            sinks: list[TickSink] = [progress]
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
                info=info,
            )
            with keyboard.raw():
                outcome = runner.run()
            closing = _closing_line(runner, outcome, runner.recorder is not None)
            for failure in runner.sink_failures:
                closing += (
                    f"\nwarning: {failure.sink} failed at t={failure.t:.2f} s and was "
                    f"detached: {failure.error}"
                )
            if view is not None:
                print(closing, file=out, flush=True)  # below the final frame
            else:
                progress.on_message(closing)
            return outcome


class _Offline:
    """A limb link for building a tree without agents (``limbtree tree``): never fresh."""

    state = None
    is_stale = True

    def send_command(self, mode: object, **fields: object) -> bool:
        return False

    def send_gripper(self, action: object) -> bool:
        return False


def offline_tree(path: Path, overrides: Mapping[str, str] | None = None) -> Any:
    """Build a mission's tree over placeholder limbs, to print it; nothing is started."""
    registry = default_registry()
    mission = load(path, overrides, registry=registry)
    handles = {}
    for limb in mission.limbs:
        spec = load_robot(limb.robot).limb(limb.limb)
        description = LimbDescription(
            robot=limb.robot,
            driver="offline",
            joints=tuple(JointInfo(j.name, j.lower, j.upper, j.max_speed) for j in spec.joints),
            end_effectors=tuple(spec.end_effectors),
            command_modes=(),
        )
        handles[limb.name] = LimbHandle(limb.name, description, _Offline())
    return build_tree(mission.root, MissionContext(handles, lambda: 0.0), registry)


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
        f"({s['wall_time_s']:.2f} s wall, {s['ticks']} ticks)",
        f"faults {s['faults_recovered']}/{s['faults_injected']} recovered, "
        f"{s['recoveries']} recoveries, max command-state distance "
        f"{s['max_command_state_distance']:.3f}",
    ]
    if s["failure"]:
        parts.append(f"failed at {s['failure']}")
    if recorded and runner.options.record_dir is not None:
        parts.append(f"record: {runner.options.record_dir}")
    return "\n".join(parts)
