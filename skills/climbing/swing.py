"""Swing trajectories of a climbing leg's foot: ClimbLab's baseline and seed 004's Bezier.

Two shapes, both evaluated with velocity and acceleration, in the frame the points are
given in (the world, for a planner):

* :class:`CubicSwing`, the baseline (the paper's "regular polynomial"; ClimbLab
  ``upd_swing_traject_spline3_two_segments.m``): two cubic segments of ``T/2`` through an
  apex above the middle of the step. Along ``up`` the foot stops at the start, the apex
  and the end; across it, it starts and ends at rest and passes the apex with zero
  acceleration (at 1.5 times the mean speed of a half). The acceleration jumps at both
  ends (and, along ``up``, at the apex).
* :class:`BezierSwing`, the curve of seed 004 eq. 2: ``x(t) = Σ_j A_Bj C(7, j) (1 - τ)^(7-j)
  τ^j`` with ``τ = t / T``. ``A_B0 = A_B1 = A_B2 = start`` and ``A_B5 = A_B6 = A_B7 = end``
  give zero velocity and acceleration at both ends; ``A_B3`` and ``A_B4`` are free (LRST
  optimises them, :mod:`.lrst`). :meth:`BezierSwing.through_apex` is ClimbLab's plain
  7th-order Bezier (``SeventhOrderBezier.m``): through the apex at ``T/2`` with velocity
  ``2 (end - start) / T``. It seeds LRST.

The apex (both shapes): the middle of the step, raised along ``up`` to ``step_height_m``
above the higher foothold (:func:`apex_point`). ClimbLab raises it above the start
foothold; the higher one keeps the foot clear of a foothold that is higher than where it
starts (brief 2.8: "apex above the higher foothold").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from limbtree.skills.climbing._checks import (
    FloatArray,
    array,
    positive,
    read_only,
    unit3,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.plane import UP

#: The degree of seed 004's swing curve (eq. 2).
BEZIER_DEGREE = 7


@dataclass(frozen=True, eq=False)
class SwingSample:
    """A swing evaluated at ``k`` times.

    Attributes:
        t: ``(k,)`` times from the start of the swing [s].
        position: ``(k, 3)`` foot positions [m].
        velocity: ``(k, 3)`` [m/s].
        acceleration: ``(k, 3)`` [m/s^2].
    """

    t: FloatArray
    position: FloatArray
    velocity: FloatArray
    acceleration: FloatArray

    def __post_init__(self) -> None:
        for name in ("t", "position", "velocity", "acceleration"):
            read_only(getattr(self, name))


class Swing(Protocol):
    """What a swing trajectory offers (both shapes of this module)."""

    @property
    def duration_s(self) -> float:
        """The swing's duration ``T`` [s]."""
        ...

    @property
    def start(self) -> FloatArray:
        """Where the foot starts [m]."""
        ...

    @property
    def end(self) -> FloatArray:
        """Where the foot ends [m]."""
        ...

    def evaluate(self, t: float | Sequence[float] | FloatArray) -> SwingSample:
        """Position, velocity and acceleration at times ``t`` [s] from the start."""
        ...


def _times(t: float | Sequence[float] | FloatArray) -> FloatArray:
    times = np.atleast_1d(np.array(t, dtype=np.float64))
    if times.ndim != 1 or not np.isfinite(times).all():
        raise ClimbingInputError("t", t, "must be a finite time or a 1-D array of times [s]")
    return times


def apex_point(
    start: Sequence[float] | FloatArray,
    end: Sequence[float] | FloatArray,
    step_height_m: float,
    up: Sequence[float] | FloatArray = UP,
) -> FloatArray:
    """The apex of a swing: the middle of the step, ``step_height_m`` above the higher foothold.

    Args:
        start: where the foot starts [m].
        end: where it lands [m].
        step_height_m: ``h_sw`` [m], along ``up``, above ``max(up·start, up·end)``.
        up: the direction heights are measured along (unit after normalising).

    Returns:
        ``(3,)`` [m].

    Raises:
        ClimbingInputError: for a non-finite point, a zero ``up`` or a negative height.
    """
    s, e = vector3("start", start), vector3("end", end)
    n = unit3("up", up)
    h = positive("step_height_m", step_height_m, allow_zero=True)
    middle = 0.5 * (s + e)
    top = max(float(n @ s), float(n @ e)) + h
    result: FloatArray = middle + (top - float(n @ middle)) * n
    return result


def bernstein(degree: int, tau: FloatArray) -> FloatArray:
    """The Bernstein basis ``C(d, j) (1 - τ)^(d-j) τ^j``: ``(k, d + 1)`` for ``(k,)`` ``τ``."""
    j = np.arange(degree + 1)
    binomial = np.array([math.comb(degree, int(i)) for i in j], dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)[:, None]
    result: FloatArray = binomial * tau**j * (1.0 - tau) ** (degree - j)
    return result


def bezier_basis(
    t: float | Sequence[float] | FloatArray,
    duration_s: float,
    degree: int = BEZIER_DEGREE,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Matrices mapping a Bezier curve's control points to its position, velocity, acceleration.

    For control points ``A`` (``(d + 1, 3)``), ``P @ A``, ``V @ A`` and ``Acc @ A`` are the
    curve's position [m], velocity [m/s] and acceleration [m/s^2] at ``t``: the curve is
    linear in its control points, which is what lets LRST vary ``A_B3`` and ``A_B4`` cheaply.
    Times outside ``[0, T]`` are clipped (position held, derivatives of the clipped point).

    Args:
        t: times from the start [s].
        duration_s: ``T`` [s].
        degree: the curve's degree (7 in seed 004).

    Returns:
        ``(P, V, Acc)``, each ``(k, d + 1)``.

    Raises:
        ClimbingInputError: for a non-positive duration, a degree below 2 or bad times.
    """
    duration = positive("duration_s", duration_s)
    if degree < 2:
        raise ClimbingInputError("degree", degree, "must be at least 2")
    tau = np.clip(_times(t) / duration, 0.0, 1.0)
    k = len(tau)
    position = bernstein(degree, tau)
    # P' = d Σ B^(d-1)_j (A_(j+1) - A_j): the coefficient of A_j is d (B^(d-1)_(j-1) - B^(d-1)_j)
    lower = bernstein(degree - 1, tau)
    velocity = np.zeros((k, degree + 1))
    velocity[:, 1:] += lower
    velocity[:, :-1] -= lower
    velocity *= degree / duration
    # P'' = d (d-1) Σ B^(d-2)_j (A_(j+2) - 2 A_(j+1) + A_j)
    lowest = bernstein(degree - 2, tau)
    acceleration = np.zeros((k, degree + 1))
    acceleration[:, 2:] += lowest
    acceleration[:, 1:-1] -= 2.0 * lowest
    acceleration[:, :-2] += lowest
    acceleration *= degree * (degree - 1) / duration**2
    return position, velocity, acceleration


def bezier_control_points(
    start: Sequence[float] | FloatArray,
    end: Sequence[float] | FloatArray,
    a3: Sequence[float] | FloatArray,
    a4: Sequence[float] | FloatArray,
) -> FloatArray:
    """Seed 004's control points: ``A_B0..2 = start``, ``A_B3``, ``A_B4``, ``A_B5..7 = end``.

    Returns:
        ``(8, 3)`` [m].
    """
    s, e = vector3("start", start), vector3("end", end)
    return np.array([s, s, s, vector3("a3", a3), vector3("a4", a4), e, e, e])


@dataclass(frozen=True, eq=False)
class BezierSwing:
    """Seed 004's 7th-order Bezier swing (eq. 2).

    Attributes:
        control_points: ``(8, 3)`` ``A_B0 .. A_B7`` [m]. Build it with :meth:`from_free_points`
            or :meth:`through_apex` so that ``A_B0..2`` and ``A_B5..7`` repeat the ends (zero
            velocity and acceleration there); any 8 points are accepted.
        duration_s: ``T = t_f - t_0`` [s].

    Raises:
        ClimbingInputError: for a wrong shape, a NaN or a non-positive duration.
    """

    control_points: FloatArray
    duration_s: float

    def __post_init__(self) -> None:
        points = array(
            "control_points", self.control_points, (BEZIER_DEGREE + 1, 3), what="8 points"
        )
        object.__setattr__(self, "control_points", read_only(points))
        object.__setattr__(self, "duration_s", positive("duration_s", self.duration_s))

    @classmethod
    def from_free_points(
        cls,
        start: Sequence[float] | FloatArray,
        end: Sequence[float] | FloatArray,
        a3: Sequence[float] | FloatArray,
        a4: Sequence[float] | FloatArray,
        duration_s: float,
    ) -> BezierSwing:
        """The swing from ``start`` to ``end`` with free control points ``A_B3``, ``A_B4`` [m]."""
        return cls(bezier_control_points(start, end, a3, a4), duration_s)

    @classmethod
    def through_apex(
        cls,
        start: Sequence[float] | FloatArray,
        end: Sequence[float] | FloatArray,
        duration_s: float,
        step_height_m: float,
        up: Sequence[float] | FloatArray = UP,
    ) -> BezierSwing:
        """ClimbLab's plain Bezier: through the apex at ``T/2`` at ``2 (end - start) / T``.

        ``A_B3`` and ``A_B4`` solve the two conditions at ``T/2`` (position, velocity) per
        axis (ClimbLab ``SeventhOrderBezier.calcCoefficients``).

        Args:
            start: where the foot starts [m].
            end: where it lands [m].
            duration_s: ``T`` [s].
            step_height_m: ``h_sw`` [m] above the higher foothold along ``up``.
            up: the height direction.

        Raises:
            ClimbingInputError: for bad points, a non-positive duration or a negative height.
        """
        s, e = vector3("start", start), vector3("end", end)
        duration = positive("duration_s", duration_s)
        apex = apex_point(s, e, step_height_m, up)
        velocity = 2.0 * (e - s) / duration
        position_row, velocity_row, _ = bezier_basis(0.5 * duration, duration)
        known = bezier_control_points(s, e, np.zeros(3), np.zeros(3))
        system = np.array([position_row[0, 3:5], velocity_row[0, 3:5]])  # (2, 2)
        rhs = np.array([apex - position_row[0] @ known, velocity - velocity_row[0] @ known])
        free = np.linalg.solve(system, rhs)  # (2, 3): A_B3, A_B4
        return cls.from_free_points(s, e, free[0], free[1], duration)

    @property
    def start(self) -> FloatArray:
        """``A_B0`` [m]."""
        first: FloatArray = self.control_points[0]
        return first

    @property
    def end(self) -> FloatArray:
        """``A_B7`` [m]."""
        last: FloatArray = self.control_points[-1]
        return last

    @property
    def free_points(self) -> FloatArray:
        """``(2, 3)``: ``A_B3`` and ``A_B4`` [m]."""
        return self.control_points[3:5]

    def evaluate(self, t: float | Sequence[float] | FloatArray) -> SwingSample:
        """Position, velocity and acceleration at ``t`` [s] (clipped to ``[0, T]``)."""
        times = _times(t)
        p, v, a = bezier_basis(times, self.duration_s)
        points = self.control_points
        return SwingSample(times, p @ points, v @ points, a @ points)


@dataclass(frozen=True, eq=False)
class CubicSwing:
    """ClimbLab's baseline swing: two cubic segments through an apex at ``T/2``.

    Along ``up``: ``3 s^2 - 2 s^3`` in each half (at rest at the start, the apex and the
    end). Across ``up``: the first half starts at rest and reaches the apex with zero
    acceleration, the second leaves it with zero acceleration and ends at rest
    (``1.5 s^2 - 0.5 s^3`` and ``1.5 s - 0.5 s^3``).

    Attributes:
        start: where the foot starts [m].
        end: where it lands [m].
        apex: the apex, reached at ``T/2`` [m].
        duration_s: ``T`` [s].
        up: the direction along which the foot stops at the apex (unit).

    Raises:
        ClimbingInputError: for non-finite points, a zero ``up`` or a non-positive duration.
    """

    start: FloatArray
    end: FloatArray
    apex: FloatArray
    duration_s: float
    up: FloatArray = field(default_factory=lambda: np.array(UP))

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", read_only(vector3("start", self.start)))
        object.__setattr__(self, "end", read_only(vector3("end", self.end)))
        object.__setattr__(self, "apex", read_only(vector3("apex", self.apex)))
        object.__setattr__(self, "up", read_only(unit3("up", self.up)))
        object.__setattr__(self, "duration_s", positive("duration_s", self.duration_s))

    @classmethod
    def between(
        cls,
        start: Sequence[float] | FloatArray,
        end: Sequence[float] | FloatArray,
        duration_s: float,
        step_height_m: float,
        up: Sequence[float] | FloatArray = UP,
    ) -> CubicSwing:
        """The baseline swing with its apex at :func:`apex_point`."""
        apex = apex_point(start, end, step_height_m, up)
        return cls(np.asarray(start), np.asarray(end), apex, duration_s, np.asarray(up))

    def evaluate(self, t: float | Sequence[float] | FloatArray) -> SwingSample:
        """Position, velocity and acceleration at ``t`` [s] (clipped to ``[0, T]``)."""
        times = _times(t)
        half = 0.5 * self.duration_s
        clipped = np.clip(times, 0.0, self.duration_s)
        first = clipped <= half
        s = np.where(first, clipped / half, (clipped - half) / half)[:, None]
        n = self.up
        start_v, apex_v, end_v = float(n @ self.start), float(n @ self.apex), float(n @ self.end)
        start_h = self.start - start_v * n
        apex_h = self.apex - apex_v * n
        end_h = self.end - end_v * n
        # along up: z0 + dz (3 s^2 - 2 s^3) in each half
        z0 = np.where(first[:, None], start_v, apex_v)
        dz = np.where(first[:, None], apex_v - start_v, end_v - apex_v)
        vertical = z0 + dz * (3.0 * s**2 - 2.0 * s**3)
        vertical_v = dz * (6.0 * s - 6.0 * s**2) / half
        vertical_a = dz * (6.0 - 12.0 * s) / half**2
        # across up: at rest at the ends, zero acceleration at the apex
        rise = apex_h - start_h
        fall = end_h - apex_h
        horizontal = np.where(
            first[:, None],
            start_h + rise * (1.5 * s**2 - 0.5 * s**3),
            apex_h + fall * (1.5 * s - 0.5 * s**3),
        )
        horizontal_v = (
            np.where(first[:, None], rise * (3.0 * s - 1.5 * s**2), fall * (1.5 - 1.5 * s**2))
            / half
        )
        horizontal_a = np.where(first[:, None], rise * (3.0 - 3.0 * s), fall * (-3.0 * s)) / half**2
        outside = ((times < 0.0) | (times > self.duration_s))[:, None]
        velocity = np.where(outside, 0.0, horizontal_v + vertical_v * n)
        acceleration = np.where(outside, 0.0, horizontal_a + vertical_a * n)
        return SwingSample(times, horizontal + vertical * n, velocity, acceleration)


def swing_heights(
    positions: FloatArray,
    start: Sequence[float] | FloatArray,
    end: Sequence[float] | FloatArray,
    up: Sequence[float] | FloatArray = UP,
) -> FloatArray:
    """Heights of foot positions above the higher foothold, along ``up`` [m] (eq. 2's datum)."""
    n = unit3("up", up)
    s, e = vector3("start", start), vector3("end", end)
    result: FloatArray = np.asarray(positions, dtype=np.float64) @ n - max(
        float(n @ s), float(n @ e)
    )
    return result


__all__ = [
    "BEZIER_DEGREE",
    "BezierSwing",
    "CubicSwing",
    "Swing",
    "SwingSample",
    "apex_point",
    "bernstein",
    "bezier_basis",
    "bezier_control_points",
    "swing_heights",
]
