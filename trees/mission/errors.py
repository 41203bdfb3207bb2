"""Exceptions of ``limbtree.trees.mission``: every problem of a mission file, with its place."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from limbtree.errors import LimbtreeError


@dataclass(frozen=True, order=True)
class Location:
    """A place in a mission file, 1-based, as editors count.

    Attributes:
        file: the file as the user named it (or ``--set`` for a command-line override).
        line: line number, from 1.
        column: column number, from 1.
    """

    file: str
    line: int
    column: int

    @classmethod
    def from_mark(cls, mark: yaml.Mark) -> Location:
        """The location of a PyYAML mark (whose line and column count from 0)."""
        return cls(str(mark.name), mark.line + 1, mark.column + 1)

    @classmethod
    def of(cls, node: yaml.Node) -> Location:
        """Where a composed YAML node starts."""
        return cls.from_mark(node.start_mark)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a mission: where, and what to change.

    Attributes:
        location: where the problem is.
        message: what is wrong, with the valid choices where there are some.
    """

    location: Location
    message: str

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


class MissionError(LimbtreeError):
    """A mission file is not valid; :attr:`problems` says every way in which it is not.

    ``str()`` gives one ``file:line:column: message`` line per problem, the format
    ``limbtree check`` prints.

    Attributes:
        problems: every problem found, in file order.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid mission")
