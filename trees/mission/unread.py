"""``limbtree check``'s warnings about parameters a node is given but does not read.

An ``align`` node runs one of seed 002's two controllers, chosen by ``version``, and some of
its keys belong to one controller only: Version 1 (step-and-settle) clamps each step to the
hypersphere ``p_e_mm`` / ``r_e_deg`` and paces it by ``max_speed_mm_s`` and
``max_accel_mm_s2``, and takes its tuning from ``v1``; Version 2 (the default, the adaptive
clamp) paces itself by its own radii and takes its tuning from ``v2``. A key of the other
controller is read as valid and changes nothing: ``align: {..., max_speed_mm_s: 5}`` under
Version 2 moves as fast as without it. A mission may set both controllers' keys and choose
the version by a parameter (``--set controller_version=1``), so ``check`` and ``run`` warn
instead of refusing it.

A ``sync_move`` with ``r_e_deg: inf`` (its default) neither paces nor checks rotation, yet
commands each waypoint's orientation: a relative waypoint that turns a limb
(``rotation_deg: [0, 0, 60]``) is commanded at once, and the move succeeds as soon as the
positions settle, the turn not done; the next node then starts from the limb mid-turn (a
relative move keeps that orientation, and the turn never happens). ``check`` and ``run``
warn about it too.

A parameter is a whole value, ``$name``: inside a text (an operator gate's prompt ``"lift
by $lift_mm?"``) the ``$name`` stays as it is written, and ``check`` and ``run`` warn when it
names one of the mission's parameters.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from limbtree.trees.mission.errors import Location
from limbtree.trees.mission.model import Mission, NodeModel

#: Per ``align`` version, the parameters it does not read: (model name, mission key).
ALIGN_UNREAD: Final[Mapping[int, tuple[tuple[str, str], ...]]] = {
    1: (("v2", "v2"),),
    2: (
        ("p_e", "p_e_mm"),
        ("r_e", "r_e_deg"),
        ("max_speed", "max_speed_mm_s"),
        ("max_accel", "max_accel_mm_s2"),
        ("v1", "v1"),
    ),
}

#: Per ``align`` version, what to give instead.
_INSTEAD: Final[Mapping[int, str]] = {
    1: "tune Version 1 under v1 (e.g. v1: {s_max_mm: 20}), or set version: 2",
    2: (
        "tune Version 2 under v2 (its speeds: v2: {t_max_mm_s: 50, r_max_deg_s: 8} by "
        "default), or set version: 1"
    ),
}


@dataclass(frozen=True)
class UnreadWarning:
    """A node given parameters it does not read.

    Attributes:
        node_id: the node's id (path of child indices from the root ``0``).
        node_type: its type.
        location: where the first such parameter is written.
        version: the controller version that does not read them.
        keys: their mission keys, in the reference's order.
    """

    node_id: str
    node_type: str
    location: Location
    version: int
    keys: tuple[str, ...]

    def __str__(self) -> str:
        other = 1 if self.version == 2 else 2
        names = ", ".join(self.keys)
        them = "it changes" if len(self.keys) == 1 else "they change"
        return (
            f"{self.location}: warning: node {self.node_id}: "
            f"{self.node_type} version {self.version} does not read {names} (Version "
            f"{other}'s): {them} nothing; {_INSTEAD[self.version]}"
        )


@dataclass(frozen=True)
class UnwaitedTurnWarning:
    """A ``sync_move`` whose waypoint turns a limb for which rotation is ignored (``r_e`` inf).

    Attributes:
        node_id: the node's id (path of child indices from the root ``0``).
        location: where the waypoint is written.
        waypoint: the waypoint's number (from 1).
        limb: the first limb it turns with ``r_e`` inf.
        angle_deg: by how much it turns that limb [deg].
    """

    node_id: str
    location: Location
    waypoint: int
    limb: str
    angle_deg: float

    def __str__(self) -> str:
        return (
            f"{self.location}: warning: node {self.node_id}: "
            f"waypoint {self.waypoint} turns limb {self.limb} by {self.angle_deg:.0f} deg, "
            f"but its r_e_deg is inf: the move neither paces nor waits for the rotation, so "
            f"it succeeds once the positions settle, before the turn is done (and a move "
            f"after it starts from the limb mid-turn); give r_e_deg (e.g. 30) to move and "
            f"arrive in rotation too"
        )


#: A relative waypoint turning a limb by less than this [rad] asks for no turn.
_NO_TURN = math.radians(0.01)


def unwaited_turn_warnings(mission: Mission) -> list[UnwaitedTurnWarning]:
    """Every ``sync_move`` of ``mission`` whose relative waypoint turns a limb of ``r_e`` inf.

    One warning per node: its first such waypoint, and the first such limb of it.
    """
    warnings = []
    for node_id, node in nodes_with_ids(mission.root, "0"):
        if node.type != "sync_move" or node.params.get("frame", "relative") != "relative":
            continue
        found = _first_unwaited_turn(node.params)
        if found is not None:
            number, limb, angle = found
            location = node.value_at(f"waypoints.{number}")
            warnings.append(
                UnwaitedTurnWarning(node_id, location, number, limb, math.degrees(angle))
            )
    return warnings


def _first_unwaited_turn(params: Mapping[str, Any]) -> tuple[int, str, float] | None:
    r_e = params.get("r_e", math.inf)
    for number, waypoint in enumerate(params.get("waypoints") or (), start=1):
        for limb in params.get("limbs") or ():
            radius = r_e.get(limb, math.inf) if isinstance(r_e, Mapping) else r_e
            if radius is not None and not math.isinf(float(radius)):
                continue
            qw = float(waypoint[limb][6])
            angle = 2.0 * math.acos(min(1.0, abs(qw)))
            if angle > _NO_TURN:
                return number, limb, angle
    return None


@dataclass(frozen=True)
class TextParameterWarning:
    """A text value with a mission parameter's ``$name`` inside it, which stays as written.

    Attributes:
        node_id: the node's id (path of child indices from the root ``0``).
        location: where the text is written.
        key: the node's key holding the text.
        name: the parameter named.
    """

    node_id: str
    location: Location
    key: str
    name: str

    def __str__(self) -> str:
        return (
            f"{self.location}: warning: node {self.node_id}: "
            f"{self.key} holds ${self.name} inside a text, which stays as written: a "
            f"parameter is only a whole value ({self.key}: ${self.name})"
        )


#: ``$name`` inside a text.
_DOLLAR_NAME: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def text_parameter_warnings(mission: Mission) -> list[TextParameterWarning]:
    """Every text value of a node with a mission parameter's ``$name`` inside it."""
    warnings = []
    for node_id, node in nodes_with_ids(mission.root, "0"):
        for key, value in node.params.items():
            if not isinstance(value, str):  # (a whole $name was substituted when read)
                continue
            names = [m for m in _DOLLAR_NAME.findall(value) if m in mission.parameters]
            if names:
                location = node.value_at(key)
                warnings.append(TextParameterWarning(node_id, location, key, names[0]))
    return warnings


def unread_warnings(mission: Mission) -> list[UnreadWarning]:
    """Every ``align`` node of ``mission`` given keys its version does not read."""
    warnings = []
    for node_id, node in nodes_with_ids(mission.root, "0"):
        if node.type != "align":
            continue
        version = int(node.params.get("version", 2))
        given = [
            (name, key) for name, key in ALIGN_UNREAD.get(version, ()) if name in node.params_at
        ]
        if given:
            location = node.value_at(given[0][0])
            keys = tuple(key for _, key in given)
            warnings.append(UnreadWarning(node_id, node.type, location, version, keys))
    return warnings


def nodes_with_ids(node: NodeModel, node_id: str) -> list[tuple[str, NodeModel]]:
    """``node`` and every node below it, each with its id (``node_id``, then ``.i`` per child)."""
    out = [(node_id, node)]
    for i, child in enumerate(node.children):
        out.extend(nodes_with_ids(child, f"{node_id}.{i}"))
    return out


__all__ = [
    "ALIGN_UNREAD",
    "TextParameterWarning",
    "UnreadWarning",
    "UnwaitedTurnWarning",
    "nodes_with_ids",
    "text_parameter_warnings",
    "unread_warnings",
    "unwaited_turn_warnings",
]
