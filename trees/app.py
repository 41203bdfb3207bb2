"""``limbtree run``, ``check`` and ``tree``: from a mission file to a finished run.

1. Load and validate the mission (every problem as ``file:line:column``), before anything
   moves.
2. Start a simulated agent process for each limb marked ``sim``; connect a client to every
   limb and check that its agent describes the robot the mission declares.
3. Build the tree over the limbs, run it, write the record, stop the agents.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import zmq

from limbtree.kinematics import Pose
from limbtree.robots import load_robot, robot_names
from limbtree.transport import LimbClient, ping_endpoint
from limbtree.transport.driver import JointInfo, LimbDescription
from limbtree.trees.builder import build_tree
from limbtree.trees.context import AutoConfirm, MissionContext, Operator
from limbtree.trees.display import HeadlessProgress, LiveView, TerminalKeyboard, TerminalOperator
from limbtree.trees.errors import RunError
from limbtree.trees.launcher import SimAgents, SimAgentSpec
from limbtree.trees.limbs import LimbHandle
from limbtree.trees.lockstep import one_limb_agents
from limbtree.trees.mission import Mission, load_mission
from limbtree.trees.runner import (
    RunInfo,
    Runner,
    RunOptions,
    RunOutcome,
    ScheduledFault,
    TickClock,
    default_log_dir,
)
from limbtree.trees.stream import TickSink

#: A limb is stale after this long without a state [s of mission time].
STALE_AFTER_S = 0.25


def robot_catalogue() -> dict[str, tuple[str, ...]]:
    """Robot name -> its limb (chain) names, for the mission validator."""
    return {name: load_robot(name).limb_names for name in robot_names()}


def load(path: Path, overrides: Mapping[str, str] | None = None, seed: int = 0) -> Mission:
    """Load and validate a mission file (raises ``MissionError`` listing every problem)."""
    from limbtree.robots.modules import module_names

    return load_mission(
        path,
        robots=robot_catalogue(),
        overrides=overrides or {},
        seed=seed,
        modules=module_names(),
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
def _clients(
    mission: Mission, endpoints: Mapping[str, str], stale_after: float, clock: Any
) -> Iterator[dict[str, LimbClient]]:
    # One ZeroMQ context (one I/O thread) for every limb: a context per client would start
    # as many I/O threads, and each send would wake its own (64 limbs: 3x slower ticks).
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    clients: dict[str, LimbClient] = {}
    try:
        for limb in mission.limbs:
            clients[limb.name] = LimbClient(
                endpoints[limb.name],
                limb=limb.limb,
                keys_dir=limb.keys,
                stale_after_s=stale_after,
                clock=clock,
                context=context,
            )
        yield clients
    finally:
        for client in clients.values():
            client.close()
        context.term()


def run_mission(request: RunRequest, out: TextIO = sys.stdout) -> RunOutcome:
    """Run a mission file end to end; returns how it ended.

    Raises:
        MissionError: the mission file is wrong (nothing was started).
        RunError: an agent could not be started or reached, or describes another robot.
    """
    mission = load(request.mission, request.overrides, request.seed)
    clock_mode = request.clock or mission.clock
    if clock_mode == "real" and mission.faults:
        raise RunError(f"{mission.path}: scheduled faults need the sim clock; run with --clock sim")
    sim_limbs = [limb for limb in mission.limbs if limb.agent == "sim"]
    remote = [limb for limb in mission.limbs if limb.agent != "sim"]
    if clock_mode == "sim" and remote:
        names = ", ".join(limb.name for limb in remote)
        print(
            f"note: limbs {names} use remote agents; they are stepped like simulated ones", file=out
        )
    specs = [
        SimAgentSpec(
            limb.name,
            limb.robot,
            limb.limb,
            request.seed * 1000 + i,
            clock_mode,
            options=tuple((key, repr(float(value))) for key, value in limb.sim.items()),
            world=world_json(
                mission, Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
            ),
            base=tuple(limb.base_pose) if limb.base_pose else None,
        )
        for i, limb in enumerate(sim_limbs)
    ]
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
        endpoints.update({limb.name: limb.agent for limb in remote})
        with _clients(mission, endpoints, STALE_AFTER_S, clock.now) as clients:
            handles: dict[str, LimbHandle] = {}
            for limb in mission.limbs:
                description = clients[limb.name].describe(timeout_s=5.0).limb
                if description.robot != limb.robot:
                    raise RunError(
                        f"limb {limb.name}: the agent at {endpoints[limb.name]} drives "
                        f"{description.robot}, but the mission declares {limb.robot}"
                    )
                base = Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
                handles[limb.name] = LimbHandle(
                    limb.name,
                    description,
                    clients[limb.name],
                    base,
                    _postures(limb.robot, limb.limb),
                )
            context = MissionContext(handles, clock.now, operator)
            root = build_tree(mission.root, context)
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
                agents={limb.name: limb.agent for limb in mission.limbs},
            )
            sinks: list[TickSink] = [progress]
            runner = Runner(
                mission.name,
                clock,
                root,
                context,
                one_limb_agents(clients),
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
    mission = load(path, overrides)
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
    return build_tree(mission.root, MissionContext(handles, lambda: 0.0))


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
