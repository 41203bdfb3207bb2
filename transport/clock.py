"""Clocks: where the runner and the agents get their time from.

Nothing in limbtree's logic reads the wall clock; it is handed a :class:`Clock`. The ``real``
clock is :class:`MonotonicClock`; the ``sim`` clock is :class:`SimClock`, advanced explicitly
(lockstep co-simulation: the runner advances it, then sends ``step(t)`` to every agent).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol, runtime_checkable

from limbtree.transport.errors import ConfigError


class ClockMode(StrEnum):
    """How time passes in a run (``--clock``)."""

    REAL = "real"
    """Agents free-run and stream their state; the runner ticks on a monotonic clock."""
    SIM = "sim"
    """Lockstep: each tick the runner sends ``step(t)`` and agents answer with their state."""


@runtime_checkable
class Clock(Protocol):
    """Anything that tells the time."""

    def now(self) -> float:
        """The current time [s]; never decreases."""
        ...


class MonotonicClock:
    """The real clock: seconds since the clock was made, from a monotonic source.

    Args:
        source: the time source [s], ``time.monotonic`` by default; tests pass their own.
    """

    def __init__(self, source: Callable[[], float] = time.monotonic) -> None:
        self._source = source
        self._origin = source()

    def now(self) -> float:
        """Seconds since this clock was made [s]."""
        return self._source() - self._origin


class SimClock:
    """A simulated clock that moves only when told to.

    Args:
        start: the initial time [s].

    Raises:
        ConfigError: when ``start`` is negative or not finite.
    """

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start) or start < 0.0:
            raise ConfigError(f"a sim clock starts at a finite time >= 0 s, not {start}")
        self._t = float(start)

    def now(self) -> float:
        """The simulated time [s]."""
        return self._t

    def advance(self, dt: float) -> float:
        """Move the clock forward.

        Args:
            dt: how far [s], finite and >= 0.

        Returns:
            The new time [s].

        Raises:
            ConfigError: when ``dt`` is negative or not finite.
        """
        if not math.isfinite(dt) or dt < 0.0:
            raise ConfigError(f"a sim clock moves forward by a finite dt >= 0 s, not {dt}")
        self._t += dt
        return self._t

    def set(self, t: float) -> None:
        """Jump to time ``t`` [s], which must not be earlier than now.

        Raises:
            ConfigError: when ``t`` is earlier than now or not finite.
        """
        if not math.isfinite(t) or t < self._t:
            raise ConfigError(f"a sim clock cannot go from {self._t} s back to {t} s")
        self._t = float(t)
