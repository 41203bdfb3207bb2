"""Limbs as behaviours see them: world-frame state and commands over a limb client.

A behaviour never knows whether its limb is simulated, local or remote: it reads the latest
state (or None when it cannot be used) and sends commands, and :class:`LimbHandle` turns those
into the agent protocol's base-frame messages through the limb's client.

A state can be used when it is fresh and the limb's health does not say it is no reading of
the limb (:data:`UNREADABLE`: powered off, disassembled, whose last state stays frozen where
the limb was). This is the one rule every skill reads limbs by (:attr:`LimbHandle.fresh`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from limbtree.errors import LimbtreeError
from limbtree.kinematics import Pose
from limbtree.skills import LimbDown
from limbtree.transport.driver import CommandMode, GripperAction, Health, LimbDescription, LimbState
from limbtree.transport.plant import BaseState
from limbtree.trees.claims import LimbClaims

if TYPE_CHECKING:  # (importing it loads roboticstoolbox)
    from limbtree.kinematics import KinematicChain

FloatArray = npt.NDArray[np.float64]

#: The health flags that make a limb's state no reading of the limb: its last state stays
#: frozen where the limb was while the limb itself falls (power off), is gone (disassembled),
#: or cannot be read (a hardware limb whose bus fails: its agent republishes the last reading).
UNREADABLE: Final = Health.POWER_OFF | Health.DISASSEMBLED | Health.BUS_FAULT
_UNREADABLE: Final = int(UNREADABLE)

#: What a limb is under each of :data:`UNREADABLE`'s flags, and the injected fault (its
#: ``detail["faults"]`` name) that would be the cause (none for a real bus's failure).
_DOWN: Final = (
    (Health.POWER_OFF, "powered off", "power_off"),
    (Health.DISASSEMBLED, "disassembled", "disassembly"),
    (Health.BUS_FAULT, "without joint readings (its bus fails)", ""),
)


class LimbLink(Protocol):
    """What a :class:`LimbHandle` needs from a limb client (``limbtree.transport``)."""

    @property
    def state(self) -> LimbState | None:
        """The latest state received, or None before the first."""

    @property
    def is_stale(self) -> bool:
        """Whether the state is older than the client's staleness limit."""

    @property
    def disassembled(self) -> bool:
        """Whether the agent said the limb is disassembled (sim clock)."""

    def send_command(self, mode: CommandMode, **fields: Any) -> bool:
        """Queue a command without blocking; False if it had to be dropped."""

    def send_gripper(self, action: GripperAction) -> bool:
        """Queue a gripper request without blocking."""


@dataclass
class CommandRecord:
    """What was last commanded to a limb this tick, for the run record.

    Attributes:
        center: the world-frame state the command was clamped around, or None.
        command: the world-frame end-effector command, or None.
        joints: a joint-space command, or None.
    """

    center: Pose | None = None
    command: Pose | None = None
    joints: tuple[float, ...] | None = None


class BasePoses:
    """A floating base's world pose, made once per base state and shared by its limbs."""

    def __init__(self) -> None:
        self._seen: BaseState | None = None
        self._pose = Pose()

    def pose(self, state: BaseState) -> Pose:
        """The pose of ``state`` (computed when ``state`` is not the last one seen)."""
        if state is not self._seen:
            self._pose = Pose.from_array(state.pose)
            self._seen = state
        return self._pose


@dataclass
class LimbHandle:
    """One limb of the mission, in the world frame.

    Attributes:
        name: the mission's name for the limb.
        description: what the agent said it is (``describe``).
        link: the limb client.
        base: the limb base in the world frame (the mission's ``base``), identity by default.
        postures: named joint postures from the robot description [rad or m].
        tick_record: what was commanded this tick (the runner resets it each tick).
        claims: who owns the mission's limbs (:mod:`limbtree.trees.claims`); the mission
            context sets it. A command the acting node may not send (another node owns the
            limb) is not sent and the method returns False. None: nothing is checked.
        live_base: for a robot whose base floats (a ``mujoco`` plant): the base state its
            plant last reported; world poses then hang off it (and :attr:`mount`) instead of
            the mission's fixed :attr:`base`.
        mount: the limb's base frame in its robot's base frame (``live_base`` only).
        base_poses: ``live_base``'s poses; one per robot, so that its limbs share them.
        kinematics: loads the limb's kinematic chain from its robot description (for
            :meth:`pose_at`); None where it is not known (placeholder limbs, tests).
    """

    name: str
    description: LimbDescription
    link: LimbLink
    base: Pose = field(default_factory=Pose)
    postures: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    tick_record: CommandRecord = field(default_factory=CommandRecord)
    claims: LimbClaims | None = field(default=None, repr=False, compare=False)
    live_base: Callable[[], BaseState | None] | None = field(
        default=None, repr=False, compare=False
    )
    mount: Pose = field(default_factory=Pose)
    base_poses: BasePoses = field(default_factory=BasePoses, repr=False, compare=False)
    kinematics: Callable[[], KinematicChain] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._chain: KinematicChain | None = None
        # (the joint values and the limb-base-frame pose of the last pose_at)
        self._forward: tuple[bytes, Pose] | None = None
        self._base_inverse = self.base.inverse()
        # Most limbs sit at the world origin: then no pose needs transforming.
        self._at_origin = (
            self.live_base is None
            and not self.base.position.any()
            and abs(self.base.quaternion[3]) == 1.0
        )
        # The world poses of the last state's interfaces, so that a tick computes each once;
        # likewise the floating base's pose (with the mount) of the last base state seen.
        self._interfaces: tuple[LimbState | None, dict[str, Pose | None]] = (None, {})
        self._based: tuple[BaseState | None, Pose, Pose] = (None, self.base, self.base)

    @property
    def end_effector(self) -> str:
        """The default end-effector's name (the description's first)."""
        return self.description.end_effectors[0]

    @property
    def state(self) -> LimbState | None:
        """The latest state, fresh or stale, or None before any arrived."""
        return self.link.state

    @property
    def fresh(self) -> bool:
        """Whether the latest state can be used (the rule every skill reads limbs by).

        It arrived, is not stale, and the limb's health does not make it no reading of the
        limb (:data:`UNREADABLE`: powered off, disassembled).
        """
        state = self.link.state
        return (
            state is not None
            and not self.link.is_stale
            and not int(state.health) & _UNREADABLE  # (on plain ints: no new flag each time)
            and not self.link.disassembled
        )

    @property
    def health(self) -> Health:
        """The health flags of the latest state (OK before any state).

        With DISASSEMBLED while the agent says the limb is disassembled (its last state,
        from before, does not say so).
        """
        state = self.link.state
        health = Health(state.health) if state is not None else Health.OK
        return health | Health.DISASSEMBLED if self.link.disassembled else health

    @property
    def faults(self) -> tuple[str, ...]:
        """The injected faults in force, as the latest state lists them (simulated limbs)."""
        state = self.link.state
        detail = state.detail if state is not None else None
        faults = detail.get("faults") if isinstance(detail, Mapping) else None
        return tuple(str(f) for f in faults) if isinstance(faults, list | tuple) else ()

    def down(self) -> LimbDown | None:
        """Why the limb's health makes its state no reading of it, or None when it does not.

        None too for a limb that is merely stale (its agent silent: in the real clock, a
        disassembled limb's).
        """
        health = self.health
        if not health & UNREADABLE:
            return None
        for flag, condition, fault in _DOWN:
            if health & flag:
                return LimbDown(condition, f"{fault} fault" if fault in self.faults else "")
        return None  # (unreachable: every flag of UNREADABLE is in _DOWN)

    def pose(self) -> Pose | None:
        """The end-effector pose in the world frame, or None when the state is unusable.

        Unusable: stale, or the limb powered off or disassembled (see :attr:`fresh`).
        """
        return self.interface_pose(self.end_effector)

    def last_pose(self) -> Pose | None:
        """The end-effector pose of the latest state, None only when it is stale.

        What the run record shows: a powered-off limb's frozen state included, which a
        skill must not take for where the limb is (:meth:`pose`).
        """
        if self.link.state is None or self.link.is_stale:
            return None
        return self._interface_pose(self.end_effector)

    def mocap(self, body: str) -> Pose | None:
        """A motion-captured pose in the world frame, or None when not seen or unusable.

        The motion capture's observations come in the state's ``detail["mocap"]`` map (body
        name -> pose in the limb base frame): ``"ee"`` for the end-effector, and
        ``"MODULE/GRASP_POINT"`` for world objects (``docs/world.md``).
        """
        state = self.link.state
        if state is None or not self.fresh:
            return None
        frames = state.detail.get("mocap") if state.detail else None
        values = frames.get(body) if isinstance(frames, dict) else None
        if values is None:
            return None
        return self._to_world(Pose.from_array(values))

    def chain(self) -> KinematicChain | None:
        """The limb's kinematic chain, loaded at the first call.

        Loading reads the URDF into roboticstoolbox (70 ms for heavy_limb, more where the
        import comes first): a node that will need it loads it when the tree is built, not
        in a tick. None without :attr:`kinematics`, or when the description cannot be
        loaded (then never tried again).
        """
        if self._chain is None and self.kinematics is not None:
            load, self.kinematics = self.kinematics, None
            try:
                self._chain = load()
            except (LimbtreeError, OSError):
                return None
        return self._chain

    def pose_at(self, q: Sequence[float] | FloatArray) -> Pose | None:
        """The world pose the end-effector would have at joint values ``q`` [rad or m].

        From the robot description's chain (the limb's default end-effector), placed as the
        limb's base is now. None without a chain (see :meth:`chain`).
        """
        chain = self.chain()
        if chain is None:
            return None
        values = np.asarray(q, dtype=np.float64)
        key = values.tobytes()
        last = self._forward
        if last is None or last[0] != key:
            last = (key, chain.fk(values))
            self._forward = last
        return self._to_world(last[1])

    def _may_command(self) -> bool:
        return self.claims is None or self.claims.may_command(self.name)

    def _to_world(self, pose: Pose) -> Pose:
        if self._at_origin:
            return pose
        return self._bases()[1] @ pose

    def base_pose(self) -> Pose:
        """The pose of the limb's robot base in the world.

        As its plant last reported it when the base floats (``live_base``), else the
        mission's ``base``.
        """
        return self._bases()[0]

    def _bases(self) -> tuple[Pose, Pose]:
        """The robot base's world pose, and the limb base's (the base's with the mount)."""
        if self.live_base is None:
            return self.base, self.base
        state = self.live_base()
        if state is None:
            return self.base, self.base @ self.mount
        seen, base, mounted = self._based
        if seen is not state:
            base = self.base_poses.pose(state)
            mounted = base @ self.mount
            self._based = (state, base, mounted)
        return base, mounted

    def interface_pose(self, end: str) -> Pose | None:
        """The world pose of a standard interface of the limb or of its robot base.

        ``E1``, ``E2`` are the limb's ends, ``E0`` its robot base's; None when the state
        cannot be used (see :attr:`fresh`) or has no such frame.

        The ends come from the state's ``ee_poses`` (limb base frame); the base's
        interfaces from its ``detail["base_frames"]`` (base frame).
        """
        if not self.fresh:
            return None
        return self._interface_pose(end)

    def _interface_pose(self, end: str) -> Pose | None:
        """:meth:`interface_pose` of the latest state, whatever it is (one must exist)."""
        state = self.link.state
        assert state is not None
        seen, poses = self._interfaces
        if seen is not state:
            poses = {}
            self._interfaces = (state, poses)
        elif end in poses:
            return poses[end]
        pose: Pose | None
        if end in state.ee_poses:
            pose = self._to_world(Pose.from_array(state.ee_poses[end]))
        else:
            frames = state.detail.get("base_frames") if state.detail else None
            values = frames.get(end) if isinstance(frames, dict) else None
            pose = None if values is None else self.base_pose() @ Pose.from_array(values)
        poses[end] = pose
        return pose

    def fk_pose(self) -> Pose | None:
        """Alias of :meth:`pose`: the end-effector pose from the limb's own kinematics."""
        return self.pose()

    def command_twist(self, linear: Sequence[float], angular: Sequence[float]) -> bool:
        """Send a world-frame end-effector twist [m/s, rad/s] (held until the next command)."""
        if not self._may_command():
            return False
        rotation = self._base_inverse.rotation
        v = rotation @ np.asarray(linear, dtype=np.float64)
        w = rotation @ np.asarray(angular, dtype=np.float64)
        return self.link.send_command(
            CommandMode.EE_TWIST, ee=self.end_effector, twist=[*v.tolist(), *w.tolist()]
        )

    def joints(self) -> FloatArray | None:
        """The joint positions [rad or m], or None when the state is unusable (:attr:`fresh`)."""
        state = self.link.state
        if state is None or not self.fresh:
            return None
        return np.array(state.q, dtype=np.float64)

    def command_pose(self, pose: Pose, center: Pose | None = None) -> bool:
        """Send a world-frame end-effector pose target (the agent runs IK)."""
        if not self._may_command():
            return False
        self.tick_record.center = center
        self.tick_record.command = pose
        target = pose if self._at_origin else self._base_inverse @ pose
        return self.link.send_command(
            CommandMode.EE_POSE, ee=self.end_effector, pose=target.as_list()
        )

    def command_joints(self, q: Sequence[float] | FloatArray) -> bool:
        """Send joint position targets [rad or m]."""
        if not self._may_command():
            return False
        values = tuple(float(v) for v in q)
        self.tick_record.joints = values
        return self.link.send_command(CommandMode.JOINT_POSITION, q=list(values))

    def hold(self) -> bool:
        """Ask the limb to stop where it is."""
        if not self._may_command():
            return False
        return self.link.send_command(CommandMode.HOLD)

    def latch(self, end: str, engage: bool) -> bool:
        """Engage or release the standard interface at ``end`` (``E1``, ``E2``, ``E0``)."""
        if not self._may_command():
            return False
        return self.link.send_command(CommandMode.LATCH, end=end, engage=engage)

    def impedance(
        self, frame: str, goal: Pose | None, gains: Mapping[str, float] | None = None
    ) -> bool:
        """Set (or clear) the world-frame goal of an interface under the plant's control.

        The plant's own torque loop drives it (a ``mujoco`` plant's ``impedance`` mode).

        Args:
            frame: ``E1``, ``E2`` (the limb's ends) or ``E0`` (its robot base's interface).
            goal: the frame's goal in the world frame, or None to stop controlling it.
            gains: any of ``k_n_per_m``, ``k_nm_per_rad``, ``d_ns_per_m``,
                ``d_nms_per_rad``, ``null_nms_per_rad``; None keeps the plant's.
        """
        if not self._may_command():
            return False
        fields: dict[str, Any] = {
            "frame": frame,
            "goal": None if goal is None else goal.as_list(),
        }
        if gains:
            fields["gains"] = {key: float(value) for key, value in gains.items()}
        return self.link.send_command(CommandMode.IMPEDANCE, **fields)

    def latched_ends(self) -> tuple[str, ...]:
        """The limb's interfaces (and its robot base's) latched now, as its plant says."""
        state = self.link.state
        ends = state.detail.get("ends_latched") if state is not None and state.detail else None
        return tuple(ends) if isinstance(ends, list | tuple) else ()

    def gripper(self, action: GripperAction) -> bool:
        """Open or close the gripper."""
        if not self._may_command():
            return False
        return self.link.send_gripper(action)

    def posture(self, name: str) -> tuple[float, ...]:
        """A named posture's joint values.

        Raises:
            KeyError: naming the valid postures of this limb.
        """
        try:
            return self.postures[name]
        except KeyError:
            valid = ", ".join(sorted(self.postures)) or "none"
            raise KeyError(
                f"limb {self.name} ({self.description.robot}) has no posture {name!r}; "
                f"valid: {valid}"
            ) from None
