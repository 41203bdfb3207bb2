"""The one shape every skill core has: ``step(observation, dt) -> result``.

A core is a plain stepping object (DESIGN.md, ``skills/``): each tick its behaviour builds a
typed, immutable observation from the limbs' states, calls ``step`` with the time since the
core's previous step, and gets back a typed, immutable result that carries the core's
:class:`~limbtree.skills.outcome.Outcome`, the command to send (None: send nothing) and the
step's :class:`~limbtree.skills.telemetry.SkillTelemetry`. No I/O, no clock of its own.
"""

from __future__ import annotations

import math
from typing import Protocol, TypeVar

from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

ObservationT_contra = TypeVar("ObservationT_contra", contravariant=True)
ResultT_co = TypeVar("ResultT_co", covariant=True)


class CoreResult(Protocol):
    """What every core's step returns, whatever else its result type holds."""

    @property
    def outcome(self) -> Outcome:
        """RUNNING, SUCCESS or FAILURE."""

    @property
    def telemetry(self) -> SkillTelemetry:
        """The step's figures for the tick stream."""


class Core(Protocol[ObservationT_contra, ResultT_co]):
    """A skill core: one per running skill."""

    def step(self, observation: ObservationT_contra, dt: float) -> ResultT_co:
        """Advance one tick.

        Args:
            observation: this tick's typed observation (time and sensed states).
            dt: the time since the core's previous step [s]; 0 at its first step.
        """


class StepTimer:
    """The ``dt`` [s] between a core's steps, from the tick times a behaviour reads.

    One per core: :meth:`dt` is called once per step, with that step's time.
    """

    def __init__(self) -> None:
        self._previous: float | None = None

    def dt(self, time: float) -> float:
        """The time [s] since the previous call (0 at the first, never negative).

        Args:
            time: this step's time [s] (the runner's clock).

        Raises:
            ValueError: if ``time`` is not a finite number.
        """
        if not math.isfinite(time):
            raise ValueError(f"a step's time must be a finite number of seconds, got {time!r}")
        dt = 0.0 if self._previous is None else max(0.0, time - self._previous)
        self._previous = time
        return dt


__all__ = ["Core", "CoreResult", "StepTimer"]
