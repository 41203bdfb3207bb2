"""The validated mission: immutable values in SI, ready for a tree builder.

Nothing here knows YAML: the loader (:mod:`limbtree.trees.mission.loader`) makes these from
a mission file, and a builder turns a :class:`Mission` into py_trees behaviours. Lengths are
metres, angles radians, times seconds; poses are ``(x, y, z, qx, qy, qz, qw)`` tuples
(quaternion scalar last, as :class:`limbtree.kinematics.Pose`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from limbtree.transport.faults import ENDING_FAULTS
from limbtree.transport.faults import FaultKind as FaultKind
from limbtree.trees.mission.errors import Location

#: A pose as the model holds it: ``(x, y, z, qx, qy, qz, qw)`` [m], quaternion scalar last.
PoseTuple = tuple[float, float, float, float, float, float, float]


class Clock(StrEnum):
    """How a mission's time passes (DESIGN.md, Clocks)."""

    SIM = "sim"
    REAL = "real"


class PlantKind(StrEnum):
    """What moves a robot's limbs (DESIGN.md, Plants); a mission's ``robots`` entry picks one.

    ``kinematic`` is wave 1's simulator: joints track their commands at their speed limits,
    with backlash, flex and noise. A robot served by a remote agent is whatever plant that
    agent serves; the mission's kind then only documents it.
    """

    KINEMATIC = "kinematic"
    MUJOCO = "mujoco"
    """Rigid-body dynamics at 1 kHz (floating base, latching of standard interfaces, seed
    003's limb-side torque loop): :class:`limbtree.robots.mujoco_plant.MujocoPlant`."""


#: The fault kinds a mission schedules (seed 000 Table II): those that last a while, not the
#: three that only end others (``reassemble``, ``power_on``, ``clear``). The one definition
#: of fault kinds is :class:`limbtree.transport.faults.FaultKind`.
SCHEDULED_FAULT_KINDS: Final = tuple(kind for kind in FaultKind if kind not in ENDING_FAULTS)


def freeze(value: Any) -> Any:
    """A read-only deep copy: lists become tuples, dicts read-only maps."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list | tuple):
        return tuple(freeze(item) for item in value)
    return value


@dataclass(frozen=True)
class LimbDecl:
    """A limb the mission uses.

    Attributes:
        name: the mission's name for the limb, used by nodes and faults.
        robot: the robot description it is a limb of.
        limb: which limb (kinematic chain) of that robot.
        agent: ``"sim"`` (the runner starts a simulated agent) or the agent's endpoint
            (``tcp://HOST:PORT``, ``ipc://PATH``).
        keys: the directory of CURVE keys to talk to the agent, or None.
        base_pose: the limb base in the world frame ``(x, y, z, qx, qy, qz, qw)`` [m], or
            None for the identity.
        location: where the limb is declared.
        sim: settings of a simulated limb's driver (``backlash_rad``, ``flex`` [1/m],
            ``joint_noise_rad``, ``latency_s``, ``vibration_hz``, ``vibration_damping``, and
            for a mission with a world ``mocap_noise_m``, ``mocap_rot_noise_rad``); empty for
            the ideal limb.
        plant: the mission's name of the robot (plant) the limb belongs to: the ``robots``
            entry for ``ROBOT.LIMB``, or None for a ``limbs`` entry (its own one-limb plant).
    """

    name: str
    robot: str
    limb: str
    agent: str
    keys: Path | None
    base_pose: PoseTuple | None
    location: Location
    sim: Mapping[str, float] = field(default_factory=dict)
    plant: str | None = None

    def __post_init__(self) -> None:
        if self.base_pose is not None and len(self.base_pose) != 7:
            raise ValueError(
                f"base_pose needs 7 values (x, y, z, qx, qy, qz, qw), not {self.base_pose}"
            )

    @property
    def simulated(self) -> bool:
        """Whether the runner starts a simulated agent for the limb."""
        return self.agent == "sim"

    @property
    def plant_name(self) -> str:
        """The mission's name of the plant the limb is part of (its own name if alone)."""
        return self.name if self.plant is None else self.plant


@dataclass(frozen=True)
class RobotDecl:
    """A robot the mission uses: one plant, served by one agent.

    A ``robots`` entry declares a whole robot, its limbs named ``ROBOT.LIMB`` (MoonBot
    Zero's four legs: ``quad.leg_0`` .. ``quad.leg_3``); each entry of ``limbs`` is a robot
    of its own with one limb (``declared`` False).

    Attributes:
        name: the mission's name for the robot.
        robot: the robot description (``limbtree robots``).
        plant: what moves it.
        agent: ``"sim"`` or the agent's endpoint, as :attr:`LimbDecl.agent`.
        keys: the CURVE keys directory, or None.
        base_pose: the robot's base in the world ``(x, y, z, qx, qy, qz, qw)`` [m], or None
            for the identity.
        limbs: the mission's names of its limbs, in the robot description's order.
        location: where it is declared.
        declared: True for a ``robots`` entry, False for a ``limbs`` entry.
        latched: ``mujoco`` plant: interface (``LIMB.END``, or a base interface) -> the
            ``MODULE/GRASP_POINT`` it starts latched to; the first places the robot.
        posture: ``mujoco`` plant: the named posture every limb starts in (None: ``home``).
        servo: ``mujoco`` plant: the joint_position PD ``{kp_nm_per_rad, kd_nms_per_rad}``.
    """

    name: str
    robot: str
    plant: PlantKind
    agent: str
    keys: Path | None
    base_pose: PoseTuple | None
    limbs: tuple[str, ...]
    location: Location
    declared: bool = True
    latched: Mapping[str, str] = field(default_factory=dict)
    posture: str | None = None
    servo: Mapping[str, float] | None = None

    @property
    def simulated(self) -> bool:
        """Whether the runner starts a simulated agent for the robot."""
        return self.agent == "sim"


@dataclass(frozen=True)
class FaultDecl:
    """A fault injected into a simulated limb at a mission time.

    Attributes:
        at_s: when [s of mission time].
        limb: the mission's name of the limb.
        kind: what happens.
        duration_s: how long it lasts [s], or None for the rest of the mission.
        params: what the kind needs: ``factor`` (slowdown, the speed multiplier in
            (0, 1)); ``joints`` (blockage, joint indices from 0; absent: every joint).
        location: where the fault is declared (for drawn faults, the ``random_faults``
            group).
        drawn: whether the fault was drawn from the seed (``random_faults``).
        params_at: where each written param's value is (for ``limbtree check``'s checks
            against the robot); not compared.
    """

    at_s: float
    limb: str
    kind: FaultKind
    duration_s: float | None
    params: Mapping[str, Any]
    location: Location
    drawn: bool = False
    params_at: Mapping[str, Location] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.at_s < 0 or (self.duration_s is not None and self.duration_s <= 0):
            raise ValueError(f"fault times must be at_s >= 0, duration_s > 0: {self}")
        object.__setattr__(self, "params", freeze(self.params))
        object.__setattr__(self, "params_at", freeze(self.params_at))


@dataclass(frozen=True)
class NodeModel:
    """One node of the mission's tree.

    Attributes:
        type: the node type (``sequence``, ``sync_move``, ...; aliases resolved).
        name: the display name.
        params: model name -> value in SI (keys without their unit suffix: ``p_e``, not
            ``p_e_mm``); every parameter of the type is present, defaults filled in, None
            for an optional parameter not given.
        children: the children (one for a decorator, none for a leaf).
        location: where the node is written (for a subtree, where it is used).
        origin: ``"subtree NAME"`` when the node is the root of an inlined subtree.
        params_at: where each given parameter's value is written, by model name, each
            element of a list value as ``NAME.N`` (from 1: ``waypoints.2``) and each entry
            of such an element that is a map as ``NAME.N.KEY`` (``waypoints.2.arm``), for messages
            about one value (``limbtree check``'s reach); empty for a node not read from a
            file. Not compared.
        bound: parameter key (``limb``, ``p_e_mm``) -> the parameter of the subtree the node
            is written in whose value it is, for a value written as exactly ``$NAME`` of
            that subtree (the BehaviorTree.CPP export makes those ports of the subtree).
            Not compared.
        passed: on the root of a subtree use written inside another subtree: the used
            subtree's parameter -> the enclosing subtree's parameter, for a ``with`` value
            written as exactly ``$NAME`` of the enclosing one. Not compared.
    """

    type: str
    name: str
    params: Mapping[str, Any]
    children: tuple[NodeModel, ...]
    location: Location
    origin: str | None = None
    params_at: Mapping[str, Location] = field(default_factory=dict, compare=False, repr=False)
    bound: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    passed: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", freeze(self.params))
        object.__setattr__(self, "children", tuple(self.children))
        object.__setattr__(self, "params_at", freeze(self.params_at))
        object.__setattr__(self, "bound", freeze(self.bound))
        object.__setattr__(self, "passed", freeze(self.passed))

    @property
    def subtree(self) -> str | None:
        """The name of the subtree whose use this node is the inlined root of, else None."""
        if self.origin is None or not self.origin.startswith("subtree "):
            return None
        return self.origin.removeprefix("subtree ")

    def value_at(self, key: str) -> Location:
        """Where the value ``key`` of :attr:`params_at` is written, else the node itself."""
        return self.params_at.get(key, self.location)

    def walk(self) -> tuple[NodeModel, ...]:
        """This node and all below it, depth first, parents before children."""
        nodes: list[NodeModel] = []
        stack: list[NodeModel] = [self]
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(reversed(node.children))
        return tuple(nodes)


@dataclass(frozen=True)
class WorldDecl:
    """A module placed in the simulated world (seed 002's wheels to grasp).

    Attributes:
        name: the mission's name for it (motion-capture bodies are ``NAME/GRASP_POINT``).
        module: which module (``limbtree.robots.load_module``).
        pose: its frame in the world ``(x, y, z, qx, qy, qz, qw)`` [m].
        location: where it is declared.
    """

    name: str
    module: str
    pose: PoseTuple
    location: Location


@dataclass(frozen=True)
class Mission:
    """A validated mission.

    Attributes:
        name: the mission's name.
        description: what it does.
        path: the mission file.
        clock: the default clock (the command line may override it).
        rate_hz: the tick rate [Hz].
        parameters: parameter name -> final value (after ``--set`` overrides), plain
            read-only data.
        limbs: the declared limbs, in file order.
        faults: scheduled faults, the drawn ones included, sorted by time.
        root: the tree, subtrees inlined and parameters substituted.
        sources: every file read: the mission file first, then its includes.
        world: the modules placed in the simulated world.
        robots: every plant: the ``robots`` entries, then one per ``limbs`` entry, in file
            order; together they hold every limb of :attr:`limbs` exactly once.
        max_tick_s: the hard limit on one tick of the tree [s of wall time]: a longer one
            ends the run ABORTED (the runner's watchdog, :mod:`limbtree.trees.watchdog`).
        gravity_m_s2: ``mujoco`` plants: gravity along the world's -z [m/s^2] (seed 003:
            0, on orbit; seed 004: 1e-6 g).
        timestep_s: ``mujoco`` plants: the integration step and torque-loop period [s].
        terrain: ``world.terrain``, the plant's form (``size_m``, ``cell_m``, ``sigma_m``,
            ``hurst``, ``seed``, ``rocks``), or None: no ground.
        contact: ``world.contact``, the grippers' law (``stiffness_n_per_m``,
            ``damping_ns_per_m``, ``grip_force_n``), or None: the plant's defaults.
    """

    name: str
    description: str
    path: Path
    clock: Clock
    rate_hz: float
    parameters: Mapping[str, Any]
    limbs: tuple[LimbDecl, ...]
    faults: tuple[FaultDecl, ...]
    root: NodeModel
    sources: tuple[Path, ...] = field(default=())
    world: tuple[WorldDecl, ...] = field(default=())
    robots: tuple[RobotDecl, ...] = field(default=())
    max_tick_s: float = 5.0
    gravity_m_s2: float = 0.0
    timestep_s: float = 0.001
    terrain: Mapping[str, Any] | None = None
    contact: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if not self.rate_hz > 0:
            raise ValueError(f"rate_hz must be > 0, not {self.rate_hz}")
        if not self.max_tick_s > 0:
            raise ValueError(f"max_tick_s must be > 0, not {self.max_tick_s}")
        object.__setattr__(self, "parameters", freeze(self.parameters))
        if self.robots:
            held = [limb for robot in self.robots for limb in robot.limbs]
            if sorted(held) != sorted(limb.name for limb in self.limbs):
                raise ValueError(f"the robots hold limbs {held}, the mission declares others")

    def limb(self, name: str) -> LimbDecl:
        """The declared limb called ``name``.

        Raises:
            KeyError: naming the declared limbs, when there is no such limb.
        """
        for limb in self.limbs:
            if limb.name == name:
                return limb
        raise KeyError(f"no limb {name!r}; declared: {', '.join(d.name for d in self.limbs)}")
