"""Transport benchmark: limbtree agent round trip against bare pyzmq, and the stream rate.

Run: ``python benchmarks/transport.py [--n 20000] [--seconds 2]``.

In one run, on this machine, with each server in its own process:

1. ``step`` round trip: a :class:`LimbClient` steps a sim-clock :class:`LimbAgent` serving a
   7-joint point driver (the reply carries the full state), against a bare pyzmq REQ/REP echo
   of a payload as large as that reply. The cases are measured in alternating blocks so that
   machine noise hits all alike. Reported: p50, p99 and the ratios. Target (DESIGN.md):
   within 1.3x of bare pyzmq. Two agents: one that also publishes each stepped state on its
   stream (the default, for observers), and one with ``--quiet-steps``, as ``limbtree run``
   starts its sim agents (the reply carries the state; the stream would only repeat it).
2. ``command`` + ``step``: a non-blocking command followed by a step, for information; and
   the same command riding on the step (``commands_ride_on_steps``: what one lockstep tick of
   ``limbtree run`` does in the sim clock).
3. State stream: a real-clock agent asked to publish as fast as it can; the rate it publishes
   (from its state ``seq``) and the rate one plain SUB socket receives.

``--load [HOGS]`` measures 1 and 2 twice in one run, quiet and then beside HOGS CPU-hog
processes (default 1), and reports the step ratios both ways (targets 1.3x and 1.5x).

``--idle-poll`` holds ``/dev/cpu_dma_latency`` at 0 us for the whole run, as ``cyclictest``
does: idle cores then poll instead of halting, and no message waits for a core to wake up
(docs/performance.md has what that changes on a host whose idle cores halt at once). It
needs write access to the device (root, or a udev rule giving it to the user).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgpack
import zmq

from limbtree.transport import (
    CommandMode,
    GripperAction,
    JointInfo,
    LimbAgent,
    LimbClient,
    LimbDescription,
    LimbDriver,
    LimbState,
)
from limbtree.transport.exposure import ShutdownPolicy

N_JOINTS = 7


class PointDriver(LimbDriver):
    """Seven joints that jump to their targets: as little driver work as possible, so the
    figures are the transport's. The state has every field a real limb fills in."""

    def __init__(self) -> None:
        self.t = 0.0
        self.q: tuple[float, ...] = (0.0,) * N_JOINTS
        self.zeros = (0.0,) * N_JOINTS
        self.pose: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)

    def describe(self) -> LimbDescription:
        return LimbDescription(
            robot="bench_point",
            driver="bench",
            joints=tuple(JointInfo(f"j{i}", -10.0, 10.0, 1.0) for i in range(N_JOINTS)),
            end_effectors=("tip",),
            command_modes=(CommandMode.JOINT_POSITION, CommandMode.HOLD),
        )

    def advance(self, t: float) -> None:
        self.t = t

    def state(self) -> LimbState:
        return LimbState(
            t=self.t,
            q=self.q,
            dq=self.zeros,
            ee_poses={"tip": self.pose},
            effort=self.zeros,
        )

    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        if mode is CommandMode.JOINT_POSITION:
            self.q = tuple(payload["q"])
            self.pose = (*self.q[:3], 0.0, 0.0, 0.0, 1.0)

    def gripper(self, action: GripperAction) -> None:
        pass


# --------------------------------------------------------------------------------------------
# Servers (each runs in its own process)


def serve_agent(port: int, clock: str, rate_hz: float, quiet: bool = False) -> None:
    if clock == "real":  # (asked for "as fast as it can": every update is later than 1 us)
        logging.getLogger("limbtree.transport.agent").setLevel(logging.ERROR)
    agent = LimbAgent(
        PointDriver(),
        f"tcp://127.0.0.1:{port}",
        clock=clock,
        stream_rate_hz=rate_hz,
        publish_on_step=not quiet,
        shutdown=ShutdownPolicy(allow_remote=True),  # the benchmark stops it over the wire
    )
    agent.run()


def serve_echo(port: int) -> None:
    context = zmq.Context()
    rep = context.socket(zmq.REP)
    rep.linger = 0
    rep.bind(f"tcp://127.0.0.1:{port}")
    while True:
        message = rep.recv()
        if message == b"stop":
            rep.send(b"")
            break
        rep.send(message)
    rep.close()
    context.term()


def serve_router_echo(port: int) -> None:
    """The agent's socket pattern with nothing else: ROUTER frames echoed from Python."""
    context = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    router.bind(f"tcp://127.0.0.1:{port}")
    while True:
        identity = router.recv()
        message = router.recv()
        router.send(identity, zmq.SNDMORE)
        router.send(b"" if message == b"stop" else message)
        if message == b"stop":
            break
    router.close()
    context.term()


# --------------------------------------------------------------------------------------------
# Client side


def free_port_pair() -> int:
    """A port N with N and N+1 both free (checked by binding both)."""
    for _ in range(100):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
        return int(port)
    raise RuntimeError("no two consecutive free ports found")


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args])


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return p50, p99


def measure(fn: Callable[[], None], n: int) -> list[float]:
    clock = time.perf_counter
    out = []
    for _ in range(n):
        start_s = clock()
        fn()
        out.append(clock() - start_s)
    return out


def round_trips(n: int, blocks: int, goal: float = 1.3) -> dict[str, float]:
    """Measure and print the round-trip table; returns each step case's p50 ratio to bare."""
    agent_port, echo_port, router_port = free_port_pair(), free_port_pair(), free_port_pair()
    quiet_port, riding_port = free_port_pair(), free_port_pair()
    agent = start("--serve-agent", str(agent_port), "--clock", "sim")
    quiet_agent = start("--serve-agent", str(quiet_port), "--clock", "sim", "--quiet")
    # (an agent of its own: a sim-clock agent is stepped by one client at a time)
    riding_agent = start("--serve-agent", str(riding_port), "--clock", "sim", "--quiet")
    echo = start("--serve-echo", str(echo_port))
    router_echo = start("--serve-router-echo", str(router_port))
    context = zmq.Context()
    try:
        client = LimbClient(f"tcp://127.0.0.1:{agent_port}", context=context, subscribe=False)
        client.describe(timeout_s=10.0)
        quiet = LimbClient(f"tcp://127.0.0.1:{quiet_port}", context=context, subscribe=False)
        quiet.describe(timeout_s=10.0)
        # As limbtree run in the sim clock: the tick's command rides on the step.
        riding = LimbClient(
            f"tcp://127.0.0.1:{riding_port}",
            context=context,
            subscribe=False,
            commands_ride_on_steps=True,
        )
        riding.describe(timeout_s=10.0)
        req = context.socket(zmq.REQ)
        req.linger = 0
        req.connect(f"tcp://127.0.0.1:{echo_port}")
        dealer = context.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.connect(f"tcp://127.0.0.1:{router_port}")

        t = [0.0]

        def step() -> None:
            t[0] += 0.001
            client.step(t[0])

        def quiet_step() -> None:
            t[0] += 0.001
            quiet.step(t[0])

        target = [0.5] * N_JOINTS

        def command_and_step() -> None:
            client.send_command(CommandMode.JOINT_POSITION, q=target)
            step()

        def command_on_step() -> None:
            riding.send_command(CommandMode.JOINT_POSITION, q=target)
            t[0] += 0.001
            riding.step(t[0])

        # The echo payload is as large as the agent's step reply. (The probe steps first and
        # then gives the agent up: it is stepped by one client at a time.)
        probe = context.socket(zmq.DEALER)
        probe.linger = 0
        probe.connect(f"tcp://127.0.0.1:{agent_port}")
        probe.send(msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 0.0}))
        raw = probe.recv()
        reply = msgpack.unpackb(raw)
        if reply.get("type") != "step_reply":
            raise RuntimeError(f"the agent refused the probe's step: {reply}")
        reply_size = len(raw)
        probe.send(msgpack.packb({"v": 2, "type": "release", "seq": 2}))
        probe.recv()
        probe.close()
        client.step(0.0)
        payload = os.urandom(reply_size)

        def echo_once() -> None:
            req.send(payload)
            req.recv()

        def router_echo_once() -> None:
            dealer.send(payload)
            dealer.recv()

        quiet.step(0.0)
        for fn in (
            step,
            quiet_step,
            echo_once,
            router_echo_once,
            command_and_step,
            command_on_step,
        ):
            measure(fn, 2000)  # warm up
        per_block = max(1, n // blocks)
        agent_rt: list[float] = []
        bare_rt: list[float] = []
        router_rt: list[float] = []
        combo_rt: list[float] = []
        quiet_rt: list[float] = []
        riding_rt: list[float] = []
        cases = [
            (echo_once, bare_rt),
            (router_echo_once, router_rt),
            (step, agent_rt),
            (quiet_step, quiet_rt),
            (command_and_step, combo_rt),
            (command_on_step, riding_rt),
        ]
        for block in range(blocks):
            # each block starts with another case: no case always follows the same one
            shift = block % len(cases)
            for fn, times in cases[shift:] + cases[:shift]:
                times += measure(fn, per_block)
        req.send(b"stop")
        req.recv()
        dealer.send(b"stop")
        dealer.recv()
        dealer.close()
        for limb in (client, quiet, riding):
            limb.shutdown(timeout_s=5.0)
            limb.close()
        req.close()
    finally:
        context.term()
        for proc in (agent, quiet_agent, riding_agent, echo, router_echo):
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    bare = percentiles(bare_rt)
    rows = [
        ("bare pyzmq REQ/REP echo", bare),
        ("bare DEALER/ROUTER echo", percentiles(router_rt)),
        ("limbtree step, also streamed", percentiles(agent_rt)),
        ("limbtree step, --quiet-steps", percentiles(quiet_rt)),
        ("limbtree command + step", percentiles(combo_rt)),
        ("limbtree command on step", percentiles(riding_rt)),
    ]
    print(f"round trips: {n} per case, {blocks} alternating blocks, payload {reply_size} bytes")
    print(f"{'case':<28}{'p50 [us]':>10}{'p99 [us]':>10}{'p50 ratio':>11}{'p99 ratio':>11}")
    for name, (p50, p99) in rows:
        print(
            f"{name:<28}{p50 * 1e6:>10.1f}{p99 * 1e6:>10.1f}"
            f"{p50 / bare[0]:>10.2f}x{p99 / bare[1]:>10.2f}x"
        )
    ratios: dict[str, float] = {}
    for name, samples in (("streamed", agent_rt), ("--quiet-steps", quiet_rt)):
        ratio = percentiles(samples)[0] / bare[0]
        ratios[name] = ratio
        verdict = "meets" if ratio <= goal else "MISSES"
        print(f"step ({name}) p50 is {ratio:.2f}x bare pyzmq: {verdict} the {goal:g}x target")
    return ratios


def hog() -> None:
    """Burn one CPU until killed (the ``--load`` benchmark's neighbour)."""
    x = 0
    while True:
        x = (x + 1) % 1_000_003


def round_trips_under_load(n: int, blocks: int, hogs: int) -> None:
    """The round-trip comparison on a quiet machine, then beside ``hogs`` CPU-hog processes.

    Both tables are measured in one run; the summary gives each step case's ratio to bare
    pyzmq both ways (targets, DESIGN.md: 1.3x quiet, 1.5x under load).
    """
    print("quiet:")
    quiet = round_trips(n, blocks, goal=1.3)
    print()
    print(f"under load ({hogs} CPU-hog process{'es' if hogs != 1 else ''} beside it):")
    burners = [start("--hog") for _ in range(hogs)]
    try:
        time.sleep(0.5)  # let them reach full speed
        loaded = round_trips(n, blocks, goal=1.5)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    print()
    for name in quiet:
        print(
            f"step ({name}) p50 to bare pyzmq: {quiet[name]:.2f}x quiet (target 1.3x), "
            f"{loaded[name]:.2f}x under load (target 1.5x)"
        )


def stream_rate(seconds: float) -> None:
    port = free_port_pair()
    agent = start("--serve-agent", str(port), "--clock", "real", "--rate", "1000000")
    context = zmq.Context()
    try:
        client = LimbClient(f"tcp://127.0.0.1:{port}", context=context, subscribe=False)
        client.describe(timeout_s=10.0)
        sub = context.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = 100_000
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect(f"tcp://127.0.0.1:{port + 1}")
        sub.recv_multipart()  # connected
        time.sleep(0.2)
        while sub.poll(0):
            sub.recv_multipart()
        first = client.describe().state_seq
        start_s = time.perf_counter()
        received = 0
        while time.perf_counter() - start_s < seconds:
            if sub.poll(100):
                sub.recv_multipart()  # one state: its topic frame and its message
                received += 1
        elapsed = time.perf_counter() - start_s
        published = client.describe().state_seq - first
        client.shutdown(timeout_s=5.0)
        client.close()
        sub.close()
    finally:
        context.term()
        try:
            agent.wait(5.0)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()
    print(f"state stream over {elapsed:.1f} s, agent asked for as fast as it can:")
    print(f"{'published by the agent':<28}{published / elapsed:>10.0f} Hz")
    print(f"{'received by one SUB':<28}{received / elapsed:>10.0f} Hz")


CPU_LATENCY_DEVICE = "/dev/cpu_dma_latency"


@contextlib.contextmanager
def idle_poll(device: str = CPU_LATENCY_DEVICE) -> Iterator[None]:
    """Hold the kernel's CPU wake-up latency limit at 0 us while the block runs.

    The limit holds while the device stays open (the kernel's PM QoS interface), so it ends
    with the block, or with the process.

    Raises:
        SystemExit: naming the device and what to do, when it cannot be opened or written.
    """
    try:
        fd = os.open(device, os.O_WRONLY)
    except FileNotFoundError:
        raise SystemExit(
            f"--idle-poll: this kernel has no {device} (PM QoS); run without --idle-poll"
        ) from None
    except PermissionError:
        raise SystemExit(
            f"--idle-poll: cannot open {device} for writing: run as root, or give your user "
            "write access to it (a udev rule), or run without --idle-poll"
        ) from None
    try:
        os.write(fd, struct.pack("i", 0))
        yield
    finally:
        os.close(fd)


def idle_state() -> str:
    """How this machine's idle cores wait: the cpuidle driver and, under haltpoll, its poll time."""
    base = Path("/sys/devices/system/cpu/cpuidle")
    try:
        driver = (base / "current_driver").read_text().strip()
    except OSError:
        return "cpuidle: unknown"
    text = f"cpuidle driver {driver}"
    poll = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
    if driver == "haltpoll" and poll.exists():
        text += f", guest_halt_poll_ns {poll.read_text().strip()}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="round trips per case")
    parser.add_argument("--blocks", type=int, default=200, help="alternating blocks")
    parser.add_argument("--seconds", type=float, default=2.0, help="stream measurement time")
    parser.add_argument("--serve-agent", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-echo", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-router-echo", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--clock", default="sim", help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=100.0, help=argparse.SUPPRESS)
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hog", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--load", type=int, nargs="?", const=1, default=0, metavar="HOGS",
        help="also run the round trips beside HOGS CPU-hog processes (default 1) and report "
        "the ratios both ways",
    )  # fmt: skip
    parser.add_argument(
        "--idle-poll", action="store_true",
        help=f"hold {CPU_LATENCY_DEVICE} at 0 us for the run: idle cores poll, not halt",
    )  # fmt: skip
    args = parser.parse_args()
    if args.serve_agent is not None:
        serve_agent(args.serve_agent, args.clock, args.rate, args.quiet)
        return
    if args.serve_echo is not None:
        serve_echo(args.serve_echo)
        return
    if args.serve_router_echo is not None:
        serve_router_echo(args.serve_router_echo)
        return
    if args.hog:
        hog()
        return
    with idle_poll() if args.idle_poll else contextlib.nullcontext():
        print(
            f"python {sys.version.split()[0]}, pyzmq {zmq.__version__}, "
            f"libzmq {zmq.zmq_version()}; {idle_state()}"
            + (f"; {CPU_LATENCY_DEVICE} held at 0 us (--idle-poll)" if args.idle_poll else "")
        )
        if args.load:
            round_trips_under_load(args.n, args.blocks, args.load)
        else:
            round_trips(args.n, args.blocks)
        print()
        stream_rate(args.seconds)


if __name__ == "__main__":
    main()
