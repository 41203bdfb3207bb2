"""Value types of mission files: how one key's value is checked and converted to SI.

Each :class:`ValueType` reads a composed YAML value (an :class:`Item`) and returns the
model's value, or reports every problem it finds and returns :data:`INVALID`. A
:class:`ParamSpec` pairs a model name with a value type and a default; the key in the file
is the name plus the type's unit suffix (``p_e`` + millimetres -> ``p_e_mm``).
:func:`read_fields` reads a whole map of keys against a tuple of specs.

New node types add their own value types by subclassing :class:`ValueType`.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

import yaml

from limbtree.trees.mission.errors import Location
from limbtree.trees.mission.source import (
    BOOL,
    FLOAT,
    INT,
    INVALID,
    NULL,
    STR,
    Entry,
    Item,
    Reader,
    describe,
    did_you_mean,
    unknown,
)
from limbtree.trees.mission.units import (
    DEG,
    MM,
    MM_S,
    NONE,
    S,
    Unit,
    quaternion_from_euler,
    stem,
)

#: A plain scalar that reads as a number although YAML 1.1 calls it text (``1e-3``, ``inf``).
_NUMBER_TEXT: Final = re.compile(
    r"[-+]?(?:(?:\d[\d_]*)?\.?\d*(?:[eE][-+]?\d+)?|\.?inf(?:inity)?)\Z", re.IGNORECASE
)
#: Endpoints of limb agents the mission connects to.
_TCP: Final = re.compile(r"tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>\d+)\Z")
_IPC: Final = re.compile(r"ipc://\S+\Z")
#: The agent value of a limb the runner simulates itself.
SIM_AGENT: Final = "sim"


class _Required:
    """The type of :data:`REQUIRED`."""

    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a parameter that must be given.
REQUIRED: Final = _Required()


@dataclass(frozen=True)
class ValueContext:
    """What a value type needs to know besides the value.

    Attributes:
        reader: the reader collecting problems.
        declared_limbs: the limbs the mission declares.
        node_limbs: the limbs of the node being read (its ``limbs`` or ``limb``), once
            read; None before, or when they were invalid.
        base_dir: the directory of the file the value is in, for paths.
        limb_aliases: other names of declared limbs -> their names (a one-limb robot of
            ``robots`` is also called by the robot's name).
    """

    reader: Reader
    declared_limbs: tuple[str, ...]
    node_limbs: tuple[str, ...] | None = None
    base_dir: str = "."
    limb_aliases: Mapping[str, str] = field(default_factory=dict)


def _fmt(value: float) -> str:
    return f"{value:g}"


class ValueType(ABC):
    """How a key's value is checked and converted to the model's SI value."""

    #: Whether the value names the node's limbs (read first, so that per-limb values can
    #: be checked against them).
    defines_limbs: bool = False

    def key_unit(self) -> Unit:
        """The unit the key carries as its suffix (none by default)."""
        return NONE

    @abstractmethod
    def expected(self) -> str:
        """What the value must be, for messages and the reference (``a number > 0``)."""

    @abstractmethod
    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """Check and convert a value.

        Args:
            ctx: the reader and what the value is checked against.
            item: the value (parameters already substituted).
            key: the key the value is under, for messages.

        Returns:
            The model's value, or :data:`INVALID` after reporting.
        """

    def si(self, default: Any) -> Any:
        """The model value of a default written in the file's unit."""
        return default

    def wrong(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """Report that the value is not what :meth:`expected` says."""
        return ctx.reader.error(item, f"{key} must be {self.expected()}; got {describe(item.node)}")


@dataclass(frozen=True)
class ParamSpec:
    """One key of a node (or of a limb, a fault): its name, type, default and meaning.

    Attributes:
        name: the model's name, in SI (``p_e``).
        type: how the value is read.
        default: the default in the file's unit (``20`` for ``p_e_mm``), :data:`REQUIRED`
            when the key must be given, or None for an optional key with no default.
        doc: one line for the reference.
    """

    name: str
    type: ValueType
    default: Any = None
    doc: str = ""

    @property
    def key(self) -> str:
        """The key in mission files: the name with its unit suffix (``p_e_mm``)."""
        return self.type.key_unit().key(self.name)

    @property
    def required(self) -> bool:
        """Whether the key must be given."""
        return self.default is REQUIRED

    def default_value(self) -> Any:
        """The model value (SI) used when the key is not given."""
        return None if self.default is None else self.type.si(self.default)


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == NULL


def suggest_key(key: str, valid: Sequence[tuple[str, Unit]]) -> str | None:
    """The valid key ``key`` was probably meant to be, or None.

    A key with a valid name but the wrong unit (or no unit) gives the key with the right
    unit; otherwise the closest valid key, if one is close (difflib).
    """
    for candidate, _ in valid:
        if stem(candidate) == stem(key) and candidate != key:
            return candidate
    return did_you_mean(key, [k for k, _ in valid])


def unknown_key(key: str, valid: Sequence[tuple[str, Unit]]) -> str:
    """``unknown key p_e_cm; did you mean p_e_mm (millimetres)? valid keys: ...``."""
    listed = ", ".join(k for k, _ in valid)
    hint = suggest_key(key, valid)
    if hint is None:
        return f"unknown key {key}; valid keys: {listed}"
    unit = dict(valid)[hint]
    if unit.name:
        hint = f"{hint} ({unit.name})"
    return f"unknown key {key}; did you mean {hint}? valid keys: {listed}"


def read_fields(
    ctx: ValueContext,
    item: Item,
    entries: Sequence[Entry],
    specs: Sequence[ParamSpec],
    *,
    what: str,
    at: Location,
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Read a map of keys against specs: unknown keys, missing keys, defaults, values.

    Keys whose type names the limbs (``limbs``, ``limb``) are read first; the others are
    then checked against those limbs. A required key that is missing because it was
    misspelt is reported once, as the misspelt key.

    Args:
        ctx: the reader and what values are checked against.
        item: the map, for parameter scope and notes.
        entries: the map's entries.
        specs: the valid keys.
        what: the map's name in messages ("sync_move", "limb left").
        at: where to report a missing key.
        extra: other keys the caller reads itself (``name``, ``children``): not unknown.

    Returns:
        Model name -> value for every spec (defaults filled in; :data:`INVALID` where a
        problem was reported).
    """
    reader = ctx.reader
    by_key = {spec.key: spec for spec in specs}
    valid = [(spec.key, spec.type.key_unit()) for spec in specs] + [(k, NONE) for k in extra]
    given: dict[str, Item | None] = {}
    hinted: set[str] = set()
    for entry in entries:
        if entry.key in extra:
            continue
        spec = by_key.get(entry.key)
        if spec is None:
            reader.report(entry.at, unknown_key(entry.key, valid), item.note)
            hinted.add(suggest_key(entry.key, valid) or "")
            continue
        given[spec.name] = reader.child(item, entry.node)
    values: dict[str, Any] = {}
    for spec in sorted(specs, key=lambda s: not s.type.defines_limbs):
        if spec.name in given:
            child = given[spec.name]
            if child is None:
                values[spec.name] = INVALID
                continue
            if not _is_null(child.node):
                value = spec.type.read(ctx, child, spec.key)
                values[spec.name] = value
                if spec.type.defines_limbs:
                    limbs = (value,) if isinstance(value, str) else value
                    ctx = replace(ctx, node_limbs=limbs or None)
                continue
        if spec.required and spec.key in hinted:
            values[spec.name] = INVALID  # already reported as a misspelt key
        elif spec.required:
            values[spec.name] = reader.report(at, f"{what} needs {spec.key}", item.note)
        else:
            values[spec.name] = spec.default_value()
    return {spec.name: values[spec.name] for spec in specs}


# Scalars ---------------------------------------------------------------------------------


def scalar_number(reader: Reader, item: Item) -> float | None:
    """The value as a float, if it is a number (booleans are not), else None.

    YAML's own numbers count (``20``, ``2.5``, ``.inf``, ``0x10``), and so do plain
    (unquoted) words that read as numbers although YAML 1.1 calls them text (``1e-3``,
    ``inf``). Quoted text never does.
    """
    node = item.node
    if not isinstance(node, yaml.ScalarNode):
        return None
    if node.tag in (INT, FLOAT):
        value = reader.plain(item)
        return None if value is INVALID else float(value)
    text = str(node.value)
    if node.tag != STR or node.style is not None or not _NUMBER_TEXT.match(text):
        return None
    if not any(c.isdigit() or c in "iI" for c in text):
        return None
    try:
        return float(text.replace("_", ""))
    except ValueError:
        return None
    text = str(node.value)
    try:
        if node.tag == INT:
            return float(int(text.replace("_", ""), 0))
        if node.tag in (FLOAT, STR) and (node.tag == FLOAT or node.style is None):
            if not _NUMBER_TEXT.match(text) or not any(c.isdigit() or c in "iI" for c in text):
                return None
            cleaned = text.replace("_", "").lower().replace(".inf", "inf").replace(".nan", "nan")
            return float(cleaned)
    except ValueError:
        return None
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
    """A whole number of at least ``minimum``; with ``forever``, also the word ``forever``.

    The model holds ``forever`` as None.
    """

    minimum: int = 1
    forever: bool = False

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        text = f"a whole number >= {self.minimum}"
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
        if value < self.minimum:
            return ctx.reader.error(item, f"{key} must be >= {self.minimum}; got {value}")
        return value

    def si(self, default: Any) -> Any:
        """``forever`` -> None."""
        return None if default == "forever" else default


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
    """

    unit: Unit = NONE
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False
    allow_inf: bool = False

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
            return ctx.reader.error(item, f"{key} must be {self.bounds()}; got {_fmt(value)}")
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


# Lists -----------------------------------------------------------------------------------


def _list(ctx: ValueContext, item: Item, key: str, expected: str) -> list[Item] | None:
    """The elements of a list value as items, or None (reported) when it is not a list."""
    if not isinstance(item.node, yaml.SequenceNode):
        ctx.reader.error(item, f"{key} must be {expected}; got {describe(item.node)}")
        return None
    children = [ctx.reader.child(item, node) for node in item.node.value]
    if any(child is None for child in children):
        return None
    return [child for child in children if child is not None]


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
        elements = _list(ctx, item, key, self.expected())
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
        elements = _list(ctx, item, key, self.expected())
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
        elements = _list(ctx, item, key, self.expected())
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
        elements = _list(ctx, item, key, self.expected())
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


# Limbs -----------------------------------------------------------------------------------


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
        elements = _list(ctx, item, key, self.expected())
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


def _check_limb_keys(
    ctx: ValueContext, item: Item, entries: Sequence[Entry], key: str
) -> tuple[list[Entry], bool]:
    """The entries of a per-limb map whose keys are the node's limbs, and whether all are.

    Reports keys that are not the node's limbs, and the node's limbs the map leaves out.
    """
    limbs = ctx.node_limbs
    good: list[Entry] = []
    ok = True
    for entry in entries:
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
        missing = [limb for limb in limbs if limb not in {e.key for e in entries}]
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
        good, ok = _check_limb_keys(ctx, item, entries, key)
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


# Poses -----------------------------------------------------------------------------------

_TRANSLATION: Final = ParamSpec("translation", Vector(3, MM), (0.0, 0.0, 0.0))
_ROTATION: Final = ParamSpec("rotation", Vector(3, DEG), (0.0, 0.0, 0.0))


@dataclass(frozen=True)
class PoseSpec(ValueType):
    """``{translation_mm: [x, y, z], rotation_deg: [rx, ry, rz]}``, both optional.

    The rotation is xyz-extrinsic Euler angles (about the fixed x, then y, then z axis).
    The model holds ``(x, y, z, qx, qy, qz, qw)`` [m], quaternion scalar last.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a pose {translation_mm: [x, y, z], rotation_deg: [rx, ry, rz]}"

    @staticmethod
    def is_pose(entries: Sequence[Entry]) -> bool:
        """Whether a map's keys make it a pose rather than a map limb -> pose."""
        return not entries or any(
            e.key.startswith(("translation", "rotation", "position", "orientation"))
            for e in entries
        )

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        entries = ctx.reader.entries(item, f"{key} (a pose)")
        if entries is None:
            return INVALID
        fields = read_fields(
            ctx, item, entries, (_TRANSLATION, _ROTATION), what=f"{key} (a pose)", at=item.at
        )
        if INVALID in fields.values():
            return INVALID
        x, y, z = fields["translation"]
        return (float(x), float(y), float(z), *quaternion_from_euler(fields["rotation"]))


@dataclass(frozen=True)
class Waypoints(ValueType):
    """A non-empty list of waypoints, each a pose for every limb or a map limb -> pose.

    The model holds a tuple of read-only maps limb -> ``(x, y, z, qx, qy, qz, qw)``.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of waypoints (a pose, or a map limb -> pose)"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = _list(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one waypoint")
        waypoints: list[Any] = []
        for number, element in enumerate(elements, start=1):
            waypoints.append(self._waypoint(ctx, element, f"{key} {number}"))
        if INVALID in waypoints:
            return INVALID
        return tuple(waypoints)

    def _waypoint(self, ctx: ValueContext, item: Item, what: str) -> Any:
        entries = ctx.reader.entries(item, what)
        if entries is None:
            return INVALID
        if PoseSpec.is_pose(entries):
            pose = PoseSpec().read(ctx, item, what)
            if pose is INVALID:
                return INVALID
            return MappingProxyType({limb: pose for limb in ctx.node_limbs or ()})
        good, ok = _check_limb_keys(ctx, item, entries, what)
        poses: dict[str, Any] = {}
        for entry in good:
            child = ctx.reader.child(item, entry.node)
            poses[entry.key] = (
                INVALID if child is None else PoseSpec().read(ctx, child, f"{what}, {entry.key}")
            )
        if not ok or INVALID in poses.values():
            return INVALID
        return MappingProxyType({limb: poses[limb] for limb in ctx.node_limbs or tuple(poses)})


_SEGMENT: Final = (
    ParamSpec("duration", Quantity(S, low=0, low_open=True), REQUIRED),
    ParamSpec("velocity", Vector(3, MM_S), REQUIRED),
)


@dataclass(frozen=True)
class Profile(ValueType):
    """A non-empty list of ``{duration_s, velocity_mm_s: [vx, vy, vz]}`` segments.

    The model holds read-only maps ``{"duration": s, "velocity": (vx, vy, vz) [m/s]}``.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of {duration_s, velocity_mm_s: [vx, vy, vz]}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = _list(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one segment")
        segments: list[Any] = []
        for number, element in enumerate(elements, start=1):
            what = f"{key} segment {number}"
            entries = ctx.reader.entries(element, what)
            if entries is None:
                segments.append(INVALID)
                continue
            fields = read_fields(ctx, element, entries, _SEGMENT, what=what, at=element.at)
            ok = INVALID not in fields.values()
            segments.append(MappingProxyType(fields) if ok else INVALID)
        return INVALID if INVALID in segments else tuple(segments)


@dataclass(frozen=True)
class _Joints(ValueType):
    """``q_deg``: a non-empty list of finite numbers [deg]."""

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return DEG

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of joint angles in degrees"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = _list(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must list at least one joint angle")
        return Vector(len(elements), DEG).read(ctx, item, key)


_Q: Final = ParamSpec("q", _Joints(), REQUIRED)


@dataclass(frozen=True)
class Posture(ValueType):
    """A named posture of the robot (checked when the tree is built) or ``{q_deg: [...]}``.

    The model holds the name, or the joint values as a tuple [rad].
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a posture name or {q_deg: [q1, q2, ...]}"

    @staticmethod
    def is_joints(entries: Sequence[Entry]) -> bool:
        """Whether a map is ``{q_deg: [...]}`` rather than a map limb -> posture."""
        return any(e.key.startswith("q") and stem(e.key) == "q" for e in entries)

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if isinstance(node, yaml.ScalarNode):
            return Text().read(ctx, item, key)
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        fields = read_fields(ctx, item, entries, (_Q,), what=key, at=item.at)
        return fields["q"]


@dataclass(frozen=True)
class Postures(ValueType):
    """A non-empty list of postures; each for every limb, or a map limb -> posture.

    The model holds a tuple of read-only maps limb -> posture (name, or joints [rad]).
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of postures (a posture, or a map limb -> posture)"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = _list(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one posture")
        result: list[Any] = []
        for number, element in enumerate(elements, start=1):
            result.append(self._posture(ctx, element, f"{key} {number}"))
        return INVALID if INVALID in result else tuple(result)

    def _posture(self, ctx: ValueContext, item: Item, what: str) -> Any:
        if isinstance(item.node, yaml.MappingNode):
            entries = ctx.reader.entries(item, what)
            if entries is None:
                return INVALID
            if not Posture.is_joints(entries):
                good, ok = _check_limb_keys(ctx, item, entries, what)
                postures: dict[str, Any] = {}
                for entry in good:
                    child = ctx.reader.child(item, entry.node)
                    postures[entry.key] = (
                        INVALID if child is None else Posture().read(ctx, child, what)
                    )
                if not ok or INVALID in postures.values():
                    return INVALID
                order = ctx.node_limbs or tuple(postures)
                return MappingProxyType({limb: postures[limb] for limb in order})
        posture = Posture().read(ctx, item, what)
        if posture is INVALID:
            return INVALID
        return MappingProxyType({limb: posture for limb in ctx.node_limbs or ()})


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
            elements = _list(ctx, item, key, self.expected())
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
                value = INVALID if child is None else weight.read(ctx, child, key)
                ok = ok and value is not INVALID
                weights[entry.key] = value
        else:
            return self.wrong(ctx, item, key)
        return MappingProxyType(weights) if ok else INVALID
