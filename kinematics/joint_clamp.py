"""The hypersphere clamp in joint space: LERP between joint vectors, eq. 3's weighted metric.

Seed 000 Sec. II-A with ``M = R^m`` per limb: the trajectory is the segment ``[S, F]`` and the
metric is the Euclidean norm with each joint divided by its allowed error ``q_e`` (eq. 3).
Per limb the squared distance is a quadratic in ``t``, so the feasible set is an interval in
closed form; limbs are stacked with the ``ord``-norm of eq. 9 as for poses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import InvalidMetricError, ShapeMismatchError
from limbtree.kinematics.metrics import check_ord
from limbtree.kinematics.segment import quadratic_interval

FloatArray = npt.NDArray[np.float64]


def _weighted(values: Sequence[npt.ArrayLike], name: str) -> list[FloatArray]:
    return [np.asarray(v, dtype=np.float64).reshape(-1) for v in values]


def joint_clamp(
    center: Sequence[npt.ArrayLike],
    start: Sequence[npt.ArrayLike],
    end: Sequence[npt.ArrayLike],
    q_e: Sequence[npt.ArrayLike],
    *,
    ord: float = math.inf,
    t_min: float = 0.0,
) -> float | None:
    """Largest ``t`` in ``[t_min, 1]`` with every limb's joints within the weighted sphere.

    Args:
        center: per limb, the sensed joint positions [rad or m].
        start: per limb, the segment's start joint positions.
        end: per limb, the segment's end joint positions.
        q_e: per limb, the allowed error per joint (a scalar or one per joint) [rad or m].
        ord: the stacking norm of eq. 9, ``>= 1``.
        t_min: the smallest ``t`` allowed, in ``[0, 1]``.

    Returns:
        The largest feasible ``t``, or None.

    Raises:
        ShapeMismatchError: if the limbs' vectors differ in length.
        InvalidMetricError: if an allowed error is not positive, or ``ord < 1``.
    """
    check_ord(ord)
    if not 0.0 <= t_min <= 1.0:
        raise ValueError(f"t_min must lie in [0, 1], got {t_min!r}")
    ys, ss, fs = _weighted(center, "center"), _weighted(start, "start"), _weighted(end, "end")
    if not len(ys) == len(ss) == len(fs) == len(q_e):
        raise ShapeMismatchError("center, start, end and q_e need one entry per limb")
    coefficients = []
    for y, s, f, e in zip(ys, ss, fs, q_e, strict=True):
        if not y.shape == s.shape == f.shape:
            raise ShapeMismatchError(
                f"joint vectors of one limb differ in length: {y.shape}, {s.shape}, {f.shape}"
            )
        scale = np.broadcast_to(np.asarray(e, dtype=np.float64), y.shape)
        if np.any(~(scale > 0)):
            raise InvalidMetricError(f"q_e must be positive, got {e!r}")
        offset = (s - y) / scale
        direction = (f - s) / scale
        coefficients.append(
            (float(direction @ direction), 2.0 * float(offset @ direction), float(offset @ offset))
        )
    lo, hi = t_min, 1.0
    for A, B, C in coefficients:
        a, b = quadratic_interval(A, B, C)
        lo, hi = max(lo, a), min(hi, b)
    if lo > hi:
        return None
    if ord == math.inf:
        return hi
    # sum_i d_i^k is convex in t and the max-norm answer bounds its largest root: Newton.
    t = hi
    for _ in range(200):
        total, slope = -1.0, 0.0
        for A, B, C in coefficients:
            d2 = max((A * t + B) * t + C, 0.0)
            d = math.sqrt(d2)
            total += d**ord
            if d > 0.0:
                slope += ord * d ** (ord - 1.0) * (2.0 * A * t + B) / (2.0 * d)
        if total <= 0.0:
            return t
        if slope <= 0.0:
            return None
        t -= max(total / slope, 4e-16)
        if t < lo:
            return None
    return None
