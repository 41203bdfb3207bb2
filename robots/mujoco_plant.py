"""The ``mujoco`` plant: rigid-body dynamics of one robot at 1 kHz, with standard interfaces.

One :class:`MujocoPlant` owns one ``MjModel``/``MjData``: the robot's links from its URDF (a
floating base when the robot floats), the world's modules as static bodies, and one weld per
standard interface (SI) of the robot, switched on when the interface latches to a module's
grasp point (seed 003 eqs. 2a-2c). Every substep of ``timestep_s`` (1 ms) the plant computes
the joint torques of each limb from its mode and steps MuJoCo:

- ``impedance`` (the default): seed 003's unified passivity-based controller (eq. 8,
  :class:`~limbtree.skills.dynamics.UnifiedImpedance`), the limb-side torque loop that a real
  MIRROR robot runs on its own computer. It sees only joint positions and velocities and the
  latched interfaces' known poses (no base sensor: the base follows from a latched frame by
  forward kinematics), exactly what it would see on hardware. Commands set its task frames'
  goals and gains; the tree never sends torques at 1 kHz.
- ``joint_position``: a joint PD servo to the commanded joint values, clipped to the joint
  limits (``hold`` in a joint mode too).
- ``joint_torque``: the commanded torques.

Motor torques are clipped to each joint's effort limit (the URDF's) and bounded so that no
joint runs faster than its speed limit. A joint at or past one of its limits gets no torque
further out, whatever its mode (the model's joint limits are stiff, see
:func:`~limbtree.robots.mujoco_model.build_model`; they stop what momentum a joint arrives
with). A limb's state says ``JOINT_LIMIT`` while its joint target in force was clipped or a
joint is within :data:`AT_LIMIT` of a limit or past it.

A limb's ends, as ``describe`` names them (the state's ``ee`` and the commands' ``frame``,
``end``): its standard interfaces (``E2``, ``E1``), or for a limb with none at its ee_link
(heavy_limb) that link, by its name; their poses are the simulated bodies' in the limb's base
frame.

MuJoCo is the plant only: the controller is a pure core of :mod:`limbtree.skills.dynamics`
that never imports it. Faults come from
:class:`~limbtree.robots.faulty.FaultyPlant` as an
:class:`~limbtree.transport.plant.Actuation`: a limb without power gets no torque (it drifts
in microgravity), blocked joints are jammed (MuJoCo's joint-limit constraint holds them), a
slowed limb's torques and speed limits are scaled, a disassembled limb gets no torque and its
state freezes.

The passivity check of seed 003 (eq. 13: W does not rise) is measured here, where W is
known at every substep: each limb's state ``detail`` carries W, its largest rise in one
substep since the last switch of the latched set or of the goals, and that rise relative
to W.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import mujoco
import numpy as np
import numpy.typing as npt

from limbtree.kinematics.pose import Pose
from limbtree.robots.assembly import WorldModule, grasp_poses
from limbtree.robots.floating import EE_FRAME_SUFFIX, floating_tree
from limbtree.robots.grippers import (
    PALM,
    TERRAIN_GRIP,
    Detachment,
    GripperError,
    GripperParams,
    GripperSet,
    GripperState,
)
from limbtree.robots.mujoco_model import (
    LIMIT_SOLIMP,
    LIMIT_SOLREF_STEPS,
    SYMMETRIC_TURNS,
    MjRobotModel,
    build_model,
    retarget_weld,
)
from limbtree.robots.mujoco_start import frame_of, mujoco_start, rigid_inverse
from limbtree.robots.registry import RobotSpec, load_robot
from limbtree.robots.terrain import TerrainSpec
from limbtree.robots.tracking import clip_to_limits
from limbtree.skills.dynamics import (
    ImpedanceGains,
    TaskFrame,
    UnifiedImpedance,
    nearest_symmetric_goal,
    pose_error,
    trusted_input,
)
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    GripperAction,
    Health,
    JointInfo,
    LimbDescription,
    LimbState,
)
from limbtree.transport.plant import (
    HEALTHY,
    Actuation,
    BaseState,
    Plant,
    PlantDescription,
    PlantLimb,
)

__all__ = [
    "CAPTURE_ANGLE_RAD",
    "CAPTURE_POSITION_M",
    "MUJOCO",
    "PALM",
    "TERRAIN_GRIP",
    "MujocoConfig",
    "MujocoPlant",
    "ServoGains",
    "TerrainSpec",
]

FloatArray = npt.NDArray[np.float64]

#: The plant kind's name.
MUJOCO: Final = "mujoco"
#: How close an end must be to a grasp point for ``latch`` to engage [m], [rad]: the SI's
#: capture range (seed 003 engages within 2 mm / 1 deg; the weld closes the rest).
CAPTURE_POSITION_M: Final = 0.005
CAPTURE_ANGLE_RAD: Final = math.radians(3.0)
#: Joint PD of ``joint_position`` mode and of blocked joints by default [N m/rad], [N m s/rad]
#: (:class:`ServoGains`; ClimbLab's HubRobo servo is 3.0 and 0.02).
SERVO_KP: Final = 400.0
SERVO_KD: Final = 40.0
#: A blocked joint's jam: MuJoCo's joint-limit constraint with this time constant [steps]
#: (at least 5: a stiffer one blows up) and impedance (``solimp`` d0, dwidth, width), the
#: model's own joint limits': a joint jammed at rest gives 0.2 mrad under 100 N m on every
#: joint of mirror_arm (MuJoCo's default limit, 6 mrad).
JAM_SOLREF_STEPS: Final = LIMIT_SOLREF_STEPS
JAM_SOLIMP: Final = LIMIT_SOLIMP
#: A joint this close to one of its limits [rad or m], or past it, is at that limit: its
#: state says ``JOINT_LIMIT``. A joint pushed onto a limit (its target clipped there, or a
#: torque into it) settles within a fraction of a mrad of it, on either side (MuJoCo's limit
#: is soft: see :meth:`MujocoPlant._off_the_limits`).
AT_LIMIT: Final = 1e-3
#: Relative damping of the speed limiter's least squares (:meth:`MujocoPlant._within_speed_limits`).
SPEED_DAMPING: Final = 1e-9
#: The command modes of a limb of this plant.
MODES: Final = (
    CommandMode.IMPEDANCE,
    CommandMode.LATCH,
    CommandMode.JOINT_POSITION,
    CommandMode.JOINT_TORQUE,
    CommandMode.HOLD,
)


@dataclass(frozen=True)
class ServoGains:
    """The joint PD servo of ``joint_position`` mode (and of blocked joints).

    Attributes:
        kp_nm_per_rad: stiffness [N m/rad], > 0 (400; ClimbLab's HubRobo: 3.0).
        kd_nms_per_rad: damping [N m s/rad], >= 0 (40; ClimbLab's HubRobo: 0.02).
    """

    kp_nm_per_rad: float = SERVO_KP
    kd_nms_per_rad: float = SERVO_KD

    def __post_init__(self) -> None:
        for name, value, low in (
            ("kp_nm_per_rad", self.kp_nm_per_rad, "> 0"),
            ("kd_nms_per_rad", self.kd_nms_per_rad, ">= 0"),
        ):
            ok = _is_number(value) and math.isfinite(value)
            ok = ok and (value > 0 if low == "> 0" else value >= 0)
            if not ok:
                raise ValueError(f"servo {name} must be a finite number {low}, got {value!r}")


#: The JSON keys of ``contact`` (:class:`~limbtree.robots.grippers.GripperParams`).
CONTACT_KEYS: Final = tuple(f.name for f in dataclasses.fields(GripperParams))


@dataclass(frozen=True)
class MujocoConfig:
    """A MuJoCo plant's settings.

    Attributes:
        timestep_s: integration step and the controller's period [s] (seed 003: 1 kHz).
        gravity: gravity in the world frame [m/s^2] (seed 003: none, on orbit).
        latched: interface frame (``LIMB.END`` or a base interface) -> ``MODULE/GRASP_POINT``
            it starts latched to; the first places the robot. A gripper's palm
            (``LIMB.palm``) -> ``terrain`` (:data:`TERRAIN_GRIP`) starts with its gripper
            closed on the terrain (the robot is then set down on it, see
            :class:`MujocoPlant`).
        postures: limb -> named posture it starts in (default ``home``).
        gains: the controller's default gains.
        terrain: the world's ground (seed 004), or None for none.
        contact: the grippers' contact law (ClimbLab's spring, its holding force).
        servo: the joint PD of ``joint_position`` mode.
    """

    timestep_s: float = 1e-3
    gravity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    latched: Mapping[str, str] = field(default_factory=dict)
    postures: Mapping[str, str] = field(default_factory=dict)
    gains: ImpedanceGains = field(default_factory=ImpedanceGains)
    terrain: TerrainSpec | None = None
    contact: GripperParams = field(default_factory=GripperParams)
    servo: ServoGains = field(default_factory=ServoGains)

    @classmethod
    def from_json(cls, text: str) -> MujocoConfig:
        """Read ``limbtree agent --physics``.

        The text is a JSON object ``{"timestep_s", "gravity": [x, y, z], "latched": {FRAME:
        "MODULE/GRASP"}, "postures": {LIMB: NAME}, "gains": {...}, "terrain": {size_m,
        cell_m, sigma_m, hurst, seed, rocks: [{at_m, height_m, radius_m}]}, "contact":
        {stiffness_n_per_m, damping_ns_per_m, grip_force_n}, "servo": {kp_nm_per_rad,
        kd_nms_per_rad}}``, every key optional (``terrain`` may be null).

        Raises:
            ValueError: naming the key that is wrong and what it must be.
        """
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--physics is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ValueError("--physics must be a JSON object")
        known = {
            "timestep_s", "gravity", "latched", "postures", "gains", "terrain", "contact", "servo"
        }  # fmt: skip
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ValueError(
                f"--physics has unknown keys {', '.join(unknown)}; valid keys are "
                f"{', '.join(sorted(known - {'terrain', 'contact', 'servo'}))}, and seed 004's "
                "terrain, contact, servo"
            )
        for key in ("latched", "postures", "gains", "contact", "servo"):
            if not isinstance(raw.get(key, {}), dict):
                raise ValueError(f"--physics {key} must be a JSON object")
        gains = raw.get("gains", {})
        try:
            made = ImpedanceGains(**{k: float(v) for k, v in gains.items()})
        except (TypeError, ValueError) as exc:
            names = ", ".join(f.name for f in dataclasses.fields(ImpedanceGains))
            raise ValueError(
                f"--physics gains {json.dumps(gains)}: {exc}; the gains are numbers named {names}"
            ) from None
        timestep = raw.get("timestep_s", 1e-3)
        gravity = raw.get("gravity", [0.0, 0.0, 0.0])
        for key, value, ok in (
            ("timestep_s", timestep, _is_number(timestep)),
            ("gravity", gravity, isinstance(gravity, list) and all(map(_is_number, gravity))),
        ):
            if not ok:
                what = "a number [s]" if key == "timestep_s" else "3 numbers [m/s^2]"
                raise ValueError(f"--physics {key} must be {what}, got {json.dumps(value)}")
        terrain = raw.get("terrain")
        terrain_spec = (
            None if terrain is None else TerrainSpec.from_mapping(terrain, "--physics terrain")
        )
        contact = _named_fields(raw.get("contact", {}), CONTACT_KEYS, "contact")
        servo = _named_fields(raw.get("servo", {}), ("kp_nm_per_rad", "kd_nms_per_rad"), "servo")
        try:
            contact_params = GripperParams(**contact)
        except GripperError as exc:
            raise ValueError(f"--physics contact {exc}") from None
        try:
            servo_gains = ServoGains(**servo)
        except ValueError as exc:
            raise ValueError(f"--physics {exc}") from None
        return cls(
            timestep_s=float(timestep),
            gravity=tuple(float(g) for g in gravity),  # type: ignore[arg-type]
            latched={str(k): str(v) for k, v in raw.get("latched", {}).items()},
            postures={str(k): str(v) for k, v in raw.get("postures", {}).items()},
            gains=made,
            terrain=terrain_spec,
            contact=contact_params,
            servo=servo_gains,
        )

    def to_json(self) -> str:
        """The ``--physics`` text of these settings."""
        return json.dumps(
            {
                "timestep_s": self.timestep_s,
                "gravity": list(self.gravity),
                "latched": dict(self.latched),
                "postures": dict(self.postures),
                "gains": dataclasses.asdict(self.gains),
                "terrain": None if self.terrain is None else self.terrain.to_mapping(),
                "contact": dataclasses.asdict(self.contact),
                "servo": dataclasses.asdict(self.servo),
            }
        )

    def __post_init__(self) -> None:
        if not (math.isfinite(self.timestep_s) and 0.0 < self.timestep_s <= 0.01):
            raise ValueError(f"timestep_s must be in (0, 0.01] s, got {self.timestep_s!r}")
        if len(self.gravity) != 3 or not all(math.isfinite(g) for g in self.gravity):
            raise ValueError(f"gravity must be 3 finite numbers [m/s^2], got {self.gravity!r}")


def _named_fields(raw: Mapping[str, Any], keys: Sequence[str], what: str) -> dict[str, float]:
    """``raw``'s numbers, its keys checked against ``keys`` (``--physics WHAT``)."""
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise ValueError(
            f"--physics {what} has unknown keys {', '.join(unknown)}; valid keys are "
            f"{', '.join(keys)}"
        )
    for key, value in raw.items():
        if not _is_number(value):
            raise ValueError(f"--physics {what} {key} must be a number, got {json.dumps(value)}")
    return {key: float(value) for key, value in raw.items()}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pose_matrix(values: Sequence[float]) -> FloatArray:
    return Pose.from_array(values).as_matrix()


def _pose_values(matrix: FloatArray) -> tuple[float, ...]:
    """``[x, y, z, qx, qy, qz, qw]`` of a rigid 4x4 transform (MuJoCo's conversion: fast)."""
    wxyz = np.empty(4)
    mujoco.mju_mat2Quat(wxyz, np.ascontiguousarray(matrix[:3, :3]).ravel())
    if wxyz[0] < 0.0:
        wxyz = -wxyz
    x, y, z = matrix[:3, 3].tolist()
    w, qx, qy, qz = wxyz.tolist()
    return (x, y, z, qx, qy, qz, w)


class MujocoPlant(Plant):
    """One robot's rigid-body dynamics in MuJoCo, with latching and the eq.-8 torque loop.

    Args:
        robot: the robot, or its name in the registry.
        base: the base in the world when nothing starts latched (else the first latch
            places it) [m].
        world: modules in the base frame (as for the kinematic plant).
        config: timestep, gravity, starting latches, postures and gains.
        seed: unused by the dynamics (deterministic); kept for the plant factory's
            signature.

    Raises:
        ValueError: for a latch naming an unknown interface or grasp point, or one whose
            interface is not at its grasp point in the starting posture.
    """

    def __init__(
        self,
        robot: RobotSpec | str,
        *,
        base: Pose | None = None,
        world: Sequence[WorldModule] = (),
        config: MujocoConfig | None = None,
        seed: int = 0,
    ) -> None:
        del seed  # rigid-body dynamics draws no noise
        spec = load_robot(robot) if isinstance(robot, str) else robot
        config = MujocoConfig() if config is None else config
        self._spec = spec
        self._config = config
        self._tree = floating_tree(spec)
        tree = self._tree
        base_given = (Pose() if base is None else base).as_matrix()
        modules_world = [
            WorldModule(m.name, m.module, Pose.from_matrix(base_given @ m.pose_in_base.as_matrix()))
            for m in world
        ]
        grasps = {name: pose.as_matrix() for name, pose in grasp_poses(modules_world).items()}
        self._terrain = None if config.terrain is None else config.terrain.terrain
        start = mujoco_start(
            spec,
            tree,
            postures=config.postures,
            base_given=base_given,
            latched=config.latched,
            grasps=grasps,
            terrain=self._terrain,
        )
        self._q0 = start.q0
        # Legs with a gripper: a palm interface, on a terrain to grip.
        self._grip_legs = start.grip_legs
        self._welds_start = dict(start.welds)
        gripped = start.gripped
        base_world = start.base_world
        self._m: MjRobotModel = build_model(
            spec,
            base_pose_world=Pose.from_matrix(base_world),
            floating=spec.floating,
            modules=modules_world,
            gravity=config.gravity,
            timestep=config.timestep_s,
            terrain=self._terrain,
        )
        model = self._m.model
        self._model = model
        self._data = mujoco.MjData(model)
        # Each limb's ends as ``describe`` names them -> the tree's frame: its interfaces (the
        # one at its ee_link first), or else its ee_link by the link's name ("LIMB.ee").
        self._ends = {limb: self._limb_ends(limb) for limb in tree.limbs}
        # The body of each end that is no interface (and so has no site) [MuJoCo body id].
        self._frame_body = {
            frame: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, spec.limb(limb).ee_link)
            for limb in tree.limbs
            for frame in self._ends[limb].values()
            if frame not in self._m.frame_site
        }
        self._set_initial(base_world)
        self._grasps = grasps
        self._controller = UnifiedImpedance(tree)
        self._latched: dict[str, str] = {}
        self._latched_pose: dict[str, FloatArray] = {}
        self._tasks: dict[str, TaskFrame] = {}
        self._task_list: tuple[TaskFrame, ...] = ()
        self._active = False
        self._qpos_index = np.concatenate([self._m.limb_qpos[limb] for limb in tree.limbs])
        self._dof_index = np.concatenate([self._m.limb_dof[limb] for limb in tree.limbs])
        self._parts = [(limb, tree.limb_slice(limb)) for limb in tree.limbs]
        self._joints_in_limb_order = np.array_equal(
            np.concatenate([np.arange(tree.n)[part] for _, part in self._parts]),
            np.arange(tree.n),
        )
        self._mass_qvel = np.empty(model.nv)
        for frame, grasp in self._welds_start.items():
            self._engage(frame, grasp, check=True)
        self._grippers: GripperSet | None = None
        if self._terrain is not None and self._grip_legs:
            self._grippers = GripperSet(self._grip_legs, self._terrain, config.contact)
        self._palm_site = np.array(
            [self._m.frame_site[f"{leg}.{PALM}"] for leg in self._grip_legs], dtype=np.intp
        )
        self._palm_body = [int(model.site_bodyid[site]) for site in self._palm_site]
        self._closed = np.array([leg in gripped for leg in self._grip_legs], dtype=bool)
        self._grip_force = np.zeros((len(self._grip_legs), 3))
        self._detachments: list[Detachment] = []
        #: The speed brake's forces of the substep in progress, and the largest so far [N m].
        self._braking: FloatArray | None = None
        self._braked_nm = 0.0
        self._contact_ticks = 0
        self._palm_velocity = np.empty(6)
        self._zero3 = np.zeros(3)
        if self._grippers is not None:
            for i, leg in enumerate(self._grip_legs):
                if self._closed[i]:
                    self._grippers.anchor(leg, self._data.site_xpos[self._palm_site[i]])
        # Limb-side state.
        self._mode: dict[str, CommandMode] = dict.fromkeys(tree.limbs, CommandMode.IMPEDANCE)
        self._q_target: dict[str, FloatArray] = {}
        self._tau_command: dict[str, FloatArray] = {}
        self._actuation: dict[str, Actuation] = dict.fromkeys(tree.limbs, HEALTHY)
        self._blocked_at: dict[str, FloatArray] = {}
        self._frozen: dict[str, LimbState] = {}
        self._actuators, self._effort_limit = self._motors()
        self._actuator_index = np.concatenate([self._actuators[limb] for limb in tree.limbs])
        self._plain = True
        self._servoed = False
        self._q_all: FloatArray | None = None  # every limb's _q_target, in joint order
        self._speed = np.concatenate(
            [np.full(spec.limb(limb).n, spec.limb(limb).max_joint_speed) for limb in tree.limbs]
        )
        self._limit = self._speed.copy()  # the speed limits under the faults in force [rad/s]
        # The joint limits [rad or m], in joint order: joint-space targets are clipped onto
        # them, and no motor pushes a joint further past one (_off_the_limits).
        self._lower = np.concatenate(
            [np.asarray(spec.limb(limb).lower, dtype=np.float64) for limb in tree.limbs]
        )
        self._upper = np.concatenate(
            [np.asarray(spec.limb(limb).upper, dtype=np.float64) for limb in tree.limbs]
        )
        self._limits = (self._lower.tolist(), self._upper.tolist())  # (as Python floats)
        # Whether the joint target in force had to be clipped onto the limits (JOINT_LIMIT).
        self._clipped = dict.fromkeys(tree.limbs, False)
        self._driven = np.ones(tree.n, dtype=bool)  # the joints whose motors have power
        # Blocked joints are jammed by shrinking their range (actuate): the ranges to restore.
        self._joint_ids = {
            limb: np.asarray(model.dof_jntid[self._m.limb_dof[limb]], dtype=np.intp)
            for limb in tree.limbs
        }
        self._range0 = np.array(model.jnt_range)
        self._limited0 = np.array(model.jnt_limited)
        self._solref0 = np.array(model.jnt_solref)
        self._solimp0 = np.array(model.jnt_solimp)
        self._limb_base_body = {
            limb: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, spec.limb(limb).base_link)
            for limb in tree.limbs
        }
        self._tau = np.zeros(tree.n)
        self._t = 0.0
        # Telemetry of the torque loop.
        self._w: float | None = None
        self._phi = 0.0
        self._ke = 0.0
        self._rise = 0.0
        self._rise_rel = 0.0
        self._w0 = 0.0
        self._rise_at: float | None = None
        self._errors: Mapping[str, tuple[float, float]] = {}
        self._rank = 0
        if gripped:
            # A robot that starts gripping (seed 004) stands on its servo: every joint holds
            # its start value under the joint PD. In impedance mode with no goal its joints
            # would get no torque, the robot would go limp and its grippers be torn off.
            for limb in tree.limbs:
                part = tree.limb_slice(limb)
                self._q_target[limb], self._clipped[limb] = clip_to_limits(
                    self._q0[part], self._lower[part], self._upper[part]
                )
                self._mode[limb] = CommandMode.JOINT_POSITION
            self._replan()
        self._description = self._describe()
        self._states: dict[str, LimbState] = {}
        mujoco.mj_forward(model, self._data)
        self._refresh()

    # ------------------------------------------------------------------ set-up

    def _frame(self, frame: str) -> str:
        return frame_of(self._spec, self._tree, frame)

    def _set_initial(self, base_world: FloatArray) -> None:
        m, data = self._m, self._data
        if m.free_qpos is not None:
            pose = Pose.from_matrix(base_world)
            data.qpos[m.free_qpos : m.free_qpos + 3] = pose.position
            qx, qy, qz, qw = pose.quaternion
            data.qpos[m.free_qpos + 3 : m.free_qpos + 7] = (qw, qx, qy, qz)
        for limb in self._tree.limbs:
            data.qpos[m.limb_qpos[limb]] = self._q0[self._tree.limb_slice(limb)]
        mujoco.mj_forward(self._model, data)

    def _motors(self) -> tuple[dict[str, npt.NDArray[np.intp]], FloatArray]:
        """Each limb's motor actuators in joint order, and every joint's torque limit [N m]."""
        model, tree = self._model, self._tree
        by_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)}
        actuators: dict[str, npt.NDArray[np.intp]] = {}
        limits = np.full(tree.n, np.inf)
        for limb in tree.limbs:
            ids = []
            for i, dof in zip(
                range(tree.n)[tree.limb_slice(limb)], self._m.limb_dof[limb], strict=True
            ):
                joint = int(model.dof_jntid[dof])
                if joint not in by_joint:
                    raise ValueError(f"robot {self._spec.name}: joint {joint} has no motor")
                a = by_joint[joint]
                ids.append(a)
                if model.actuator_ctrllimited[a]:
                    limits[i] = float(model.actuator_ctrlrange[a, 1])
            actuators[limb] = np.array(ids, dtype=np.intp)
        return actuators, limits

    def _describe(self) -> PlantDescription:
        limbs = []
        for name in self._tree.limbs:
            limb = self._spec.limb(name)
            description = LimbDescription(
                robot=self._spec.name,
                driver=MUJOCO,
                joints=tuple(
                    JointInfo(j.name, j.lower, j.upper, limb.max_joint_speed) for j in limb.joints
                ),
                end_effectors=tuple(self._ends[name]),
                command_modes=MODES,
                has_gripper=name in self._grip_legs,
            )
            limbs.append(PlantLimb(name, description))
        return PlantDescription(
            robot=self._spec.name,
            kind=MUJOCO,
            limbs=tuple(limbs),
            base_pose=_pose_values(self._base_matrix()),
            floating_base=self._m.free_qpos is not None,
        )

    def _limb_ends(self, name: str) -> dict[str, str]:
        """A limb's ends, as ``describe`` names them, -> the tree's frame of each.

        The limb's interfaces (``E2`` -> ``"arm.E2"``), the one at its ee_link first: it is
        the limb's default end-effector (the pose a limb's state reports: a MAR arm's foot,
        not its shoulder on the torso). A limb with no interface at its ee_link (heavy_limb
        has none at all) also has its ee_link, named as the link (``ee_link`` ->
        ``"arm.ee"``), first: the name the kinematic plant gives it.
        """
        limb = self._spec.limb(name)
        ends = {
            end: f"{name}.{end}"
            for end in sorted(limb.interfaces, key=lambda end: limb.interfaces[end] != limb.ee_link)
        }
        if limb.ee_link not in limb.interfaces.values():
            ends = {limb.ee_link: f"{name}.{EE_FRAME_SUFFIX}", **ends}
        return ends

    # ------------------------------------------------------------------ latching

    def _interface(self, limb: str, end: str) -> str:
        """The tree's frame of ``end`` of ``limb`` (``E1``), or of the base (``E0``)."""
        frame = self._ends[limb].get(end)
        if frame is not None:
            return frame
        frames = self._tree.frames
        base = [f for f in frames if "." not in f]
        if end in base:
            return end
        ends = sorted(self._ends[limb], key=lambda e: frames.index(self._ends[limb][e]))
        raise DriverError(
            "bad_value",
            f"limb {limb!r} has no interface {end!r}; its interfaces are "
            f"{', '.join(ends + base) or 'none'}",
        )

    def _frame_world(self, frame: str) -> FloatArray:
        """A frame's pose in the world: an interface's site, or an end's body."""
        site = self._m.frame_site.get(frame)
        if site is None:
            return self._body_world(self._frame_body[frame])
        return self._site_world(site)

    def _nearest_grasp(self, frame: str) -> tuple[str, float, float]:
        pose = self._frame_world(frame)
        best = ("", math.inf, math.inf)
        taken = set(self._latched.values())
        for name, grasp in self._grasps.items():
            if name in taken:
                continue
            d, a = pose_error(pose, nearest_symmetric_goal(grasp, pose))
            if d < best[1]:
                best = (name, d, a)
        return best

    def _engage(self, frame: str, grasp: str | None = None, *, check: bool = False) -> None:
        self._frame(frame)
        if frame in self._latched:
            return
        if grasp is None:
            grasp, d, a = self._nearest_grasp(frame)
            if not grasp or d > CAPTURE_POSITION_M or a > CAPTURE_ANGLE_RAD:
                where = (
                    f"{d * 1e3:.1f} mm / {math.degrees(a):.2f} deg from {grasp}"
                    if grasp
                    else "free"
                )
                raise DriverError(
                    "bad_value",
                    f"interface {frame} is {where}; it latches within "
                    f"{CAPTURE_POSITION_M * 1e3:g} mm and {math.degrees(CAPTURE_ANGLE_RAD):g} deg "
                    "of a grasp point: bring it closer first",
                )
        elif grasp not in self._grasps:
            raise ValueError(
                f"latched {frame}: no grasp point {grasp!r} in the world; the world has "
                f"{', '.join(sorted(self._grasps)) or 'no grasp points'}"
            )
        if check:
            pose = self._frame_world(frame)
            d, a = pose_error(pose, nearest_symmetric_goal(self._grasps[grasp], pose))
            if d > CAPTURE_POSITION_M or a > CAPTURE_ANGLE_RAD:
                raise ValueError(
                    f"latched {frame} -> {grasp}: in the starting posture the interface is "
                    f"{d * 1e3:.1f} mm / {math.degrees(a):.2f} deg from the grasp point; "
                    "choose a posture (or a base pose) that puts it there"
                )
        turned = self._turn(frame, grasp)
        retarget_weld(self._model, self._data, self._m, frame, turned)
        self._data.eq_active[self._m.weld[frame]] = 1
        self._latched[frame] = grasp
        # The pose the weld holds the interface at: the grasp point's turn it latched to.
        self._latched_pose[frame] = self._site_world(self._m.grasp_site[turned])
        self._switched()

    def _turn(self, frame: str, grasp: str) -> str:
        """The site of ``grasp`` turned about its normal nearest to ``frame`` now.

        An SI is 4-fold symmetric: the weld must pull to the nearest turn, never 90 deg or
        more.
        """
        pose = self._frame_world(frame)
        best, best_angle = grasp, math.inf
        for turn in SYMMETRIC_TURNS:
            name = f"{grasp}@{turn}" if turn else grasp
            site = self._m.grasp_site[name]
            angle = pose_error(pose, self._site_world(site))[1]
            if angle < best_angle:
                best, best_angle = name, angle
        return best

    def _site_world(self, site: int) -> FloatArray:
        data = self._data
        out = np.eye(4)
        out[:3, :3] = data.site_xmat[site].reshape(3, 3)
        out[:3, 3] = data.site_xpos[site]
        return out

    def _release(self, frame: str) -> None:
        if frame not in self._latched:
            return
        self._data.eq_active[self._m.weld[frame]] = 0
        del self._latched[frame]
        del self._latched_pose[frame]
        self._switched()

    def _controlled(self) -> bool:
        return any(mode is CommandMode.IMPEDANCE for mode in self._mode.values())

    def _switched(self) -> None:
        """The latched set or the goals changed: the passivity check starts again."""
        self._w = None
        self._rise = 0.0
        self._rise_rel = 0.0
        self._task_list = tuple(self._tasks.values())
        self._active = any(frame not in self._latched for frame in self._tasks)

    def _replan(self) -> None:
        """A limb's mode or actuation changed: whether every limb is plainly controlled."""
        healthy = all(a is HEALTHY for a in self._actuation.values())
        self._plain = all(m is CommandMode.IMPEDANCE for m in self._mode.values()) and healthy
        # Every joint under the position servo (a climbing robot): one vector expression.
        self._servoed = (
            healthy
            and self._joints_in_limb_order
            and all(m is CommandMode.JOINT_POSITION for m in self._mode.values())
        )

    # ------------------------------------------------------------------ Plant

    def describe(self) -> PlantDescription:
        """The robot as one plant of kind ``mujoco``."""
        return self._description

    @property
    def time(self) -> float:
        """The time of the last :meth:`advance` [s]."""
        return self._t

    def advance(self, t: float) -> None:
        """Integrate to ``t`` [s] in substeps of ``timestep_s``, the torque loop in each.

        Raises:
            DriverError: ``bad_value`` for a time that is not finite or goes back.
        """
        if not math.isfinite(t) or t < self._t - 1e-12:
            raise DriverError("bad_value", f"cannot advance to t={t!r} s from {self._t} s")
        dt = self._config.timestep_s
        steps = math.floor((t - self._data.time) / dt + 1e-6)
        for _ in range(steps):
            self._substep()
        if steps:
            # mj_step leaves xpos/site_xpos at the state before its last step: the poses of
            # the state reached, so that they belong to its joint values (and hold, latch).
            mujoco.mj_kinematics(self._model, self._data)
        self._t = max(t, self._t)
        self._refresh()

    def _substep(self) -> None:
        data, tree = self._data, self._tree
        q = data.qpos[self._qpos_index]
        qdot = data.qvel[self._dof_index]
        if self._latched and self._controlled():
            ke = self._kinetic_energy()
            result = self._controller.step(
                trusted_input(
                    q,
                    qdot,
                    self._latched_pose,
                    self._task_list,
                    self._config.gains.null_nms_per_rad,
                    ke,
                )
            )
            tau = np.array(result.tau)
            if self._active:
                self._track(result.lyapunov_j, result.potential_j, ke)
            else:
                # No frame under control: W is the kinetic energy alone, and what moves it
                # is the welds settling, not the controller. The check starts again with
                # the next goal.
                self._w = None
                self._phi, self._ke = result.potential_j, ke
            self._errors = result.errors
            self._rank = result.constraint_rank
        elif self._controlled():
            # Nothing latched: no constraint to react against (Psi_b has rank 0). The
            # controller is undefined; the joints are only damped.
            tau = -self._config.gains.null_nms_per_rad * qdot
        else:
            tau = np.zeros(tree.n)
        if not self._plain:
            self._limb_torques(tau, q, qdot)
        self._off_the_limits(tau, q)
        np.clip(tau, -self._effort_limit, self._effort_limit, out=tau)
        data.ctrl[self._actuator_index] = tau
        # mj_step is mj_step1 (positions, velocities, collisions) then mj_step2 (actuation,
        # accelerations, constraints, then mj_Euler). Between them: the grippers' springs
        # from the palms' current state (forces from the state after a step would be one
        # step stale, and blow up at 1 ms), then the accelerations and the speeds the step
        # would reach. Without grippers this is mj_forward then mj_Euler, to the bit.
        model = self._model
        mujoco.mj_step1(model, data)
        if self._terrain is not None and data.ncon:
            self._contact_ticks += 1  # the body touches the terrain (nothing else collides)
        if self._grippers is not None:
            self._grip()
        self._accelerations()
        try:
            self._tau = self._within_speed_limits(tau, qdot)
            mujoco.mj_Euler(model, data)
        finally:
            self._release_brake()  # (the brake acts for this substep only, whatever happens)

    def _grip(self) -> None:
        """The grippers' spring forces on the palms, into ``qfrc_applied`` (after mj_step1)."""
        model, data, grippers = self._model, self._data, self._grippers
        assert grippers is not None
        sites = self._palm_site
        positions = data.site_xpos[sites]
        velocities = np.empty((sites.size, 3))
        out = self._palm_velocity
        for i, site in enumerate(sites.tolist()):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, out, 0)
            velocities[i] = out[3:]
        result = grippers.forces(positions, velocities, self._closed, t=float(data.time))
        self._grip_force = result.forces
        self._detachments.extend(result.detached)
        applied = data.qfrc_applied
        applied[:] = 0.0
        for i, force in enumerate(result.forces.tolist()):
            if force != [0.0, 0.0, 0.0]:
                mujoco.mj_applyFT(
                    model, data, result.forces[i], self._zero3, positions[i], self._palm_body[i],
                    applied,
                )  # fmt: skip

    def _off_the_limits(self, tau: FloatArray, q: FloatArray) -> None:
        """No motor pushes a joint further past a limit it is at (``tau`` in place) [N m].

        MuJoCo's joint limit is a soft constraint: held against it by a motor's full effort,
        a joint sits past it (with MuJoCo's default limit, heavy_limb's elbow by 0.06 rad
        under 200 N m; with the model's stiff one, 0.3 mrad). So, as a limb's own software
        limit would, a joint at a limit or past it gets no torque further out, whatever its
        mode commands; the constraint then only stops what momentum it arrives with (at most
        its speed limit), and the joint settles at the limit.
        """
        # The common case first, on Python floats (faster than numpy at this size).
        for x, low, high in zip(q.tolist(), self._limits[0], self._limits[1], strict=True):
            if not low < x < high:
                break
        else:
            return  # every joint inside its limits
        tau[((q >= self._upper) & (tau > 0.0)) | ((q <= self._lower) & (tau < 0.0))] = 0.0

    def _within_speed_limits(self, tau: FloatArray, qdot: FloatArray) -> FloatArray:
        """The torques, changed if they would take a joint past its speed limit.

        Whatever the commands, no joint runs faster than its ``max_joint_speed`` (enforced in
        the plant's own time, as every agent does). ``data`` holds the forward dynamics of
        ``tau``: the joints would end the substep at ``v = qdot + dt qacc`` (Euler), and
        ``qacc`` is affine in the torques. When a powered joint would pass its limit, the
        motors take the torques that give each joint ``v`` clipped to its limits, through
        the arm's coupled response (its columns measured by MuJoCo; the joints that pass
        their limit are braked, the others keep the motion commanded). Where that needs more
        than a motor's effort limit, those torques are scaled down towards none at all (the
        joints then coast), which keeps every limit that coasting keeps.

        Returns:
            The torques applied [N m] (``data`` holds their forward dynamics).
        """
        data, dofs, limit = self._data, self._dof_index, self._limit
        actuators, dt = self._actuator_index, self._config.timestep_s
        # The common case first, on Python floats (faster than numpy at this size).
        speeds = zip(qdot.tolist(), data.qacc[dofs].tolist(), limit.tolist(), strict=True)
        for v, a, bound in speeds:
            if abs(v + dt * a) > bound:
                break
        else:
            return tau  # no joint past its limit
        fast = qdot + dt * data.qacc[dofs]
        over = self._driven & (np.abs(fast) > limit)
        if not over.any():
            return tau
        joints = np.flatnonzero(self._driven)
        response = np.empty((joints.size, joints.size))  # d qacc / d tau [1/(kg m^2)]
        acceleration = data.qacc[dofs[joints]]
        for k, j in enumerate(joints):
            probe = -1.0 if tau[j] > 0.0 else 1.0  # [N m], away from a saturated motor
            data.ctrl[actuators[j]] = tau[j] + probe
            self._accelerations()
            response[:, k] = (data.qacc[dofs[joints]] - acceleration) / probe
            data.ctrl[actuators[j]] = tau[j]
        wanted = (np.clip(fast, -limit, limit) - fast)[joints] / dt
        # Least squares, lightly damped: a joint held by a constraint (its range end, a
        # blockage) barely responds to its own motor and must not get a huge torque.
        normal = response.T @ response
        normal += SPEED_DAMPING * np.trace(normal) / joints.size * np.eye(joints.size)
        limited = tau.copy()
        limited[joints] += np.linalg.solve(normal, response.T @ wanted)
        effort = self._effort_limit
        peak = float(np.max(np.abs(limited[joints]) / effort[joints]))
        if peak > 1.0:
            limited /= peak
            np.clip(limited, -effort, effort, out=limited)  # round-off
        data.ctrl[actuators] = limited
        self._accelerations()
        if peak > 1.0:
            self._brake(qdot, joints, response)
        return limited

    def _brake(self, qdot: FloatArray, joints: npt.NDArray[np.intp], response: FloatArray) -> None:
        """Hold at their limits the joints the motors' efforts could not (after the limiter).

        The motors at their effort limits may still leave a joint passing its speed limit
        (the coupling of the others' motion, at absurd gains). The joint's brake then takes
        the rest: forces on those joints alone, against their motion, that end the substep at
        their limits (``response`` as in :meth:`_within_speed_limits`). They act for this
        substep (``qfrc_applied``, taken off again by :meth:`_release_brake`) and are not
        the motors' torques: ``effort`` stays within its limits, ``detail.braked_nm`` says
        the largest.
        """
        data, dofs, limit = self._data, self._dof_index, self._limit
        dt = self._config.timestep_s
        braked = np.zeros(joints.size, dtype=bool)
        brake = np.zeros(dofs.size)
        self._braking = brake  # (what is in qfrc_applied, for _release_brake, from the start)
        for _ in range(4 * joints.size):  # a braked joint's coupling may push another past
            speed = qdot + dt * data.qacc[dofs]
            past = np.abs(speed[joints]) > limit[joints] * (1.0 + 1e-9)
            if not past.any():
                break
            braked |= past
            wanted = (np.clip(speed, -limit, limit) - speed)[joints] / dt
            columns = response[:, braked]
            normal = columns.T @ columns
            scale = np.trace(normal) / len(normal) or 1.0  # (a joint held fast: no response)
            normal += SPEED_DAMPING * scale * np.eye(len(normal))
            more = np.zeros(dofs.size)
            more[joints[braked]] = np.linalg.solve(normal, columns.T @ wanted)
            brake += more
            data.qfrc_applied[dofs] += more
            self._accelerations()
        if braked.any():
            self._braked_nm = max(self._braked_nm, float(np.abs(brake).max()))

    def _release_brake(self) -> None:
        """Take the brake's forces of the last substep off ``qfrc_applied`` (after it)."""
        if self._braking is not None:
            self._data.qfrc_applied[self._dof_index] -= self._braking
            self._braking = None

    def _accelerations(self) -> None:
        """Forward dynamics again after a change of ``data.ctrl`` only (the rest is current)."""
        model, data = self._model, self._data
        mujoco.mj_fwdActuation(model, data)
        mujoco.mj_fwdAcceleration(model, data)
        mujoco.mj_fwdConstraint(model, data)

    def _limb_torques(self, tau: FloatArray, q: FloatArray, qdot: FloatArray) -> None:
        """The joint modes' torques, and what faults leave of each limb's (in place)."""
        kp, kd = self._config.servo.kp_nm_per_rad, self._config.servo.kd_nms_per_rad
        if self._servoed:
            target = self._q_all
            if target is None:
                targets = [self._q_target[name] for name, _ in self._parts]
                target = self._q_all = np.concatenate(targets)
            tau[:] = kp * (target - q) - kd * qdot
            return
        for limb, part in self._parts:
            mode = self._mode[limb]
            if mode is CommandMode.JOINT_POSITION:
                target = self._q_target[limb]
                tau[part] = kp * (target - q[part]) - kd * qdot[part]
            elif mode is CommandMode.JOINT_TORQUE:
                tau[part] = self._tau_command[limb]
            act = self._actuation[limb]
            if not act.powered or not act.attached:
                tau[part] = 0.0
                continue
            if act.free is not None:
                held = self._blocked_at[limb]
                free = np.asarray(act.free)
                hold = kp * (held - q[part]) - kd * qdot[part]
                tau[part] = free * tau[part] + (1.0 - free) * hold
            if act.speed_scale is not None:
                tau[part] = tau[part] * np.asarray(act.speed_scale)

    def _kinetic_energy(self) -> float:
        data, out = self._data, self._mass_qvel
        mujoco.mj_mulM(self._model, data, out, data.qvel)
        return 0.5 * float(data.qvel @ out)

    def _track(self, w: float | None, phi: float, ke: float) -> None:
        self._phi, self._ke = phi, ke
        if w is None:
            return
        if self._w is None:
            self._w0 = w  # W at the switch: rises are measured against it
        else:
            rise = w - self._w
            if rise > self._rise:
                self._rise = rise
                self._rise_rel = rise / max(abs(self._w0), 1e-12)
                self._rise_at = float(self._data.time)
        self._w = w

    def _base_matrix(self) -> FloatArray:
        return self._body_world(self._m.base_body)

    def _refresh(self) -> None:
        """Sample every limb's state after an advance."""
        data, m, tree = self._data, self._m, self._tree
        shared: dict[str, Any] = {
            "latched": dict(self._latched),
            "lyapunov_j": self._w,
            "potential_j": self._phi,
            "kinetic_j": self._ke,
            "max_rise_j": self._rise,
            "max_rise_rel": self._rise_rel,
            "max_rise_at_s": self._rise_at,
            "errors": {f: [e[0], e[1]] for f, e in self._errors.items()},
            "constraint_rank": self._rank,
            "braked_nm": self._braked_nm,
            "wrench": self._wrenches(),
            "tasks": sorted(self._tasks),
        }
        if self._terrain is not None:
            shared.update(self._climbing_detail())
        base_inverse = rigid_inverse(self._base_matrix())
        shared["base_frames"] = {
            frame: _pose_values(base_inverse @ self._frame_world(frame))
            for frame in m.frame_site
            if "." not in frame
        }
        for limb in tree.limbs:
            if not self._actuation[limb].attached and limb in self._states:
                continue  # a disassembled limb's state freezes
            if not self._actuation[limb].powered and limb in self._states:
                # Without power its sensors are dark: the last reading stays, flagged (as a
                # HardwareDriver does), while the limb itself drifts on in the physics.
                last = self._states[limb]
                if not last.health & Health.POWER_OFF:
                    self._states[limb] = dataclasses.replace(
                        last,
                        effort=(0.0,) * len(last.q),
                        health=last.health | Health.POWER_OFF,
                    )
                continue
            base = self._limb_base(limb)
            inverse = rigid_inverse(base)
            ends = {
                end: _pose_values(inverse @ self._frame_world(frame))
                for end, frame in self._ends[limb].items()
            }
            part = tree.limb_slice(limb)
            q = data.qpos[m.limb_qpos[limb]]
            health = self._grip_health(limb)
            if self._clipped[limb] or self._at_limit(q, part):
                health |= Health.JOINT_LIMIT
            self._states[limb] = LimbState(
                t=self._t,
                q=tuple(float(v) for v in q),
                dq=tuple(float(v) for v in data.qvel[m.limb_dof[limb]]),
                ee_poses=ends,
                effort=tuple(float(v) for v in self._tau[part]),
                health=health,
                detail={
                    **shared,
                    "mode": self._mode[limb].value,
                    "ends_latched": [
                        f.split(".", 1)[1] if "." in f else f
                        for f in self._latched
                        if f.startswith(f"{limb}.") or "." not in f
                    ],
                    **self._grip_detail(limb),
                },
            )

    def _at_limit(self, q: FloatArray, part: slice) -> bool:
        """Whether a joint of ``q`` (a limb's, ``part`` of all) is at a limit or past it."""
        room = np.minimum(self._upper[part] - q, q - self._lower[part])
        return bool(room.min() <= AT_LIMIT)

    def _grip_health(self, limb: str) -> Health:
        """``GRIP_LOST`` while the limb's gripper is torn off its hold, else ``OK``."""
        if self._grippers is None or limb not in self._grip_legs:
            return Health.OK
        state = self._grippers.states[self._grip_legs.index(limb)]
        return Health.GRIP_LOST if state is GripperState.DETACHED else Health.OK

    def _grip_detail(self, limb: str) -> dict[str, Any]:
        """A gripper leg's ``grip``: state, closed, the spring force [N] and the anchor [m]."""
        if self._grippers is None or limb not in self._grip_legs:
            return {}
        i = self._grip_legs.index(limb)
        state = self._grippers.states[i]
        anchor = self._grippers.anchors[i]
        return {
            "grip": {
                "state": state.value,
                "closed": bool(self._closed[i]),
                "supporting": bool(self._closed[i]) and state is GripperState.ANCHORED,
                "force_n": [float(f) for f in self._grip_force[i]],
                "anchor": None if np.isnan(anchor).any() else [float(a) for a in anchor],
            }
        }

    def _climbing_detail(self) -> dict[str, Any]:
        """Seed 004's plant-level telemetry: detachments, momentum, centre of mass, contacts.

        ``momentum`` is the free joint's rows of ``M qvel`` (MuJoCo's generalized momentum:
        the linear momentum [kg m/s] in the world frame, then the angular momentum about the
        base origin [kg m^2/s] in base coordinates), ``com`` the robot's centre of mass [m]
        and ``com_acceleration`` its acceleration [m/s^2] in the world frame over the last
        substep (from Newton: the free joint's rows of ``M qacc + qfrc_bias`` are the
        external forces but gravity, over the mass). ``contacts``: the body touching the
        terrain (count, deepest penetration [m], substeps with a contact so far).
        """
        model, data, m = self._model, self._data, self._m
        out: dict[str, Any] = {
            "detachments": [
                {
                    "leg": d.leg,
                    "t_s": d.t_s,
                    "force_n": d.force_n,
                    "force": [float(f) for f in d.force],
                }
                for d in self._detachments
            ],
        }
        if m.free_dof is not None:
            mujoco.mj_comPos(model, data)  # of the state reached (mj_kinematics is done)
            dof = m.free_dof
            mass = float(model.body_subtreemass[m.base_body])
            momentum = np.empty(model.nv)
            mujoco.mj_mulM(model, data, momentum, data.qvel)
            forces = np.empty(model.nv)
            mujoco.mj_mulM(model, data, forces, data.qacc)
            forces += data.qfrc_bias
            acceleration = forces[dof : dof + 3] / mass + model.opt.gravity
            out["momentum"] = [float(v) for v in momentum[dof : dof + 6]]
            out["com"] = [float(v) for v in data.subtree_com[m.base_body]]
            out["com_acceleration"] = [float(v) for v in acceleration]
        if self._terrain is not None:
            count, deepest = 0, 0.0
            body = set(m.body_geoms)
            for i in range(data.ncon):
                contact = data.contact[i]
                geoms = {int(contact.geom1), int(contact.geom2)}
                if m.terrain_geom in geoms and geoms & body:
                    count += 1
                    deepest = max(deepest, -float(contact.dist))
            out["contacts"] = {"count": count, "deepest_m": deepest, "ticks": self._contact_ticks}
        return out

    def _limb_base(self, limb: str) -> FloatArray:
        return self._body_world(self._limb_base_body[limb])

    def _body_world(self, body: int) -> FloatArray:
        """A body's pose in the world (its link frame) [m]."""
        data = self._data
        out = np.eye(4)
        out[:3, :3] = data.xmat[body].reshape(3, 3)
        out[:3, 3] = data.xpos[body]
        return out

    def _wrenches(self) -> dict[str, list[float]]:
        """Each latched interface's weld wrench [N, N m] (seed 003 eq. 4's lambda)."""
        data = self._data
        out: dict[str, list[float]] = {}
        if not self._latched:
            return out
        for frame in self._latched:
            eq = self._m.weld[frame]
            rows = np.nonzero(
                (data.efc_type[: data.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
                & (data.efc_id[: data.nefc] == eq)
            )[0]
            if rows.size:
                out[frame] = [float(v) for v in data.efc_force[rows]]
        return out

    def limb_state(self, limb: str) -> LimbState:
        """The limb's state as of the last :meth:`advance`."""
        self._limb(limb)
        return self._states[limb]

    def base_state(self) -> BaseState:
        """The base in the world: pose and twist ([m/s, rad/s], world frame)."""
        base = self._base_matrix()
        twist: tuple[float, ...] = (0.0,) * 6
        m = self._m
        if m.free_dof is not None:
            v = self._data.qvel[m.free_dof : m.free_dof + 6]
            w_world = base[:3, :3] @ v[3:]
            twist = (*(float(x) for x in v[:3]), *(float(x) for x in w_world))
        return BaseState(_pose_values(base), twist)

    def _limb(self, limb: str) -> None:
        if limb not in self._mode:
            self._description.limb(limb)  # raises, naming the limbs

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Set a limb's mode, a task goal or a latch; effective from the next substep.

        A ``joint_position`` target (and a ``hold`` in a joint mode) is clipped to the joint
        limits; the state says ``JOINT_LIMIT`` while a clipped target is in force.

        Raises:
            DriverError: ``bad_value`` for an unknown interface (or a latch of an end that is
                none), a latch too far from any grasp point, a joint vector of the wrong
                length; ``unsupported_mode`` for ``ee_pose``/``ee_twist`` (this plant has no
                IK servo: use ``impedance``).
        """
        self._limb(limb)
        try:
            self._command(limb, mode, payload)
        finally:
            self._replan()

    def _command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        part = self._tree.limb_slice(limb)
        n = part.stop - part.start
        if mode is CommandMode.IMPEDANCE:
            frame = self._interface(limb, str(payload["frame"]))
            goal = payload.get("goal")
            if goal is None:
                if self._tasks.pop(frame, None) is not None:
                    self._switched()
            else:
                gains = self._config.gains
                if payload.get("gains"):
                    try:
                        gains = ImpedanceGains(**{**gains.__dict__, **dict(payload["gains"])})
                    except (TypeError, ValueError) as exc:
                        raise DriverError("bad_value", f"gains of {frame}: {exc}") from None
                matrix = _pose_matrix(goal)
                task = self._tasks.get(frame)
                if (
                    task is None
                    or task.gains != gains
                    or not np.array_equal(task.goal, matrix)
                    or self._mode[limb] is not CommandMode.IMPEDANCE
                ):
                    # A new goal: W jumps, the passivity check starts again. The same goal
                    # sent again (a runner repeating itself) changes nothing.
                    self._tasks[frame] = TaskFrame(frame, matrix, gains)
                    self._switched()
            self._mode[limb] = CommandMode.IMPEDANCE
            self._clipped[limb] = False
        elif mode is CommandMode.LATCH:
            frame = self._interface(limb, str(payload["end"]))
            if frame not in self._m.weld:
                latching = [e for e, f in self._ends[limb].items() if f in self._m.weld]
                raise DriverError(
                    "bad_value",
                    f"end {payload['end']!r} of limb {limb!r} is no standard interface and "
                    f"cannot latch; the ends that latch are {', '.join(latching) or 'none'}",
                )
            if payload["engage"]:
                self._engage(frame)
            else:
                self._release(frame)
        elif mode is CommandMode.JOINT_POSITION:
            q = np.asarray(payload["q"], dtype=float)
            if q.shape != (n,):
                raise DriverError("bad_value", f"limb {limb!r} has {n} joints, got {q.size} values")
            self._q_target[limb], self._clipped[limb] = clip_to_limits(
                q, self._lower[part], self._upper[part]
            )
            self._q_all = None
            self._mode[limb] = mode
        elif mode is CommandMode.JOINT_TORQUE:
            tau = np.asarray(payload["tau"], dtype=float)
            if tau.shape != (n,):
                raise DriverError(
                    "bad_value", f"limb {limb!r} has {n} joints, got {tau.size} values"
                )
            self._tau_command[limb] = tau
            self._clipped[limb] = False
            self._mode[limb] = mode
        elif mode is CommandMode.HOLD:
            if self._mode[limb] is CommandMode.IMPEDANCE:
                for frame in [f for f in self._tasks if f.startswith(f"{limb}.") or "." not in f]:
                    task = self._tasks[frame]
                    self._tasks[frame] = TaskFrame(frame, self._frame_world(frame), task.gains)
                self._switched()
            else:
                # Where the joints are, but not past a limit (a torque may have pushed one).
                self._q_target[limb], self._clipped[limb] = clip_to_limits(
                    np.array(self._data.qpos[self._m.limb_qpos[limb]]),
                    self._lower[part],
                    self._upper[part],
                )
                self._q_all = None
                self._mode[limb] = CommandMode.JOINT_POSITION
        else:
            raise DriverError(
                "unsupported_mode",
                f"limb {limb!r} of the mujoco plant does not accept {mode.value!r}; it accepts "
                f"{', '.join(m.value for m in MODES)}",
            )

    def gripper(self, limb: str, action: GripperAction) -> None:
        """Close or open a leg's gripper (seed 004); MIRROR ends latch instead.

        ``close`` puts the leg in support: its gripper anchors as soon as its palm touches
        the terrain (or is within ``contact.grip_reach_m`` above it), then holds it with
        ClimbLab's spring until pulled out past ``contact.grip_force_n``. ``open`` takes the
        leg out of support: the gripper lets go once the palm is above the terrain, and a
        detached gripper becomes ready to grip again.

        Raises:
            DriverError: ``unsupported_mode`` for a limb without a gripper (naming the
                ``latch`` command, or the terrain a gripper needs).
        """
        self._limb(limb)
        if limb not in self._grip_legs:
            if self._terrain is None and f"{limb}.{PALM}" in self._tree.frames:
                why = "the world has no terrain to grip: add one (world: terrain:)"
            else:
                why = "its standard interfaces latch with a 'latch' command"
            raise DriverError("unsupported_mode", f"limb {limb!r} has no gripper; {why}")
        self._closed[self._grip_legs.index(limb)] = action is GripperAction.CLOSE

    def available(self, limb: str) -> bool:
        """False while the limb is disassembled."""
        self._limb(limb)
        return self._actuation[limb].attached

    def actuate(self, limb: str, actuation: Actuation) -> None:
        """Set what faults leave of a limb's actuation (the fault decorator calls this).

        Blocked joints are jammed where they are: their range shrinks to that value, so
        MuJoCo's joint-limit constraint holds them whatever the torques (a servo of limited
        effort could not), until they are freed. A slowed limb's speed limits scale too.
        """
        self._limb(limb)
        held = np.array(self._data.qpos[self._m.limb_qpos[limb]])
        before = self._actuation[limb].free
        if actuation.free is not None:
            if before is not None:  # joints blocked already stay where they were blocked
                held = np.where(np.asarray(before) < 0.5, self._blocked_at[limb], held)
            self._blocked_at[limb] = held
        blocked = np.asarray(actuation.free if actuation.free is not None else (), dtype=float)
        blocked = blocked < 0.5 if blocked.size else np.zeros(held.size, dtype=bool)
        joints, model = self._joint_ids[limb], self._model
        model.jnt_range[joints] = np.where(blocked[:, None], held[:, None], self._range0[joints])
        model.jnt_limited[joints] = np.where(blocked, 1, self._limited0[joints])
        jam_solref = (JAM_SOLREF_STEPS * self._config.timestep_s, 1.0)
        model.jnt_solref[joints] = np.where(blocked[:, None], jam_solref, self._solref0[joints])
        solimp = np.array(self._solimp0[joints])
        solimp[blocked, :3] = JAM_SOLIMP
        model.jnt_solimp[joints] = solimp
        part = self._tree.limb_slice(limb)
        scale = 1.0 if actuation.speed_scale is None else np.asarray(actuation.speed_scale)
        self._limit[part] = self._speed[part] * scale
        self._driven[part] = actuation.powered and actuation.attached
        self._actuation[limb] = actuation
        self._replan()

    @property
    def latched(self) -> Mapping[str, str]:
        """Latched interface -> the grasp point it is welded to."""
        return dict(self._latched)

    @property
    def model(self) -> MjRobotModel:
        """The MuJoCo model and its index maps (tests and benchmarks)."""
        return self._m

    @property
    def data(self) -> Any:
        """The ``MjData`` (tests and benchmarks; do not step it)."""
        return self._data
