"""Reading composed YAML with its marks: items, parameter scopes and the problem list.

The loader never turns a mission file into plain Python first: it walks the node graph of
``yaml.compose`` so that every value keeps the line and column it came from. A value of
the form ``$name`` is a reference to a parameter; :meth:`Reader.child` replaces it by the
parameter's value while keeping the place of the reference for messages.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from limbtree.trees.mission.errors import Location, Problem
from limbtree.yaml11 import FLOAT as FLOAT  # the tags, with BOOL and NULL below
from limbtree.yaml11 import INT as INT
from limbtree.yaml11 import STR as STR
from limbtree.yaml11 import walk_nodes, yaml11_numbers

_TAG: Final = "tag:yaml.org,2002:"
BOOL: Final = _TAG + "bool"
NULL: Final = _TAG + "null"
_SEQ: Final = _TAG + "seq"
_MAP: Final = _TAG + "map"
_MERGE: Final = _TAG + "merge"
_KNOWN_TAGS: Final = frozenset({STR, INT, FLOAT, BOOL, NULL, _SEQ, _MAP})
#: The tag of a value already reported (a number :func:`refuse_yaml11_numbers` refused, a
#: parameter declaration without a default): reading it gives nothing more.
REFUSED: Final = "tag:limbtree,2026:refused"

#: ``$name``: a whole value that refers to a parameter.
_REFERENCE: Final = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\Z")
#: What parameter (and limb, subtree) names look like.
NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def reference(node: yaml.Node) -> str | None:
    """The parameter a value written exactly ``$NAME`` refers to (``NAME``), else None."""
    if not (isinstance(node, yaml.ScalarNode) and node.tag == STR):
        return None
    match = _REFERENCE.match(str(node.value))
    return None if match is None else match.group(1)


class _Invalid:
    """The type of :data:`INVALID`."""

    def __repr__(self) -> str:
        return "INVALID"

    def __bool__(self) -> bool:
        return False


#: What a reader returns for a value it reported a problem about.
INVALID: Final = _Invalid()


@dataclass(frozen=True)
class Binding:
    """The value a parameter name stands for in a scope.

    Attributes:
        node: the value, as composed YAML.
        note: what to add to a message about the value, naming the parameter and where its
            value was given.
        scope: the scope the value itself is read in (a ``with`` value written in a
            subtree use is read where it was written).
    """

    node: yaml.Node
    note: str
    scope: Scope


@dataclass(frozen=True)
class Scope:
    """The parameters ``$name`` may refer to at some place of a mission.

    Attributes:
        owner: whose parameters they are, for messages ("the mission", "subtree square"),
            or empty where no parameter may be used (inside a parameter's own value).
        bindings: parameter name -> its value.
    """

    owner: str = ""
    bindings: Mapping[str, Binding] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Item:
    """A YAML value being read, with where to report problems about it.

    Attributes:
        node: the value (after ``$name`` substitution).
        at: where to report: the value's own place, or, inside a substituted value, the
            place of the ``$name`` reference.
        scope: the parameters ``$name`` refers to inside this value.
        note: added to every message about the value: names the parameter it came from.
    """

    node: yaml.Node
    at: Location
    scope: Scope
    note: str = ""


@dataclass(frozen=True)
class Entry:
    """One ``key: value`` of a YAML map.

    Attributes:
        key: the key's text.
        at: where the key is.
        node: the value, not yet resolved (see :meth:`Reader.child`).
    """

    key: str
    at: Location
    node: yaml.Node


def did_you_mean(given: str, valid: Iterable[str]) -> str | None:
    """The valid choice closest to ``given``, if one is close (difflib), else None."""
    choices = list(valid)
    for choice in choices:
        if choice.lower() == given.lower():
            return choice
    close = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    return close[0] if close else None


def unknown(noun: str, given: str, valid: Sequence[str], label: str | None = None) -> str:
    """``unknown NOUN GIVEN; did you mean X? valid NOUNs: a, b`` (the hint only when close).

    Args:
        noun: what ``given`` is meant to be (``limb``, ``node type``).
        given: what the file says.
        valid: the valid choices, in the order to list them.
        label: how to introduce the list; default ``valid NOUNs``.
    """
    hint = did_you_mean(given, valid)
    listed = ", ".join(valid) if valid else "(none)"
    lead = f"unknown {noun} {given}"
    if hint is not None:
        return f"{lead}; did you mean {hint}? {label or f'valid {noun}s'}: {listed}"
    return f"{lead}; {label or f'valid {noun}s'}: {listed}"


def describe(node: yaml.Node) -> str:
    """A YAML value as a message names it: ``text 'abc'``, ``number 2.5``, ``a list``.

    A YAML 1.1 boolean written as a word other than true or false (``no``, ``on``) says
    how to write it as text.
    """
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    if isinstance(node, yaml.MappingNode):
        return "a map"
    value = str(node.value)
    if node.tag == BOOL and value.lower() not in ("true", "false"):
        return f"boolean {value} (YAML 1.1 reads {value} as a boolean; write '{value}' for text)"
    if node.tag == REFUSED:
        return value
    return {
        STR: f"text {value!r}",
        INT: f"integer {value}",
        FLOAT: f"number {value}",
        BOOL: f"boolean {value}",
        NULL: "null",
    }.get(str(node.tag), f"{value!r} (tag {node.tag})")


def refused(node: yaml.Node) -> yaml.ScalarNode:
    """A value in place of ``node``, already reported: reading it gives nothing more."""
    return yaml.ScalarNode(REFUSED, "", node.start_mark, node.end_mark)


def refuse_yaml11_numbers(node: yaml.Node, reader: Reader) -> None:
    """Report every value under ``node`` that :func:`~limbtree.yaml11.yaml11_number` refuses.

    A refused value is tagged :data:`REFUSED`; reading it later gives nothing (the problem
    is reported once, at the value itself, however often a parameter holding it is used).
    Map keys are names, read as written, and not checked.
    """
    for number in yaml11_numbers(node):
        reader.report(Location.of(number.node), number.message)
        number.node.tag = REFUSED


class Reader:
    """Reads composed YAML into values and collects every problem on the way.

    One reader serves one load; it holds the problem list, nothing global.
    """

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self._constructor = SafeConstructor()

    def report(self, at: Location, message: str, note: str = "") -> _Invalid:
        """Record a problem; returns :data:`INVALID` for the caller to return."""
        self.problems.append(Problem(at, f"{message} {note}" if note else message))
        return INVALID

    def error(self, item: Item, message: str) -> _Invalid:
        """Record a problem about ``item`` at its place, with its parameter note."""
        return self.report(item.at, message, item.note)

    def root(self, node: yaml.Node, scope: Scope) -> Item | None:
        """An item for a value written in a file and read in ``scope``."""
        return self._resolve(node, Location.of(node), scope, "")

    def child(self, parent: Item, node: yaml.Node) -> Item | None:
        """An item for a value inside ``parent`` (an element or a map value).

        Inside a value that came from a parameter, problems are reported where the
        parameter was used, with the parameter's note.
        """
        at = parent.at if parent.note else Location.of(node)
        return self._resolve(node, at, parent.scope, parent.note)

    def _resolve(self, node: yaml.Node, at: Location, scope: Scope, note: str) -> Item | None:
        if node.tag == REFUSED:
            return None
        if node.tag not in _KNOWN_TAGS:
            self.report(at, f"unsupported YAML value {describe(node)}", note)
            return None
        if not (isinstance(node, yaml.ScalarNode) and node.tag == STR):
            return Item(node, at, scope, note)
        text = str(node.value)
        if not text.startswith("$"):
            return Item(node, at, scope, note)
        match = _REFERENCE.match(text)
        if match is None:
            self.report(at, f"bad parameter reference {text!r}: write $NAME", note)
            return None
        name = match.group(1)
        binding = scope.bindings.get(name)
        if binding is None:
            if not scope.owner:
                self.report(at, f"a parameter's value cannot refer to a parameter ({text})", note)
            else:
                declared = list(scope.bindings)
                self.report(
                    at, unknown("parameter", name, declared, f"parameters of {scope.owner}"), note
                )
            return None
        if binding.node.tag == REFUSED:
            return None
        return Item(binding.node, at, binding.scope, binding.note)

    def entries(self, item: Item, what: str, noun: str = "key") -> list[Entry] | None:
        """The ``key: value`` entries of a map; duplicate keys are problems.

        Merge keys (``<<: *anchor``) are followed; a key written in the map wins over a
        merged one.

        Args:
            item: the value, which should be a map.
            what: what the map is, for the message when it is not one.
            noun: what its keys are, for the message about a duplicate (``limb``).

        Returns:
            The entries in file order, or None (reported) when the value is not a map.
        """
        node = item.node
        if not isinstance(node, yaml.MappingNode):
            self.error(item, f"{what} must be a map; got {describe(node)}")
            return None
        own: dict[str, Entry] = {}
        merged: dict[str, Entry] = {}
        for key_node, value_node in node.value:
            key_at = item.at if item.note else Location.of(key_node)
            if key_node.tag == _MERGE:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for source in reversed(sources):
                    inner = self.entries(Item(source, key_at, item.scope, item.note), "a merge")
                    merged.update((e.key, e) for e in inner or ())
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == NULL:
                self.report(key_at, f"keys of {what} must be names; got {describe(key_node)}")
                continue
            key = str(key_node.value)
            first = own.get(key)
            if first is not None:
                self.report(key_at, f"duplicate {noun} {key} (first at line {first.at.line})")
                continue
            own[key] = Entry(key, key_at, value_node)
        merged.update(own)
        return list(merged.values())

    def elements(self, item: Item, what: str) -> list[yaml.Node] | None:
        """The elements of a list, or None (reported) when the value is not a list."""
        if not isinstance(item.node, yaml.SequenceNode):
            self.error(item, f"{what} must be a list; got {describe(item.node)}")
            return None
        return list(item.node.value)

    def plain(self, item: Item) -> Any:
        """The value as plain Python (lists, dicts, scalars), parameters substituted.

        Returns:
            The value, or :data:`INVALID` (reported) when a reference is unknown.
        """
        node = item.node
        if isinstance(node, yaml.SequenceNode):
            values = []
            for element in node.value:
                child = self.child(item, element)
                values.append(INVALID if child is None else self.plain(child))
            return INVALID if INVALID in values else values
        if isinstance(node, yaml.MappingNode):
            result: dict[str, Any] = {}
            for entry in self.entries(item, "a value") or ():
                child = self.child(item, entry.node)
                result[entry.key] = INVALID if child is None else self.plain(child)
            return INVALID if INVALID in result.values() else result
        if node.tag == REFUSED:
            return INVALID
        try:
            return self._constructor.construct_object(node, deep=True)
        except ConstructorError as exc:
            return self.error(item, f"cannot read value {describe(node)}: {exc.problem}")


def compose(path: str, reader: Reader, at: Location | None = None) -> tuple[bool, yaml.Node | None]:
    """Compose one YAML file, reporting why it cannot be read.

    Args:
        path: the file, as messages should name it.
        reader: where problems go.
        at: where the file was asked for (an ``include``), for read errors; None for the
            mission file itself.

    Numbers YAML 1.1 reads in base 8, 16, 2 or 60 are reported (:func:`refuse_yaml11_numbers`).

    Returns:
        ``(True, node)`` when the file was read (``node`` is None for an empty file), or
        ``(False, None)`` when it could not be read or parsed (reported).
    """
    try:
        with open(path, encoding="utf-8") as stream:
            node = yaml.compose(stream, Loader=yaml.SafeLoader)
        if node is not None:
            refuse_yaml11_numbers(node, reader)
        return True, node
    except OSError as exc:
        where = at or Location(path, 1, 1)
        reader.report(where, f"cannot read {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        reader.report(at or Location(path, 1, 1), f"{path} is not UTF-8 text: {exc.reason}")
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location.from_mark(mark) if mark is not None else Location(path, 1, 1)
        reader.report(where, f"YAML syntax error: {syntax_error(exc)}")
    except yaml.YAMLError as exc:
        reader.report(at or Location(path, 1, 1), f"YAML error: {exc}")
    return False, None


def syntax_error(exc: yaml.MarkedYAMLError) -> str:
    """What PyYAML's syntax error says, with where its construct started and a fix for tabs.

    PyYAML places an unclosed ``{`` or ``[`` where it noticed (often the end of the file);
    its context mark, where the collection started, is added: ``(while parsing a flow
    mapping that starts at line 3, column 9)``. A tab in the indentation gets ``indent
    with spaces, not tabs``.
    """
    problem = str(exc.problem or exc.context)
    text = problem
    if exc.context and exc.problem:
        context = str(exc.context)
        start, stop = exc.context_mark, exc.problem_mark
        if start is not None and (
            stop is None or (start.line, start.column) != (stop.line, stop.column)
        ):
            context += f" that starts at line {start.line + 1}, column {start.column + 1}"
        text += f" ({context})"
    if "'\\t'" in problem or "tab character" in problem:
        text += ": indent with spaces, not tabs"
    return text


def compose_text(text: str, reader: Reader, at: Location) -> yaml.Node | None:
    """Compose a YAML value given on the command line (``--set NAME=VALUE``) at ``at``.

    Numbers YAML 1.1 reads in base 8, 16, 2 or 60 are reported as for a file.

    Returns:
        The value's node (an empty text is ``null``), or None (reported) on a syntax error.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        reader.report(at, f"cannot read {text!r} as YAML: {problem}")
        return None
    if node is None:
        return yaml.ScalarNode(NULL, "", at_mark(at), at_mark(at))
    _relabel(node, at)
    refuse_yaml11_numbers(node, reader)
    return node


def at_mark(at: Location) -> yaml.Mark:
    """A PyYAML mark for ``at``, for values that do not come from a file."""
    return yaml.Mark(at.file, 0, at.line - 1, at.column - 1, None, 0)


def _relabel(node: yaml.Node, at: Location) -> None:
    """Point the marks of a composed command-line value at ``at``."""
    for current in walk_nodes(node, keys=True):
        current.start_mark = current.end_mark = at_mark(at)
