"""Start the simulated agents of a mission as real processes on loopback.

``limbtree run`` drives limbs marked ``sim`` through the same ZeroMQ protocol as remote ones:
each gets its own ``limbtree agent`` process (serving a one-limb plant, its base in the world)
on 127.0.0.1 with a free port pair, and is stopped (then killed, if it must be) when the run
ends, whatever way it ends. Each is given the runner's process id (``--parent-pid``), so an
agent whose runner was killed outright (SIGKILL, a crash) ends by itself within a few
seconds (:mod:`limbtree.transport.orphan`). On Linux each agent is forked from the runner
after the robotics libraries were imported once (:mod:`limbtree.trees.forked`), so it serves
within a fraction of a second instead of importing them again for three seconds.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from limbtree.transport.exposure import SHUTDOWN_TOKEN_ENV, new_shutdown_token
from limbtree.trees.errors import RunError
from limbtree.trees.forked import ForkedProcess, can_fork, fork_agent, prepare_to_fork

#: How long an agent process may take to answer its first ping [s] (importing the robotics
#: libraries and loading the robot description take a few seconds on a busy machine).
STARTUP_TIMEOUT_S = 60.0


def free_port_pair(host: str = "127.0.0.1", attempts: int = 50) -> int:
    """A port N such that N and N+1 are both free on ``host`` right now.

    Raises:
        RunError: if no such pair was found.
    """
    return free_port_pairs(1, host, attempts)[0]


def free_port_pairs(count: int, host: str = "127.0.0.1", attempts: int = 50) -> list[int]:
    """``count`` ports N, each with N and N+1 free on ``host`` right now, no two overlapping.

    Every pair stays bound until all are found, so the system cannot hand out a port twice
    and no pair's N+1 is another's N. Another program may still take a port before an agent
    binds it; :class:`SimAgents` starts such an agent again on a new pair.

    Raises:
        RunError: if not enough pairs were found.
    """
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        failures = 0
        while len(ports) < count:
            first = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(first)
            first.bind((host, 0))
            port = int(first.getsockname()[1])
            second = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(second)
            try:
                if port >= 65535:
                    raise OSError("no port above")
                second.bind((host, port + 1))
            except OSError:
                failures += 1
                if failures > attempts:
                    raise RunError(f"no pair of free ports found on {host}") from None
                continue
            ports.append(port)
    finally:
        for sock in held:
            sock.close()
    return ports


#: Startup attempts of an agent whose port another program took before it could bind.
BIND_ATTEMPTS = 3


@dataclass(frozen=True)
class SimAgentSpec:
    """One simulated agent to start.

    Attributes:
        limb: the mission's limb name.
        robot: robot name.
        chain: the robot's limb (chain) name, or None for its first.
        seed: the agent's seed (its noise and faults are deterministic given it).
        clock: ``sim`` (lockstep) or ``real``.
        options: extra ``--sim-option KEY=VALUE`` settings for the simulated driver.
        world: the world's modules in the limb's base frame (``limbtree agent --world``).
        base: the limb's base in the world ``[x, y, z, qx, qy, qz, qw]`` [m]
            (``limbtree agent --base``: gravity acts in the world), or None for the origin.
        plant: the simulated plant's kind (``limbtree agent --plant``).
        physics: the ``mujoco`` plant's settings (``limbtree agent --physics``, JSON).
    """

    limb: str
    robot: str
    chain: str | None
    seed: int
    clock: str
    options: tuple[tuple[str, str], ...] = ()
    world: str | None = None
    base: tuple[float, ...] | None = None
    plant: str = "kinematic"
    physics: str | None = None


@dataclass
class SimAgents:
    """The simulated agents of one run; a context manager that always cleans up.

    Args:
        specs: the agents to start.
        log_dir: where each agent's output goes (``agent-LIMB.log``); a temporary
            folder's when None.
    """

    specs: Sequence[SimAgentSpec]
    log_dir: Path
    endpoints: dict[str, str] = field(default_factory=dict)
    _processes: dict[str, subprocess.Popen[bytes] | ForkedProcess] = field(default_factory=dict)
    _logs: list[IO[bytes]] = field(default_factory=list)
    token: str = field(default_factory=new_shutdown_token)
    """The owner token every agent of this run gets (``shutdown`` requests carry it)."""
    forked: bool | None = None
    """Whether the agents are forked from this process (None: decided at :meth:`start`)."""

    def start(
        self, ready: Callable[[str, float], bool], check: Callable[[], None] | None = None
    ) -> dict[str, str]:
        """Start every agent and wait until each answers.

        Args:
            ready: ``ready(endpoint, timeout_s)`` pings an agent and says whether it answered.
            check: called between launches and between pings; it raises to stop the start-up
                (a signal asked the run to stop); the agents are stopped on the way out of
                the ``with`` block.

        Returns:
            limb name -> request endpoint.

        Raises:
            RunError: naming the agent that did not come up and where its output is.
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.forked is None:
            self.forked = bool(self.specs) and can_fork()
        if self.forked:
            prepare_to_fork()
        for spec, port in zip(self.specs, free_port_pairs(len(self.specs)), strict=True):
            if check is not None:
                check()
            self._launch(spec, port)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for spec in self.specs:
            attempts = 1
            while True:
                if check is not None:
                    check()
                process = self._processes[spec.limb]
                endpoint = self.endpoints[spec.limb]
                output = self.log_dir / f"agent-{spec.limb}.log"
                if process.poll() is not None:
                    if attempts < BIND_ATTEMPTS and _lost_its_port(output):
                        # Another program took the port since it was found free.
                        attempts += 1
                        self._launch(spec, free_port_pair())
                        continue
                    raise RunError(
                        f"the simulated agent of limb {spec.limb} ({spec.robot}) exited with "
                        f"status {process.returncode}; see {output}"
                    )
                if ready(endpoint, 0.5):
                    break
                if time.monotonic() > deadline:
                    raise RunError(
                        f"the simulated agent of limb {spec.limb} did not answer on {endpoint} "
                        f"within {STARTUP_TIMEOUT_S:g} s; see {output}"
                    )
        return dict(self.endpoints)

    def _launch(self, spec: SimAgentSpec, port: int) -> None:
        """Start the agent process of ``spec`` on ``port`` (and ``port + 1``)."""
        endpoint = f"tcp://127.0.0.1:{port}"
        command = [sys.executable, "-m", "limbtree", "agent", "--robot", spec.robot,
                   "--bind", endpoint, "--driver", "sim", "--clock", spec.clock,
                   "--seed", str(spec.seed), "--name", spec.limb,
                   "--parent-pid", str(os.getpid())]  # fmt: skip
        if spec.chain:
            command += ["--limb", spec.chain]
        if spec.clock == "sim":
            # The runner takes each state from its step's reply; the stream copy would
            # only be decoded twice.
            command.append("--quiet-steps")
        for key, value in spec.options:
            command += ["--sim-option", f"{key}={value}"]
        if spec.world:
            command += ["--world", spec.world]
        if spec.base is not None:
            command += ["--base", ",".join(repr(float(v)) for v in spec.base)]
        if spec.plant != "kinematic":
            command += ["--plant", spec.plant]
        if spec.physics:
            command += ["--physics", spec.physics]
        log = open(self.log_dir / f"agent-{spec.limb}.log", "wb")  # noqa: SIM115
        self._logs.append(log)
        # The agent's owner token: only this runner's shutdown requests stop it.
        if self.forked:
            self._processes[spec.limb] = fork_agent(
                command[3:], log, {SHUTDOWN_TOKEN_ENV: self.token}
            )
        else:
            env = dict(os.environ, PYTHONUNBUFFERED="1", **{SHUTDOWN_TOKEN_ENV: self.token})
            self._processes[spec.limb] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )
        self.endpoints[spec.limb] = endpoint

    def alive(self, limb: str) -> bool:
        """Whether the agent process of ``limb`` is still running."""
        process = self._processes.get(limb)
        return process is not None and process.poll() is None

    def stop(self, grace_s: float = 3.0) -> None:
        """Terminate every agent, kill those that do not stop within ``grace_s``."""
        for process in self._processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        deadline = time.monotonic() + grace_s
        for process in self._processes.values():
            remaining = max(0.0, deadline - time.monotonic())
            try:
                process.wait(timeout=remaining)
            except (subprocess.TimeoutExpired, TimeoutError):
                process.kill()
                process.wait(timeout=5.0)
        for log in self._logs:
            log.close()
        self._logs.clear()

    def __enter__(self) -> SimAgents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _lost_its_port(log: Path) -> bool:
    """Whether an agent's output says it could not bind because the address was in use."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return False
    return "cannot bind" in text and "Address already in use" in text
