"""Node types of mission trees: declarations, the registry, and what a plug-in needs.

Every node type, leaf or composite, is one :class:`NodeSpec`; :func:`default_registry`
gathers limbtree's own and those of installed packages (entry-point group
``limbtree.nodes``). A package declares a leaf like this::

    from limbtree.trees.nodes import REQUIRED, LimbName, NodeKind, NodeSpec, ParamSpec, leaf

    HOLD_STILL = NodeSpec(
        "hold_still",
        NodeKind.LEAF,
        (ParamSpec("limb", LimbName(), REQUIRED, "the limb to hold"),),
        (0, 0),
        "hold a limb where it is",
        build=leaf(HoldStillBehaviour),   # a SkillBehaviour subclass
        commands=("limb",),
    )
"""

from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.mission.nodes import (
    ALWAYS,
    BtElement,
    Concurrency,
    NodeExport,
    NodeKind,
    NodeRegistry,
    NodeRegistryError,
    NodeSource,
    NodeSpec,
)
from limbtree.trees.mission.units import DEG, MM, MM_S, NONE, S, Unit
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    Flag,
    Integer,
    LimbList,
    LimbName,
    ParamSpec,
    PerLimb,
    Quantity,
    Text,
)
from limbtree.trees.nodes.registry import (
    BUILT_IN_TYPES,
    ENTRY_POINT_GROUP,
    builtin_registry,
    default_registry,
    load_entry_point,
    registry_with,
)
from limbtree.trees.nodes.skills import leaf

__all__ = [
    "ALWAYS",
    "BUILT_IN_TYPES",
    "DEG",
    "ENTRY_POINT_GROUP",
    "MM",
    "MM_S",
    "NONE",
    "REQUIRED",
    "BtElement",
    "Choice",
    "Concurrency",
    "Flag",
    "Integer",
    "LimbList",
    "LimbName",
    "NodeExport",
    "NodeKind",
    "NodeRegistry",
    "NodeRegistryError",
    "NodeSource",
    "NodeSpec",
    "ParamSpec",
    "PerLimb",
    "Quantity",
    "S",
    "SkillBehaviour",
    "Text",
    "Unit",
    "builtin_registry",
    "default_registry",
    "leaf",
    "load_entry_point",
    "registry_with",
]
