"""The spaces a synchronized move runs in: end-effector poses, or joint positions.

A :class:`Space` gives the synchronizer the few operations seed 000 Sec. II-A needs: the
trajectory ``T(t, S, F)``, the stacked distance ``d`` and the clamp of eq. 4. Points are one
value per limb: a tuple of :class:`Pose` (SE(3)^n) or a tuple of joint vectors (R^m per limb).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp, stacked_distance
from limbtree.kinematics.joint_clamp import joint_clamp
from limbtree.kinematics.trajectory import (
    interpolate,
    poses_from_arrays,
    slerp_basis,
    stack_poses,
)

FloatArray = npt.NDArray[np.float64]
P = TypeVar("P")


class Space(Protocol, Generic[P]):
    """Trajectory, distance and clamp over one kind of point, stacked over limbs."""

    def interpolate(self, start: tuple[P, ...], end: tuple[P, ...], t: float) -> tuple[P, ...]:
        """``T(t, S, F)`` (seed 000 eqs. 1, 6, 8)."""

    def distance(self, a: tuple[P, ...], b: tuple[P, ...]) -> float:
        """The stacked distance ``d(a, b)`` (eq. 9); the hypersphere is ``d <= 1``."""

    def limb_distances(self, a: tuple[P, ...], b: tuple[P, ...]) -> tuple[float, ...]:
        """Each limb's own distance, in the same units."""

    def clamp(
        self, center: tuple[P, ...], start: tuple[P, ...], end: tuple[P, ...], t_min: float
    ) -> float | None:
        """The largest ``t`` in ``[t_min, 1]`` with ``T(t)`` inside the sphere (eq. 4)."""

    def settled(self, state: tuple[P, ...], goal: tuple[P, ...]) -> bool:
        """Whether every limb has arrived at ``goal`` within the move's settle tolerance."""

    def settle_gaps(self, state: tuple[P, ...], goal: tuple[P, ...]) -> tuple[float, ...]:
        """Each limb's distance from ``goal`` in settle tolerances: settled when all are <= 1."""


@dataclass(frozen=True)
class PoseSpace:
    """End-effector poses, with per-limb ``d_SE`` (eq. 7) stacked by ``ord`` (eq. 9).

    Attributes:
        metrics: one :class:`SE3Metric` per limb.
        ord: the stacking norm.
        settle: arrival tolerance on position [m]; rotation must be within ``r_e`` scaled
            by the same fraction of ``p_e``.
    """

    metrics: tuple[SE3Metric, ...]
    ord: float = math.inf
    settle: float = 0.002
    # The last segment interpolated, as arrays: a move interpolates along one segment for
    # many ticks, so stacking the poses and building the SLERP basis once saves most of it.
    _segment: list[Any] = field(default_factory=lambda: [None, None, None], repr=False)

    def interpolate(
        self, start: tuple[Pose, ...], end: tuple[Pose, ...], t: float
    ) -> tuple[Pose, ...]:
        """See :meth:`Space.interpolate`."""
        cached_start, cached_end, arrays = self._segment
        if cached_start is not start or cached_end is not end:
            p0, q0 = stack_poses(start)
            p1, q1 = stack_poses(end)
            arrays = (p0, p1, slerp_basis(q0, q1))
            self._segment[:] = [start, end, arrays]
        p0, p1, basis = arrays
        return poses_from_arrays(*interpolate(p0, p1, basis, min(1.0, max(0.0, t))))

    def distance(self, a: tuple[Pose, ...], b: tuple[Pose, ...]) -> float:
        """See :meth:`Space.distance`."""
        return stacked_distance(a, b, self.metrics, ord=self.ord)

    def limb_distances(self, a: tuple[Pose, ...], b: tuple[Pose, ...]) -> tuple[float, ...]:
        """See :meth:`Space.limb_distances`."""
        return tuple(m.distance(x, y) for m, x, y in zip(self.metrics, a, b, strict=True))

    def clamp(
        self,
        center: tuple[Pose, ...],
        start: tuple[Pose, ...],
        end: tuple[Pose, ...],
        t_min: float,
    ) -> float | None:
        """See :meth:`Space.clamp`."""
        return hypersphere_clamp(center, start, end, self.metrics, ord=self.ord, t_min=t_min).t

    def settled(self, state: tuple[Pose, ...], goal: tuple[Pose, ...]) -> bool:
        """See :meth:`Space.settled`."""
        for metric, y, g in zip(self.metrics, state, goal, strict=True):
            if metric.p_e != math.inf and y.distance_to(g) > self.settle:
                return False
            if metric.r_e != math.inf and y.angle_to(g) > self._angle_settle(metric):
                return False
        return True

    def settle_gaps(self, state: tuple[Pose, ...], goal: tuple[Pose, ...]) -> tuple[float, ...]:
        """See :meth:`Space.settle_gaps`: position over ``settle``, angle over its share."""
        gaps = []
        for metric, y, g in zip(self.metrics, state, goal, strict=True):
            gap = 0.0
            if metric.p_e != math.inf:
                gap = y.distance_to(g) / self.settle
            if metric.r_e != math.inf:
                gap = max(gap, y.angle_to(g) / self._angle_settle(metric))
            gaps.append(gap)
        return tuple(gaps)

    def _angle_settle(self, metric: SE3Metric) -> float:
        """The rotation settle tolerance [rad]: ``r_e`` scaled as ``settle`` scales ``p_e``."""
        fraction = self.settle / metric.p_e if metric.p_e != math.inf else 0.05
        return metric.r_e * fraction


@dataclass(frozen=True)
class JointSpace:
    """Joint positions, with eq. 3's weighted Euclidean metric per limb, stacked by ``ord``.

    Attributes:
        q_e: per limb, the allowed error of each joint [rad or m].
        ord: the stacking norm.
        settle: arrival tolerance per joint [rad or m].
    """

    q_e: tuple[float, ...]
    ord: float = math.inf
    settle: float = math.radians(1.0)

    def interpolate(
        self, start: tuple[FloatArray, ...], end: tuple[FloatArray, ...], t: float
    ) -> tuple[FloatArray, ...]:
        """See :meth:`Space.interpolate`."""
        t = min(1.0, max(0.0, t))
        return tuple((1.0 - t) * s + t * f for s, f in zip(start, end, strict=True))

    def limb_distances(
        self, a: tuple[FloatArray, ...], b: tuple[FloatArray, ...]
    ) -> tuple[float, ...]:
        """See :meth:`Space.limb_distances`."""
        return tuple(
            float(np.linalg.norm((x - y) / e)) for x, y, e in zip(a, b, self.q_e, strict=True)
        )

    def distance(self, a: tuple[FloatArray, ...], b: tuple[FloatArray, ...]) -> float:
        """See :meth:`Space.distance`."""
        d = np.array(self.limb_distances(a, b))
        return float(np.max(d) if self.ord == math.inf else np.sum(d**self.ord) ** (1 / self.ord))

    def clamp(
        self,
        center: tuple[FloatArray, ...],
        start: tuple[FloatArray, ...],
        end: tuple[FloatArray, ...],
        t_min: float,
    ) -> float | None:
        """See :meth:`Space.clamp`."""
        return joint_clamp(center, start, end, self.q_e, ord=self.ord, t_min=t_min)

    def settled(self, state: tuple[FloatArray, ...], goal: tuple[FloatArray, ...]) -> bool:
        """See :meth:`Space.settled`."""
        return all(
            float(np.max(np.abs(y - g))) <= self.settle for y, g in zip(state, goal, strict=True)
        )

    def settle_gaps(
        self, state: tuple[FloatArray, ...], goal: tuple[FloatArray, ...]
    ) -> tuple[float, ...]:
        """See :meth:`Space.settle_gaps`: the farthest joint over ``settle``."""
        return tuple(
            float(np.max(np.abs(y - g), initial=0.0)) / self.settle
            for y, g in zip(state, goal, strict=True)
        )


def nearest_parameter(
    space: Space[P], center: tuple[P, ...], start: tuple[P, ...], end: tuple[P, ...]
) -> float:
    """The ``t`` of the trajectory point nearest to ``center`` (seed 000 Sec. II-B).

    The second strategy of Sec. II-B: a grid of 65 points, then golden-section refinement
    around the best one.
    """
    grid: Sequence[float] = np.linspace(0.0, 1.0, 65).tolist()
    values = [space.distance(space.interpolate(start, end, t), center) for t in grid]
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(30):
        a = hi - ratio * (hi - lo)
        b = lo + ratio * (hi - lo)
        da = space.distance(space.interpolate(start, end, a), center)
        db = space.distance(space.interpolate(start, end, b), center)
        if da <= db:
            hi = b
        else:
            lo = a
    return 0.5 * (lo + hi)
