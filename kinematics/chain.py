"""Kinematic chains over roboticstoolbox: forward kinematics, seeded IK, Jacobians.

A :class:`KinematicChain` is the part of a robot description between a base link and an
end-effector link, compiled once into a roboticstoolbox elementary-transform sequence
(``ETS``) so that every call afterwards goes straight to rtb's C++ kernels. It is what a
limb agent runs each tick: ``fk`` to report the end-effector pose, ``ik`` to turn a pose
command into joint targets, ``jacobian`` and ``manipulability`` for the controllers.

Units are SI throughout: joint values in radians (revolute) or metres (prismatic), positions
in metres, poses in the chain's base frame (the frame of ``base_link``).

Example::

    chain = KinematicChain.from_urdf("heavy_limb.urdf", "mount", "ee_link")
    pose = chain.fk(chain.lower / 2)                    # Pose of ee_link in mount's frame
    result = chain.ik(pose, q0=chain.lower / 3, seed=0)  # IKResult(q, success, ...)

``limbtree.robots`` builds chains from its robot descriptions: ``load_robot(name).chain(limb)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import roboticstoolbox as rtb
from roboticstoolbox.ets import ET, ETS
from roboticstoolbox.ets.fknm import IK_LM_c

try:  # rtb's compiled forward kinematics, called without ETS.eval's per-call argument checks
    from roboticstoolbox._fknm_c import ETS_fkine as _fkine_c
except ImportError:  # pragma: no cover - a build of rtb without it: ETS.eval below
    _fkine_c = None
from roboticstoolbox.models.URDF.URDFRobot import URDF_read
from scipy.spatial.transform import Rotation

from limbtree.kinematics.errors import ChainError, JointCountError, UnknownLinkError
from limbtree.kinematics.pose import Pose, pose_of_rigid_transform

FloatArray = npt.NDArray[np.float64]

#: IK weights on all six Cartesian error components ``[x, y, z, rx, ry, rz]``.
FULL_MASK: Final[tuple[float, ...]] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
#: IK weights for position-only targets (3-joint legs): orientation is ignored.
POSITION_MASK: Final[tuple[float, ...]] = (1.0, 1.0, 1.0, 0.0, 0.0, 0.0)

_TWO_PI: Final = 2.0 * math.pi
#: Slack [rad] when wrapping a joint value by whole turns into its limits: the solver may stop
#: this far beyond a limit (on a solution at the limit) before the clip brings it back. The
#: clipped vector must still pass the residual test, so the slack never accepts a miss.
_WRAP_SLACK: Final = 1e-3
#: How many distinct IK masks a chain keeps checked (a limb uses one or two).
_MAX_MASKS: Final = 16


def _read_only(values: Any) -> FloatArray:
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def _pose_matrix(pose: Pose) -> FloatArray:
    """``pose.as_matrix()`` computed on Python floats: several times faster, for every tick."""
    x, y, z, w = pose.quaternion.tolist()
    px, py, pz = pose.position.tolist()
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w), px],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w), py],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y), pz],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def _lineage(link: Any) -> list[Any]:
    """An rtb link and every link above it, up to the root."""
    lineage = [link]
    while lineage[-1].parent is not None:
        lineage.append(lineage[-1].parent)
    return lineage


@dataclass(frozen=True, eq=False)
class IKResult:
    """The outcome of :meth:`KinematicChain.ik`.

    Attributes:
        q: ``(n,)`` joint values [rad or m], always inside the joint limits. On failure,
            ``q0`` clipped to the limits (rtb's solver does not return its last iterate when
            it fails), so a caller that moves to ``q`` anyway holds still.
        success: whether ``q`` reaches the target within the tolerance.
        residual: ``E = 1/2 e^T W e`` at ``q``, where ``e`` is the 6-vector of position
            error [m] and rotation-vector error [rad] and ``W = diag(mask)``: rtb's residual.
        iterations: Levenberg-Marquardt iterations, summed over all searches.
        searches: how many searches were started (the first from ``q0``, then restarts).
        beyond_limits: on failure, the joints (indices) that the search from ``q0``
            converged with outside their limits, even after wrapping whole turns: the nearby
            solution exists, but past these joints' limits. Empty on success, and when that
            search did not converge (a target out of reach, or a search stuck near a
            singularity).
    """

    q: FloatArray
    success: bool
    residual: float
    iterations: int
    searches: int
    beyond_limits: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "q", _read_only(self.q))
        object.__setattr__(self, "beyond_limits", tuple(int(i) for i in self.beyond_limits))


class KinematicChain:
    """The joints between a base link and an end-effector link of a robot description.

    Immutable once built: the limits and names are read-only and nothing is cached between
    calls. Build it with :meth:`from_urdf` (or
    :meth:`from_robot` for a roboticstoolbox model).

    The joint order is the order in which the joints are met walking from ``base_link`` to
    ``ee_link``. A chain may also run against the URDF tree (``base_link`` below
    ``ee_link``, e.g. a limb held by its tip); its joints then act with reversed sign in the
    sequence but keep the URDF's own joint values and limits.

    Args:
        ets: a roboticstoolbox elementary-transform sequence from ``base_link`` to
            ``ee_link``; its joints are renumbered ``0..n-1`` in sequence order.
        joint_names: one name per joint of ``ets``, in sequence order.
        base_link: name of the link whose frame the poses are expressed in.
        ee_link: name of the end-effector link.
        source: where the chain comes from (a file path), for messages.

    Raises:
        ChainError: if the sequence has no joints, a joint offset (rtb's C++ solver cannot
            use offsets), or not one name per joint.
    """

    __slots__ = (
        "_base_link",
        "_ee_link",
        "_ets",
        "_fknm",
        "_full_mask",
        "_joint_names",
        "_lower",
        "_masks",
        "_prefixes",
        "_revolute",
        "_sample_high",
        "_sample_low",
        "_source",
        "_upper",
    )

    def __init__(
        self,
        ets: ETS,
        joint_names: Sequence[str],
        *,
        base_link: str,
        ee_link: str,
        source: str = "",
    ) -> None:
        parts: list[Any] = []
        revolute: list[bool] = []
        lower: list[float] = []
        upper: list[float] = []
        for et in ets:
            if not et.isjoint:
                parts.append(et)
                continue
            if et.offset != 0:
                raise ChainError(
                    f"{source or 'chain'}: joint {len(revolute)} has an offset, which rtb's "
                    "C++ IK cannot use; fold the offset into the URDF joint origin"
                )
            qlim = et.qlim
            parts.append(getattr(ET, et.kind)(flip=et.isflip, qlim=qlim))
            revolute.append(bool(et.isrotation))
            lower.append(-math.inf if qlim is None else float(qlim[0]))
            upper.append(math.inf if qlim is None else float(qlim[1]))
        if not revolute:
            raise ChainError(f"{source or 'chain'}: no joint between {base_link!r} and {ee_link!r}")
        if len(joint_names) != len(revolute):
            raise ChainError(
                f"{source or 'chain'}: {len(joint_names)} joint names for {len(revolute)} joints"
            )
        self._ets = ETS(parts)
        # The compiled handle of the sequence, taken once: ik() calls rtb's C++ solver on it
        # directly, skipping ETS.ik_LM's per-call argument checks (they cost more than the
        # solve itself for a warm start).
        self._fknm = self._ets._fknm
        if self._fknm is None:
            raise ChainError(
                f"{source or 'chain'}: roboticstoolbox's compiled extension is not available "
                "for this chain, and ik() needs it"
            )
        self._joint_names = tuple(joint_names)
        self._base_link = base_link
        self._ee_link = ee_link
        self._source = source
        self._revolute = np.array(revolute, dtype=bool)
        self._revolute.setflags(write=False)
        self._lower = _read_only(lower)
        self._upper = _read_only(upper)
        # Restart configurations are drawn inside the limits, or in [-pi, pi] where a joint
        # has none (continuous joints).
        self._sample_low = _read_only(np.where(np.isfinite(lower), lower, -math.pi))
        self._sample_high = _read_only(np.where(np.isfinite(upper), upper, math.pi))
        # Private and writable: rtb's C++ binding refuses read-only arrays.
        self._full_mask = np.array(FULL_MASK)
        self._masks: dict[tuple[float, ...], FloatArray] = {}
        self._prefixes: list[Any] | None = None  # joint_positions' sub-chains, made on first use

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_urdf(cls, path: str | Path, base_link: str, ee_link: str) -> KinematicChain:
        """Load a chain from a URDF (or xacro) file.

        Args:
            path: the URDF file. Relative paths are taken from the current directory.
            base_link: the link whose frame poses are expressed in.
            ee_link: the end-effector link.

        Returns:
            The chain from ``base_link`` to ``ee_link``.

        Raises:
            ChainError: if the file is missing or cannot be parsed, or the chain has no
                joints.
            UnknownLinkError: if either link is not in the file; it lists the valid links.
        """
        # rtb reads relative paths from its own data folder, so always hand it an absolute one.
        resolved = Path(path).expanduser().resolve()
        if not resolved.is_file():
            raise ChainError(f"URDF file not found: {resolved}")
        try:
            elinks, name, _ = URDF_read(resolved)
            robot = rtb.Robot(elinks, name=name)
        except Exception as exc:  # rtb raises URDFError, ValueError, RuntimeError, ...
            raise ChainError(f"cannot load URDF {resolved}: {exc}") from exc
        return cls.from_robot(robot, base_link, ee_link, source=str(resolved))

    @classmethod
    def from_robot(
        cls, robot: rtb.Robot, base_link: str, ee_link: str, *, source: str = ""
    ) -> KinematicChain:
        """Build a chain from a roboticstoolbox robot, e.g. one of ``rtb.models``.

        Args:
            robot: the roboticstoolbox robot.
            base_link: the link whose frame poses are expressed in.
            ee_link: the end-effector link.
            source: where the robot comes from, for messages (default: the robot's name).

        Returns:
            The chain from ``base_link`` to ``ee_link``.

        Raises:
            UnknownLinkError: if either link is not in the robot; it lists the valid links.
            ChainError: if the chain has no joints.
        """
        source = source or f"robot {robot.name!r}"
        links = {link.name: link for link in robot.links}
        for name in (base_link, ee_link):
            if name not in links:
                raise UnknownLinkError(name, tuple(links), source)
        # Build the sequence from each link's own transform (parent frame -> link frame)
        # rather than with robot.ets(start, end): for a chain going down from a link that is
        # not the root, rtb 1.5 also includes the start link's own joint, so poses come out
        # in the start link's parent frame.
        up = _lineage(links[base_link])
        down = _lineage(links[ee_link])
        down_names = [link.name for link in down]
        common = next((link for link in up if link.name in down_names), None)
        if common is None:
            raise ChainError(f"{source}: {base_link!r} and {ee_link!r} are not connected")
        segments = [(link, link.ets.inv()) for link in up[: up.index(common)]]
        segments += [(link, link.ets) for link in reversed(down[: down_names.index(common.name)])]
        parts: list[Any] = []
        names: list[str] = []
        for link, segment in segments:
            for et in segment:
                parts.append(et)
                if et.isjoint:
                    # rtb keeps the URDF joint name on the joint's child link.
                    names.append(str(getattr(link, "_joint_name", None) or link.name))
        return cls(ETS(parts), names, base_link=base_link, ee_link=ee_link, source=source)

    # ------------------------------------------------------------------ description

    @property
    def n(self) -> int:
        """Number of joints."""
        return len(self._joint_names)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joint names from the base to the end-effector."""
        return self._joint_names

    @property
    def lower(self) -> FloatArray:
        """``(n,)`` lower joint limits [rad or m], read-only; ``-inf`` where unlimited."""
        return self._lower

    @property
    def upper(self) -> FloatArray:
        """``(n,)`` upper joint limits [rad or m], read-only; ``+inf`` where unlimited."""
        return self._upper

    @property
    def revolute(self) -> npt.NDArray[np.bool_]:
        """``(n,)`` True for revolute joints [rad], False for prismatic ones [m], read-only."""
        return self._revolute

    @property
    def base_link(self) -> str:
        """The link whose frame every pose of this chain is expressed in."""
        return self._base_link

    @property
    def ee_link(self) -> str:
        """The end-effector link."""
        return self._ee_link

    @property
    def source(self) -> str:
        """Where the chain was loaded from (a file path or a robot name)."""
        return self._source

    def __repr__(self) -> str:
        return (
            f"KinematicChain({self._base_link!r} -> {self._ee_link!r}, n={self.n}, "
            f"source={self._source!r})"
        )

    # ------------------------------------------------------------------ kinematics

    def fk_matrix(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Forward kinematics as a homogeneous transform.

        Args:
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(4, 4)`` transform of ``ee_link`` in the ``base_link`` frame [m].

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: if ``q`` holds NaN or infinity.
        """
        return self._fk_matrix(self._joint_vector(q, "q"))

    def fk_matrices(self, qs: Sequence[Sequence[float]] | FloatArray) -> FloatArray:
        """Forward kinematics of several joint vectors in one call.

        Args:
            qs: ``(m, n)`` joint vectors [rad or m], one per row.

        Returns:
            ``(m, 4, 4)`` transforms of ``ee_link`` in the ``base_link`` frame [m].

        Raises:
            JointCountError: if the rows do not have ``n`` values.
            ChainError: if ``qs`` holds NaN or infinity, or is not a 2-D array.
        """
        try:
            array = np.array(qs, dtype=np.float64, order="C")  # a writable copy, for rtb
        except (TypeError, ValueError) as exc:
            raise ChainError(f"qs must be rows of {self.n} numbers: {exc}") from None
        if array.ndim != 2:
            raise ChainError(f"qs must be a 2-D array of joint vectors, got shape {array.shape}")
        if array.shape[1] != self.n:
            raise JointCountError("qs", self.n, array.shape)
        if not np.isfinite(array).all():
            raise ChainError("qs contains NaN or infinity")
        if _fkine_c is None:  # pragma: no cover - see the import
            result: FloatArray = self._ets.eval(array)
            return result.reshape(len(array), 4, 4)
        many: FloatArray = _fkine_c(self._fknm, array, None, None, 1)
        return many.reshape(len(array), 4, 4)

    def _fk_matrix(self, q: FloatArray) -> FloatArray:
        """Forward kinematics of a checked, C-contiguous float64 joint vector (internal)."""
        if _fkine_c is None:  # pragma: no cover - see the import
            result: FloatArray = self._ets.eval(q)
            return result
        # ETS.eval costs about 12 us of argument checks around a 2 us computation. The
        # binding takes only writable arrays (it does not write to them).
        fast: FloatArray = _fkine_c(self._fknm, q if q.flags.writeable else q.copy(), None, None, 1)
        return fast

    def joint_positions(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Where the chain's joints are, for drawing it (a skeleton).

        Args:
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(n + 2, 3)`` positions in the ``base_link`` frame [m]: the base's origin, each
            joint's frame origin in order, then the end effector's.

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: if ``q`` holds NaN or infinity.
        """
        values = self._joint_vector(q, "q")
        if self._prefixes is None:
            self._prefixes = self._joint_prefixes()
        points = np.zeros((self.n + 2, 3))
        if _fkine_c is None:  # pragma: no cover - see the import
            for k, prefix in enumerate(self._prefixes, start=1):
                points[k] = prefix.eval(values[:k])[:3, 3]
        else:
            for k, prefix in enumerate(self._prefixes, start=1):
                # (a writable copy: rtb's binding refuses read-only arrays)
                points[k] = _fkine_c(prefix._fknm, values[:k].copy(), None, None, 1)[:3, 3]
        points[-1] = self._fk_matrix(values)[:3, 3]
        return points

    def _joint_prefixes(self) -> list[Any]:
        """Per joint, the sub-chain from the base up to and including that joint."""
        prefixes: list[Any] = []
        parts: list[Any] = []
        for et in self._ets:
            parts.append(et)
            if et.isjoint:
                prefixes.append(ETS(list(parts)))
        return prefixes

    def fk(self, q: Sequence[float] | FloatArray) -> Pose:
        """Forward kinematics: the end-effector pose in the base frame.

        Args:
            q: ``(n,)`` joint values [rad or m].

        Returns:
            Pose of ``ee_link`` in the ``base_link`` frame.

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: if ``q`` holds NaN or infinity.
        """
        # rtb's product of rigid transforms is a rigid transform, and the quaternion of its
        # rotation is unit by construction: skip the checks of from_matrix and of Pose.
        return pose_of_rigid_transform(self._fk_matrix(self._joint_vector(q, "q")))

    def jacobian(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Geometric Jacobian in the base frame.

        Args:
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(6, n)`` matrix mapping joint velocities to the end-effector's linear velocity
            [m/s] (rows 0-2) and angular velocity [rad/s] (rows 3-5), both expressed in the
            ``base_link`` frame.

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: if ``q`` holds NaN or infinity.
        """
        result: FloatArray = self._ets.jacob0(self._joint_vector(q, "q"))
        return result

    def manipulability(
        self, q: Sequence[float] | FloatArray, *, translational: bool | None = None
    ) -> float:
        """Yoshikawa manipulability ``w = sqrt(det(J J^T))`` (seed 004 eq. 5).

        ``w`` is the volume of the velocity ellipsoid: 0 at a singular posture, larger the
        further the chain is from one. A chain with fewer than six joints has a ``6 x 6``
        ``J J^T`` of rank below six, so its full ``w`` is always 0; for such chains (the
        3-joint legs) the translational block ``J_v`` (rows 0-2) is used instead, which
        measures how freely the end-effector *position* can move, the only thing a
        position-only limb controls.

        Args:
            q: ``(n,)`` joint values [rad or m].
            translational: use ``J_v`` (True) or the full ``J`` (False). The default, None,
                uses ``J_v`` when ``n < 6``.

        Returns:
            ``w``, >= 0. Its unit depends on the block and the joint kinds (m^3 for ``J_v``
            of a 3-joint revolute leg); compare it between postures of one chain.

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: if ``q`` holds NaN or infinity.
        """
        jac = self.jacobian(q)
        if translational is None:
            translational = self.n < 6
        block = jac[:3] if translational else jac
        det = float(np.linalg.det(block @ block.T))
        return math.sqrt(det) if det > 0.0 else 0.0

    def ik(
        self,
        target: Pose,
        q0: Sequence[float] | FloatArray,
        *,
        mask: Sequence[float] | FloatArray | None = None,
        tol: float = 1e-8,
        ilimit: int = 30,
        slimit: int = 10,
        seed: int | None = None,
        nearest: bool = False,
    ) -> IKResult:
        """Inverse kinematics with rtb's C++ Levenberg-Marquardt solver (``ik_LM``, Chan).

        The first search starts from ``q0``, so when the target is near the current pose the
        answer is the nearby solution (no jump to another branch). If that search fails or
        ends outside the joint limits, up to ``slimit - 1`` restarts follow from joint
        vectors drawn uniformly inside the limits by ``numpy.random.default_rng(seed)``.
        Revolute joints that end a full turn outside their limits are wrapped back in.
        The result depends only on the arguments: rtb's own random restarts (whose
        generator is global) are never used. For per-tick tracking pass ``slimit=1``.

        Joint limits are enforced by wrapping and clipping each converged search and
        checking the clipped vector's residual again; a pose that only several joints
        exactly on their limits can reach is therefore sometimes missed (about 1 in 150
        random such poses on the shipped 7-joint limbs, none 2 % inside the limits).

        Args:
            target: wanted pose of ``ee_link`` in the ``base_link`` frame.
            q0: ``(n,)`` initial joint values [rad or m], usually the current state.
            mask: six non-negative weights on the error ``[x, y, z, rx, ry, rz]``;
                :data:`POSITION_MASK` ignores orientation (3-joint legs). Default: all 1.
            tol: success threshold on the residual ``E = 1/2 e^T W e`` [m^2 or rad^2];
                ``1e-8`` is about 0.14 mm.
            ilimit: iterations per search.
            slimit: maximum number of searches, the first from ``q0`` included.
            seed: seed of the restart generator; None behaves as 0, so results never depend
                on global random state.
            nearest: when the search from ``q0`` fails, run every restart and return the
                solution nearest ``q0`` (largest joint difference) instead of the first
                found: a limb tracking a target should not swing to whichever branch a
                random restart happens to reach first.

        Returns:
            The solution, or ``q0`` clipped to the limits with ``success=False``.

        Raises:
            JointCountError: if ``q0`` does not have ``n`` values.
            ChainError: for a NaN in ``q0``, a bad mask, ``tol <= 0``, ``ilimit < 1`` or
                ``slimit < 1``.
        """
        q_start = self._joint_vector(q0, "q0")
        weights = self._mask(mask)
        if not tol > 0.0:
            raise ChainError(f"tol must be positive, got {tol!r}")
        if ilimit < 1 or slimit < 1:
            raise ChainError(f"ilimit and slimit must be at least 1, got {ilimit}, {slimit}")
        T_target = _pose_matrix(target)
        lower, upper = self._lower, self._upper
        rng: np.random.Generator | None = None
        iterations = 0
        best: tuple[float, FloatArray, float] | None = None  # (gap, q, residual), nearest
        beyond: tuple[int, ...] = ()  # joints the search from q0 needed past their limits
        for search in range(slimit):
            if search == 0:
                start = q_start
            else:
                if rng is None:
                    rng = np.random.default_rng(0 if seed is None else seed)
                start = rng.uniform(self._sample_low, self._sample_high)
            # One search per call (slimit=1): rtb's own restarts draw from a global generator.
            # The binding refuses read-only arrays, hence the copy of ``start``.
            q_found, success, n_iter, _, found_residual = IK_LM_c(
                self._fknm, T_target, np.array(start), ilimit, 1, tol, 0, weights, 1.0, "chan"
            )
            iterations += int(n_iter)
            if not success:
                # rtb returns a fresh random vector, not its last iterate, when a search fails.
                continue
            q = np.asarray(q_found, dtype=np.float64)
            residual = float(found_residual)
            if (q < lower).any() or (q > upper).any():
                # Outside the limits: wrap whole turns back in, clip what is left, and judge
                # the clipped vector by its own residual (it may still reach the target, e.g.
                # when the solution is on a limit and the solver stopped just beyond it).
                wrapped = self._wrap_into_limits(q)
                q = np.clip(wrapped, lower, upper)
                residual = self._residual(q, T_target, weights)
                if residual >= tol:
                    if search == 0:
                        outside = (wrapped < lower - _WRAP_SLACK) | (wrapped > upper + _WRAP_SLACK)
                        beyond = tuple(np.flatnonzero(outside).tolist())
                    continue
            if search == 0 or not nearest:
                return IKResult(q, True, residual, iterations, search + 1)
            gap = float(np.max(np.abs(q - q_start)))
            if best is None or gap < best[0]:
                best = (gap, q, residual)
        if best is not None:
            return IKResult(best[1], True, best[2], iterations, slimit)
        held = np.clip(q_start, lower, upper)
        with np.errstate(over="ignore"):  # (a target a world away: its residual is inf)
            residual = self._residual(held, T_target, weights)
        return IKResult(held, False, residual, iterations, slimit, beyond)

    def residual(
        self,
        q: Sequence[float] | FloatArray,
        target: Pose,
        *,
        mask: Sequence[float] | FloatArray | None = None,
    ) -> float:
        """The IK residual ``E = 1/2 e^T W e`` of ``q`` against ``target``.

        Args:
            q: ``(n,)`` joint values [rad or m].
            target: wanted pose of ``ee_link`` in the ``base_link`` frame.
            mask: six weights on ``[x, y, z, rx, ry, rz]`` (default all 1).

        Returns:
            ``E`` [m^2 or rad^2], with ``e`` the position error [m] and the rotation-vector
            error [rad], both in the base frame.

        Raises:
            JointCountError: if ``q`` does not have ``n`` values.
            ChainError: for NaN values or a bad mask.
        """
        return self._residual(self._joint_vector(q, "q"), _pose_matrix(target), self._mask(mask))

    # ------------------------------------------------------------------ helpers

    def _joint_vector(self, q: Sequence[float] | FloatArray, name: str) -> FloatArray:
        try:
            array = np.ascontiguousarray(q, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ChainError(f"{name} must be {self.n} numbers: {exc}") from None
        if array.shape != (self.n,):
            raise JointCountError(name, self.n, array.shape)
        if not np.isfinite(array).all():
            raise ChainError(f"{name} contains NaN or infinity: {array.tolist()}")
        return array

    def _mask(self, mask: Sequence[float] | FloatArray | None) -> FloatArray:
        if mask is None:
            return self._full_mask
        # A tracking limb passes the same mask every tick: checked once, kept by its values.
        key = tuple(mask.tolist()) if isinstance(mask, np.ndarray) else mask
        try:
            known = self._masks.get(key)  # type: ignore[arg-type]
        except TypeError:  # unhashable (a list): checked below every time
            known = None
        if known is not None:
            return known
        weights = self._checked_mask(mask)
        if isinstance(key, tuple) and len(self._masks) < _MAX_MASKS:
            self._masks[key] = weights
        return weights

    def _checked_mask(self, mask: Sequence[float] | FloatArray) -> FloatArray:
        try:
            weights = np.array(mask, dtype=np.float64)  # a writable copy, for rtb's C++ side
        except (TypeError, ValueError) as exc:
            raise ChainError(f"mask must be 6 numbers: {exc}") from None
        if weights.shape != (6,):
            raise ChainError(
                f"mask must be 6 weights on [x, y, z, rx, ry, rz], got shape {weights.shape}"
            )
        if not np.all(np.isfinite(weights)) or np.any(weights < 0) or not np.any(weights > 0):
            raise ChainError(
                f"mask weights must be finite, non-negative and not all 0, got {weights.tolist()}"
            )
        return weights

    def _wrap_into_limits(self, q: FloatArray) -> FloatArray:
        """Shift revolute joints that are outside their limits by whole turns, where it helps.

        A joint that lands within the slack below ``lower`` is kept there; the caller clips
        what is left and checks the residual.
        """
        outside = self._revolute & ((q < self._lower) | (q > self._upper))
        if not outside.any():
            return q
        with np.errstate(invalid="ignore"):
            turn = np.mod(q - self._lower, _TWO_PI)
            turn = np.where(turn > _TWO_PI - _WRAP_SLACK, turn - _TWO_PI, turn)
            shifted = self._lower + turn
        fits = outside & np.isfinite(shifted) & (shifted <= self._upper + _WRAP_SLACK)
        return np.where(fits, shifted, q)

    def _residual(self, q: FloatArray, T_target: FloatArray, weights: FloatArray) -> float:
        T = self._fk_matrix(np.ascontiguousarray(q, dtype=np.float64))
        error = np.empty(6)
        error[:3] = T_target[:3, 3] - T[:3, 3]
        error[3:] = Rotation.from_matrix(T_target[:3, :3] @ T[:3, :3].T).as_rotvec()
        return 0.5 * float(error @ (weights * error))
