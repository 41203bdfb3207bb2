"""Robot descriptions: which robots exist, what their limbs are, and their kinematic chains.

A robot is a directory holding a URDF file and a short metadata file, ``robot.yaml``, that
says which links make each limb, how fast its joints may turn, its grippers and named
postures. The shipped robots live in ``limbtree/robots/descriptions/``; users add their own
by pointing ``LIMBTREE_ROBOT_PATH`` at directories that hold ``<robot>/robot.yaml`` (see
``docs/robots.md``), or load one file with :func:`load_robot_file`.

Loading reads only YAML and the URDF's XML, so listing robots is fast; the roboticstoolbox
model is built on the first :meth:`RobotSpec.chain` call.

``robot.yaml`` keys (SI units: rad, rad/s, m, kg)::

    name: my_arm                     # required; equals the directory name on the search path
    description: One line about it   # optional
    paper: Where the numbers come from
    notes: Anything else worth knowing
    urdf: my_arm.urdf                # optional, relative to robot.yaml; default <name>.urdf
    mass_kg: 12.5                    # optional; default: the sum of the URDF link masses
    floating: false                  # optional: the base (the URDF's root link) floats free
                                     # (a space robot, a walking arm); default false
    joint_armature_kgm2: 0.1         # optional, >= 0: motor reflected inertia added on every
                                     # joint (physics plant, mass matrix); default 0
    interfaces: {E0: e0}             # optional: interface (SI) frames on the base body, name ->
                                     # link rigidly fixed to the URDF's root link
    limbs:                           # required, at least one
      arm:
        base_link: base_link         # required: poses are expressed in this link's frame
        ee_link: tool0               # required: the end-effector link
        max_joint_speed: 1.5         # required [rad/s or m/s], caps every joint of the limb
        grippers: [gripper]          # optional: links that carry a gripper
        ik_mask: [1, 1, 1, 0, 0, 0]  # optional: IK weights on [x, y, z, rx, ry, rz]
        interfaces: {E1: e1, E2: e2} # optional: interface (SI) frames of the limb's ends, end
                                     # name -> a link on the chain from base_link to ee_link
        postures:                    # optional: named joint vectors [rad or m]
          home: [0, 0.5, 0, 1.2, 0, 0.8, 0]

Interface frames are named ``LIMB.END`` for a limb's ends (``arm.E1``) and by their own name
for the base body's (``E0``): :attr:`RobotSpec.interface_links`. Interface names are letters,
digits and ``_``, not starting with a digit.
"""

from __future__ import annotations

import math
import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NoReturn

import numpy as np
import numpy.typing as npt

from limbtree.robots.errors import (
    RobotDescriptionError,
    RobotsError,
    UnknownLimbError,
    UnknownPostureError,
    UnknownRobotError,
)
from limbtree.robots.yamldoc import YamlDocument, is_number, kind

if TYPE_CHECKING:
    from limbtree.kinematics.chain import KinematicChain

FloatArray = npt.NDArray[np.float64]

#: Environment variable: directories (separated by ``os.pathsep``) of user robots, each
#: holding ``<robot>/robot.yaml``. Searched before the shipped robots, in order.
ROBOT_PATH_ENV: Final = "LIMBTREE_ROBOT_PATH"
#: The metadata file of a robot directory.
METADATA_FILE: Final = "robot.yaml"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_TOP_KEYS: Final = (
    "name",
    "description",
    "paper",
    "notes",
    "urdf",
    "mass_kg",
    "floating",
    "joint_armature_kgm2",
    "interfaces",
    "limbs",
)
_LIMB_KEYS: Final = (
    "base_link",
    "ee_link",
    "max_joint_speed",
    "grippers",
    "ik_mask",
    "interfaces",
    "postures",
)
_INTERFACE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Slack [rad or m] allowed when checking postures against the joint limits.
_POSTURE_SLACK: Final = 1e-9


class JointKind(StrEnum):
    """The kind of a movable URDF joint."""

    REVOLUTE = "revolute"
    """Turns between limits [rad]."""
    CONTINUOUS = "continuous"
    """Turns without limits [rad]."""
    PRISMATIC = "prismatic"
    """Slides between limits [m]."""


@dataclass(frozen=True)
class JointSpec:
    """One movable joint of a limb, as the URDF and ``robot.yaml`` describe it.

    Attributes:
        name: URDF joint name.
        kind: revolute, continuous or prismatic.
        lower: lower limit [rad or m]; ``-inf`` for continuous joints.
        upper: upper limit [rad or m]; ``+inf`` for continuous joints.
        max_speed: speed limit [rad/s or m/s]: the smaller of the URDF ``velocity`` limit
            and the limb's ``max_joint_speed``.
    """

    name: str
    kind: JointKind
    lower: float
    upper: float
    max_speed: float

    @property
    def unit(self) -> str:
        """``"m"`` for prismatic joints, ``"rad"`` otherwise."""
        return "m" if self.kind is JointKind.PRISMATIC else "rad"


@dataclass(frozen=True)
class LimbSpec:
    """One limb: the chain from a base link to an end-effector link, and what it carries.

    Attributes:
        name: limb name, unique in its robot (``"arm"``, ``"leg_0"``).
        base_link: link whose frame the limb's poses are expressed in.
        ee_link: the end-effector link.
        joints: the movable joints from ``base_link`` to ``ee_link``, in that order (the
            order of joint vectors everywhere: commands, states, postures, IK).
        max_joint_speed: speed limit of every joint [rad/s or m/s] (seed 000 Table I).
        mass_kg: mass [kg] of the links on the end-effector side of ``base_link``, from
            the URDF inertials.
        grippers: links that carry a gripper (possibly none).
        ik_mask: IK weights on ``[x, y, z, rx, ry, rz]``, or None for all six;
            ``(1, 1, 1, 0, 0, 0)`` for position-only limbs such as 3-joint legs.
        postures: posture name -> joint vector [rad or m]; always has ``"home"``.
        interfaces: interface (SI) end name -> link, e.g. ``{"E1": "e1", "E2": "e2"}``:
            frames of the limb's ends (links on the chain from ``base_link`` to
            ``ee_link``); the robot calls them ``"LIMB.END"``. Possibly none.
    """

    name: str
    base_link: str
    ee_link: str
    joints: tuple[JointSpec, ...]
    max_joint_speed: float
    mass_kg: float
    grippers: tuple[str, ...] = ()
    ik_mask: tuple[float, ...] | None = None
    postures: Mapping[str, tuple[float, ...]] = field(default_factory=lambda: MappingProxyType({}))
    interfaces: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def n(self) -> int:
        """Number of movable joints."""
        return len(self.joints)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Joint names from the base to the end-effector."""
        return tuple(joint.name for joint in self.joints)

    @property
    def lower(self) -> FloatArray:
        """``(n,)`` lower joint limits [rad or m] (a new array)."""
        return np.array([joint.lower for joint in self.joints])

    @property
    def upper(self) -> FloatArray:
        """``(n,)`` upper joint limits [rad or m] (a new array)."""
        return np.array([joint.upper for joint in self.joints])

    @property
    def end_effectors(self) -> tuple[str, ...]:
        """End-effector link names, the default first (``LimbDescription.end_effectors``)."""
        return (self.ee_link,)

    def posture(self, name: str) -> FloatArray:
        """A named posture as a read-only ``(n,)`` array [rad or m].

        Raises:
            UnknownPostureError: if the limb has no such posture; it lists the valid ones.
        """
        try:
            values = self.postures[name]
        except KeyError:
            raise UnknownPostureError(self.name, name, tuple(self.postures)) from None
        array = np.array(values, dtype=np.float64)
        array.setflags(write=False)
        return array


@dataclass(frozen=True)
class RobotSpec:
    """A robot: its description files and its limbs.

    Attributes:
        name: robot name (``limbtree robots`` lists them).
        description: one line about the robot.
        mass_kg: total mass [kg].
        limbs: the limbs, in file order.
        urdf_path: the URDF file.
        source: the ``robot.yaml`` it was loaded from.
        paper: where its numbers come from.
        notes: anything else worth knowing (which values are guesses, ...).
        floating: whether the base (the URDF's root link, :attr:`base_link`) floats free
            (a robot in orbit, a walking arm) rather than being fixed in the world.
        base_link: the URDF's root link: the floating base body when :attr:`floating`.
        interfaces: interface (SI) frames on the base body: name -> link rigidly fixed to
            :attr:`base_link` (``{"E0": "e0"}``). Possibly none.
        joint_armature_kgm2: motor reflected inertia [kg m^2] added on every joint by the
            physics plant and the floating tree's mass matrix (0: none).
    """

    name: str
    description: str
    mass_kg: float
    limbs: tuple[LimbSpec, ...]
    urdf_path: Path
    source: Path
    paper: str = ""
    notes: str = ""
    floating: bool = False
    base_link: str = ""
    interfaces: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    joint_armature_kgm2: float = 0.0
    # Chains built so far, per limb name: this spec's own cache, never shared.
    _chains: dict[str, KinematicChain] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def limb_names(self) -> tuple[str, ...]:
        """Limb names, in file order."""
        return tuple(limb.name for limb in self.limbs)

    @property
    def interface_links(self) -> Mapping[str, str]:
        """Every interface (SI) frame: name -> link, the base body's first, then each limb's.

        A limb's ends are named ``"LIMB.END"`` (``"arm_1.E2"``); the base body's frames keep
        their own name (``"E0"``).
        """
        frames = dict(self.interfaces)
        for limb in self.limbs:
            frames.update((f"{limb.name}.{end}", link) for end, link in limb.interfaces.items())
        return MappingProxyType(frames)

    def limb(self, name: str | None = None) -> LimbSpec:
        """One limb by name.

        Args:
            name: the limb's name; None is allowed when the robot has a single limb.

        Raises:
            UnknownLimbError: if there is no such limb, or ``name`` is None and the robot
                has several limbs; it lists the valid ones.
        """
        if name is None:
            if len(self.limbs) == 1:
                return self.limbs[0]
            raise UnknownLimbError(self.name, None, self.limb_names)
        for limb in self.limbs:
            if limb.name == name:
                return limb
        raise UnknownLimbError(self.name, name, self.limb_names)

    def chain(self, limb_name: str | None = None) -> KinematicChain:
        """The kinematic chain of one limb, built once per spec and then reused.

        Imports roboticstoolbox on first use (about two seconds).

        Args:
            limb_name: the limb; None is allowed when the robot has a single limb.

        Raises:
            UnknownLimbError: if there is no such limb (see :meth:`limb`).
            limbtree.kinematics.errors.ChainError: if roboticstoolbox cannot load the URDF.
        """
        limb = self.limb(limb_name)
        chain = self._chains.get(limb.name)
        if chain is None:
            from limbtree.kinematics.chain import KinematicChain

            chain = KinematicChain.from_urdf(self.urdf_path, limb.base_link, limb.ee_link)
            self._chains[limb.name] = chain
        return chain


# ---------------------------------------------------------------------- search path


def builtin_robot_dir() -> Path:
    """The directory of the robots shipped with limbtree."""
    return Path(__file__).resolve().parent / "descriptions"


def robot_search_path(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """Where robots are looked for: ``LIMBTREE_ROBOT_PATH`` entries, then the shipped ones.

    Earlier directories win, so a user robot can stand in for a shipped one of the same
    name. Empty entries are skipped; missing directories are kept (they hold nothing).

    Args:
        environ: the environment to read (default: ``os.environ``).

    Returns:
        The directories, in search order.
    """
    env = os.environ if environ is None else environ
    entries = env.get(ROBOT_PATH_ENV, "").split(os.pathsep)
    user = tuple(Path(entry).expanduser() for entry in entries if entry.strip())
    return (*user, builtin_robot_dir())


def robot_names(search_path: Sequence[Path] | None = None) -> tuple[str, ...]:
    """Names of every robot on the search path, sorted.

    A robot is any subdirectory holding ``robot.yaml``; the files are not parsed here.

    Args:
        search_path: directories to search (default: :func:`robot_search_path`).
    """
    path = robot_search_path() if search_path is None else tuple(search_path)
    names: set[str] = set()
    for directory in path:
        if directory.is_dir():
            names.update(
                child.name for child in directory.iterdir() if (child / METADATA_FILE).is_file()
            )
    return tuple(sorted(names))


def load_robot(name: str, search_path: Sequence[Path] | None = None) -> RobotSpec:
    """Load a robot by name from the search path.

    Args:
        name: the robot's name (its directory name).
        search_path: directories to search (default: :func:`robot_search_path`).

    Returns:
        The validated robot.

    Raises:
        UnknownRobotError: if no directory on the search path has ``<name>/robot.yaml``; it
            lists the valid names and the directories searched.
        RobotDescriptionError: if its files are wrong; it names the file and the key.
    """
    path = robot_search_path() if search_path is None else tuple(search_path)
    if _NAME.match(name):
        for directory in path:
            candidate = directory / name / METADATA_FILE
            if candidate.is_file():
                return _load(candidate, expected_name=name)
    raise UnknownRobotError(name, robot_names(path), path)


def load_robot_file(path: str | Path) -> RobotSpec:
    """Load one robot from its ``robot.yaml`` (or the directory that holds it).

    The robot does not need to be on the search path, and its name need not match its
    directory.

    Args:
        path: a ``robot.yaml`` file, or a directory holding one.

    Returns:
        The validated robot.

    Raises:
        RobotsError: if there is no such file.
        RobotDescriptionError: if its files are wrong; it names the file and the key.
    """
    file = Path(path).expanduser()
    if file.is_dir():
        file = file / METADATA_FILE
    if not file.is_file():
        raise RobotsError(f"no robot description at {file}")
    return _load(file, expected_name=None)


def load_robots(search_path: Sequence[Path] | None = None) -> tuple[RobotSpec, ...]:
    """Load every robot on the search path, sorted by name.

    Raises:
        RobotDescriptionError: if any of them is wrong.
    """
    path = robot_search_path() if search_path is None else tuple(search_path)
    return tuple(load_robot(name, path) for name in robot_names(path))


# ---------------------------------------------------------------------- robot.yaml


def _load(path: Path, *, expected_name: str | None) -> RobotSpec:
    doc = YamlDocument(path.resolve(), RobotDescriptionError)
    top = doc.mapping((), doc.data, _TOP_KEYS)
    for required in ("name", "limbs"):
        if required not in top:
            doc.fail((required,), "missing; it is required")
    name = doc.string(("name",), top["name"])
    if not _NAME.match(name):
        doc.fail(("name",), f"{name!r} is not a valid robot name (letters, digits, _ . -)")
    if expected_name is not None and name != expected_name:
        doc.fail(
            ("name",),
            f"is {name!r} but the directory is {expected_name!r}; they must be equal",
        )
    texts = {
        key: doc.string((key,), top[key]) for key in ("description", "paper", "notes") if key in top
    }
    urdf_name = doc.string(("urdf",), top["urdf"]) if "urdf" in top else f"{name}.urdf"
    urdf_path = (doc.path.parent / urdf_name).resolve()
    if not urdf_path.is_file():
        doc.fail(("urdf",), f"URDF file not found: {urdf_path}")
    model = _UrdfModel.read(urdf_path)
    mass_kg = (
        doc.positive(("mass_kg",), top["mass_kg"], "kg") if "mass_kg" in top else model.total_mass()
    )
    limbs_value = top["limbs"]
    if not isinstance(limbs_value, dict) or not limbs_value:
        doc.fail(("limbs",), f"expected a mapping of at least one limb, got {kind(limbs_value)}")
    limbs = tuple(
        _limb(doc, model, str(limb_name), limb_value)
        for limb_name, limb_value in limbs_value.items()
    )
    floating = False
    if "floating" in top:
        if not isinstance(top["floating"], bool):
            doc.fail(("floating",), f"expected true or false, got {kind(top['floating'])}")
        floating = top["floating"]
    armature = 0.0
    if "joint_armature_kgm2" in top:
        value_a = top["joint_armature_kgm2"]
        if not is_number(value_a) or not math.isfinite(value_a) or value_a < 0:
            doc.fail(
                ("joint_armature_kgm2",),
                f"expected a number >= 0 [kg m^2] (motor reflected inertia), got {value_a!r}",
            )
        armature = float(value_a)
    root = model.root()
    interfaces: Mapping[str, str] = MappingProxyType({})
    if "interfaces" in top:
        interfaces = _interfaces(doc, model, ("interfaces",), top["interfaces"])
        for frame, link in interfaces.items():
            moving = [j.name for j in model.path_between(root, link) if j.kind != "fixed"]
            if moving:
                doc.fail(
                    ("interfaces", frame),
                    f"link {link!r} moves against the base link {root!r} (joints "
                    f"{', '.join(moving)}); a robot-level interface must be on the base body "
                    "(only fixed joints between); put a limb's end under the limb's interfaces",
                )
    return RobotSpec(
        name=name,
        description=texts.get("description", ""),
        mass_kg=mass_kg,
        limbs=limbs,
        urdf_path=urdf_path,
        source=doc.path,
        paper=" ".join(texts.get("paper", "").split()),
        notes=" ".join(texts.get("notes", "").split()),
        floating=floating,
        base_link=root,
        interfaces=interfaces,
        joint_armature_kgm2=armature,
    )


def _interfaces(
    doc: YamlDocument, model: _UrdfModel, key: tuple[str, ...], value: Any
) -> Mapping[str, str]:
    """Check a mapping of interface name -> URDF link (``{}``: none, as when left out)."""
    if not isinstance(value, dict):
        doc.fail(key, f"expected a mapping of interface name to link, got {kind(value)}")
    frames: dict[str, str] = {}
    for frame, link in value.items():
        if not isinstance(frame, str) or not _INTERFACE_NAME.match(frame):
            doc.fail(
                key,
                f"interface name {frame!r}: use letters, digits and _, not starting with a digit",
            )
        if not isinstance(link, str) or link not in model.links:
            doc.fail(
                (*key, frame),
                f"no link named {link!r} in {model.path.name}; "
                f"valid links: {', '.join(model.links)}",
            )
        frames[frame] = link
    return MappingProxyType(frames)


def _limb(doc: YamlDocument, model: _UrdfModel, name: str, value: Any) -> LimbSpec:
    key = ("limbs", name)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        doc.fail(key, "limb names are letters, digits and _, not starting with a digit")
    spec = doc.mapping(key, value, _LIMB_KEYS)
    for required in ("base_link", "ee_link", "max_joint_speed"):
        if required not in spec:
            doc.fail((*key, required), "missing; it is required")
    links: dict[str, str] = {}
    for role in ("base_link", "ee_link"):
        link = doc.string((*key, role), spec[role])
        if link not in model.links:
            doc.fail(
                (*key, role),
                f"no link named {link!r} in {model.path.name}; "
                f"valid links: {', '.join(model.links)}",
            )
        links[role] = link
    base_link, ee_link = links["base_link"], links["ee_link"]
    max_speed = doc.positive((*key, "max_joint_speed"), spec["max_joint_speed"], "rad/s or m/s")
    path = model.path_between(base_link, ee_link)
    movable = [joint for joint in path if joint.kind != "fixed"]
    kinds = {kind.value for kind in JointKind}
    for joint in movable:
        if joint.kind not in kinds:
            doc.fail(
                key,
                f"joint {joint.name!r} is {joint.kind}; limbs can have only "
                f"{', '.join(JointKind)} and fixed joints",
            )
    if not movable:
        doc.fail(key, f"no movable joint between {base_link!r} and {ee_link!r}")
    joints = tuple(
        JointSpec(
            name=joint.name,
            kind=JointKind(joint.kind),
            lower=joint.lower,
            upper=joint.upper,
            max_speed=min(max_speed, joint.velocity) if joint.velocity > 0 else max_speed,
        )
        for joint in movable
    )
    grippers: tuple[str, ...] = ()
    if "grippers" in spec:
        value_g = spec["grippers"]
        if not isinstance(value_g, list) or not all(isinstance(g, str) for g in value_g):
            doc.fail((*key, "grippers"), f"expected a list of link names, got {value_g!r}")
        for gripper in value_g:
            if gripper not in model.links:
                doc.fail(
                    (*key, "grippers"),
                    f"no link named {gripper!r} in {model.path.name}; "
                    f"valid links: {', '.join(model.links)}",
                )
        grippers = tuple(value_g)
    ik_mask: tuple[float, ...] | None = None
    if "ik_mask" in spec:
        ik_mask = doc.numbers((*key, "ik_mask"), spec["ik_mask"], 6, "weights on x y z rx ry rz")
        if any(w < 0 for w in ik_mask) or not any(w > 0 for w in ik_mask):
            doc.fail((*key, "ik_mask"), f"weights must be >= 0 and not all 0, got {ik_mask}")
    postures = _postures(doc, key, spec.get("postures"), joints)
    interfaces: Mapping[str, str] = MappingProxyType({})
    if "interfaces" in spec:
        interfaces = _interfaces(doc, model, (*key, "interfaces"), spec["interfaces"])
        on_chain = {base_link, *(j.parent for j in path), *(j.child for j in path)}
        for end, link in interfaces.items():
            if link not in on_chain:
                doc.fail(
                    (*key, "interfaces", end),
                    f"link {link!r} is not on the chain from {base_link!r} to {ee_link!r}; "
                    f"links on it: {', '.join(sorted(on_chain))}",
                )
    return LimbSpec(
        name=name,
        base_link=base_link,
        ee_link=ee_link,
        joints=joints,
        max_joint_speed=max_speed,
        mass_kg=model.mass_beyond(base_link, path),
        grippers=grippers,
        ik_mask=ik_mask,
        postures=postures,
        interfaces=interfaces,
    )


def _postures(
    doc: YamlDocument, key: tuple[str, ...], value: Any, joints: tuple[JointSpec, ...]
) -> Mapping[str, tuple[float, ...]]:
    postures: dict[str, tuple[float, ...]] = {}
    if value is not None:
        key = (*key, "postures")
        if not isinstance(value, dict):
            doc.fail(key, f"expected a mapping of posture name to joint values, got {kind(value)}")
        for posture_name, posture_value in value.items():
            posture_key = (*key, str(posture_name))
            q = doc.numbers(posture_key, posture_value, len(joints), "one per joint, rad or m")
            for joint, v in zip(joints, q, strict=True):
                if not joint.lower - _POSTURE_SLACK <= v <= joint.upper + _POSTURE_SLACK:
                    doc.fail(
                        posture_key,
                        f"{joint.name} = {v} is outside its limits "
                        f"[{joint.lower}, {joint.upper}] {joint.unit}",
                    )
            postures[str(posture_name)] = q
    if "home" not in postures:
        # Default home: every joint at 0, moved into its limits.
        postures = {
            "home": tuple(float(np.clip(0.0, j.lower, j.upper)) for j in joints),
            **postures,
        }
    return MappingProxyType(postures)


# ---------------------------------------------------------------------- URDF


@dataclass(frozen=True)
class _UrdfJoint:
    name: str
    kind: str
    parent: str
    child: str
    lower: float
    upper: float
    velocity: float


@dataclass(frozen=True)
class _UrdfModel:
    """The parts of a URDF the registry needs: links, the joint tree, limits and masses."""

    path: Path
    links: tuple[str, ...]
    masses: Mapping[str, float]
    joint_to_parent: Mapping[str, _UrdfJoint]  # child link -> the joint above it

    @classmethod
    def read(cls, path: Path) -> _UrdfModel:
        def fail(reason: str) -> NoReturn:
            raise RobotDescriptionError(path, "<urdf>", reason)

        try:
            root = ElementTree.parse(path).getroot()
        except (OSError, ElementTree.ParseError) as exc:
            fail(f"not a readable URDF file: {exc} (xacro files must be expanded first)")
        if root.tag != "robot":
            fail(f"the root element is <{root.tag}>, not <robot>")
        links: list[str] = []
        masses: dict[str, float] = {}
        for element in root.findall("link"):
            link = element.get("name")
            if not link:
                fail("a <link> has no name")
            if link in masses:
                fail(f"link {link!r} is defined twice")
            links.append(link)
            mass = element.find("inertial/mass")
            masses[link] = _float(mass.get("value") if mass is not None else None, 0.0, fail)
        joints: dict[str, _UrdfJoint] = {}
        for element in root.findall("joint"):
            joint_name = element.get("name") or "?"
            kind = element.get("type") or "?"
            parent_el, child_el = element.find("parent"), element.find("child")
            parent = parent_el.get("link") if parent_el is not None else None
            child = child_el.get("link") if child_el is not None else None
            if parent is None or parent not in masses:
                fail(f"joint {joint_name!r}: parent link {parent!r} is not defined")
            if child is None or child not in masses:
                fail(f"joint {joint_name!r}: child link {child!r} is not defined")
            if child in joints:
                fail(f"link {child!r} is the child of two joints")
            limit = element.find("limit")
            lower, upper = -math.inf, math.inf
            velocity = 0.0
            if limit is not None:
                velocity = _float(limit.get("velocity"), 0.0, fail)
            if kind in ("revolute", "prismatic"):
                if limit is None or limit.get("lower") is None or limit.get("upper") is None:
                    fail(f"{kind} joint {joint_name!r} needs <limit lower=... upper=...>")
                lower = _float(limit.get("lower"), 0.0, fail)
                upper = _float(limit.get("upper"), 0.0, fail)
                if not lower <= upper:
                    fail(f"joint {joint_name!r}: lower limit {lower} > upper limit {upper}")
            elif (
                kind == "continuous"
                and limit is not None
                and limit.get("lower") is not None
                and limit.get("upper") is not None
            ):
                # URDF says continuous joints have no position limits, but roboticstoolbox
                # honours them when given; follow it, so both views of the chain agree.
                lower = _float(limit.get("lower"), -math.inf, fail)
                upper = _float(limit.get("upper"), math.inf, fail)
            joints[child] = _UrdfJoint(joint_name, kind, parent, child, lower, upper, velocity)
        if not links:
            fail("no <link> elements")
        return cls(path, tuple(links), MappingProxyType(masses), MappingProxyType(joints))

    def root(self) -> str:
        """The root link: the one that is no joint's child (the first such, in file order)."""
        for link in self.links:
            if link not in self.joint_to_parent:
                return link
        raise RobotDescriptionError(self.path, "<urdf>", "no root link (a joint loop)")

    def total_mass(self) -> float:
        """Sum of every link's mass [kg]."""
        return _kg(sum(self.masses.values()))

    def ancestors(self, link: str) -> list[str]:
        """``link`` and every link above it, up to the root."""
        chain = [link]
        seen = {link}
        while chain[-1] in self.joint_to_parent:
            parent = self.joint_to_parent[chain[-1]].parent
            if parent in seen:
                raise RobotDescriptionError(self.path, "<urdf>", f"joint loop through {parent!r}")
            seen.add(parent)
            chain.append(parent)
        return chain

    def path_between(self, base: str, end: str) -> list[_UrdfJoint]:
        """Joints from ``base`` to ``end``: up to their common ancestor, then down.

        This is the joint order of :class:`~limbtree.kinematics.chain.KinematicChain`.
        """
        up = self.ancestors(base)
        down = self.ancestors(end)
        common = next((link for link in up if link in set(down)), None)
        if common is None:
            raise RobotDescriptionError(
                self.path, "<urdf>", f"links {base!r} and {end!r} are in different trees"
            )
        joints = [self.joint_to_parent[link] for link in up[: up.index(common)]]
        joints += [self.joint_to_parent[link] for link in reversed(down[: down.index(common)])]
        return joints

    def subtree(self, link: str) -> set[str]:
        """``link`` and every link below it."""
        children: dict[str, list[str]] = {}
        for joint in self.joint_to_parent.values():
            children.setdefault(joint.parent, []).append(joint.child)
        found, stack = set(), [link]
        while stack:
            current = stack.pop()
            found.add(current)
            stack.extend(children.get(current, ()))
        return found

    def mass_beyond(self, base: str, path: Sequence[_UrdfJoint]) -> float:
        """Mass [kg] of the links on the end-effector side of ``base``.

        When the chain goes down the tree, that is the subtree of the first link after
        ``base``; when it goes up (a limb held by its tip), everything but ``base``'s subtree.
        """
        first = path[0]
        if first.parent == base:
            return _kg(sum(self.masses[link] for link in self.subtree(first.child)))
        below_base = self.subtree(base)
        return _kg(sum(m for link, m in self.masses.items() if link not in below_base))


def _kg(total: float) -> float:
    """A sum of masses [kg] rounded to 1 mg, so 0.1 + 0.2 reads 0.3."""
    return round(float(total), 6)


def _float(text: str | None, default: float, fail: Callable[[str], NoReturn]) -> float:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        fail(f"{text!r} is not a number")
    if math.isnan(value):
        fail(f"{text!r} is not a number")
    return value
