"""The runner's clocks: when each tick happens, and how the loop is paced.

* :class:`TickClock`: the mission clock every behaviour, decorator and limb client reads
  (the current tick's time); the runner sets it.
* :class:`SimClock`: tick ``i`` happens at ``i / rate`` [s]; the loop never waits on the
  wall clock, unless a ``--speed`` asks for a pace (then it sleeps to keep ``speed`` times
  real time).
* :class:`RealClock`: the tick time is the time since the start on a monotonic clock; the
  loop sleeps until each tick is due.

Both take the wall clock and the sleep as arguments, so nothing in the runner's logic reads
the wall clock by itself (tests pass fakes).

A pause (the operator's, or an operator gate waiting in the ``sim`` clock) stops mission time
in both clocks: :meth:`RunClock.pause` and :meth:`RunClock.resume` take the wall time in
between out of the pace (the ``sim`` clock with a ``--speed`` does not race to catch it up)
and out of the ``real`` clock's tick times. ``elapsed`` (the run's ``wall_time_s``) keeps it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

#: The rounding an elapsed mission time may fall short by and still count as a whole duration,
#: per second of tick time: tick times are floats (``i / rate_hz``), and the difference of two
#: can miss the exact one by a unit in the last place (0.72 - 0.52 is 0.19999999999999996).
#: 1e-12 s per s is far above that rounding (about 2e-16 s per s) and far below any tick.
ELAPSED_SLACK = 1e-12


def elapsed_reached(now: float, since: float, duration: float) -> bool:
    """Whether ``duration`` [s] has passed from ``since`` [s] to ``now`` [s] of mission time.

    ``now - since >= duration`` up to the float rounding of tick times
    (:data:`ELAPSED_SLACK`), so a duration ends on the same tick count from whichever tick
    it started: 0.2 s at 50 Hz is 10 ticks from a start at 0.00 s and from one at 0.52 s.

    Args:
        now: the current tick time [s].
        since: the tick time the duration started [s].
        duration: how long [s] (``inf`` is never reached).
    """
    return now - since >= duration - ELAPSED_SLACK * max(1.0, abs(now))


class TickClock:
    """The mission clock: the time of the current tick [s], set by the runner.

    Behaviours, decorators and limb clients read it (it is their only clock), so a run in
    the ``sim`` clock never depends on the wall clock.
    """

    def __init__(self) -> None:
        self._t = 0.0

    def now(self) -> float:
        """The current tick's time [s]."""
        return self._t

    def set(self, t: float) -> None:
        """Move to the next tick's time [s]."""
        self._t = t


class RunClock(Protocol):
    """When ticks happen, and the wall time the run took."""

    #: Whether agents are stepped in lockstep (``sim``) or free-run (``real``).
    lockstep: bool

    def start(self) -> None:
        """The run starts now."""

    def tick_time(self, index: int) -> float:
        """The mission time of tick ``index`` [s]."""

    def remaining(self, index: int) -> float:
        """Wall time until tick ``index`` is due [s]: 0 when it is (or the clock never waits)."""

    def idle(self, seconds: float) -> None:
        """Wait while paused [s of wall time]."""

    def pause(self) -> None:
        """Mission time stops now (until :meth:`resume`)."""

    def resume(self) -> None:
        """Mission time goes on from where :meth:`pause` stopped it."""

    def elapsed(self) -> float:
        """Wall time since :meth:`start` [s]."""


class _WallClock:
    """What both clocks share: the wall clock and the sleep, injected."""

    lockstep = False

    def __init__(
        self,
        rate_hz: float,
        wall: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not rate_hz > 0:
            raise ValueError(f"the tick rate must be > 0 Hz, not {rate_hz}")
        self.dt = 1.0 / rate_hz
        self.wall = wall
        self.sleep = sleep
        self.wall_start = 0.0
        #: Wall time spent paused so far [s], not counted as mission time.
        self.paused_s = 0.0
        self._paused_at: float | None = None

    def start(self) -> None:
        """The run starts now."""
        self.wall_start = self.wall()
        self.paused_s = 0.0
        self._paused_at = None

    def pause(self) -> None:
        """Mission time stops now; a second call before :meth:`resume` does nothing."""
        if self._paused_at is None:
            self._paused_at = self.wall()

    def resume(self) -> None:
        """Mission time goes on: the wall time since :meth:`pause` is not counted."""
        if self._paused_at is not None:
            self.paused_s += self.wall() - self._paused_at
            self._paused_at = None

    def running_s(self) -> float:
        """Wall time since :meth:`start`, less the time spent paused [s]."""
        now = self._paused_at if self._paused_at is not None else self.wall()
        return now - self.wall_start - self.paused_s

    def idle(self, seconds: float) -> None:
        """Sleep ``seconds`` of wall time (the operator paused the run)."""
        self.sleep(seconds)

    def elapsed(self) -> float:
        """Wall time since :meth:`start` [s]."""
        return self.wall() - self.wall_start

    def _due(self, index: int) -> float | None:
        """The wall time tick ``index`` is due [s], or None when this clock does not wait."""
        return self.wall_start + self.paused_s + index * self.dt

    def remaining(self, index: int) -> float:
        """Wall time until tick ``index`` is due [s]: 0 when it is (or the clock never waits)."""
        due = self._due(index)
        return 0.0 if due is None else max(0.0, due - self.wall())


class SimClock(_WallClock):
    """Lockstep mission time: tick ``i`` at ``i / rate_hz``.

    Args:
        rate_hz: the tick rate [Hz].
        speed: pace at ``speed`` times real time, or None for as fast as possible.
        wall: the wall clock [s], for the pace and ``wall_time_s`` only.
        sleep: how to wait [s].
    """

    lockstep = True

    def __init__(
        self,
        rate_hz: float,
        speed: float | None = None,
        wall: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(rate_hz, wall, sleep)
        if speed is not None and not speed > 0:
            raise ValueError(f"speed must be > 0 (times real time) or None, not {speed}")
        self.speed = speed

    def tick_time(self, index: int) -> float:
        """``index / rate_hz`` [s]."""
        return index * self.dt

    def _due(self, index: int) -> float | None:
        """With a speed, the wall time tick ``index`` is due at that speed [s]; else None."""
        if self.speed is None:
            return None
        return self.wall_start + self.paused_s + index * self.dt / self.speed


class RealClock(_WallClock):
    """Monotonic mission time: the tick time is the wall time since the start, less pauses.

    Args:
        rate_hz: the tick rate [Hz].
        wall: the monotonic clock [s].
        sleep: how to wait [s].
    """

    def tick_time(self, index: int) -> float:
        """Wall time since the start, less the time spent paused [s]."""
        return self.running_s()


def make_clock(
    mode: str,
    rate_hz: float,
    speed: float | None = None,
    wall: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RunClock:
    """The run clock for ``--clock MODE``.

    Raises:
        ValueError: for a mode other than ``sim`` or ``real``.
    """
    if mode == "sim":
        return SimClock(rate_hz, speed, wall, sleep)
    if mode == "real":
        return RealClock(rate_hz, wall, sleep)
    raise ValueError(f"unknown clock {mode!r}; choose sim or real")


__all__ = ["RealClock", "RunClock", "SimClock", "TickClock", "make_clock"]
