"""Momentum distribution (MD) with the manipulability weight: seed 004 eqs. 3-6.

A swinging leg carries momentum; in microgravity its reaction pulls on the grippers. MD
moves the base during the swing so that a fraction ``α`` of the swing's momentum is taken
up by the rest of the robot (eqs. 3, 4):

    L = H_b ẋ_b + Σ_sup H_bm,i φ̇_i + Σ_sw H_bm,i φ̇_i
    ẋ_b = −α (H_b − Σ_sup H_bm,i J_m,i⁺ J_b,i)⁻¹ Σ_sw H_bm,i φ̇_i

where the supporting legs keep their feet still, ``J_b,i ẋ_b + J_m,i φ̇_i = 0``, so
``φ̇_i = −J_m,i⁺ J_b,i ẋ_b``; with ``α = 1`` the total momentum stays 0. ``α`` follows the
legs' manipulability (eqs. 5, 6), clamped to ``[0, 1]`` (the paper does not clamp, but
``α`` outside it would push momentum the wrong way or amplify it):

    w_i = sqrt(det(J_m,i J_m,iᵀ)),   α = clamp((min_i w_i − w_min) / (w_max − w_min), 0, 1)

``w_min`` and ``w_max`` are 1.2e-3 and 2.5e-3 m³: the paper prints "1.2 mm and 2.5 mm" for
the maximum and minimum, which is reversed and in the wrong unit (wave-2 brief 2.4; HubRobo's
legs measure 1.7 to 1.9e-3 m³ at the nominal stance).

Coordinates (those of :class:`~limbtree.kinematics.floating.FloatingTree`): ``ẋ_b`` is the
base's body twist ``[v; ω]`` in base axes; ``H_b`` and ``H_bm,i`` are the columns of
``FloatingTree.momentum_matrix`` (linear momentum and angular momentum about the base
origin, base axes); ``J_b,i`` and ``J_m,i`` give a foot's linear velocity in base axes
(3 rows: a 3-joint leg controls its foot's position only, so ``J_m,i`` is 3x3).

:func:`plan_swing_motion` integrates eq. 4 over a whole swing: the planned base poses and
every leg's joints at a fixed rate, for the plant to track.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from limbtree.kinematics.floating import FloatingTree
from limbtree.skills.climbing._checks import (
    FloatArray,
    array,
    positive,
    read_only,
    transform,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.leg import PlanarLeg
from limbtree.skills.climbing.swing import Swing


@dataclass(frozen=True)
class AlphaLimits:
    """Eq. 6's manipulability bounds.

    Attributes:
        w_min_m3: ``w_min`` [m^3]: at or below it ``α = 0`` (no momentum distributed).
        w_max_m3: ``w_max`` [m^3]: at or above it ``α = 1`` (all of it).

    Raises:
        ClimbingInputError: unless ``0 <= w_min_m3 < w_max_m3``, both finite.
    """

    w_min_m3: float = 1.2e-3
    w_max_m3: float = 2.5e-3

    def __post_init__(self) -> None:
        low = positive("w_min_m3", self.w_min_m3, allow_zero=True)
        high = positive("w_max_m3", self.w_max_m3)
        if not low < high:
            raise ClimbingInputError(
                "w_max_m3", self.w_max_m3, f"must exceed w_min_m3 ({low!r}); eq. 6 divides by it"
            )
        object.__setattr__(self, "w_min_m3", low)
        object.__setattr__(self, "w_max_m3", high)


def manipulability(jacobian: Sequence[Sequence[float]] | FloatArray) -> float:
    """Eq. 5: ``w = sqrt(det(J Jᵀ))`` (``J``: ``m x k``, ``m <= k``; 3x3 for a 3-joint leg).

    Returns:
        ``w`` >= 0 (m^3 for a 3-joint leg's linear block); 0 at a singular posture.

    Raises:
        ClimbingInputError: for a matrix that is not 2-D and finite.
    """
    jac = array("jacobian", jacobian, (None, None), what="a Jacobian matrix")
    det = float(np.linalg.det(jac @ jac.T))
    return math.sqrt(det) if det > 0.0 else 0.0


def distribution_factor(
    manipulabilities: float | Sequence[float] | FloatArray,
    limits: AlphaLimits | None = None,
) -> float:
    """Eq. 6, clamped: ``α = clamp((min w − w_min) / (w_max − w_min), 0, 1)``.

    Args:
        manipulabilities: ``w_i`` of the legs considered [m^3] (eq. 6: all the limbs).
        limits: ``w_min`` and ``w_max`` (default 1.2e-3, 2.5e-3 m^3).

    Returns:
        ``α`` in ``[0, 1]``.

    Raises:
        ClimbingInputError: for no value, or a negative or non-finite one.
    """
    bounds = limits or AlphaLimits()
    values = np.atleast_1d(np.asarray(manipulabilities, dtype=np.float64))
    if values.ndim != 1 or values.size == 0 or not np.isfinite(values).all() or (values < 0).any():
        raise ClimbingInputError(
            "manipulabilities", manipulabilities, "must be one or more finite values >= 0 [m^3]"
        )
    alpha = (float(values.min()) - bounds.w_min_m3) / (bounds.w_max_m3 - bounds.w_min_m3)
    return min(max(alpha, 0.0), 1.0)


def _alpha(name: str, value: float) -> float:
    number = float(value)
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ClimbingInputError(name, value, "must be in [0, 1]")
    return number


def support_rates(
    j_b: Sequence[Sequence[float]] | FloatArray,
    j_m: Sequence[Sequence[float]] | FloatArray,
    base_twist: Sequence[float] | FloatArray,
) -> FloatArray:
    """A supporting leg's joint rates that keep its foot still: ``φ̇ = −J_m⁺ J_b ẋ_b``.

    Args:
        j_b: ``(m, 6)`` the foot's velocity per base twist.
        j_m: ``(m, k)`` the foot's velocity per joint rate.
        base_twist: ``(6,)`` ``ẋ_b`` [m/s; rad/s].

    Returns:
        ``(k,)`` joint rates [rad/s].
    """
    jb = array("j_b", j_b, (None, 6))
    jm = array("j_m", j_m, (jb.shape[0], None))
    twist = array("base_twist", base_twist, (6,))
    result: FloatArray = -np.linalg.pinv(jm) @ (jb @ twist)
    return result


def _reduced_inertia(h_b: FloatArray, support: Sequence[tuple[FloatArray, ...]]) -> FloatArray:
    """``H_b − Σ_sup H_bm,i J_m,i⁺ J_b,i``: the base's inertia with the support legs' feet held."""
    reduced = h_b.copy()
    for h_bm, j_b, j_m in support:
        reduced -= h_bm @ np.linalg.pinv(j_m) @ j_b
    return reduced


def base_velocity(
    h_b: Sequence[Sequence[float]] | FloatArray,
    swing: Sequence[tuple[FloatArray, FloatArray]],
    support: Sequence[tuple[FloatArray, FloatArray, FloatArray]],
    alpha: float,
) -> FloatArray:
    """Eq. 4: ``ẋ_b = −α (H_b − Σ_sup H_bm,i J_m,i⁺ J_b,i)⁻¹ Σ_sw H_bm,i φ̇_i``.

    Args:
        h_b: ``(6, 6)`` the base's block of the momentum matrix.
        swing: per swinging leg, ``(H_bm,i (6, k), φ̇_i (k,))``.
        support: per supporting leg, ``(H_bm,i (6, k), J_b,i (m, 6), J_m,i (m, k))``.
        alpha: ``α`` in ``[0, 1]``.

    Returns:
        ``(6,)`` the base's body twist [m/s; rad/s].

    Raises:
        ClimbingInputError: for ``α`` outside ``[0, 1]`` or a singular reduced inertia.
    """
    a = _alpha("alpha", alpha)
    hb = array("h_b", h_b, (6, 6))
    blocks = [tuple(np.asarray(x, dtype=np.float64) for x in s) for s in support]
    reduced = _reduced_inertia(hb, blocks)
    momentum = np.zeros(6)
    for h_bm, rates in swing:
        momentum += np.asarray(h_bm, dtype=np.float64) @ np.asarray(rates, dtype=np.float64)
    try:
        result = np.asarray(-a * np.linalg.solve(reduced, momentum), dtype=np.float64)
    except np.linalg.LinAlgError:
        raise ClimbingInputError(
            "support", "...", "H_b − Σ H_bm J_m⁺ J_b is singular; the base cannot take momentum"
        ) from None
    return result


@dataclass(frozen=True, eq=False)
class Distribution:
    """Eq. 4 solved at one posture.

    Attributes:
        alpha: ``α`` used.
        manipulability: leg -> ``w_i`` [m^3] (eq. 5), every leg of ``feet``.
        base_twist: ``(6,)`` ``ẋ_b``, body twist in base axes [m/s; rad/s].
        joint_rates: ``(n,)`` every joint's rate [rad/s]: the swinging legs' as given or
            solved, the supporting legs' keeping their feet still (other joints 0).
        swing_momentum: ``(6,)`` ``Σ_sw H_bm,i φ̇_i``: the swing's momentum with the base
            held [kg m/s; kg m^2/s], what LRST shapes.
        momentum: ``(6,)`` the robot's total momentum with this motion (eq. 3; ``(1 − α)``
            times the swing momentum, up to the pseudo-inverses) [kg m/s; kg m^2/s].
    """

    alpha: float
    manipulability: Mapping[str, float]
    base_twist: FloatArray
    joint_rates: FloatArray
    swing_momentum: FloatArray
    momentum: FloatArray

    def __post_init__(self) -> None:
        for name in ("base_twist", "joint_rates", "swing_momentum", "momentum"):
            read_only(getattr(self, name))


def _pinv(matrix: FloatArray) -> FloatArray:
    """``matrix⁺``: the inverse of a square, well-conditioned matrix, else the pseudo-inverse."""
    if matrix.shape[0] == matrix.shape[1]:
        try:
            inverse = np.asarray(np.linalg.inv(matrix), dtype=np.float64)
        except np.linalg.LinAlgError:
            pass
        else:
            if np.isfinite(inverse).all() and np.abs(inverse).max() < 1e8:
                return inverse
    result = np.asarray(np.linalg.pinv(matrix), dtype=np.float64)
    return result


@dataclass(frozen=True)
class _LegBlocks:
    """One leg's pieces of eqs. 3-4 at a posture."""

    columns: slice
    h_bm: FloatArray  # (6, k)
    j_b: FloatArray  # (3, 6)
    j_m: FloatArray  # (3, k)


def _solve(
    momentum_matrix: FloatArray,
    blocks: Mapping[str, _LegBlocks],
    n: int,
    given: Mapping[str, FloatArray],
    by_rates: bool,
    alpha: float | None,
    limits: AlphaLimits | None,
) -> Distribution:
    """Eqs. 4-6 from the legs' blocks (inputs already checked)."""
    supporting = [leg for leg in blocks if leg not in given]
    swinging = list(given)
    w = {leg: manipulability(b.j_m) for leg, b in blocks.items()}
    a = distribution_factor(list(w.values()), limits) if alpha is None else alpha
    h_b = momentum_matrix[:, :6]
    inverses = {leg: _pinv(blocks[leg].j_m) for leg in supporting}
    reduced = h_b.copy()
    for leg in supporting:
        reduced -= blocks[leg].h_bm @ inverses[leg] @ blocks[leg].j_b
    try:
        reduced_inv = np.linalg.inv(reduced)
    except np.linalg.LinAlgError:
        raise ClimbingInputError(
            "q", "...", "H_b − Σ H_bm J_m⁺ J_b is singular at this posture"
        ) from None
    rates: dict[str, FloatArray] = {}
    if by_rates:
        rates = dict(given)
    else:
        # J_m,s φ̇_s − α J_b,s A⁻¹ Σ_r H_bm,r φ̇_r = v_s, all swinging legs at once
        sizes = [blocks[leg].j_m.shape[1] for leg in swinging]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        system = np.zeros((3 * len(swinging), int(offsets[-1])))
        rhs = np.zeros(3 * len(swinging))
        for row, leg in enumerate(swinging):
            rhs[3 * row : 3 * row + 3] = given[leg]
            coupling = -a * blocks[leg].j_b @ reduced_inv
            for col, other in enumerate(swinging):
                block = coupling @ blocks[other].h_bm
                if col == row:
                    block = block + blocks[leg].j_m
                system[3 * row : 3 * row + 3, offsets[col] : offsets[col + 1]] = block
        if system.shape[0] == system.shape[1]:
            solution = _pinv(system) @ rhs
        else:
            solution = np.asarray(np.linalg.lstsq(system, rhs, rcond=None)[0], dtype=np.float64)
        for col, leg in enumerate(swinging):
            rates[leg] = solution[offsets[col] : offsets[col + 1]]
    swing_momentum = np.zeros(6)
    for leg in swinging:
        swing_momentum += blocks[leg].h_bm @ rates[leg]
    base_twist = -a * reduced_inv @ swing_momentum
    joint_rates = np.zeros(n)
    for leg in swinging:
        joint_rates[blocks[leg].columns] = rates[leg]
    for leg in supporting:
        joint_rates[blocks[leg].columns] = -inverses[leg] @ (blocks[leg].j_b @ base_twist)
    total = momentum_matrix @ np.concatenate([base_twist, joint_rates])
    return Distribution(a, w, base_twist, joint_rates, swing_momentum, total)


def distribute_momentum(
    tree: FloatingTree,
    q: Sequence[float] | FloatArray,
    feet: Mapping[str, str],
    *,
    swing_rates: Mapping[str, Sequence[float] | FloatArray] | None = None,
    swing_foot_velocities: Mapping[str, Sequence[float] | FloatArray] | None = None,
    alpha: float | None = None,
    limits: AlphaLimits | None = None,
) -> Distribution:
    """Seed 004's MD at one posture: ``α`` (eqs. 5-6), the base twist (eq. 4), the legs' rates.

    Give the swinging legs either by their joint rates (eq. 4 as printed) or by their
    feet's wanted velocities; then the rates and the base twist are solved together, so
    the foot follows its path in the world while the base moves under it:
    ``J_m,s φ̇_s − α J_b,s (H_b − Σ_sup …)⁻¹ Σ_sw H_bm,r φ̇_r = v_s``.

    Args:
        tree: the robot.
        q: ``(n,)`` joint values [rad].
        feet: leg -> its foot frame (``{"leg_0": "leg_0.ee", ...}``); the legs not swinging
            support.
        swing_rates: swinging leg -> ``φ̇`` [rad/s].
        swing_foot_velocities: swinging leg -> its foot's velocity in the world, in base
            axes (``R_b^T ṗ``) [m/s].
        alpha: ``α``, or None for eq. 6 over every leg of ``feet``.
        limits: eq. 6's bounds (when ``alpha`` is None).

    Returns:
        The distribution.

    Raises:
        ClimbingInputError: for neither or both of the swing arguments, a swinging leg not in
            ``feet``, no supporting leg, wrong sizes or ``α`` outside ``[0, 1]``.
        limbtree.kinematics.floating.FloatingTreeError: for an unknown limb or frame.
    """
    if (swing_rates is None) == (swing_foot_velocities is None):
        raise ClimbingInputError(
            "swing_rates", swing_rates, "give exactly one of swing_rates and swing_foot_velocities"
        )
    by_rates = swing_rates is not None
    raw = dict(swing_rates if swing_rates is not None else swing_foot_velocities or {})
    unknown = [leg for leg in raw if leg not in feet]
    if unknown or not raw:
        raise ClimbingInputError(
            "swing", sorted(raw), f"must name one or more legs of feet: {', '.join(feet)}"
        )
    if len(raw) == len(feet):
        raise ClimbingInputError("feet", dict(feet), "needs at least one supporting leg")
    values = array("q", q, (tree.n,))
    legs = list(feet)
    poses, jacobians = tree.frame_poses_and_jacobians(tuple(feet[leg] for leg in legs), values)
    momentum_matrix = tree.momentum_matrix(values)
    blocks: dict[str, _LegBlocks] = {}
    for index, leg in enumerate(legs):
        columns = tree.limb_slice(leg)
        linear = poses[index][:3, :3] @ jacobians[index][:3]  # foot velocity, base axes
        blocks[leg] = _LegBlocks(
            columns,
            momentum_matrix[:, 6 + columns.start : 6 + columns.stop],
            linear[:, :6],
            linear[:, 6 + columns.start : 6 + columns.stop],
        )
    given: dict[str, FloatArray] = {}
    for leg, value in raw.items():
        size = blocks[leg].columns.stop - blocks[leg].columns.start
        given[leg] = (
            array(f"swing_rates[{leg!r}]", value, (size,))
            if by_rates
            else vector3(f"swing_foot_velocities[{leg!r}]", value)
        )
    a = None if alpha is None else _alpha("alpha", alpha)
    return _solve(momentum_matrix, blocks, tree.n, given, by_rates, a, limits)


def integrate_pose(
    pose: Sequence[Sequence[float]] | FloatArray,
    twist: Sequence[float] | FloatArray,
    dt: float,
) -> FloatArray:
    """``g exp(ξ̂ dt)``: a pose moved by a constant body twist ``ξ = [v; ω]`` for ``dt``.

    Args:
        pose: ``(4, 4)`` pose in the world.
        twist: ``(6,)`` body twist [m/s; rad/s].
        dt: [s] (>= 0).

    Returns:
        ``(4, 4)``.
    """
    g = transform("pose", pose)
    xi = array("twist", twist, (6,)) * positive("dt", dt, allow_zero=True)
    result: FloatArray = g @ _exp_many(xi[None])[0]
    return result


@dataclass(frozen=True, eq=False)
class SwingMotion:
    """A swing planned at a fixed rate: the base (eq. 4 integrated) and every leg's joints.

    Attributes:
        t: ``(k,)`` times from the swing's start [s].
        base_poses: ``(k, 4, 4)`` planned base poses in the world.
        q: ``(k, n)`` joints that hold the supporting feet on their footholds and put the
            swinging foot on its path, with the base at its planned pose [rad].
        base_twists: ``(k, 6)`` ``ẋ_b`` at each sample [m/s; rad/s].
        joint_rates: ``(k, n)`` [rad/s].
        alpha: ``(k,)`` ``α``.
        min_manipulability: ``(k,)`` ``min_i w_i`` [m^3].
        swing_momentum: ``(k, 6)`` the swing's momentum with the base held.
        momentum: ``(k, 6)`` the total momentum eq. 3 predicts.
        min_reach: the smallest reach margin of the legs' IK over the swing (< 0: a foot
            was out of reach somewhere).
    """

    t: FloatArray
    base_poses: FloatArray
    q: FloatArray
    base_twists: FloatArray
    joint_rates: FloatArray
    alpha: FloatArray
    min_manipulability: FloatArray
    swing_momentum: FloatArray
    momentum: FloatArray
    min_reach: float

    def __post_init__(self) -> None:
        for name in _MOTION_ARRAYS:
            read_only(getattr(self, name))


_MOTION_ARRAYS = (
    "t",
    "base_poses",
    "q",
    "base_twists",
    "joint_rates",
    "alpha",
    "min_manipulability",
    "swing_momentum",
    "momentum",
)


#: When the Picard iteration of :func:`plan_swing_motion` has converged: the largest change
#: of a base pose's entries between passes [m or -] (0.1 nm; about 7 passes on HubRobo).
_FIXED_POINT_TOL = 1e-10


def _exp_many(xis: FloatArray) -> FloatArray:
    """``exp(ξ̂)`` of ``(k, 6)`` body twists already multiplied by the time step: ``(k, 4, 4)``.

    Rodrigues' formula and the SE(3) left Jacobian, with their series below 1e-6 rad (the
    order whose error is below double precision).
    """
    v, w = xis[:, :3], xis[:, 3:]
    theta = np.linalg.norm(w, axis=1)
    k = np.zeros((len(xis), 3, 3))
    k[:, 0, 1], k[:, 0, 2], k[:, 1, 2] = -w[:, 2], w[:, 1], -w[:, 0]
    k[:, 1, 0], k[:, 2, 0], k[:, 2, 1] = w[:, 2], -w[:, 1], w[:, 0]
    kk = k @ k
    small = theta < 1e-6
    safe = np.where(small, 1.0, theta)
    a = np.where(small, 1.0, np.sin(safe) / safe)
    b = np.where(small, 0.5, (1.0 - np.cos(safe)) / safe**2)
    c = np.where(small, 1.0 / 6.0, (safe - np.sin(safe)) / safe**3)
    eye = np.eye(3)
    steps = np.zeros((len(xis), 4, 4))
    steps[:, :3, :3] = eye + a[:, None, None] * k + b[:, None, None] * kk
    left = eye + b[:, None, None] * k + c[:, None, None] * kk
    steps[:, :3, 3] = np.einsum("kij,kj->ki", left, v)
    steps[:, 3, 3] = 1.0
    return steps


@dataclass(frozen=True, eq=False)
class _Sweep:
    """Eqs. 3-6 at every sample of a swing, for given base poses (one vectorised pass)."""

    q: FloatArray  # (k, n)
    twists: FloatArray  # (k, 6)
    rates: FloatArray  # (k, n)
    alpha: FloatArray  # (k,)
    w_min: FloatArray  # (k,)
    swing_momentum: FloatArray  # (k, 6)
    momentum: FloatArray  # (k, 6)
    min_reach: float


class _Along:
    """:func:`distribute_momentum` along a sampled swing, every sample at once.

    The same equations as :func:`_solve` with one swinging leg given by its foot's velocity,
    in stacked ``(k, ., .)`` arrays: the legs' closed-form IK at the samples' base poses,
    their blocks, eq. 6's ``α``, the reduced inertia and eq. 4.
    """

    def __init__(
        self,
        tree: FloatingTree,
        legs: Mapping[str, PlanarLeg],
        joints: FloatArray,
        swing_leg: str,
        targets: Mapping[str, FloatArray],
        velocities: FloatArray,
        alpha: float | None,
        limits: AlphaLimits | None,
    ) -> None:
        self.tree, self.legs, self.joints, self.swing_leg = tree, legs, joints, swing_leg
        self.targets, self.velocities = targets, velocities
        self.alpha, self.limits = alpha, limits or AlphaLimits()
        self.references = {leg: joints[model.columns].copy() for leg, model in legs.items()}

    def evaluate(self, poses: FloatArray) -> _Sweep:
        count = len(poses)
        rotation_t = np.transpose(poses[:, :3, :3], (0, 2, 1))
        origin = poses[:, :3, 3]
        qs = np.tile(self.joints, (count, 1))
        feet: dict[str, FloatArray] = {}
        min_reach = math.inf
        for leg, model in self.legs.items():
            local = np.einsum("kij,kj->ki", rotation_t, self.targets[leg] - origin)
            solution = model.ik(local, self.references[leg])
            qs[:, model.columns] = solution.q
            feet[leg] = local
            min_reach = min(min_reach, float(solution.reach.min()))
        matrices = self.tree.momentum_matrices(qs)  # (k, 6, 6 + n)
        h_b = matrices[:, :, :6]
        blocks: dict[str, tuple[FloatArray, FloatArray, FloatArray]] = {}
        w = np.empty((count, len(self.legs)))
        for i, (leg, model) in enumerate(self.legs.items()):
            j_m = model.jacobian(qs[:, model.columns])  # (k, 3, 3)
            foot = model.fk(qs[:, model.columns])
            j_b = np.zeros((count, 3, 6))
            j_b[:, 0, 0] = j_b[:, 1, 1] = j_b[:, 2, 2] = 1.0
            # v = v_b + w_b x p = v_b - [p]x w_b
            j_b[:, 0, 4], j_b[:, 0, 5] = foot[:, 2], -foot[:, 1]
            j_b[:, 1, 3], j_b[:, 1, 5] = -foot[:, 2], foot[:, 0]
            j_b[:, 2, 3], j_b[:, 2, 4] = foot[:, 1], -foot[:, 0]
            columns = slice(6 + model.columns.start, 6 + model.columns.stop)
            blocks[leg] = (matrices[:, :, columns], j_b, j_m)
            det = np.linalg.det(j_m @ np.transpose(j_m, (0, 2, 1)))
            w[:, i] = np.sqrt(np.maximum(det, 0.0))
        w_min = w.min(axis=1)
        if self.alpha is None:
            span = self.limits.w_max_m3 - self.limits.w_min_m3
            a = np.clip((w_min - self.limits.w_min_m3) / span, 0.0, 1.0)
        else:
            a = np.full(count, self.alpha)
        reduced = h_b.copy()
        inverses: dict[str, FloatArray] = {}
        for leg in self.legs:
            if leg != self.swing_leg:
                h_bm, j_b, j_m = blocks[leg]
                inverses[leg] = _pinv_many(j_m)
                reduced -= h_bm @ inverses[leg] @ j_b
        try:
            reduced_inv = np.linalg.inv(reduced)
        except np.linalg.LinAlgError:
            raise ClimbingInputError(
                "q", "...", "H_b − Σ H_bm J_m⁺ J_b is singular at a posture of the swing"
            ) from None
        h_s, j_b_s, j_m_s = blocks[self.swing_leg]
        # J_m,s φ̇_s − α J_b,s A⁻¹ H_bm,s φ̇_s = R_bᵀ v_s
        system = j_m_s - a[:, None, None] * (j_b_s @ reduced_inv @ h_s)
        wanted = np.einsum("kij,kj->ki", rotation_t, self.velocities)
        swing_rates = np.einsum("kij,kj->ki", _pinv_many(system), wanted)
        swing_momentum = np.einsum("kij,kj->ki", h_s, swing_rates)
        twists = -a[:, None] * np.einsum("kij,kj->ki", reduced_inv, swing_momentum)
        rates = np.zeros((count, self.tree.n))
        rates[:, self.legs[self.swing_leg].columns] = swing_rates
        for leg, inverse in inverses.items():
            j_b = blocks[leg][1]
            rates[:, self.legs[leg].columns] = -np.einsum(
                "kij,kj->ki", inverse, np.einsum("kij,kj->ki", j_b, twists)
            )
        momentum = np.einsum("kij,kj->ki", matrices, np.concatenate([twists, rates], axis=1))
        return _Sweep(qs, twists, rates, a, w_min, swing_momentum, momentum, min_reach)


def _pinv_many(matrices: FloatArray) -> FloatArray:
    """:func:`_pinv` of a stack of square matrices: inverses, pseudo-inverses where singular."""
    inverses: FloatArray
    with np.errstate(all="ignore"):
        try:
            inverses = np.asarray(np.linalg.inv(matrices), dtype=np.float64)
            bad = ~np.isfinite(inverses).all(axis=(1, 2)) | (
                np.abs(np.nan_to_num(inverses, nan=np.inf)).max(axis=(1, 2)) >= 1e8
            )
        except np.linalg.LinAlgError:
            inverses = np.empty_like(matrices)
            bad = np.ones(len(matrices), dtype=bool)
    if bad.any():
        inverses[bad] = np.linalg.pinv(matrices[bad])
    return inverses


def plan_swing_motion(
    tree: FloatingTree,
    legs: Mapping[str, PlanarLeg],
    q: Sequence[float] | FloatArray,
    base_pose: Sequence[Sequence[float]] | FloatArray,
    footholds: Mapping[str, Sequence[float] | FloatArray],
    swing_leg: str,
    swing: Swing,
    *,
    rate_hz: float = 100.0,
    alpha: float | None = None,
    limits: AlphaLimits | None = None,
    distribute: bool = True,
) -> SwingMotion:
    """Plan a swing with MD: integrate eq. 4 from the base's pose while the foot follows ``swing``.

    At each sample ``t_k`` the legs' joints come from their closed-form IK with the base at
    its planned pose ``g_k`` (the supporting feet on their footholds, the swinging foot at
    ``swing(t_k)``); :func:`distribute_momentum` with the foot's world velocity gives
    ``ẋ_b``, and ``g_(k+1) = g_k exp(ẋ_b dt)`` (explicit Euler on SE(3): the momentum the
    planned poses and joints carry is first order in ``dt``; with ``α = 1`` and HubRobo at
    100 Hz it is about 1% of the swing's own). With ``distribute=False`` the base stays
    put (the baseline).

    Args:
        tree: the robot.
        legs: every leg (the swinging one and the supporting ones) -> its :class:`PlanarLeg`.
        q: ``(n,)`` joints at the start [rad] (they set each leg's IK branch).
        base_pose: ``(4, 4)`` the base's pose at the start, in the world.
        footholds: each supporting leg -> its contact point in the world [m].
        swing_leg: the leg that swings.
        swing: its foot's path in the world (a :class:`~.swing.BezierSwing` or
            :class:`~.swing.CubicSwing`).
        rate_hz: samples per second (the last sample is at the swing's end).
        alpha: a fixed ``α`` (Sec. 4's 0.3), or None for eq. 6.
        limits: eq. 6's bounds.
        distribute: False: no MD, the base is held.

    Returns:
        The planned motion.

    Raises:
        ClimbingInputError: for a swinging leg not in ``legs``, a supporting leg without a
            foothold, or bad sizes.
    """
    if swing_leg not in legs:
        raise ClimbingInputError("swing_leg", swing_leg, f"must be one of {', '.join(legs)}")
    supporting = [leg for leg in legs if leg != swing_leg]
    missing = [leg for leg in supporting if leg not in footholds]
    if missing:
        raise ClimbingInputError(
            "footholds", sorted(footholds), f"needs the contact points of {', '.join(missing)}"
        )
    holds = {leg: vector3(f"footholds[{leg!r}]", footholds[leg]) for leg in supporting}
    joints = array("q", q, (tree.n,))
    pose = transform("base_pose", base_pose)
    rate = positive("rate_hz", rate_hz)
    count = max(math.ceil(swing.duration_s * rate), 1) + 1
    times = np.linspace(0.0, swing.duration_s, count)
    dt = float(times[1] - times[0])
    path = swing.evaluate(times)
    fixed = 0.0 if not distribute else (None if alpha is None else _alpha("alpha", alpha))
    targets = {
        leg: path.position if leg == swing_leg else np.broadcast_to(holds[leg], (count, 3))
        for leg in legs
    }
    along = _Along(tree, legs, joints, swing_leg, targets, path.velocity, fixed, limits)
    # Picard iteration over the whole swing: the samples' base poses -> their twists (one
    # vectorised pass) -> the poses those twists integrate to, until they agree. Each pass
    # makes at least one more sample exact, and the base's slow response makes it contract
    # fast (3 to 5 passes on HubRobo); the fixed point is the sequential explicit Euler.
    poses = np.broadcast_to(pose, (count, 4, 4)).copy()
    for _ in range(count + 1):
        sweep = along.evaluate(poses)
        if not distribute:
            break
        steps = _exp_many(sweep.twists[:-1] * dt)
        moved = np.empty_like(poses)
        moved[0] = pose
        for k in range(count - 1):
            moved[k + 1] = moved[k] @ steps[k]
        change = float(np.abs(moved - poses).max())
        poses = moved
        if change <= _FIXED_POINT_TOL:
            sweep = along.evaluate(poses)
            break
    return SwingMotion(
        times,
        poses,
        sweep.q,
        sweep.twists,
        sweep.rates,
        sweep.alpha,
        sweep.w_min,
        sweep.swing_momentum,
        sweep.momentum,
        sweep.min_reach,
    )


__all__ = [
    "AlphaLimits",
    "Distribution",
    "SwingMotion",
    "base_velocity",
    "distribute_momentum",
    "distribution_factor",
    "integrate_pose",
    "manipulability",
    "plan_swing_motion",
    "support_rates",
]
