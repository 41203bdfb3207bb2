"""Parameters as the exports show them: back in the mission file's units, and as short text.

A leaf's model holds SI values (``p_e = 0.02``); the exports write them as the mission file
would (``p_e_mm: 20``), summarise them in a few words (``p_e=20 mm``, ``4 waypoints``) and
write them as BehaviorTree.CPP port text (``heavy;light``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from scipy.spatial.transform import Rotation

from limbtree.trees.mission.units import Unit
from limbtree.trees.mission.values import (
    Flag,
    Integer,
    LimbList,
    LimbName,
    PerLimb,
    PoseSpec,
    Posture,
    Postures,
    Profile,
    Quantity,
    Text,
    ValueType,
    Vector,
    Waypoints,
)

_UNIT_LABEL: Final = MappingProxyType({"mm_s": "mm/s", "hz": "Hz"})


def to_file_units(vtype: ValueType | None, value: Any) -> Any:
    """A model (SI) value back in the mission file's unit, as plain JSON types.

    Poses (one, or in waypoints) become ``{translation_mm, rotation_deg}`` (rotation left out
    when zero), joint postures ``{q_deg}``, velocity profiles ``{duration_s, velocity_mm_s}``.
    """
    if isinstance(vtype, Integer) and vtype.forever and value is None:
        return "forever"
    if value is None:
        return None
    if isinstance(vtype, Quantity | PerLimb | Vector):
        return _scaled(value, 1.0 / vtype.key_unit().to_si)
    if isinstance(vtype, Waypoints):
        return [_per_limb({limb: _pose_file(pose) for limb, pose in wp.items()}) for wp in value]
    if isinstance(vtype, Profile):
        return [
            {
                "duration_s": _round(float(seg["duration"])),
                "velocity_mm_s": _scaled(seg["velocity"], 1e3),
            }
            for seg in value
        ]
    if isinstance(vtype, Postures):
        return [_per_limb({limb: _posture_file(p) for limb, p in wp.items()}) for wp in value]
    if isinstance(vtype, Posture):
        return _posture_file(value)
    if isinstance(vtype, PoseSpec):
        return _pose_file(value)
    return plain(value)


def _per_limb(values: dict[str, Any]) -> Any:
    """One value when every limb has the same (as a mission file may say it), else the map."""
    distinct = list(values.values())
    if distinct and all(v == distinct[0] for v in distinct):
        return distinct[0]
    return values


def _round(value: float) -> float:
    return value if not math.isfinite(value) else float(f"{value:.6g}")


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _scaled(v, factor) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_scaled(v, factor) for v in value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return plain(value)
    return _round(float(value) * factor)


def plain(value: Any) -> Any:
    """A value as plain JSON types (lists, maps, numbers rounded to 6 digits, text)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    if isinstance(value, float):
        return _round(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def _pose_file(pose: Sequence[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"translation_mm": [_round(float(v) * 1e3) for v in pose[:3]]}
    euler = Rotation.from_quat([float(v) for v in pose[3:7]]).as_euler("xyz", degrees=True)
    rotation = [_round(float(v)) + 0.0 for v in euler]
    if any(abs(v) > 1e-9 for v in rotation):
        out["rotation_deg"] = rotation
    return out


def _posture_file(posture: Any) -> Any:
    if isinstance(posture, str):
        return posture
    return {"q_deg": [_round(math.degrees(float(q))) for q in posture]}


def same(a: Any, b: Any) -> bool:
    """Whether two parameter values are equal (numbers to rounding)."""
    if isinstance(a, float | int) and isinstance(b, float | int):
        return a == b or math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return bool(a == b)


def number(value: Any) -> str:
    """A number or flag as text: ``20``, ``inf``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:g}"
    return str(value)


def _unit_label(unit: Unit | None) -> str:
    if unit is None or not unit.suffix:
        return ""
    return " " + _UNIT_LABEL.get(unit.suffix, unit.suffix)


def plural(count: int, word: str, words: str | None = None) -> str:
    """``1 waypoint``, ``4 waypoints``; ``1 recovery``, ``2 recoveries`` (``words`` given)."""
    if count == 1:
        return f"{count} {word}"
    return f"{count} {words if words is not None else word + 's'}"


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


#: Longest list of numbers shown value by value (a 7-joint posture, a pose); longer ones, and
#: lists of lists or maps, are counted instead.
MAX_SHOWN: Final = 12


def _short(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        if len(value) > MAX_SHOWN or any(isinstance(v, Mapping | list) for v in value):
            return plural(len(value), "item")
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return number(value)


def summary(name: str, vtype: ValueType | None, unit: Unit | None, value: Any) -> str:
    """Compact text for one parameter (``p_e=20 mm``, ``[heavy, light]``, ``4 waypoints``)."""
    if isinstance(vtype, LimbList):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(vtype, LimbName):
        return f"[{value}]"
    if isinstance(vtype, Waypoints):
        return plural(len(value), "waypoint")
    if isinstance(vtype, Profile):
        total = sum(float(seg["duration_s"]) for seg in value)
        return f"{plural(len(value), 'segment')} over {total:g} s"
    if isinstance(vtype, Postures):
        if all(isinstance(p, str) for p in value):
            return " → ".join(value)
        return plural(len(value), "posture")
    if isinstance(vtype, Posture):
        return value if isinstance(value, str) else f"q={_short(value['q_deg'])} deg"
    if isinstance(vtype, PoseSpec):
        pose = value  # in file units: {translation_mm, rotation_deg}
        text = f"{name}={_short(pose['translation_mm'])} mm"
        return text + (f" {_short(pose['rotation_deg'])} deg" if "rotation_deg" in pose else "")
    if isinstance(vtype, Text):
        return f'"{clip(str(value), 32)}"'
    if isinstance(vtype, Flag):
        return name if value else f"{name}=false"
    return f"{name}={_short(value)}{_unit_label(unit)}"


def port_text(value: Any) -> str:
    """A port value as BT.CPP text: numbers plain, lists of scalars ``;``-joined, else JSON."""
    if isinstance(value, list) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    ):
        return ";".join(number(v) for v in value)
    if isinstance(value, Mapping | list):
        return json.dumps(_finite_json(value), separators=(",", ":"), ensure_ascii=False)
    return number(value)


def _finite_json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return number(value)
    return value
