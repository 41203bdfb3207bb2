"""Modules a limb can grasp: seed 002's MoonBot wheels, their grasp points and tolerances.

A module is described by one YAML file in ``limbtree/robots/descriptions/modules/``
(``<name>.yaml``): its mass and size, and named grasp points. A grasp point's pose, in the
module frame, is where the end-effector frame must be to grasp it; ``approach`` says which
way the gripper moves in its last approach, so the approach pose of seed 002 Sec. III-B,
"150 mm above the grasp point", is ``GraspPoint.approach_pose(0.15)``, an offset in the grasp
frame. Closing the gripper attaches the module when the end-effector is within the module's
:class:`GraspTolerance` of a grasp point (:mod:`limbtree.robots.assembly`).

Module file keys (SI units: m, kg, rad; quaternions ``[qx, qy, qz, qw]``, scalar last)::

    name: moonbot_wheel_v2         # required; equals the file name without .yaml
    description: One line about it # optional
    paper: Where the numbers come from
    notes: What was chosen where the paper is silent
    mass_kg: 5.5                   # required, > 0
    size_m: [0.4, 0.4, 0.2]        # required: bounding box along the module's x, y, z
    approach_distance_m: 0.15      # optional (default 0.15, seed 002 Sec. III-B)
    grasp_tolerance:               # required
      position_m: 0.015            #   > 0: end-effector to grasp point distance
      angle_rad: 0.0873            #   > 0: end-effector to grasp frame rotation angle
    grasp_points:                  # required, at least one
      grasp:
        description: ...           # optional
        position_m: [0, 0, 0.1]    # required, module frame
        quaternion: [1, 0, 0, 0]   # required, unit, module frame
        approach: [0, 0, 1]        # optional (default +z): unit vector, grasp frame

Loading reads the YAML only; nothing is cached, so there is no shared state between callers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from limbtree.kinematics.pose import Pose
from limbtree.robots.errors import RobotsError
from limbtree.robots.yamldoc import YamlDocument, is_number

#: Seed 002 Sec. III-B: the alignment first drives the end-effector 150 mm above the grasp
#: point [m].
DEFAULT_APPROACH_DISTANCE_M: Final = 0.15
#: The extension of module files.
MODULE_SUFFIX: Final = ".yaml"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_TOP_KEYS: Final = (
    "name",
    "description",
    "paper",
    "notes",
    "mass_kg",
    "size_m",
    "approach_distance_m",
    "grasp_tolerance",
    "grasp_points",
)
_TOLERANCE_KEYS: Final = ("position_m", "angle_rad")
_GRASP_KEYS: Final = ("description", "position_m", "quaternion", "approach")
#: How far from 1 the norm of a unit vector in a module file may be.
_UNIT_SLACK: Final = 1e-6


class UnknownModuleError(RobotsError, LookupError):
    """No shipped module has that name.

    Attributes:
        name: the module name that was asked for.
        valid_names: every module name that can be loaded, sorted.
    """

    def __init__(self, name: str, valid_names: Sequence[str]) -> None:
        self.name = name
        self.valid_names = tuple(valid_names)
        super().__init__(
            f"unknown module {name!r}; valid modules: {', '.join(self.valid_names) or '(none)'}"
        )


class UnknownGraspPointError(RobotsError, LookupError):
    """A module has no grasp point of that name.

    Attributes:
        module: the module's name.
        grasp_point: the grasp point name that was asked for.
        valid_grasp_points: the module's grasp point names, in file order.
    """

    def __init__(self, module: str, grasp_point: str, valid_grasp_points: Sequence[str]) -> None:
        self.module = module
        self.grasp_point = grasp_point
        self.valid_grasp_points = tuple(valid_grasp_points)
        super().__init__(
            f"module {module!r} has no grasp point {grasp_point!r}; "
            f"valid grasp points: {', '.join(self.valid_grasp_points)}"
        )


class ModuleDescriptionError(RobotsError, ValueError):
    """A module file is wrong. The message reads ``FILE[:LINE[:COLUMN]]: KEY: REASON``.

    Attributes:
        path: the file that is wrong.
        key: the dotted key that is wrong (``"grasp_points.grasp.quaternion"``), or
            ``"<file>"``, ``"<yaml>"`` or ``"<top>"`` for the whole file.
        reason: what is wrong and, where it helps, the valid choices.
        line: 1-based line of the key in the file, or None when unknown.
        column: 1-based column of the value, when the error is about one value (a number
            YAML 1.1 reads in another base), else None.
    """

    def __init__(
        self, path: Path, key: str, reason: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.path = path
        self.key = key
        self.reason = reason
        self.line = line
        self.column = column
        where = f"{path}:{line}" if line is not None else f"{path}"
        if line is not None and column is not None:
            where += f":{column}"
        super().__init__(f"{where}: {key}: {reason}")


@dataclass(frozen=True)
class GraspTolerance:
    """How close the end-effector must be to a grasp point for the gripper to attach.

    Attributes:
        position_m: largest distance [m] between the end-effector and the grasp point.
        angle_rad: largest rotation angle [rad] between the end-effector and grasp frames.

    Raises:
        ValueError: if either is not a finite number > 0.
    """

    position_m: float
    angle_rad: float

    def __post_init__(self) -> None:
        for name in ("position_m", "angle_rad"):
            value = getattr(self, name)
            if not (is_number(value) and math.isfinite(value) and value > 0.0):
                raise ValueError(
                    f"GraspTolerance.{name} must be a finite number > 0, got {value!r}"
                )
            object.__setattr__(self, name, float(value))

    def admits(self, end_effector: Pose, grasp: Pose) -> bool:
        """Whether an end-effector pose is within this tolerance of a grasp pose.

        Args:
            end_effector: the end-effector pose.
            grasp: the grasp point's pose, in the same frame.
        """
        return (
            end_effector.distance_to(grasp) <= self.position_m
            and end_effector.angle_to(grasp) <= self.angle_rad
        )


@dataclass(frozen=True)
class GraspPoint:
    """A place on a module where a gripper can hold it.

    Attributes:
        name: its name, unique in its module (no ``/``: it makes the motion-capture body
            ``"<world module>/<grasp point>"``).
        pose: where the end-effector frame must be to grasp, in the module frame.
        approach: ``(3,)`` unit vector in the grasp frame: the way the gripper moves in its
            last approach (towards the module).
        description: one line about it.
    """

    name: str
    pose: Pose
    approach: tuple[float, float, float] = (0.0, 0.0, 1.0)
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"GraspPoint.name must be letters, digits, _ . -; got {self.name!r}")
        if not isinstance(self.pose, Pose):
            raise ValueError(f"GraspPoint.pose must be a Pose, got {self.pose!r}")
        approach = tuple(float(v) for v in self.approach)
        norm = math.sqrt(sum(v * v for v in approach)) if len(approach) == 3 else 0.0
        if not (math.isfinite(norm) and abs(norm - 1.0) <= _UNIT_SLACK):
            raise ValueError(f"GraspPoint.approach must be a unit 3-vector, got {self.approach!r}")
        object.__setattr__(self, "approach", tuple(v / norm for v in approach))

    def approach_offset(self, distance_m: float = DEFAULT_APPROACH_DISTANCE_M) -> Pose:
        """The approach pose relative to the grasp frame: backed off along the approach.

        ``grasp_in_base @ point.approach_offset(0.15)`` is seed 002's pose 150 mm above the
        grasp point (Sec. III-B); an ``align`` node's ``offset`` is this pose.

        Args:
            distance_m: how far back [m], >= 0.

        Raises:
            ValueError: for a negative or non-finite distance.
        """
        if not (is_number(distance_m) and math.isfinite(distance_m) and distance_m >= 0.0):
            raise ValueError(f"distance_m must be a finite number >= 0 [m], got {distance_m!r}")
        return Pose(-float(distance_m) * np.array(self.approach))

    def approach_pose(self, distance_m: float = DEFAULT_APPROACH_DISTANCE_M) -> Pose:
        """The approach pose in the module frame: :attr:`pose` backed off by ``distance_m``.

        Args:
            distance_m: how far back [m], >= 0.

        Raises:
            ValueError: for a negative or non-finite distance.
        """
        return self.pose @ self.approach_offset(distance_m)


@dataclass(frozen=True)
class ModuleSpec:
    """A module: what it is, where it can be grasped and how precisely.

    Attributes:
        name: the module's name (its file name without ``.yaml``).
        mass_kg: mass [kg].
        size_m: bounding box [m] along the module's x, y, z.
        grasp_points: name -> grasp point, in file order.
        grasp_tolerance: within it of a grasp point, closing the gripper attaches the module.
        approach_distance_m: the approach offset [m] (seed 002 Sec. III-B: 0.15).
        description: one line about it.
        paper: where the numbers come from.
        notes: what was chosen where the paper is silent.
        path: the file it was loaded from, or None.
    """

    name: str
    mass_kg: float
    size_m: tuple[float, float, float]
    grasp_points: Mapping[str, GraspPoint]
    grasp_tolerance: GraspTolerance
    approach_distance_m: float = DEFAULT_APPROACH_DISTANCE_M
    description: str = ""
    paper: str = ""
    notes: str = ""
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.grasp_points:
            raise ValueError(f"module {self.name!r} needs at least one grasp point")
        for key, point in self.grasp_points.items():
            if key != point.name:
                raise ValueError(f"grasp point {point.name!r} is filed under {key!r}")
        object.__setattr__(self, "grasp_points", MappingProxyType(dict(self.grasp_points)))

    def grasp_point(self, name: str) -> GraspPoint:
        """The grasp point of that name.

        Raises:
            UnknownGraspPointError: if there is none; it lists the valid names.
        """
        point = self.grasp_points.get(name)
        if point is None:
            raise UnknownGraspPointError(self.name, name, tuple(self.grasp_points))
        return point

    def approach_pose(self, grasp_point: str, distance_m: float | None = None) -> Pose:
        """The approach pose of a grasp point, in the module frame.

        Args:
            grasp_point: the grasp point's name.
            distance_m: how far back [m]; None: :attr:`approach_distance_m`.

        Raises:
            UnknownGraspPointError: for an unknown grasp point.
        """
        distance = self.approach_distance_m if distance_m is None else distance_m
        return self.grasp_point(grasp_point).approach_pose(distance)


def builtin_module_dir() -> Path:
    """The directory of the modules shipped with limbtree."""
    return Path(__file__).resolve().parent / "descriptions" / "modules"


def module_names() -> tuple[str, ...]:
    """Names of the shipped modules, sorted."""
    directory = builtin_module_dir()
    if not directory.is_dir():
        return ()
    return tuple(sorted(p.stem for p in directory.glob(f"*{MODULE_SUFFIX}") if p.is_file()))


def load_module(name: str) -> ModuleSpec:
    """Load a shipped module by name.

    Args:
        name: the module's name, e.g. ``"moonbot_wheel_v2"`` (:func:`module_names`).

    Returns:
        The validated module.

    Raises:
        UnknownModuleError: if no shipped module has that name; it lists the valid ones.
        ModuleDescriptionError: if its file is wrong; it names the file, line and key.
    """
    if isinstance(name, str) and _NAME.match(name):
        path = builtin_module_dir() / f"{name}{MODULE_SUFFIX}"
        if path.is_file():
            return _load(path, expected_name=name)
    raise UnknownModuleError(str(name), module_names())


def load_module_file(path: str | Path) -> ModuleSpec:
    """Load one module from its YAML file (its name need not match the file name).

    Raises:
        ModuleDescriptionError: if the file cannot be read or is wrong.
    """
    return _load(Path(path), expected_name=None)


# ---------------------------------------------------------------------- parsing


def _load(path: Path, *, expected_name: str | None) -> ModuleSpec:
    doc = _Document(path)
    data = doc.mapping((), doc.data, _TOP_KEYS)
    for required in ("name", "mass_kg", "size_m", "grasp_tolerance", "grasp_points"):
        if required not in data:
            doc.fail((), f"missing key {required!r}")
    name = doc.string(("name",), data["name"])
    if not _NAME.match(name):
        doc.fail(("name",), f"{name!r}: use letters, digits, _ . - only")
    if expected_name is not None and name != expected_name:
        doc.fail(("name",), f"{name!r} does not match the file name {path.name!r}")
    texts = {
        key: doc.string((key,), data[key]) if key in data else ""
        for key in ("description", "paper", "notes")
    }
    mass = doc.positive(("mass_kg",), data["mass_kg"], "kg")
    size = doc.numbers(("size_m",), data["size_m"], 3, "x, y, z extent [m]")
    if not all(v > 0.0 for v in size):
        doc.fail(("size_m",), f"every extent must be > 0 [m], got {list(size)}")
    approach_distance = DEFAULT_APPROACH_DISTANCE_M
    if "approach_distance_m" in data:
        approach_distance = doc.positive(("approach_distance_m",), data["approach_distance_m"], "m")
    tolerance_data = doc.mapping(("grasp_tolerance",), data["grasp_tolerance"], _TOLERANCE_KEYS)
    for required in _TOLERANCE_KEYS:
        if required not in tolerance_data:
            doc.fail(("grasp_tolerance",), f"missing key {required!r}")
    tolerance = GraspTolerance(
        doc.positive(("grasp_tolerance", "position_m"), tolerance_data["position_m"], "m"),
        doc.positive(("grasp_tolerance", "angle_rad"), tolerance_data["angle_rad"], "rad"),
    )
    points_data = data["grasp_points"]
    if not isinstance(points_data, dict) or not points_data:
        doc.fail(
            ("grasp_points",), f"expected a map of grasp point name -> pose, got {points_data!r}"
        )
    points = {str(key): _grasp_point(doc, str(key), value) for key, value in points_data.items()}
    return ModuleSpec(
        name=name,
        mass_kg=mass,
        size_m=(size[0], size[1], size[2]),
        grasp_points=points,
        grasp_tolerance=tolerance,
        approach_distance_m=approach_distance,
        description=texts["description"],
        paper=texts["paper"],
        notes=texts["notes"],
        path=path,
    )


def _grasp_point(doc: _Document, name: str, value: Any) -> GraspPoint:
    key = ("grasp_points", name)
    if not _NAME.match(name):
        doc.fail(key, "a grasp point name uses letters, digits, _ . - only (no '/')")
    data = doc.mapping(key, value, _GRASP_KEYS)
    for required in ("position_m", "quaternion"):
        if required not in data:
            doc.fail(key, f"missing key {required!r}")
    position = doc.numbers((*key, "position_m"), data["position_m"], 3, "x, y, z [m]")
    quaternion = doc.unit((*key, "quaternion"), data["quaternion"], 4, "qx, qy, qz, qw")
    approach = (0.0, 0.0, 1.0)
    if "approach" in data:
        unit = doc.unit((*key, "approach"), data["approach"], 3, "x, y, z in the grasp frame")
        approach = (unit[0], unit[1], unit[2])
    description = (
        doc.string((*key, "description"), data["description"]) if "description" in data else ""
    )
    return GraspPoint(name, Pose(np.array(position), np.array(quaternion)), approach, description)


class _Document(YamlDocument):
    """A parsed module file: :class:`YamlDocument` raising :class:`ModuleDescriptionError`."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, ModuleDescriptionError)

    def unit(self, key: Sequence[str], value: Any, count: int, what: str) -> tuple[float, ...]:
        """Check that ``value`` is a unit vector of ``count`` numbers; returns it normalised."""
        numbers = self.numbers(key, value, count, what)
        norm = math.sqrt(sum(v * v for v in numbers))
        if abs(norm - 1.0) > _UNIT_SLACK:
            self.fail(key, f"expected a unit vector ({what}), got norm {norm:.9g}")
        return tuple(v / norm for v in numbers)
