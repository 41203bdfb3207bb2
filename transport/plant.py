"""The plant interface: what one agent serves (DESIGN.md, "Plants").

A plant is what moves physically: one mechanically coupled group of limbs on one base (a lone
limb, a quadruped's four legs on its body, two arms on a torso). ``limbtree.robots`` provides
the kinds (the ``kinematic`` simulator, a real limb's driver as a one-limb plant) and the fault
decorator; this module fixes only the contract, so an agent never knows which kind it serves.

Every value crossing this interface is plain data in SI units: times [s], joint values [rad or
m], poses ``[x, y, z, qx, qy, qz, qw]`` (metres, unit quaternion scalar last). The base pose and
twist are in the world frame; a limb's end-effector poses are in that limb's base frame, which
sits at the limb's ``mount`` in the plant's base frame.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    GripperAction,
    LimbDescription,
    LimbDriver,
    LimbState,
)

__all__ = [
    "HEALTHY",
    "IDENTITY_POSE",
    "ZERO_TWIST",
    "Actuation",
    "BaseState",
    "Contact",
    "DriverPlant",
    "FaultClock",
    "Plant",
    "PlantDescription",
    "PlantLimb",
    "PlantLimbDriver",
    "PlantState",
]

#: The identity pose ``[x, y, z, qx, qy, qz, qw]``.
IDENTITY_POSE: Final = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
#: A base at rest ``[vx, vy, vz, wx, wy, wz]`` [m/s, rad/s].
ZERO_TWIST: Final = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def _vector(value: Sequence[float], length: int, what: str) -> tuple[float, ...]:
    values = tuple(float(v) for v in value)
    if len(values) != length or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} must be {length} finite numbers, got {value!r}")
    return values


@dataclass(frozen=True)
class PlantLimb:
    """One limb of a plant.

    Attributes:
        name: the limb's name in the plant (the robot description's limb name); the wire's
            ``limb`` field and the state stream's topic.
        description: its joints, limits, end-effectors, command modes and gripper.
        mount: the limb's base frame in the plant's base frame ``[x, y, z, qx, qy, qz, qw]``.
    """

    name: str
    description: LimbDescription
    mount: tuple[float, ...] = IDENTITY_POSE

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a plant limb needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "mount", _vector(self.mount, 7, f"limb {self.name!r} mount"))


@dataclass(frozen=True)
class PlantDescription:
    """What a plant is: the answer to ``describe``.

    Attributes:
        robot: the robot's name (``limbtree robots``).
        kind: the plant kind: ``kinematic``, ``mujoco``, or a real limb's driver name.
        limbs: its limbs, in the robot description's order.
        base_pose: the plant's base in the world frame ``[x, y, z, qx, qy, qz, qw]``.
        floating_base: whether the base moves (a free-flying or walking body); False when
            it is fixed in the world.

    Raises:
        ValueError: for no limbs, two limbs with one name, or a malformed base pose.
    """

    robot: str
    kind: str
    limbs: tuple[PlantLimb, ...]
    base_pose: tuple[float, ...] = IDENTITY_POSE
    floating_base: bool = False

    def __post_init__(self) -> None:
        limbs = tuple(self.limbs)
        if not limbs:
            raise ValueError(f"plant of robot {self.robot!r} has no limbs")
        names = [limb.name for limb in limbs]
        if len(set(names)) != len(names):
            raise ValueError(f"plant of robot {self.robot!r} names a limb twice: {names}")
        object.__setattr__(self, "limbs", limbs)
        object.__setattr__(self, "base_pose", _vector(self.base_pose, 7, "base_pose"))

    @property
    def limb_names(self) -> tuple[str, ...]:
        """The limbs' names, in order."""
        return tuple(limb.name for limb in self.limbs)

    def limb(self, name: str) -> PlantLimb:
        """The limb called ``name``.

        Raises:
            DriverError: ``bad_value`` naming the plant's limbs when it has no such limb.
        """
        for limb in self.limbs:
            if limb.name == name:
                return limb
        raise DriverError(
            "bad_value",
            f"plant {self.robot!r} has no limb {name!r}; its limbs are "
            f"{', '.join(self.limb_names)}",
        )


@dataclass(frozen=True)
class BaseState:
    """Where a plant's base is and how it moves, in the world frame.

    Attributes:
        pose: ``[x, y, z, qx, qy, qz, qw]`` [m].
        twist: ``[vx, vy, vz, wx, wy, wz]`` [m/s, rad/s].
    """

    pose: tuple[float, ...] = IDENTITY_POSE
    twist: tuple[float, ...] = ZERO_TWIST

    def __post_init__(self) -> None:
        object.__setattr__(self, "pose", _vector(self.pose, 7, "base pose"))
        object.__setattr__(self, "twist", _vector(self.twist, 6, "base twist"))


@dataclass(frozen=True)
class Contact:
    """One contact between a plant's body and the world.

    Attributes:
        limb: the limb that touches (or ``""`` for the base).
        body: the link or body that touches.
        position: the contact point in the world frame [m].
        force: the contact force on the plant in the world frame [N].
    """

    limb: str
    body: str
    position: tuple[float, float, float]
    force: tuple[float, float, float]


@dataclass(frozen=True)
class PlantState:
    """One sample of a plant: its base and every limb, at one time.

    Attributes:
        t: the plant's time [s] (sim clock: the time it was stepped to).
        base: the base pose and twist in the world.
        limbs: limb name -> its state (joints, end-effector poses in the limb's base frame,
            gripper, health). A disassembled limb keeps its frozen state.
        contacts: the contacts the plant senses (none for the kinematic plant).
    """

    t: float
    base: BaseState
    limbs: Mapping[str, LimbState]
    contacts: tuple[Contact, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "limbs", MappingProxyType(dict(self.limbs)))


@dataclass(frozen=True)
class Actuation:
    """What faults leave of a limb's actuation; the fault decorator sets it on a plant.

    The defaults are a healthy limb.

    Attributes:
        free: per joint, 1.0 when it can move and 0.0 when it is blocked; None: all free.
        speed_scale: per joint, its speed limit's factor in (0, 1]; None: all at full speed.
        powered: False while the power is cut: the limb goes limp, its state stops updating.
        attached: False while the limb is disassembled: it stops and its state freezes.
        ik_error: True while every ``ee_pose`` command must fail with ``ik_failed``.
    """

    free: tuple[float, ...] | None = None
    speed_scale: tuple[float, ...] | None = None
    powered: bool = True
    attached: bool = True
    ik_error: bool = False


HEALTHY: Final = Actuation()
"""The actuation of a limb without faults."""


class FaultClock(Protocol):
    """Fault events of one limb that a plant fires at their exact times while it advances."""

    def next_event_s(self) -> float | None:
        """The time of the next fault event [s], or None when none is due."""

    def fire(self, now_s: float) -> None:
        """Start and end the faults due at ``now_s`` [s] (it may call ``actuate``)."""


class Plant(ABC):
    """What an agent serves: one mechanically coupled group of limbs on one base.

    The agent calls these from one thread only; none may block for long. Time is always
    passed in: a plant never reads the wall clock. In the ``real`` clock the agent advances
    it with its monotonic time at its stream rate; in ``sim`` with each ``step``'s time.
    """

    @abstractmethod
    def describe(self) -> PlantDescription:
        """What this plant is."""

    @property
    @abstractmethod
    def time(self) -> float:
        """The time of the last :meth:`advance` [s] (0 before the first)."""

    @abstractmethod
    def advance(self, t: float) -> None:
        """Bring every limb and the base to time ``t`` [s].

        Calls come with non-decreasing ``t``; a repeated ``t`` does nothing.

        Raises:
            DriverError: ``bad_value`` for a time that is not finite or goes back.
        """

    @abstractmethod
    def limb_state(self, limb: str) -> LimbState:
        """The latest state of one limb, as of the last :meth:`advance`.

        Raises:
            DriverError: ``bad_value`` for an unknown limb.
        """

    def base_state(self) -> BaseState:
        """The base in the world as of the last :meth:`advance` (fixed: the described pose)."""
        return BaseState(self.describe().base_pose)

    def state(self) -> PlantState:
        """The base and every limb as of the last :meth:`advance`."""
        names = self.describe().limb_names
        return PlantState(self.time, self.base_state(), {n: self.limb_state(n) for n in names})

    @abstractmethod
    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Give one limb a command; it takes effect from the next :meth:`advance`.

        Raises:
            DriverError: ``unsupported_mode``, ``bad_value`` (an unknown limb, wrong length,
                NaN, unknown end-effector) or ``ik_failed``.
        """

    @abstractmethod
    def gripper(self, limb: str, action: GripperAction) -> None:
        """Open or close one limb's gripper.

        Raises:
            DriverError: ``unsupported_mode`` when the limb has no gripper.
        """

    def fault(self, limb: str, kind: str, params: Mapping[str, Any]) -> None:
        """Inject a fault into one limb (the fault decorator does; bare plants refuse).

        Raises:
            DriverError: ``not_simulated``.
        """
        raise DriverError(
            "not_simulated", f"fault {kind!r} on limb {limb!r}: this plant takes no faults"
        )

    def available(self, limb: str) -> bool:
        """False while ``limb`` is disassembled: the agent then stays silent about it."""
        return True

    def actuate(self, limb: str, actuation: Actuation) -> None:
        """Set what faults leave of a limb's actuation (only simulated plants can).

        Raises:
            DriverError: ``not_simulated``.
        """
        raise DriverError("not_simulated", f"limb {limb!r}: this plant cannot simulate faults")

    def set_fault_clock(self, limb: str, clock: FaultClock | None) -> bool:
        """Let the plant fire ``limb``'s fault events at their exact times while it advances.

        Returns:
            Whether the plant does; a plant that does not has them fired at each
            :meth:`advance` instead.
        """
        return False

    def close(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Release hardware; the default does nothing."""


class DriverPlant(Plant):
    """One :class:`~limbtree.transport.driver.LimbDriver` as a one-limb plant.

    A real limb's driver (a ``HardwareDriver``) is served this way: its limb is called
    ``limb`` in the plant, and its base is fixed at ``base_pose``.

    Args:
        driver: the limb's driver; the plant closes it.
        limb: the limb's name in the plant.
        base_pose: the limb's base in the world ``[x, y, z, qx, qy, qz, qw]``.
    """

    def __init__(
        self, driver: LimbDriver, limb: str, base_pose: Sequence[float] = IDENTITY_POSE
    ) -> None:
        self._driver = driver
        self._name = limb
        description = driver.describe()
        self._description = PlantDescription(
            robot=description.robot,
            kind=description.driver,
            limbs=(PlantLimb(limb, description),),
            base_pose=tuple(base_pose),
        )
        self._base = BaseState(self._description.base_pose)
        self._t = 0.0

    @property
    def driver(self) -> LimbDriver:
        """The wrapped driver."""
        return self._driver

    def describe(self) -> PlantDescription:
        """The one-limb plant."""
        return self._description

    @property
    def time(self) -> float:
        """The time of the last :meth:`advance` [s]."""
        return self._t

    def advance(self, t: float) -> None:
        """Advance the driver."""
        self._driver.advance(t)
        self._t = t

    def _check(self, limb: str) -> LimbDriver:
        if limb != self._name:
            self._description.limb(limb)  # raises, naming the limb
        return self._driver

    def limb_state(self, limb: str) -> LimbState:
        """The driver's state."""
        return self._check(limb).state()

    def base_state(self) -> BaseState:
        """The fixed base."""
        return self._base

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Command the driver."""
        self._check(limb).command(mode, payload)

    def gripper(self, limb: str, action: GripperAction) -> None:
        """The driver's gripper."""
        self._check(limb).gripper(action)

    def fault(self, limb: str, kind: str, params: Mapping[str, Any]) -> None:
        """The driver's own faults (hardware refuses them with ``not_simulated``)."""
        self._check(limb).fault(kind, params)

    def available(self, limb: str) -> bool:
        """The driver's availability."""
        return self._check(limb).available

    def close(self) -> None:
        """Close the driver."""
        self._driver.close()


@dataclass
class PlantLimbDriver(LimbDriver):
    """One limb of a plant seen as a :class:`~limbtree.transport.driver.LimbDriver`.

    For code written against one limb (tests, a one-limb view of a plant); advancing it
    advances the whole plant.

    Attributes:
        plant: the plant.
        limb: the limb's name in it.
    """

    plant: Plant
    limb: str
    _description: LimbDescription = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._description = self.plant.describe().limb(self.limb).description

    @property
    def time(self) -> float:
        """The plant's time [s]."""
        return self.plant.time

    def describe(self) -> LimbDescription:
        """The limb's description."""
        return self._description

    def advance(self, t: float) -> None:
        """Advance the plant."""
        self.plant.advance(t)

    def state(self) -> LimbState:
        """The limb's state."""
        return self.plant.limb_state(self.limb)

    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Command the limb."""
        self.plant.command(self.limb, mode, payload)

    def gripper(self, action: GripperAction) -> None:
        """The limb's gripper."""
        self.plant.gripper(self.limb, action)

    def fault(self, kind: str, params: Mapping[str, Any]) -> None:
        """A fault on the limb."""
        self.plant.fault(self.limb, kind, params)

    @property
    def available(self) -> bool:
        """Whether the limb is attached."""
        return self.plant.available(self.limb)

    def close(self) -> None:
        """Close the plant."""
        self.plant.close()
