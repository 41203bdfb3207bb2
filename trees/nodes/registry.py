"""The registry of node types: limbtree's own plus those of installed packages.

A package adds node types by declaring an entry point in the group ``limbtree.nodes`` whose
object is a :class:`~limbtree.trees.mission.nodes.NodeSpec` or a sequence of them::

    [project.entry-points."limbtree.nodes"]
    hold_still = "my_nodes.hold:HOLD_STILL"

:func:`default_registry` builds the registry on demand each time it is called (no global
state); the loader, the builder and the exports build one when none is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Final

from limbtree.trees.mission.nodes import NodeRegistry, NodeRegistryError, NodeSource, NodeSpec
from limbtree.trees.nodes.climbing import CLIMBING
from limbtree.trees.nodes.composites import COMPOSITES
from limbtree.trees.nodes.decorators import DECORATORS
from limbtree.trees.nodes.dynamics import DYNAMICS
from limbtree.trees.nodes.skills import SKILLS

#: The entry-point group through which packages add node types.
ENTRY_POINT_GROUP: Final = "limbtree.nodes"

#: limbtree's own node types, in the order of the reference.
BUILT_IN_TYPES: Final[tuple[NodeSpec, ...]] = (
    *COMPOSITES,
    *DECORATORS,
    *SKILLS,
    *DYNAMICS,
    *CLIMBING,
)


def builtin_registry() -> NodeRegistry:
    """The registry of limbtree's own node types only."""
    return NodeRegistry.of(BUILT_IN_TYPES)


def _source(entry: EntryPoint) -> NodeSource:
    package = entry.dist.name if entry.dist is not None else "an unknown package"
    return NodeSource(f"entry point {entry.name} = {entry.value} of package {package}")


def load_entry_point(entry: EntryPoint) -> tuple[NodeSource, tuple[NodeSpec, ...]]:
    """The node types one ``limbtree.nodes`` entry point declares.

    Raises:
        NodeRegistryError: when the entry point does not import, or holds something else
            than a NodeSpec or a sequence of them; the message names the entry point and its
            package.
    """
    source = _source(entry)
    try:
        loaded = entry.load()
    except Exception as exc:  # a plug-in may fail in any way: name it, keep the cause
        raise NodeRegistryError(
            f"{source.label} does not load ({type(exc).__name__}: {exc}); fix that package "
            "or uninstall it"
        ) from exc
    if isinstance(loaded, NodeSpec):
        return source, (loaded,)
    if (
        isinstance(loaded, Sequence)
        and not isinstance(loaded, str)
        and loaded
        and all(isinstance(spec, NodeSpec) for spec in loaded)
    ):
        return source, tuple(loaded)
    raise NodeRegistryError(
        f"{source.label} holds {type(loaded).__name__}, not a node type: it must name a "
        "limbtree.trees.nodes.NodeSpec or a non-empty sequence of them"
    )


def registry_with(entries: Iterable[EntryPoint], base: NodeRegistry | None = None) -> NodeRegistry:
    """``base`` (the built-in types by default) plus the node types of ``entries``.

    Raises:
        NodeRegistryError: for a broken entry point, or a name declared twice.
    """
    registry = builtin_registry() if base is None else base
    ordered = sorted(entries, key=lambda e: (e.dist.name if e.dist else "", e.name))
    for entry in ordered:
        source, specs = load_entry_point(entry)
        registry = registry.with_types(*specs, source=source)
    return registry


def default_registry() -> NodeRegistry:
    """The node types of limbtree plus those of every installed ``limbtree.nodes`` entry point.

    Raises:
        NodeRegistryError: for a broken entry point, or a name declared twice.
    """
    return registry_with(entry_points(group=ENTRY_POINT_GROUP))
