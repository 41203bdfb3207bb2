"""The MuJoCo model of a robot and its world: links, free base, interface sites, welds, motors.

:func:`build_model` compiles one ``MjModel`` from a robot description
(:class:`~limbtree.robots.registry.RobotSpec`) and the modules of its world:

- The robot's links come from its URDF through ``mujoco.MjSpec``, with
  ``<compiler fusestatic="false" discardvisual="true"/>`` so that links joined by fixed
  joints (the SI end links, a torso's SI link) stay bodies of their own. The URDF's root link
  (:attr:`RobotSpec.base_link`) is the base body: with a free joint when ``floating``, else
  fixed at ``base_pose_world``. Both start at ``base_pose_world``.
- Every joint gets the robot's ``joint_armature_kgm2``, no damping and no friction loss, a
  stiff limit (:data:`LIMIT_SOLREF_STEPS`, :data:`LIMIT_SOLIMP`: MuJoCo's default soft limit
  let a motor at its effort hold a joint visibly past it), and one ``motor`` actuator
  (gear 1) whose ``ctrlrange`` is the URDF effort limit: a plant writes joint torques [N m]
  to ``data.ctrl`` (addresses :attr:`MjRobotModel.limb_actuator`) and MuJoCo clips them to
  the limits. ``data.qfrc_applied`` stays free for external forces and
  is NOT clipped.
- A site on every interface (SI) link, its frame identical to the link frame, named like the
  interface (``"arm_1.E2"``, ``"E0"``); :attr:`MjRobotModel.frame_site`.
- Each world module is a static body (no joint) with a box geom of its size, at its
  ``pose_in_base`` taken as a world pose, with a site on each grasp point named
  ``"MODULE/GRASP_POINT"`` (``"tile1/si"``); :attr:`MjRobotModel.grasp_site`.
- One site weld (``mjEQ_WELD`` between two sites) per interface, inactive at start
  (``eq_active0 = 0``), with ``solref = (0.02, 1)``: a weld makes the interface's site frame
  coincide with its target site's frame. It starts pointed at a world anchor site at the
  origin; :func:`retarget_weld` points it at a grasp site, and ``data.eq_active[weld] = 1``
  latches. A weld switched on more than about 90 degrees from its target about the SI normal
  may settle on the wrong side: latch near the target (seed 003's SI engages within its
  tolerance).
- No geom collides (``contype = conaffinity = 0``): seed 003 has no contacts; latching is
  the weld. Geoms that collide with nothing are dropped at compile time.
- An optional terrain (:class:`~limbtree.robots.terrain.Terrain`, seed 004) becomes a static
  height-field geom named :data:`TERRAIN_NAME`. Its heights are written into
  ``model.hfield_data`` after compiling (the compiler would rescale heights given as
  ``userdata`` to [0, 1]): rows along y, columns along x, so MuJoCo's surface goes through
  every node of the terrain. Between nodes MuJoCo splits each cell into two triangles where
  the terrain is bilinear; they agree on the cell edges and differ inside by at most a
  quarter of the cell's twist ``|h00 + h11 - h01 - h10|``. Only the robot's body collides
  with it: the geoms of the base link and of links fixed to it (contact bit
  :data:`TERRAIN_CONTACT_BIT`), the collisions seed 004's eq. 1 avoids. The legs, and so the
  grippers' palms, do not: ClimbLab's grippers are explicit springs
  (:mod:`limbtree.robots.grippers`), and native contacts between the legs and the ground
  would cost far more than the step itself (wave 2 brief, section 3.2).
- Newton solver, the given ``timestep`` and ``gravity``, Euler integration (MuJoCo's default).

The build is deterministic: the same arguments give the same model.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import mujoco
import numpy as np
import numpy.typing as npt

from limbtree.kinematics.pose import Pose
from limbtree.robots.assembly import WorldModule
from limbtree.robots.errors import RobotsError
from limbtree.robots.modules import load_module
from limbtree.robots.registry import RobotSpec
from limbtree.robots.terrain import Terrain

IntArray = npt.NDArray[np.int64]

#: Weld time constant and damping ratio (``solref``): with a 1 ms step a 3 mm offset closes
#: to about 0.13 mm within 100 ms (wave 2 brief, section 3.2). Keep the time constant at
#: least 5 steps: 2 steps blew up on a large snap.
WELD_SOLREF: Final = (0.02, 1.0)
#: The joint limits' time constant [steps] and impedance (``solimp`` d0, dwidth, width): as
#: stiff as MuJoCo stays stable at (wave 2 brief: a time constant of at least 5 steps).
#: MuJoCo's default (0.02 s; 0.9, 0.95, 0.001) let heavy_limb's elbow sit 0.06 rad past its
#: limit under its motor's 200 N m.
LIMIT_SOLREF_STEPS: Final = 5.0
LIMIT_SOLIMP: Final = (0.99, 0.99, 0.001)
#: Name of the world site every weld targets until :func:`retarget_weld` points it elsewhere
#: (``#`` is in no module or grasp point name).
ANCHOR_SITE: Final = "#anchor"
#: Prefix of the world modules' body names (keeps them apart from the URDF's link names).
MODULE_BODY_PREFIX: Final = "module/"
#: Name of the terrain's height field asset and of its geom.
TERRAIN_NAME: Final = "terrain"
#: Contact bit shared by the terrain (``conaffinity``) and the robot's body (``contype``).
TERRAIN_CONTACT_BIT: Final = 1
#: Depth [m] of the terrain's solid below its lowest point (MuJoCo's height field "base").
TERRAIN_BASE_M: Final = 0.1
#: Smallest elevation range [m] of a height field (a flat terrain still needs one).
_MIN_ELEVATION_M: Final = 1e-3
_MUJOCO_COMPILER: Final = '<mujoco><compiler fusestatic="false" discardvisual="true"/></mujoco>'


class MujocoModelError(RobotsError, ValueError):
    """A robot and world cannot be made into a MuJoCo model (the message says why)."""


@dataclass(frozen=True)
class MjRobotModel:
    """A compiled MuJoCo model of a robot and its world, with the addresses a plant needs.

    Attributes:
        model: the compiled model.
        spec: the robot description it was built from.
        floating: whether the base body has a free joint.
        base_body: body id of the base link (:attr:`RobotSpec.base_link`).
        free_qpos: ``qpos`` address of the free joint (7 values: position [m], then the
            quaternion ``w, x, y, z``), or None when the base is fixed.
        free_dof: ``qvel`` address of the free joint (6 values: the base origin's linear
            velocity in WORLD coordinates [m/s], then its angular velocity in BASE
            coordinates [rad/s]), or None when the base is fixed.
        limb_qpos: per limb, its joints' ``qpos`` addresses in joint order.
        limb_dof: per limb, its joints' dof (``qvel``, ``qfrc_*``) addresses in joint order.
        limb_actuator: per limb, its joints' motor ids (``data.ctrl`` indices) in joint order.
        frame_site: interface frame name -> site id; the site frame is the SI frame.
        weld: interface frame name -> id of its site weld (``data.eq_active``).
        grasp_site: ``"MODULE/GRASP_POINT"`` -> site id, for every world module's grasp point,
            and ``"MODULE/GRASP_POINT@90"`` (``@180``, ``@270``) for its turns about its normal.
        anchor_site: site id of the world anchor that welds target before a retarget.
        terrain: the terrain of the world, or None.
        terrain_geom: geom id of the terrain's height field, or -1 without a terrain.
        body_geoms: geom ids of the robot's body that collide with the terrain (the base
            link's and those of links fixed to it); empty without a terrain.
    """

    model: mujoco.MjModel
    spec: RobotSpec
    floating: bool
    base_body: int
    free_qpos: int | None
    free_dof: int | None
    limb_qpos: Mapping[str, IntArray]
    limb_dof: Mapping[str, IntArray]
    frame_site: Mapping[str, int]
    weld: Mapping[str, int]
    grasp_site: Mapping[str, int]
    limb_actuator: Mapping[str, IntArray] = field(default_factory=lambda: MappingProxyType({}))
    anchor_site: int = -1
    terrain: Terrain | None = None
    terrain_geom: int = -1
    body_geoms: tuple[int, ...] = ()

    def weld_target(self, frame: str) -> int:
        """The site id the interface's weld currently targets (in :attr:`model`).

        Raises:
            MujocoModelError: for an unknown interface frame.
        """
        return int(self.model.eq_obj2id[self._weld_id(frame)])

    def _weld_id(self, frame: str) -> int:
        weld = self.weld.get(frame)
        if weld is None:
            raise MujocoModelError(
                f"robot {self.spec.name!r} has no interface frame {frame!r}; "
                f"valid frames: {', '.join(self.weld) or '(none: add interfaces to robot.yaml)'}"
            )
        return weld


def build_model(
    spec: RobotSpec,
    *,
    base_pose_world: Pose,
    floating: bool,
    modules: Sequence[WorldModule] = (),
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
    timestep: float = 1e-3,
    terrain: Terrain | None = None,
) -> MjRobotModel:
    """Compile the MuJoCo model of a robot and the modules of its world.

    Args:
        spec: the robot (:func:`~limbtree.robots.registry.load_robot`).
        base_pose_world: where the base link starts (floating) or stays (fixed), in the world.
        floating: give the base link a free joint (usually ``spec.floating``).
        modules: world modules as static bodies; their ``pose_in_base`` is taken as their
            WORLD pose [m].
        gravity: ``(3,)`` gravity in the world [m/s^2]; seed 003 works in orbit: zeros.
        timestep: integration step [s], > 0.
        terrain: ground as a height field (seed 004), or None. Only the robot's body
            collides with it (see the module's docstring).

    Returns:
        The model and its addresses.

    Raises:
        MujocoModelError: for a bad timestep, gravity or terrain, a world module name used
            twice, or a URDF MuJoCo cannot compile (the message carries MuJoCo's).
        limbtree.robots.modules.UnknownModuleError: for an unknown module; it lists the valid
            ones.
    """
    if not (isinstance(timestep, int | float) and math.isfinite(timestep) and timestep > 0):
        raise MujocoModelError(f"timestep must be a finite number > 0 [s], got {timestep!r}")
    gravity_vector = np.asarray(gravity, dtype=np.float64)
    if gravity_vector.shape != (3,) or not np.isfinite(gravity_vector).all():
        raise MujocoModelError(f"gravity must be 3 finite numbers [m/s^2], got {gravity!r}")
    if not isinstance(base_pose_world, Pose):
        raise MujocoModelError(f"base_pose_world must be a Pose, got {base_pose_world!r}")
    names = [module.name for module in modules]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise MujocoModelError(f"world module names must be unique; used twice: {twice}")
    if terrain is not None and not isinstance(terrain, Terrain):
        raise MujocoModelError(
            f"terrain must be a limbtree.robots.terrain.Terrain or None, got {terrain!r}"
        )
    loaded = [(module, load_module(module.module)) for module in modules]

    mj = _urdf_spec(spec)
    mj.option.timestep = float(timestep)
    mj.option.gravity = gravity_vector
    mj.option.solver = mujoco.mjtSolver.mjSOL_NEWTON

    base = mj.body(spec.base_link)
    if base is None:  # pragma: no cover - the registry checked the URDF's root link
        raise MujocoModelError(f"{spec.urdf_path}: no body {spec.base_link!r} after loading")
    base.pos = np.array(base_pose_world.position)
    base.quat = _wxyz(base_pose_world)
    if floating:
        base.add_freejoint(name=f"{spec.base_link}/free")

    for geom in mj.geoms:
        geom.contype = 0
        geom.conaffinity = 0
    body_geom_names: list[str] = []
    if terrain is not None:
        for index, geom in enumerate(_body_geoms(base)):
            # Named, so that the compiled model's ids can be looked up.
            geom.name = geom.name or f"{spec.base_link}/body_geom_{index}"
            geom.contype = TERRAIN_CONTACT_BIT
            geom.conaffinity = 0
            body_geom_names.append(geom.name)
        _add_terrain(mj, terrain)
    efforts = _efforts(spec)
    for limb in spec.limbs:
        for joint_spec in limb.joints:
            joint = mj.joint(joint_spec.name)
            joint.armature = spec.joint_armature_kgm2
            joint.damping = np.zeros(3)  # MuJoCo 4: polynomial coefficients
            joint.frictionloss = 0.0
            joint.solref_limit = np.array([LIMIT_SOLREF_STEPS * float(timestep), 1.0])
            joint.solimp_limit = np.array([*LIMIT_SOLIMP, *joint.solimp_limit[3:]])
    joint_names = [j.name for limb in spec.limbs for j in limb.joints]
    for name in dict.fromkeys(joint_names):  # a joint shared by two limbs gets one motor
        effort = efforts.get(name, math.inf)
        actuator = mj.add_actuator(name=name, target=name)
        actuator.trntype = mujoco.mjtTrn.mjTRN_JOINT
        actuator.set_to_motor()
        if math.isfinite(effort) and effort > 0:
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            actuator.ctrlrange = np.array([-effort, effort])

    frames = dict(spec.interface_links)
    for frame, link in frames.items():
        mj.body(link).add_site(name=frame, pos=np.zeros(3), quat=np.array([1.0, 0.0, 0.0, 0.0]))
    mj.worldbody.add_site(name=ANCHOR_SITE, pos=np.zeros(3), quat=np.array([1.0, 0, 0, 0]))
    for module, module_spec in loaded:
        body = mj.worldbody.add_body(
            name=f"{MODULE_BODY_PREFIX}{module.name}",
            pos=np.array(module.pose_in_base.position),
            quat=_wxyz(module.pose_in_base),
        )
        box = body.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=np.array(module_spec.size_m) / 2.0)
        box.contype = 0
        box.conaffinity = 0
        box.mass = module_spec.mass_kg  # a static body: for completeness only
        for point in module_spec.grasp_points.values():
            # The point itself, and its turns about its normal (z) by 90, 180 and 270 deg:
            # a weld makes two site frames coincide, so a 4-fold symmetric interface latches
            # to the turn nearest the end (SYMMETRIC_TURNS), never 90 deg or more off.
            for turn in SYMMETRIC_TURNS:
                turned = point.pose @ Pose.from_matrix(_turn_about_z(turn))
                body.add_site(
                    name=f"{module.name}/{point.name}{_turn_suffix(turn)}",
                    pos=np.array(turned.position),
                    quat=_wxyz(turned),
                )
    for frame in frames:
        mj.add_equality(
            name=frame,
            type=mujoco.mjtEq.mjEQ_WELD,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            name1=frame,
            name2=ANCHOR_SITE,
            active=False,
            solref=np.array(WELD_SOLREF),
        )
    try:
        model = mj.compile()
    except ValueError as exc:
        raise MujocoModelError(f"MuJoCo cannot compile {spec.urdf_path}: {exc}") from exc

    terrain_geom = -1
    if terrain is not None:
        terrain_geom = _write_heights(model, terrain)

    base_body = model.body(spec.base_link).id
    free_qpos = free_dof = None
    if floating:
        free = model.joint(f"{spec.base_link}/free")
        free_qpos, free_dof = int(free.qposadr[0]), int(free.dofadr[0])

    def addresses(limb_joints: Sequence[str], kind: str) -> IntArray:
        if kind == "actuator":
            values = [model.actuator(name).id for name in limb_joints]
        else:
            values = [int(getattr(model.joint(name), kind)[0]) for name in limb_joints]
        array = np.array(values, dtype=np.int64)
        array.setflags(write=False)
        return array

    limb_joints = {limb.name: limb.joint_names for limb in spec.limbs}
    return MjRobotModel(
        model=model,
        spec=spec,
        floating=floating,
        base_body=base_body,
        free_qpos=free_qpos,
        free_dof=free_dof,
        limb_qpos=MappingProxyType({k: addresses(v, "qposadr") for k, v in limb_joints.items()}),
        limb_dof=MappingProxyType({k: addresses(v, "dofadr") for k, v in limb_joints.items()}),
        frame_site=MappingProxyType({frame: model.site(frame).id for frame in frames}),
        weld=MappingProxyType({frame: model.equality(frame).id for frame in frames}),
        grasp_site=MappingProxyType(
            {
                f"{module.name}/{point}{_turn_suffix(turn)}": model.site(
                    f"{module.name}/{point}{_turn_suffix(turn)}"
                ).id
                for module, module_spec in loaded
                for point in module_spec.grasp_points
                for turn in SYMMETRIC_TURNS
            }
        ),
        limb_actuator=MappingProxyType(
            {k: addresses(v, "actuator") for k, v in limb_joints.items()}
        ),
        anchor_site=model.site(ANCHOR_SITE).id,
        terrain=terrain,
        terrain_geom=terrain_geom,
        body_geoms=tuple(model.geom(name).id for name in body_geom_names),
    )


def retarget_weld(
    model: mujoco.MjModel, data: mujoco.MjData, m: MjRobotModel, frame: str, grasp: str
) -> None:
    """Point an interface's weld at a grasp site, without switching it on or off.

    Rewrites ``model.eq_obj2id`` at run time (MuJoCo reads it on every step), so one weld per
    interface serves every module it may latch to. Latch with ``data.eq_active[weld] = 1``
    after (or before) the retarget; retargeting an active weld moves its target at once.

    Args:
        model: the compiled model (``m.model``, or a copy of it being simulated).
        data: its data (checked for the model's size; not changed).
        m: the addresses of ``model``.
        frame: the interface frame, e.g. ``"arm.E2"`` (:attr:`MjRobotModel.weld`).
        grasp: the grasp site, ``"MODULE/GRASP_POINT"`` (:attr:`MjRobotModel.grasp_site`), or
            :data:`ANCHOR_SITE` to park the weld on the world anchor.

    Raises:
        MujocoModelError: for an unknown frame or grasp site (the message lists the valid
            ones), or a model and data that do not belong together.
    """
    weld = m._weld_id(frame)
    if grasp == ANCHOR_SITE:
        site = m.anchor_site
    else:
        found = m.grasp_site.get(grasp)
        if found is None:
            raise MujocoModelError(
                f"no grasp site {grasp!r} in the world; valid grasp sites: "
                f"{', '.join(m.grasp_site) or '(none: the world has no modules)'}"
            )
        site = found
    if model.neq != m.model.neq or data.eq_active.shape[0] != model.neq:
        raise MujocoModelError("retarget_weld: model, data and MjRobotModel do not belong together")
    model.eq_obj2id[weld] = site


def _body_geoms(base: mujoco.MjsBody) -> list[mujoco.MjsGeom]:
    """Geoms of the base body and of the bodies fixed to it (no joint in between)."""
    geoms: list[mujoco.MjsGeom] = []
    stack = [base]
    while stack:
        body = stack.pop()
        geoms.extend(body.geoms)
        stack.extend(child for child in body.bodies if not child.joints)
    return geoms


def _add_terrain(mj: mujoco.MjSpec, terrain: Terrain) -> None:
    """Add the terrain's height field asset and its static geom (heights written later)."""
    ny, nx = terrain.shape
    low, high = float(terrain.heights.min()), float(terrain.heights.max())
    elevation = max(high - low, _MIN_ELEVATION_M)
    size_x, size_y = terrain.size_m
    mj.add_hfield(
        name=TERRAIN_NAME,
        size=[size_x / 2.0, size_y / 2.0, elevation, TERRAIN_BASE_M],
        nrow=ny,
        ncol=nx,
        # MuJoCo needs data or a file; the exact heights are written after compiling.
        userdata=np.zeros(ny * nx),
    )
    center_x, center_y = terrain.center_m
    geom = mj.worldbody.add_geom(
        name=TERRAIN_NAME,
        type=mujoco.mjtGeom.mjGEOM_HFIELD,
        pos=np.array([center_x, center_y, low]),
    )
    geom.hfieldname = TERRAIN_NAME
    geom.contype = 0
    geom.conaffinity = TERRAIN_CONTACT_BIT


def _write_heights(model: mujoco.MjModel, terrain: Terrain) -> int:
    """Write the terrain's heights into the compiled height field; its geom id.

    MuJoCo's surface is at ``geom z + hfield_data * elevation``, with ``hfield_data`` in
    [0, 1], row-major, rows along y from its lowest y.
    """
    hfield = model.hfield(TERRAIN_NAME)
    elevation = float(hfield.size[2])
    geom = model.geom(TERRAIN_NAME)
    low = float(geom.pos[2])
    ny, nx = terrain.shape
    start = int(hfield.adr[0])
    model.hfield_data[start : start + ny * nx] = ((terrain.heights - low) / elevation).ravel()
    return int(geom.id)


def _urdf_spec(spec: RobotSpec) -> mujoco.MjSpec:
    """The robot's URDF as an ``MjSpec``, keeping links joined by fixed joints as bodies."""
    text = spec.urdf_path.read_text(encoding="utf-8")
    patched, count = re.subn(r"(<robot\b[^>]*>)", rf"\1{_MUJOCO_COMPILER}", text, count=1)
    if count != 1:
        raise MujocoModelError(f"{spec.urdf_path}: no <robot> element")
    try:
        return mujoco.MjSpec.from_string(patched)
    except ValueError as exc:
        raise MujocoModelError(f"MuJoCo cannot read {spec.urdf_path}: {exc}") from exc


def _efforts(spec: RobotSpec) -> dict[str, float]:
    """Joint name -> URDF effort limit [N m or N] (inf when absent)."""
    root = ElementTree.parse(spec.urdf_path).getroot()
    efforts: dict[str, float] = {}
    for joint in root.findall("joint"):
        limit = joint.find("limit")
        text = limit.get("effort") if limit is not None else None
        try:
            efforts[joint.get("name") or ""] = float(text) if text is not None else math.inf
        except ValueError:
            efforts[joint.get("name") or ""] = math.inf
    return efforts


#: The turns [deg] about a grasp point's normal that get a site of their own:
#: ``MODULE/POINT`` (0) and ``MODULE/POINT@90``, ``@180``, ``@270``.
SYMMETRIC_TURNS: Final = (0, 90, 180, 270)


def _turn_suffix(turn: int) -> str:
    return f"@{turn}" if turn else ""


def _turn_about_z(turn_deg: int) -> npt.NDArray[np.float64]:
    c, s = round(math.cos(math.radians(turn_deg))), round(math.sin(math.radians(turn_deg)))
    out = np.eye(4)
    out[:2, :2] = ((c, -s), (s, c))
    return out


def _wxyz(pose: Pose) -> npt.NDArray[np.float64]:
    """A pose's quaternion in MuJoCo's order ``(w, x, y, z)``."""
    x, y, z, w = (float(v) for v in pose.quaternion)
    return np.array([w, x, y, z])
