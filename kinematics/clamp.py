"""The hypersphere trajectory clamp of seed 000 (Alg. 1, eqs. 4-10).

Given the sensed state ``Y`` (the hypersphere's center) and a trajectory ``T(t, S, F)``, the
clamp returns the point of the trajectory with the largest ``t`` that lies within distance 1
of ``Y``. Two methods give the same answer:

* ``"sampled"``: Alg. 1 as the paper gives it, with the sample count of eq. 10, vectorised.
  The reference.
* ``"exact"``: no sampling. Each limb's distance along its LERP+SLERP segment is convex
  between the (at most one) instants where its rotation error reaches pi, so the largest
  feasible ``t`` is a root of a convex function, found by Newton's method from the right,
  which converges monotonically and never steps past it (:mod:`.segment`). ``docs/clamp.md``
  has the argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import ShapeMismatchError
from limbtree.kinematics.metrics import (
    SE3Metric,
    check_ord,
    metric_scales,
    se3_distances,
    stack_distances,
)
from limbtree.kinematics.pose import Pose
from limbtree.kinematics.segment import (
    SegmentDistance,
    largest_feasible_k_norm,
    largest_feasible_max_norm,
)
from limbtree.kinematics.trajectory import (
    SlerpBasis,
    as_limb_tuple,
    interpolate,
    poses_from_arrays,
    slerp_basis,
    stack_poses,
)

FloatArray = npt.NDArray[np.float64]
ClampMethod = Literal["exact", "sampled"]

#: Spacing of Alg. 1's samples under the metric (eq. 10): about 100 per hypersphere radius.
STEP_DISTANCE = 0.01


class ClampProblem:
    """One clamp's inputs, checked: the poses per limb, the metric scales and the norm.

    The arrays both methods and the result need are computed on first use.

    Attributes:
        center: the sensed poses ``Y``.
        start: the trajectory's start poses ``S``.
        end: the trajectory's end poses ``F``.
        inv_p_e: ``(n,)`` 1 / p_e [1/m] (0 ignores translation).
        inv_r_e: ``(n,)`` 1 / r_e [1/rad] (0 ignores rotation).
        ord: the stacking norm of eq. 9.
    """

    def __init__(
        self,
        center: tuple[Pose, ...],
        start: tuple[Pose, ...],
        end: tuple[Pose, ...],
        inv_p_e: FloatArray,
        inv_r_e: FloatArray,
        ord: float,
    ) -> None:
        self.center = center
        self.start = start
        self.end = end
        self.inv_p_e = inv_p_e
        self.inv_r_e = inv_r_e
        self.ord = ord

    @property
    def n(self) -> int:
        """Number of limbs."""
        return len(self.center)

    @cached_property
    def arrays(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, SlerpBasis]:
        """Center positions and quaternions, start and end positions, and the SLERP basis."""
        cp, cq = stack_poses(self.center)
        sp, sq = stack_poses(self.start)
        fp, fq = stack_poses(self.end)
        return cp, cq, sp, fp, slerp_basis(sq, fq)

    def points(self, t: FloatArray | float) -> tuple[FloatArray, FloatArray]:
        """Trajectory positions and quaternions at ``t`` (see :func:`interpolate`)."""
        _, _, sp, fp, basis = self.arrays
        return interpolate(sp, fp, basis, t)

    def distances(self, t: FloatArray | float) -> FloatArray:
        """Per-limb distances to the center at ``t``: ``(n,)``, or ``(m, n)`` for ``(m,)``."""
        cp, cq, _, _, _ = self.arrays
        pos, quat = self.points(t)
        return se3_distances(pos, quat, cp, cq, self.inv_p_e, self.inv_r_e)

    def stacked(self, t: FloatArray | float) -> FloatArray:
        """The stacked distance (eq. 9) to the center at ``t``."""
        return stack_distances(self.distances(t), self.ord)

    def segments(self) -> list[SegmentDistance]:
        """Each limb's closed-form distance along the segment (the exact method's model)."""
        return [
            SegmentDistance(
                y.position.tolist(),
                y.quaternion.tolist(),
                s.position.tolist(),
                s.quaternion.tolist(),
                f.position.tolist(),
                f.quaternion.tolist(),
                float(ip),
                float(ir),
            )
            for y, s, f, ip, ir in zip(
                self.center, self.start, self.end, self.inv_p_e, self.inv_r_e, strict=True
            )
        ]


@dataclass(frozen=True)
class ClampResult:
    """What :func:`hypersphere_clamp` found.

    Attributes:
        t: the largest ``t`` in ``[t_min, 1]`` whose trajectory point lies within distance 1
            of the center, or None when no point does.
        method: ``"exact"`` or ``"sampled"``.
        problem: the clamp's inputs, from which ``poses`` and ``distance`` are computed on
            first use (most callers need only ``t``, and a tick should not pay for the rest).
    """

    t: float | None
    method: ClampMethod
    problem: ClampProblem = field(repr=False, compare=False)

    @property
    def found(self) -> bool:
        """Whether a point of the trajectory lies within the hypersphere."""
        return self.t is not None

    @cached_property
    def poses(self) -> tuple[Pose, ...] | None:
        """The trajectory's poses at ``t``, one per limb, or None."""
        if self.t is None:
            return None
        return poses_from_arrays(*self.problem.points(self.t))

    @cached_property
    def distance(self) -> float | None:
        """The stacked distance from ``poses`` to the center (``<= 1``), or None."""
        if self.t is None:
            return None
        return float(self.problem.stacked(self.t))


def hypersphere_clamp(
    center: Pose | Sequence[Pose],
    start: Pose | Sequence[Pose],
    end: Pose | Sequence[Pose],
    metric: SE3Metric | Sequence[SE3Metric],
    *,
    ord: float = math.inf,
    method: ClampMethod = "exact",
    t_min: float = 0.0,
) -> ClampResult:
    """Clamp the trajectory from ``start`` to ``end`` onto the hypersphere around ``center``.

    Seed 000 eqs. 4-5: returns ``U = T(t_max, S, F)`` with ``t_max`` the largest ``t`` in
    ``[t_min, 1]`` such that ``d(T(t, S, F), Y) <= 1``. The trajectory is LERP on position and
    SLERP on rotation (eq. 6), stacked over limbs (eq. 8); the distance is ``d_SE`` (eq. 7)
    per limb, stacked with the ``ord``-norm (eq. 9).

    Args:
        center: the sensed state ``Y``, one pose or one per limb.
        start: the trajectory start ``S``.
        end: the trajectory end ``F``.
        metric: one :class:`SE3Metric` for every limb, or one per limb.
        ord: the norm stacking the per-limb distances, ``>= 1``; ``math.inf`` (default, the
            paper's choice) makes every limb stay within its own hypersphere.
        method: ``"exact"`` (default) or ``"sampled"`` (Alg. 1 with eq. 10's sample count).
        t_min: the smallest ``t`` allowed, in ``[0, 1]``, so a caller can forbid ``t`` from
            going back (Sec. II-B).

    Returns:
        The :class:`ClampResult`; ``t`` is None when no point of ``[t_min, 1]`` is within the
        hypersphere (the caller's recovery strategy decides what follows).

    Raises:
        ShapeMismatchError: if the pose or metric sequences differ in length.
        InvalidMetricError: if ``ord < 1``.
        ValueError: if ``t_min`` is outside ``[0, 1]`` or ``method`` is unknown.
    """
    problem = build_problem(center, start, end, metric, ord=ord)
    return ClampResult(clamp_parameter(problem, method=method, t_min=t_min), method, problem)


def build_problem(
    center: Pose | Sequence[Pose],
    start: Pose | Sequence[Pose],
    end: Pose | Sequence[Pose],
    metric: SE3Metric | Sequence[SE3Metric],
    *,
    ord: float = math.inf,
) -> ClampProblem:
    """Check the inputs of a clamp (see :class:`ClampProblem`)."""
    check_ord(ord)
    y = as_limb_tuple(center, "center")
    s = as_limb_tuple(start, "start")
    f = as_limb_tuple(end, "end")
    if not len(y) == len(s) == len(f):
        raise ShapeMismatchError(
            f"center, start and end must have one pose per limb; got {len(y)}, {len(s)}, {len(f)}"
        )
    inv_p, inv_r = metric_scales(metric, len(y))
    return ClampProblem(y, s, f, inv_p, inv_r, float(ord))


def clamp_parameter(
    problem: ClampProblem, *, method: ClampMethod = "exact", t_min: float = 0.0
) -> float | None:
    """The largest feasible ``t`` in ``[t_min, 1]`` of a :class:`ClampProblem`, or None."""
    if not 0.0 <= t_min <= 1.0:
        raise ValueError(f"t_min must lie in [0, 1], got {t_min!r}")
    if method == "exact":
        return _exact(problem, t_min)
    if method == "sampled":
        return _sampled(problem, t_min)
    raise ValueError(f"unknown clamp method {method!r}; choose 'exact' or 'sampled'")


def sample_count(problem: ClampProblem, t_min: float = 0.0) -> int:
    """Alg. 1's ``I`` from eq. 10: the metric distance from ``T(t_min)`` to ``F`` over 0.01.

    At least 1, so the two ends are always tried.
    """
    pos, quat = problem.points(t_min)
    end_p, end_q = problem.points(1.0)
    per_limb = se3_distances(pos, quat, end_p, end_q, problem.inv_p_e, problem.inv_r_e)
    span = float(stack_distances(per_limb, problem.ord))
    return max(1, math.ceil(span / STEP_DISTANCE))


def _sampled(problem: ClampProblem, t_min: float) -> float | None:
    """Alg. 1: try ``I + 1`` points from ``t = 1`` down to ``t_min``, return the first inside."""
    count = sample_count(problem, t_min)
    ts = np.linspace(1.0, t_min, count + 1)
    inside = problem.stacked(ts) <= 1.0
    first = int(np.argmax(inside))
    return float(ts[first]) if inside[first] else None


def _exact(problem: ClampProblem, t_min: float) -> float | None:
    """The largest feasible ``t`` without sampling: Newton on convex pieces, last piece first."""
    limbs = problem.segments()
    kinks = sorted({k for limb in limbs for k in limb.kinks(t_min, 1.0)})
    edges = [t_min, *kinks, 1.0]
    for a, b in zip(reversed(edges[:-1]), reversed(edges[1:]), strict=True):
        signs = [limb.sign(a, b) for limb in limbs]
        t = largest_feasible_max_norm(limbs, a, b, signs)
        if t is not None and problem.ord != math.inf:
            t = largest_feasible_k_norm(limbs, a, t, signs, problem.ord)
        if t is not None:
            return t
    return None
