"""``ImpedanceMove``: a controlled frame (the torso, or an arm tip) to a goal, then held.

Seed 003's torso operation (Sec. 5-B, morphology C(ii)): both arm tips latched, the torso
frame E0 a task frame of the unified controller
(:class:`~limbtree.skills.dynamics.UnifiedImpedance`, in the plant at 1 kHz) with its goal.
This core, stepped at the tree's rate, commands the goal, says when the frame has settled
(within ``settle_m`` and ``settle_rad``), then holds for ``hold_s`` while it tracks the
largest error over the hold: the paper's steady-state error, "below 2 mm and 1 deg". It
succeeds after the hold; it fails when the frame does not settle in ``timeout_s``, or when
the error over the hold leaves ``hold_tol_m`` / ``hold_tol_rad`` if they are given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from limbtree.skills.dynamics.errors import DynamicsInputError
from limbtree.skills.dynamics.unified import checked_transform, pose_error
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

FloatArray = npt.NDArray[np.float64]


class MovePhase(StrEnum):
    """Where an impedance move is."""

    MOVING = "moving"
    HOLDING = "holding"
    DONE = "done"
    FAILED = "failed"


def _positive(name: str, value: float | None, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    number = float(value) if value is not None else math.nan
    if not (math.isfinite(number) and number > 0.0):
        need = "a finite number > 0" + (" or None" if optional else "")
        raise DynamicsInputError(name, value, f"must be {need}")
    return number


@dataclass(frozen=True)
class MoveParams:
    """When an impedance move has settled, how long it holds, and when it fails.

    Attributes:
        settle_m: position error to settle within [m] (the paper's 2 mm).
        settle_rad: angle error to settle within [rad] (the paper's 1 deg).
        hold_s: how long to hold once settled [s] (the steady state is measured over it).
        hold_tol_m: FAILURE if the position error over the hold exceeds this [m]; None:
            not checked.
        hold_tol_rad: the same for the angle error [rad].
        timeout_s: how long the frame may take to settle [s], or None for no limit.

    Raises:
        DynamicsInputError: for a value that is not a positive finite number (``hold_s``
            may be 0).
    """

    settle_m: float = 0.002
    settle_rad: float = math.radians(1.0)
    hold_s: float = 20.0
    hold_tol_m: float | None = None
    hold_tol_rad: float | None = None
    timeout_s: float | None = 60.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "settle_m", _positive("settle_m", self.settle_m))
        object.__setattr__(self, "settle_rad", _positive("settle_rad", self.settle_rad))
        hold = float(self.hold_s)
        if not (math.isfinite(hold) and hold >= 0.0):
            raise DynamicsInputError("hold_s", self.hold_s, "must be a finite number >= 0")
        object.__setattr__(self, "hold_s", hold)
        for name in ("hold_tol_m", "hold_tol_rad", "timeout_s"):
            object.__setattr__(self, name, _positive(name, getattr(self, name), optional=True))


@dataclass(frozen=True, eq=False)
class MoveObservation:
    """What an impedance move sees at one tick.

    Attributes:
        t: the tick time [s].
        pose: the controlled frame's 4x4 world pose.
        goal: its goal, a 4x4 world pose.

    Raises:
        DynamicsInputError: for a pose that is not a finite rigid transform or a time that
            is not finite.
    """

    t: float
    pose: FloatArray
    goal: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "pose", checked_transform("pose", self.pose))
        object.__setattr__(self, "goal", checked_transform("goal", self.goal))
        if not math.isfinite(self.t):
            raise DynamicsInputError("t", self.t, "must be a finite time [s]")


@dataclass(frozen=True)
class MoveTelemetry(SkillTelemetry):
    """An impedance move's figures for one tick.

    Attributes:
        frame: the controlled frame.
        phase: where the move is.
        err_mm: position error from the goal [mm].
        err_deg: angle error from the goal [deg].
        steady_max_mm: the largest position error since it settled [mm], or None before.
        steady_max_deg: the largest angle error since it settled [deg], or None before.
        elapsed_s: time since the move started [s].
    """

    skill: ClassVar[str] = "impedance_move"
    frame: str
    phase: MovePhase
    err_mm: float
    err_deg: float
    steady_max_mm: float | None
    steady_max_deg: float | None
    elapsed_s: float


@dataclass(frozen=True, eq=False)
class MoveResult:
    """What :meth:`ImpedanceMove.step` returns.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        message: for a person: what the move is doing, or why it failed.
        goal: the controlled frame's goal to command (held after SUCCESS too).
        telemetry: the tick's figures.
        metrics: on SUCCESS: ``settle_s`` (start to settled), ``steady_max_err_mm`` and
            ``steady_max_err_deg`` (the steady state: the largest errors over the second half
            of the hold), ``hold_max_err_mm`` and ``hold_max_err_deg`` (over the whole hold,
            from the moment it settled), ``final_err_mm``, ``final_err_deg``,
            ``hold_s``; otherwise None.
    """

    outcome: Outcome
    message: str
    goal: FloatArray
    telemetry: MoveTelemetry
    metrics: Mapping[str, Any] | None = None


class ImpedanceMove:
    """A frame driven to its goal by the unified controller, settled, then held.

    Args:
        frame: the controlled frame (``"E0"``, ``"arm_1.E2"``).
        params: the settle, hold and failure rules.
    """

    def __init__(self, frame: str, params: MoveParams | None = None) -> None:
        self.frame = frame
        self.params = params or MoveParams()
        self.phase = MovePhase.MOVING
        self._t0: float | None = None
        self._settled_at: float | None = None
        self._steady = (0.0, 0.0)  # largest errors over the hold [m, rad]
        self._late = (0.0, 0.0)  # ... over its second half, the steady state [m, rad]
        self._final: MoveResult | None = None

    def step(self, observation: MoveObservation, dt: float) -> MoveResult:
        """Advance one tick.

        Args:
            observation: the frame's pose and goal at this tick.
            dt: time since the previous step [s] (unused: the phases read ``observation.t``).

        Returns:
            The tick's goal, outcome and figures; once SUCCESS or FAILURE, the outcome stays
            (with this tick's goal).
        """
        obs, p = observation, self.params
        if self._t0 is None:
            self._t0 = obs.t
        elapsed = obs.t - self._t0
        error = pose_error(obs.pose, obs.goal)
        if self._final is not None:
            return MoveResult(
                self._final.outcome,
                self._final.message,
                obs.goal,
                self._telemetry(error, elapsed),
                self._final.metrics,
            )
        mm, deg = error[0] * 1e3, math.degrees(error[1])
        if self.phase is MovePhase.MOVING:
            if error[0] <= p.settle_m and error[1] <= p.settle_rad:
                self.phase = MovePhase.HOLDING
                self._settled_at = obs.t
            elif p.timeout_s is not None and elapsed > p.timeout_s:
                return self._finish(
                    Outcome.FAILURE,
                    f"{self.frame} did not settle within {p.timeout_s:g} s: {mm:.1f} mm / "
                    f"{deg:.2f} deg from its goal at t = {obs.t:.2f} s (settles within "
                    f"{p.settle_m * 1e3:g} mm / {math.degrees(p.settle_rad):g} deg); is the goal "
                    "in reach and are the limbs latched?",
                    obs.goal,
                    error,
                    elapsed,
                )
        if self.phase is MovePhase.HOLDING:
            self._steady = (max(self._steady[0], error[0]), max(self._steady[1], error[1]))
            settled = self._settled_at if self._settled_at is not None else obs.t
            if obs.t - settled >= 0.5 * p.hold_s - 1e-9:  # the second half: the steady state
                self._late = (max(self._late[0], error[0]), max(self._late[1], error[1]))
            if (p.hold_tol_m is not None and error[0] > p.hold_tol_m) or (
                p.hold_tol_rad is not None and error[1] > p.hold_tol_rad
            ):
                return self._finish(
                    Outcome.FAILURE,
                    f"{self.frame} left its hold tolerance at t = {obs.t:.2f} s: {mm:.2f} mm / "
                    f"{deg:.3f} deg from its goal (hold_tol "
                    f"{_mm(p.hold_tol_m)} mm / {_deg(p.hold_tol_rad)} deg)",
                    obs.goal,
                    error,
                    elapsed,
                )
            settled_at = self._settled_at if self._settled_at is not None else obs.t
            if obs.t - settled_at >= p.hold_s - 1e-9:
                return self._finish(
                    Outcome.SUCCESS,
                    f"{self.frame} held at its goal for {p.hold_s:g} s: steady-state error at "
                    f"most {self._late[0] * 1e3:.2f} mm / {math.degrees(self._late[1]):.3f} "
                    "deg",
                    obs.goal,
                    error,
                    elapsed,
                )
            message = f"holding {self.frame}: {mm:.2f} mm / {deg:.3f} deg from its goal"
        else:
            message = f"moving {self.frame}: {mm:.1f} mm / {deg:.2f} deg from its goal"
        return MoveResult(Outcome.RUNNING, message, obs.goal, self._telemetry(error, elapsed))

    def _telemetry(self, error: tuple[float, float], elapsed: float) -> MoveTelemetry:
        held = self._settled_at is not None
        return MoveTelemetry(
            frame=self.frame,
            phase=self.phase,
            err_mm=error[0] * 1e3,
            err_deg=math.degrees(error[1]),
            steady_max_mm=self._steady[0] * 1e3 if held else None,
            steady_max_deg=math.degrees(self._steady[1]) if held else None,
            elapsed_s=elapsed,
        )

    def _finish(
        self,
        outcome: Outcome,
        message: str,
        goal: FloatArray,
        error: tuple[float, float],
        elapsed: float,
    ) -> MoveResult:
        metrics = None
        if outcome is Outcome.SUCCESS:
            self.phase = MovePhase.DONE
            settled_at = self._settled_at if self._settled_at is not None else 0.0
            start = self._t0 if self._t0 is not None else 0.0
            metrics = {
                "settle_s": settled_at - start,
                "steady_max_err_mm": self._late[0] * 1e3,
                "steady_max_err_deg": math.degrees(self._late[1]),
                "hold_max_err_mm": self._steady[0] * 1e3,
                "hold_max_err_deg": math.degrees(self._steady[1]),
                "final_err_mm": error[0] * 1e3,
                "final_err_deg": math.degrees(error[1]),
                "hold_s": self.params.hold_s,
            }
        else:
            self.phase = MovePhase.FAILED
        self._final = MoveResult(outcome, message, goal, self._telemetry(error, elapsed), metrics)
        return self._final


def _mm(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:g}"


def _deg(value: float | None) -> str:
    return "-" if value is None else f"{math.degrees(value):g}"


__all__ = [
    "ImpedanceMove",
    "MoveObservation",
    "MoveParams",
    "MovePhase",
    "MoveResult",
    "MoveTelemetry",
]
