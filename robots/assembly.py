"""The simulated world of the self-assembly missions (seed 002): modules to grasp, seen by a mocap.

An :class:`AssemblyLimb` is a :class:`~limbtree.robots.sim.SimulatedLimb` in a world that holds
modules (:mod:`limbtree.robots.modules`: seed 002's MoonBot wheels), each placed by a
:class:`WorldModule` in the limb's base frame, and watched by a
:class:`~limbtree.robots.mocap.MotionCapture` (seed 002 Sec. III-A: 180 Hz, sub-millimetre):

- ``gripper(CLOSE)`` attaches a module when the limb's TRUE end-effector pose
  (:meth:`~limbtree.robots.sim.SimulatedLimb.true_ee_pose`, with backlash and flex) is within
  the module's grasp tolerance of one of its grasp points; the module then moves rigidly with
  the true end-effector. Otherwise the gripper closes on nothing. ``gripper(OPEN)`` releases
  the module where it is.
- Every state's ``detail`` gains ``"attached"`` (the attached module's name, or None),
  ``"mocap"`` (body -> ``[x, y, z, qx, qy, qz, qw]`` in the limb BASE frame, noise included:
  ``"ee"`` for the end-effector, ``"<module>/<grasp point>"`` for every grasp point) and
  ``"mocap_t"`` (the time [s] of that motion-capture frame, sample and hold).

Nothing here reads the wall clock, and the only randomness is the motion capture's noise,
seeded from the limb's seed: the same seed, world and calls give the same states.
``docs/world.md`` describes the world for mission authors.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from limbtree.kinematics.errors import InvalidPoseError
from limbtree.kinematics.pose import Pose
from limbtree.robots.errors import RobotsError
from limbtree.robots.mocap import DEFAULT_NOISE_M, DEFAULT_RATE_HZ, MocapFrame, MotionCapture
from limbtree.robots.modules import ModuleSpec, UnknownModuleError, load_module, module_names
from limbtree.robots.registry import RobotSpec
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.transport.driver import GripperAction

#: The motion-capture body of the end-effector.
EE_BODY: Final = "ee"
#: Default motion-capture rotation noise [rad] per axis (standard deviation): 0.1 degrees.
DEFAULT_MOCAP_NOISE_RAD: Final = math.radians(0.1)
#: The keys of one entry of :func:`world_from_json`.
WORLD_JSON_KEYS: Final = ("name", "module", "pose")

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


class WorldError(RobotsError, ValueError):
    """A world (its modules and their placement) was given wrongly.

    Attributes:
        index: the position of the bad entry in the world, or None for the whole world.
        name: the bad entry's name, or None when unknown.
    """

    def __init__(self, message: str, *, index: int | None = None, name: str | None = None) -> None:
        super().__init__(message)
        self.index = index
        self.name = name


@dataclass(frozen=True)
class WorldModule:
    """One module placed in a limb's world.

    Attributes:
        name: its name in the world (letters, digits, ``_ . -``); motion-capture bodies are
            ``"<name>/<grasp point>"``.
        module: which module (:func:`~limbtree.robots.modules.module_names`).
        pose_in_base: the module frame in the limb's base frame [m].

    Raises:
        WorldError: for a bad name, a module that is not a name, or a pose that is not a Pose.
    """

    name: str
    module: str
    pose_in_base: Pose

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise WorldError(
                f"world module name must be letters, digits, _ . - (no '/'), got {self.name!r}",
                name=self.name if isinstance(self.name, str) else None,
            )
        if not isinstance(self.module, str) or not self.module:
            raise WorldError(
                f"world module {self.name!r}: module must be a module name, got {self.module!r}",
                name=self.name,
            )
        if not isinstance(self.pose_in_base, Pose):
            raise WorldError(
                f"world module {self.name!r}: pose_in_base must be a Pose, "
                f"got {self.pose_in_base!r}",
                name=self.name,
            )


def grasp_poses(modules: Sequence[WorldModule]) -> dict[str, Pose]:
    """Every grasp point of ``modules``: ``"NAME/GRASP_POINT"`` -> its pose.

    Poses are in the frame the modules are placed in (their ``pose_in_base``'s frame).

    Raises:
        UnknownModuleError: for a module limbtree does not know.
    """
    return {
        f"{module.name}/{name}": module.pose_in_base @ point.pose
        for module in modules
        for name, point in load_module(module.module).grasp_points.items()
    }


class _Placed:
    """A module in the world: where it is, and how it hangs from the end-effector if held."""

    def __init__(self, world: WorldModule, spec: ModuleSpec) -> None:
        self.world = world
        self.spec = spec
        self.grasps_in_module = {name: gp.pose for name, gp in spec.grasp_points.items()}
        self.pose = world.pose_in_base
        self.grasps_in_base: dict[str, Pose] = {}
        self.grasps_in_ee: dict[str, Pose] | None = None  # while attached
        self.ee_to_module: Pose | None = None  # while attached
        self.place(world.pose_in_base)

    def place(self, pose: Pose) -> None:
        """Leave the module at ``pose`` (base frame)."""
        self.pose = pose
        self.grasps_in_base = {name: pose @ g for name, g in self.grasps_in_module.items()}
        self.grasps_in_ee = None
        self.ee_to_module = None

    def attach(self, ee: Pose) -> None:
        """Hold the module rigidly from the end-effector at ``ee`` (base frame)."""
        ee_to_module = ee.inverse() @ self.pose
        self.ee_to_module = ee_to_module
        self.grasps_in_ee = {name: ee_to_module @ g for name, g in self.grasps_in_module.items()}

    def grasp_in_base(self, grasp_point: str, ee: Pose) -> Pose:
        """The grasp point's pose in the base frame, the end-effector being at ``ee``."""
        if self.grasps_in_ee is None:
            return self.grasps_in_base[grasp_point]
        return ee @ self.grasps_in_ee[grasp_point]

    def pose_now(self, ee: Pose) -> Pose:
        """The module's pose in the base frame, the end-effector being at ``ee``."""
        return self.pose if self.ee_to_module is None else ee @ self.ee_to_module


class AssemblyLimb(SimulatedLimb):
    """A simulated limb in a world of modules to grasp, watched by a motion capture.

    Args:
        robot: the robot, or its name in the registry.
        limb: the limb's name; None for a robot with a single limb.
        seed: seed of the limb's sensor noise and IK restarts, and of the default motion
            capture's noise.
        config: the limb's non-idealities and scheduled faults (default: ideal).
        world: the modules, placed in this limb's base frame; names must be unique.
        mocap: the motion capture to publish; it must not already track ``"ee"`` or the
            grasp-point bodies. Default: 180 Hz, 0.3 mm and 0.1 degree noise (standard
            deviations per axis; ``config.mocap_noise_m`` and ``mocap_rot_noise_rad`` change
            them), seeded with ``seed``.
        base: the limb's base in the world, for the direction of gravity (see
            :class:`~limbtree.robots.sim.SimulatedLimb`).

    Raises:
        WorldError: for an unknown module (it lists the valid ones) or a name used twice.
        limbtree.robots.mocap.MotionCaptureError: if ``mocap`` already uses a body name.
        SimConfigError, UnknownRobotError, UnknownLimbError, DriverError: as
            :class:`~limbtree.robots.sim.SimulatedLimb`.
    """

    def __init__(
        self,
        robot: RobotSpec | str,
        limb: str | None = None,
        *,
        seed: int = 0,
        config: SimConfig | None = None,
        world: Sequence[WorldModule] = (),
        mocap: MotionCapture | None = None,
        base: Pose | None = None,
    ) -> None:
        super().__init__(robot, limb, seed=seed, config=config, base=base)
        self._world = tuple(world)
        self._placed: dict[str, _Placed] = {}
        for index, item in enumerate(self._world):
            if not isinstance(item, WorldModule):
                raise WorldError(
                    f"world[{index}]: expected a WorldModule, got {item!r}", index=index
                )
            if item.name in self._placed:
                raise WorldError(
                    f"world[{index}]: the name {item.name!r} is used twice",
                    index=index,
                    name=item.name,
                )
            try:
                spec = load_module(item.module)
            except UnknownModuleError as exc:
                raise WorldError(
                    f"world module {item.name!r}: {exc}", index=index, name=item.name
                ) from None
            self._placed[item.name] = _Placed(item, spec)
        self._attached: _Placed | None = None
        self._attached_at: str | None = None
        self._ee: Pose | None = None  # the true end-effector pose as of the last sync
        self._frame: MocapFrame | None = None
        self._frame_lists: dict[str, list[float]] = {}
        if mocap is None:
            noise_m, noise_rad = self.config.mocap_noise_m, self.config.mocap_rot_noise_rad
            mocap = MotionCapture(
                rate_hz=DEFAULT_RATE_HZ,
                noise_m=DEFAULT_NOISE_M if noise_m is None else noise_m,
                noise_rad=DEFAULT_MOCAP_NOISE_RAD if noise_rad is None else noise_rad,
                seed=seed,
            )
        self._mocap = mocap
        mocap.track(EE_BODY, self._true_ee)
        for name, placed in self._placed.items():
            for grasp_point in placed.grasps_in_module:
                mocap.track(
                    f"{name}/{grasp_point}", partial(self._grasp_source, placed, grasp_point)
                )

    # ------------------------------------------------------------------ the world

    @property
    def world(self) -> tuple[WorldModule, ...]:
        """The modules as they were placed at the start."""
        return self._world

    @property
    def mocap(self) -> MotionCapture:
        """The motion capture whose frames the states publish."""
        return self._mocap

    @property
    def attached(self) -> str | None:
        """The name of the module the gripper holds, or None."""
        return None if self._attached is None else self._attached.world.name

    @property
    def attached_grasp_point(self) -> str | None:
        """The grasp point the gripper holds the module by, or None."""
        return self._attached_at

    def module_pose(self, name: str) -> Pose:
        """Where a module really is now, in the base frame (no motion-capture noise).

        Raises:
            WorldError: for a name not in the world; it lists the valid ones.
        """
        return self._placed_named(name).pose_now(self._true_ee())

    def grasp_pose(self, name: str, grasp_point: str) -> Pose:
        """Where a module's grasp point really is now, in the base frame.

        Raises:
            WorldError: for a module name not in the world; it lists the valid ones.
            limbtree.robots.modules.UnknownGraspPointError: for an unknown grasp point.
        """
        placed = self._placed_named(name)
        placed.spec.grasp_point(grasp_point)
        return placed.grasp_in_base(grasp_point, self._true_ee())

    # ------------------------------------------------------------------ driver hooks

    def sync(self, t: float) -> None:
        """Integrate the limb to ``t`` [s]; the true end-effector pose is then recomputed."""
        super().sync(t)
        self._ee = None

    def write_gripper(self, action: GripperAction) -> None:
        """Close: attach a module within its grasp tolerance, if any. Open: release it.

        Closing an already closed gripper that holds nothing tries again (the simulated
        gripper opens and closes at once); closing one that holds a module keeps it.
        """
        super().write_gripper(action)
        if action is GripperAction.OPEN:
            held = self._attached
            if held is not None:
                held.place(held.pose_now(self._true_ee()))
            self._attached = None
            self._attached_at = None
        elif self._attached is None:
            self._grasp()

    def extra_detail(self) -> Mapping[str, Any]:
        """The parent's entries, plus ``attached``, ``mocap`` and ``mocap_t``.

        ``mocap`` maps each motion-capture body to its observed pose
        ``[x, y, z, qx, qy, qz, qw]`` in the base frame, from the frame in force at the
        state's time; the map is shared by the states of one frame: do not change it.
        """
        detail = dict(super().extra_detail())
        detail["attached"] = self.attached
        frame = self._mocap.frame(self.time)
        if frame is not self._frame:
            self._frame = frame
            self._frame_lists = {name: pose.tolist() for name, pose in frame.poses.items()}
        detail["mocap"] = self._frame_lists
        detail["mocap_t"] = frame.t
        return detail

    # ------------------------------------------------------------------ helpers

    def _true_ee(self) -> Pose:
        """The true end-effector pose (base frame), computed once per sync."""
        ee = self._ee
        if ee is None:
            ee = self._ee = self.true_ee_pose()
        return ee

    def _grasp_source(self, placed: _Placed, grasp_point: str) -> Pose:
        return placed.grasp_in_base(grasp_point, self._true_ee())

    def _grasp(self) -> None:
        """Attach the module whose grasp point is nearest the true end-effector, if in tolerance."""
        ee = self._true_ee()
        best: tuple[float, _Placed, str] | None = None
        for placed in self._placed.values():
            tolerance = placed.spec.grasp_tolerance
            for grasp_point, pose in placed.grasps_in_base.items():
                if tolerance.admits(ee, pose):
                    distance = ee.distance_to(pose)
                    if best is None or distance < best[0]:
                        best = (distance, placed, grasp_point)
        if best is not None:
            _, placed, grasp_point = best
            placed.attach(ee)
            self._attached = placed
            self._attached_at = grasp_point

    def _placed_named(self, name: str) -> _Placed:
        placed = self._placed.get(name)
        if placed is None:
            valid = ", ".join(self._placed) or "(none)"
            raise WorldError(f"no module {name!r} in this world; modules: {valid}", name=name)
        return placed


def world_from_json(text: str) -> tuple[WorldModule, ...]:
    """Read a world as ``limbtree agent --world`` takes it.

    The text is a JSON list of ``{"name": ..., "module": ..., "pose": [x, y, z, qx, qy, qz,
    qw]}``, the pose being the module frame in the limb's base frame (metres, unit quaternion
    scalar last).

    Args:
        text: the JSON text.

    Returns:
        The modules, in order.

    Raises:
        WorldError: naming the bad entry (``world[1] ('wheel'): ...``): not JSON, not a list,
            an entry that is not an object, a missing or unknown key, a bad name, a name used
            twice, an unknown module (the valid ones are listed) or a bad pose.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise WorldError(f"world JSON: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise WorldError(
            'world JSON: expected a list of {"name", "module", "pose"} objects, '
            f"got {type(data).__name__} {data!r}"
        )
    valid_modules = module_names()
    seen: dict[str, int] = {}
    world: list[WorldModule] = []
    for index, entry in enumerate(data):
        item = _world_entry(index, entry, valid_modules, seen)
        seen[item.name] = index
        world.append(item)
    return tuple(world)


def _world_entry(
    index: int, entry: object, valid_modules: Sequence[str], seen: Mapping[str, int]
) -> WorldModule:
    """One entry of :func:`world_from_json`, checked."""
    where = f"world[{index}]"
    if not isinstance(entry, dict):
        raise WorldError(
            f'{where}: expected an object {{"name", "module", "pose"}}, '
            f"got {type(entry).__name__} {entry!r}",
            index=index,
        )
    raw_name = entry.get("name")
    name = raw_name if isinstance(raw_name, str) else None
    if name is not None:
        where = f"{where} ({name!r})"

    def fail(reason: str) -> WorldError:
        return WorldError(f"{where}: {reason}", index=index, name=name)

    for key in entry:
        if key not in WORLD_JSON_KEYS:
            raise fail(f"unknown key {key!r}; valid keys: {', '.join(WORLD_JSON_KEYS)}")
    for key in WORLD_JSON_KEYS:
        if key not in entry:
            raise fail(f"missing key {key!r}; each entry has {', '.join(WORLD_JSON_KEYS)}")
    if name is None or not _NAME.match(name):
        raise fail(f"name must be letters, digits, _ . - (no '/'), got {raw_name!r}")
    if name in seen:
        raise fail(f"the name {name!r} is used twice (also world[{seen[name]}])")
    module = entry["module"]
    if not isinstance(module, str) or module not in valid_modules:
        raise fail(f"unknown module {module!r}; valid modules: {', '.join(valid_modules)}")
    pose = entry["pose"]
    if (
        not isinstance(pose, list)
        or len(pose) != 7
        or not all(_is_number(v) and math.isfinite(v) for v in pose)
    ):
        raise fail(
            "pose must be 7 finite numbers [x, y, z, qx, qy, qz, qw] (metres, unit "
            f"quaternion scalar last, limb base frame), got {pose!r}"
        )
    try:
        pose_in_base = Pose.from_array(pose)
    except InvalidPoseError as exc:
        raise fail(f"pose: {exc}") from None
    return WorldModule(name, module, pose_in_base)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
