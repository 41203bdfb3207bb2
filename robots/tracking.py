"""Turning limb commands into speed-limited joint setpoints: the numerics every driver shares.

A limb agent receives joint targets, end-effector poses and twists; the joints can only follow
a setpoint that moves no faster than their speed limits (seed 000 Table I). This module holds
that logic once, for every driver: :class:`~limbtree.robots.driver.HardwareDriver` (and so
the simulated limb, which is a hardware driver over a simulated bus) owns one
:class:`CommandTracker` and calls it each tick.

The tracker keeps a *reference*: the joint setpoint [rad or m] the limb should be at now. A
command sets a *goal*; each :meth:`CommandTracker.step` moves the reference towards the goal by
at most ``max_speed * dt`` per joint, all joints scaled together so that they arrive at the
same time (a straight line in joint space). The reference starts from the measured joints
and is reset to them by :meth:`CommandTracker.hold` (after a power loss, say).

Nothing here does I/O or keeps global state; time comes in as ``dt`` [s].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import InvalidPoseError
from limbtree.kinematics.pose import Pose
from limbtree.kinematics.so3 import quaternion_from_rotation_vector as quaternion_from_rotvec
from limbtree.robots.registry import LimbSpec, RobotSpec
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    Health,
    JointInfo,
    LimbDescription,
)

if TYPE_CHECKING:
    from limbtree.kinematics.chain import IKResult, KinematicChain

FloatArray = npt.NDArray[np.float64]

#: The command modes a position-controlled limb accepts (``JOINT_TORQUE`` is not one).
POSITION_MODES: Final[tuple[CommandMode, ...]] = (
    CommandMode.JOINT_POSITION,
    CommandMode.EE_POSE,
    CommandMode.EE_TWIST,
    CommandMode.HOLD,
)
#: Default number of IK searches per ``ee_pose`` command: one from the current joints, then
#: seeded restarts.
DEFAULT_IK_SEARCHES: Final = 3
#: How far [rad or m] a joint target may be outside the limits before it counts as clipped.
_CLIP_SLACK: Final = 1e-12


def speed_limited_step(
    q: FloatArray, target: FloatArray, max_step: FloatArray
) -> tuple[FloatArray, bool]:
    """One step from ``q`` towards ``target``, no joint moving more than its ``max_step``.

    All joints are scaled by the same factor, so the step keeps the direction of
    ``target - q`` (a straight line in joint space; for a small step, the end-effector's
    direction too). Joints whose ``max_step`` is 0 do not move, and do not hold back the
    others.

    Args:
        q: ``(n,)`` where the joints are [rad or m].
        target: ``(n,)`` where they should go [rad or m].
        max_step: ``(n,)`` largest move of each joint in this step [rad or m], >= 0.

    Returns:
        The new joint vector, and whether the step fell short of ``target`` (a joint was
        speed-limited or could not move).
    """
    # On Python floats: for a handful of joints this is several times faster than the
    # same arithmetic in numpy (it runs every tick), and gives the same floats.
    q_list = q.tolist()
    deltas: list[float] = []
    ratio = 0.0  # the largest |delta| / max_step; a NaN one wins, as in np.max
    stopped = False
    for q_i, target_i, step_i in zip(q_list, target.tolist(), max_step.tolist(), strict=True):
        if step_i > 0.0:
            delta = target_i - q_i
            share = abs(delta) / step_i  # inf for a subnormal step, as in numpy
            if share > ratio or math.isnan(share):
                ratio = share
        else:
            delta = 0.0
            if step_i <= 0.0 and target_i != q_i:  # a NaN step neither moves nor stops
                stopped = True
        deltas.append(delta)
    if ratio <= 1.0:
        ratio, limited = 1.0, stopped  # within every limit: the whole step (d / 1.0 == d)
    else:
        limited = True
    return np.array([q_i + d / ratio for q_i, d in zip(q_list, deltas, strict=True)]), limited


def rotated(pose: Pose, rotvec: FloatArray) -> FloatArray:
    """The quaternion of ``pose`` turned by a rotation vector [rad] given in the base frame.

    Returns:
        ``(4,)`` unit quaternion ``(qx, qy, qz, qw)`` of ``exp([rotvec]) R``.
    """
    turn = Pose(quaternion=quaternion_from_rotvec(rotvec))
    return (turn @ Pose(quaternion=pose.quaternion)).quaternion


def integrate_twist(pose: Pose, twist: FloatArray, dt: float) -> Pose:
    """Move a pose by a constant twist for ``dt``.

    Args:
        pose: the start pose, in the base frame.
        twist: ``[vx, vy, vz, wx, wy, wz]`` [m/s, rad/s], both in the base frame; the
            rotation turns the pose's frame about its own origin.
        dt: duration [s].

    Returns:
        ``p + v dt`` and ``exp([w] dt) R``.
    """
    return Pose(pose.position + twist[:3] * dt, rotated(pose, twist[3:] * dt))


@dataclass(frozen=True)
class _JointGoal:
    q: FloatArray


@dataclass(frozen=True)
class _TwistGoal:
    twist: FloatArray


class CommandTracker:
    """The speed-limited joint reference of one limb, driven by ``LimbDriver`` commands.

    Args:
        robot: the robot the limb belongs to.
        limb: the limb's name; None for a robot with a single limb.
        ik_searches: IK searches per ``ee_pose`` command (the first from the seed the
            driver gives, the joint setpoint, then seeded restarts inside the limits);
            small, so a command never blocks.
        ik_seed: seed of the IK restarts. The restarts of the k-th command use a seed derived
            from ``(ik_seed, k)``, so a run is deterministic and no global random state is
            touched.

    Raises:
        limbtree.robots.errors.UnknownLimbError: if the robot has no such limb.
        ValueError: if ``ik_searches < 1`` or ``ik_seed < 0``.
    """

    def __init__(
        self,
        robot: RobotSpec,
        limb: str | None = None,
        *,
        ik_searches: int = DEFAULT_IK_SEARCHES,
        ik_seed: int = 0,
    ) -> None:
        if ik_searches < 1:
            raise ValueError(f"ik_searches must be at least 1, got {ik_searches}")
        if ik_seed < 0:
            raise ValueError(f"ik_seed must be >= 0, got {ik_seed}")
        self.robot: Final[RobotSpec] = robot
        self.limb: Final[LimbSpec] = robot.limb(limb)
        self.chain: Final[KinematicChain] = robot.chain(self.limb.name)
        self._ik_searches = ik_searches
        self._ik_seed = ik_seed
        self._ik_count = 0
        self._mask = self.limb.ik_mask
        max_speed = np.array([joint.max_speed for joint in self.limb.joints], dtype=np.float64)
        max_speed.setflags(write=False)
        self._max_speed = max_speed
        self._lower = self.chain.lower
        self._upper = self.chain.upper
        self._reference: FloatArray | None = None
        # FK of the last joints ee_poses() was asked about: FK is the dearest part of a state.
        self._fk_joints: bytes | None = None
        self._fk_pose: tuple[float, ...] = ()
        self._goal: _JointGoal | _TwistGoal | None = None
        self._twist_pose: Pose | None = None
        self._mode = CommandMode.HOLD
        self._ik_failed = False
        self._clipped = False
        self._ik_residual: float | None = None

    # ------------------------------------------------------------------ description

    @property
    def n(self) -> int:
        """Number of joints."""
        return self.limb.n

    @property
    def max_speed(self) -> FloatArray:
        """``(n,)`` joint speed limits [rad/s or m/s], read-only."""
        return self._max_speed

    @property
    def reference(self) -> FloatArray | None:
        """The current joint setpoint [rad or m] (a copy), or None before the first hold."""
        return None if self._reference is None else self._reference.copy()

    @property
    def mode(self) -> CommandMode:
        """The mode of the goal being tracked (``hold`` when none)."""
        return self._mode

    def describe(self, driver: str) -> LimbDescription:
        """The limb's description, from the robot registry.

        Args:
            driver: the driver's name (``"sim"`` or a hardware driver's).
        """
        joints = tuple(
            JointInfo(joint.name, joint.lower, joint.upper, joint.max_speed)
            for joint in self.limb.joints
        )
        return LimbDescription(
            robot=self.robot.name,
            driver=driver,
            joints=joints,
            end_effectors=self.limb.end_effectors,
            command_modes=POSITION_MODES,
            has_gripper=bool(self.limb.grippers),
        )

    def health(self) -> Health:
        """``IK_FAILED`` and ``JOINT_LIMIT``, as the last commands left them."""
        flags = Health.OK
        if self._ik_failed:
            flags |= Health.IK_FAILED
        if self._clipped:
            flags |= Health.JOINT_LIMIT
        return flags

    def detail(self) -> dict[str, Any]:
        """Debugging figures: the tracked mode and the last IK residual."""
        detail: dict[str, Any] = {"mode": self._mode.value}
        if self._ik_residual is not None:
            detail["ik_residual"] = self._ik_residual
        return detail

    def ee_poses(self, q: FloatArray) -> dict[str, tuple[float, ...]]:
        """End-effector name -> ``[x, y, z, qx, qy, qz, qw]`` of FK at ``q``, base frame.

        FK runs again only when ``q`` changes (a limb at rest reports the same joints).
        """
        # Keyed by the bytes, not the values: 0.0 and -0.0 may give FK different zeros.
        joints = np.asarray(q, dtype=np.float64).tobytes()
        if joints != self._fk_joints:
            self._fk_pose = tuple(self.chain.fk(q).as_array().tolist())
            self._fk_joints = joints
        return {self.limb.ee_link: self._fk_pose}

    # ------------------------------------------------------------------ commands

    def joint_target(self, payload: Mapping[str, Any]) -> FloatArray:
        """Read ``q`` of a ``joint_position`` command and clip it to the joint limits.

        Sets :attr:`Health.JOINT_LIMIT` when it had to clip, clears it otherwise.

        Raises:
            DriverError: ``bad_value`` if ``q`` is missing, not ``n`` numbers, or not finite.
        """
        q = self._numbers(payload, "q", self.n, "one per joint, rad or m")
        clipped = np.clip(q, self._lower, self._upper)
        self._clipped = bool(np.any(np.abs(clipped - q) > _CLIP_SLACK))
        return clipped

    def ee_target(self, payload: Mapping[str, Any]) -> Pose:
        """Read ``ee`` and ``pose`` of an ``ee_pose`` command.

        Raises:
            DriverError: ``bad_value`` for an unknown end-effector or a pose that is not 7
                finite numbers with a unit quaternion.
        """
        self._end_effector(payload)
        values = self._numbers(payload, "pose", 7, "x, y, z [m], qx, qy, qz, qw")
        try:
            return Pose.from_array(values)
        except InvalidPoseError as exc:
            raise DriverError("bad_value", f"field 'pose': {exc}") from None

    def twist(self, payload: Mapping[str, Any]) -> FloatArray:
        """Read ``ee`` and ``twist`` of an ``ee_twist`` command.

        Raises:
            DriverError: ``bad_value`` for an unknown end-effector or a twist that is not 6
                finite numbers.
        """
        self._end_effector(payload)
        return self._numbers(payload, "twist", 6, "vx, vy, vz [m/s], wx, wy, wz [rad/s]")

    def solve_ik(self, target: Pose, q0: FloatArray) -> IKResult:
        """Seeded IK for an ``ee_pose`` command, starting from ``q0``.

        Args:
            target: the wanted end-effector pose, base frame.
            q0: ``(n,)`` where to start [rad or m]: the joint setpoint being tracked.

        Returns:
            The chain's :class:`~limbtree.kinematics.chain.IKResult`.
        """
        self._ik_count += 1
        # The first search starts from q0 and needs no seed; deriving the restarts' seed
        # costs about as much as that search, so it is done only when restarts are needed.
        # The search from q0 is deterministic: the result is the same as one call with every
        # search.
        first = self.chain.ik(target, q0, mask=self._mask, slimit=1)
        if first.success or self._ik_searches == 1:
            return first
        seed = int(np.random.SeedSequence([self._ik_seed, self._ik_count]).generate_state(1)[0])
        return self.chain.ik(
            target, q0, mask=self._mask, slimit=self._ik_searches, seed=seed, nearest=True
        )

    def ik_failed(self, residual: float) -> None:
        """Record an ``ee_pose`` command that had no IK solution: the goal does not change."""
        self._ik_failed = True
        self._ik_residual = residual

    def track_joints(self, target: FloatArray, mode: CommandMode, residual: float | None) -> None:
        """Make ``target`` the goal (a clipped ``joint_position`` or an IK solution).

        Args:
            target: ``(n,)`` joint goal [rad or m], inside the limits.
            mode: the command it came from, for :meth:`detail`.
            residual: the IK residual when it came from IK (clears ``IK_FAILED``), else None.
        """
        self._goal = _JointGoal(np.array(target, dtype=np.float64))
        self._mode = mode
        if residual is not None:
            self._ik_failed = False
            self._ik_residual = residual
            self._clipped = False

    def track_twist(self, twist: FloatArray) -> None:
        """Make a constant end-effector twist the goal, until the next command."""
        self._goal = _TwistGoal(np.array(twist, dtype=np.float64))
        self._twist_pose = None
        self._mode = CommandMode.EE_TWIST
        self._clipped = False

    def hold(self, q: FloatArray) -> None:
        """Stop at ``q`` (the measured joints): the reference and the goal both become ``q``."""
        self._reference = np.array(q, dtype=np.float64)
        self._goal = None
        self._mode = CommandMode.HOLD

    # ------------------------------------------------------------------ stepping

    def step(self, q_measured: FloatArray, dt: float) -> FloatArray:
        """Move the reference towards the goal for ``dt`` and return it.

        Args:
            q_measured: ``(n,)`` the measured joints [rad or m]; they start the reference
                when there is none yet.
            dt: time since the last step [s], >= 0.

        Returns:
            ``(n,)`` the new joint setpoint [rad or m] (a copy the caller may keep).
        """
        if self._reference is None:
            self.hold(q_measured)
        reference = self._reference
        if reference is None:  # pragma: no cover - hold() just set it
            raise RuntimeError("no joint reference")
        goal = self._goal
        max_step = self._max_speed * max(dt, 0.0)
        if isinstance(goal, _JointGoal):
            reference, _ = speed_limited_step(reference, goal.q, max_step)
        elif isinstance(goal, _TwistGoal) and dt > 0.0:
            reference = self._twist_step(reference, goal.twist, dt, max_step)
        self._reference = reference
        return reference.copy()

    def _twist_step(
        self, reference: FloatArray, twist: FloatArray, dt: float, max_step: FloatArray
    ) -> FloatArray:
        # The twist moves a pose target; IK from the reference follows it. When the joints
        # cannot keep up (speed limits, limits, singularity), the target is pulled back to
        # where the limb got, so an impossible twist does not wind up.
        start = self._twist_pose if self._twist_pose is not None else self.chain.fk(reference)
        target = integrate_twist(start, twist, dt)
        result = self.chain.ik(target, reference, mask=self._mask, slimit=1)
        if not result.success:
            self._twist_pose = self.chain.fk(reference)
            return reference
        stepped, limited = speed_limited_step(reference, result.q, max_step)
        self._twist_pose = self.chain.fk(stepped) if limited else target
        return stepped

    # ------------------------------------------------------------------ helpers

    def _end_effector(self, payload: Mapping[str, Any]) -> str:
        valid = self.limb.end_effectors
        ee = payload.get("ee", valid[0])
        if ee not in valid:
            raise DriverError(
                "bad_value", f"no end-effector {ee!r}; valid end-effectors: {', '.join(valid)}"
            )
        return str(ee)

    @staticmethod
    def _numbers(payload: Mapping[str, Any], name: str, length: int, what: str) -> FloatArray:
        value = payload.get(name)
        if value is None:
            raise DriverError("bad_value", f"missing field {name!r} ({length} numbers: {what})")
        try:
            array = np.array(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise DriverError(
                "bad_value", f"field {name!r} must be {length} numbers ({what}), got {value!r}"
            ) from None
        if array.shape != (length,):
            raise DriverError(
                "bad_value",
                f"field {name!r} must be {length} numbers ({what}), got shape {array.shape}",
            )
        if not _all_finite(array):
            raise DriverError("bad_value", f"field {name!r} holds NaN or infinity: {value!r}")
        return array


def joint_vector(values: Sequence[float] | FloatArray, n: int, name: str) -> FloatArray:
    """``values`` as a finite ``(n,)`` float array, or a ``DriverError``.

    Args:
        values: the joint values [rad or m].
        n: how many there must be.
        name: what they are, for the message.

    Raises:
        DriverError: ``internal`` when they are not ``n`` finite numbers (a driver bug).
    """
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise DriverError("internal", f"{name} is not numbers: {values!r}") from None
    if array.shape != (n,) or not _all_finite(array):
        raise DriverError(
            "internal", f"{name} must be {n} finite numbers, got {np.ravel(array).tolist()}"
        )
    return array


def _all_finite(array: FloatArray) -> bool:
    # On Python floats: for a few values, several times faster than np.isfinite(a).all().
    return all(map(math.isfinite, array.tolist()))


def finite_time(t: float, last: float | None) -> float:
    """Check a driver time: finite, and not before ``last``.

    Raises:
        DriverError: ``bad_value`` otherwise.
    """
    t = float(t)
    if not math.isfinite(t):
        raise DriverError("bad_value", f"time must be finite, got {t!r}")
    if last is not None and t < last:
        raise DriverError("bad_value", f"time went back from {last!r} s to {t!r} s")
    return t
