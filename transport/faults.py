"""The one definition of the faults of seed 000 Table II: kinds, parameters, limits, schedules.

The wire schema (``fault`` requests), the fault decorator that wraps a plant
(:class:`limbtree.robots.faulty.FaultyPlant`), the simulator options and the mission checker
all read these; none of them repeats a kind, a parameter name or a limit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final

from limbtree.transport.errors import TransportError

__all__ = [
    "DEFAULT_SLOWDOWN_FACTOR",
    "ENDING_FAULTS",
    "FAULT_PARAMS",
    "SLOWDOWN_FACTOR_HIGH",
    "SLOWDOWN_FACTOR_LOW",
    "FaultKind",
    "FaultScheduleError",
    "ScheduledFault",
]


class FaultKind(StrEnum):
    """The ``fault`` kinds (seed 000 Table II) and the three that end faults.

    Only :attr:`REASSEMBLE` means something to an agent itself: it is the one request
    (besides ``shutdown``) that a disassembled limb's agent still serves.
    """

    BLOCKAGE = "blockage"
    """``joints`` (indices or names; default all) stop moving. Health ``BLOCKED``."""
    SLOWDOWN = "slowdown"
    """``factor`` in (0, 1) scales the speed of ``joints`` (default all). ``SLOWED``."""
    DISASSEMBLY = "disassembly"
    """The limb detaches: it stops, its state freezes, its agent goes silent about it."""
    REASSEMBLE = "reassemble"
    """Ends ``disassembly``."""
    POWER_OFF = "power_off"
    """The state stops updating (``POWER_OFF``), the joints fall towards ``slumped``."""
    POWER_ON = "power_on"
    """Ends ``power_off``; the limb holds where it fell."""
    IK_ERROR = "ik_error"
    """Every ``ee_pose`` command fails with ``ik_failed``, or only the next ``count``."""
    CLEAR = "clear"
    """Ends every fault."""


#: The kinds that only end others; they take no parameters.
ENDING_FAULTS: Final = (FaultKind.REASSEMBLE, FaultKind.POWER_ON, FaultKind.CLEAR)

#: The parameters each fault kind accepts (``duration_s`` [s] > 0: how long it lasts).
FAULT_PARAMS: Final[Mapping[FaultKind, tuple[str, ...]]] = MappingProxyType(
    {
        FaultKind.BLOCKAGE: ("joints", "duration_s"),
        FaultKind.SLOWDOWN: ("factor", "joints", "duration_s"),
        FaultKind.DISASSEMBLY: ("duration_s",),
        FaultKind.REASSEMBLE: (),
        FaultKind.POWER_OFF: ("duration_s",),
        FaultKind.POWER_ON: (),
        FaultKind.IK_ERROR: ("count", "duration_s"),
        FaultKind.CLEAR: (),
    }
)

#: A ``slowdown`` factor must lie strictly above this [1] ...
SLOWDOWN_FACTOR_LOW: Final = 0.0
#: ... and strictly below this [1] (a factor of 1 would be no slowdown at all).
SLOWDOWN_FACTOR_HIGH: Final = 1.0
#: The speed factor of a ``slowdown`` without ``factor`` [1].
DEFAULT_SLOWDOWN_FACTOR: Final = 0.5


class FaultScheduleError(TransportError, ValueError):
    """A scheduled fault was given a value it cannot use.

    Attributes:
        option: the offending field's name (``faults.at_s``, ``faults.kind``, ...).
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


@dataclass(frozen=True)
class ScheduledFault:
    """A fault that starts by itself at a plant time.

    Its kind and parameters are checked when a plant's fault decorator takes it (the
    decorator knows the limb's joints); here only the time and the kind's name.

    Attributes:
        at_s: when it starts [s], plant time.
        kind: a :class:`FaultKind` value.
        params: its parameters (:data:`FAULT_PARAMS`), ``duration_s`` [s] included.
        limb: the plant's limb it hits; None for every limb of the plant.

    Raises:
        FaultScheduleError: for a time that is not a finite number.
    """

    at_s: float
    kind: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    limb: str | None = None

    def __post_init__(self) -> None:
        at_s = self.at_s
        if isinstance(at_s, bool) or not isinstance(at_s, int | float) or not math.isfinite(at_s):
            raise FaultScheduleError("faults.at_s", f"must be a finite time [s], got {at_s!r}")
        object.__setattr__(self, "at_s", float(at_s))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
