"""A standalone SVG drawing of a tree, laid out by limbtree itself (no Graphviz)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final
from xml.sax.saxutils import escape, quoteattr

from limbtree.trees.export.dot import STATUS_FILL, label_lines
from limbtree.trees.export.values import port_text
from limbtree.trees.export.views import NodeView
from limbtree.trees.mission.nodes import NodeKind

_FONT: Final = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"
_FONT_PX: Final = 12.0
_CHAR_PX: Final = 0.6 * _FONT_PX  # monospace advance
_LINE_PX: Final = 16.0
_PAD_PX: Final = 8.0
_GAP_X: Final = 18.0
_GAP_Y: Final = 36.0
_MARGIN: Final = 16.0
_DECORATOR_RX: Final = 16.0


@dataclass
class _Box:
    """A node's box while the SVG is laid out (mutable scratch, local to one call)."""

    node: NodeView
    lines: list[str]
    children: list[_Box]
    depth: int
    width: float = 0.0
    height: float = 0.0
    slot: float = 0.0
    x: float = 0.0  # centre
    y: float = 0.0  # top


def _layout(view: NodeView, show_status: bool) -> tuple[list[_Box], float, float]:
    """A tidy top-down layout: leaves side by side, parents centred over their children."""

    def build(node: NodeView, depth: int) -> _Box:
        lines = label_lines(node, show_status=show_status)
        box = _Box(node, lines, [build(c, depth + 1) for c in node.children], depth)
        box.height = len(lines) * _LINE_PX + 2 * _PAD_PX - 4.0
        box.width = max(len(line) for line in lines) * _CHAR_PX + 2 * _PAD_PX
        if node.kind is NodeKind.DECORATOR:
            box.width += _DECORATOR_RX
        spread = sum(c.slot for c in box.children) + _GAP_X * max(0, len(box.children) - 1)
        box.slot = max(box.width, spread)
        return box

    root = build(view, 0)
    boxes: list[_Box] = []
    rows: dict[int, float] = {}
    stack = [root]
    while stack:
        box = stack.pop()
        boxes.append(box)
        rows[box.depth] = max(rows.get(box.depth, 0.0), box.height)
        stack.extend(reversed(box.children))
    tops: dict[int, float] = {}
    y = _MARGIN
    for depth in sorted(rows):
        tops[depth] = y
        y += rows[depth] + _GAP_Y

    def place(box: _Box, left: float) -> None:
        box.y = tops[box.depth]
        if not box.children:
            box.x = left + box.slot / 2
            return
        spread = sum(c.slot for c in box.children) + _GAP_X * (len(box.children) - 1)
        cursor = left + (box.slot - spread) / 2
        for child in box.children:
            place(child, cursor)
            cursor += child.slot + _GAP_X
        centre = (box.children[0].x + box.children[-1].x) / 2
        half = box.width / 2
        box.x = min(max(centre, left + half), left + box.slot - half)

    place(root, _MARGIN)
    return boxes, root.slot + 2 * _MARGIN, y - _GAP_Y + _MARGIN


def svg_text(view: NodeView, *, show_status: bool = False) -> str:
    """A standalone SVG drawing of the tree, one ``<rect>`` per node.

    Composites are filled boxes, decorators pill-shaped boxes, leaves white boxes; with
    ``show_status`` every box is coloured by its status. Hovering a node shows its full
    parameters and feedback (``<title>``).
    """
    boxes, width, height = _layout(view, show_status)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}" font-family={quoteattr(_FONT)} '
        f'font-size="{_FONT_PX:g}">',
        f"<title>{escape(view.name)}</title>",
        '<g class="edges" fill="none" stroke="#666666" stroke-width="1.2">',
    ]
    for box in boxes:
        for child in box.children:
            bottom = box.y + box.height
            middle = child.y - _GAP_Y / 2
            out.append(
                f'<path d="M{box.x:.1f},{bottom:.1f} V{middle:.1f} H{child.x:.1f} V{child.y:.1f}"/>'
            )
    out.append("</g>")
    for box in boxes:
        node = box.node
        fill = (STATUS_FILL.get(node.status) if show_status else None) or node.fill
        if node.kind is NodeKind.COMPOSITE:
            radius = 2.0
        elif node.kind is NodeKind.DECORATOR:
            radius = min(box.height / 2, _DECORATOR_RX)
        else:
            radius = 6.0
        left = box.x - box.width / 2
        hover = [node.name, *(f"{p.key}: {port_text(p.value)}" for p in node.ports)]
        if node.feedback:
            hover.append(node.feedback)
        out.append(f'<g id="node-{node.id}" class="node {node.kind.value}">')
        out.append(f"<title>{escape(chr(10).join(hover))}</title>")
        out.append(
            f'<rect x="{left:.1f}" y="{box.y:.1f}" width="{box.width:.1f}" '
            f'height="{box.height:.1f}" rx="{radius:.1f}" fill="{fill}" stroke="#444444" '
            'stroke-width="1"/>'
        )
        for index, line in enumerate(box.lines):
            baseline = box.y + _PAD_PX + _FONT_PX - 1 + index * _LINE_PX
            weight = ' font-weight="bold"' if index == 0 else ""
            out.append(
                f'<text x="{box.x:.1f}" y="{baseline:.1f}" text-anchor="middle"{weight}>'
                f"{escape(line)}</text>"
            )
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
