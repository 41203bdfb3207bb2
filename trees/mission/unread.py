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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

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
        where = self.location
        other = 1 if self.version == 2 else 2
        names = ", ".join(self.keys)
        them = "it changes" if len(self.keys) == 1 else "they change"
        return (
            f"{where.file}:{where.line}:{where.column}: warning: node {self.node_id}: "
            f"{self.node_type} version {self.version} does not read {names} (Version "
            f"{other}'s): {them} nothing; {_INSTEAD[self.version]}"
        )


def unread_warnings(mission: Mission) -> list[UnreadWarning]:
    """Every ``align`` node of ``mission`` given keys its version does not read."""
    warnings = []
    for node_id, node in _with_ids(mission.root, "0"):
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


def _with_ids(node: NodeModel, node_id: str) -> list[tuple[str, NodeModel]]:
    out = [(node_id, node)]
    for i, child in enumerate(node.children):
        out.extend(_with_ids(child, f"{node_id}.{i}"))
    return out


__all__ = ["ALIGN_UNREAD", "UnreadWarning", "unread_warnings"]
