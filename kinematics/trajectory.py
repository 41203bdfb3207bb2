"""LERP+SLERP trajectories in SE(3) and their stacking over n limbs (seed 000 eqs. 6 and 8).

The array functions work on stacked limbs: positions ``(n, 3)`` [m] and unit quaternions
``(n, 4)`` scalar last. :class:`Trajectory` and :class:`PiecewiseTrajectory` are the thin
object layer over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import ShapeMismatchError
from limbtree.kinematics.pose import Pose

FloatArray = npt.NDArray[np.float64]

#: Below this arc [rad on S^3] a SLERP is treated as no rotation at all.
_TINY_ARC = 1e-12


def as_limb_tuple(poses: Pose | Sequence[Pose], name: str) -> tuple[Pose, ...]:
    """One pose or a sequence of poses as a tuple, one per limb."""
    if isinstance(poses, Pose):
        return (poses,)
    out = tuple(poses)
    if not out or not all(isinstance(p, Pose) for p in out):
        raise TypeError(f"{name} must be a Pose or a non-empty sequence of Poses")
    return out


def stack_poses(poses: Sequence[Pose]) -> tuple[FloatArray, FloatArray]:
    """Positions ``(n, 3)`` and quaternions ``(n, 4)`` of a sequence of poses."""
    return (
        np.array([p.position for p in poses]),
        np.array([p.quaternion for p in poses]),
    )


def poses_from_arrays(positions: FloatArray, quaternions: FloatArray) -> tuple[Pose, ...]:
    """Poses from stacked arrays that are already valid (finite, unit quaternions).

    Skips :class:`Pose` validation, which is the point: trajectory points are unit by
    construction, and building them is on the per-tick path.
    """
    out = []
    for position, quaternion in zip(positions, quaternions, strict=True):
        pose = object.__new__(Pose)
        p = np.array(position, dtype=np.float64)
        q = np.array(quaternion, dtype=np.float64)
        q /= np.sqrt(q @ q)
        p.setflags(write=False)
        q.setflags(write=False)
        object.__setattr__(pose, "position", p)
        object.__setattr__(pose, "quaternion", q)
        out.append(pose)
    return tuple(out)


class SlerpBasis(NamedTuple):
    """The great circle a SLERP runs along: ``q(t) = cos(t omega) q0 + sin(t omega) q_perp``.

    Attributes:
        q0: ``(n, 4)`` start quaternions.
        q_perp: ``(n, 4)`` unit quaternions orthogonal to ``q0`` in the plane of the arc (zero
            where the arc is empty).
        omega: ``(n,)`` arc length [rad on S^3], in ``[0, pi/2]``: half the rotation angle.
    """

    q0: FloatArray
    q_perp: FloatArray
    omega: FloatArray


def slerp_basis(q_start: FloatArray, q_end: FloatArray) -> SlerpBasis:
    """The shortest-arc great circle from ``q_start`` to ``q_end``, per limb.

    ``q_end`` is negated where needed so the arc is at most ``pi/2`` on S^3 (a rotation of at
    most ``pi``). At exactly ``pi`` both arcs are equally short and the one towards the given
    ``q_end`` sign is taken.

    Args:
        q_start: ``(n, 4)`` unit quaternions.
        q_end: ``(n, 4)`` unit quaternions.
    """
    q0 = np.asarray(q_start, dtype=np.float64)
    q1 = np.array(q_end, dtype=np.float64)
    dot = np.einsum("ij,ij->i", q0, q1)
    q1[dot < 0] *= -1.0
    omega = 2.0 * np.arctan2(np.linalg.norm(q0 - q1, axis=1), np.linalg.norm(q0 + q1, axis=1))
    perp = q1 - np.einsum("ij,ij->i", q0, q1)[:, None] * q0
    norm = np.linalg.norm(perp, axis=1)
    moving = omega > _TINY_ARC
    q_perp = np.zeros_like(q0)
    q_perp[moving] = perp[moving] / norm[moving, None]
    omega = np.where(moving, omega, 0.0)
    return SlerpBasis(q0, q_perp, omega)


def interpolate(
    p_start: FloatArray,
    p_end: FloatArray,
    basis: SlerpBasis,
    t: FloatArray | float,
) -> tuple[FloatArray, FloatArray]:
    """Points of the stacked trajectory (eq. 8) at one or many ``t``.

    Args:
        p_start: ``(n, 3)`` start positions [m].
        p_end: ``(n, 3)`` end positions [m].
        basis: the SLERP great circles from :func:`slerp_basis`.
        t: a scalar or ``(m,)`` array of parameters in ``[0, 1]``.

    Returns:
        Positions and quaternions, ``(n, 3)`` and ``(n, 4)`` for a scalar ``t``, else
        ``(m, n, 3)`` and ``(m, n, 4)``.
    """
    t_arr = np.asarray(t, dtype=np.float64)
    ts = t_arr.reshape(-1, 1, 1)
    positions = (1.0 - ts) * p_start + ts * p_end
    angle = ts * basis.omega[None, :, None]
    quaternions = np.cos(angle) * basis.q0 + np.sin(angle) * basis.q_perp
    if t_arr.ndim == 0:
        return positions[0], quaternions[0]
    return positions, quaternions


@dataclass(frozen=True, eq=False)
class Trajectory:
    """The stacked LERP+SLERP trajectory from ``start`` to ``end`` (seed 000 eqs. 6 and 8).

    Attributes:
        start: one pose per limb, ``T(0)``.
        end: one pose per limb, ``T(1)``.
    """

    start: tuple[Pose, ...]
    end: tuple[Pose, ...]

    def __init__(self, start: Pose | Sequence[Pose], end: Pose | Sequence[Pose]) -> None:
        s = as_limb_tuple(start, "start")
        e = as_limb_tuple(end, "end")
        if len(s) != len(e):
            raise ShapeMismatchError(f"start has {len(s)} poses but end has {len(e)}")
        object.__setattr__(self, "start", s)
        object.__setattr__(self, "end", e)

    @property
    def n(self) -> int:
        """Number of limbs."""
        return len(self.start)

    def arrays(self, t: FloatArray | float) -> tuple[FloatArray, FloatArray]:
        """Positions and quaternions at ``t`` (see :func:`interpolate`)."""
        p0, q0 = stack_poses(self.start)
        p1, q1 = stack_poses(self.end)
        return interpolate(p0, p1, slerp_basis(q0, q1), t)

    def __call__(self, t: float) -> tuple[Pose, ...]:
        """The poses of every limb at ``t`` in ``[0, 1]``."""
        if not 0.0 <= t <= 1.0:
            raise ValueError(f"t must lie in [0, 1], got {t}")
        return poses_from_arrays(*self.arrays(float(t)))


@dataclass(frozen=True, eq=False)
class PiecewiseTrajectory:
    """A stacked trajectory through waypoints: one LERP+SLERP segment between each pair.

    The parameter ``s`` runs from 0 to ``len(waypoints) - 1``; segment ``k`` covers
    ``[k, k + 1]``.

    Attributes:
        waypoints: each waypoint is one pose per limb.
    """

    waypoints: tuple[tuple[Pose, ...], ...]

    def __init__(self, waypoints: Sequence[Pose | Sequence[Pose]]) -> None:
        wps = tuple(as_limb_tuple(w, f"waypoint {i}") for i, w in enumerate(waypoints))
        if len(wps) < 2:
            raise ValueError("a piecewise trajectory needs at least two waypoints")
        if len({len(w) for w in wps}) != 1:
            raise ShapeMismatchError(
                f"every waypoint needs one pose per limb; got {[len(w) for w in wps]}"
            )
        object.__setattr__(self, "waypoints", wps)

    @property
    def segments(self) -> int:
        """Number of segments."""
        return len(self.waypoints) - 1

    def segment(self, k: int) -> Trajectory:
        """Segment ``k``, from waypoint ``k`` to waypoint ``k + 1``."""
        if not 0 <= k < self.segments:
            raise IndexError(f"segment {k} out of range 0..{self.segments - 1}")
        return Trajectory(self.waypoints[k], self.waypoints[k + 1])

    def __call__(self, s: float) -> tuple[Pose, ...]:
        """The poses at ``s`` in ``[0, segments]``."""
        if not 0.0 <= s <= self.segments:
            raise ValueError(f"s must lie in [0, {self.segments}], got {s}")
        k = min(int(s), self.segments - 1)
        return self.segment(k)(s - k)
