"""Tick rate of a synchronized move over n limbs, in both clocks, and the tree's own overhead.

Usage: ``python benchmarks/tick.py [--limbs 6 24 64] [--seconds 3] [--robustness]
[--plants 6 64] [--processes PAIRS] [--transport PAIRS] [--processes-seconds S]``

The limbs are real agents on loopback (ZeroMQ, msgpack), each driving a light point limb
(its end-effector tracks the command at 1 m/s), hosted by a few helper processes, so what is
measured is the runner's side of a tick: take in the states, tick the tree (the clamp over
all limbs), send the commands, record. Targets (DESIGN.md): 6 limbs at 1 kHz in the real
clock with p99 tick under 1 ms; 64 limbs at 100 Hz or more. ``--robustness`` also runs
``missions/robustness.yaml`` and reports how many times faster than real time it ran
(target, DESIGN.md: 25x). ``--processes PAIRS`` runs a slice of that mission with a process
per agent and with the default (one per core), alternately; ``--transport PAIRS`` with its
agents on loopback TCP and with the default (Unix domain sockets), alternately.
``--plants`` compares, side by side in the sim clock, n limbs as one plant behind one agent
(one ``step`` per tick) against n one-limb agents (n ``step`` per tick): the lockstep I/O of
a tick (step, states in, one command per limb), in ticks per second (target: 64 limbs as one
plant at 3x the rate of 64 one-limb agents).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zmq

from limbtree.kinematics import Pose
from limbtree.transport import AgentClient, LimbAgent, LimbClient, PlantAgent
from limbtree.transport.driver import (
    CommandMode,
    GripperAction,
    JointInfo,
    LimbDescription,
    LimbDriver,
    LimbState,
)
from limbtree.transport.plant import DriverPlant, Plant, PlantDescription, PlantLimb
from limbtree.trees.behaviours import SyncMoveBehaviour
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.launcher import free_port_pairs
from limbtree.trees.limbs import LimbHandle
from limbtree.trees.runner import Runner, RunOptions, TickClock


class PointLimb(LimbDriver):
    """An end-effector point that tracks its pose target at ``speed`` [m/s]."""

    def __init__(self, origin: Sequence[float], speed: float = 1.0) -> None:
        self.position = np.array(origin, dtype=float)
        self.target = self.position.copy()
        self.speed = speed
        self.t = 0.0

    def describe(self) -> LimbDescription:
        joints = tuple(JointInfo(f"x{i}", -10.0, 10.0, self.speed) for i in range(3))
        return LimbDescription("point", "sim", joints, ("ee",), (CommandMode.EE_POSE,))

    def advance(self, t: float) -> None:
        dt, self.t = max(0.0, t - self.t), max(t, self.t)
        d = self.target - self.position
        n = float(np.linalg.norm(d))
        step = self.speed * dt
        self.position = self.target.copy() if n <= step else self.position + d / n * step

    def state(self) -> LimbState:
        p = self.position.tolist()
        return LimbState(self.t, tuple(p), (0.0, 0.0, 0.0), {"ee": [*p, 0.0, 0.0, 0.0, 1.0]})

    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        if mode is CommandMode.EE_POSE:
            self.target = np.array(payload["pose"][:3], dtype=float)

    def gripper(self, action: GripperAction) -> None:
        return None


class PointPlant(DriverPlant):
    """``n`` point limbs on one fixed base: one plant, stepped together."""

    def __init__(self, n: int) -> None:
        self.points = {f"l{i}": PointLimb((float(i), 0.0, 0.0)) for i in range(n)}
        first = next(iter(self.points.values()))
        super().__init__(first, "l0")
        self._description = PlantDescription(
            "point",
            "kinematic",
            tuple(PlantLimb(name, point.describe()) for name, point in self.points.items()),
        )

    def advance(self, t: float) -> None:
        for point in self.points.values():
            point.advance(t)
        self._t = t

    def limb_state(self, limb: str) -> LimbState:
        return self.points[limb].state()

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        self.points[limb].command(mode, payload)

    def available(self, limb: str) -> bool:
        return True


def serve_plant(port: int, n: int) -> None:
    """Host process: one sim-clock agent serving ``n`` point limbs as one plant."""
    plant: Plant = PointPlant(n)
    agent = PlantAgent(plant, f"tcp://127.0.0.1:{port}", clock="sim", publish_on_step=False)
    agent.start_in_thread()
    print("ready", flush=True)
    sys.stdin.read()
    agent.stop()


def lockstep_rate(clients: Sequence[AgentClient], limbs: Sequence[str], seconds: float) -> float:
    """Ticks per second of lockstep I/O: step every agent, take the states, command each limb."""
    by_client = [(c, [name for name in limbs if name in c.limbs] or [None]) for c in clients]
    target = (0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    t = 0.0
    ticks = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        t += 0.01
        for client in clients:
            client.send_step(t, 5.0)
        for client, names in by_client:
            client.finish_step()
            for name in names:
                client.send_command(name, CommandMode.EE_POSE, pose=target)
        ticks += 1
    return ticks / (time.perf_counter() - began)


def compare_plants(n: int, seconds: float) -> tuple[float, float]:
    """(one plant behind one agent, n one-limb agents): lockstep ticks per second."""
    port = free_port_pairs(1)[0]
    host = subprocess.Popen(
        [sys.executable, __file__, "--serve-plant", f"{port},{n}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        if host.stdout is None or host.stdout.readline().strip() != "ready":
            raise RuntimeError("the plant agent did not start")
        # As limbtree run in the sim clock: each tick's commands ride on the step.
        ride = {"subscribe": False, "commands_ride_on_steps": True}
        with AgentClient(f"tcp://127.0.0.1:{port}", **ride) as one:
            names = one.describe(5.0).plant.limb_names
            plant_rate = lockstep_rate([one], names, seconds)
    finally:
        if host.stdin is not None:
            host.stdin.close()
        host.wait(timeout=10)
    with hosted_limbs(n, "sim", 100.0) as endpoints:
        context: zmq.Context[Any] = zmq.Context()
        clients = [
            AgentClient(e, context=context, **ride) for e in endpoints
        ]  # fmt: skip
        try:
            for client in clients:
                client.describe(5.0)
            agents_rate = lockstep_rate(clients, [], seconds)
        finally:
            for client in clients:
                client.close()
            context.term()
    return plant_rate, agents_rate


def serve(ports: Sequence[int], clock: str, rate_hz: float) -> None:
    """Host process: one agent thread per port, until stdin closes."""
    agents = []
    for i, port in enumerate(ports):
        driver = PointLimb((float(i), 0.0, 0.0))
        agent = LimbAgent(driver, f"tcp://127.0.0.1:{port}", clock=clock, stream_rate_hz=rate_hz)
        agent.start_in_thread()
        agents.append(agent)
    print("ready", flush=True)
    sys.stdin.read()
    for agent in agents:
        agent.stop()


@contextlib.contextmanager
def hosted_limbs(n: int, clock: str, rate_hz: float, hosts: int = 2) -> Iterator[list[str]]:
    """Start ``n`` point-limb agents in ``hosts`` helper processes; yield their endpoints."""
    ports = free_port_pairs(n)
    groups = [ports[i::hosts] for i in range(hosts) if ports[i::hosts]]
    processes = []
    try:
        for group in groups:
            command = [sys.executable, __file__, "--serve", ",".join(map(str, group)),
                       "--clock", clock, "--rate", str(rate_hz)]  # fmt: skip
            process = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            processes.append(process)
        for process in processes:
            if process.stdout is None or process.stdout.readline().strip() != "ready":
                raise RuntimeError("an agent host did not start")
        yield [f"tcp://127.0.0.1:{p}" for p in ports]
    finally:
        for process in processes:
            with contextlib.suppress(Exception):
                if process.stdin is not None:
                    process.stdin.close()
                process.wait(timeout=10)
            if process.poll() is None:
                process.kill()


def build(
    endpoints: Sequence[str],
    clock: TickClock,
    zmq_context: zmq.Context[Any],
    loop: bool = True,
    lockstep: bool = False,
) -> tuple[Any, ...]:
    """Clients (sharing one ZeroMQ context, as the runner's), limb handles and a looping
    square sync move over every limb."""
    # In the sim clock each tick's commands ride on the step, as limbtree run does.
    clients = {f"l{i}": LimbClient(e, stale_after_s=0.5, clock=clock.now, context=zmq_context,
                                   commands_ride_on_steps=lockstep)
               for i, e in enumerate(endpoints)}  # fmt: skip
    handles = {}
    for name, client in clients.items():
        handles[name] = LimbHandle(name, client.describe(5.0).limb, client, Pose())
    context = MissionContext(handles, clock.now)
    corners = [(0.1, 0.0, 0.0), (0.0, 0.1, 0.0), (-0.1, 0.0, 0.0), (0.0, -0.1, 0.0)]
    waypoints = [
        {name: (*c, 0.0, 0.0, 0.0, 1.0) for name in handles} for c in corners
    ]  # fmt: skip
    params = {"limbs": tuple(handles), "waypoints": waypoints, "frame": "relative",
              "p_e": 0.02, "r_e": math.inf, "norm": math.inf, "recovery": "last_valid",
              "monotonic": False, "max_speed": None, "settle": 0.002, "stale_timeout": 5.0,
              "loop": loop}  # fmt: skip
    root = SyncMoveBehaviour("square", context, params)
    return clients, context, root


def measure(n: int, clock_mode: str, rate_hz: float, seconds: float) -> dict[str, float]:
    """Tick a looping sync move over n limbs; per-tick times of the runner's own work."""
    stream_hz = rate_hz if clock_mode == "real" else 100.0
    with hosted_limbs(n, clock_mode, stream_hz) as endpoints:
        clock = TickClock()
        zmq_context: zmq.Context[Any] = zmq.Context()
        clients, context, root = build(endpoints, clock, zmq_context, lockstep=clock_mode == "sim")
        try:
            if clock_mode == "real":
                # Wait until every state has arrived.
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline:
                    for c in clients.values():
                        c.poll()
                    if all(c.state is not None for c in clients.values()):
                        break
                    time.sleep(0.01)
            options = RunOptions(clock=clock_mode, rate_hz=rate_hz, speed=None,
                                 max_time_s=seconds)  # fmt: skip
            runner = Runner("bench", clock, root, context, clients, [], options,
                            [HeadlessProgress(io.StringIO(), every_s=1e9)])  # fmt: skip
            durations: list[float] = []
            original = runner._tick

            def timed(t: float) -> None:
                began = time.perf_counter()
                original(t)
                durations.append(time.perf_counter() - began)

            runner._tick = timed  # type: ignore[method-assign]
            began = time.perf_counter()
            runner.run()
            wall = time.perf_counter() - began
            skill = root.busy_s / max(root.ticks, 1)
        finally:
            for c in clients.values():
                c.close()
            zmq_context.term()
    ticks = len(durations)
    per_tick = sorted(durations)
    p99 = per_tick[min(ticks - 1, int(0.99 * ticks))]
    mean = statistics.fmean(durations)
    return {
        "ticks": ticks,
        "rate_hz": ticks / wall,
        "p50_ms": per_tick[ticks // 2] * 1e3,
        "p99_ms": p99 * 1e3,
        "mean_ms": mean * 1e3,
        "skill_ms": skill * 1e3,
        "overhead_ms": (mean - skill) * 1e3,
    }


def robustness(
    duration_s: float | None = None, processes: int | None = None, transport: str | None = None
) -> tuple[float, float, float, int]:
    """Run the 12-minute robustness mission headless.

    Args:
        duration_s: its ``duration_s`` parameter (a slice of it), or None for the 12 minutes.
        processes: ``LIMBTREE_AGENT_PROCESSES`` (how many processes its six agents share),
            or None for ``limbtree run``'s choice (one per core).
        transport: ``LIMBTREE_AGENT_TRANSPORT`` (``tcp`` or ``ipc``), or None for
            ``limbtree run``'s choice (``ipc``).

    Returns:
        (sim time [s], wall time of the ticking [s], CPU time of the run's process and its
        agents, their start-up included [s], ticks).
    """
    with tempfile.TemporaryDirectory() as record:
        mission = Path(__file__).resolve().parent.parent / "missions" / "robustness.yaml"
        extra = [] if duration_s is None else ["--set", f"duration_s={duration_s:g}"]
        env = dict(os.environ)
        env.pop("LIMBTREE_AGENT_PROCESSES", None)
        env.pop("LIMBTREE_AGENT_TRANSPORT", None)
        if processes is not None:
            env["LIMBTREE_AGENT_PROCESSES"] = str(processes)
        if transport is not None:
            env["LIMBTREE_AGENT_TRANSPORT"] = transport
        process = subprocess.Popen(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
             "--record", record, *extra],
            stdout=subprocess.DEVNULL, env=env,
        )  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)  # the run's rusage, its agents' included
        process.returncode = os.waitstatus_to_exitcode(status)
        summary = json.loads((Path(record) / "summary.json").read_text())
    cpu = usage.ru_utime + usage.ru_stime
    return summary["sim_time_s"], summary["wall_time_s"], cpu, int(summary["ticks"])


def compare_runs(
    pairs: int, duration_s: float, what: str, cases: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Print the robustness mission's pace in two settings, run alternately.

    Args:
        pairs: how many runs of each.
        duration_s: mission time per run [s].
        what: what the two differ in, for the heading.
        cases: (label, :func:`robustness` keywords) of the other setting, then the default.
    """
    print(f"robustness.yaml, {duration_s:g} s of mission time per run, {pairs} pairs ({what}):")
    ratios = []
    for _ in range(pairs):
        pace = []
        for label, options in cases:
            sim, wall, cpu, ticks = robustness(duration_s, **options)
            pace.append(sim / wall)
            print(f"  {label:<28} {sim / wall:5.2f}x real time, {cpu / ticks * 1e3:5.2f} ms "
                  "of CPU per tick")  # fmt: skip
        ratios.append(pace[1] / pace[0])
    print(
        f"{cases[1][0]} against {cases[0][0]}: {statistics.median(ratios):.2f}x faster "
        f"(median of {pairs} pairs; {min(ratios):.2f} to {max(ratios):.2f})"
    )


def compare_processes(pairs: int, duration_s: float) -> None:
    """A process per agent against the default (the six agents dealt over one per core)."""
    cases = [("a process per agent", {"processes": 6}), ("one per core (default)", {})]
    compare_runs(pairs, duration_s, "a process per agent, then the default", cases)


def compare_transport(pairs: int, duration_s: float) -> None:
    """The agents on loopback TCP against the default (Unix domain sockets)."""
    cases = [("loopback TCP", {"transport": "tcp"}), ("Unix sockets (default)", {})]
    compare_runs(pairs, duration_s, "agents on loopback TCP, then the default", cases)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limbs", type=int, nargs="+", default=[6, 24, 64])
    parser.add_argument("--seconds", type=float, default=3.0, help="mission time per case")
    parser.add_argument("--robustness", action="store_true")
    parser.add_argument(
        "--processes", type=int, metavar="PAIRS",
        help="compare the robustness mission's agents in a process each against one per "
        "core, in PAIRS alternate runs of --processes-seconds of mission time",
    )  # fmt: skip
    parser.add_argument(
        "--transport", type=int, metavar="PAIRS",
        help="compare the robustness mission's agents on loopback TCP against Unix domain "
        "sockets, in PAIRS alternate runs of --processes-seconds of mission time",
    )  # fmt: skip
    parser.add_argument("--processes-seconds", type=float, default=120.0)
    parser.add_argument("--plants", type=int, nargs="*", help="compare one plant vs n agents")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--serve-plant", help=argparse.SUPPRESS)
    parser.add_argument("--clock", default="real", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=100.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve([int(p) for p in args.serve.split(",")], args.clock, args.rate)
        return
    if args.serve_plant:
        port, n = (int(v) for v in args.serve_plant.split(","))
        serve_plant(port, n)
        return
    if args.processes:
        compare_processes(args.processes, args.processes_seconds)
        return
    if args.transport:
        compare_transport(args.transport, args.processes_seconds)
        return
    if args.plants:
        print(f"{'limbs':>5} {'one plant ticks/s':>18} {'one agent per limb':>19} {'ratio':>6}")
        for n in args.plants:
            plant_rate, agents_rate = compare_plants(n, args.seconds)
            print(f"{n:>5} {plant_rate:18.0f} {agents_rate:19.0f} {plant_rate / agents_rate:6.2f}x")
        print("lockstep I/O of a tick in the sim clock (step, states in, one command per limb)")
        return
    print(f"{'limbs':>5} {'clock':<5} {'target Hz':>9} {'ticks/s':>9} {'p50 ms':>8} "
          f"{'p99 ms':>8} {'skill ms':>9} {'rest ms':>8}")  # fmt: skip
    for n in args.limbs:
        for clock_mode in ("real", "sim"):
            # Real clock: DESIGN.md's targets (1 kHz for six limbs, 100 Hz for more). Sim clock:
            # as fast as lockstep goes, at a nominal 100 Hz of mission time.
            target = 1000.0 if n <= 6 and clock_mode == "real" else 100.0
            r = measure(n, clock_mode, target, args.seconds)
            shown = f"{target:9.0f}" if clock_mode == "real" else f"{'max':>9}"
            print(f"{n:>5} {clock_mode:<5} {shown} {r['rate_hz']:9.0f} {r['p50_ms']:8.3f} "
                  f"{r['p99_ms']:8.3f} {r['skill_ms']:9.3f} {r['overhead_ms']:8.3f}")  # fmt: skip
    print(
        "skill ms: the sync move's own update (clamp, commands); rest: states in, tree, "
        "record, pacing excluded"
    )
    if args.robustness:
        sim, wall, cpu, ticks = robustness()
        print(
            f"robustness.yaml: {sim:.0f} s of mission time in {wall:.1f} s wall: "
            f"{sim / wall:.1f}x real time (target: 25x); {cpu / ticks * 1e3:.2f} ms of CPU "
            "per tick (the run and its six agents, start-up included; 25x on 2 cores needs "
            "under 3.2)"
        )


if __name__ == "__main__":
    threading.current_thread().name = "main"
    main()
