"""Waypoints a limb cannot reach, found before anything moves (``limbtree check`` and ``run``).

A limb's reach is bounded by its links: the end-effector is never further from the limb's
base than the sum of the distances between consecutive joint frames along its chain (each
a rigid offset in the URDF, whatever the joint angles; the triangle inequality), plus the
travel of its prismatic joints. An absolute ``sync_move`` waypoint further than that from
the limb's base, by more than the move lets the limb miss it (its ``p_e`` for a waypoint the
clamp passes on the way, its ``settle`` for the last one; a limb with ``p_e: inf`` has no
position goal), can never be reached: the limb would stop at the edge of its workspace
until the node's ``ik_timeout_s`` or ``timeout_s`` fails it. :func:`reach_problems` reports
each such waypoint at its own ``file:line:column`` (where its text is, also when a
parameter or ``--set`` gave it).

A relative waypoint is an offset from where the limb is when the node starts: each
waypoint's target is that start plus its offset (world frame; not the waypoint before plus
the offset). The start is known before the run only for a limb's certain first move, and
then the target is checked against the reach as an absolute waypoint is. A relative
``sync_move`` is a limb's certain first move when all of these hold:

* no node before it in the tree's depth-first order may command the limb (every node type
  names the limbs it commands, :attr:`NodeSpec.commands
  <limbtree.trees.mission.nodes.NodeSpec.commands>`: ``sync_move``, ``joint_move``,
  ``align``, ``grasp``, ``walk_step``, ``climb_step``, ... ; a type the registry does not
  know may command any limb);
* every node above it starts each child at most once: a ``sequence`` or ``fallback`` with
  memory, a ``parallel`` that does not re-tick successes, ``timeout``, ``inverter``,
  ``force_success``, ``force_failure``. Under a ``repeat``, ``retry``, ``until_success``,
  a reactive ``sequence``/``fallback`` or any other node, it may run again, or first, after
  a later node has moved the limb;
* the limb is simulated (``agent: sim``; a real limb starts wherever it is) on a
  ``kinematic`` plant, whose base is fixed at the mission's ``base`` and whose limbs start in
  their ``home`` posture (the simulator's ``initial_posture``, which a mission cannot set; a
  ``mujoco`` robot's base floats and its legs settle on the ground) and have no
  ``joint_noise`` (the sensed start would be off by a random amount);
* no ``power_off`` fault is scheduled on the limb (its joints fall while the power is off;
  the other kinds stop, slow or refuse commands but move nothing), and the mission draws no
  ``random_faults`` (a run with another seed draws other faults).

Its start is then where the forward kinematics of that posture put the end-effector, from
the limb's ``base``. Any other relative waypoint is refused only when the offset is longer
than twice the reach: no two points the limb reaches are farther apart, whatever the start.
Those, and bases that move during a run, are only known at run time: there a ``sync_move``
with a ``timeout_s`` fails naming the waypoint and each limb's distance from it.

A simulated ``mujoco`` arm's first ``walk_step`` (no node before it may command the limb, and
nothing above it starts it again) is checked the same way: its anchor end is where the
robot's ``latched`` start puts it, and the arm's two ends are never farther apart than its
links between them; a target farther than that from the anchor is reported at the target.

An ``align`` of a simulated limb onto a module's grasp point (with its ``offset``) further
than the limb's reach from its base is reported the same way, at the node, when the module
cannot move before the node runs: when no simulated limb of the mission reaches any of its
grasp points, none can grasp and carry it. A module some limb can carry is only known at
run time: there the ``align`` fails when its error has come no closer for its
``stall_timeout_s``.

A robot on a ``mujoco`` plant has a floating base: it is where its latched feet and its legs
put it as the run starts. Its limbs' waypoints and goals are only checked at run time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final
from xml.etree import ElementTree

import numpy as np

from limbtree.kinematics import Pose
from limbtree.robots import load_robot
from limbtree.robots.assembly import WorldModule, grasp_poses
from limbtree.robots.modules import ModuleSpec, load_module
from limbtree.robots.sim import SimConfig
from limbtree.trees.mission import Mission
from limbtree.trees.mission.errors import Location, Problem, merge_uses, value_problem
from limbtree.trees.mission.model import FaultKind, NodeModel, PlantKind
from limbtree.trees.mission.nodes import BUILT_IN, NodeRegistry

#: Slack on the reach bound [m]: rounding in the description, never a real margin.
REACH_SLACK_M = 1e-3

#: Fault kinds that move a limb by themselves: while its power is off its joints fall
#: towards its ``slumped`` posture (the other kinds stop, slow or refuse commands).
_MOVING_FAULTS: Final = frozenset({FaultKind.POWER_OFF})

#: Node types that start their child at most once per run of their own, whatever their
#: parameters (``sequence``, ``fallback`` and ``parallel`` depend on theirs).
_ONCE_DECORATORS: Final = frozenset({"timeout", "inverter", "force_success", "force_failure"})


@cache
def reach_bound(urdf: Path, base_link: str, ee_link: str) -> float:
    """The largest distance [m] the frame of ``ee_link`` can be from that of ``base_link``.

    Args:
        urdf: the robot's URDF file.
        base_link: the limb's base link.
        ee_link: its end-effector link.

    Returns:
        The sum of the joint origins' offsets on the path between the two links, plus the
        travel of its prismatic joints; infinity if a prismatic joint has no limit.
    """
    root = ElementTree.parse(urdf).getroot()
    above: dict[str, ElementTree.Element] = {}
    for joint in root.findall("joint"):
        child = joint.find("child")
        if child is not None and child.get("link"):
            above[str(child.get("link"))] = joint

    def lineage(link: str) -> list[str]:
        links = [link]
        while links[-1] in above and len(links) <= len(above) + 1:
            parent = above[links[-1]].find("parent")
            links.append(str(parent.get("link")) if parent is not None else "")
        return links

    up, down = lineage(base_link), lineage(ee_link)
    common = next((link for link in up if link in down), None)
    if common is None:
        return math.inf
    path = up[: up.index(common)] + down[: down.index(common)]
    total = 0.0
    for link in path:
        joint = above[link]
        origin = joint.find("origin")
        xyz = origin.get("xyz", "0 0 0") if origin is not None else "0 0 0"
        total += math.dist([float(v) for v in xyz.split()], (0.0, 0.0, 0.0))
        if joint.get("type") == "prismatic":
            limit = joint.find("limit")
            if limit is None:
                return math.inf
            travel = (float(limit.get("lower", "inf")), float(limit.get("upper", "inf")))
            total += max(abs(travel[0]), abs(travel[1]))
    return total


def _out_of_reach(
    mission: Mission,
    node: NodeModel,
    number: int,
    name: str,
    target: Sequence[float],
    allowed: tuple[float, str],
    start: Sequence[float] | None = None,
) -> list[Problem]:
    """A waypoint farther from the limb's base than its reach and the move's tolerance.

    Args:
        mission: the mission.
        node: the ``sync_move``.
        number: the waypoint's number, from 1.
        name: the limb.
        target: where the waypoint puts the end-effector, in the world [m].
        allowed: how far from it the limb may stop [m], and the key that says so
            (:func:`_tolerance`).
        start: for a relative waypoint of the limb's first move, where the end-effector
            starts, in the world [m]; None for an absolute waypoint.
    """
    limb = mission.limb(name)
    base = _base_position(mission, name)
    reach = limb_reach(limb.robot, limb.limb)
    tolerance, key = allowed
    if base is None:
        return []  # (a floating base is only known at run time)
    distance = math.dist(target[:3], base)
    if distance <= reach + tolerance + REACH_SLACK_M:
        return []
    if start is None:
        whence, fix = "", "move the waypoint or the limb's base"
    else:
        whence = (
            f"the move is the limb's first, from its {_initial_posture()} posture at "
            f"{_mm(start)}, so the waypoint is at {_mm(target)}: "
        )
        fix = "shorten the offset, move the limb's base, or move the limb closer first"
    return [
        value_problem(
            _waypoint_at(node, number, name),
            "the sync_move",
            node.location,
            f'sync_move "{node.name}": waypoint {number} is out of reach of limb {name}: '
            f"{whence}{distance * 1000:.0f} mm from its base, {(distance - reach) * 1000:.0f} "
            f"mm beyond the {reach * 1000:.0f} mm its links reach ({limb.robot}), more than "
            f"its {key} of {_length_mm(tolerance)}; {fix}",
        )
    ]


def _tolerance(
    node: NodeModel, name: str, number: int, defaults: Mapping[str, float]
) -> tuple[float, str]:
    """How far from waypoint ``number`` limb ``name`` may stop while the move goes on [m].

    The clamp passes a waypoint once it lies within the limb's ``p_e`` (its hypersphere);
    the last one (unless the move loops) once the limb is also within ``settle``. A limb
    with ``p_e: inf`` has no position goal: any distance. ``defaults``: the node type's
    ``p_e`` and ``settle`` [m], for a node that leaves them out.

    Returns:
        The distance [m], and the key that sets it, for messages.
    """
    p_e = node.params.get("p_e", defaults["p_e"])
    p_e = float(p_e.get(name, defaults["p_e"]) if hasattr(p_e, "get") else p_e)
    last = number == len(node.params.get("waypoints") or ()) and not node.params.get("loop")
    settle = float(node.params.get("settle", defaults["settle"]))
    if last and p_e != math.inf and settle < p_e:
        return settle, "settle_mm"
    return p_e, "p_e_mm"


def _offset_problem(
    mission: Mission, node: NodeModel, number: int, name: str, pose: Any, tolerance: float
) -> list[Problem]:
    """A relative waypoint farther from the start than twice the limb's reach.

    ``tolerance`` [m]: how far from the waypoint the limb may stop while the move goes on.
    """
    limb = mission.limb(name)
    offset = math.dist(pose[:3], (0.0, 0.0, 0.0))
    span = 2.0 * limb_reach(limb.robot, limb.limb)
    if offset <= span + tolerance + REACH_SLACK_M:
        return []
    return [
        value_problem(
            _waypoint_at(node, number, name),
            "the sync_move",
            node.location,
            f'sync_move "{node.name}": waypoint {number} moves limb {name} {_length_mm(offset)} '
            f"from where it starts; no two points its links reach are more than "
            f"{span * 1000:.0f} mm apart ({limb.robot}): shorten the move",
        )
    ]


def _waypoint_at(node: NodeModel, number: int, name: str) -> Location:
    """Where waypoint ``number`` gives limb ``name``'s pose.

    Its own entry when the waypoint is written per limb, else the waypoint.
    """
    return node.params_at.get(f"waypoints.{number}.{name}") or node.value_at(f"waypoints.{number}")


def _length_mm(length: float) -> str:
    """``2927 mm`` from a length [m] (``1e+300 mm`` for one too long to write out)."""
    return f"{length * 1000:.0f} mm" if length < 1e6 else f"{length * 1000:.3g} mm"


def _mm(point: Sequence[float]) -> str:
    """``(700, 0, 900) mm`` from a point [m]."""
    return f"({', '.join(str(round(v * 1000)) for v in point)}) mm"


def _initial_posture() -> str:
    """The posture a simulated limb starts a run in (the runner never sets another)."""
    return SimConfig().initial_posture


@cache
def _initial_position(robot: str, limb: str) -> tuple[float, ...]:
    """Where a simulated limb's end-effector starts a run, in its base frame [m].

    The forward kinematics of its initial posture (``SimConfig.initial_posture``, as the
    simulated limb sets its joints), to the same link as its sensed pose.
    """
    description = load_robot(robot)
    q0 = description.limb(limb).posture(_initial_posture())
    return tuple(description.chain(limb).fk(q0).position.tolist())


def _start_position(mission: Mission, name: str) -> tuple[float, ...] | None:
    """Where limb ``name``'s end-effector is in the world when the run starts [m], if known.

    Known for a simulated limb of a ``kinematic`` plant without joint noise, that no fault
    can move before the tree commands it (see the module's docstring); else None.
    """
    limb = mission.limb(name)
    if not limb.simulated or _plant_kind(mission, name) is not PlantKind.KINEMATIC:
        return None
    if limb.sim.get("joint_noise_rad", 0.0) > 0.0:
        return None
    for fault in mission.faults:
        if fault.drawn or (fault.limb == name and fault.kind in _MOVING_FAULTS):
            return None
    base = Pose.from_array(limb.base_pose) if limb.base_pose else Pose()
    return tuple(base.transform_point(_initial_position(limb.robot, limb.limb)).tolist())


def limb_reach(robot: str, limb: str) -> float:
    """The reach bound [m] of a robot's limb (see :func:`reach_bound`)."""
    description = load_robot(robot)
    spec = description.limb(limb)
    return reach_bound(description.urdf_path, spec.base_link, spec.ee_link)


@cache
def interface_reach(robot: str, joints: tuple[str, ...], end: str, other: str) -> float | None:
    """How far apart [m] two standard interfaces of one limb can be (see :func:`reach_bound`).

    Args:
        robot: the robot description's name.
        joints: the limb's joint names (they name the limb within its robot).
        end: one interface of the limb (``E2``).
        other: another (``E1``).

    Returns:
        The bound, or None when no limb of the robot has those joints and both interfaces.
    """
    description = load_robot(robot)
    for limb in description.limbs:
        if tuple(joint.name for joint in limb.joints) != joints:
            continue
        links = (limb.interfaces.get(end), limb.interfaces.get(other))
        if links[0] is None or links[1] is None:
            return None
        return reach_bound(description.urdf_path, links[0], links[1])
    return None


def _base_position(mission: Mission, name: str) -> tuple[float, ...] | None:
    """Where limb ``name``'s base is in the world [m]; None when it floats.

    The base of a ``mujoco`` plant's robot floats: it is where the robot's latched feet
    and its legs put it as the run starts, not a declared pose.
    """
    if _plant_kind(mission, name) not in (None, PlantKind.KINEMATIC):
        return None
    base = mission.limb(name).base_pose
    return tuple(base[:3]) if base else (0.0, 0.0, 0.0)


def _plant_kind(mission: Mission, name: str) -> PlantKind | None:
    """The kind of plant limb ``name`` is part of (None: the mission declares no robots)."""
    plant = mission.limb(name).plant_name
    return next((robot.plant for robot in mission.robots if robot.name == plant), None)


def _movable(mission: Mission, where: Pose, spec: ModuleSpec) -> bool:
    """Whether some simulated limb of the mission reaches a grasp point of ``spec`` at ``where``."""
    tolerance = spec.grasp_tolerance.position_m
    for limb in mission.limbs:
        if limb.agent != "sim":
            continue
        base = _base_position(mission, limb.name)
        if base is None:  # (its base floats: it may carry the module from anywhere)
            return True
        reach = limb_reach(limb.robot, limb.limb) + tolerance + REACH_SLACK_M
        for point in spec.grasp_points.values():
            if math.dist((where @ point.pose).position.tolist(), base) <= reach:
                return True
    return False


def _align_problems(mission: Mission, node: Any) -> list[Problem]:
    """An ``align`` goal out of its simulated limb's reach on a module nothing can move."""
    limb = mission.limb(str(node.params.get("limb")))
    name, _, point = str(node.params.get("target", "")).partition("/")
    placed = next((item for item in mission.world if item.name == name), None)
    if limb.agent != "sim" or placed is None:
        return []  # the capture's "ee", a real limb's bodies (targets.py checks the names)
    spec = load_module(placed.module)
    where = Pose.from_array(placed.pose)
    if point not in spec.grasp_points or _movable(mission, where, spec):
        return []
    base = _base_position(mission, limb.name)
    if base is None:
        return []  # (a floating base is only known at run time)
    grasp = where @ spec.grasp_points[point].pose
    offset = node.params.get("offset")
    goal = grasp if offset is None else grasp @ Pose.from_array(offset)
    distance = math.dist(goal.position.tolist(), base)
    reach = limb_reach(limb.robot, limb.limb)
    if distance <= reach + REACH_SLACK_M:
        return []
    return [
        Problem(
            node.location,  # (not the offset's: the grasp point is out of reach too)
            f'align "{node.name}": its goal ({name}/{point}'
            f"{' with its offset' if offset is not None else ''}) is out of reach of limb "
            f"{limb.name}: {distance * 1000:.0f} mm from its base, "
            f"{(distance - reach) * 1000:.0f} mm beyond the {reach * 1000:.0f} mm its links "
            f"reach ({limb.robot}); move module {name} in the world or the limb's base",
        )
    ]


def _walk_step_problems(
    mission: Mission, node: NodeModel, points: Mapping[str, Pose]
) -> list[Problem]:
    """A limb's first ``walk_step`` onto a target its arm cannot reach from the latched anchor.

    The anchor (``anchor``, or the limb's other end) is where the robot's ``latched`` start
    puts it, a grasp point of the world; the arm's two ends are never farther apart than
    its links between them (:func:`interface_reach`).

    Args:
        mission: the mission.
        node: the ``walk_step``.
        points: the world's grasp points (:func:`world_grasp_points`).
    """
    limb = mission.limb(str(node.params.get("limb")))
    robot = next((r for r in mission.robots if r.name == limb.plant_name), None)
    end = str(node.params.get("end"))
    anchor = node.params.get("anchor") or ("E1" if end == "E2" else "E2")
    if robot is None or not robot.simulated or robot.plant is not PlantKind.MUJOCO:
        return []
    start = robot.latched.get(f"{limb.limb}.{anchor}")
    target = str(node.params.get("target"))
    if start is None or start not in points or target not in points:
        return []  # (a terrain, or names targets.py and the node's check report)
    spec = load_robot(limb.robot).limb(limb.limb)
    reach = interface_reach(limb.robot, tuple(j.name for j in spec.joints), end, str(anchor))
    if reach is None:
        return []
    distance = float(np.linalg.norm(points[start].position - points[target].position))
    settle = float(node.params.get("settle") or 0.0)
    if distance <= reach + settle + REACH_SLACK_M:
        return []
    return [
        Problem(
            node.params_at.get("target", node.location),
            f'walk_step "{node.name}": target {target} is out of reach of {limb.name}\'s end '
            f"{end}: {distance * 1000:.0f} mm from {start}, where its anchor {anchor} is "
            f"latched, {(distance - reach) * 1000:.0f} mm beyond the {reach * 1000:.0f} mm its "
            f"links reach between its ends ({limb.robot}); step onto a nearer grasp point, or "
            f"move {target.partition('/')[0]} in the world",
        )
    ]


def world_grasp_points(mission: Mission) -> dict[str, Pose]:
    """``MODULE/GRASP_POINT`` -> world pose, for every grasp point of the mission's world."""
    return grasp_poses(
        [WorldModule(item.name, item.module, Pose.from_array(item.pose)) for item in mission.world]
    )


def registry_or_default(registry: NodeRegistry | None) -> NodeRegistry:
    """``registry``, or :func:`limbtree.trees.nodes.default_registry` when None."""
    if registry is not None:
        return registry
    from limbtree.trees.nodes import default_registry  # (builds behaviours: on demand)

    return default_registry()


def _starts_children_once(node: NodeModel) -> bool:
    """Whether ``node`` starts each of its children at most once per run of its own."""
    if node.type in ("sequence", "fallback"):
        return node.params.get("memory", True) is not False
    if node.type == "parallel":
        return node.params.get("synchronise", True) is not False
    return node.type in _ONCE_DECORATORS


def _visits(
    node: NodeModel, again: bool = False, use: NodeModel | None = None
) -> Iterator[tuple[NodeModel, bool, NodeModel | None]]:
    """Each node depth first, with whether a node above it may start it more than once.

    And the root of the innermost subtree use it is in (None outside subtrees): its
    ``location`` is where the mission uses the subtree.
    """
    use = node if node.origin is not None else use
    yield node, again, use
    again = again or not _starts_children_once(node)
    for child in node.children:
        yield from _visits(child, again, use)


def _commanded(mission: Mission, registry: NodeRegistry, node: NodeModel) -> set[str]:
    """The limbs ``node`` may command: every limb for a type the registry does not know."""
    spec = registry.resolve(node.type)
    if spec is None:
        return {limb.name for limb in mission.limbs}
    return set(spec.commanded_limbs(node.params))


def _defaults(registry: NodeRegistry, node_type: str, names: Sequence[str]) -> dict[str, float]:
    """A node type's default values of some parameters, in SI units (its reference's)."""
    spec = registry.resolve(node_type)
    if spec is None:
        raise KeyError(f"no node type {node_type} in the registry")
    given = {param.name: param.default_value() for param in spec.params}
    return {name: float(given[name]) for name in names}


def reach_problems(mission: Mission, registry: NodeRegistry | None = None) -> list[Problem]:
    """Every ``sync_move`` waypoint and ``align`` goal its limb cannot reach, where written.

    An absolute waypoint beyond the limb's reach from its base; a relative one (an offset
    from where the limb is when the node starts) beyond it from the limb's start when the
    node is the limb's certain first move (see the module's docstring), else farther than
    any two points the limb reaches can be apart, twice its reach. An ``align`` goal beyond
    the limb's reach from its base, on a module no limb can move.

    Args:
        mission: the mission.
        registry: the node types the mission was loaded with (which limbs each commands);
            None: :func:`limbtree.trees.nodes.default_registry`.
    """
    registry = registry_or_default(registry)
    defaults = _defaults(registry, "sync_move", ("p_e", "settle"))
    problems: list[Problem] = []
    moved: set[str] = set()  # the limbs a node before may have moved
    points: dict[str, Pose] | None = None  # the world's grasp points, read once if needed
    for node, again, use in _visits(mission.root):
        found: list[Problem] = []
        if node.type == "align":
            found = _align_problems(mission, node)
        elif node.type == "sync_move":
            first = set() if again else set(node.params.get("limbs") or ()) - moved
            found = _sync_move_problems(mission, node, first, defaults)
        elif node.type == "walk_step" and not again and node.params.get("limb") not in moved:
            points = world_grasp_points(mission) if points is None else points
            found = _walk_step_problems(mission, node, points)
        if use is not None:  # (the same lines of a subtree serve every use: name this one)
            found = [Problem(p.location, f"{p.message} ({use.origin} given at {use.location})")
                     for p in found]  # fmt: skip
        problems += found
        moved |= _commanded(mission, registry, node)
    return merge_uses(problems)


#: The built-in node types that leave a limb a last valid command (their commands on their
#: trajectory), for ``recover_to_last_valid`` to bring it back to.
LAST_VALID_TYPES: Final = ("sync_move", "velocity_move", "recover_to_last_valid")


def recover_problems(mission: Mission, registry: NodeRegistry | None = None) -> list[Problem]:
    """Every ``recover_to_last_valid`` that certainly finds a limb without a last valid command.

    It brings each of its limbs back to the last command a move on a trajectory sent it
    (:data:`LAST_VALID_TYPES`), and fails at once for a limb without one. That is certain
    when no node before it, depth first, can leave the limb one (a node type of a package
    is taken to, when it commands the limb) and no node above it starts it more than once
    (under ``repeat``, ``retry`` or a reactive composite, a later move may run first).

    Args:
        mission: the mission.
        registry: the node types the mission was loaded with; None: the default.
    """
    registry = registry_or_default(registry)
    problems: list[Problem] = []
    moved: set[str] = set()  # the limbs a node before may have left a last valid command
    for node, again, use in _visits(mission.root):
        if node.type == "recover_to_last_valid" and not again:
            limbs = [name for name in node.params.get("limbs") or () if name not in moved]
            if limbs:
                message = (
                    f'recover_to_last_valid "{node.name}": no move before it leaves '
                    f"{', '.join(limbs)} a last valid command to go back to (only "
                    f"{', '.join(LAST_VALID_TYPES)} do), so it always fails; place it after "
                    "a sync_move over these limbs (in a fallback after the move, seed 000 "
                    "Sec. II-B)"
                )
                if use is not None:
                    message += f" ({use.origin} given at {use.location})"
                problems.append(Problem(node.location, message))
        spec = registry.resolve(node.type)
        if node.type in LAST_VALID_TYPES or (
            spec is None or registry.source(spec.type) != BUILT_IN
        ):
            moved |= _commanded(mission, registry, node)
    return merge_uses(problems)


def _sync_move_problems(
    mission: Mission, node: NodeModel, first: set[str], defaults: Mapping[str, float]
) -> list[Problem]:
    """A ``sync_move``'s waypoints out of reach; ``first``: the limbs it certainly moves first.

    ``defaults``: ``sync_move``'s ``p_e`` and ``settle`` [m] for a node that leaves them out.
    """
    problems: list[Problem] = []
    absolute = node.params.get("frame") == "absolute"
    starts = {name: _start_position(mission, name) for name in sorted(first)}
    for number, waypoint in enumerate(node.params.get("waypoints") or (), start=1):
        for name in node.params.get("limbs") or ():
            pose = waypoint.get(name) if hasattr(waypoint, "get") else None
            if pose is None:
                continue
            allowed = _tolerance(node, name, number, defaults)
            start = starts.get(name)
            if absolute:
                problems += _out_of_reach(mission, node, number, name, pose, allowed)
            elif start is None:
                problems += _offset_problem(mission, node, number, name, pose, allowed[0])
            else:
                target = [a + b for a, b in zip(start, pose[:3], strict=True)]
                problems += _out_of_reach(mission, node, number, name, target, allowed, start)
    return problems


__all__ = [
    "LAST_VALID_TYPES",
    "REACH_SLACK_M",
    "interface_reach",
    "limb_reach",
    "reach_bound",
    "reach_problems",
    "recover_problems",
]
