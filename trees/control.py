"""Remote control of a live run: pause, resume, abort, step, breakpoints, operator gates.

The web debugger (:mod:`limbtree.trees.web`) runs in another thread than the runner. It
never touches the runner: it puts requests into a :class:`RunControl`, and the runner takes
them at its safe point, between two ticks, exactly as it takes the keyboard's keys.

Breakpoints are on nodes: *start* (the node was initialised this tick: it was ticked and
had not been RUNNING before), *failure* (it ended in FAILURE this tick) or *recovery* (a
skill's telemetry ``mode`` turned to ``recovering`` this tick: a synchronized move bringing
limbs back onto its trajectory after a fault, seed 000 Sec. II-B). A tick's tree
update is never interrupted (``update()`` never blocks, and a tick in flight must finish
its commands): the runner pauses right after the tick in which the breakpoint's node
started or failed, before the next tick's tree update, and the page shows that tick. In
the ``sim`` clock nothing moves meanwhile; in the ``real`` clock the limbs hold, as for any
pause. ``step`` then runs exactly one tick and pauses again.

:class:`SharedOperator` lets the page answer operator gates beside the terminal: the first
answer from either counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from limbtree.skills.sync import Mode
from limbtree.trees.context import AnswerLog, Operator
from limbtree.trees.stream import NodeStatus, NodeTick


class ControlOp(StrEnum):
    """What the page can ask of a live run."""

    PAUSE = "pause"
    RESUME = "resume"
    ABORT = "abort"
    STEP = "step"


class BreakOn(StrEnum):
    """When a breakpoint stops the run."""

    START = "start"
    FAILURE = "failure"
    RECOVERY = "recovery"


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A breakpoint: node ``node`` (its id), on its start, its failure or its recovery."""

    node: str
    on: BreakOn


@dataclass(frozen=True, slots=True)
class BreakpointHit:
    """A breakpoint that paused the run.

    Attributes:
        node: the node's id.
        on: start, failure or recovery.
        tick: the tick in which it fired (the run paused right after).
        t: that tick's time [s, mission time].
    """

    node: str
    on: BreakOn
    tick: int
    t: float


_KIND_ORDER = {BreakOn.FAILURE: 0, BreakOn.RECOVERY: 1, BreakOn.START: 2}


def _precedence(point: Breakpoint) -> tuple[int, str, int]:
    """Where a breakpoint comes in the order they are tried in (the first hit pauses).

    Deepest node first (an id's depth is its count of dots), then node id, then failure,
    recovery, start.
    """
    return (-point.node.count("."), point.node, _KIND_ORDER[point.on])


class ControlError(ValueError):
    """A request the run cannot take (an unknown node, an unknown operation)."""


class RunControl:
    """Requests from another thread to the runner, and what the runner tells back.

    Every method is thread-safe. The runner calls :meth:`take`, :meth:`observe` and
    :meth:`set_state`; the page's server calls the rest.

    Args:
        node_ids: the tree's node ids (a breakpoint on anything else is refused).
        recovering: the nodes whose skill recovers (a recovery breakpoint on another is
            refused: it could never fire), or None when not known (any is taken).
    """

    def __init__(
        self, node_ids: Iterable[str] = (), recovering: Iterable[str] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._ops: list[ControlOp] = []
        self._breakpoints: set[Breakpoint] = set()
        self._in_order: tuple[Breakpoint, ...] = ()  # (the one that fires first, first)
        self._last: dict[str, NodeStatus] = {}
        self._modes: dict[str, str | None] = {}
        self.node_ids: frozenset[str] = frozenset(node_ids)
        self.recovering: frozenset[str] | None = (
            None if recovering is None else frozenset(recovering)
        )
        self.paused = False
        self.ended = False
        self.hit: BreakpointHit | None = None

    # -- the page's side ----------------------------------------------------------------------

    def request(self, op: ControlOp | str) -> None:
        """Ask for ``op`` at the runner's next safe point.

        Raises:
            ControlError: for an unknown operation.
        """
        try:
            value = ControlOp(op)
        except ValueError:
            known = ", ".join(o.value for o in ControlOp)
            raise ControlError(f"unknown operation {op!r}; use one of {known}") from None
        with self._lock:
            self._ops.append(value)

    def set_breakpoint(self, node: str, on: BreakOn | str, enabled: bool = True) -> None:
        """Set (or, with ``enabled`` False, clear) a breakpoint.

        Raises:
            ControlError: for a node the tree does not have, or an unknown ``on``.
        """
        if self.node_ids and node not in self.node_ids:
            raise ControlError(f"the run's tree has no node {node!r}")
        try:
            when = BreakOn(on)
        except ValueError:
            kinds = ", ".join(repr(kind.value) for kind in BreakOn)
            raise ControlError(f"a breakpoint is on {kinds}, not {on!r}") from None
        never = self.recovering is not None and node not in self.recovering
        if when is BreakOn.RECOVERY and enabled and never:
            which = ", ".join(sorted(self.recovering or ())) or "none in this tree"
            raise ControlError(
                f"node {node!r} never recovers: a recovery breakpoint is for a skill that "
                f"brings its limbs back after a fault (sync_move; nodes {which})"
            )
        with self._lock:
            if enabled:
                self._breakpoints.add(Breakpoint(node, when))
            else:
                self._breakpoints.discard(Breakpoint(node, when))
            self._in_order = tuple(sorted(self._breakpoints, key=_precedence))

    @property
    def breakpoints(self) -> list[Breakpoint]:
        """The breakpoints set, ordered by node id then kind."""
        with self._lock:
            return sorted(self._breakpoints, key=lambda b: (b.node, b.on.value))

    # -- the runner's side --------------------------------------------------------------------

    def take(self) -> list[ControlOp]:
        """The operations asked since the last call, in order."""
        with self._lock:
            ops, self._ops = self._ops, []
        return ops

    def observe(
        self,
        tick: int,
        t: float,
        nodes: Mapping[str, NodeTick],
        skills: Mapping[str, object] | None = None,
    ) -> BreakpointHit | None:
        """Note a tick's node statuses and skill modes; the breakpoint it hits, or None.

        Of several breakpoints hit in one tick, the deepest node's (a failure's leaf, not
        the sequences its failure fails; a started child, not its parent), then the first
        node id, then failure before recovery before start.

        Args:
            tick: the tick's index.
            t: its time [s].
            nodes: the nodes ticked in it (the snapshot's ``nodes``).
            skills: the skills' telemetry of the tick (the snapshot's ``skills``).
        """
        last = self._last
        modes = self._modes
        skills = skills or {}
        with self._lock:
            breakpoints = self._in_order
        hit: BreakpointHit | None = None
        for point in breakpoints:
            node = nodes.get(point.node)
            if node is None:
                continue
            if point.on is BreakOn.START:
                fired = last.get(point.node) is not NodeStatus.RUNNING
            elif point.on is BreakOn.FAILURE:
                fired = node.status is NodeStatus.FAILURE
            else:
                mode = _mode(skills.get(point.node))
                fired = mode == RECOVERING and modes.get(point.node) != RECOVERING
            if fired:
                hit = BreakpointHit(point.node, point.on, tick, t)
                break
        for node_id, node in nodes.items():
            last[node_id] = node.status
        for node_id, telemetry in skills.items():
            modes[node_id] = _mode(telemetry)
        if hit is not None:
            self.hit = hit
        return hit

    def set_state(self, *, paused: bool | None = None, ended: bool | None = None) -> None:
        """What the runner is doing, for the page (a resume clears the last hit)."""
        if paused is not None:
            self.paused = paused
            if not paused:
                self.hit = None
        if ended is not None:
            self.ended = ended


#: The telemetry mode of a skill bringing its limbs back onto its trajectory.
RECOVERING = Mode.RECOVERING.value
#: What a breakpoint's node did, for the pause's message.
BREAK_VERBS = {
    BreakOn.START: "started",
    BreakOn.FAILURE: "failed",
    BreakOn.RECOVERY: "started recovering",
}


def _mode(telemetry: object) -> str | None:
    """A skill telemetry's ``mode`` as text (an enum's value), or None."""
    mode = getattr(telemetry, "mode", None)
    if mode is None:
        return None
    return str(getattr(mode, "value", mode))


class SharedOperator:
    """Operator gates answered by the page or by ``inner`` (the terminal): the first wins.

    Args:
        inner: the terminal's operator, or None when only the page answers.

    Attributes:
        question: the gate waiting, as ``(node id, prompt)``, or None.
    """

    def __init__(
        self, inner: Operator | None = None, say: Callable[[str], None] | None = None
    ) -> None:
        self.inner = inner
        #: How to tell the terminal that the page answered (the progress' ``message``).
        self.say = say
        self._lock = threading.Lock()
        self._answers: dict[str, bool] = {}
        self._given = AnswerLog()  # (the page's: given and taken on the runner's thread)
        self.question: tuple[str, str] | None = None

    def answer(self, key: str, yes: bool) -> None:
        """The page's answer to the gate ``key``.

        Raises:
            ControlError: when no gate ``key`` is waiting.
        """
        with self._lock:
            question = self.question
            if question is None or question[0] != key:
                waiting = f"gate {question[0]!r} is" if question else "no gate is"
                raise ControlError(f"{waiting} waiting, not {key!r}")
            self._answers[key] = yes

    def confirm(self, key: str, prompt: str) -> bool | None:
        """Ask once; the page's answer, or the terminal's, or None while none has come."""
        with self._lock:
            self.question = (key, prompt)
            answer = self._answers.pop(key, None)
        if answer is not None:  # the page's: the terminal's question is withdrawn
            if self.inner is not None:
                self.inner.withdraw(key)
            if self.say is not None:
                self.say(f"operator: {prompt} {'yes' if answer else 'no'} (from the web page)")
            self._given.note_answer(key, answer, "from the web page")
        elif self.inner is not None:
            answer = self.inner.confirm(key, prompt)
        if answer is not None:
            self._forget(key)
        return answer

    def take_answers(self) -> list[tuple[str, str]]:
        """The answers given since the last call, the page's and the terminal's."""
        answers = self._given.take_answers()
        take = getattr(self.inner, "take_answers", None)
        return answers + (take() if take is not None else [])

    def withdraw(self, key: str) -> None:
        """Forget the question ``key`` (its gate was interrupted or answered)."""
        self._forget(key)
        if self.inner is not None:
            self.inner.withdraw(key)

    def waiting(self) -> bool:
        """Whether a gate asked and no answer has come yet."""
        with self._lock:
            if self.question is None:
                return False
            if self.question[0] in self._answers:
                return False
        inner_waiting = getattr(self.inner, "waiting", None)
        return inner_waiting() if inner_waiting is not None else True

    def _forget(self, key: str) -> None:
        with self._lock:
            if self.question is not None and self.question[0] == key:
                self.question = None
            self._answers.pop(key, None)


__all__ = [
    "BREAK_VERBS",
    "BreakOn",
    "Breakpoint",
    "BreakpointHit",
    "ControlError",
    "ControlOp",
    "RunControl",
    "SharedOperator",
]
