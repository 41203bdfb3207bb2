"""Render a built mission tree as text, Graphviz DOT, SVG or BehaviorTree.CPP v4 XML.

``limbtree tree MISSION --format ascii|dot|svg|xml`` and the live view of ``limbtree run``
call :func:`render_tree`. Every format is produced by limbtree itself: no Graphviz, no pydot.
A tree is first described (:func:`describe_tree`, :mod:`.views`) as immutable
:class:`NodeView` records from the node-type registry, each with its id (the path of child
indices from the root: ``0``, ``0.1``, ``0.1.2``); the renderers read only those records:
:mod:`.text` (ascii), :mod:`.dot`, :mod:`.svg` and :mod:`.btcpp` (XML). What each node type
looks like (symbol, settings, fill, BT.CPP element) is declared with the node type
(:class:`~limbtree.trees.mission.nodes.NodeExport`).
"""

from __future__ import annotations

from typing import Final, Literal

import py_trees

from limbtree.trees.errors import TreesError
from limbtree.trees.export.btcpp import btcpp_xml, camel_case
from limbtree.trees.export.dot import dot_text
from limbtree.trees.export.svg import svg_text
from limbtree.trees.export.text import ascii_text
from limbtree.trees.export.values import to_file_units
from limbtree.trees.export.views import (
    STATUS_GLYPH,
    NodeView,
    Port,
    child_id,
    describe_tree,
    identify,
)
from limbtree.trees.mission.nodes import NodeRegistry

Format = Literal["ascii", "dot", "svg", "xml"]

#: The formats :func:`render_tree` writes.
FORMATS: Final = ("ascii", "dot", "svg", "xml")


def render_tree(
    root: py_trees.behaviour.Behaviour,
    fmt: Format,
    *,
    show_status: bool = False,
    registry: NodeRegistry | None = None,
) -> str:
    """A built tree as text in one of :data:`FORMATS`.

    Args:
        root: the tree's root behaviour.
        fmt: ``ascii`` (indented text), ``dot`` (Graphviz), ``svg`` (a standalone drawing) or
            ``xml`` (BehaviorTree.CPP v4, for Groot2).
        show_status: add each node's status and feedback message (``ascii``, ``dot``,
            ``svg``; the XML describes the tree only).
        registry: the node types; None: :func:`limbtree.trees.nodes.default_registry`.

    Returns:
        The rendering; text formats end with a newline.

    Raises:
        TreesError: for an unknown format, naming the valid ones.
    """
    if fmt not in FORMATS:
        raise TreesError(f"unknown tree format {fmt!r}; choose one of {', '.join(FORMATS)}")
    view = describe_tree(root, registry)
    if fmt == "ascii":
        return ascii_text(view, show_status=show_status)
    if fmt == "dot":
        return dot_text(view, show_status=show_status)
    if fmt == "svg":
        return svg_text(view, show_status=show_status)
    return btcpp_xml(view)


__all__ = [
    "FORMATS",
    "STATUS_GLYPH",
    "Format",
    "NodeView",
    "Port",
    "ascii_text",
    "btcpp_xml",
    "camel_case",
    "child_id",
    "describe_tree",
    "dot_text",
    "identify",
    "render_tree",
    "svg_text",
    "to_file_units",
]
