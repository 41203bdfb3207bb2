"""Value types of a mission's physical world: nested maps of quantities, and rocks.

Seed 004's ``world`` holds, beside the modules, a ``terrain`` and the grippers' ``contact``
law; a ``mujoco`` robot may set its joint ``servo``. Their keys carry units like every other
key (``sigma_mm``, ``stiffness_n_per_m``); the model holds SI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import yaml

from limbtree.trees.mission.scalars import Choice, Integer, Quantity, Vector
from limbtree.trees.mission.source import INVALID, Item
from limbtree.trees.mission.units import MM, N_PER_M, NM_PER_RAD, NMS_PER_RAD, NONE, NS_PER_M, N
from limbtree.trees.mission.value_type import (
    ParamSpec,
    ValueContext,
    ValueType,
    list_items,
    read_fields,
)


@dataclass(frozen=True)
class Fields(ValueType):
    """A map of known keys (``specs``), each read by its own type.

    The model holds a read-only dict of model names (SI) to values, defaults filled in.

    Attributes:
        specs: the keys.
        what: what the map is, for messages.
    """

    specs: tuple[ParamSpec, ...]
    what: str

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"a map of {', '.join(spec.key for spec in self.specs)}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        if not isinstance(item.node, yaml.MappingNode):
            return self.wrong(ctx, item, key)
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        values = read_fields(ctx, item, entries, self.specs, what=f"{self.what} {key}", at=item.at)
        if INVALID in values.values():
            return INVALID
        return MappingProxyType(dict(values))


#: One rock of a terrain: where, how high, how wide.
ROCK_SPECS: Final = (
    ParamSpec("at", Vector(2, MM), None, "where its top is, x and y in the world"),
    ParamSpec("height", Quantity(MM, low=0), None, "its height above the terrain (0: none)"),
    ParamSpec("radius", Quantity(MM, low=0, low_open=True), 30.0, "its radius"),
)


@dataclass(frozen=True)
class Rocks(ValueType):
    """A list of rocks ``{at_mm: [x, y], height_mm, radius_mm}``.

    Rocks of height 0 are dropped (a mission parameter can then turn one off). The model
    holds a tuple of ``{"at_m", "height_m", "radius_m"}`` dicts.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of {at_mm: [x, y], height_mm, radius_mm}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        rocks: list[dict[str, Any]] = []
        ok = True
        for element in elements:
            read = Fields(ROCK_SPECS, "rock").read(ctx, element, key)
            if read is INVALID:
                ok = False
                continue
            if read["at"] is None or read["height"] is None:
                ctx.reader.error(element, f"{key}: a rock needs at_mm and height_mm")
                ok = False
                continue
            if read["height"] > 0.0:
                rocks.append(
                    {
                        "at_m": list(read["at"]),
                        "height_m": read["height"],
                        "radius_m": read["radius"],
                    }
                )
        return tuple(rocks) if ok else INVALID


#: The keys of ``world.terrain`` (seed 004: a fractal height field).
TERRAIN_SPECS: Final = (
    ParamSpec(
        "kind", Choice(("fractal",)), "fractal", "fractal: a seeded spectral fBm height field"
    ),
    ParamSpec("size", Quantity(MM, low=0, low_open=True), 3000.0, "the side of the square field"),
    ParamSpec("cell", Quantity(MM, low=0, low_open=True), 10.0, "its grid's cell"),
    ParamSpec("sigma", Quantity(MM, low=0), 30.0, "the heights' standard deviation (seed 004)"),
    ParamSpec(
        "hurst",
        Quantity(NONE, low=0, low_open=True, high=1, high_open=True),
        0.8,
        "the Hurst exponent (lower: rougher)",
    ),
    ParamSpec("seed", Integer(0), 0, "the terrain's seed"),
    ParamSpec("rocks", Rocks(), None, "rocks on it: [{at_mm: [x, y], height_mm, radius_mm}]"),
)

#: The keys of ``world.contact`` (seed 004's grippers: ClimbLab's spring and holding force).
CONTACT_SPECS: Final = (
    ParamSpec("stiffness", Quantity(N_PER_M, low=0, low_open=True), 4000.0, "spring K"),
    ParamSpec("damping", Quantity(NS_PER_M, low=0), 1.0, "damper D"),
    ParamSpec("grip_force", Quantity(N, low=0, low_open=True), 0.9, "pull-out force"),
)

#: The keys of a mujoco robot's ``servo`` (its joint_position PD).
SERVO_SPECS: Final = (
    ParamSpec("kp", Quantity(NM_PER_RAD, low=0), 400.0, "joint stiffness"),
    ParamSpec("kd", Quantity(NMS_PER_RAD, low=0), 40.0, "joint damping"),
)


def terrain_mapping(values: Any) -> dict[str, Any]:
    """A read ``terrain`` as the plant's JSON form (``TerrainSpec.from_mapping``)."""
    return {
        "size_m": values["size"],
        "cell_m": values["cell"],
        "sigma_m": values["sigma"],
        "hurst": values["hurst"],
        "seed": values["seed"],
        "rocks": [dict(rock) for rock in values["rocks"] or ()],
    }


def contact_mapping(values: Any) -> dict[str, float]:
    """A read ``contact`` as the plant's JSON form."""
    return {
        "stiffness_n_per_m": values["stiffness"],
        "damping_ns_per_m": values["damping"],
        "grip_force_n": values["grip_force"],
    }


def servo_mapping(values: Any) -> dict[str, float]:
    """A read ``servo`` as the plant's JSON form."""
    return {"kp_nm_per_rad": values["kp"], "kd_nms_per_rad": values["kd"]}


__all__: Sequence[str] = (
    "CONTACT_SPECS",
    "ROCK_SPECS",
    "SERVO_SPECS",
    "TERRAIN_SPECS",
    "Fields",
    "Rocks",
    "contact_mapping",
    "servo_mapping",
    "terrain_mapping",
)
