"""Waypoints a limb cannot reach, found before anything moves (``limbtree check`` and ``run``).

A limb's reach is bounded by its links: the end-effector is never further from the limb's
base than the sum of the distances between consecutive joint frames along its chain (each
a rigid offset in the URDF, whatever the joint angles; the triangle inequality), plus the
travel of its prismatic joints. An absolute ``sync_move`` waypoint further than that from
the limb's base can never be reached: the limb would stop at the edge of its workspace and
the node would wait forever. :func:`reach_problems` reports each such waypoint at its own
``file:line:column`` (where its text is, also when a parameter or ``--set`` gave it).

Waypoints relative to where a limb starts, and bases that move during a run, are only known
at run time: there a ``sync_move`` with a ``timeout_s`` fails naming the waypoint and each
limb's distance from it.

An ``align`` of a simulated limb onto a module's grasp point (with its ``offset``) further
than the limb's reach from its base is reported the same way (at its ``offset``, or at the
node when it has none) when the module cannot move
before the node runs: when no simulated limb of the mission reaches any of its grasp points,
none can grasp and carry it. A module some limb can carry is only known at run time: there
the ``align`` fails when its error has come no closer for its ``stall_timeout_s``.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from limbtree.kinematics import Pose
from limbtree.robots import load_robot
from limbtree.robots.modules import ModuleSpec, load_module
from limbtree.trees.mission import Mission
from limbtree.trees.mission.errors import Problem

#: Slack on the reach bound [m]: rounding in the description, never a real margin.
REACH_SLACK_M = 1e-3


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


def _offset_problem(
    mission: Mission, node: Any, number: int, name: str, pose: Any
) -> list[Problem]:
    """A relative waypoint farther from the start than twice the limb's reach."""
    limb = mission.limb(name)
    offset = math.dist(pose[:3], (0.0, 0.0, 0.0))
    span = 2.0 * limb_reach(limb.robot, limb.limb)
    if offset <= span + REACH_SLACK_M:
        return []
    return [
        Problem(
            node.value_at(f"waypoints.{number}"),
            f'sync_move "{node.name}": waypoint {number} moves limb {name} {offset * 1000:.4g} '
            f"mm from where it starts; no two points its links reach are more than "
            f"{span * 1000:.0f} mm apart ({limb.robot}): shorten the move",
        )
    ]


def limb_reach(robot: str, limb: str) -> float:
    """The reach bound [m] of a robot's limb (see :func:`reach_bound`)."""
    description = load_robot(robot)
    spec = description.limb(limb)
    return reach_bound(description.urdf_path, spec.base_link, spec.ee_link)


def _base_position(mission: Mission, name: str) -> tuple[float, ...]:
    """Where limb ``name``'s base is in the world [m]."""
    base = mission.limb(name).base_pose
    return tuple(base[:3]) if base else (0.0, 0.0, 0.0)


def _movable(mission: Mission, where: Pose, spec: ModuleSpec) -> bool:
    """Whether some simulated limb of the mission reaches a grasp point of ``spec`` at ``where``."""
    tolerance = spec.grasp_tolerance.position_m
    for limb in mission.limbs:
        if limb.agent != "sim":
            continue
        base = _base_position(mission, limb.name)
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
    goal = where @ spec.grasp_points[point].pose
    offset = node.params.get("offset")
    if offset is not None:
        goal = goal @ Pose.from_array(offset)
    distance = math.dist(goal.position.tolist(), _base_position(mission, limb.name))
    reach = limb_reach(limb.robot, limb.limb)
    if distance <= reach + REACH_SLACK_M:
        return []
    return [
        Problem(
            node.location if offset is None else node.value_at("offset"),
            f'align "{node.name}": its goal ({name}/{point}'
            f"{' with its offset' if offset is not None else ''}) is out of reach of limb "
            f"{limb.name}: {distance * 1000:.0f} mm from its base, "
            f"{(distance - reach) * 1000:.0f} mm beyond the {reach * 1000:.0f} mm its links "
            f"reach ({limb.robot}); move module {name} in the world or the limb's base",
        )
    ]


def reach_problems(mission: Mission) -> list[Problem]:
    """Every ``sync_move`` waypoint and ``align`` goal its limb cannot reach, where written.

    An absolute waypoint beyond the limb's reach from its base; a relative one (an offset
    from where the limb is when the node starts) farther than any two points the limb
    reaches can be apart, twice its reach, whatever the start. An ``align`` goal beyond the
    limb's reach from its base, on a module no limb can move.
    """
    problems: list[Problem] = []
    for node in mission.root.walk():
        if node.type == "align":
            problems += _align_problems(mission, node)
            continue
        if node.type != "sync_move":
            continue
        absolute = node.params.get("frame") == "absolute"
        for number, waypoint in enumerate(node.params.get("waypoints") or (), start=1):
            for name in node.params.get("limbs") or ():
                pose = waypoint.get(name) if hasattr(waypoint, "get") else None
                if pose is None:
                    continue
                if not absolute:
                    problems += _offset_problem(mission, node, number, name, pose)
                    continue
                limb = mission.limb(name)
                distance = math.dist(pose[:3], _base_position(mission, name))
                reach = limb_reach(limb.robot, limb.limb)
                if distance > reach + REACH_SLACK_M:
                    problems.append(
                        Problem(
                            node.value_at(f"waypoints.{number}"),
                            f'sync_move "{node.name}": waypoint {number} is out of reach of '
                            f"limb {name}: {distance * 1000:.0f} mm from its base, "
                            f"{(distance - reach) * 1000:.0f} mm beyond the "
                            f"{reach * 1000:.0f} mm its links reach ({limb.robot}); move the "
                            "waypoint or the limb's base",
                        )
                    )
    return problems


__all__ = ["REACH_SLACK_M", "limb_reach", "reach_bound", "reach_problems"]
