"""YAML 1.1 numbers in other bases than 10, refused wherever limbtree reads YAML.

PyYAML resolves plain scalars by YAML 1.1: ``050`` is octal (40), ``1:30`` base 60 (90),
``0x10`` hexadecimal (16), ``0b101`` binary (5). A person who writes a speed or a joint
limit that way means the decimal number and would get another one, silently. Mission files
(``limbtree.trees.mission``) and robot and module descriptions (``limbtree.robots``) both
refuse such a value, saying what YAML 1.1 reads it as and what to write instead; this module,
in the root package that every layer may import, holds the one check they share.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

import yaml
from yaml.constructor import SafeConstructor

_TAG: Final = "tag:yaml.org,2002:"
STR: Final = _TAG + "str"
INT: Final = _TAG + "int"
FLOAT: Final = _TAG + "float"

#: A plain integer with a leading zero (``050``, ``-07``, ``08``; not ``0``).
_LEADING_ZERO: Final = re.compile(r"[-+]?0[0-9_]*[0-9][0-9_]*\Z")
#: YAML 1.1 integer forms in other bases than 10: ``0x1F``, ``0b101``.
_OTHER_BASE: Final = re.compile(r"[-+]?0(?P<base>[xXbB])[0-9A-Fa-f_]+\Z")


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else repr(value)


def yaml11_number(node: yaml.ScalarNode) -> str | None:
    """Why a plain scalar is refused as a number YAML 1.1 reads unlike a reader would, or None.

    PyYAML's (YAML 1.1) resolver reads ``050`` in base 8 (40), ``1:30`` in base 60 (90),
    ``0x10`` in base 16 and ``0b101`` in base 2; an author means 50 mm or 1.5 minutes and
    would get neither, silently. A leading zero is refused also where YAML 1.1 reads text
    (``08``), so that ``07`` and ``08`` are not read differently.

    Args:
        node: a composed scalar.

    Returns:
        The message (what the text is read as, and what to write instead), or None when
        the scalar is not such a number (quoted text never is).
    """
    text = str(node.value)
    if node.style is not None:
        return None
    if node.tag in (INT, FLOAT) and ":" in text:
        constructor = SafeConstructor()
        value = (
            constructor.construct_yaml_int(node)
            if node.tag == INT
            else constructor.construct_yaml_float(node)
        )
        return f"{text} is a base-60 number in YAML 1.1 ({_number(value)}): write {_number(value)}"
    other = _OTHER_BASE.match(text)
    if node.tag == INT and other is not None:
        base = "hexadecimal" if other.group("base") in "xX" else "binary"
        value = SafeConstructor().construct_yaml_int(node)
        return f"{text} is a {base} number in YAML 1.1 ({value}): write {value}"
    if node.tag in (INT, STR) and _LEADING_ZERO.match(text):
        decimal = int(text.replace("_", ""))
        if node.tag == INT:
            octal = SafeConstructor().construct_yaml_int(node)
            also = f" (or {octal})" if octal != decimal else ""
            return (
                f"{text} has a leading zero, which YAML 1.1 reads as octal ({octal}): "
                f"write {decimal}{also}"
            )
        return f"{text} has a leading zero, which YAML 1.1 reads as text: write {decimal}"
    return None


@dataclass(frozen=True)
class Yaml11Number:
    """A value :func:`yaml11_number` refuses, where it is.

    Attributes:
        node: the scalar.
        key: the map keys from the top to it (a list's items share the list's key).
        message: what YAML 1.1 reads it as and what to write instead.
    """

    node: yaml.ScalarNode
    key: tuple[str, ...]
    message: str

    @property
    def line(self) -> int:
        """1-based line of the value."""
        return int(self.node.start_mark.line) + 1

    @property
    def column(self) -> int:
        """1-based column of the value."""
        return int(self.node.start_mark.column) + 1


def yaml11_numbers(node: yaml.Node) -> list[Yaml11Number]:
    """Every value under ``node`` that :func:`yaml11_number` refuses, in file order.

    Map keys are names, read as written, and not checked.
    """
    found = [
        Yaml11Number(current, key, message)
        for key, current in walk_keyed(node, keys=False)
        if isinstance(current, yaml.ScalarNode) and (message := yaml11_number(current)) is not None
    ]
    return sorted(found, key=lambda number: (number.line, number.column))


def walk_nodes(node: yaml.Node, *, keys: bool) -> Iterator[yaml.Node]:
    """``node`` and every node under it, each once (an alias's node is shared).

    Args:
        node: the top node.
        keys: whether maps' keys are included, or only their values.
    """
    for _, current in walk_keyed(node, keys=keys):
        yield current


def walk_keyed(node: yaml.Node, *, keys: bool) -> Iterator[tuple[tuple[str, ...], yaml.Node]]:
    """:func:`walk_nodes` with each node's key: the map keys from ``node`` down to it.

    A map's value has the map's key and its own; a map's key node, and a list's item, have
    the key of the map or list that holds them. A node reached by several paths (an alias)
    comes once, with the first.
    """
    stack: list[tuple[tuple[str, ...], yaml.Node]] = [((), node)]
    seen: set[int] = set()
    while stack:
        key, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield key, current
        if isinstance(current, yaml.SequenceNode):
            stack.extend((key, item) for item in current.value)
        elif isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                if keys:
                    stack.append((key, key_node))
                stack.append(((*key, str(key_node.value)), value_node))
