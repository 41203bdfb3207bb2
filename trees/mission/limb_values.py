"""Value types about limbs: a node's limb, its limb list, and a quantity per limb."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import yaml

from limbtree.trees.mission.scalars import Quantity, Text
from limbtree.trees.mission.source import INVALID, STR, Entry, Item, unknown
from limbtree.trees.mission.units import Unit
from limbtree.trees.mission.value_type import ValueContext, ValueType, list_items


@dataclass(frozen=True)
class LimbName(ValueType):
    """One limb the mission declares; it is the node's limb."""

    defines_limbs = True

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "the name of a declared limb"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        name = Text().read(ctx, item, key)
        if name is INVALID:
            return INVALID
        name = ctx.limb_aliases.get(name, name)
        if name not in ctx.declared_limbs:
            return ctx.reader.error(
                item, f"{key}: " + unknown("limb", name, ctx.declared_limbs, "declared limbs")
            )
        return name


@dataclass(frozen=True)
class LimbList(ValueType):
    """A non-empty list of distinct declared limbs; they are the node's limbs."""

    defines_limbs = True

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of declared limbs"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if isinstance(node, yaml.ScalarNode) and node.tag == STR and node.value:
            # one limb written alone: say how to list it
            return ctx.reader.error(
                item, f"{key} must be {self.expected()}; got text {node.value!r} (a list of one "
                f"limb is [{node.value}])",
            )  # fmt: skip
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must list at least one limb")
        names: list[str] = []
        ok = True
        for element in elements:
            name = LimbName().read(ctx, element, key)
            if name is INVALID:
                ok = False
            elif name in names:
                ctx.reader.error(element, f"{key}: limb {name} is listed twice")
                ok = False
            else:
                names.append(name)
        return tuple(names) if ok else INVALID


def check_limb_keys(
    ctx: ValueContext, item: Item, entries: Sequence[Entry], key: str
) -> tuple[list[Entry], bool]:
    """The entries of a per-limb map whose keys are the node's limbs, and whether all are.

    Reports keys that are not the node's limbs, and the node's limbs the map leaves out. A
    one-limb robot's name stands for its limb, as in ``limbs`` (the entries returned carry
    the limb's full name); a limb given under both names is reported.
    """
    limbs = ctx.node_limbs
    good: list[Entry] = []
    ok = True
    given: dict[str, str] = {}
    for entry in entries:
        name = ctx.limb_aliases.get(entry.key, entry.key)
        if name in given:
            ctx.reader.report(
                entry.at, f"{key}: limb {name} is given twice (as {given[name]} and {entry.key})",
                item.note,
            )  # fmt: skip
            ok = False
            continue
        given[name] = entry.key
        entry = replace(entry, key=name)
        if limbs is not None and entry.key not in limbs:
            if entry.key in ctx.declared_limbs:
                message = f"limb {entry.key} is not one of this node's limbs ({', '.join(limbs)})"
            else:
                message = unknown("limb", entry.key, limbs, "this node's limbs")
            ctx.reader.report(entry.at, f"{key}: {message}", item.note)
            ok = False
        else:
            good.append(entry)
    if limbs is not None:
        missing = [limb for limb in limbs if limb not in given]
        if missing:
            ctx.reader.error(
                item,
                f"{key} gives no value for limb {', '.join(missing)} "
                "(give every limb of the node, or one value for all)",
            )
            ok = False
    return good, ok


@dataclass(frozen=True)
class PerLimb(ValueType):
    """A :class:`Quantity` for every limb, or a map limb -> quantity.

    The model holds a float, or a read-only map limb -> float in the node's limb order.
    """

    quantity: Quantity

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return self.quantity.unit

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"{self.quantity.expected()}, or a map limb -> such a number"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        if not isinstance(item.node, yaml.MappingNode):
            return self.quantity.read(ctx, item, key)
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        good, ok = check_limb_keys(ctx, item, entries, key)
        values: dict[str, Any] = {}
        for entry in good:
            child = ctx.reader.child(item, entry.node)
            values[entry.key] = INVALID if child is None else self.quantity.read(ctx, child, key)
        if not ok or INVALID in values.values():
            return INVALID
        order = ctx.node_limbs or tuple(values)
        return MappingProxyType({limb: values[limb] for limb in order})

    def si(self, default: Any) -> Any:
        """See :meth:`ValueType.si`."""
        return self.quantity.si(default)

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: one number, or a map limb -> number."""
        if isinstance(value, Mapping):
            return {limb: self.quantity.file_value(v) for limb, v in value.items()}
        return self.quantity.file_value(value)


__all__ = ["LimbList", "LimbName", "PerLimb", "check_limb_keys"]
