"""Distances for the hypersphere clamp (seed 000 eqs. 3, 7 and 9)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import InvalidMetricError, ShapeMismatchError
from limbtree.kinematics.pose import Pose

FloatArray = npt.NDArray[np.float64]


def weighted_euclidean(x_1: npt.ArrayLike, x_2: npt.ArrayLike, delta_e: npt.ArrayLike) -> float:
    """The weighted Euclidean metric of seed 000 eq. 3: ``||(x_1 - x_2) / delta_e||_2``.

    Args:
        x_1: a point of R^m.
        x_2: a point of R^m.
        delta_e: per-component allowed error (same unit as the points), positive; ``inf``
            ignores that component.

    Raises:
        InvalidMetricError: if a component of ``delta_e`` is zero, negative or NaN.
    """
    scale = np.asarray(delta_e, dtype=np.float64)
    if np.any(~(scale > 0)):
        raise InvalidMetricError(f"delta_e must be positive (inf allowed), got {delta_e!r}")
    diff = (np.asarray(x_1, dtype=np.float64) - np.asarray(x_2, dtype=np.float64)) / scale
    return float(np.linalg.norm(diff))


@dataclass(frozen=True)
class SE3Metric:
    """The SE(3) distance of seed 000 eq. 7, scaled by the allowed errors.

    ``d_SE(a, b) = || [ (v_b - v_a) / p_e ; theta(R_a^-1 R_b) / r_e ] ||_2``, so that the
    hypersphere ``d <= 1`` allows ``p_e`` of translation, or ``r_e`` of rotation, or a
    blend of both.

    Attributes:
        p_e: allowed translational error [m], positive; ``inf`` ignores translation.
        r_e: allowed rotational error [rad], positive; ``inf`` ignores rotation.

    Raises:
        InvalidMetricError: if either scale is zero, negative or NaN.
    """

    p_e: float = 0.02
    r_e: float = math.inf

    def __post_init__(self) -> None:
        for name in ("p_e", "r_e"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise InvalidMetricError(
                    f"{name} must be a positive number (math.inf to ignore it), got {value!r}"
                )

    def distance(self, a: Pose, b: Pose) -> float:
        """``d_SE(a, b)`` of eq. 7 (dimensionless)."""
        translation = a.distance_to(b) / self.p_e
        rotation = a.angle_to(b) / self.r_e
        return math.hypot(translation, rotation)


def metric_scales(metric: SE3Metric | Sequence[SE3Metric], n: int) -> tuple[FloatArray, FloatArray]:
    """Inverse scales ``1 / p_e`` and ``1 / r_e``, ``(n,)`` each, from one or n metrics.

    Raises:
        ShapeMismatchError: if a sequence of metrics does not have one per limb.
    """
    metrics = [metric] * n if isinstance(metric, SE3Metric) else list(metric)
    if len(metrics) != n:
        raise ShapeMismatchError(f"got {len(metrics)} metrics for {n} limbs; give one or {n}")
    inv_p = np.array([1.0 / m.p_e for m in metrics])
    inv_r = np.array([1.0 / m.r_e for m in metrics])
    return inv_p, inv_r


def se3_distances(
    pos_a: FloatArray,
    quat_a: FloatArray,
    pos_b: FloatArray,
    quat_b: FloatArray,
    inv_p_e: FloatArray,
    inv_r_e: FloatArray,
) -> FloatArray:
    """Per-limb ``d_SE`` (eq. 7), vectorised.

    Args:
        pos_a: ``(..., n, 3)`` positions [m].
        quat_a: ``(..., n, 4)`` unit quaternions, scalar last.
        pos_b: ``(..., n, 3)`` or broadcastable positions [m].
        quat_b: ``(..., n, 4)`` or broadcastable unit quaternions.
        inv_p_e: ``(n,)`` inverse translational scales [1/m] (0 ignores translation).
        inv_r_e: ``(n,)`` inverse rotational scales [1/rad] (0 ignores rotation).

    Returns:
        ``(..., n)`` distances.
    """
    translation = np.linalg.norm(pos_b - pos_a, axis=-1) * inv_p_e
    # Sign-blind: compare q_a with whichever of +q_b, -q_b is nearer. The arc between unit
    # vectors u, w is 2 atan2(|u - w|, |u + w|), exact at every angle, and the rotation angle
    # is twice the arc on S^3.
    sign = np.where(np.sum(quat_a * quat_b, axis=-1) < 0, -1.0, 1.0)[..., None]
    arc = 2.0 * np.arctan2(
        np.linalg.norm(quat_a - sign * quat_b, axis=-1),
        np.linalg.norm(quat_a + sign * quat_b, axis=-1),
    )
    rotation = 2.0 * arc * inv_r_e
    return np.asarray(np.hypot(translation, rotation))


def stack_distances(per_limb: FloatArray, ord: float = math.inf) -> FloatArray:
    """The stacked distance of eq. 9: the ``ord``-norm of the per-limb distances.

    Args:
        per_limb: ``(..., n)`` non-negative distances.
        ord: the norm, ``>= 1``; ``math.inf`` (the paper's choice) takes the largest.
    """
    if ord == math.inf:
        return np.asarray(np.max(per_limb, axis=-1))
    return np.asarray(np.sum(per_limb**ord, axis=-1) ** (1.0 / ord))


def stacked_distance(
    a: Pose | Sequence[Pose],
    b: Pose | Sequence[Pose],
    metric: SE3Metric | Sequence[SE3Metric],
    *,
    ord: float = math.inf,
) -> float:
    """``d(a, b)`` on SE(3)^n: eq. 7 per limb, stacked with the ``ord``-norm of eq. 9."""
    from limbtree.kinematics.trajectory import as_limb_tuple, stack_poses

    a_t = as_limb_tuple(a, "a")
    b_t = as_limb_tuple(b, "b")
    if len(a_t) != len(b_t):
        raise ShapeMismatchError(f"a has {len(a_t)} poses but b has {len(b_t)}")
    check_ord(ord)
    inv_p, inv_r = metric_scales(metric, len(a_t))
    pa, qa = stack_poses(a_t)
    pb, qb = stack_poses(b_t)
    return float(stack_distances(se3_distances(pa, qa, pb, qb, inv_p, inv_r), ord))


def check_ord(ord: float) -> None:
    """Refuse a stacking norm that is not a norm.

    Raises:
        InvalidMetricError: if ``ord`` is below 1 or NaN.
    """
    if not ord >= 1.0:
        raise InvalidMetricError(f"ord must be >= 1 (math.inf for the max norm), got {ord!r}")
