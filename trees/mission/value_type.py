"""How one key of a mission file is read: the value type's base, parameter specs, maps of keys.

Each :class:`ValueType` reads a composed YAML value (an :class:`Item`) and returns the
model's value, or reports every problem it finds and returns :data:`INVALID`. A
:class:`ParamSpec` pairs a model name with a value type and a default; the key in the file
is the name plus the type's unit suffix (``p_e`` + millimetres -> ``p_e_mm``).
:func:`read_fields` reads a whole map of keys against a tuple of specs. The value types
themselves live in :mod:`~limbtree.trees.mission.scalars` (numbers, words, lists of them),
:mod:`~limbtree.trees.mission.limb_values` (limbs, per-limb values) and
:mod:`~limbtree.trees.mission.motion_values` (poses, waypoints, profiles, postures).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import yaml

from limbtree.trees.mission.errors import Location
from limbtree.trees.mission.source import (
    INVALID,
    NULL,
    Entry,
    Item,
    Reader,
    describe,
    did_you_mean,
)
from limbtree.trees.mission.units import NONE, Unit, in_unit, stem


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

    def file_value(self, value: Any) -> Any:
        """A model value (SI, as loaded or recorded) as a mission file writes it.

        For showing loaded parameters (the web debugger's node panel): by default numbers
        in the key's unit (:meth:`key_unit`). A record writes infinities as None; a type
        that allows ``inf`` gives None back as ``inf`` (the caller passes None only where
        the parameter cannot be none).
        """
        return in_unit(value, self.key_unit())

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


def file_fields(params: Sequence[ParamSpec], values: Mapping[str, Any]) -> dict[str, Any]:
    """Model fields (SI, by name) as a mission file writes them: ``p_e: 0.02`` -> ``p_e_mm: 20``.

    Each key gets its unit and each value :meth:`ValueType.file_value`; None stays None
    where the parameter may be left out (its default is None), and is ``inf`` where its
    type allows that and it may not be none. Names ``params`` does not declare keep their
    name and value.
    """
    declared = {p.name: p for p in params}
    shown: dict[str, Any] = {}
    for name, value in values.items():
        param = declared.get(str(name))
        if param is None:
            shown[str(name)] = value
        elif value is None and param.default is None:
            shown[param.key] = None
        else:
            shown[param.key] = param.type.file_value(value)
    return shown


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


def value_places(
    item: Item, entries: Sequence[Entry], specs: Sequence[ParamSpec]
) -> dict[str, Location]:
    """Where each value of a map is written: ``NAME``, ``NAME.N`` and ``NAME.N.KEY``.

    ``NAME.N`` is a list's element (from 1), ``NAME.N.KEY`` an entry of an element that is
    a map (one limb of a waypoint written per limb).

    A value's own text, also when it came from a parameter (``$name``: the parameter's
    value; ``--set``: the override), so that a message about one element of a list (one
    waypoint) points at that element; elements are numbered from 1. The place of a
    parameter's value is marked (:attr:`Location.parameter`): several nodes may use it.
    Unknown keys have no place.

    Args:
        item: the map, for parameter scope.
        entries: the map's entries, already read (:func:`read_fields` reported any problem
            with them; a reference that cannot be resolved here just has no place).
        specs: the valid keys.

    Returns:
        Model name (``waypoints``) or model name and element (``waypoints.2``) -> place.
    """
    reader = Reader()  # (its own: the values' problems were reported when they were read)
    names = {spec.key: spec.name for spec in specs}
    places: dict[str, Location] = {}
    for entry in entries:
        name = names.get(entry.key)
        value = None if name is None else reader.child(item, entry.node)
        if name is None or value is None:
            continue
        places[name] = _place(value)
        if isinstance(value.node, yaml.SequenceNode):
            for number, node in enumerate(value.node.value, start=1):
                element = reader.child(value, node)
                if element is None:
                    continue
                places[f"{name}.{number}"] = _place(element)
                if isinstance(element.node, yaml.MappingNode):  # one entry per limb, say
                    for key, entry in element.node.value:
                        part = reader.child(element, entry)
                        if isinstance(key, yaml.ScalarNode) and part is not None:
                            places[f"{name}.{number}.{key.value}"] = _place(part)
    return places


def _place(value: Item) -> Location:
    """Where ``value``'s text is; marked when it is a parameter's value (it has a note)."""
    return replace(Location.of(value.node), parameter=bool(value.note))


def list_items(ctx: ValueContext, item: Item, key: str, expected: str) -> list[Item] | None:
    """The elements of a list value as items, or None (reported) when it is not a list."""
    if not isinstance(item.node, yaml.SequenceNode):
        ctx.reader.error(item, f"{key} must be {expected}; got {describe(item.node)}")
        return None
    children = [ctx.reader.child(item, node) for node in item.node.value]
    if any(child is None for child in children):
        return None
    return [child for child in children if child is not None]


__all__ = [
    "REQUIRED",
    "ParamSpec",
    "ValueContext",
    "ValueType",
    "file_fields",
    "list_items",
    "read_fields",
    "suggest_key",
    "unknown_key",
    "value_places",
]
