"""Units of mission files: the unit is in the key (``p_e_mm``), the model holds SI.

A key ends in its unit (``_mm``, ``_deg``, ``_s``, ``_hz``, ``_mm_s``); the loader
multiplies by :attr:`Unit.to_si` and drops the suffix, so ``p_e_mm: 20`` becomes
``p_e = 0.02`` [m]. Keys without a unit (``norm``, ``factor``, ``times``) are plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scipy.spatial.transform import Rotation


@dataclass(frozen=True)
class Unit:
    """A unit a mission-file key can carry.

    Attributes:
        suffix: what the key ends with, without the underscore (``mm``); empty for none.
        name: the unit's name in messages (``millimetres``).
        to_si: the factor from the file's unit to SI.
    """

    suffix: str
    name: str
    to_si: float

    def key(self, name: str) -> str:
        """The mission-file key of the model name ``name`` (``p_e`` -> ``p_e_mm``)."""
        return f"{name}_{self.suffix}" if self.suffix else name


NONE: Final = Unit("", "", 1.0)
MM: Final = Unit("mm", "millimetres", 1e-3)
DEG: Final = Unit("deg", "degrees", math.pi / 180.0)
S: Final = Unit("s", "seconds", 1.0)
HZ: Final = Unit("hz", "hertz", 1.0)
MM_S: Final = Unit("mm_s", "millimetres per second", 1e-3)
MM_S2: Final = Unit("mm_s2", "millimetres per second squared", 1e-3)
DEG_S: Final = Unit("deg_s", "degrees per second", math.pi / 180.0)
MS: Final = Unit("ms", "milliseconds", 1e-3)
G: Final = Unit("g", "standard gravities (9.80665 m/s^2)", 9.80665)
N: Final = Unit("n", "newtons", 1.0)
N_PER_M: Final = Unit("n_per_m", "newtons per metre", 1.0)
NM_PER_RAD: Final = Unit("nm_per_rad", "newton metres per radian", 1.0)
NS_PER_M: Final = Unit("ns_per_m", "newton seconds per metre", 1.0)
NMS_PER_RAD: Final = Unit("nms_per_rad", "newton metre seconds per radian", 1.0)

#: Unit suffixes people may write, right or wrong, longest first: used to see that
#: ``p_e_cm`` means ``p_e_mm``.
_SUFFIXES: Final = tuple(
    sorted(
        (
            "mm", "cm", "m", "um", "km", "in", "ft",
            "deg", "rad", "degrees", "radians",
            "s", "ms", "us", "min", "h", "sec", "seconds",
            "hz", "khz",
            "mm_s", "cm_s", "m_s", "rad_s", "deg_s", "mm_per_s", "m_per_s",
            "mm_s2", "m_s2", "mm_per_s2", "m_per_s2",
            "g", "n", "n_per_m", "nm_per_rad", "ns_per_m", "nms_per_rad",
        ),
        key=len,
        reverse=True,
    )
)  # fmt: skip


def stem(key: str) -> str:
    """``key`` without a trailing unit suffix: ``p_e_cm`` -> ``p_e``, ``norm`` -> ``norm``."""
    lowered = key.lower()
    for suffix in _SUFFIXES:
        ending = "_" + suffix
        if lowered.endswith(ending) and len(lowered) > len(ending):
            return lowered[: -len(ending)]
    return lowered


#: Significant digits of a model value given back in a file's unit (0.08 m -> 80 mm, not
#: 80.00000000000001).
_FILE_DIGITS: Final = 12


def in_unit(value: Any, unit: Unit) -> Any:
    """A model (SI) value in ``unit``: numbers divided by its factor, in lists and maps too.

    The inverse of reading a key in that unit, for showing a loaded value as a file writes it.
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        if unit.to_si == 1.0:
            return value
        shown = value / unit.to_si
        return float(f"{shown:.{_FILE_DIGITS}g}") if math.isfinite(shown) else shown
    if isinstance(value, list | tuple):
        return [in_unit(v, unit) for v in value]
    if isinstance(value, Mapping):
        return {k: in_unit(v, unit) for k, v in value.items()}
    return value


def euler_from_quaternion(quaternion: Sequence[float]) -> tuple[float, float, float]:
    """The xyz-extrinsic Euler angles [rad] of a unit quaternion ``(qx, qy, qz, qw)``.

    The inverse of :func:`quaternion_from_euler` (up to the angles' own ambiguity).
    """
    x, y, z = (float(v) for v in Rotation.from_quat(quaternion).as_euler("xyz"))
    return (x, y, z)


def quaternion_from_euler(rotation: Sequence[float]) -> tuple[float, float, float, float]:
    """The unit quaternion ``(qx, qy, qz, qw)`` of xyz-extrinsic Euler angles.

    Args:
        rotation: rotations about the fixed x, y and z axes, applied in that order [rad].

    Returns:
        The quaternion, scalar last, with ``qw >= 0``.
    """
    x, y, z, w = (float(v) for v in Rotation.from_euler("xyz", rotation).as_quat())
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    return (x, y, z, w)
