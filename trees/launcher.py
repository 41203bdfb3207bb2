"""Start the simulated agents of a mission as real processes on this computer.

``limbtree run`` drives limbs marked ``sim`` through the same ZeroMQ protocol as remote ones:
each gets its own ``limbtree agent`` (serving a one-limb plant, its base in the world), and
is stopped (then killed, if it must be) when the run ends, whatever way it ends. The agents
serve on Unix domain sockets (``ipc://``) in a folder only this user may enter, made for the
run and removed with it, so that no other user of the computer can reach them (loopback TCP
is open to every local user). Where that cannot be (no Unix sockets, a temporary folder
whose paths are too long for them, or one where the sockets cannot be made), and with
``LIMBTREE_AGENT_TRANSPORT=tcp``, they serve on 127.0.0.1 with a free port pair each.
Each is given the runner's process id (``--parent-pid``), so an agent whose runner
was killed outright (SIGKILL, a crash) ends by itself within a few seconds
(:mod:`limbtree.transport.orphan`). On Linux each agent is forked from the runner after the
robotics libraries were imported once (:mod:`limbtree.trees.forked`), so it serves within a
fraction of a second instead of importing them again for three seconds.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

from limbtree.tempdirs import OwnedTempDir
from limbtree.transport.endpoint import IPC_LOCK_SUFFIX, IPC_STATE_SUFFIX
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

#: The environment variable that chooses how a run's simulated agents are reached:
#: ``ipc`` (Unix domain sockets in a private folder; the default where it can be) or ``tcp``
#: (127.0.0.1, a free port pair each).
TRANSPORT_ENV: Final = "LIMBTREE_AGENT_TRANSPORT"

#: The start of the name of a run's folder of sockets (in the temporary directory).
IPC_DIR_PREFIX: Final = "limbtree-ipc-"

#: The longest socket path a Unix domain socket takes (``sun_path`` holds 108 bytes on Linux,
#: with its terminating NUL) [bytes].
MAX_SOCKET_PATH_BYTES: Final = 107

#: A limb name used as it is in a socket's file name; other names get the limb's index.
_SAFE_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,32}")


def agent_transport(environ: Mapping[str, str] | None = None) -> str:
    """How a run's simulated agents are reached: ``ipc`` or ``tcp`` (:data:`TRANSPORT_ENV`).

    Unset or empty: ``ipc`` where this computer has Unix domain sockets, ``tcp`` elsewhere.

    Raises:
        RunError: for another value, saying which are taken.
    """
    env = os.environ if environ is None else environ
    text = env.get(TRANSPORT_ENV, "").strip()
    if not text:
        return "ipc" if hasattr(socket, "AF_UNIX") else "tcp"
    if text not in ("ipc", "tcp"):
        raise RunError(
            f"{TRANSPORT_ENV}={text!r}: give ipc (Unix domain sockets, the default) or tcp "
            "(127.0.0.1), or unset it"
        )
    if text == "ipc" and not hasattr(socket, "AF_UNIX"):
        raise RunError(f"{TRANSPORT_ENV}=ipc: this computer has no Unix domain sockets; use tcp")
    return text


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

    Sim-clock agents share processes (:func:`process_groups`): one process per core, each
    serving its agents from one loop (``limbtree agents``); a process that serves one agent
    is a plain ``limbtree agent``.

    Args:
        specs: the agents to start.
        log_dir: where the agents' output goes (``agent-LIMB.log`` for an agent in its own
            process, ``agents-N.log`` for the N-th process of several agents).
        processes: how many processes the sim-clock agents share, or None for
            :func:`agent_processes`'s choice.
    """

    specs: Sequence[SimAgentSpec]
    log_dir: Path
    processes: int | None = None
    endpoints: dict[str, str] = field(default_factory=dict)
    _processes: dict[str, subprocess.Popen[bytes] | ForkedProcess] = field(default_factory=dict)
    _log_of: dict[str, Path] = field(default_factory=dict)
    _hosts: int = 0
    _logs: list[IO[bytes]] = field(default_factory=list)
    token: str = field(default_factory=new_shutdown_token)
    """The owner token every agent of this run gets (``shutdown`` requests carry it)."""
    forked: bool | None = None
    """Whether the agents are forked from this process (None: decided at :meth:`start`)."""
    transport: str | None = None
    """``ipc`` or ``tcp`` (None: :func:`agent_transport`'s choice, at :meth:`start`)."""
    _socket_dir: OwnedTempDir | None = None

    @property
    def socket_dir(self) -> Path | None:
        """The private folder of the ``ipc`` agents' sockets (made by :meth:`start`)."""
        return self._socket_dir.path if self._socket_dir is not None else None

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
        groups = process_groups(self.specs, self.processes)
        binds = self._binds()
        for group in groups:
            if check is not None:
                check()
            self._launch(group, [binds[spec.limb] for spec in group])
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for group in groups:
            attempts = 1
            pending = list(group)
            while pending:
                if check is not None:
                    check()
                spec = pending[0]
                process = self._processes[spec.limb]
                endpoint = self.endpoints[spec.limb]
                output = self._log_of[spec.limb]
                if process.poll() is not None:
                    if attempts < BIND_ATTEMPTS and _could_not_bind(output):
                        # Another program took a port since it was found free, or Unix
                        # sockets do not work in the temporary folder (some network and
                        # FUSE file systems): loopback TCP, on new ports.
                        attempts += 1
                        self._launch(group, _tcp(free_port_pairs(len(group))))
                        pending = list(group)
                        continue
                    raise RunError(
                        f"the simulated agent of limb {spec.limb} ({spec.robot}) exited with "
                        f"status {process.returncode}; see {output}"
                    )
                if ready(endpoint, 0.5):
                    pending.pop(0)
                    continue
                if time.monotonic() > deadline:
                    raise RunError(
                        f"the simulated agent of limb {spec.limb} did not answer on {endpoint} "
                        f"within {STARTUP_TIMEOUT_S:g} s; see {output}"
                    )
        return dict(self.endpoints)

    def _binds(self) -> dict[str, str]:
        """Where each agent serves: limb name -> endpoint.

        ``ipc://DIR/LIMB`` in a folder made for the run (mode 0700: only this user enters
        it), or ``tcp://127.0.0.1:N`` with a free port pair each; sets :attr:`transport`.
        """
        if self.transport is None:
            self.transport = agent_transport()
        if self.transport == "ipc":
            # (the folders of runs killed with SIGKILL go first: limbtree.tempdirs)
            self._socket_dir = OwnedTempDir(IPC_DIR_PREFIX)
            folder = self._socket_dir.path
            paths = {
                spec.limb: str(folder / _file_name(spec.limb, i))
                for i, spec in enumerate(self.specs)
            }
            longest = IPC_STATE_SUFFIX + IPC_LOCK_SUFFIX
            if all(len(os.fsencode(p + longest)) <= MAX_SOCKET_PATH_BYTES for p in paths.values()):
                return {limb: f"ipc://{path}" for limb, path in paths.items()}
            # A temporary folder too deep for a socket's path: loopback TCP instead.
            self._remove_socket_dir()
            self.transport = "tcp"
        ports = free_port_pairs(len(self.specs))
        return {spec.limb: bind for spec, bind in zip(self.specs, _tcp(ports), strict=True)}

    def _remove_socket_dir(self) -> None:
        if self._socket_dir is not None:
            self._socket_dir.remove()
            self._socket_dir = None

    def _launch(self, group: Sequence[SimAgentSpec], binds: Sequence[str]) -> None:
        """Start the process of ``group`` (one agent, or a host of several) on ``binds``."""
        if len(group) == 1:
            (spec,) = group
            args = _agent_args(spec, binds[0])
            argv = ["agent", *args, "--parent-pid", str(os.getpid())]
            output = self.log_dir / f"agent-{spec.limb}.log"
        else:
            argv = ["agents"]
            for spec, bind in zip(group, binds, strict=True):
                argv += ["--each", shlex.join(_agent_args(spec, bind))]
            argv += ["--parent-pid", str(os.getpid())]
            self._hosts += 1
            output = self.log_dir / f"agents-{self._hosts}.log"
        log = open(output, "wb")  # noqa: SIM115
        self._logs.append(log)
        # The agent's owner token: only this runner's shutdown requests stop it.
        process: subprocess.Popen[bytes] | ForkedProcess
        if self.forked:
            process = fork_agent(argv, log, {SHUTDOWN_TOKEN_ENV: self.token})
        else:
            env = dict(os.environ, PYTHONUNBUFFERED="1", **{SHUTDOWN_TOKEN_ENV: self.token})
            process = subprocess.Popen(
                [sys.executable, "-m", "limbtree", *argv],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            )  # fmt: skip
        for spec, bind in zip(group, binds, strict=True):
            self._processes[spec.limb] = process
            self._log_of[spec.limb] = output
            self.endpoints[spec.limb] = bind

    def log_of(self, limb: str) -> Path:
        """Where the output of the agent of ``limb`` goes (after :meth:`start`)."""
        return self._log_of[limb]

    def alive(self, limb: str) -> bool:
        """Whether the agent process of ``limb`` is still running."""
        process = self._processes.get(limb)
        return process is not None and process.poll() is None

    def exit_of(self, name: str) -> str | None:
        """How the agent process of ``name`` ended, and where its output is.

        ``was killed by SIGKILL; see DIR/agent-arm.log``; None while it runs, or for an
        agent not started here. A process that served other agents too (one per core) names
        them: ``(the same process served leg_0, leg_2)``.
        """
        process = self._processes.get(name)
        code = process.poll() if process is not None else None
        if code is None:
            return None
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        others = [other for other, p in self._processes.items() if p is process and other != name]
        if others:
            how += f" (the same process served {', '.join(others)})"
        return f"{how}; see {self._log_of[name]}"

    def stop(self, grace_s: float = 3.0) -> None:
        """Terminate every agent, kill those that do not stop within ``grace_s``."""
        processes = list({id(p): p for p in self._processes.values()}.values())
        for process in processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
        deadline = time.monotonic() + grace_s
        for process in processes:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                process.wait(timeout=remaining)
            except (subprocess.TimeoutExpired, TimeoutError):
                process.kill()
                process.wait(timeout=5.0)
        for log in self._logs:
            log.close()
        self._logs.clear()
        self._remove_socket_dir()

    def __enter__(self) -> SimAgents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The environment variable that sets how many processes the sim-clock agents of a run
#: share (a whole number from 1; as many as agents: each its own, as an agent started by
#: hand).
PROCESSES_ENV: Final = "LIMBTREE_AGENT_PROCESSES"


def agent_processes(environ: Mapping[str, str] | None = None) -> int:
    """How many processes a run's sim-clock agents share by default.

    :data:`PROCESSES_ENV` when set; otherwise one per core this process may run on. In the
    ``sim`` clock the runner waits while the agents step, so its core is theirs then; more
    processes than cores would only queue for them, each with its own caches to warm
    (measured on two cores, the robustness mission: one process per agent 6.1x to 6.6x
    real time, two processes 7.0x to 8.0x, one 6.0x to 6.7x).

    Raises:
        RunError: when :data:`PROCESSES_ENV` is not a whole number from 1.
    """
    env = os.environ if environ is None else environ
    text = env.get(PROCESSES_ENV, "").strip()
    if text:
        try:
            count = int(text)
        except ValueError:
            count = 0
        if count < 1:
            raise RunError(
                f"{PROCESSES_ENV}={text!r}: give a whole number of processes from 1 (as many "
                "as agents gives each its own), or unset it"
            )
        return count
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1)


def process_groups(
    specs: Sequence[SimAgentSpec], processes: int | None = None
) -> list[tuple[SimAgentSpec, ...]]:
    """The agents each process serves.

    Sim-clock agents are dealt round-robin over ``processes`` (default
    :func:`agent_processes`); a real-clock agent is always alone (it keeps its own time).

    Args:
        specs: the agents, in the mission's order.
        processes: how many processes the sim-clock agents share.
    """
    sim = [spec for spec in specs if spec.clock == "sim"]
    count = max(1, min(len(sim), agent_processes() if processes is None else processes))
    groups: list[tuple[SimAgentSpec, ...]] = [tuple(sim[i::count]) for i in range(count)]
    groups = [group for group in groups if group]
    groups += [(spec,) for spec in specs if spec.clock != "sim"]
    return groups


def _file_name(limb: str, index: int) -> str:
    """The socket file's name for the ``index``-th agent, of limb ``limb``.

    The limb's name when it is short and plain, else ``limb.INDEX`` (which no plain name is).
    """
    return limb if _SAFE_NAME.fullmatch(limb) else f"limb.{index}"


def _tcp(ports: Sequence[int]) -> list[str]:
    """Loopback TCP endpoints on ``ports`` (the state stream on each port + 1)."""
    return [f"tcp://127.0.0.1:{port}" for port in ports]


def _agent_args(spec: SimAgentSpec, bind: str) -> list[str]:
    """The ``limbtree agent`` arguments of ``spec`` serving on ``bind`` (no ``--parent-pid``)."""
    args = ["--robot", spec.robot, "--bind", bind, "--driver", "sim",
            "--clock", spec.clock, "--seed", str(spec.seed), "--name", spec.limb]  # fmt: skip
    if spec.chain:
        args += ["--limb", spec.chain]
    if spec.clock == "sim":
        # The runner takes each state from its step's reply; the stream copy would
        # only be decoded twice.
        args.append("--quiet-steps")
    for key, value in spec.options:
        args += ["--sim-option", f"{key}={value}"]
    if spec.world:
        args += ["--world", spec.world]
    if spec.base is not None:
        args.append("--base=" + ",".join(repr(float(v)) for v in spec.base))  # (may start with -)
    if spec.plant != "kinematic":
        args += ["--plant", spec.plant]
    if spec.physics:
        args += ["--physics", spec.physics]
    return args


def _could_not_bind(log: Path) -> bool:
    """Whether an agent's output says it could not bind where another try may succeed.

    A TCP address in use (another program took the port since it was found free), or a Unix
    socket that could not be made (loopback TCP then).
    """
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return False
    return "cannot bind ipc://" in text or (
        "cannot bind" in text and "Address already in use" in text
    )
