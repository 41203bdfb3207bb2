"""Run a mission file as ``limbtree run --clock sim`` does, with its agents in threads.

Same mission loading, agents (``PlantAgent`` over ``make_plant``, the sim clock), clients,
limb handles, tree and runner as :func:`limbtree.trees.app.run_mission`; only the agent
processes become in-thread agents on loopback, so a test runs a mission in a fraction of
the time. For missions without ``sim`` options or world modules (the tests' own).
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fake_driver import free_port_pair

from limbtree.kinematics import Pose
from limbtree.robots import make_plant
from limbtree.transport import ConfigError, PlantAgent
from limbtree.trees.app import STALE_AFTER_S, _agents, _handles, agent_specs, load
from limbtree.trees.builder import build_tree
from limbtree.trees.context import AutoConfirm, MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.faults import ScheduledFault
from limbtree.trees.lockstep import PlantAgent as SteppedPlant
from limbtree.trees.nodes import default_registry
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import Runner, RunOptions, TickClock


def _start_agent(plant: Any) -> PlantAgent:
    for _ in range(5):
        try:
            agent = PlantAgent(plant, f"tcp://127.0.0.1:{free_port_pair()}", clock="sim")
        except ConfigError:
            continue
        agent.start_in_thread()
        return agent
    raise RuntimeError("could not bind an agent on a free port pair")


def run_threaded(
    mission_file: Path,
    record: Path,
    overrides: Mapping[str, str] | None = None,
    seed: int = 0,
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Run ``mission_file`` in the sim clock; returns its summary, its ticks and its output."""
    registry = default_registry()
    mission = load(mission_file, overrides or {}, seed, registry)
    agents: list[PlantAgent] = []
    out = io.StringIO()
    try:
        endpoints = {}
        for spec in agent_specs(mission, "sim", seed):
            base = Pose.from_array(spec.base) if spec.base else None
            limbs = None if spec.chain is None else [spec.chain]
            agent = _start_agent(make_plant(spec.robot, limbs, seed=spec.seed, base=base))
            agents.append(agent)
            endpoints[spec.limb] = agent.request_endpoint
        clock = TickClock()
        with _agents(mission, endpoints, STALE_AFTER_S, clock.now, lockstep=True) as clients:
            handles = _handles(mission, clients, endpoints)
            context = MissionContext(handles, clock.now, AutoConfirm())
            root = build_tree(mission.root, context, registry)
            faults = [
                ScheduledFault(f.at_s, f.limb, f.kind, f.duration_s, dict(f.params))
                for f in mission.faults
            ]
            stepped = [
                SteppedPlant(
                    clients[robot.name],
                    {name: mission.limb(name).limb for name in robot.limbs},
                    robot.name,
                )
                for robot in mission.robots
            ]
            options = RunOptions(
                clock="sim", rate_hz=mission.rate_hz, seed=seed, record_dir=record,
                step_timeout_s=10.0, max_time_s=60.0,
            )  # fmt: skip
            runner = Runner(
                mission.name, clock, root, context, stepped, faults, options,
                [HeadlessProgress(out)],
            )  # fmt: skip
            runner.run()
    finally:
        for agent in agents:
            agent.stop(timeout_s=5.0)
    summary = json.loads((record / "summary.json").read_text())
    return summary, list(read_log(record / "log.msgpack")), out.getvalue()
