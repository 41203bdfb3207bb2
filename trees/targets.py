"""What ``limbtree check`` finds wrong in the names and sizes a tree gives its limbs.

The mission file's own checks know the node types and their parameters; these know the
robots and the world as well (the robot descriptions, the modules' grasp points):

* an ``align`` target ``NAME/GRASP_POINT`` on a simulated limb must name a module placed in
  the mission's ``world`` and one of that module's grasp points (the simulated motion
  capture sees only those, and the end-effector ``ee``);
* a ``grasp`` of a simulated limb that names the ``module`` it must hold must name one the
  world places;
* a posture given by name must be one of the limb's postures (``limbtree robots``);
* a posture given as ``{q_deg: [...]}`` must have one angle per joint of the limb;
* a fault's ``joints`` must be joint indices the limb has, and an ``ik_error`` must not be
  given to a simulated ``mujoco`` robot, which takes no ``ee_pose`` command for it to fail;
* a node commands only limbs of a simulated robot whose plant takes its commands
  (:attr:`~limbtree.trees.mission.nodes.NodeSpec.plants`: ``sync_move``'s end-effector
  poses only the ``kinematic`` plant takes; ``walk_step``'s latches only the ``mujoco``
  plant has), instead of failing when it starts, its limbs' states never coming; a node
  that commands none (``grip_guard``) reads only limbs of such a plant;
* a simulated ``mujoco`` robot's start (``robots.NAME.posture``, ``robots.NAME.latched``) must
  name a posture of its limbs, its own interfaces (``LIMB.END`` or a base interface, as
  ``limbtree robots`` lists them) and grasp points ``MODULE/GRASP_POINT`` of modules the world
  places, or ``terrain`` when the world has one (its agent refused them only when started).

Each problem is reported at its node's (or fault value's) ``file:line:column`` with the
valid choices.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from limbtree.kinematics import Pose
from limbtree.robots import load_robot
from limbtree.robots.floating import floating_tree
from limbtree.robots.grippers import TERRAIN_GRIP
from limbtree.robots.modules import load_module
from limbtree.robots.mujoco_start import mujoco_start
from limbtree.robots.registry import JointSpec, RobotSpec
from limbtree.robots.terrain import TerrainSpec
from limbtree.transport.faults import FaultKind
from limbtree.trees.mission import Mission
from limbtree.trees.mission.errors import Location, Problem, value_problem
from limbtree.trees.mission.model import NodeModel, PlantKind, RobotDecl
from limbtree.trees.mission.nodes import NodeRegistry, NodeSpec
from limbtree.trees.reach import registry_or_default, world_grasp_points

#: The motion-capture body of a limb's own end-effector.
EE_BODY = "ee"
#: How far past a joint limit a posture may be [rad or m]: round-off of degrees to radians.
LIMIT_SLACK = 1e-9


def target_problems(mission: Mission, registry: NodeRegistry | None = None) -> list[Problem]:
    """Every unknown align target, unknown posture name, wrong-sized posture, bad fault joint.

    Also every node that commands a simulated limb of a plant that cannot take its commands.

    Args:
        mission: the mission.
        registry: the node types the mission was loaded with (the plants each needs);
            None: :func:`limbtree.trees.nodes.default_registry`.
    """
    registry = registry_or_default(registry)
    problems: list[Problem] = _fault_joints(mission)
    simulated = {limb: robot for robot in mission.robots if robot.simulated for limb in robot.limbs}
    for robot in mission.robots:
        problems += _robot_start(mission, robot)
    for node in mission.root.walk():
        spec = registry.resolve(node.type)
        if spec is not None and spec.plants:
            problems += _plant(node, spec, simulated, registry)
        if node.type == "align":
            problems += _target(mission, node)
        elif node.type == "grasp":
            problems += _grasped(mission, node)
        for limb, posture, at in _postures(node):
            message = _posture(mission, limb, posture)
            if message is not None:
                text = f'{node.type} "{node.name}": {message}'
                problems.append(value_problem(at, f"the {node.type}", node.location, text))
    return problems


def _plant(
    node: NodeModel, spec: NodeSpec, robots: Mapping[str, RobotDecl], registry: NodeRegistry
) -> list[Problem]:
    """A problem for each limb ``node`` commands (or reads) whose simulated plant cannot run it.

    Args:
        node: a node whose type needs some plants (:attr:`NodeSpec.plants`).
        spec: its type.
        robots: each simulated limb's robot, by the limb's mission name.
        registry: the node types (to name those the plant can run).
    """
    problems: list[Problem] = []
    # (a node that commands no limb, a guard, needs the plant of the limbs it reads)
    limbs = spec.commanded_limbs(node.params) if spec.commands else spec.named_limbs(node.params)
    for limb in limbs:
        robot = robots.get(limb)
        if robot is None or robot.plant in spec.plants:
            continue
        needs = " or ".join(plant.value for plant in spec.plants)
        entry = "robots" if robot.declared else "limbs"
        instead = f"or leave {node.type} out for this limb"
        if spec.commands:
            others = [
                other.type
                for _, other in registry.items()
                if other.commands and (not other.plants or robot.plant in other.plants)
            ]
            instead = f"or move the limb with a node a {robot.plant.value} plant runs: " + (
                ", ".join(others)
            )
        problems.append(
            Problem(
                node.location,
                f'{node.type} "{node.name}": limb {limb} is on a {robot.plant.value} plant, and '
                f"{node.type} {spec.plants_why}: only a {needs} plant runs it; give "
                f"{entry}.{robot.name} plant: {spec.plants[0].value}, {instead}",
            )
        )
    return problems


def _fault_joints(mission: Mission) -> list[Problem]:
    """A problem at each fault ``joints`` value naming a joint its limb does not have."""
    problems: list[Problem] = []
    mujoco = {
        limb
        for robot in mission.robots
        if robot.plant is PlantKind.MUJOCO and robot.simulated
        for limb in robot.limbs
    }
    for fault in mission.faults:
        if fault.kind is FaultKind.IK_ERROR and fault.limb in mujoco:
            problems.append(
                Problem(
                    fault.location,
                    f"fault ik_error on {fault.limb}: it makes ee_pose commands fail, and a "
                    "mujoco plant takes none (its limbs move by impedance goals and joint "
                    "commands), so it would change nothing; its faults are power_off, "
                    "blockage, slowdown and disassembly",
                )
            )
            continue
        joints = fault.params.get("joints")
        if not joints:
            continue
        limb = mission.limb(fault.limb)
        spec = load_robot(limb.robot).limb(limb.limb)
        wrong = [str(j) for j in joints if j >= len(spec.joints)]
        if wrong:
            problems.append(
                value_problem(
                    fault.params_at.get("joints", fault.location),
                    "the fault",
                    fault.location,
                    f"joints: limb {fault.limb} has no joint {', '.join(wrong)}; "
                    f"{limb.robot} {limb.limb} has {len(spec.joints)} joints, indices "
                    f"0..{len(spec.joints) - 1}",
                )
            )
    return problems


def _robot_start(mission: Mission, robot: RobotDecl) -> list[Problem]:
    """A simulated ``mujoco`` robot's unknown start posture, latched interface or grasp point."""
    if robot.plant is not PlantKind.MUJOCO or not robot.simulated:
        return []
    spec = load_robot(robot.robot)
    where = f"robot {robot.name} ({robot.robot})"
    problems: list[Problem] = []
    if robot.posture is not None:
        for limb in spec.limbs:
            if robot.posture not in limb.postures:
                problems.append(
                    Problem(
                        robot.location,
                        f"{where}: posture: limb {limb.name} has no posture "
                        f"{robot.posture!r}; its postures are {', '.join(limb.postures)}",
                    )
                )
                break
    interfaces = tuple(spec.interface_links)
    world = {placed.name: placed for placed in mission.world}
    for frame, grasp in robot.latched.items():
        if frame not in interfaces:
            problems.append(
                Problem(
                    robot.location,
                    f"{where}: latched: {robot.robot} has no interface {frame!r}; its "
                    f"interfaces are {', '.join(interfaces) or 'none'}",
                )
            )
        if grasp == TERRAIN_GRIP:
            if mission.terrain is None:
                problems.append(
                    Problem(
                        robot.location,
                        f"{where}: latched {frame}: {TERRAIN_GRIP} needs a terrain; add "
                        "world.terrain to the mission",
                    )
                )
            continue
        name, _, point = grasp.partition("/")
        points = () if name not in world else tuple(load_module(world[name].module).grasp_points)
        if point not in points:
            known = [
                f"{m}/{p}" for m in sorted(world) for p in load_module(world[m].module).grasp_points
            ]
            if mission.terrain is not None:
                known.append(TERRAIN_GRIP)
            problems.append(
                Problem(
                    robot.location,
                    f"{where}: latched {frame}: no grasp point {grasp!r} in the world; give "
                    f"MODULE/GRASP_POINT of a module the world places: "
                    f"{', '.join(known) or 'none (the mission has no world section)'}",
                )
            )
    if not problems and robot.latched:
        problems += _placed(mission, robot, spec)
    return problems


def start_postures(mission: Mission, robot: RobotDecl) -> dict[str, str]:
    """A robot's starting posture by its plant's limb name (``--physics`` ``postures``)."""
    if robot.posture is None:
        return {}
    return {mission.limb(name).limb: robot.posture for name in robot.limbs}


def _placed(mission: Mission, robot: RobotDecl, spec: RobotSpec) -> list[Problem]:
    """A ``mujoco`` robot's start refused by its plant: placed as the plant places it.

    A latched palm whose leg cannot reach the ground, or off a terrain too small for the
    robot, is refused by the run's agent at its start: here, before anything starts.
    """
    try:
        terrain = None
        if mission.terrain is not None:
            terrain = TerrainSpec.from_mapping(mission.terrain, "world.terrain").terrain
        mujoco_start(
            spec,
            floating_tree(spec),
            postures=start_postures(mission, robot),
            base_given=(
                Pose.from_array(robot.base_pose) if robot.base_pose else Pose()
            ).as_matrix(),
            latched=robot.latched,
            grasps={name: pose.as_matrix() for name, pose in world_grasp_points(mission).items()},
            terrain=terrain,
        )
    except ValueError as exc:
        return [Problem(robot.location, f"robot {robot.name} ({robot.robot}): {exc}")]
    return []


def _target(mission: Mission, node: NodeModel) -> list[Problem]:
    target = str(node.params.get("target", ""))
    limb = mission.limb(str(node.params.get("limb")))
    if limb.agent != "sim" or target == EE_BODY:
        return []  # a real limb's capture may see bodies the mission does not declare
    world = {placed.name: placed for placed in mission.world}
    name, _, point = target.partition("/")
    where = f'align "{node.name}": target {target!r}'
    if name not in world:
        placed = ", ".join(sorted(world)) or "none (the mission has no world section)"
        return [
            Problem(
                node.location,
                f"{where} names no module of the world: the target is MODULE/GRASP_POINT, "
                f"MODULE one of the world's modules ({placed})",
            )
        ]
    points = tuple(load_module(world[name].module).grasp_points)
    if not point:
        return [
            Problem(
                node.location,
                f"{where} names a module but no grasp point: the target is MODULE/GRASP_POINT, "
                f"e.g. {name}/{points[0]}; module {name} ({world[name].module}) has "
                f"{', '.join(points)}",
            )
        ]
    if point not in points:
        return [
            Problem(
                node.location,
                f"{where}: module {name} ({world[name].module}) has no grasp point "
                f"{point!r}; its grasp points are {', '.join(points)}",
            )
        ]
    return []


def _grasped(mission: Mission, node: NodeModel) -> list[Problem]:
    """A ``grasp`` of a simulated limb naming a ``module`` the world does not place."""
    module = node.params.get("module")
    limb = mission.limb(str(node.params.get("limb")))
    if module is None or limb.agent != "sim":
        return []  # a real limb may hold modules the mission does not declare
    world = sorted(placed.name for placed in mission.world)
    if str(module) in world:
        return []
    placed = ", ".join(world) or "none (the mission has no world section)"
    return [
        Problem(
            node.location,
            f'grasp "{node.name}": module {str(module)!r} is not in the world: the gripper '
            f"can hold only a module the world places ({placed})",
        )
    ]


def _postures(node: NodeModel) -> Iterator[tuple[str, Any, Location]]:
    """(limb, posture, where it is written) for each posture a node drives a limb to."""
    if "posture" in node.params and "limb" in node.params:
        yield str(node.params["limb"]), node.params["posture"], node.value_at("posture")
    for number, posture in enumerate(node.params.get("postures") or (), start=1):
        if isinstance(posture, Mapping):
            for limb, value in posture.items():
                at = node.params_at.get(f"postures.{number}.{limb}")
                yield str(limb), value, at or node.value_at(f"postures.{number}")


def _posture(mission: Mission, name: str, posture: Any) -> str | None:
    """What is wrong with driving limb ``name`` to ``posture``, or None."""
    limb = mission.limb(name)
    spec = load_robot(limb.robot).limb(limb.limb)
    if isinstance(posture, str):
        if posture in spec.postures:
            return None
        known = ", ".join(spec.postures) or "none"
        return (
            f"limb {name} ({limb.robot}) has no posture {posture!r}; its postures are {known}, "
            "or give the joints as {q_deg: [...]}"
        )
    if len(posture) != len(spec.joints):
        return (
            f"the posture for limb {name} has {len(posture)} joint angles; {limb.robot} "
            f"{limb.limb} has {len(spec.joints)} joints "
            f"({', '.join(joint.name for joint in spec.joints)})"
        )
    past = [
        (joint, float(value))
        for joint, value in zip(spec.joints, posture, strict=True)
        if not joint.lower - LIMIT_SLACK <= float(value) <= joint.upper + LIMIT_SLACK
    ]
    if past:
        said = "; ".join(
            f"{joint.name} at {_shown(joint, value)}, its limits {_shown(joint, joint.lower)} "
            f"to {_shown(joint, joint.upper)}"
            for joint, value in past
        )
        return (
            f"the posture for limb {name} is past {limb.robot} {limb.limb}'s joint limits "
            f"({said}): the limb would stop at its limit and never reach it; give angles "
            "within the limits (limbtree robots lists them)"
        )
    return None


def _shown(joint: JointSpec, value: float) -> str:
    """A joint value as a mission writes it: degrees, or millimetres for a prismatic joint."""
    if joint.unit == "m":
        return f"{value * 1000.0:g} mm"
    return f"{math.degrees(value):g} deg"


__all__ = ["EE_BODY", "start_postures", "target_problems"]
