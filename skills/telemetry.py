"""What a skill tells the tick stream about one step: typed, immutable, plain on the wire.

Every skill core's step returns, beside its command, a :class:`SkillTelemetry` subclass
(one per skill: the synchronized move's mode, segment, clamp t and distance; alignment's
Δd, Δθ and clamp radius; ...). The behaviour hands it to the tick stream unchanged; the
recorder, the viewers and the report read it through :meth:`SkillTelemetry.as_map`, so no
code passes a skill's internals around in an untyped dictionary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, ClassVar


def _plain(value: Any) -> Any:
    """``value`` as msgpack/JSON-friendly data: enums by value, tuples and arrays as lists."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


@dataclass(frozen=True)
class SkillTelemetry:
    """The base of every skill's per-tick figures.

    Subclasses are frozen dataclasses whose fields carry units in their names or
    docstrings (``distance``: metric distance, 1 = the hypersphere's radius; ``dd_mm``:
    millimetres). ``skill`` names the kind of figures (``sync_move``, ``align``, ...), so a
    reader of a record knows which fields to expect.
    """

    skill: ClassVar[str] = "skill"

    def as_map(self) -> dict[str, Any]:
        """The figures as a plain map (field name -> value), plus ``"skill"``."""
        out: dict[str, Any] = {"skill": self.skill}
        for f in fields(self):
            out[f.name] = _plain(getattr(self, f.name))
        return out


@dataclass(frozen=True)
class Figures(SkillTelemetry):
    """Untyped figures, for a user's node type that has no telemetry class of its own.

    Attributes:
        values: name -> plain value.
    """

    skill: ClassVar[str] = "figures"
    values: tuple[tuple[str, Any], ...] = ()

    def as_map(self) -> dict[str, Any]:
        """The figures as a plain map, plus ``"skill"``."""
        return {"skill": self.skill, **{k: _plain(v) for k, v in self.values}}


__all__ = ["Figures", "SkillTelemetry"]
