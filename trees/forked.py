"""Simulated agents forked from the runner: each starts in a fraction of a second.

An agent started as a new Python process spends about three seconds of CPU importing the
robotics libraries (roboticstoolbox brings matplotlib, scipy and spatialmath) before it
serves; six of them on two cores kept ``limbtree run`` waiting ten seconds or more. Here the
runner imports those libraries once, freezes what it has allocated so far (``gc.freeze``, as
the Python documentation advises before forking: the children's collections then neither
scan nor copy those pages), and forks one child per agent. The child is the same
``limbtree agent`` command line run by :func:`limbtree.trees.cli.main`, with default signal
handlers, its own output file and no standard input; it ends with ``os._exit``, so nothing of
the runner (its ``finally`` blocks, atexit handlers, open sinks) runs twice.

Forking is safe only from a process with one thread (another thread may hold a lock that the
child would inherit held). :func:`can_fork` says when it is; otherwise, and off Linux, or
with ``LIMBTREE_AGENT_START=exec``, the launcher starts each agent as a new process instead.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from typing import IO, Final, NoReturn

#: The environment variable that chooses how simulated agents start: ``fork`` (the default
#: on Linux) or ``exec`` (a new Python process each, as an agent started by hand).
START_ENV: Final = "LIMBTREE_AGENT_START"

#: The signals whose handlers the runner may have replaced; a forked agent starts with the
#: defaults (the agent installs its own for SIGINT and SIGTERM).
_RESET_SIGNALS: Final = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGCHLD")
    if hasattr(signal, name)
)


def can_fork(environ: Mapping[str, str] | None = None) -> bool:
    """Whether agents may be forked from this process now.

    Args:
        environ: the environment (default ``os.environ``), for :data:`START_ENV`.

    Returns:
        True on Linux, in a process with only its main thread, unless ``START_ENV`` says
        ``exec``.
    """
    env = os.environ if environ is None else environ
    if env.get(START_ENV, "fork").strip().lower() == "exec":
        return False
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "fork")
        and threading.active_count() == 1
        and threading.current_thread() is threading.main_thread()
    )


def prepare_to_fork() -> None:
    """Import what every agent needs, once, and freeze the heap before the first fork."""
    # kinematics.chain imports roboticstoolbox: the slow import.
    for module in ("limbtree.kinematics.chain", "limbtree.robots.factory", "limbtree.trees.cli"):
        importlib.import_module(module)

    gc.collect()
    gc.freeze()


class ForkedProcess:
    """A forked agent, with the part of :class:`subprocess.Popen` the launcher uses.

    Args:
        pid: the child's process id.
        args: its command line (for messages).
    """

    def __init__(self, pid: int, args: Sequence[str]) -> None:
        self.pid = pid
        self.args = list(args)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The exit status once the child has ended (negative: the signal), else None."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it has ended
                self.returncode = -1
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait until the child ends, at most ``timeout`` seconds.

        Raises:
            TimeoutError: when it is still running after ``timeout``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"agent process {self.pid} still running after {timeout} s")
            time.sleep(0.01)
        return code

    def terminate(self) -> None:
        """Ask it to stop (SIGTERM)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """End it (SIGKILL)."""
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


def fork_agent(argv: Sequence[str], log: IO[bytes], environ: Mapping[str, str]) -> ForkedProcess:
    """Fork a child that runs ``limbtree`` with ``argv`` and ends.

    Args:
        argv: the command line after ``limbtree`` (``["agent", "--robot", ...]``).
        log: where the child's standard output and error go.
        environ: variables to set in the child's environment (its owner token).

    Returns:
        The child's handle.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()  # nothing buffered in the runner may come out twice
    pid = os.fork()
    if pid:
        return ForkedProcess(pid, ["limbtree", *argv])
    _run_child(argv, log.fileno(), environ)


def _run_child(argv: Sequence[str], log_fd: int, environ: Mapping[str, str]) -> NoReturn:
    """The forked agent: a clean start, the command line, then ``os._exit``."""
    code = 1
    try:
        for signum in _RESET_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        with contextlib.suppress(ValueError):
            signal.set_wakeup_fd(-1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(devnull)
        # New line-buffered streams on the log: the runner's may be anything (a test
        # runner's capture object that is not file descriptor 1 or 2 at all).
        sys.stdout = open(1, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, encoding="utf-8", closefd=False)  # noqa: SIM115
        os.environ.update(environ)
        # The runner's logging set-up is not the agent's: the agent configures its own.
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        sys.argv = ["limbtree", *argv]
        from limbtree.trees.cli import main

        code = main(list(argv))
    except SystemExit as exc:
        if isinstance(exc.code, int):
            code = exc.code
        elif exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


__all__ = ["START_ENV", "ForkedProcess", "can_fork", "fork_agent", "prepare_to_fork"]
