"""LRST, the low-reaction swing trajectory: seed 004 eq. 2, optimised with SLSQP.

The swing is the 7th-order Bezier of :class:`~.swing.BezierSwing` with ``A_B0..2 = start``
and ``A_B5..7 = end``; LRST chooses the two free control points ``A_B3`` and ``A_B4`` (six
numbers) to minimise

    C1 max_t |L̇_lin(t)| + C2 max_t |L̇_ang(t)| + C3 |h_sw − max_t x_e,sw,z(t)|
    subject to φ_sw,min ≤ φ_sw(t) ≤ φ_sw,max
               the foot above the terrain (optional; an addition, see below)

where ``L`` is the momentum of the swinging leg with the base held at its planned pose
(eq. 3's ``L_sw = H_bm,sw φ̇_sw``, from :meth:`FloatingTree.momentum_matrices
<limbtree.kinematics.floating.FloatingTree.momentum_matrices>`), sampled at ``samples``
times; ``L̇`` comes from second-order finite differences of the samples. The leg's joints
follow the foot path through :class:`~.leg.PlanarLeg`'s closed form and ``φ̇ = J_m⁻¹ ẋ``.
Units are SI, consistent with the paper's weights (C1 = 7, C2 = 1.75, C3 = 30): ``L̇_lin``
in N, ``L̇_ang`` in N m (about the base origin), heights in m, along ``up`` above the higher
foothold (wave-2 brief 2.8).

The maxima make the objective non-smooth. By default SLSQP minimises a smooth stand-in
(power means of order 16 for the maxima, :class:`LrstMethod`) under the exact constraints
(the joint limits and the leg's reach at every sample); the epigraph form (bounds ``s ≥
|L̇(t_k)|`` as variables) is exact but converges more slowly. Gradients are forward
differences, one evaluation per control-point coordinate, all seven evaluated in one
vectorised pass. The search starts from ClimbLab's plain Bezier
(:meth:`~.swing.BezierSwing.through_apex`); its result is judged on the exact eq. 2 and kept
only when it is feasible and lower (otherwise the plain Bezier is returned, and
``improved`` says so).

**Terrain clearance (not in the paper).** Eq. 2 has no term for the ground: minimising the
reaction flattens the swing's ends, and on rough ground a flat approach grazes the terrain
before the foothold. Given the terrain's heights, every point between the footholds (sampled
four times as densely as eq. 2's terms) must clear the terrain under it by
``min(clearance_m, approach_slope * d)`` less 2 mm, ``d`` its horizontal distance from the
nearer foothold: 8 mm in the middle of the swing, closing in a 45 deg cone over the
footholds (less as far as a foothold itself lies under the terrain model). On seed 004's
terrain with a rock the unconstrained swing touched down 0.25 s early and its impact tore
off another gripper (docs/climbing.md).

**Lift-off and touchdown along the normal (not in the paper; ``normal_ends``, the
default).** The free points lie on the normals (``up``) over the footholds: ``A_B3 = start
+ h3 up`` and ``A_B4 = end + h4 up``, and LRST chooses the two heights. The foot then leaves
and reaches its foothold along the normal, with nothing across it: near its ends the curve
runs along ``A_B3 − A_B2`` and ``A_B4 − A_B5``. With all six coordinates free (the paper's
eq. 2), the optimum flattens the approach, the palm meets the terrain while it still slides
across it, and its gripper closes on a moving palm; those touchdowns made RAMP's largest
gripper forces (docs/climbing.md, Results). Eq. 2 improves less over two variables than over
six, and the swing's momentum peaks a little higher, but the measured peaks fall. The seed
is ClimbLab's plain Bezier with its free points moved onto the normals, at their heights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
from scipy.optimize import minimize

from limbtree.kinematics.floating import FloatingTree
from limbtree.skills.climbing._checks import (
    FloatArray,
    array,
    positive,
    transform,
    unit3,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.leg import PlanarLeg
from limbtree.skills.climbing.plane import UP, HeightFunction
from limbtree.skills.climbing.swing import BezierSwing, bezier_basis, bezier_control_points

#: Forward-difference step on a control point's coordinate [m].
_STEP_M = 1e-6
#: The optimiser's unit of control-point displacement [m] (its variables are scaled by it).
_SCALE_M = 0.01
#: The order of the power mean that stands for a maximum in the smooth form.
_POWER = 16.0
#: How much the smooth form rounds ``|h_sw - apex|`` near 0 [m].
_ROUNDING_M = 1e-4
#: Sharpness of the smooth minima of the constraints (:meth:`LrstProblem._aggregate`): joint
#: limit margins [1/rad], reach margins [-], clearance margins [1/m].
_KS_RAD = 200.0
_KS_REACH = 200.0
_KS_M = 4000.0
#: The swing's clearance over the terrain, between the footholds [m].
CLEARANCE_M = 0.01
#: The clearance near a foothold per metre of horizontal distance from it (45 deg).
APPROACH_SLOPE = 1.0
#: How far the foot may come below the required clearance [m]: room for the terrain model's
#: cells, and for the samples next to a foothold, which the swing's free points barely move.
_ALLOWANCE_M = 0.002


class LrstMethod(StrEnum):
    """How SLSQP sees eq. 2's maxima (both keep the joint limits and reach as constraints).

    ``smooth`` (default): each ``max_t |L̇|`` becomes the power mean of order 16 of the
    samples (between ``k^(-1/16)`` times the maximum and the maximum) and ``|h_sw − apex|``
    is rounded below 0.1 mm, so SLSQP's quasi-Newton model sees curvature in the objective;
    it converges in about 30 iterations. ``epigraph``: the exact minimax form, bounds
    ``s ≥ |L̇(t_k)|`` as variables; exact but slower to converge (its curvature is all in
    100 constraints). Either way the result is judged on the exact eq. 2.
    """

    SMOOTH = "smooth"
    EPIGRAPH = "epigraph"


@dataclass(frozen=True)
class LrstWeights:
    """Eq. 2's weights (Sec. 3: 7, 1.75, 30; the air-floating experiment of Sec. 4: 40, 0, 8).

    Attributes:
        c1: on ``max |L̇_lin|`` [1/N].
        c2: on ``max |L̇_ang|`` [1/(N m)].
        c3: on ``|h_sw − max height|`` [1/m].

    Raises:
        ClimbingInputError: for a negative or non-finite weight, or all three 0.
    """

    c1: float = 7.0
    c2: float = 1.75
    c3: float = 30.0

    def __post_init__(self) -> None:
        for name in ("c1", "c2", "c3"):
            object.__setattr__(self, name, positive(name, getattr(self, name), allow_zero=True))
        if self.c1 == self.c2 == self.c3 == 0.0:
            raise ClimbingInputError("weights", self, "at least one of c1, c2, c3 must be > 0")


@dataclass(frozen=True)
class LrstTerms:
    """Eq. 2 evaluated on one swing.

    Attributes:
        l_lin_dot_max_n: ``max |L̇_lin|`` [N].
        l_ang_dot_max_nm: ``max |L̇_ang|`` [N m].
        apex_error_m: ``|h_sw − max height|`` [m].
        objective: ``C1 l_lin + C2 l_ang + C3 apex_error``.
        min_limit_margin_rad: the smallest distance of a joint from its limits over the
            samples [rad] (< 0: a limit is crossed).
        min_reach: the smallest reach margin of the leg's IK (< 0: out of reach).
        min_clearance_m: the smallest margin of the foot over its required terrain
            clearance [m] (< 0: too close to the ground; inf without a terrain).
    """

    l_lin_dot_max_n: float
    l_ang_dot_max_nm: float
    apex_error_m: float
    objective: float
    min_limit_margin_rad: float
    min_reach: float
    min_clearance_m: float = math.inf

    @property
    def feasible(self) -> bool:
        """Within the joint limits, the leg's reach and the terrain clearance at every sample."""
        return (
            self.min_limit_margin_rad >= -1e-9
            and self.min_reach >= 0.0
            and self.min_clearance_m >= -1e-6
        )


@dataclass(frozen=True, eq=False)
class LrstResult:
    """What :meth:`LrstProblem.solve` found.

    Attributes:
        swing: the swing to fly: the optimised one when ``improved``, else the seed.
        seed: the plain Bezier the search started from.
        before: eq. 2 on the seed.
        after: eq. 2 on ``swing``.
        improved: whether the optimiser's result was kept (feasible and lower).
        iterations: SLSQP's iterations.
        evaluations: evaluations of the sampled swing (each one IK, Jacobians and momentum
            of every sample).
        message: SLSQP's final message.
    """

    swing: BezierSwing
    seed: BezierSwing
    before: LrstTerms
    after: LrstTerms
    improved: bool
    iterations: int
    evaluations: int
    message: str


@dataclass(frozen=True, eq=False)
class _Sampled:
    """One evaluation: every per-sample quantity the objective and constraints need."""

    lin: FloatArray  # (k,) |L̇_lin| [N]
    ang: FloatArray  # (k,) |L̇_ang| [N m]
    heights: FloatArray  # (k,) [m]
    margins: FloatArray  # (m,) finite joint-limit margins [rad]
    reach: FloatArray  # (k,)
    clearance: FloatArray  # (4 k - 5,) margins over the required terrain clearance [m], or (0,)


class LrstProblem:
    """Eq. 2 for one swing of one leg, with the base held at its planned pose.

    Args:
        tree: the robot.
        leg: the swinging leg (its joint limits are eq. 2's ``φ_sw,min``, ``φ_sw,max``).
        q: ``(n,)`` the robot's joints; the leg's set its IK branch, the others are held.
        base_pose: ``(4, 4)`` the base's planned pose during the swing, in the world.
        start: the foot's start, in the world [m].
        end: its next foothold, in the world [m].
        duration_s: ``T_sw`` [s].
        step_height_m: ``h_sw`` [m].
        up: the height direction in the world (default world z).
        weights: C1, C2, C3.
        samples: how many times the swing is sampled (>= 5; 50 by default).
        terrain: the terrain's height at world ``x, y`` [m] (vectorised), or None: no
            clearance constraint (the paper's eq. 2).
        clearance_m: the foot's clearance over the terrain between the footholds [m].
        approach_slope: how the clearance closes over a foothold [m per m of horizontal
            distance].
        normal_ends: the free points on the normals over the footholds (two heights to
            choose: lift-off and touchdown along ``up``; the default); False: all six
            coordinates free, the paper's eq. 2.

    Raises:
        ClimbingInputError: for bad sizes, a non-rigid pose, a non-positive duration or too
            few samples.
    """

    def __init__(
        self,
        tree: FloatingTree,
        leg: PlanarLeg,
        q: Sequence[float] | FloatArray,
        base_pose: Sequence[Sequence[float]] | FloatArray,
        start: Sequence[float] | FloatArray,
        end: Sequence[float] | FloatArray,
        duration_s: float,
        step_height_m: float,
        *,
        up: Sequence[float] | FloatArray = UP,
        weights: LrstWeights | None = None,
        samples: int = 50,
        terrain: HeightFunction | None = None,
        clearance_m: float = CLEARANCE_M,
        approach_slope: float = APPROACH_SLOPE,
        normal_ends: bool = True,
    ) -> None:
        if int(samples) != samples or samples < 5:
            raise ClimbingInputError("samples", samples, "must be an integer >= 5")
        self.tree = tree
        self.leg = leg
        self.weights = weights or LrstWeights()
        self.q = array("q", q, (tree.n,))
        self.base_pose = transform("base_pose", base_pose)
        self.start = vector3("start", start)
        self.end = vector3("end", end)
        self.duration_s = positive("duration_s", duration_s)
        self.step_height_m = positive("step_height_m", step_height_m, allow_zero=True)
        self.up = unit3("up", up)
        self.evaluations = 0
        rotation_t = self.base_pose[:3, :3].T
        origin = self.base_pose[:3, 3]
        self._start_b = rotation_t @ (self.start - origin)
        self._end_b = rotation_t @ (self.end - origin)
        self._up_b = rotation_t @ self.up
        self._datum = max(float(self._up_b @ self._start_b), float(self._up_b @ self._end_b))
        self._times = np.linspace(0.0, self.duration_s, int(samples))
        self._dt = float(self._times[1])
        position, velocity, _ = bezier_basis(self._times, self.duration_s)
        ends = bezier_control_points(self._start_b, self._end_b, np.zeros(3), np.zeros(3))
        self._known_position = position @ ends
        self._known_velocity = velocity @ ends
        self._position_free = position[:, 3:5]  # (k, 2): weights of A_B3, A_B4
        # the clearance is checked 4 times as densely (positions only: cheap)
        dense = np.linspace(0.0, self.duration_s, 4 * (int(samples) - 1) + 1)
        dense_position = bezier_basis(dense, self.duration_s)[0]
        self._dense_known = dense_position @ ends
        self._dense_free = dense_position[:, 3:5]
        self._velocity_free = velocity[:, 3:5]
        self._reference = self.q[leg.columns].copy()
        self._finite_limits = np.concatenate([np.isfinite(leg.lower), np.isfinite(leg.upper)])
        self._rows = np.tile(self.q, (int(samples), 1))
        self._cache: dict[bytes, _Sampled] = {}
        self.normal_ends = bool(normal_ends)
        seed = BezierSwing.through_apex(
            self.start, self.end, self.duration_s, self.step_height_m, self.up
        )
        if self.normal_ends:
            # the free points on the normals over the footholds, at the seed's heights
            a3, a4 = (
                foot + max(float((point - foot) @ self.up), 0.0) * self.up
                for point, foot in zip(seed.free_points, (self.start, self.end), strict=True)
            )
            seed = BezierSwing.from_free_points(self.start, self.end, a3, a4, self.duration_s)
            self._basis = np.zeros((6, 2))
            self._basis[:3, 0] = self._up_b
            self._basis[3:, 1] = self._up_b
        else:
            self._basis = np.eye(6)
        self.seed = seed
        self.terrain = terrain
        self._slack = 0.0
        self.clearance_m = positive("clearance_m", clearance_m, allow_zero=True)
        self.approach_slope = positive("approach_slope", approach_slope, allow_zero=True)
        if terrain is not None:
            ends = np.vstack([self.start, self.end])
            below = ends[:, 2] - np.asarray(terrain(ends[:, 0], ends[:, 1]), dtype=np.float64)
            # a foothold under the terrain model (its cells are not the plant's triangles)
            # lowers the requirement by as much, so the swing can leave and reach it
            self._slack = max(0.0, -float(below.min()))

    # ------------------------------------------------------------------ evaluation

    def _to_base(self, points: FloatArray) -> FloatArray:
        """``(2, 3)`` world control points -> base frame, flattened to the 6 variables."""
        rotation_t = self.base_pose[:3, :3].T
        result: FloatArray = ((points - self.base_pose[:3, 3]) @ rotation_t.T).ravel()
        return result

    def _to_world(self, x: FloatArray) -> FloatArray:
        """The 6 variables (base frame) -> ``(2, 3)`` world control points."""
        points = x.reshape(2, 3)
        result: FloatArray = points @ self.base_pose[:3, :3].T + self.base_pose[:3, 3]
        return result

    def _sample(self, x: FloatArray) -> _Sampled:
        key = x.tobytes()
        found = self._cache.get(key)
        if found is None:
            found = self._sample_many(x[None])[0]
        return found

    def _sample_many(self, xs: FloatArray) -> list[_Sampled]:
        """Evaluate ``(m, 6)`` candidates in one vectorised pass (IK, Jacobians, momentum)."""
        m, k = len(xs), len(self._times)
        self.evaluations += m
        free = xs.reshape(m, 2, 3)
        points = self._known_position + np.einsum("kj,mjc->mkc", self._position_free, free)
        velocity = self._known_velocity + np.einsum("kj,mjc->mkc", self._velocity_free, free)
        solution = self.leg.ik(points.reshape(m * k, 3), self._reference)
        joints = solution.q
        jacobian = self.leg.jacobian(joints)
        flat_velocity = velocity.reshape(m * k, 3)
        try:
            rates = np.linalg.solve(jacobian, flat_velocity[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a singular sample (stretched leg): least squares
            rates = np.einsum("kij,kj->ki", np.linalg.pinv(jacobian), flat_velocity)
        rows = np.tile(self.q, (m * k, 1))
        rows[:, self.leg.columns] = joints
        h_bm = self.tree.momentum_matrices(rows, limb=self.leg.leg)  # (m k, 6, 3)
        momentum = np.einsum("kij,kj->ki", h_bm, rates).reshape(m, k, 6)
        rate = np.gradient(momentum, self._dt, axis=1, edge_order=2)
        lin = np.linalg.norm(rate[..., :3], axis=2)
        ang = np.linalg.norm(rate[..., 3:], axis=2)
        heights = points @ self._up_b - self._datum
        margins = self.leg.limit_margins(joints)[:, self._finite_limits].reshape(m, -1)
        reach = solution.reach.reshape(m, k)
        clearance = self._clearance(free)
        if len(self._cache) > 64:
            self._cache.clear()
        results = []
        for i in range(m):
            sampled = _Sampled(lin[i], ang[i], heights[i], margins[i], reach[i], clearance[i])
            self._cache[xs[i].tobytes()] = sampled
            results.append(sampled)
        return results

    def _clearance(self, free: FloatArray) -> FloatArray:
        """``(m, 2, 3)`` free points -> ``(m, 4 k - 5)`` margins over the clearance [m].

        The swing's points between its ends at four times eq. 2's sampling (positions only).
        """
        if self.terrain is None:
            return np.zeros((len(free), 0))
        points = self._dense_known + np.einsum("kj,mjc->mkc", self._dense_free, free)
        world = points[:, 1:-1] @ self.base_pose[:3, :3].T + self.base_pose[:3, 3]
        ground = np.asarray(self.terrain(world[..., 0], world[..., 1]), dtype=np.float64)
        near = np.minimum(
            np.linalg.norm(world[..., :2] - self.start[:2], axis=-1),
            np.linalg.norm(world[..., :2] - self.end[:2], axis=-1),
        )
        required = (
            np.minimum(self.clearance_m, self.approach_slope * near) - _ALLOWANCE_M - self._slack
        )
        result: FloatArray = world[..., 2] - ground - required
        return result

    def _terms(self, sampled: _Sampled) -> LrstTerms:
        w = self.weights
        lin = float(sampled.lin.max())
        ang = float(sampled.ang.max())
        apex = abs(self.step_height_m - float(sampled.heights.max()))
        margin = float(sampled.margins.min()) if sampled.margins.size else math.inf
        return LrstTerms(
            lin,
            ang,
            apex,
            w.c1 * lin + w.c2 * ang + w.c3 * apex,
            margin,
            float(sampled.reach.min()),
            float(sampled.clearance.min()) if sampled.clearance.size else math.inf,
        )

    def evaluate(self, swing: BezierSwing) -> LrstTerms:
        """Eq. 2 on ``swing`` (its free points; its ends must be this problem's).

        Raises:
            ClimbingInputError: if the swing does not start and end at this problem's
                footholds, or lasts another time.
        """
        if not (
            np.allclose(swing.start, self.start, atol=1e-9)
            and np.allclose(swing.end, self.end, atol=1e-9)
            and np.allclose(swing.control_points[:3], self.start, atol=1e-9)
            and np.allclose(swing.control_points[5:], self.end, atol=1e-9)
            and math.isclose(swing.duration_s, self.duration_s)
        ):
            raise ClimbingInputError(
                "swing", swing, "must be a seed-004 Bezier between this problem's footholds"
            )
        return self._terms(self._sample(self._to_base(swing.free_points)))

    # ------------------------------------------------------------------ optimisation

    def solve(
        self,
        *,
        method: LrstMethod = LrstMethod.SMOOTH,
        max_iterations: int = 60,
        tolerance: float = 1e-6,
    ) -> LrstResult:
        """Minimise eq. 2 from the plain Bezier with SLSQP.

        Args:
            method: how the maxima of eq. 2 are posed to SLSQP (:class:`LrstMethod`).
            max_iterations: SLSQP's iteration limit.
            tolerance: SLSQP's ``ftol`` on the objective scaled by its value on the seed.

        Returns:
            The swing to fly and eq. 2 before and after (exact maxima over the samples).
        """
        x0 = self._to_base(self.seed.free_points)
        before = self._terms(self._sample(x0))
        if LrstMethod(method) is LrstMethod.EPIGRAPH:
            outcome = self._solve_epigraph(x0, before, max_iterations, tolerance)
        else:
            outcome = self._solve_smooth(x0, max_iterations, tolerance)
        m = self._basis.shape[1]
        x_found = x0 + _SCALE_M * self._basis @ np.asarray(outcome.x, dtype=np.float64)[:m]
        after = self._terms(self._sample(x_found))
        improved = bool(
            np.isfinite(x_found).all()
            and after.feasible
            and (after.objective < before.objective or not before.feasible)
        )
        if improved:
            a3, a4 = self._to_world(x_found)
            swing = BezierSwing.from_free_points(self.start, self.end, a3, a4, self.duration_s)
        else:
            swing, after = self.seed, before
        return LrstResult(
            swing,
            self.seed,
            before,
            after,
            improved,
            int(getattr(outcome, "nit", 0)),
            self.evaluations,
            str(outcome.message),
        )

    def _batch(self, x: FloatArray) -> list[_Sampled]:
        """``x`` and its forward-difference neighbours (one per variable), evaluated together."""
        return self._sample_many(x + _STEP_M * np.vstack([np.zeros(6), self._basis.T]))

    def _surrogate(self, sampled: _Sampled) -> float:
        """Eq. 2 with smooth maxima: p-means of ``|L̇|`` and a rounded ``|h_sw − apex|``."""
        w = self.weights
        apex = float(sampled.heights.max())
        return (
            w.c1 * _soft_max(sampled.lin)
            + w.c2 * _soft_max(sampled.ang)
            + w.c3 * math.hypot(self.step_height_m - apex, _ROUNDING_M)
        )

    def _aggregate(self, sampled: _Sampled) -> FloatArray:
        """The constraints as SLSQP sees them in the smooth form: a few smooth minima.

        Each family (every joint's lower and upper limit, the reach, the clearance) becomes
        one Kreisselmeier-Steinhauser minimum over the samples, ``min - log(Σ exp(-ρ (m_k -
        min))) / ρ``: never above the true minimum (so it is conservative) and below it by at
        most ``log(k) / ρ``. Eight constraints instead of one per sample and limit keep
        SLSQP's subproblem small (with ~400, SLSQP took 0.62 s of a 1.83 s LRST in one profile).
        """
        k = len(self._times)
        parts = [_ks(sampled.reach[:, None], _KS_REACH)]
        if sampled.margins.size:
            parts.append(_ks(sampled.margins.reshape(k, -1), _KS_RAD))
        if sampled.clearance.size:
            parts.append(_ks(sampled.clearance[:, None], _KS_M))
        return np.concatenate(parts)

    def _solve_smooth(self, x0: FloatArray, max_iterations: int, tolerance: float) -> Any:
        scale = max(self._surrogate(self._sample(x0)), 1e-12)
        step = _STEP_M / _SCALE_M
        memo: dict[bytes, tuple[FloatArray, FloatArray]] = {}

        basis = self._basis

        def values(z: FloatArray) -> tuple[FloatArray, FloatArray]:
            key = z.tobytes()
            if key not in memo:
                batch = self._batch(x0 + _SCALE_M * basis @ z)
                objective = np.array([self._surrogate(b) for b in batch]) / scale
                constraint = np.array([self._aggregate(b) for b in batch])
                memo.clear()
                memo[key] = (objective, constraint)
            return memo[key]

        def objective(z: FloatArray) -> float:
            return float(values(z)[0][0])

        def gradient(z: FloatArray) -> FloatArray:
            f = values(z)[0]
            result: FloatArray = (f[1:] - f[0]) / step
            return result

        def constraints(z: FloatArray) -> FloatArray:
            result: FloatArray = values(z)[1][0]
            return result

        def constraints_jacobian(z: FloatArray) -> FloatArray:
            c = values(z)[1]
            result: FloatArray = ((c[1:] - c[0]) / step).T
            return result

        return minimize(
            objective,
            np.zeros(basis.shape[1]),
            jac=gradient,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": constraints, "jac": constraints_jacobian}],
            options={"maxiter": int(max_iterations), "ftol": float(tolerance)},
        )

    def _solve_epigraph(
        self, x0: FloatArray, before: LrstTerms, max_iterations: int, tolerance: float
    ) -> Any:
        w = self.weights
        scale_lin = max(before.l_lin_dot_max_n, 1e-9)
        scale_ang = max(before.l_ang_dot_max_nm, 1e-9)
        scale_f = max(before.objective, 1e-12)
        k = len(self._times)
        free_weights = self._position_free  # heights: d h_k / d A_j = weight_kj * up_b
        basis = self._basis
        m = basis.shape[1]  # the control points' variables; then the two bounds

        def unpack(z: FloatArray) -> tuple[FloatArray, float, float]:
            return x0 + _SCALE_M * basis @ z[:m], z[m] * scale_lin, z[m + 1] * scale_ang

        def objective(z: FloatArray) -> float:
            x, s_lin, s_ang = unpack(z)
            apex = float(self._sample(x).heights.max())
            value = w.c1 * s_lin + w.c2 * s_ang + w.c3 * abs(self.step_height_m - apex)
            return value / scale_f

        def objective_gradient(z: FloatArray) -> FloatArray:
            x, _, _ = unpack(z)
            heights = self._sample(x).heights
            top = int(np.argmax(heights))
            sign = -1.0 if self.step_height_m > heights[top] else 1.0
            grad = np.zeros(m + 2)
            along = np.outer(free_weights[top], self._up_b).ravel()
            grad[:m] = w.c3 * sign * (along @ basis) * _SCALE_M
            grad[m] = w.c1 * scale_lin
            grad[m + 1] = w.c2 * scale_ang
            return grad / scale_f

        def vector(sampled: _Sampled, s_lin: float, s_ang: float) -> FloatArray:
            return np.concatenate(
                [
                    (s_lin - sampled.lin) / scale_lin,
                    (s_ang - sampled.ang) / scale_ang,
                    sampled.margins,
                    sampled.reach,
                    sampled.clearance,
                ]
            )

        def constraints(z: FloatArray) -> FloatArray:
            x, s_lin, s_ang = unpack(z)
            return vector(self._sample(x), s_lin, s_ang)

        def constraints_jacobian(z: FloatArray) -> FloatArray:
            x, s_lin, s_ang = unpack(z)
            first, *steps = self._batch(x)
            base = vector(first, s_lin, s_ang)
            jac = np.zeros((len(base), m + 2))
            for i, sampled in enumerate(steps):
                jac[:, i] = (vector(sampled, s_lin, s_ang) - base) / (_STEP_M / _SCALE_M)
            jac[:k, m] = 1.0
            jac[k : 2 * k, m + 1] = 1.0
            return jac

        z0 = np.concatenate([np.zeros(m), [1.0, 1.0]])
        return minimize(
            objective,
            z0,
            jac=objective_gradient,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": constraints, "jac": constraints_jacobian}],
            options={"maxiter": int(max_iterations), "ftol": float(tolerance)},
        )


def _ks(values: FloatArray, rho: float) -> FloatArray:
    """Kreisselmeier-Steinhauser smooth minimum of each column of ``(k, c)`` values: ``(c,)``."""
    low = values.min(axis=0)
    result: FloatArray = low - np.log(np.exp(-rho * (values - low)).sum(axis=0)) / rho
    return result


def _soft_max(values: FloatArray) -> float:
    """A smooth maximum of non-negative values: their power mean of order :data:`_POWER`."""
    top = float(values.max())
    if top <= 0.0:
        return 0.0
    mean = float(np.mean((values / top) ** _POWER))
    return top * float(np.power(mean, 1.0 / _POWER))


def optimise_swing(
    tree: FloatingTree,
    leg: PlanarLeg,
    q: Sequence[float] | FloatArray,
    base_pose: Sequence[Sequence[float]] | FloatArray,
    start: Sequence[float] | FloatArray,
    end: Sequence[float] | FloatArray,
    duration_s: float,
    step_height_m: float,
    *,
    up: Sequence[float] | FloatArray = UP,
    weights: LrstWeights | None = None,
    samples: int = 50,
    method: LrstMethod = LrstMethod.SMOOTH,
    max_iterations: int = 60,
    terrain: HeightFunction | None = None,
    clearance_m: float = CLEARANCE_M,
    normal_ends: bool = True,
) -> LrstResult:
    """LRST for one swing: :class:`LrstProblem` built and solved (arguments as there)."""
    problem = LrstProblem(
        tree,
        leg,
        q,
        base_pose,
        start,
        end,
        duration_s,
        step_height_m,
        up=up,
        weights=weights,
        samples=samples,
        terrain=terrain,
        clearance_m=clearance_m,
        normal_ends=normal_ends,
    )
    return problem.solve(method=method, max_iterations=max_iterations)


__all__ = ["LrstMethod", "LrstProblem", "LrstResult", "LrstTerms", "LrstWeights", "optimise_swing"]
