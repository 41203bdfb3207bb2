"""The indented text of a tree: ``limbtree tree --format ascii`` and the live view."""

from __future__ import annotations

from limbtree.trees.export.views import STATUS_GLYPH, NodeView, Status
from limbtree.trees.mission.nodes import NodeKind


def _line(view: NodeView) -> str:
    if view.kind is NodeKind.LEAF:
        text = f"{view.type} {view.detail}".rstrip()
        return f"{view.name}: {text}" if view.named else text
    return f"{view.title}  {view.name}" if view.named else view.title


def ascii_text(view: NodeView, *, show_status: bool = False) -> str:
    """An indented tree, one node per line; with ``show_status``, a status column and feedback.

    Example::

        → sequence  Square mission
        ├── ◇ repeat ×3  Loop
        │   └── Square: sync_move [heavy, light] 4 waypoints p_e=20 mm
        └── wait duration=2 s
    """
    lines: list[str] = []

    def visit(node: NodeView, prefix: str, connector: str, below: str) -> None:
        text = prefix + connector + _line(node)
        if show_status:
            glyph = STATUS_GLYPH.get(node.status, "?")
            text = f"{glyph} {text}"
            if node.feedback and node.status != Status.INVALID:
                text += f"  — {node.feedback}"
        lines.append(text)
        for index, child in enumerate(node.children):
            last = index == len(node.children) - 1
            visit(child, prefix + below, "└── " if last else "├── ", "    " if last else "│   ")

    visit(view, "", "", "")
    return "\n".join(lines) + "\n"
