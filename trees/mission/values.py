"""Value types of mission files: how one key's value is checked and converted to SI.

Each :class:`ValueType` reads a composed YAML value (an :class:`Item`) and returns the
model's value, or reports every problem it finds and returns :data:`INVALID`. A
:class:`ParamSpec` pairs a model name with a value type and a default; the key in the file
is the name plus the type's unit suffix (``p_e`` + millimetres -> ``p_e_mm``).
:func:`read_fields` reads a whole map of keys against a tuple of specs.

This module gathers them from where they live, by concept:
:mod:`~limbtree.trees.mission.value_type` (the base, specs, maps of keys),
:mod:`~limbtree.trees.mission.scalars` (numbers, words, lists of them),
:mod:`~limbtree.trees.mission.limb_values` (limbs, per-limb values) and
:mod:`~limbtree.trees.mission.motion_values` (poses, waypoints, profiles, postures).

New node types add their own value types by subclassing :class:`ValueType`.
"""

from limbtree.trees.mission.limb_values import LimbList, LimbName, PerLimb
from limbtree.trees.mission.motion_values import PoseSpec, Posture, Postures, Profile, Waypoints
from limbtree.trees.mission.scalars import (
    SIM_AGENT,
    Agent,
    Choice,
    Flag,
    Indices,
    Integer,
    Names,
    Quantity,
    Range,
    Text,
    TextMap,
    Vector,
    Weights,
    scalar_number,
)
from limbtree.trees.mission.value_type import (
    REQUIRED,
    ParamSpec,
    ValueContext,
    ValueType,
    file_fields,
    read_fields,
    suggest_key,
    unknown_key,
    value_places,
)

__all__ = [
    "REQUIRED",
    "SIM_AGENT",
    "Agent",
    "Choice",
    "Flag",
    "Indices",
    "Integer",
    "LimbList",
    "LimbName",
    "Names",
    "ParamSpec",
    "PerLimb",
    "PoseSpec",
    "Posture",
    "Postures",
    "Profile",
    "Quantity",
    "Range",
    "Text",
    "TextMap",
    "ValueContext",
    "ValueType",
    "Vector",
    "Waypoints",
    "Weights",
    "file_fields",
    "read_fields",
    "scalar_number",
    "suggest_key",
    "unknown_key",
    "value_places",
]
