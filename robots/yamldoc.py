"""Description files (YAML) whose errors point at the offending key and line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

import yaml
from yaml.constructor import SafeConstructor

from limbtree.yaml11 import yaml11_numbers


class DescriptionErrorType(Protocol):
    """How a description file's error is made: ``error(path, key, reason, line, column)``."""

    def __call__(
        self, path: Path, key: str, reason: str, line: int | None = None, column: int | None = None
    ) -> Exception:
        """The error for ``key`` of ``path``, at a 1-based ``line`` and ``column`` if known."""
        ...


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def kind(value: Any) -> str:
    """``value`` described for an error message."""
    return "nothing" if value is None else f"{type(value).__name__} {value!r}"


class YamlDocument:
    """A parsed description file whose errors point at the offending key's line.

    Shared by ``robot.yaml`` (:mod:`.registry`) and module files (:mod:`.modules`), each
    raising its own error type. A number YAML 1.1 reads in another base than 10 (``050``
    is octal 40, ``1:30`` base-60 90, ``0x10`` 16) is refused as mission files refuse it
    (:mod:`limbtree.yaml11`), at its line and column.

    Args:
        path: the file.
        error: the exception raised, called as ``error(path, key, reason, line, column)``.
    """

    def __init__(self, path: Path, error: DescriptionErrorType) -> None:
        self.path = path
        self.error = error
        try:
            self.text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise error(path, "<file>", f"cannot read it: {exc}", None) from None
        try:
            #: The composed file (None when it is empty), with each value's line and column.
            self.node: yaml.Node | None = yaml.compose(self.text, Loader=yaml.SafeLoader)
            self._refuse_yaml11_numbers()
            self.data: Any = (
                None if self.node is None else SafeConstructor().construct_document(self.node)
            )
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(exc, "problem", None) or str(exc)
            raise error(path, "<yaml>", f"not valid YAML: {problem}", line) from None

    def _refuse_yaml11_numbers(self) -> None:
        """Refuse a number YAML 1.1 reads in base 8, 60, 16 or 2 (``050`` is 40), where it is.

        The first such value (in file order) is the error, at its line and column; any
        others are listed after it, so that one edit can fix them all.
        """
        if self.node is None:
            return
        numbers = yaml11_numbers(self.node)
        if not numbers:
            return
        first, *others = numbers
        reason = first.message
        if others:
            more = ", ".join(f"line {n.line} column {n.column} ({n.node.value})" for n in others)
            reason += f"; more such numbers in this file: {more}"
        raise self.error(
            self.path, ".".join(first.key) or "<top>", reason, first.line, first.column
        )

    def fail(self, key: Sequence[str], reason: str) -> NoReturn:
        """Raise this file's error for ``key`` (a path of mapping keys)."""
        raise self.error(self.path, ".".join(key) or "<top>", reason, self._line(key))

    def _line(self, key: Sequence[str]) -> int | None:
        """1-based line of the deepest part of ``key`` found in the file."""
        node = self.node
        line: int | None = None
        for part in key:
            if not isinstance(node, yaml.MappingNode):
                break
            for key_node, value_node in node.value:
                if key_node.value == part:
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:
                break
        return line

    def mapping(self, key: Sequence[str], value: Any, allowed: Sequence[str]) -> dict[str, Any]:
        """Check that ``value`` is a mapping whose keys are all in ``allowed``."""
        if not isinstance(value, dict):
            self.fail(key, f"expected a mapping, got {kind(value)}")
        for name in value:
            if name not in allowed:
                self.fail((*key, str(name)), f"unknown key; valid keys here: {', '.join(allowed)}")
        return value

    def string(self, key: Sequence[str], value: Any) -> str:
        """Check that ``value`` is a non-empty string."""
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected a non-empty string, got {kind(value)}")
        return value.strip()

    def positive(self, key: Sequence[str], value: Any, unit: str) -> float:
        """Check that ``value`` is a finite number > 0."""
        if not is_number(value) or not math.isfinite(value) or value <= 0:
            self.fail(key, f"expected a positive number [{unit}], got {value!r}")
        return float(value)

    def numbers(self, key: Sequence[str], value: Any, count: int, what: str) -> tuple[float, ...]:
        """Check that ``value`` is a list of ``count`` finite numbers."""
        if not isinstance(value, list) or not all(is_number(v) for v in value):
            self.fail(key, f"expected a list of {count} numbers ({what}), got {value!r}")
        if len(value) != count:
            self.fail(key, f"expected {count} numbers ({what}), got {len(value)}")
        if not all(math.isfinite(v) for v in value):
            self.fail(key, f"expected finite numbers, got {value!r}")
        return tuple(float(v) for v in value)
