"""Seed 003's unified passivity-based controller (Theorem 1, eq. 8), in its generic form.

One law for every morphology and operation of the MIRROR multi-arm robot: which frames are
latched (the rows of the constraint Jacobian Ψ, eqs. 2a-2c and 3) and which are task frames
(selector s = 1 in eq. 6) is all that changes between a 1-arm walk, torso control and a
2-arm walk. With the torso treated as one more frame (Jacobian ``[I 0]``), eq. 8 reads
(wave-2 brief, section 1.2, "the generic form")::

    τ = − Σ_f T̃_fᵀ (γ_f + D_f V_f) − Σ_f P_f N_fᵀ N_f q̇
    T̃_f = T_qf − T_bf Ψ_bq,   Ψ_bq = Ψ_b⁺ Ψ_q,   V_b = −Ψ_bq q̇   (eq. 3),   V_f = T̃_f q̇

with the proportional wrench of eq. 5 in the contract's twist order ``[v; ω]``::

    η = g_d⁻¹ g:   η̃ = R_dᵀ R,   r = R_dᵀ (p − p_d)          (Lemma 1, r corrected)
    Φ = ½ tr(K (I − η̃)) + ½ rᵀ 𝒦 r,      γ = [η̃ᵀ 𝒦 r; sk(K η̃)^∨],   Φ̇ = γᵀ V

and the null-space projector ``N_f = I − T̃_f⁺ T̃_f`` (the paper's N_0 does not multiply
out; corrected as in the brief). The Lyapunov function is ``W = KE + Φ̂`` (eq. 9) with
``Φ̂ = Σ_f Φ(η_f)``, and along the constrained motion (eq. 13)::

    Ẇ = q̇ᵀ τ + Σ_f γ_fᵀ T̃_f q̇ = − Σ_f V_fᵀ D_f V_f − Σ_f P_f q̇ᵀ N_f q̇ ≤ 0.

The controller needs only the frames' poses and body Jacobians ``[T_b T_q]`` (eq. 7) from a
floating tree, and no base sensor: the base's world pose follows from the first latched
frame's known world pose and forward kinematics (brief 4.1). It is pure and allocation-light,
since it runs at 1 kHz inside the plant.

Implementation choices (each keeps Ẇ ≤ 0 exactly):

* Ψ_b⁺Ψ_q by one 6x6 solve (one latch: Ψ_b is square; several: the normal equations).
* ``N_f q̇ = q̇ − T̃_fᵀ (T̃_f T̃_fᵀ + ε I)⁻¹ T̃_f q̇`` with ε = ``NULL_SPACE_DAMPING``: one 6x6
  solve per task instead of an n x n pseudo-inverse. It equals ``(I − T̃⁺T̃) q̇`` to
  O(ε/σ_min²) away from singularities and stays positive semi-definite at them, so the
  null-space damping never injects energy. (N_f is a symmetric projector, so
  ``N_fᵀ N_f = N_f``.)
* A task frame that is also latched is skipped: it cannot move, and its term would only
  push against the latch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt
from scipy.linalg.lapack import dgesv as _dgesv
from scipy.linalg.lapack import dposv as _dposv

from limbtree.skills.dynamics.errors import (
    ConstraintRankError,
    DynamicsInputError,
    UnknownFrameError,
)

FloatArray = npt.NDArray[np.float64]

#: ε [same units as T̃T̃ᵀ] added to T̃T̃ᵀ in the null-space projector (see the module docstring).
NULL_SPACE_DAMPING: Final = 1e-10
#: Ψ_b counts as rank deficient when its factor's smallest pivot is below this times its
#: largest: LU of Ψ_b (one latch; its pivots resolve a condition number up to ~1e12) and
#: Cholesky of Ψ_bᵀΨ_b (several; through the normal equations only up to ~1e5). A latched
#: frame's T_b is an adjoint, so a real Ψ_b has a condition number of order 10.
_RANK_TOL_LU: Final = 1e-9
_RANK_TOL_CHOLESKY: Final = 1e-4
#: Tolerance on ``RᵀR − I`` and on the last row of a pose given as a 4x4 transform.
_RIGID_TOL: Final = 1e-6
_EPSILON_EYE6: Final = NULL_SPACE_DAMPING * np.eye(6)


class FloatingTreeModel(Protocol):
    """What :class:`UnifiedImpedance` needs of a floating tree (``FloatingTree``, or a fake).

    A structural type, so the controller depends on the contract rather than on one class.
    """

    @property
    def n(self) -> int:
        """The total number of joints."""

    @property
    def frames(self) -> Sequence[str]:
        """The interface frames the tree knows."""

    def frame_pose(self, frame: str, q: FloatArray) -> FloatArray:
        """A frame's 4x4 pose in the base body's frame at joint values ``q``."""

    def frame_poses_and_jacobians(
        self, frames: tuple[str, ...], q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Poses ``(k, 4, 4)`` in the base frame and body Jacobians ``(k, 6, 6 + n)``."""

    def mass_matrix(self, q: FloatArray) -> FloatArray:
        """The ``(6 + n, 6 + n)`` mass matrix in ``[V_b; q̇]`` coordinates."""


def _positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    number = float(value)
    ok = math.isfinite(number) and (number >= 0.0 if allow_zero else number > 0.0)
    if not ok:
        need = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise DynamicsInputError(name, value, f"must be {need}")
    return number


def _read_only(array: FloatArray) -> FloatArray:
    array.setflags(write=False)
    return array


def checked_transform(name: str, value: npt.ArrayLike, *, rigid: bool = True) -> FloatArray:
    """``value`` as a read-only 4x4 float64 copy, checked to be a finite rigid transform.

    Args:
        name: what the value is, for the error message.
        value: a 4x4 homogeneous transform.
        rigid: whether to check that the rotation is orthonormal with determinant +1 and
            the last row is ``[0, 0, 0, 1]`` (to 1e-6).

    Returns:
        The checked copy.

    Raises:
        DynamicsInputError: if it is not 4x4, not finite, or not rigid.
    """
    try:
        matrix = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise DynamicsInputError(name, value, "must be a 4x4 homogeneous transform") from error
    if matrix.shape != (4, 4):
        raise DynamicsInputError(
            name, value, f"must be a 4x4 homogeneous transform, got shape {matrix.shape}"
        )
    if not np.isfinite(matrix).all():
        raise DynamicsInputError(name, value, "must be finite (it holds NaN or inf)")
    if rigid:
        rotation = matrix[:3, :3]
        if (
            np.abs(rotation.T @ rotation - np.eye(3)).max() > _RIGID_TOL
            or np.linalg.det(rotation) < 0.0
            or np.abs(matrix[3] - (0.0, 0.0, 0.0, 1.0)).max() > _RIGID_TOL
        ):
            raise DynamicsInputError(
                name,
                value,
                "is not a rigid transform (its rotation must be orthonormal with det +1 and "
                "its last row [0, 0, 0, 1])",
            )
    return _read_only(matrix)


def _joint_vector(name: str, value: npt.ArrayLike) -> FloatArray:
    try:
        vector = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise DynamicsInputError(name, value, "must be a vector of numbers") from error
    if vector.ndim != 1:
        raise DynamicsInputError(name, value, f"must be a 1-D vector, got shape {vector.shape}")
    if not np.isfinite(vector).all():
        bad = np.flatnonzero(~np.isfinite(vector)).tolist()
        raise DynamicsInputError(name, value, f"must be finite; entries {bad} are NaN or inf")
    return _read_only(vector)


@dataclass(frozen=True)
class ImpedanceGains:
    """Gains of one task frame (isotropic), seed 003 Lemma 1 and eq. 8.

    The defaults are the wave-2 brief's (section 1.6) for an arm's free end: overdamped, a
    time constant D/𝒦 of 2 s.

    Attributes:
        k_n_per_m: translational stiffness 𝒦 [N/m] (> 0).
        k_nm_per_rad: rotational stiffness K [N m/rad] (> 0).
        d_ns_per_m: translational damping [N s/m] (>= 0).
        d_nms_per_rad: rotational damping [N m s/rad] (>= 0).
        null_nms_per_rad: null-space damping P [N m s/rad] (>= 0).

    Raises:
        DynamicsInputError: if a stiffness is not positive or a damping is negative or not
            finite.
    """

    k_n_per_m: float = 100.0
    k_nm_per_rad: float = 20.0
    d_ns_per_m: float = 200.0
    d_nms_per_rad: float = 10.0
    null_nms_per_rad: float = 5.0

    def __post_init__(self) -> None:
        for name in ("k_n_per_m", "k_nm_per_rad"):
            object.__setattr__(self, name, _positive(name, getattr(self, name)))
        for name in ("d_ns_per_m", "d_nms_per_rad", "null_nms_per_rad"):
            object.__setattr__(self, name, _positive(name, getattr(self, name), allow_zero=True))


@dataclass(frozen=True, eq=False)
class TaskFrame:
    """A controlled frame (selector s = 1 in eq. 6): its goal and gains.

    Attributes:
        frame: the interface frame's name (``"arm.E2"``, ``"E0"``, ...).
        goal: its goal, a 4x4 world pose (read-only copy).
        gains: the frame's impedance gains.

    Raises:
        DynamicsInputError: if ``goal`` is not a finite rigid 4x4 transform.
    """

    frame: str
    goal: FloatArray
    gains: ImpedanceGains = field(default_factory=ImpedanceGains)

    def __post_init__(self) -> None:
        object.__setattr__(self, "goal", checked_transform(f"goal of {self.frame}", self.goal))


@dataclass(frozen=True, eq=False)
class ImpedanceInput:
    """What the controller reads at one 1 kHz step.

    Attributes:
        q: ``(n,)`` joint positions [rad] in the tree's limb order.
        qdot: ``(n,)`` joint velocities [rad/s].
        latched: latched frame -> its fixed 4x4 world pose (at least one; the first one
            places the base in the world).
        tasks: the task frames.
        null_nms_per_rad: the joint damping [N m s/rad] applied when there is no task frame
            (then ``τ = −P q̇``); each task frame otherwise brings its own P.
        kinetic_energy_j: ½VᵀMV [J] from the plant, if it knows it; otherwise the controller
            computes it from the tree's mass matrix when it was built with
            ``kinetic_energy=True``, or leaves W unknown.

    Raises:
        DynamicsInputError: for vectors of different lengths, values that are not finite,
            latched poses that are not 4x4 finite transforms, or a negative damping.
    """

    q: FloatArray
    qdot: FloatArray
    latched: Mapping[str, FloatArray]
    tasks: Sequence[TaskFrame] = ()
    null_nms_per_rad: float = 5.0
    kinetic_energy_j: float | None = None

    def __post_init__(self) -> None:
        q = _joint_vector("q", self.q)
        qdot = _joint_vector("qdot", self.qdot)
        if qdot.shape != q.shape:
            raise DynamicsInputError(
                "qdot",
                self.qdot,
                f"must have one value per joint, like q ({q.size}); got {qdot.size}",
            )
        latched: dict[str, FloatArray] = {}
        for frame, pose in self.latched.items():
            try:
                matrix = np.array(pose, dtype=np.float64)
                fine = matrix.shape == (4, 4) and bool(np.isfinite(matrix).all())
            except (TypeError, ValueError):
                fine = False
            if not fine:  # the slow path, which says what is wrong
                matrix = checked_transform(f"latched[{frame!r}]", pose, rigid=False)
            latched[str(frame)] = _read_only(matrix)
        tasks = tuple(self.tasks)
        for task in tasks:
            if not isinstance(task, TaskFrame):
                raise DynamicsInputError("tasks", task, "must hold TaskFrame values")
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "qdot", qdot)
        object.__setattr__(self, "latched", MappingProxyType(latched))
        object.__setattr__(self, "tasks", tasks)
        object.__setattr__(
            self,
            "null_nms_per_rad",
            _positive("null_nms_per_rad", self.null_nms_per_rad, allow_zero=True),
        )
        ke = self.kinetic_energy_j
        if ke is not None and not (math.isfinite(ke) and ke >= -1e-12):
            raise DynamicsInputError("kinetic_energy_j", ke, "must be a finite number >= 0")


def trusted_input(
    q: FloatArray,
    qdot: FloatArray,
    latched: Mapping[str, FloatArray],
    tasks: tuple[TaskFrame, ...],
    null_nms_per_rad: float,
    kinetic_energy_j: float | None,
) -> ImpedanceInput:
    """An :class:`ImpedanceInput` built without its checks.

    For a caller whose values are right by construction (a plant's 1 kHz loop: float64
    arrays read from its own state, poses it computed, TaskFrames already checked); anything
    else uses the constructor.

    The arrays are taken as they are (not copied): the caller must not change them during
    the step.
    """
    made = object.__new__(ImpedanceInput)
    for name, value in (
        ("q", q),
        ("qdot", qdot),
        ("latched", latched),
        ("tasks", tasks),
        ("null_nms_per_rad", null_nms_per_rad),
        ("kinetic_energy_j", kinetic_energy_j),
    ):
        object.__setattr__(made, name, value)
    return made


@dataclass(frozen=True, eq=False)
class ImpedanceStep:
    """What one step of :class:`UnifiedImpedance` returns.

    Attributes:
        tau: ``(n,)`` joint torques [N m] (eq. 8), before any effort limit.
        base_pose: the base body's 4x4 world pose, from the first latched frame and FK.
        base_twist: ``(6,)`` the base's body twist ``[v; ω]`` [m/s, rad/s], ``−Ψ_bq q̇``
            (eq. 3).
        potential_j: Φ̂ [J], the sum of the task frames' potentials (eq. 6).
        lyapunov_j: W = KE + Φ̂ [J] (eq. 9), or None when KE is unknown.
        errors: task frame -> (position error [m], angle error [rad]) from its goal.
        constraint_rank: the rank of Ψ_b: always 6, since a step whose latched frames do not
            fix the base raises :class:`ConstraintRankError` (with the rank) instead.
        kinetic_energy_j: KE [J] used in W, or None.
    """

    tau: FloatArray
    base_pose: FloatArray
    base_twist: FloatArray
    potential_j: float
    lyapunov_j: float | None
    errors: Mapping[str, tuple[float, float]]
    constraint_rank: int
    kinetic_energy_j: float | None = None


def _inverse_transform(g: FloatArray) -> FloatArray:
    """The inverse of a rigid 4x4 transform."""
    out = np.empty((4, 4))
    rotation_t = g[:3, :3].T
    out[:3, :3] = rotation_t
    out[:3, 3] = -(rotation_t @ g[:3, 3])
    out[3] = (0.0, 0.0, 0.0, 1.0)
    return out


def _error_terms(
    eta: list[list[float]], k_t: float, k_r: float
) -> tuple[list[float], float, float, float]:
    """Lemma 1 and eq. 5 from the error η = g_d⁻¹g, on Python floats (faster than numpy at 3x3).

    Args:
        eta: the rows of the 4x4 error ``g_d⁻¹ g = [[η̃, r], [0, 1]]``, with ``η̃ = R_dᵀR``
            and ``r = R_dᵀ(p − p_d)`` (Lemma 1 with its typo corrected).
        k_t: translational stiffness 𝒦 [N/m] (isotropic).
        k_r: rotational stiffness K [N m/rad] (isotropic).

    Returns:
        γ = [η̃ᵀ𝒦r; sk(Kη̃)^∨] as 6 floats [N, N m] (body coordinates ``[v; ω]``),
        Φ = ½ tr(K(I − η̃)) + ½ rᵀ𝒦r [J], the position error ‖r‖ [m] and the angle of η̃
        [rad].
    """
    (e00, e01, e02, x), (e10, e11, e12, y), (e20, e21, e22, z) = eta[0], eta[1], eta[2]
    # sk(η̃)^∨: its norm is the sine of the angle, and (tr η̃ − 1) / 2 its cosine.
    wx, wy, wz = 0.5 * (e21 - e12), 0.5 * (e02 - e20), 0.5 * (e10 - e01)
    trace = e00 + e11 + e22
    r2 = x * x + y * y + z * z
    gamma = [
        k_t * (e00 * x + e10 * y + e20 * z),
        k_t * (e01 * x + e11 * y + e21 * z),
        k_t * (e02 * x + e12 * y + e22 * z),
        k_r * wx,
        k_r * wy,
        k_r * wz,
    ]
    phi = 0.5 * k_r * (3.0 - trace) + 0.5 * k_t * r2
    angle = math.atan2(math.sqrt(wx * wx + wy * wy + wz * wz), 0.5 * (trace - 1.0))
    return gamma, phi, math.sqrt(r2), angle


def task_potential_and_wrench(
    pose: npt.ArrayLike, goal: npt.ArrayLike, gains: ImpedanceGains
) -> tuple[float, FloatArray]:
    """Φ and γ of one frame (seed 003 Lemma 1 and eq. 5, r corrected, order ``[v; ω]``).

    ``Φ = ½ tr(K (I − η̃)) + ½ rᵀ𝒦r`` with ``η̃ = R_dᵀR``, ``r = R_dᵀ(p − p_d)``;
    ``γ = [η̃ᵀ𝒦r; sk(Kη̃)^∨]`` is the proportional wrench in the frame's body coordinates:
    ``Φ̇ = γᵀ V`` for the frame's body twist ``V = [v; ω]``.

    Args:
        pose: the frame's 4x4 world pose.
        goal: its goal, a 4x4 world pose.
        gains: the stiffnesses (the damping is not used).

    Returns:
        ``(Φ [J], γ (6,) [N, N m])``.

    Raises:
        DynamicsInputError: if a pose is not a finite rigid 4x4 transform.
    """
    eta = _inverse_transform(checked_transform("goal", goal)) @ checked_transform("pose", pose)
    gamma, phi, _, _ = _error_terms(eta.tolist(), gains.k_n_per_m, gains.k_nm_per_rad)
    return phi, np.array(gamma)


def pose_error(pose: npt.ArrayLike, goal: npt.ArrayLike) -> tuple[float, float]:
    """How far a pose is from its goal: position error [m] and rotation angle [rad].

    Args:
        pose: a 4x4 world pose.
        goal: the goal, a 4x4 world pose.

    Returns:
        ``(‖p − p_d‖ [m], angle of R_dᵀR [rad] in [0, π])``.

    Raises:
        DynamicsInputError: if a pose is not a finite rigid 4x4 transform.
    """
    eta = _inverse_transform(checked_transform("goal", goal)) @ checked_transform("pose", pose)
    _, _, position_error, angle = _error_terms(eta.tolist(), 1.0, 1.0)
    return position_error, angle


def nearest_symmetric_goal(
    goal: npt.ArrayLike, current: npt.ArrayLike, fold: int = 4
) -> FloatArray:
    """The image of an SI goal under its ``fold``-fold symmetry nearest to ``current``.

    A standard interface mates in any of ``fold`` orientations about its normal (its z
    axis): the goal turned about its own z by ``2πk/fold`` for the ``k`` whose rotation is
    closest to ``current``'s. The position is the goal's.

    Args:
        goal: the SI's 4x4 world pose.
        current: the mating frame's current 4x4 world pose.
        fold: the order of the symmetry (>= 1; 1: no symmetry).

    Returns:
        A new 4x4 world pose.

    Raises:
        DynamicsInputError: if a pose is not a finite rigid transform or ``fold`` < 1.
    """
    if isinstance(fold, bool) or not isinstance(fold, int | np.integer) or fold < 1:
        raise DynamicsInputError("fold", fold, "must be a whole number >= 1")
    gd = checked_transform("goal", goal)
    g = checked_transform("current", current)
    # tr(R_zᵀ R_dᵀ R) for R_z = rotation by θ about z: cos θ (M00 + M11) + sin θ (M10 − M01)
    # + M22, with M = R_dᵀ R; maximised over θ = 2πk/fold.
    m = gd[:3, :3].T @ g[:3, :3]
    angles = 2.0 * np.pi * np.arange(int(fold)) / int(fold)
    scores = np.cos(angles) * (m[0, 0] + m[1, 1]) + np.sin(angles) * (m[1, 0] - m[0, 1])
    theta = float(angles[int(np.argmax(scores))])
    c, s = math.cos(theta), math.sin(theta)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    out = gd.copy()
    out[:3, :3] = gd[:3, :3] @ turn
    return out


@dataclass(frozen=True)
class _TaskData:
    """A task's goal and gains in the form the hot loop reads."""

    goal_inverse: FloatArray  # g_d⁻¹
    k_t: float  # 𝒦 [N/m]
    k_r: float  # K [N m/rad]
    damping: tuple[float, ...]  # diag(D) [N s/m x3, N m s/rad x3]
    null: float  # P [N m s/rad]


def _task_data(task: TaskFrame) -> _TaskData:
    g = task.gains
    return _TaskData(
        _inverse_transform(task.goal),
        g.k_n_per_m,
        g.k_nm_per_rad,
        (g.d_ns_per_m,) * 3 + (g.d_nms_per_rad,) * 3,
        g.null_nms_per_rad,
    )


class UnifiedImpedance:
    """Eq. 8 of seed 003 over a floating tree: one object for every morphology and operation.

    Args:
        tree: the robot's floating tree (``limbtree.robots.floating.floating_tree(spec)``).
        kinetic_energy: when an input carries no ``kinetic_energy_j``, compute KE from the
            tree's mass matrix (slower; for tests and telemetry) rather than leave W unknown.

    Example::

        controller = UnifiedImpedance(floating_tree(load_robot("mirror_arm")))
        latched = {"arm.E1": tile0_si}
        step = controller.step(ImpedanceInput(q, qdot, latched, [TaskFrame("arm.E2", goal)]))
        data.ctrl[:] = step.tau
    """

    def __init__(self, tree: FloatingTreeModel, *, kinetic_energy: bool = False) -> None:
        self.tree = tree
        self.n = int(tree.n)
        self.kinetic_energy = kinetic_energy
        self._frames = tuple(tree.frames)
        self._frame_set = frozenset(self._frames)
        self._task_cache: dict[int, tuple[TaskFrame, _TaskData]] = {}
        self._s_matrix = np.zeros((6 + self.n, self.n))
        self._s_matrix[6:] = np.eye(self.n)

    def _check_frames(self, latched: Mapping[str, FloatArray], tasks: Sequence[TaskFrame]) -> None:
        known = self._frame_set
        for frame in latched:
            if frame not in known:
                raise UnknownFrameError(frame, self._frames, "latched")
        for task in tasks:
            if task.frame not in known:
                raise UnknownFrameError(task.frame, self._frames, "task")

    def _data(self, task: TaskFrame) -> _TaskData:
        """A task's hot-loop form, kept while the same TaskFrame object comes back."""
        cache = self._task_cache
        hit = cache.get(id(task))
        if hit is None or hit[0] is not task:
            if len(cache) > 64:
                cache.clear()
            hit = (task, _task_data(task))
            cache[id(task)] = hit
        return hit[1]

    def _constraint(self, jac: FloatArray, k: int, latched: Sequence[str]) -> FloatArray:
        """Ψ_bq = Ψ_b⁺ Ψ_q (eq. 3) from the latched frames' Jacobians ``jac[:k]``.

        One latch: an LU solve of the square Ψ_b. Several: a Cholesky solve of the normal
        equations. A factorisation that fails, or whose smallest pivot is below a tolerance
        times its largest (``_RANK_TOL_LU``, ``_RANK_TOL_CHOLESKY``), means Ψ_b is
        (numerically) rank deficient: that raises, with the SVD rank.
        """
        n = self.n
        if k == 1:
            psi_b = jac[0, :, :6]
            factor, _, psi_bq, info = _dgesv(psi_b, jac[0, :, 6:])
            tolerance = _RANK_TOL_LU
        else:
            psi = jac[:k].reshape(6 * k, 6 + n)
            psi_b = psi[:, :6]
            factor, psi_bq, info = _dposv(psi_b.T @ psi_b, psi_b.T @ psi[:, 6:])
            tolerance = _RANK_TOL_CHOLESKY
        pivots = [abs(x) for x in factor.diagonal().tolist()]
        if info != 0 or min(pivots) <= tolerance * max(pivots):
            raise ConstraintRankError(int(np.linalg.matrix_rank(psi_b)), latched)
        result: FloatArray = psi_bq
        return result

    def step(self, inp: ImpedanceInput) -> ImpedanceStep:
        """Eq. 8: the joint torques for this state, latched set and task frames.

        Args:
            inp: the joint state, the latched frames' world poses and the task frames.

        Returns:
            The torques, the base's pose and twist, Φ̂, W and the per-task errors.

        Raises:
            ConstraintRankError: if no frame is latched (Ψ_b would have rank 0), or the
                latched frames' Jacobians do not fix the base.
            UnknownFrameError: for a latched or task frame the tree does not know.
            DynamicsInputError: if ``q``/``qdot`` do not have one value per joint of the tree.
        """
        n = self.n
        q, qdot = inp.q, inp.qdot
        if q.shape[0] != n:
            raise DynamicsInputError(
                "q", q, f"must have one value per joint of the tree ({n}), got {q.size}"
            )
        latched = inp.latched
        self._check_frames(latched, inp.tasks)
        if not latched:
            raise ConstraintRankError(0, ())
        names = tuple(latched)
        tasks = tuple(t for t in inp.tasks if t.frame not in latched)
        k, m = len(names), len(tasks)
        poses, jac = self.tree.frame_poses_and_jacobians(names + tuple(t.frame for t in tasks), q)
        # S = [−Ψ_bq; I]: [V_b; q̇] = S q̇ along the constraint (eq. 3), and T̃_f = [T_bf T_qf] S.
        s_matrix = self._s_matrix
        np.negative(self._constraint(jac, k, names), out=s_matrix[:6])
        base_twist = s_matrix[:6] @ qdot
        # The base's world pose G_0 g_0⁻¹, as the transpose of the solution X of g_0ᵀX = G_0ᵀ.
        base_pose = _dgesv(poses[0].T, latched[names[0]].T)[2].T

        errors: dict[str, tuple[float, float]] = {}
        potential = 0.0
        if m:
            t_tilde = jac[k:].reshape(6 * m, 6 + n) @ s_matrix  # T̃_f stacked, (6m, n)
            twists = t_tilde @ qdot  # V_f = T̃_f q̇ stacked
            world = base_pose @ poses[k:]
            twist_values = twists.tolist()
            # τ = T̃ᵀ z − Σ_f P_f q̇ with z_f = P_f y_f − γ_f − D_f V_f and
            # y_f = (T̃_fT̃_fᵀ + εI)⁻¹ V_f: eq. 8, its null-space term written through y_f.
            z: list[float] = []
            null_sum = 0.0
            for i, task in enumerate(tasks):
                d = self._data(task)
                gamma, phi, position_error, angle = _error_terms(
                    (d.goal_inverse @ world[i]).tolist(), d.k_t, d.k_r
                )
                potential += phi
                errors[task.frame] = (position_error, angle)
                t_f = t_tilde[6 * i : 6 * i + 6]
                gram = t_f @ t_f.T
                gram += _EPSILON_EYE6
                y = _dgesv(gram, twists[6 * i : 6 * i + 6])[2].tolist()
                p, v = d.null, twist_values[6 * i : 6 * i + 6]
                z += [p * y[j] - gamma[j] - d.damping[j] * v[j] for j in range(6)]
                null_sum += p
            tau = t_tilde.T @ z
            tau -= null_sum * qdot
        else:
            tau = -inp.null_nms_per_rad * qdot

        ke = inp.kinetic_energy_j
        if ke is None and self.kinetic_energy:
            velocity = np.concatenate((base_twist, qdot))
            ke = 0.5 * float(velocity @ self.tree.mass_matrix(q) @ velocity)
        tau.setflags(write=False)
        base_pose.setflags(write=False)
        base_twist.setflags(write=False)
        return ImpedanceStep(
            tau=tau,
            base_pose=base_pose,
            base_twist=base_twist,
            potential_j=potential,
            lyapunov_j=None if ke is None else ke + potential,
            errors=errors,
            constraint_rank=6,
            kinetic_energy_j=ke,
        )


__all__ = [
    "NULL_SPACE_DAMPING",
    "FloatingTreeModel",
    "ImpedanceGains",
    "ImpedanceInput",
    "ImpedanceStep",
    "TaskFrame",
    "UnifiedImpedance",
    "checked_transform",
    "nearest_symmetric_goal",
    "pose_error",
    "task_potential_and_wrench",
    "trusted_input",
]
