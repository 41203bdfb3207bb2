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
from collections.abc import Callable, Mapping, Sequence
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
#: Default number of IK searches per ``ee_pose`` substep: the one from the current joints.
#: Restarts from random joints almost always land on another branch, which the branch bound
#: refuses anyway, so by default there are none.
DEFAULT_IK_SEARCHES: Final = 1
#: How far [rad or m] a joint target may be outside the limits before it counts as clipped.
_CLIP_SLACK: Final = 1e-12
#: Longest substep [m] of the straight path an ``ee_pose`` command is followed along.
PATH_STEP_M: Final = 0.005
#: Largest turn [rad] of one such substep (3 degrees).
PATH_STEP_RAD: Final = math.radians(3.0)
#: Most substeps per command: a longer path is cut into this many longer substeps.
MAX_PATH_STEPS: Final = 100
#: The hard branch bound: the largest change [rad] of a revolute joint that IK may ask for
#: over one substep of the nominal size (:data:`PATH_STEP_M`, :data:`PATH_STEP_RAD`), 90
#: degrees. More is another branch of the inverse kinematics (a joint wrapped by a whole
#: turn, a flipped wrist) and is refused as ``IK_FAILED`` without looking further.
BRANCH_STEP_RAD: Final = math.radians(90.0)
#: The same for a prismatic joint [m].
BRANCH_STEP_M: Final = 0.1
#: How far [m] the end-effector may stray from a substep's straight path while the joints
#: move in a straight line to its solution; a solution that swings it further (a flipped
#: branch) is refused. Near a singularity a small substep needs a large joint step that
#: still keeps to the path (a straight leg's knee), so this, not the joint step, is the rule.
PATH_TOL_M: Final = 0.005
#: The same on rotation [rad] (3 degrees).
PATH_TOL_RAD: Final = math.radians(3.0)
#: The joint lines are checked every this many radians (or metres) of the largest joint step.
_CHECK_STEP: Final = math.radians(3.0)
_MAX_CHECKS: Final = 16
#: Most IK solves a speed-limited ``ee_twist`` step makes to stay on the twist's line.
_TWIST_SCALINGS: Final = 3
#: A scaled solve whose joints go this share of the way within their speed is taken.
_TWIST_NEAR: Final = 0.999
#: A joint this close [rad or m] to a limit is named as "at its limit" in IK failures.
NEAR_LIMIT: Final = math.radians(2.0)
#: An ``ee_twist`` step moving farther than this in one control period [m] is not followed.
TWIST_STEP_MAX_M: Final = 1.0e6
#: An ``ee_twist`` step turning more than this in one control period [rad] is not followed.
TWIST_STEP_MAX_RAD: Final = 1.0e6
#: Why an ``ee_twist`` stopped (``detail.ik_failure`` while ``IK_FAILED`` says so).
TWIST_STOPPED: Final = (
    "the twist leads where the limb cannot follow (no IK solution next to its joints: a joint "
    "limit, a singularity, out of reach, or a step too long for one control period): it stops "
    "where it got"
)


def _followable_step(twist: FloatArray, dt: float) -> bool:
    """Whether a twist's step over ``dt`` is one a limb could follow at all.

    Args:
        twist: ``[vx, vy, vz, wx, wy, wz]`` [m/s, rad/s].
        dt: duration of the step [s].

    Returns:
        False when the step moves more than :data:`TWIST_STEP_MAX_M` or turns more than
        :data:`TWIST_STEP_MAX_RAD` (no limb reaches that far in one control period; and
        beyond float range the step is no number at all).
    """
    move = 0.0
    turn = 0.0
    for i in range(3):
        move = max(move, abs(float(twist[i])) * dt)
        turn = max(turn, abs(float(twist[i + 3])) * dt)
    # (Each component bounded: their norm is at most sqrt(3) times the largest, no overflow.)
    return move <= TWIST_STEP_MAX_M and turn <= TWIST_STEP_MAX_RAD


def _share_reached(q: FloatArray, stepped: FloatArray, target: FloatArray) -> float:
    """The share of the way from ``q`` to ``target`` that ``stepped`` went (0 to 1).

    For a step of :func:`speed_limited_step` (every joint moved by the same share; joints
    that could not move left out): read on the joint with the largest move asked.
    """
    delta = np.abs(target - q)
    moved = np.abs(stepped - q)
    largest = int(np.argmax(np.where(moved > 0.0, delta, 0.0)))
    if delta[largest] <= 0.0:
        return 0.0
    return float(min(1.0, moved[largest] / delta[largest]))


def clip_to_limits(q: FloatArray, lower: FloatArray, upper: FloatArray) -> tuple[FloatArray, bool]:
    """A joint target clipped onto the joint limits, and whether it had to be.

    The rule of every plant's ``joint_position`` (flag ``JOINT_LIMIT`` when it clips).

    Args:
        q: ``(n,)`` the joint target [rad or m], finite.
        lower: ``(n,)`` the lower limits [rad or m] (``-inf`` for none).
        upper: ``(n,)`` the upper limits [rad or m] (``inf`` for none).

    Returns:
        The target inside ``[lower, upper]``, and True when some joint was further than
        :data:`_CLIP_SLACK` outside.
    """
    clipped = np.clip(q, lower, upper)
    return clipped, bool(np.any(np.abs(clipped - q) > _CLIP_SLACK))


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
class _PathGoal:
    """Joint waypoints followed in order, each a straight line in joint space."""

    waypoints: tuple[FloatArray, ...]


@dataclass(frozen=True)
class _TwistGoal:
    twist: FloatArray


class _StraightPath:
    """The straight path from ``start`` to ``end``, as the clamp's trajectory (seed 000 eq. 6).

    LERP on position and SLERP on the short arc of rotation; on Python floats, for every
    command.
    """

    __slots__ = ("angle", "distance", "p0", "p1", "q0", "q1")

    def __init__(self, start: Pose, end: Pose) -> None:
        self.p0 = start.position.tolist()
        self.p1 = end.position.tolist()
        self.distance = math.dist(self.p0, self.p1)
        self.q0 = start.quaternion.tolist()
        q1 = end.quaternion.tolist()
        dot = sum(a * b for a, b in zip(self.q0, q1, strict=True))
        if dot < 0.0:  # the short arc
            q1, dot = [-b for b in q1], -dot
        self.q1 = q1
        self.angle = 2.0 * math.acos(min(1.0, dot))  # the rotation between them [rad]

    def position(self, t: float) -> list[float]:
        """The position at ``t`` in [0, 1]: x, y, z [m]."""
        return [a + t * (b - a) for a, b in zip(self.p0, self.p1, strict=True)]

    def quaternion(self, t: float) -> list[float]:
        """The unit quaternion at ``t`` in [0, 1]: qx, qy, qz, qw."""
        half = 0.5 * self.angle
        if half < 1e-9:
            quaternion = [a + t * (b - a) for a, b in zip(self.q0, self.q1, strict=True)]
        else:
            wa = math.sin((1.0 - t) * half) / math.sin(half)
            wb = math.sin(t * half) / math.sin(half)
            quaternion = [wa * a + wb * b for a, b in zip(self.q0, self.q1, strict=True)]
        norm = math.sqrt(sum(c * c for c in quaternion))
        return [c / norm for c in quaternion]

    def __call__(self, t: float) -> Pose:
        return Pose(np.array(self.position(t)), np.array(self.quaternion(t)))


def _rotation_rows(quaternion: Sequence[float]) -> tuple[tuple[float, ...], ...]:
    """The rotation matrix of a unit quaternion (qx, qy, qz, qw) as rows of Python floats.

    The formula of :attr:`Pose.rotation`.
    """
    x, y, z, w = quaternion
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


@dataclass(frozen=True, eq=False)
class PathPlan:
    """The joint path of an ``ee_pose`` command, from :meth:`CommandTracker.plan_path`.

    Attributes:
        waypoints: on success, the IK solution of every substep of the straight end-effector
            path from the joint reference's pose to the target, in order [rad or m]; the
            last reaches the target. Empty on failure.
        success: whether every substep has a solution on the limb's branch.
        residual: the IK residual of the last solution, or of the failed substep's search.
        searches: IK searches run, over every substep.
        reason: why the plan failed, for a person (names the joint at or near its limit);
            empty on success.
        joint: the joint at or near its limit that stopped the path, or None.
    """

    waypoints: tuple[FloatArray, ...]
    success: bool
    residual: float
    searches: int
    reason: str = ""
    joint: str | None = None


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
        self._goal: _JointGoal | _PathGoal | _TwistGoal | None = None
        self._twist_pose: Pose | None = None
        self._mode = CommandMode.HOLD
        self._ik_failed = False
        self._ik_reason = ""
        self._clipped = False
        self._ik_residual: float | None = None
        self._rotation_matters = self._mask is None or any(w > 0.0 for w in self._mask[3:])
        self._branch_step = np.where(self.chain.revolute, BRANCH_STEP_RAD, BRANCH_STEP_M)
        self._branch_step.setflags(write=False)

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
        """Debugging figures: the tracked mode and the last IK residual.

        While ``IK_FAILED`` is set, also why (``ik_failure``: which joint is at or near its
        limit).
        """
        detail: dict[str, Any] = {"mode": self._mode.value}
        if self._ik_residual is not None:
            detail["ik_residual"] = self._ik_residual
        if self._ik_failed and self._ik_reason:
            detail["ik_failure"] = self._ik_reason
        return detail

    def ee_poses(self, q: FloatArray) -> dict[str, tuple[float, ...]]:
        """End-effector name -> ``[x, y, z, qx, qy, qz, qw]`` of FK at ``q``, base frame.

        FK runs again only when ``q`` changes (a limb at rest reports the same joints).
        """
        # Keyed by the bytes, not the values: 0.0 and -0.0 may give FK different zeros.
        joints = np.asarray(q, dtype=np.float64).tobytes()
        if joints != self._fk_joints:
            self._fk_pose = tuple(self.chain.fk(q).as_list())
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
        clipped, self._clipped = clip_to_limits(q, self._lower, self._upper)
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

    def plan_path(
        self,
        target: Pose,
        q0: FloatArray,
        solve: Callable[[Pose, FloatArray], IKResult] | None = None,
    ) -> PathPlan:
        """The joint path that keeps the end-effector on the straight path to ``target``.

        The path from FK of ``q0`` to ``target`` (LERP on position, SLERP on the short arc
        of rotation: the clamp's trajectory, ``docs/clamp.md``) is cut into substeps of at
        most :data:`PATH_STEP_M` and :data:`PATH_STEP_RAD` (at most :data:`MAX_PATH_STEPS`
        of them). Each substep's IK starts from the previous solution, and is accepted only
        on the limb's branch: no joint may move more than the hard bound
        (:data:`BRANCH_STEP_RAD`, :data:`BRANCH_STEP_M`, scaled up with the substep when a
        long path has longer ones), and the joints' straight line to it must keep the
        end-effector within :data:`PATH_TOL_M` (and :data:`PATH_TOL_RAD`) of the substep's
        path. A substep without such a solution (the joint limits or
        the reach end the path there, or IK found only another branch) fails the plan.

        Args:
            target: the wanted end-effector pose, base frame.
            q0: ``(n,)`` where the path starts [rad or m]: the joint setpoint being tracked.
            solve: the IK of one substep, ``solve(pose, seed) -> IKResult``; default
                :meth:`solve_ik` (a driver passes its own, which may raise ``DriverError``).

        Returns:
            The plan: every substep's joints, or why it failed and at which joint.
        """
        solve = self.solve_ik if solve is None else solve
        q0 = np.asarray(q0, dtype=np.float64)
        path = _StraightPath(self.chain.fk(q0), target)
        length = path.distance / PATH_STEP_M
        if self._rotation_matters:
            length = max(length, path.angle / PATH_STEP_RAD)
        steps = min(MAX_PATH_STEPS, max(1, math.ceil(length - 1e-9)))
        bound = self._branch_step * max(1.0, length / steps)
        searches = 0
        if steps > 1:
            # The usual command (a clamped step of a move) is short and smooth: one search
            # for the target itself, kept when it passes the same two checks as a substep
            # over the whole path (joint-step bound, tip along the path at points spaced by
            # the joints' motion), costs one IK instead of one per substep.
            direct = solve(target, q0)
            searches += direct.searches
            if (
                direct.success
                and not np.any(np.abs(direct.q - q0) > self._branch_step * max(1.0, length))
                and self._keeps_to(path, 0.0, 1.0, q0, direct.q)
            ):
                only = np.array(direct.q, dtype=np.float64)
                return PathPlan((only,), True, direct.residual, searches)
        waypoints: list[FloatArray] = []
        q = q0
        residual = 0.0
        for k in range(1, steps + 1):
            sub = target if k == steps else path(k / steps)
            result = solve(sub, q)
            searches += result.searches
            residual = result.residual
            if not result.success:
                reason, joint = self._no_solution(result, q, k, steps)
                return PathPlan((), False, residual, searches, reason, joint)
            jump = np.abs(result.q - q)
            capped = bool(np.any(jump > bound))
            if capped or not self._keeps_to(path, (k - 1) / steps, k / steps, q, result.q):
                why = "past the joint-step bound" if capped else "swinging the tip off the path"
                reason, joint = self._branch_jump(jump / bound, jump, q, k, steps, why)
                return PathPlan((), False, residual, searches, reason, joint)
            q = result.q
            waypoints.append(np.array(q, dtype=np.float64))
        return PathPlan(tuple(waypoints), True, residual, searches)

    def ik_failed(self, residual: float, reason: str = "") -> None:
        """Record an ``ee_pose`` command that had no IK solution: the goal does not change.

        Args:
            residual: the failed search's residual (inf when unknown).
            reason: why, for a person (shown in the state's ``detail`` as ``ik_failure``).
        """
        self._ik_failed = True
        self._ik_residual = residual
        self._ik_reason = reason

    def track_path(self, plan: PathPlan, mode: CommandMode) -> None:
        """Make a successful plan's waypoints the goal, followed in order.

        Args:
            plan: a plan from :meth:`plan_path` with ``success``.
            mode: the command it came from, for :meth:`detail`.

        Raises:
            ValueError: if the plan failed (it has no waypoints).
        """
        if not plan.success or not plan.waypoints:
            raise ValueError("only a successful plan can be tracked")
        self._goal = _PathGoal(plan.waypoints)
        self._mode = mode
        self._ik_failed = False
        self._ik_reason = ""
        self._ik_residual = plan.residual
        self._clipped = False

    def track_joints(self, target: FloatArray, mode: CommandMode, residual: float | None) -> None:
        """Make ``target`` the goal (a clipped ``joint_position`` or an IK solution).

        Args:
            target: ``(n,)`` joint goal [rad or m], inside the limits.
            mode: the command it came from, for :meth:`detail`.
            residual: the IK residual when it came from IK (clears ``IK_FAILED``), else None.
        """
        self._goal = _JointGoal(np.array(target, dtype=np.float64))
        self._mode = mode
        self._forget_twist_failure()
        if residual is not None:
            self._ik_failed = False
            self._ik_reason = ""
            self._ik_residual = residual
            self._clipped = False

    def track_twist(self, twist: FloatArray) -> None:
        """Make a constant end-effector twist the goal, until the next command."""
        self._goal = _TwistGoal(np.array(twist, dtype=np.float64))
        self._twist_pose = None
        self._mode = CommandMode.EE_TWIST
        self._clipped = False
        self._forget_twist_failure()

    def hold(self, q: FloatArray) -> None:
        """Stop at ``q`` (the measured joints): the reference and the goal both become ``q``.

        A joint measured past a limit (a limb pushed or fallen there while its power was
        off, a reading at the edge of its range) is not held there: the goal is ``q``
        clipped onto the limits, which the reference reaches from ``q`` at the joints' speed
        limits (no jump), and ``JOINT_LIMIT`` is set until the next command. So the targets
        written after a hold only ever come back towards the limits, never stay past them.
        """
        reference = np.array(q, dtype=np.float64)
        inside, self._clipped = clip_to_limits(reference, self._lower, self._upper)
        self._reference = reference
        self._goal = _JointGoal(inside) if self._clipped else None
        self._mode = CommandMode.HOLD
        self._forget_twist_failure()

    def _forget_twist_failure(self) -> None:
        """A new goal: a twist that stopped (``IK_FAILED``) is no longer being followed."""
        if self._ik_failed and self._ik_reason == TWIST_STOPPED:
            self._ik_failed = False
            self._ik_reason = ""

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
        elif isinstance(goal, _PathGoal):
            reference = self._path_step(reference, goal, max_step)
        elif isinstance(goal, _TwistGoal) and dt > 0.0:
            reference = self._twist_step(reference, goal.twist, dt, max_step)
        self._reference = reference
        return reference.copy()

    def _path_step(
        self, reference: FloatArray, goal: _PathGoal, max_step: FloatArray
    ) -> FloatArray:
        # Along the waypoints, each at the joints' common pace (as speed_limited_step), the
        # time left after reaching one carried on to the next.
        waypoints = goal.waypoints
        moving = max_step > 0.0
        if not moving.any():
            return reference
        left = 1.0  # the share of this step's time not yet used
        reached = 0
        for waypoint in waypoints:
            delta = waypoint - reference
            need = float(np.max(np.abs(delta[moving]) / max_step[moving]))
            if need <= left:
                reference = np.where(moving, waypoint, reference)
                left -= need
                reached += 1
                if left <= 0.0:
                    break
                continue
            reference, _ = speed_limited_step(reference, waypoint, max_step * left)
            break
        if reached:
            rest = waypoints[reached:]
            self._goal = _PathGoal(rest) if rest else _JointGoal(waypoints[-1])
        return reference

    def _no_solution(
        self, result: IKResult, q: FloatArray, k: int, steps: int
    ) -> tuple[str, str | None]:
        names = self.chain.joint_names
        where = self._where(k, steps)
        if result.beyond_limits:
            i = result.beyond_limits[0]
            return (
                f"{where}the solution needs {names[i]} past its {self._side(q, i)} limit "
                f"({self._limit_text(q, i)})",
                names[i],
            )
        near = self._near_limit(q)
        if near is not None:
            return (
                f"{where}no IK solution with {names[near]} at its {self._side(q, near)} limit "
                f"({self._limit_text(q, near)})",
                names[near],
            )
        return f"{where}no IK solution: the target is out of reach or past a singularity", None

    def _branch_jump(
        self, share: FloatArray, jump: FloatArray, q: FloatArray, k: int, steps: int, why: str
    ) -> tuple[str, str | None]:
        names = self.chain.joint_names
        i = int(np.argmax(share))
        unit = math.degrees(float(jump[i])) if self.chain.revolute[i] else float(jump[i])
        size = f"{unit:.0f} deg" if self.chain.revolute[i] else f"{unit * 1e3:.0f} mm"
        text = (
            f"{self._where(k, steps)}IK found only a solution on another branch "
            f"({names[i]} would move {size} in one step, {why})"
        )
        near = self._near_limit(q)
        if near is None:
            return text, names[i]
        return (
            f"{text}; {names[near]} is at its {self._side(q, near)} limit "
            f"({self._limit_text(q, near)})",
            names[near],
        )

    def _keeps_to(
        self, path: _StraightPath, t0: float, t1: float, q0: FloatArray, q1: FloatArray
    ) -> bool:
        """Whether the joint line from ``q0`` to ``q1`` keeps the end-effector on the path.

        Checked at points along the line (every :data:`_CHECK_STEP` of the largest joint
        step, at least its middle): each must be within :data:`PATH_TOL_M` of the path's
        segment from ``t0`` to ``t1``, and, when rotation matters, within
        :data:`PATH_TOL_RAD` plus half the segment's turn of its middle rotation. The
        points' forward kinematics is one call; the rest is on Python floats (a few points
        of 3-vectors and 3x3 matrices: numpy's per-call cost would be most of the work).
        """
        delta = q1 - q0
        largest = max(map(abs, delta.tolist()))
        checks = min(_MAX_CHECKS, max(1, math.ceil(largest / _CHECK_STEP)))
        shares = np.arange(1, checks + 1, dtype=np.float64) / (checks + 1)
        transforms = self.chain.fk_matrices(q0 + shares[:, None] * delta).tolist()
        ax, ay, az = path.position(t0)
        bx, by, bz = path.position(t1)
        abx, aby, abz = bx - ax, by - ay, bz - az
        span = abx * abx + aby * aby + abz * abz
        tolerance = PATH_TOL_M * PATH_TOL_M
        for transform in transforms:
            px, py, pz = transform[0][3] - ax, transform[1][3] - ay, transform[2][3] - az
            u = 0.0 if span == 0.0 else min(max((px * abx + py * aby + pz * abz) / span, 0.0), 1.0)
            ox, oy, oz = px - u * abx, py - u * aby, pz - u * abz
            if ox * ox + oy * oy + oz * oz > tolerance:
                return False
        if not self._rotation_matters:
            return True
        # The angle of M^T R at each point (M the middle rotation): atan2(|axis|, trace - 1),
        # exact near 0.
        m = _rotation_rows(path.quaternion((t0 + t1) / 2.0))
        turn = 0.5 * (t1 - t0) * path.angle + PATH_TOL_RAD
        (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = m
        for (r00, r01, r02, _), (r10, r11, r12, _), (r20, r21, r22, _), _ in transforms:
            # relative = M^T R: its trace and its antisymmetric part (the axis)
            trace = (
                m00 * r00 + m10 * r10 + m20 * r20
                + m01 * r01 + m11 * r11 + m21 * r21
                + m02 * r02 + m12 * r12 + m22 * r22
            )  # fmt: skip
            sx = (m02 * r01 + m12 * r11 + m22 * r21) - (m01 * r02 + m11 * r12 + m21 * r22)
            sy = (m00 * r02 + m10 * r12 + m20 * r22) - (m02 * r00 + m12 * r10 + m22 * r20)
            sz = (m01 * r00 + m11 * r10 + m21 * r20) - (m00 * r01 + m10 * r11 + m20 * r21)
            if not math.atan2(math.sqrt(sx * sx + sy * sy + sz * sz), trace - 1.0) <= turn:
                return False
        return True

    @staticmethod
    def _where(k: int, steps: int) -> str:
        return "" if steps == 1 else f"after {k - 1}/{steps} of the path, "

    def _near_limit(self, q: FloatArray) -> int | None:
        gap = np.minimum(q - self._lower, self._upper - q)
        i = int(np.argmin(gap))
        return i if float(gap[i]) <= NEAR_LIMIT else None

    def _side(self, q: FloatArray, i: int) -> str:
        return "lower" if q[i] - self._lower[i] < self._upper[i] - q[i] else "upper"

    def _limit_text(self, q: FloatArray, i: int) -> str:
        limit = self._lower[i] if self._side(q, i) == "lower" else self._upper[i]
        if self.chain.revolute[i]:
            return f"{math.degrees(float(limit)):.1f} deg"
        return f"{float(limit):.3f} m"

    def _twist_step(
        self, reference: FloatArray, twist: FloatArray, dt: float, max_step: FloatArray
    ) -> FloatArray:
        # The twist moves a pose target; IK from the reference follows it. When the joints
        # cannot keep up (speed limits, limits, singularity), the target is pulled back to
        # where the limb got, so an impossible twist does not wind up.
        start = self._twist_pose if self._twist_pose is not None else self.chain.fk(reference)
        if not _followable_step(twist, dt):
            # (A finite twist of 1e300 m/s or rad/s overflowed into inf on its way to the
            # IK: a math domain error, which the driver took for a failing bus.)
            self._twist_pose = self.chain.fk(reference)
            self._ik_failed = True
            self._ik_reason = TWIST_STOPPED
            return reference
        target = integrate_twist(start, twist, dt)
        result = self.chain.ik(target, reference, mask=self._mask, slimit=1)
        if not result.success or bool(np.any(np.abs(result.q - reference) > self._branch_step)):
            # No solution, or only one on another branch: stop at the edge, on this branch,
            # and say so (IK_FAILED) until the twist can be followed again.
            self._twist_pose = self.chain.fk(reference)
            self._ik_failed = True
            self._ik_reason = TWIST_STOPPED
            return reference
        if self._ik_failed:
            self._ik_failed = False
            self._ik_reason = ""
        stepped, limited = speed_limited_step(reference, result.q, max_step)
        if not limited:
            self._twist_pose = target
            return stepped
        # The joints cannot keep up: go as far along the twist's own line as they can in
        # this step (the twist scaled down), not along the joint line towards the full
        # step's solution, which leaves the line by a little each step (the target then
        # pulled back to where the limb got, those bits added up: 9 mm across in 280 mm
        # at 3 m/s).
        # (The line's joints are not the joint line's: a few solves, each time scaled by
        # the share of the step the joints made, until one is within their speed.)
        share = 1.0
        solution = result.q
        for _ in range(_TWIST_SCALINGS):
            share *= _share_reached(reference, stepped, solution)
            scaled = integrate_twist(start, twist, dt * share)
            again = self.chain.ik(scaled, reference, mask=self._mask, slimit=1)
            jump = np.abs(again.q - reference) > self._branch_step
            if not again.success or bool(np.any(jump)):
                break
            solution = again.q
            stepped, limited = speed_limited_step(reference, solution, max_step)
            if not limited or _share_reached(reference, stepped, solution) >= _TWIST_NEAR:
                # (a hair short of the line's point: the target stays on the line, and the
                # next step aims at it from here; nothing adds up)
                self._twist_pose = scaled
                return stepped
        self._twist_pose = self.chain.fk(stepped)
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
