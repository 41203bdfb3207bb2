"""One commander per limb at run time: a limb is claimed by the node that commands it.

``limbtree check`` refuses a mission in which two branches of a ``parallel`` may command
one limb (:mod:`limbtree.trees.mission.ownership`). What the check cannot see (a node type
that computes its limbs at run time, a tree built in Python through the public API) this
guard catches while the tree runs:

* a node claims a limb when it first sends it a command (through its
  :class:`~limbtree.trees.limbs.LimbHandle`), and keeps it until it ends (SUCCESS or
  FAILURE) or is halted;
* a command from another node to a claimed limb is not sent: that node is refused, and its
  tick ends in FAILURE with a message naming the limb and the owner's id;
* each claim, release and refusal is a :class:`~limbtree.trees.stream.RunEvent` of the
  tick it happened in (``limb_claimed``, ``limb_released``, ``limb_refused``).

The commanding node is the :class:`~limbtree.trees.behaviours.base.SkillBehaviour` being
started, ticked or stopped (:meth:`LimbClaims.acting`); a command sent while no node acts
(the runner holding every limb at the end) is not checked. One :class:`LimbClaims` per
mission context, no global state; the clock is the mission's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from limbtree.trees.stream import EventKind, RunEvent


class CommandingNode(Protocol):
    """A node that may command limbs: a py_trees behaviour.

    A runner gives each node of its tree a ``node_id``; messages and events use it.
    """

    name: str


def node_label(node: CommandingNode) -> str:
    """A node's id (``0.1``), or its name for a node ticked outside a runner."""
    node_id = getattr(node, "node_id", None)
    return str(node_id) if node_id else str(node.name)


def _describe(node: CommandingNode) -> str:
    node_id = getattr(node, "node_id", None)
    return f'node {node_id} "{node.name}"' if node_id else f'node "{node.name}"'


class LimbClaims:
    """Which node owns each limb of one running mission.

    Args:
        clock: the mission time [s], for the events.
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._owners: dict[str, CommandingNode] = {}
        self._acting: CommandingNode | None = None
        self._stopping = False
        self._refusals: dict[int, str] = {}
        self._events: list[RunEvent] = []

    @contextmanager
    def acting(self, node: CommandingNode, *, stopping: bool = False) -> Iterator[None]:
        """The commands sent inside the block are ``node``'s.

        Args:
            node: the node being started, ticked or stopped.
            stopping: the node is ending: it claims nothing more (a halted move holding its
                limbs), and a command to another node's limb is dropped without a refusal.
        """
        previous = (self._acting, self._stopping)
        self._acting, self._stopping = node, stopping
        try:
            yield
        finally:
            self._acting, self._stopping = previous

    def owner(self, limb: str) -> CommandingNode | None:
        """The node that owns ``limb``, or None."""
        return self._owners.get(limb)

    def may_command(self, limb: str) -> bool:
        """Whether the acting node may send ``limb`` a command now; claims it if free.

        A refused command is one the caller must not send.
        """
        node = self._acting
        if node is None:
            return True
        owner = self._owners.get(limb)
        if owner is node:
            return True
        if owner is None:
            if not self._stopping:
                self._owners[limb] = node
                self._event(EventKind.LIMB_CLAIMED, limb, node)
            return True
        if self._stopping:
            return False
        message = (
            f"limb {limb} is commanded by {_describe(owner)}; "
            "one limb takes one commander at a time: run these nodes one after the other "
            "(a sequence) or give each its own limbs"
        )
        if id(node) not in self._refusals:
            self._refusals[id(node)] = message
        self._event(EventKind.LIMB_REFUSED, limb, node, owner, message)
        return False

    def refusal(self, node: CommandingNode) -> str | None:
        """Why ``node`` was refused a limb since it started, or None."""
        return self._refusals.get(id(node))

    def release(self, node: CommandingNode) -> None:
        """``node`` ended or was halted: its limbs are free, its refusal forgotten."""
        self._refusals.pop(id(node), None)
        for limb in [limb for limb, owner in self._owners.items() if owner is node]:
            del self._owners[limb]
            self._event(EventKind.LIMB_RELEASED, limb, node)

    def drain(self) -> tuple[RunEvent, ...]:
        """The events since the last call (the runner puts them into the tick)."""
        events, self._events = tuple(self._events), []
        return events

    def _event(
        self,
        kind: EventKind,
        limb: str,
        node: CommandingNode,
        owner: CommandingNode | None = None,
        detail: str | None = None,
    ) -> None:
        self._events.append(
            RunEvent(
                kind,
                self._clock(),
                limb,
                detail=detail,
                node=node_label(node),
                owner=None if owner is None else node_label(owner),
            )
        )


__all__ = ["CommandingNode", "LimbClaims", "node_label"]
