"""One commander per limb: the static check of which branches may command which limbs.

A node type declares which of its parameters name the limbs it commands
(:attr:`NodeSpec.commands <limbtree.trees.mission.nodes.NodeSpec.commands>`), and when it
ticks several children in one tick, one while another still runs
(:attr:`NodeSpec.concurrent`: ``parallel`` always, ``sequence`` and ``fallback`` without
memory). Two children of such a composite run at the same time, so a limb that both may
command (anywhere below them) would get two commanders that fight over it.
:func:`limb_conflicts` finds every such limb in a validated tree, after subtrees are
inlined and parameters resolved. The check is conservative: two branches that could
overlap in time conflict even when their timings happen not to.

Limb names in the model are already the declared names (a one-limb robot called by its
robot's name reads as its ``ROBOT.LIMB``), so one limb is one name here.
"""

from __future__ import annotations

from dataclasses import dataclass

from limbtree.trees.mission.errors import Location, Problem
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.nodes import NodeRegistry


@dataclass(frozen=True)
class Commander:
    """A node that commands a limb, as the check found it.

    Attributes:
        node_id: its stable id (the path of child indices from the root, ``0.1.0``).
        node: the node.
        subtree: the innermost subtree it belongs to (``subtree reach``), or "" when it is
            written in the mission's own tree.
        use: where that subtree is used, or None.
    """

    node_id: str
    node: NodeModel
    subtree: str = ""
    use: Location | None = None

    @property
    def site(self) -> Location:
        """Where to point a person: the subtree use, or the node itself."""
        return self.node.location if self.use is None else self.use

    def describe(self) -> str:
        """``node 0.1 "Sync move" (sync_move at m.yaml:9:9, in subtree reach used at ...)``."""
        where = f"{self.node.type} at {self.node.location}"
        if self.use is not None and self.use != self.node.location:
            where += f", in {self.subtree} used at {self.use}"
        return f'node {self.node_id} "{self.node.name}" ({where})'


@dataclass(frozen=True)
class LimbConflict:
    """A limb that two children of one concurrent composite may command.

    Attributes:
        limb: the limb's declared name.
        composite_id: the id of the composite whose children both command it.
        composite: that composite (a ``parallel``).
        first: a commander in the earlier child.
        second: a commander in the later child.
    """

    limb: str
    composite_id: str
    composite: NodeModel
    first: Commander
    second: Commander

    @property
    def location(self) -> Location:
        """Where the problem is reported: the later commander (or its subtree use)."""
        return self.second.site

    def message(self) -> str:
        """What is wrong and how to fix it, naming the limb and both nodes."""
        parent = self.composite
        if parent.params.get("memory") is False:
            fix = (
                f"without memory a {parent.type} ticks its earlier children again while a "
                "later one runs: give it memory: true, or give each branch its own limbs"
            )
        else:
            fix = (
                "run these two in a sequence (one after the other), or give each branch its "
                "own limbs"
            )
        return (
            f"limb {self.limb} may be commanded by two branches of {parent.type} "
            f'{self.composite_id} "{parent.name}" (at {parent.location}) at the same time: '
            f"{self.first.describe()} and {self.second.describe()}. Two commanders would "
            f"fight over the limb. Fix: {fix}"
        )

    def problem(self) -> Problem:
        """The conflict as a mission problem (``file:line:column: message``)."""
        return Problem(self.location, self.message())


def _child_id(parent_id: str, index: int) -> str:
    return f"{parent_id}.{index}"


class _Walk:
    """One pass over a tree: per node, the limbs its subtree may command."""

    def __init__(self, registry: NodeRegistry) -> None:
        self.registry = registry
        self.conflicts: list[LimbConflict] = []

    def commanders(
        self, node: NodeModel, node_id: str, subtree: str, use: Location | None
    ) -> dict[str, Commander]:
        """Limb -> the first node below (or at) ``node`` that may command it."""
        if node.origin is not None:
            subtree, use = node.origin, node.location
        spec = self.registry.resolve(node.type)
        found: dict[str, Commander] = {}
        if spec is not None:
            for limb in spec.commanded_limbs(node.params):
                found.setdefault(limb, Commander(node_id, node, subtree, use))
        concurrent = spec is not None and spec.ticks_together(node.params)
        owner_child: dict[str, Commander] = {}
        for index, child in enumerate(node.children):
            below = self.commanders(child, _child_id(node_id, index), subtree, use)
            for limb, commander in below.items():
                first = owner_child.get(limb)
                if first is None:
                    owner_child[limb] = commander
                elif concurrent:
                    self.conflicts.append(LimbConflict(limb, node_id, node, first, commander))
        for limb, commander in owner_child.items():
            found.setdefault(limb, commander)
        return found


def limb_conflicts(
    root: NodeModel, registry: NodeRegistry, root_id: str = "0"
) -> tuple[LimbConflict, ...]:
    """Every limb that two children of one concurrent composite may command.

    For each composite whose type ticks several children in one tick, each child's limbs
    are the union over its descendants of the limbs they command; a limb in two children's
    sets is a conflict. A composite with three children on one limb gives two conflicts
    (the second and the third child each against the first).

    Args:
        root: the tree, subtrees inlined and parameters substituted.
        registry: the node types (which parameters command limbs, which composites are
            concurrent).
        root_id: the root's node id.

    Returns:
        The conflicts in the order the walk finds them (depth first, inner composites
        before the composites above them).
    """
    walk = _Walk(registry)
    walk.commanders(root, root_id, "", None)
    return tuple(walk.conflicts)


__all__ = ["Commander", "LimbConflict", "limb_conflicts"]
