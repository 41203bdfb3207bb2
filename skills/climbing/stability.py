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
    cross,
    positive,
    read_only,
    unit3,
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
    values = array("points", points, (None, 3), what="rows of x, y, z")
    n = unit3("up", up)
    helper = np.array((1.0, 0.0, 0.0)) if abs(n[0]) < 0.9 else np.array((0.0, 1.0, 0.0))
    e1 = cross(n, cross(helper, n))
    e1 /= np.linalg.norm(e1)
    e2 = cross(n, e1)
    centred = values - values.mean(axis=0)
    angles = np.arctan2(centred @ e2, centred @ e1)
    return tuple(int(i) for i in np.argsort(angles, kind="stable"))


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
    points = array("contacts", contacts, (None, 3), what="rows of x, y, z")
    flags = np.asarray(grasping, dtype=bool)
    if flags.shape != (len(points),):
        raise ClimbingInputError(
            "grasping", grasping, f"must hold one flag per contact ({len(points)})"
        )
    p_g = vector3("com", com)
    mass = positive("mass_kg", mass_kg)
    hold = positive("hold_force_n", hold_force_n, allow_zero=True)
    gia = vector3("gravity", gravity) - vector3("com_acceleration", com_acceleration)
    n_up = unit3("up", up)
    f_0 = vector3("external_force", external_force)
    m_0 = vector3("external_moment", external_moment)
    held = np.flatnonzero(flags)
    if len(held) < 2:
        return GiaMargin(0.0, False, gia, (), np.zeros(0), np.zeros(0))
    order = held[list(counter_clockwise(points[held], n_up))]
    a_index = order
    b_index = np.roll(order, -1)  # two contacts: (a, b) and (b, a), as ClimbLab
    axes = tuple((int(a), int(b)) for a, b in zip(a_index, b_index, strict=True))
    p_a, p_b = points[a_index], points[b_index]  # (m, 3)
    normals = cross(p_g - p_a, p_g - p_b)
    sizes = np.linalg.norm(normals, axis=1)
    # the holding grippers' moments about each axis: F_hold (-up) · ((p_b - p_j) x (p_a - p_j))
    p_j = points[order]  # (m, 3)
    levers = cross(p_b[:, None, :] - p_j[None], p_a[:, None, :] - p_j[None]) @ -n_up  # (m, m)
    others = (order[None, :] != a_index[:, None]) & (order[None, :] != b_index[:, None])
    moments = hold * (levers * others).sum(axis=1)
    moments += (p_a - p_b) @ m_0 + cross(p_b, p_a) @ f_0
    degenerate = sizes < 1e-12  # the centre of mass on an axis: no face, no margin
    safe = np.where(degenerate, 1.0, sizes)
    limits = np.where(degenerate, 0.0, np.abs(moments) / (mass * safe))
    margins = np.where(degenerate, 0.0, limits - (normals @ gia) / safe)
    equilibrium = not degenerate.any() and bool((margins >= 0.0).all())
    margin = float(margins.min()) if equilibrium else 0.0
    if not math.isfinite(margin):
        margin, equilibrium = 0.0, False
    return GiaMargin(margin, equilibrium, gia, axes, margins, limits)


__all__ = ["GiaMargin", "counter_clockwise", "gia_margin"]
