"""``limbtree check``'s warning about looping moves whose lap fits inside the hypersphere.

A looping ``sync_move`` whose every segment is no longer than its hypersphere (``p_e`` on
position, ``r_e`` on rotation, stacked over the limbs by ``norm``: seed 000 eqs. 7, 9) lets the
clamp reach each waypoint at once. The move then goes round up to one lap per tick (never
more: see :class:`~limbtree.skills.SyncConfig`), and its command jumps from waypoint to
waypoint instead of leading the limbs along the path. That mission is legal and its ticks
end, so ``check`` warns instead of refusing it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from limbtree.kinematics import Pose, SE3Metric, stacked_distance
from limbtree.skills.sync import offset_pose
from limbtree.trees.mission.errors import Location
from limbtree.trees.mission.model import Mission, NodeModel

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
        where = self.location
        return (
            f"{where.file}:{where.line}:{where.column}: warning: node {self.node_id} loops "
            f"over segments that all lie inside its hypersphere (the longest is "
            f"{self.longest:.2f} of p_e / r_e): the clamp reaches each waypoint at once, so "
            f"the move goes round up to one lap per tick and its command jumps between the "
            f"waypoints instead of leading the limbs along the path (seed 000's clamp only "
            f"cuts a path that leaves p_e of where the limbs are); make the waypoints further "
            f"apart than p_e_mm / r_e_deg, or lower p_e_mm / r_e_deg"
        )


def loop_warnings(mission: Mission) -> list[LoopWarning]:
    """Every looping move of ``mission`` whose lap lies inside its hypersphere."""
    warnings = []
    for node_id, node in _with_ids(mission.root, "0"):
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
    limbs: Sequence[str] = tuple(params["limbs"])
    relative = params.get("frame", "relative") == "relative"
    points = [
        tuple(_point(waypoint[limb], relative) for limb in limbs)
        for waypoint in params["waypoints"]
    ]
    if len(points) == 1:
        if not relative:
            return None
        points.insert(0, tuple(Pose() for _ in limbs))
    metrics = [
        SE3Metric(
            _per_limb(params.get("p_e", 0.02), limb), _per_limb(params.get("r_e", math.inf), limb)
        )
        for limb in limbs
    ]
    norm = float(params.get("norm", math.inf))
    lap = list(zip(points, points[1:] + points[:1], strict=True))
    return max(stacked_distance(a, b, metrics, ord=norm) for a, b in lap)


def _point(values: Sequence[float], relative: bool) -> Pose:
    return offset_pose(Pose(), values) if relative else Pose.from_array(values)


def _per_limb(value: Any, limb: str) -> float:
    return float(value[limb]) if isinstance(value, Mapping) else float(value)


def _with_ids(node: NodeModel, node_id: str) -> list[tuple[str, NodeModel]]:
    out = [(node_id, node)]
    for i, child in enumerate(node.children):
        out.extend(_with_ids(child, f"{node_id}.{i}"))
    return out


__all__ = ["LOOPING_TYPES", "LoopWarning", "longest_loop_segment", "loop_warnings"]
