"""The alignment controllers' parameters in mission files: ``align``'s ``v1`` and ``v2`` maps.

Every parameter of seed 002's two controllers (``limbtree.skills.AlignV1Params``,
``AlignV2Params``) can be set from a mission, in the file's units (``s_max_mm: 20``,
``t_max_mm_s: 30``, ``alpha_j: 100``), so an alignment is tuned to a limb and its capture
without Python. The five the node has its own keys for (``dd_mm``, ``dtheta_deg``,
``offset``, ``stale_timeout_s``, ``stall_timeout_s``) are not repeated here. A map is read by
:class:`ControllerParams`; :func:`check_controller` then builds the dataclass, which checks
ranges and orders (``s_min <= s_max``) and names the parameter at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from limbtree.skills.align_v1 import AlignV1Params
from limbtree.skills.align_v2 import AlignV2Params
from limbtree.skills.alignment import AlignmentParameterError, AlignParams
from limbtree.trees.mission.source import INVALID, Item
from limbtree.trees.mission.units import DEG, DEG_S, MM, MM_S, NONE, S, Unit
from limbtree.trees.mission.values import (
    Integer,
    ParamSpec,
    Quantity,
    ValueContext,
    ValueType,
    file_fields,
    read_fields,
)


def _positive(unit: Unit) -> Quantity:
    return Quantity(unit, low=0.0, low_open=True)


def _at_least_0(unit: Unit) -> Quantity:
    return Quantity(unit, low=0.0)


#: (mission name, how it is read, dataclass field, meaning) of the parameters of both versions.
_COMMON: Final = (
    ("confirm", _at_least_0(S), "confirm_s", "how long both errors stay within"),
    ("N", Integer(1), "N", "error buffer length of eq. 2 [samples]"),
    ("delta_jump", _positive(MM), "delta_jump", "jump check, position"),
    ("delta_jump_rot", _positive(DEG), "delta_jump_rot", "jump check, rotation"),
    ("divergence_factor", Quantity(NONE, low=1.0), "divergence_factor", "growth that diverges"),
    ("divergence_min", _positive(MM), "divergence_min_m", "smallest diverging Δd"),
    ("divergence_min_rot", _positive(DEG), "divergence_min_rad", "smallest diverging Δθ"),
    (
        "divergence_max",
        Quantity(MM, low=0.0, low_open=True, allow_inf=True),
        "divergence_max_m",
        "a Δd that always diverges",
    ),
    ("divergence_time", _at_least_0(S), "divergence_time_s", "how long it must diverge"),
    ("stall_progress", _positive(MM), "stall_progress_m", "a Δd this much closer: no stall"),
    ("stall_progress_rot", _positive(DEG), "stall_progress_rad", "the same for Δθ"),
)

_V1: Final = (
    ("s_min", _positive(MM), "s_min", "smallest step (eq. 3)"),
    ("s_max", _positive(MM), "s_max", "largest step (eq. 3)"),
    ("r_low", _at_least_0(MM), "r_low", "below this Δd, s_min (eq. 3)"),
    ("r_high", _positive(MM), "r_high", "above this Δd, s_max (eq. 3)"),
    ("theta_min", _at_least_0(DEG), "theta_min", "smallest rotation step"),
    ("theta_max", _positive(DEG), "theta_max", "largest rotation step"),
    ("settle_window", _positive(S), "settle_window_s", "stillness window after a step"),
    ("settle_tol", _at_least_0(MM), "settle_tol_m", "stillness tolerance, position"),
    ("settle_tol_rot", _at_least_0(DEG), "settle_tol_rad", "stillness tolerance, rotation"),
    ("settle_timeout", _positive(S), "settle_timeout_s", "settled anyway after this"),
)

_V2: Final = (
    ("t_min", _positive(MM_S), "t_min", "smallest translational radius (eq. 5)"),
    ("t_max", _positive(MM_S), "t_max", "largest translational radius (eq. 5)"),
    ("D_near", _at_least_0(MM), "D_near", "below this Δd, t_min"),
    ("D_far", _positive(MM), "D_far", "above this Δd, t_max"),
    ("r_min", _positive(DEG_S), "r_min", "smallest rotational radius (eq. 5)"),
    ("r_max", _positive(DEG_S), "r_max", "largest rotational radius (eq. 5)"),
    ("A_near", _at_least_0(DEG), "A_near", "below this Δθ, r_min"),
    ("A_far", _positive(DEG), "A_far", "above this Δθ, r_max"),
    ("alpha_j", _at_least_0(NONE), "alpha_j", "jitter weight of f_j (eq. 7) [1/m]"),
    ("alpha_k", _at_least_0(NONE), "alpha_k", "error-change weight of f_k [1/m]"),
    ("tau_jitter", _positive(MM), "tau_jitter", "off-axis threshold of f_s (eq. 7)"),
    ("epsilon", Quantity(NONE, low=0.0, low_open=True, high=1.0), "epsilon", "floor of f_s"),
    ("tau_lin", _at_least_0(S), "tau_lin", "linear low-pass (eq. 12)"),
    ("tau_rot", _at_least_0(S), "tau_rot", "angular low-pass (eq. 12)"),
    ("history", _positive(S), "history_s", "window of σ_jitter and RMS_perp"),
)


def _pairs(
    *tables: tuple[tuple[str, ValueType, str, str], ...],
) -> tuple[tuple[ParamSpec, str], ...]:
    return tuple(
        (ParamSpec(name, kind, None, doc), field)
        for table in tables
        for name, kind, field, doc in table
    )


#: Per version: the parameters' specs and the dataclass that checks them.
VERSIONS: Final[Mapping[int, tuple[tuple[tuple[ParamSpec, str], ...], type[AlignParams]]]] = (
    MappingProxyType(
        {1: (_pairs(_COMMON, _V1), AlignV1Params), 2: (_pairs(_COMMON, _V2), AlignV2Params)}
    )
)


@dataclass(frozen=True)
class ControllerParams(ValueType):
    """A map of one version's controller parameters, in the file's units.

    The model holds a read-only map dataclass field -> SI value, of the keys given only.

    Attributes:
        version: 1 or 2.
    """

    version: int

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"a map of Version {self.version}'s parameters, e.g. {_EXAMPLES[self.version]}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        what = f"{key} (Version {self.version}'s parameters)"
        entries = ctx.reader.entries(item, what)
        if entries is None:
            return INVALID
        pairs, _ = VERSIONS[self.version]
        specs = [spec for spec, _ in pairs]
        values = read_fields(ctx, item, entries, specs, what=what, at=item.at)
        if INVALID in values.values():
            return INVALID
        fields = {spec.name: field for spec, field in pairs}
        return MappingProxyType(
            {fields[name]: value for name, value in values.items() if value is not None}
        )

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: the mission keys of the fields given."""
        pairs, _ = VERSIONS[self.version]
        names = {field: spec.name for spec, field in pairs}
        return file_fields(
            [spec for spec, _ in pairs], {names.get(k, k): v for k, v in value.items()}
        )


_EXAMPLES: Final = {1: "{s_max_mm: 20, settle_window_s: 1}", 2: "{t_max_mm_s: 30, alpha_j: 100}"}


def mission_key(version: int, field: str) -> str:
    """The mission key of a dataclass field (``s_max`` -> ``s_max_mm``)."""
    for spec, name in VERSIONS[version][0]:
        if name == field:
            return spec.key
    return field


def check_controller(version: int, values: Mapping[str, Any]) -> str | None:
    """Build version ``version``'s parameters from ``values``; the problem, or None.

    Args:
        version: 1 or 2.
        values: dataclass field -> SI value, as :class:`ControllerParams` reads them.

    Returns:
        None when they are valid together; else what is wrong, naming the mission key.
    """
    _, params = VERSIONS[version]
    try:
        params(**values)
    except AlignmentParameterError as exc:
        key = mission_key(version, exc.parameter)
        return f"{key}: {exc} (the check is in SI units: m, rad, s)"
    return None
