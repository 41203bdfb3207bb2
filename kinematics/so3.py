"""Rotations as unit quaternions ``(qx, qy, qz, qw)``, scalar last: the one set of helpers.

Skills (alignment), plants (twist integration) and poses all read these; none defines its
own. Pure functions on 4-vectors, written on Python floats where they run every tick.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
#: Below this norm [rad] a rotation vector has no direction and is taken as zero.
_TINY: Final = 1e-12
#: Below this angle [rad], ``sin(angle / 2) / angle`` is taken from its series.
_SERIES_BELOW: Final = 1e-4


def quaternion_multiply(q_a: npt.ArrayLike, q_b: npt.ArrayLike) -> FloatArray:
    """Hamilton product ``q_a q_b`` of two quaternions ``(x, y, z, w)``.

    Args:
        q_a: ``(4,)`` left factor.
        q_b: ``(4,)`` right factor.

    Returns:
        ``(4,)`` product, not renormalised.
    """
    x1, y1, z1, w1 = np.asarray(q_a, dtype=np.float64).tolist()
    x2, y2, z2, w2 = np.asarray(q_b, dtype=np.float64).tolist()
    return np.array(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ]
    )


def quaternion_conjugate(q: npt.ArrayLike) -> FloatArray:
    """Conjugate ``(-x, -y, -z, w)``: the inverse of a unit quaternion."""
    x, y, z, w = np.asarray(q, dtype=np.float64).tolist()
    return np.array([-x, -y, -z, w])


def canonical(q: npt.ArrayLike) -> FloatArray:
    """The one of ``q`` and ``-q`` with ``w >= 0``: the same rotation, by the short way."""
    quat = np.asarray(q, dtype=np.float64)
    return -quat if quat[3] < 0.0 else quat.copy()


def rotation_vector(q: npt.ArrayLike) -> FloatArray:
    """Rotation vector ``axis(q) * angle(q)`` [rad] of a unit quaternion, sign-blind.

    ``q`` and ``-q`` give the same vector: the angle is taken in ``[0, pi]``.
    """
    x, y, z, w = canonical(q).tolist()
    s = math.sqrt(x * x + y * y + z * z)
    if s < _TINY:
        return np.zeros(3)
    angle = 2.0 * math.atan2(s, w)
    return np.array([x, y, z]) * (angle / s)


def rotation_angle(q: npt.ArrayLike) -> float:
    """Rotation angle [rad] of a unit quaternion, in ``[0, pi]``, sign-blind.

    ``2 atan2(|v|, |w|)``: equal to ``2 arccos(|w|)`` and accurate near 0.
    """
    x, y, z, w = np.asarray(q, dtype=np.float64).tolist()
    return 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))


def quaternion_angle(q_a: npt.ArrayLike, q_b: npt.ArrayLike) -> float:
    """Angle [rad] of the rotation from ``q_a`` to ``q_b``, in ``[0, pi]``, sign-blind.

    Uses ``2 atan2(|q_a^* q_b|_vec, |<q_a, q_b>|)``, accurate at every angle (seed 000
    eq. 7's ``theta(R_a^-1 R_b)``).
    """
    # On Python floats: for one pair, ten times faster than numpy's cross and norm.
    ax, ay, az, aw = np.asarray(q_a, dtype=np.float64).tolist()
    bx, by, bz, bw = np.asarray(q_b, dtype=np.float64).tolist()
    dot = abs(ax * bx + ay * by + az * bz + aw * bw)
    # Vector part of conj(qa) * qb, whose norm is sin(theta / 2).
    vx = aw * bx - bw * ax - (ay * bz - az * by)
    vy = aw * by - bw * ay - (az * bx - ax * bz)
    vz = aw * bz - bw * az - (ax * by - ay * bx)
    return 2.0 * math.atan2(math.sqrt(vx * vx + vy * vy + vz * vz), dot)


def quaternion_from_rotation_vector(r: npt.ArrayLike) -> FloatArray:
    """Unit quaternion ``(x, y, z, w)`` of a rotation vector ``r`` [rad] (axis times angle)."""
    v = np.asarray(r, dtype=np.float64)
    angle = float(np.linalg.norm(v))
    half = 0.5 * angle
    # sin(half) / angle, by its series near 0 where the quotient loses precision.
    scale = 0.5 - angle * angle / 48.0 if angle < _SERIES_BELOW else math.sin(half) / angle
    return np.array([*(v * scale), math.cos(half)])


__all__ = [
    "canonical",
    "quaternion_angle",
    "quaternion_conjugate",
    "quaternion_from_rotation_vector",
    "quaternion_multiply",
    "rotation_angle",
    "rotation_vector",
]
