"""The GIA stability margin of a climbing robot with grippers (seed 004 Fig. 5, its ref. [20]).

Seed 004 judges dynamic equilibrium by the gravito-inertial acceleration ``a_gi = g − a_g``
(``a_g`` the centre of mass's acceleration) against a polyhedron set by the grasping
contacts and the grippers' holding force (ClimbLab ``lib/equ_gia/*``). For each tumbling
axis ``a-b`` (consecutive grasping contacts around the support polygon):

    n_ab = (p_g − p_a) × (p_g − p_b)
    a_lim,ab = | Σ_{j≠a,b} F_hold (−ẑ)·((p_b − p_j) × (p_a − p_j)) + M_0·(p_a − p_b)
                 + F_0·(p_b × p_a) | / (m |n_ab|)

The robot is in equilibrium when ``a_gi · n̂_ab ≤ a_lim,ab`` for every axis, and the margin
is ``min_ab (a_lim,ab − a_gi · n̂_ab)``; it is 0 out of equilibrium and with fewer than two
grasping contacts (ClimbLab ``equ_gia_acceleration_margin.m``).

``ẑ``, the direction the grippers hold against, is ClimbLab's world z; ``up`` generalises it
(the regression plane's normal on a slope, a choice the wave-2 brief 2.6 flags). The
contacts are put in counter-clockwise order seen from ``up`` before the axes are formed,
which makes every ``n̂_ab`` point out of the polygon and up: ClimbLab relies on its legs
being numbered around the body instead.

At 1e-6 g the margin is set almost entirely by ``F_hold``: about 0.45 m/s² for HubRobo
holding with three legs (wave-2 brief 2.6). It falls under large centre-of-mass
accelerations (impacts) or when grasps are lost: a failure indicator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from limbtree.skills.climbing._checks import (
    FloatArray,
    array,
    positive,
    read_only,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.plane import UP


@dataclass(frozen=True, eq=False)
class GiaMargin:
    """The GIA stability margin at one instant.

    Attributes:
        margin_m_s2: ``min_ab (a_lim,ab − a_gi · n̂_ab)`` in equilibrium, else 0 [m/s^2].
        equilibrium: whether ``a_gi`` is inside every face (False with fewer than two
            grasping contacts).
        gia: ``(3,)`` ``a_gi = g − a_g`` [m/s^2].
        axes: the tumbling axes, as index pairs into the contacts, counter-clockwise.
        axis_margins: ``(m,)`` ``a_lim,ab − a_gi · n̂_ab`` per axis [m/s^2].
        limits: ``(m,)`` ``a_lim,ab`` per axis [m/s^2].
    """

    margin_m_s2: float
    equilibrium: bool
    gia: FloatArray
    axes: tuple[tuple[int, int], ...]
    axis_margins: FloatArray
    limits: FloatArray

    def __post_init__(self) -> None:
        for name in ("gia", "axis_margins", "limits"):
            read_only(getattr(self, name))


def counter_clockwise(
    points: Sequence[Sequence[float]] | FloatArray, up: Sequence[float] | FloatArray = UP
) -> tuple[int, ...]:
    """Indices of ``(k, 3)`` points counter-clockwise around their centroid, seen from ``up``.

    Raises:
        ClimbingInputError: for points that are not ``(k, 3)`` and finite, or a zero ``up``.
    """
    rows = _rows("points", points)
    return _counter_clockwise(rows, _unit("up", up))


def gia_margin(
    contacts: Sequence[Sequence[float]] | FloatArray,
    grasping: Sequence[bool],
    com: Sequence[float] | FloatArray,
    mass_kg: float,
    *,
    hold_force_n: float,
    gravity: Sequence[float] | FloatArray,
    com_acceleration: Sequence[float] | FloatArray = (0.0, 0.0, 0.0),
    up: Sequence[float] | FloatArray = UP,
    external_force: Sequence[float] | FloatArray = (0.0, 0.0, 0.0),
    external_moment: Sequence[float] | FloatArray = (0.0, 0.0, 0.0),
) -> GiaMargin:
    """The GIA stability margin (module docstring) of a robot holding on with grippers.

    Computed on Python floats: a handful of contacts, evaluated at every tick of a climb,
    where numpy's cost per call would be most of the time (565 us against 30 us here).

    Args:
        contacts: ``(k, 3)`` the legs' contact points in the world [m].
        grasping: ``k`` flags: which legs grasp (a swinging or detached leg does not).
        com: ``p_g``, the centre of mass in the world [m].
        mass_kg: ``m``, the robot's mass [kg].
        hold_force_n: ``F_hold``, each gripper's holding force [N] (0.9 N in seed 004).
        gravity: ``g`` in the world [m/s^2] (``(0, 0, -9.81e-6)`` at 1e-6 g).
        com_acceleration: ``a_g`` [m/s^2].
        up: the direction the grippers hold against is ``-up``.
        external_force: ``F_0`` at the centre of mass [N].
        external_moment: ``M_0`` [N m].

    Returns:
        The margin, whether in equilibrium, and the per-axis figures.

    Raises:
        ClimbingInputError: for mismatched sizes, non-finite values, a non-positive mass or
            a negative holding force.
    """
    points = _rows("contacts", contacts)
    flags = np.asarray(grasping, dtype=bool)
    if flags.shape != (len(points),):
        raise ClimbingInputError(
            "grasping", grasping, f"must hold one flag per contact ({len(points)})"
        )
    p_g = _vector("com", com)
    mass = positive("mass_kg", mass_kg)
    hold = positive("hold_force_n", hold_force_n, allow_zero=True)
    g = _vector("gravity", gravity)
    a_g = _vector("com_acceleration", com_acceleration)
    gia = (g[0] - a_g[0], g[1] - a_g[1], g[2] - a_g[2])
    n_up = _unit("up", up)
    f_0 = _vector("external_force", external_force)
    m_0 = _vector("external_moment", external_moment)
    held = [i for i, flag in enumerate(flags.tolist()) if flag]
    if len(held) < 2:
        return GiaMargin(0.0, False, np.array(gia), (), np.zeros(0), np.zeros(0))
    order = [held[i] for i in _counter_clockwise([points[i] for i in held], n_up)]
    axes = tuple(zip(order, order[1:] + order[:1], strict=True))  # two contacts: (a, b), (b, a)
    down = (-n_up[0], -n_up[1], -n_up[2])
    limits: list[float] = []
    margins: list[float] = []
    degenerate = False
    for a, b in axes:
        p_a, p_b = points[a], points[b]
        normal = _cross(_minus(p_g, p_a), _minus(p_g, p_b))
        size = math.sqrt(_dot(normal, normal))
        # the holding grippers' moments about the axis: F_hold (-up) . ((p_b - p_j) x (p_a - p_j))
        lever = 0.0
        for j in order:
            if j not in (a, b):
                p_j = points[j]
                lever += _dot(_cross(_minus(p_b, p_j), _minus(p_a, p_j)), down)
        moment = hold * lever + _dot(_minus(p_a, p_b), m_0) + _dot(_cross(p_b, p_a), f_0)
        if size < 1e-12:  # the centre of mass on an axis: no face, no margin
            degenerate = True
            limits.append(0.0)
            margins.append(0.0)
            continue
        limit = abs(moment) / (mass * size)
        limits.append(limit)
        margins.append(limit - _dot(normal, gia) / size)
    equilibrium = not degenerate and all(m >= 0.0 for m in margins)
    margin = min(margins) if equilibrium else 0.0
    if not math.isfinite(margin):
        margin, equilibrium = 0.0, False
    return GiaMargin(margin, equilibrium, np.array(gia), axes, np.array(margins), np.array(limits))


Vector3 = tuple[float, float, float]


def _counter_clockwise(rows: Sequence[Vector3], n: Vector3) -> tuple[int, ...]:
    helper = (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0, 0.0)
    e1 = _cross(n, _cross(helper, n))
    size = math.sqrt(_dot(e1, e1))
    e1 = (e1[0] / size, e1[1] / size, e1[2] / size)
    e2 = _cross(n, e1)
    k = len(rows)
    centre = tuple(sum(row[c] for row in rows) / k for c in range(3))
    angles = [
        math.atan2(_dot(_minus(row, centre), e2), _dot(_minus(row, centre), e1)) for row in rows
    ]
    return tuple(sorted(range(k), key=angles.__getitem__))  # (sorted is stable)


def _rows(name: str, value: object) -> list[Vector3]:
    """``(k, 3)`` finite numbers as rows of floats (``array``'s checks and errors)."""
    if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == 3:
        rows = value.tolist()
        if all(math.isfinite(v) for row in rows for v in row):
            return [(float(x), float(y), float(z)) for x, y, z in rows]
    checked = array(name, value, (None, 3), what="rows of x, y, z")
    return [(x, y, z) for x, y, z in checked.tolist()]


def _vector(name: str, value: object) -> Vector3:
    """A finite 3-vector as floats (``vector3``'s checks and errors)."""
    if isinstance(value, tuple | list) and len(value) == 3:
        try:
            x, y, z = (float(v) for v in value)
        except (TypeError, ValueError):
            pass
        else:
            if math.isfinite(x) and math.isfinite(y) and math.isfinite(z):
                return (x, y, z)
    x, y, z = vector3(name, value).tolist()
    return (x, y, z)


def _unit(name: str, value: object) -> Vector3:
    """A direction normalised to length 1 (``unit3``'s checks and errors)."""
    x, y, z = _vector(name, value)
    norm = math.sqrt(x * x + y * y + z * z)
    if norm < 1e-12:
        raise ClimbingInputError(name, value, "must be a non-zero direction")
    return (x / norm, y / norm, z / norm)


def _minus(a: Sequence[float], b: Sequence[float]) -> Vector3:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Sequence[float], b: Sequence[float]) -> Vector3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


__all__ = ["GiaMargin", "counter_clockwise", "gia_margin"]
