"""The interface between a limb agent and whatever moves the limb.

A :class:`LimbDriver` is what a limb agent serves over the wire. ``limbtree.robots`` provides
the implementations (simulated limbs with faults, and a base class real hardware fills in);
this module fixes only the contract, so the agent never knows which one it drives.

Every value crossing this interface is plain data in SI units: joint positions [rad or m],
velocities [rad/s or m/s], efforts [N m or N], times [s], poses as
``[x, y, z, qx, qy, qz, qw]`` (metres, unit quaternion scalar last) in the limb's base frame.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntFlag, StrEnum
from typing import Any

from limbtree.errors import LimbtreeError


class CommandMode(StrEnum):
    """What a ``command`` request asks the limb to do (wire field ``mode``)."""

    JOINT_POSITION = "joint_position"
    """``q`` [rad or m], one value per joint: joint targets, tracked at the joints' speed limits."""
    EE_POSE = "ee_pose"
    """``ee`` (end-effector name) and ``pose`` [x, y, z, qx, qy, qz, qw]: the driver runs seeded
    IK, limits the joint step to the speed limits, and reports an IK failure instead of moving."""
    EE_TWIST = "ee_twist"
    """``ee`` and ``twist`` [vx, vy, vz, wx, wy, wz] in m/s and rad/s, base frame: held until the
    next command or ``hold``."""
    JOINT_TORQUE = "joint_torque"
    """``tau`` [N m or N], one per joint: reserved for the physics plant; drivers without
    torque control refuse it with ``unsupported_mode``."""
    HOLD = "hold"
    """Stop where the limb is now."""
    IMPEDANCE = "impedance"
    """The physics plant's limb-side controller (seed 003 eq. 8, run at 1 kHz in the plant):
    ``frame`` (an interface of the limb, ``E1``/``E2``, or of its robot's base, ``E0``) is
    driven to ``goal`` [x, y, z, qx, qy, qz, qw] in the world with optional ``gains``
    (``k_n_per_m``, ``k_nm_per_rad``, ``d_ns_per_m``, ``d_nms_per_rad``, ``null_nms_per_rad``);
    a nil ``goal`` stops controlling the frame."""
    LATCH = "latch"
    """Engage (``engage`` true) or release the standard interface at the limb's ``end``
    (``E1``/``E2``): engaging welds it to the nearest interface of the world within the
    capture tolerance, and fails with ``bad_value`` when none is that close."""


class GripperAction(StrEnum):
    """What a ``gripper`` request asks for (wire field ``action``)."""

    OPEN = "open"
    CLOSE = "close"


class Health(IntFlag):
    """Health flags of a limb, OR-ed into the state's ``health`` integer.

    ``OK`` (0) means nothing is wrong. The values are part of the wire protocol.
    """

    OK = 0
    POWER_OFF = 1
    """Power is cut: the state stops updating."""
    BLOCKED = 2
    """A joint cannot move (mechanical blockage)."""
    SLOWED = 4
    """The joints move slower than their speed limit (mechanical slowdown)."""
    DISASSEMBLED = 8
    """The limb is detached: the agent goes silent until it is reassembled."""
    IK_FAILED = 16
    """The last end-effector command had no IK solution and was not executed."""
    JOINT_LIMIT = 32
    """A command was clipped to the joint limits."""
    BAD_INPUT = 64
    """The agent has received malformed messages (see ``errors_received`` in ``describe``)."""
    GRIP_LOST = 128
    """The gripper was torn off its hold: it holds nothing until its leg leaves support."""
    BUS_FAULT = 256
    """The limb's bus fails: its joint reads or setpoint writes raise. No new setpoint goes
    out (the limb holds), commands are refused with ``internal``, and the state stops
    updating while the reads fail; ``detail.bus_fault`` says what fails since when."""


@dataclass(frozen=True)
class JointInfo:
    """One joint as the limb describes it.

    Attributes:
        name: joint name, as in the robot description.
        lower: lower position limit [rad or m].
        upper: upper position limit [rad or m].
        max_speed: speed limit [rad/s or m/s].
    """

    name: str
    lower: float
    upper: float
    max_speed: float


@dataclass(frozen=True)
class LimbDescription:
    """What a limb is: the answer to ``describe``.

    Attributes:
        robot: robot name (``limbtree robots`` lists them).
        driver: ``"sim"`` or the hardware driver's name.
        joints: the joints in command order.
        end_effectors: names of the end-effector links, first is the default.
        command_modes: the :class:`CommandMode` values this limb accepts.
        has_gripper: whether ``gripper`` requests do anything.
        base_pose: the limb base in the robot/world frame ``[x, y, z, qx, qy, qz, qw]``.
    """

    robot: str
    driver: str
    joints: tuple[JointInfo, ...]
    end_effectors: tuple[str, ...]
    command_modes: tuple[CommandMode, ...]
    has_gripper: bool = False
    base_pose: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class LimbState:
    """One sample of a limb's state: the body of the state stream and of ``step`` replies.

    Attributes:
        t: the driver's time [s] (sim clock: the time it was stepped to).
        q: joint positions [rad or m].
        dq: joint velocities [rad/s or m/s].
        effort: joint efforts [N m or N], or None where the limb does not sense them.
        ee_poses: end-effector name -> pose ``[x, y, z, qx, qy, qz, qw]`` from the driver's own
            forward kinematics, in the limb base frame.
        gripper: gripper state: ``"open"``, ``"closed"`` or ``"none"`` (no gripper).
        health: :class:`Health` flags.
        detail: optional extra figures for debugging (fault names, IK residual, ...).
    """

    t: float
    q: tuple[float, ...]
    dq: tuple[float, ...]
    ee_poses: Mapping[str, Sequence[float]]
    effort: tuple[float, ...] | None = None
    gripper: str = "none"
    health: Health = Health.OK
    detail: Mapping[str, Any] = field(default_factory=dict)


class DriverError(LimbtreeError):
    """A driver refused a request; ``code`` is the wire error code sent back to the client.

    Attributes:
        code: one of the protocol's error codes (``"unsupported_mode"``, ``"bad_value"``,
            ``"ik_failed"``, ``"not_simulated"``, ``"unknown_fault"``, ``"unavailable"``).
        field: the request's top-level field at fault (the reply's ``field``), or None.
    """

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.field = field


class LimbDriver(ABC):
    """What a limb agent drives: a simulated limb, or real hardware.

    The agent calls these from one thread only. None of them may block for long: the agent
    serves requests and the state stream from the same loop.

    Time is always passed in (``t`` [s]); a driver never reads the wall clock. In the ``real``
    clock the agent calls :meth:`advance` with its monotonic time at its stream rate; in the
    ``sim`` clock it calls it with the time of each ``step`` request.
    """

    @abstractmethod
    def describe(self) -> LimbDescription:
        """What this limb is."""

    @abstractmethod
    def advance(self, t: float) -> None:
        """Bring the limb to time ``t`` [s]: integrate the simulation, or read the sensors.

        Calls come with non-decreasing ``t``; a repeated ``t`` does nothing.
        """

    @abstractmethod
    def state(self) -> LimbState:
        """The latest state, as of the last :meth:`advance`."""

    @abstractmethod
    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Accept a command; it takes effect from the next :meth:`advance`.

        Args:
            mode: what kind of command.
            payload: the request's fields for that mode (see :class:`CommandMode`).

        Raises:
            DriverError: with code ``unsupported_mode``, ``bad_value`` (wrong length, NaN,
                unknown end-effector), ``ik_failed``, or ``internal`` while the limb cannot
                be driven (its bus fails: ``Health.BUS_FAULT``).
        """

    @abstractmethod
    def gripper(self, action: GripperAction) -> None:
        """Open or close the gripper.

        Raises:
            DriverError: ``unsupported_mode`` when the limb has no gripper.
        """

    def fault(self, kind: str, params: Mapping[str, Any]) -> None:
        """Inject a fault (simulated limbs only).

        Raises:
            DriverError: ``not_simulated`` on hardware, ``unknown_fault`` or ``bad_value``.
        """
        raise DriverError("not_simulated", f"fault {kind!r}: this driver is not simulated")

    @property
    def available(self) -> bool:
        """False while the limb is disassembled: the agent then stops answering and publishing."""
        return True

    def close(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Release hardware; the default does nothing."""
