"""Mission files: parse a YAML mission into a validated, immutable model.

Build apart from run: :func:`load_mission` reads a mission file (its includes, parameters
and ``--set`` overrides, limbs, faults and tree) into a :class:`Mission` in SI units, or
raises :class:`MissionError` listing every problem as ``file:line:column: message``. Turning
the model into py_trees behaviours is the tree builder's job. The file format is described
in ``docs/missions.md``; the node types are a :class:`NodeRegistry`
(:func:`limbtree.trees.nodes.default_registry`).
"""

from limbtree.trees.mission.errors import Location, MissionError, Problem
from limbtree.trees.mission.loader import TOP_KEYS, check_mission, load_mission
from limbtree.trees.mission.model import (
    Clock,
    FaultDecl,
    FaultKind,
    LimbDecl,
    Mission,
    NodeModel,
    PoseTuple,
    WorldDecl,
)
from limbtree.trees.mission.nodes import NodeKind, NodeRegistry, NodeRegistryError, NodeSpec
from limbtree.trees.mission.values import REQUIRED, ParamSpec, ValueType

__all__ = [
    "REQUIRED",
    "TOP_KEYS",
    "Clock",
    "FaultDecl",
    "FaultKind",
    "LimbDecl",
    "Location",
    "Mission",
    "MissionError",
    "NodeKind",
    "NodeModel",
    "NodeRegistry",
    "NodeRegistryError",
    "NodeSpec",
    "ParamSpec",
    "PoseTuple",
    "Problem",
    "ValueType",
    "WorldDecl",
    "check_mission",
    "load_mission",
]
