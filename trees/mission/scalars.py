"""Value types of numbers, words and lists of them.

Flags, integers, quantities in units, choices, text, agent endpoints, vectors, ranges,
joint indices, names and weights.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import yaml

from limbtree.trees.mission.source import (
    BOOL,
    FLOAT,
    INT,
    INVALID,
    STR,
    Item,
    Reader,
    describe,
    unknown,
)
from limbtree.trees.mission.units import NONE, Unit, in_unit
from limbtree.trees.mission.value_type import ValueContext, ValueType, list_items

#: A plain scalar that reads as a number although YAML 1.1 calls it text (``1e-3``, ``inf``).
_NUMBER_TEXT: Final = re.compile(
    r"[-+]?(?:(?:\d[\d_]*)?\.?\d*(?:[eE][-+]?\d+)?|\.?inf(?:inity)?)\Z", re.IGNORECASE
)
#: Endpoints of limb agents the mission connects to.
_TCP: Final = re.compile(r"tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>\d+)\Z")
_IPC: Final = re.compile(r"ipc://\S+\Z")
#: The agent value of a limb the runner simulates itself.
SIM_AGENT: Final = "sim"


def _fmt(value: float) -> str:
    return f"{value:g}"


def scalar_number(reader: Reader, item: Item) -> float | None:
    """The value as a float, if it is a number (booleans are not), else None.

    YAML's own numbers count (``20``, ``2.5``, ``.inf``; ``050``, ``1:30`` and ``0x10``
    were refused when the file was composed: ``limbtree.yaml11``), and so do plain
    (unquoted) words that read as numbers although YAML 1.1 calls them text (``1e-3``,
    ``inf``). Quoted text never does.
    """
    node = item.node
    if not isinstance(node, yaml.ScalarNode):
        return None
    if node.tag in (INT, FLOAT):
        value = reader.plain(item)
        return None if value is INVALID else float(value)
    if node.tag != STR or node.style is not None:
        return None
    return number_text(str(node.value))


def number_text(text: str) -> float | None:
    """``text`` as a number when a plain scalar of it reads as one (``1e-3``, ``inf``), else None.

    YAML 1.1 calls such words text; missions read them as numbers (:func:`scalar_number`).
    """
    if not _NUMBER_TEXT.match(text) or not any(c.isdigit() or c in "iI" for c in text):
        return None
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return None


@dataclass(frozen=True)
class Flag(ValueType):
    """``true`` or ``false``."""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "true or false"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        if isinstance(item.node, yaml.ScalarNode) and item.node.tag == BOOL:
            return bool(ctx.reader.plain(item))
        return self.wrong(ctx, item, key)


@dataclass(frozen=True)
class Integer(ValueType):
    """A whole number of at least ``minimum`` and, with ``maximum``, at most that.

    With ``forever``, also the word ``forever``, which the model holds as None.
    """

    minimum: int = 1
    forever: bool = False
    maximum: int | None = None

    def bounds(self) -> str:
        """The bounds as text: ``>= 1``, or ``in 1..10000`` with a maximum."""
        if self.maximum is None:
            return f">= {self.minimum}"
        return f"in {self.minimum}..{self.maximum}"

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        text = f"a whole number {self.bounds()}"
        return f"{text} or forever" if self.forever else text

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if not isinstance(node, yaml.ScalarNode):
            return self.wrong(ctx, item, key)
        if self.forever and node.tag == STR and node.value == "forever":
            return None
        if node.tag != INT:
            return self.wrong(ctx, item, key)
        value = int(ctx.reader.plain(item))
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            return ctx.reader.error(item, f"{key} must be {self.bounds()}; got {value}")
        return value

    def si(self, default: Any) -> Any:
        """``forever`` -> None."""
        return None if default == "forever" else default

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: None -> ``forever`` (where it may be)."""
        return "forever" if value is None and self.forever else value


@dataclass(frozen=True)
class Quantity(ValueType):
    """A number in ``unit``, within bounds; the model holds it in SI.

    Attributes:
        unit: the unit the key carries.
        low: the lower bound (in the file's unit), or None.
        low_open: whether ``low`` itself is excluded.
        high: the upper bound, or None.
        high_open: whether ``high`` itself is excluded.
        allow_inf: whether ``inf`` (``.inf``) is allowed.
        why: appended to the message of a value out of bounds: why they are the bounds
            and what to write instead (empty: nothing).
    """

    unit: Unit = NONE
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False
    allow_inf: bool = False
    why: str = ""

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return self.unit

    def bounds(self) -> str:
        """The bounds as text (``> 0``, ``in (0, 1]``), or empty."""
        if self.low is not None and self.high is not None:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            return f"in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_fmt(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_fmt(self.high)}"
        return ""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        text = "a number"
        if self.unit.name:
            text += f" in {self.unit.name}"
        if self.bounds():
            text += f" {self.bounds()}"
        return f"{text} or inf" if self.allow_inf else text

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        value = scalar_number(ctx.reader, item)
        if value is None or math.isnan(value):
            return self.wrong(ctx, item, key)
        if math.isinf(value):
            if value > 0 and self.allow_inf:
                return math.inf
            return ctx.reader.error(item, f"{key} must be {self.expected()}; got {_fmt(value)}")
        if not self.within(value):
            why = f": {self.why}" if self.why else ""
            return ctx.reader.error(item, f"{key} must be {self.bounds()}; got {_fmt(value)}{why}")
        return value * self.unit.to_si

    def within(self, value: float) -> bool:
        """Whether ``value`` (in the file's unit) is within the bounds."""
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (
            self.high is not None and (value > self.high or (self.high_open and value == self.high))
        )

    def si(self, default: Any) -> Any:
        """The default times the unit's factor (``inf`` stays ``inf``)."""
        return None if default is None else float(default) * self.unit.to_si

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value` (None is ``inf`` where ``inf`` is allowed)."""
        if value is None and self.allow_inf:
            return math.inf
        return in_unit(value, self.unit)


@dataclass(frozen=True)
class Choice(ValueType):
    """One word out of ``options``."""

    options: tuple[str, ...]

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "one of " + ", ".join(self.options)

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            return self.wrong(ctx, item, key)
        if node.value not in self.options:
            message = unknown("value", str(node.value), self.options)
            return ctx.reader.error(item, f"{key}: {message}")
        return str(node.value)


@dataclass(frozen=True)
class Text(ValueType):
    """Text, not empty."""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "text"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            return self.wrong(ctx, item, key)
        if not str(node.value).strip():
            return ctx.reader.error(item, f"{key} must not be empty")
        return str(node.value)


@dataclass(frozen=True)
class TextMap(ValueType):
    """A map of names to text (``latched: {arm.E1: tile0/si}``).

    The model holds a read-only dict in file order.

    Attributes:
        what: what the keys and values are, for messages (``interface -> MODULE/GRASP_POINT``).
    """

    what: str = "name -> text"

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"a map {self.what}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        if not isinstance(item.node, yaml.MappingNode):
            return self.wrong(ctx, item, key)
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        values: dict[str, str] = {}
        ok = True
        for entry in entries:
            child = ctx.reader.child(item, entry.node)
            value = None if child is None else Text().read(ctx, child, f"{key}.{entry.key}")
            if value is None or value is INVALID:
                ok = False
                continue
            values[entry.key] = value
        return MappingProxyType(values) if ok else INVALID


@dataclass(frozen=True)
class Agent(ValueType):
    """Where a limb's agent is: ``sim``, ``tcp://HOST:PORT`` or ``ipc://PATH``."""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "sim, tcp://HOST:PORT or ipc://PATH"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if not isinstance(node, yaml.ScalarNode) or node.tag != STR:
            return self.wrong(ctx, item, key)
        text = str(node.value)
        if text == SIM_AGENT or _IPC.match(text):
            return text
        match = _TCP.match(text)
        if match is None:
            return ctx.reader.error(item, f"{key} must be {self.expected()}; got {text!r}")
        if match.group("host") == "*":
            return ctx.reader.error(
                item, f"{key} {text!r}: * only binds; give the agent's host name or address"
            )
        port = int(match.group("port"))
        if not 1 <= port <= 65534:
            return ctx.reader.error(
                item,
                f"{key} {text!r}: the port must be in 1..65534 "
                "(the agent's state stream uses port + 1)",
            )
        return text


@dataclass(frozen=True)
class Vector(ValueType):
    """A list of exactly ``size`` finite numbers in ``unit``, as a tuple in SI."""

    size: int
    unit: Unit = NONE

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return self.unit

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        unit = f" in {self.unit.name}" if self.unit.name else ""
        return f"a list of {self.size} numbers{unit}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if len(elements) != self.size:
            return ctx.reader.error(
                item, f"{key} must be {self.expected()}; got {len(elements)} numbers"
            )
        values = []
        for element in elements:
            value = scalar_number(ctx.reader, element)
            if value is None or not math.isfinite(value):
                return ctx.reader.error(
                    element, f"{key} must be {self.expected()}; got {describe(element.node)}"
                )
            values.append(value * self.unit.to_si)
        return tuple(values)


@dataclass(frozen=True)
class Range(ValueType):
    """``[low, high]``: two numbers, each a :class:`Quantity`, with ``low <= high``."""

    quantity: Quantity

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return self.quantity.unit

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"[low, high], each {self.quantity.expected()}, low <= high"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if len(elements) != 2:
            return self.wrong(ctx, item, key)
        low, high = (self.quantity.read(ctx, e, key) for e in elements)
        if low is INVALID or high is INVALID:
            return INVALID
        if low > high:
            return ctx.reader.error(item, f"{key}: low must not exceed high")
        return (low, high)

    def si(self, default: Any) -> Any:
        """Both ends in SI."""
        return None if default is None else tuple(self.quantity.si(v) for v in default)


@dataclass(frozen=True)
class Indices(ValueType):
    """A list of distinct whole numbers >= 0 (joint indices, counted from 0)."""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of distinct joint indices (whole numbers from 0)"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if not elements:
            return INVALID if elements is None else self.wrong(ctx, item, key)
        values: list[int] = []
        for element in elements:
            node = element.node
            if not isinstance(node, yaml.ScalarNode) or node.tag != INT:
                return ctx.reader.error(
                    element, f"{key} must be {self.expected()}; got {describe(node)}"
                )
            value = int(ctx.reader.plain(element))
            if value < 0 or value in values:
                return ctx.reader.error(element, f"{key}: {value} is negative or repeated")
            values.append(value)
        return tuple(values)


@dataclass(frozen=True)
class Names(ValueType):
    """A non-empty list of distinct names."""

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of distinct names"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if not elements:
            return INVALID if elements is None else self.wrong(ctx, item, key)
        names: list[str] = []
        for element in elements:
            name = Text().read(ctx, element, key)
            if name is INVALID:
                return INVALID
            if name in names:
                return ctx.reader.error(element, f"{key}: {name} is listed twice")
            names.append(name)
        return tuple(names)


@dataclass(frozen=True)
class Weights(ValueType):
    """A map choice -> weight (> 0), or a list of choices (equal weights)."""

    options: tuple[str, ...]

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"a map kind -> weight, or a list of kinds ({', '.join(self.options)})"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        weights: dict[str, Any] = {}
        ok = True
        choice = Choice(self.options)
        if isinstance(item.node, yaml.SequenceNode):
            elements = list_items(ctx, item, key, self.expected())
            if not elements:
                return INVALID if elements is None else self.wrong(ctx, item, key)
            for element in elements:
                name = choice.read(ctx, element, key)
                ok = ok and name is not INVALID
                if name is not INVALID:
                    weights[name] = 1.0
        elif isinstance(item.node, yaml.MappingNode):
            weight = Quantity(low=0, low_open=True)
            entries = ctx.reader.entries(item, key) or []
            if not entries:
                return self.wrong(ctx, item, key)
            for entry in entries:
                if entry.key not in self.options:
                    message = unknown("value", entry.key, self.options)
                    ctx.reader.report(entry.at, f"{key}: {message}", item.note)
                    ok = False
                    continue
                child = ctx.reader.child(item, entry.node)
                value = (
                    INVALID
                    if child is None
                    else weight.read(ctx, child, f"{key}: {entry.key}'s weight")
                )
                ok = ok and value is not INVALID
                weights[entry.key] = value
        else:
            return self.wrong(ctx, item, key)
        return MappingProxyType(weights) if ok else INVALID


__all__ = [
    "SIM_AGENT",
    "Agent",
    "Choice",
    "Flag",
    "Indices",
    "Integer",
    "Names",
    "Quantity",
    "Range",
    "Text",
    "TextMap",
    "Vector",
    "Weights",
    "scalar_number",
]
