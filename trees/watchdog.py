"""The runner's safety net: a tick that runs longer than ``max_tick_s`` is interrupted.

A node whose ``update`` never returns (a bug in a user's node type, a loop that never ends)
would hold the runner for ever: no later tick, no ``timeout``, no operator key and no record
closing. :class:`TickWatchdog` is a thread that watches the ticks: the ticking thread marks
each tick's start and end (two attribute writes and an uncontended lock, nothing else), and
the watchdog, waking a few times per ``max_tick_s``, finds a tick that has run longer than
``max_tick_s`` of wall time. It then names the node being ticked (the innermost behaviour on
the ticking thread's stack) and interrupts the tick with :class:`TickOverrun`:

* in the main thread, by a signal (``SIGUSR2``) whose handler the runner installs for the
  run: the handler raises between two Python instructions, and a blocking call (a sleep, a
  socket wait) is woken by the signal and raises too;
* in another thread (a runner started from a thread), by an asynchronous exception
  (``PyThreadState_SetAsyncExc``), raised between two Python instructions of that thread.

Either way the exception comes out of the runner's tick, and the runner ends the run ABORTED
with the summary and the record written. A tick stuck inside one C call that never returns
in a thread other than the main one cannot be interrupted from inside the process.

The interruption can only be raised inside the tick: the handler raises only while the tick
that overran is still running, and :meth:`TickWatchdog.leave` withdraws a pending
asynchronous exception before it raises :class:`TickOverrun` itself.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import py_trees

#: The signal that interrupts a main-thread tick.
INTERRUPT_SIGNAL = signal.SIGUSR2

#: Default hard limit on one tick [s of wall time] (the mission key ``max_tick_s``).
DEFAULT_MAX_TICK_S = 5.0


class TickOverrun(BaseException):
    """Raised in the ticking thread when its tick ran longer than ``max_tick_s``.

    A ``BaseException`` (like ``KeyboardInterrupt``), so a node's ``except Exception``
    cannot swallow it; the runner catches it and aborts the run.
    """


@dataclass(frozen=True)
class Overrun:
    """A tick the watchdog interrupted.

    Attributes:
        tick: the tick's index.
        elapsed_s: how long it had run when interrupted [s of wall time].
        limit_s: the hard limit ``max_tick_s`` [s].
        node_id: the id of the node being ticked (the innermost behaviour on the stack), or
            None when no behaviour was on the stack.
        node_name: that node's name, or None.
        node_type: that node's type, or None.
    """

    tick: int
    elapsed_s: float
    limit_s: float
    node_id: str | None
    node_name: str | None
    node_type: str | None

    @property
    def message(self) -> str:
        """For a person: which node held the tick, and what to do."""
        where = "outside any node"
        if self.node_id is not None:
            where = f"in node {self.node_id} '{self.node_name}' ({self.node_type})"
        return (
            f"tick {self.tick} ran longer than max_tick_s = {self.limit_s:g} s of wall time "
            f"{where}: the run was aborted; a node's update must return each tick "
            f"(raise max_tick_s in the mission file if a tick legitimately takes longer)"
        )


def node_on_stack(frame: FrameType | None) -> py_trees.behaviour.Behaviour | None:
    """The innermost py_trees behaviour whose method is running in ``frame``'s stack."""
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, py_trees.behaviour.Behaviour):
            return candidate
        frame = frame.f_back
    return None


class TickWatchdog:
    """Interrupts a tick that runs longer than ``max_tick_s`` of wall time.

    Args:
        max_tick_s: the hard limit on one tick [s of wall time], > 0.
        wall: the monotonic wall clock [s] (a diagnostic clock, not the mission's).
        poll_s: how often the watchdog looks [s]; a quarter of ``max_tick_s``, at most
            0.25 s, by default.

    Raises:
        ValueError: if ``max_tick_s`` is not a positive number.
    """

    def __init__(
        self,
        max_tick_s: float,
        wall: Callable[[], float] = time.monotonic,
        poll_s: float | None = None,
    ) -> None:
        if not max_tick_s > 0:
            raise ValueError(f"max_tick_s must be a positive number of seconds, not {max_tick_s}")
        self.max_tick_s = float(max_tick_s)
        self.wall = wall
        self.poll_s = poll_s if poll_s is not None else min(0.25, self.max_tick_s / 4)
        self.overrun: Overrun | None = None
        self._lock = threading.Lock()
        self._began: float | None = None
        self._tick = 0
        self._fired = False
        self._target = 0
        self._main = False
        self._previous: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Watch the calling thread's ticks from now on."""
        self._target = threading.get_ident()
        self._main = threading.current_thread() is threading.main_thread()
        if self._main:
            self._previous = signal.signal(INTERRUPT_SIGNAL, self._on_signal)
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="limbtree-tick-watchdog")
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; restore the signal handler."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        with self._lock:
            self._began = None
            if self._fired and not self._main:
                _async_raise(self._target, None)
        if self._main:
            # None: the previous handler was not installed from Python; the default stands in.
            previous = signal.SIG_DFL if self._previous is None else self._previous
            signal.signal(INTERRUPT_SIGNAL, previous)
            self._main = False

    def enter(self, tick: int) -> None:
        """Tick ``tick`` starts now."""
        self._tick = tick
        self._began = self.wall()

    def leave(self) -> None:
        """The tick ended.

        Raises:
            TickOverrun: if the watchdog interrupted this tick and the interruption has not
                come out yet (it is withdrawn and raised here instead).
        """
        with self._lock:
            self._began = None
            fired = self._fired
            if fired and not self._main:
                _async_raise(self._target, None)
        if fired:
            raise TickOverrun

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Runs in the main thread between two instructions: raise only inside the tick that
        # overran, so a late signal never escapes into the runner's cleanup.
        if self._fired and self._began is not None:
            raise TickOverrun
        previous = self._previous
        if callable(previous):
            previous(signum, frame)

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            with self._lock:
                began = self._began
                if began is None or self._fired:
                    continue
                elapsed = self.wall() - began
                if elapsed <= self.max_tick_s:
                    continue
                node = node_on_stack(sys._current_frames().get(self._target))
                self.overrun = Overrun(
                    self._tick,
                    elapsed,
                    self.max_tick_s,
                    None if node is None else getattr(node, "node_id", None),
                    None if node is None else node.name,
                    None
                    if node is None
                    else (getattr(node, "node_type", "") or type(node).__name__),
                )
                self._fired = True
                if self._main:
                    signal.pthread_kill(self._target, INTERRUPT_SIGNAL)
                else:
                    _async_raise(self._target, TickOverrun)

    def __enter__(self) -> TickWatchdog:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _async_raise(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in thread ``thread_id`` at its next instruction (None: withdraw it)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None
    )


__all__ = ["DEFAULT_MAX_TICK_S", "INTERRUPT_SIGNAL", "Overrun", "TickOverrun", "TickWatchdog"]
