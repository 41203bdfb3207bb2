"""Graphviz DOT of a tree: composites as boxes, decorators as ellipses, leaves rounded.

Node names are the node ids (``"0.1.2"``), so two nodes with one display name stay two nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from limbtree.trees.export.values import clip, port_text
from limbtree.trees.export.views import STATUS_GLYPH, NodeView, Status
from limbtree.trees.mission.nodes import NodeKind

#: The fill of a node's box by status, in the drawings with status.
STATUS_FILL: Final[Mapping[Any, str]] = MappingProxyType(
    {Status.SUCCESS: "#c8ecc9", Status.FAILURE: "#f7c6c4", Status.RUNNING: "#fff1b8"}
)

_SHAPE: Final[Mapping[NodeKind, tuple[str, ...]]] = MappingProxyType(
    {
        NodeKind.COMPOSITE: ("shape=box", 'style="filled"'),
        NodeKind.DECORATOR: ("shape=ellipse", 'style="filled"'),
        NodeKind.LEAF: ("shape=box", 'style="rounded,filled"'),
    }
)


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def label_lines(node: NodeView, *, show_status: bool, width: int = 40) -> list[str]:
    """The lines of a node's box: kind, name, then a leaf's parameters, then the status."""
    lines = [node.title]
    if node.named:
        lines.append(node.name)
    lines.extend(clip(p.summary, width) for p in node.ports if p.shown)
    if show_status:
        status = f"{STATUS_GLYPH.get(node.status, '?')} {node.status.value}"
        lines.append(status)
        if node.feedback and node.status != Status.INVALID:
            lines.append(clip(node.feedback, width))
    return [clip(line, width) for line in lines]


def dot_text(view: NodeView, *, show_status: bool = False) -> str:
    """Graphviz DOT: composites as boxes, decorators as ellipses, leaves as rounded boxes.

    DOT node names are the node ids (:attr:`NodeView.id`, quoted: ``"0.1.2"``), the same for
    the same tree, so two nodes with one display name stay two nodes.
    """
    out = [
        f"digraph {_dot_string(view.name)} {{",
        '  graph [rankdir=TB, nodesep=0.3, ranksep=0.45, fontname="Helvetica"];',
        '  node [fontname="Helvetica", fontsize=10, margin="0.12,0.06"];',
        '  edge [arrowsize=0.6, color="#555555"];',
    ]
    for node in view.walk():
        attributes = [
            f"label={_dot_string(chr(10).join(label_lines(node, show_status=show_status)))}"
        ]
        attributes += list(_SHAPE[node.kind])
        fill = (STATUS_FILL.get(node.status) if show_status else None) or node.fill
        attributes.append(f'fillcolor="{fill}"')
        tooltip = "; ".join(f"{p.key}={port_text(p.value)}" for p in node.ports)
        if node.feedback:
            tooltip = f"{node.feedback}; {tooltip}" if tooltip else node.feedback
        if tooltip:
            attributes.append(f"tooltip={_dot_string(tooltip)}")
        out.append(f"  {_dot_string(node.id)} [{', '.join(attributes)}];")
    for node in view.walk():
        out.extend(
            f"  {_dot_string(node.id)} -> {_dot_string(child.id)};" for child in node.children
        )
    out.append("}")
    return "\n".join(out) + "\n"
