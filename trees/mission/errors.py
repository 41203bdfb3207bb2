"""Exceptions of ``limbtree.trees.mission``: every problem of a mission file, with its place."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import yaml

from limbtree.errors import LimbtreeError


@dataclass(frozen=True, order=True)
class Location:
    """A place in a mission file, 1-based, as editors count, or a command-line value.

    Attributes:
        file: the file as the user named it, or the command-line option a value came from
            (``--set NAME=VALUE``, as typed).
        line: line number, from 1; 0 for a command-line value, which has no lines.
        column: column number, from 1; 0 for a command-line value.
        parameter: whether this is the place of a parameter's value (or of a ``--set``
            override), which several nodes may use; not compared.
    """

    file: str
    line: int
    column: int
    parameter: bool = field(default=False, compare=False)

    @classmethod
    def from_mark(cls, mark: yaml.Mark) -> Location:
        """The location of a PyYAML mark (whose line and column count from 0)."""
        return cls(str(mark.name), mark.line + 1, mark.column + 1)

    @classmethod
    def of(cls, node: yaml.Node) -> Location:
        """Where a composed YAML node starts."""
        return cls.from_mark(node.start_mark)

    @classmethod
    def command_line(cls, option: str) -> Location:
        """The place of a value given on the command line, named by its option as typed."""
        return cls(option, 0, 0)

    @property
    def on_command_line(self) -> bool:
        """Whether this is a command-line value rather than a place in a file."""
        return self.line == 0

    def __str__(self) -> str:
        if self.on_command_line:
            return self.file
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


def value_problem(value_at: Location, owner: str, owner_at: Location, message: str) -> Problem:
    """A problem with a value, placed at the value.

    A parameter's value may be used by several nodes, and a value given on the command line
    (``--set``) has no line in the mission: the message then also says where what uses it
    is written.

    Args:
        value_at: where the value is.
        owner: what uses it, for the message (``the sync_move``, ``the fault``).
        owner_at: where that is written.
        message: what is wrong.
    """
    if value_at.parameter or value_at.on_command_line:
        return Problem(value_at, f"{message} ({owner} is at {owner_at})")
    return Problem(value_at, message)


_GIVEN_AT = re.compile(r"given at (\S+:\d+:\d+)")
_SLOT = "given at \x00"


def merge_uses(problems: Iterable[Problem]) -> list[Problem]:
    """One problem per place, however many times a subtree with it is used.

    A bad value inside a subtree (often one given by ``--set``) is found once per use of
    the subtree, each naming the use (``given at FILE:LINE:COL``); those are merged into
    one problem naming every use: ``given at a.yaml:69:5, a.yaml:70:5 and a.yaml:71:5``.
    The order is kept (each merged problem stands where its first use stood).
    """
    groups: dict[tuple[Location, str], list[list[str]]] = {}
    for problem in problems:
        key = (problem.location, _GIVEN_AT.sub(_SLOT, problem.message))
        groups.setdefault(key, []).append(_GIVEN_AT.findall(problem.message))
    merged = []
    for (location, template), uses in groups.items():
        pieces = template.split(_SLOT)
        text = pieces[0]
        for piece, column in zip(pieces[1:], zip(*uses, strict=True), strict=True):
            distinct = list(dict.fromkeys(column))
            text += f"given at {distinct[0] if len(distinct) == 1 else _and(distinct)}{piece}"
        merged.append(Problem(location, text))
    return merged


def _and(places: list[str]) -> str:
    """``a.yaml:1:2, 3:4 and b.yaml:5:6``: a place in the file before it drops the file."""
    short = [places[0]]
    for before, place in itertools.pairwise(places):
        file, file_before = place.rsplit(":", 2)[0], before.rsplit(":", 2)[0]
        short.append(place[len(file) + 1 :] if file == file_before else place)
    return f"{', '.join(short[:-1])} and {short[-1]}"


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
