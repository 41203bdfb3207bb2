"""``limbtree check``'s warnings about moves whose waypoints lie inside their hypersphere.

A looping ``sync_move`` whose every segment is no longer than its hypersphere (``p_e`` on
position, ``r_e`` on rotation, stacked over the limbs by ``norm``: seed 000 eqs. 7, 9) lets the
clamp reach each waypoint at once. The move then goes round up to one lap per tick (never
more: see :class:`~limbtree.skills.SyncConfig`), and its command jumps from waypoint to
waypoint instead of leading the limbs along the path. That mission is legal and its ticks
end, so ``check`` warns instead of refusing it.

The same clamp passes over a whole segment of any move, looping or not, whose two ends
both lie inside the hypersphere around the waypoint before them (or the limbs' start): from
there it commands the furthest point of the path within ``p_e``, beyond the segment, which
is then never commanded. ``p_e_mm=150`` on the 200 mm square of ``square_sync.yaml`` puts
every corner within reach of the centre: the move commands the end (the centre) at once and
succeeds in one tick without tracing the square. ``check`` and ``run`` warn about it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from limbtree.kinematics import Pose, SE3Metric, stacked_distance
from limbtree.skills.sync import offset_pose
from limbtree.trees.mission.errors import Location
from limbtree.trees.mission.model import Mission
from limbtree.trees.mission.unread import (
    TextParameterWarning,
    UnreadWarning,
    UnwaitedTurnWarning,
    nodes_with_ids,
    text_parameter_warnings,
    unread_warnings,
    unwaited_turn_warnings,
)

#: Node types whose ``loop`` parameter makes them go round their waypoints.
LOOPING_TYPES = ("sync_move",)

#: A segment at most this long (in hypersphere radii) counts as inside the hypersphere.
_INSIDE = 1.0 + 1e-9


@dataclass(frozen=True)
class LoopWarning:
    """A looping move whose every segment lies inside its hypersphere.

    Attributes:
        node_id: the node's id (path of child indices from the root ``0``).
        location: where the node is written.
        longest: the longest segment of its lap, in hypersphere radii (``<= 1``).
    """

    node_id: str
    location: Location
    longest: float

    def __str__(self) -> str:
        return (
            f"{self.location}: warning: node {self.node_id} loops "
            f"over segments that all lie inside its hypersphere (the longest is "
            f"{self.longest:.2f} of p_e / r_e): the clamp reaches each waypoint at once, so "
            f"the move goes round up to one lap per tick and its command jumps between the "
            f"waypoints instead of leading the limbs along the path (seed 000's clamp only "
            f"cuts a path that leaves p_e of where the limbs are); make the waypoints further "
            f"apart than p_e_mm / r_e_deg, or lower p_e_mm / r_e_deg"
        )


@dataclass(frozen=True)
class SkipWarning:
    """A move that passes over a segment: both its ends are inside the hypersphere of a point.

    Attributes:
        node_id: the node's id (path of child indices from the root ``0``).
        location: where the node is written.
        origin: the point they are near: ``the limbs' start`` or ``waypoint N`` (1-based).
        first: the skipped segment's first waypoint (1-based; its second is the next one).
        distance: the further of the two ends from ``origin``, in hypersphere radii.
    """

    node_id: str
    location: Location
    origin: str
    first: int
    distance: float

    def __str__(self) -> str:
        return (
            f"{self.location}: warning: node {self.node_id}: "
            f"waypoints {self.first} and {self.first + 1} both lie inside the hypersphere "
            f"around {self.origin} ({self.distance:.2f} of p_e / r_e): from there the clamp "
            f"commands the furthest point of the path within p_e, so the segment between "
            f"them is never commanded and the limbs do not trace it (seed 000's clamp only "
            f"cuts a path that leaves p_e of where the limbs are); make p_e_mm / r_e_deg "
            f"smaller than the waypoints' spacing, or the waypoints further apart"
        )


def mission_warnings(
    mission: Mission,
) -> list[LoopWarning | SkipWarning | UnreadWarning | UnwaitedTurnWarning | TextParameterWarning]:
    """What ``check`` and ``run`` warn about, one warning per node, loops first.

    Looping moves inside their hypersphere, moves that pass over a segment, nodes given
    parameters they do not read, moves that do not wait for the turn they command, and a
    parameter's ``$name`` inside a text (:mod:`~limbtree.trees.mission.unread`).
    """
    looping = loop_warnings(mission)
    warned = {w.node_id for w in looping}
    skips = [w for w in skip_warnings(mission) if w.node_id not in warned]
    return [
        *looping,
        *skips,
        *unread_warnings(mission),
        *unwaited_turn_warnings(mission),
        *text_parameter_warnings(mission),
    ]


def skip_warnings(mission: Mission) -> list[SkipWarning]:
    """Every move of ``mission`` that passes over a whole segment (the first one per node)."""
    warnings = []
    for node_id, node in nodes_with_ids(mission.root, "0"):
        if node.type not in LOOPING_TYPES:
            continue
        found = skipped_segment(node.params)
        if found is not None:
            origin, first, distance = found
            warnings.append(SkipWarning(node_id, node.location, origin, first, distance))
    return warnings


def skipped_segment(params: Mapping[str, Any]) -> tuple[str, int, float] | None:
    """The first segment a move passes over, or None.

    A segment is passed over when both its ends lie inside the hypersphere around the
    point before it (the waypoint before, or the limbs' start for relative waypoints).

    Args:
        params: the node's model parameters (SI: ``p_e`` [m], ``r_e`` [rad]).

    Returns:
        ``(origin, first, distance)`` as in :class:`SkipWarning`, or None.
    """
    limbs, points, metrics, norm, relative = _geometry(params)
    labels = [f"waypoint {i + 1}" for i in range(len(points))]
    if relative:  # the start is known: each limb where it is, offset 0
        points.insert(0, tuple(Pose() for _ in limbs))
        labels.insert(0, "the limbs' start")
    number = 0 if relative else 1  # points[i] is waypoint i + number (1-based)
    for k in range(len(points) - 2):
        near = [stacked_distance(points[k], points[j], metrics, ord=norm) for j in (k + 1, k + 2)]
        if max(near) <= _INSIDE:
            return labels[k], k + 1 + number, max(near)
    return None


def loop_warnings(mission: Mission) -> list[LoopWarning]:
    """Every looping move of ``mission`` whose lap lies inside its hypersphere."""
    warnings = []
    for node_id, node in nodes_with_ids(mission.root, "0"):
        if node.type not in LOOPING_TYPES or not node.params.get("loop"):
            continue
        longest = longest_loop_segment(node.params)
        if longest is not None and longest <= _INSIDE:
            warnings.append(LoopWarning(node_id, node.location, longest))
    return warnings


def longest_loop_segment(params: Mapping[str, Any]) -> float | None:
    """The longest segment of a looping move's lap, in hypersphere radii.

    The lap is the waypoints in turn and back to the first; with a single waypoint, the
    limbs' start to it and back. Relative waypoints are offsets from each limb's start, so
    their distances do not depend on where the limbs are; absolute ones with a single
    waypoint do (the start is where the limbs are), and give None.

    Args:
        params: the node's model parameters (SI: ``p_e`` [m], ``r_e`` [rad]).
    """
    limbs, points, metrics, norm, relative = _geometry(params)
    if len(points) == 1:
        if not relative:
            return None
        points.insert(0, tuple(Pose() for _ in limbs))
    lap = list(zip(points, points[1:] + points[:1], strict=True))
    return max(stacked_distance(a, b, metrics, ord=norm) for a, b in lap)


def _geometry(
    params: Mapping[str, Any],
) -> tuple[Sequence[str], list[tuple[Pose, ...]], list[SE3Metric], float, bool]:
    """A move's geometry as the clamp sees it.

    Returns:
        The limbs, the waypoints (one pose per limb), each limb's metric, the stacking norm,
        and whether the waypoints are offsets from the limbs' start (``frame: relative``).
    """
    limbs: Sequence[str] = tuple(params["limbs"])
    relative = params.get("frame", "relative") == "relative"
    points = [
        tuple(_point(waypoint[limb], relative) for limb in limbs)
        for waypoint in params["waypoints"]
    ]
    metrics = [
        SE3Metric(
            _per_limb(params.get("p_e", 0.02), limb), _per_limb(params.get("r_e", math.inf), limb)
        )
        for limb in limbs
    ]
    return limbs, points, metrics, float(params.get("norm", math.inf)), relative


def _point(values: Sequence[float], relative: bool) -> Pose:
    return offset_pose(Pose(), values) if relative else Pose.from_array(values)


def _per_limb(value: Any, limb: str) -> float:
    return float(value[limb]) if isinstance(value, Mapping) else float(value)


__all__ = [
    "LOOPING_TYPES",
    "LoopWarning",
    "SkipWarning",
    "longest_loop_segment",
    "loop_warnings",
    "mission_warnings",
    "skip_warnings",
    "skipped_segment",
]
