"""Render a built mission tree as text, Graphviz DOT, SVG or BehaviorTree.CPP v4 XML.

``limbtree tree MISSION --format ascii|dot|svg|xml`` and the live view of ``limbtree run``
call :func:`render_tree`. Every format is produced by limbtree itself: no Graphviz, no pydot.
A tree is first described (:func:`describe_tree`) as immutable :class:`NodeView` records,
each with a stable id (``n0_1_2``: the child indices from the root), its kind, its settings
and, for a leaf, its parameters back in the mission file's units (``p_e_mm: 20``); the four
renderers read only those records.

BehaviorTree.CPP v4 mapping (``xml``), checked against BT.CPP's own sources:

==================================  ==========================================================
py_trees                            BT.CPP v4
==================================  ==========================================================
``Sequence(memory=True)``           ``Sequence``. Both resume at the RUNNING child and start
                                    again from the first child after the sequence succeeded
                                    or failed. (BT.CPP ``SequenceWithMemory`` differs: after a
                                    failure it re-ticks the failed child, never the earlier
                                    ones, which py_trees cannot express.)
``Sequence(memory=False)``          ``ReactiveSequence``: every tick starts from the first
                                    child, and a running later child is halted when an
                                    earlier one turns RUNNING or FAILURE.
``Selector(memory=True)``           ``Fallback`` (resumes at the running child, restarts
                                    after SUCCESS or after every child failed).
``Selector(memory=False)``          ``ReactiveFallback``.
``Parallel`` ``SuccessOnAll``       ``Parallel success_count="-1" failure_count="1"``: all
                                    must succeed, the first failure fails it (py_trees fails
                                    a parallel on any failure, whatever the policy).
``Parallel`` ``SuccessOnOne``       ``Parallel success_count="1" failure_count="1"``.
``Parallel`` ``SuccessOnSelected``  ``Parallel success_count="K" failure_count="1"`` with K
                                    the number of selected children; BT.CPP counts children,
                                    it cannot name them, so an XML comment lists them.
``Repeat(num_success=n)``           ``Repeat num_cycles="n"`` (-1: forever).
``Retry(num_failures=n)``           ``RetryUntilSuccessful num_attempts="n"``: both give up
                                    on the n-th failure, so n attempts in all (-1: no limit).
``ClockTimeout(duration)``          ``Timeout msec="1000 * duration"``. limbtree counts
                                    mission time, BT.CPP wall time: the same in ``real``.
``Inverter``                        ``Inverter``
``FailureIsSuccess``                ``ForceSuccess``
``SuccessIsFailure``                ``ForceFailure``
a ``SkillBehaviour`` leaf           ``<Action ID="SyncMove" name=... p_e_mm="20" .../>``: the
                                    CamelCase of its ``node_type``, its parameters as input
                                    ports named like the mission file's keys (unit in the
                                    name), declared in ``<TreeNodesModel>``.
==================================  ==========================================================

Parallels with ``synchronise=False`` (py_trees re-ticks children that already succeeded)
have no BT.CPP counterpart: they are written as ``Parallel`` with an XML comment. Any other
decorator or leaf becomes a custom node named after its class, declared in the model.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal
from xml.sax.saxutils import escape, quoteattr

import py_trees
from scipy.spatial.transform import Rotation

from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.behaviours.timeout import ClockTimeout
from limbtree.trees.errors import TreesError
from limbtree.trees.mission.nodes import NODE_SPECS, NodeSpec
from limbtree.trees.mission.units import Unit
from limbtree.trees.mission.values import (
    REQUIRED,
    Flag,
    Integer,
    LimbList,
    LimbName,
    ParamSpec,
    PerLimb,
    Posture,
    Postures,
    Profile,
    Quantity,
    Text,
    ValueType,
    Vector,
    Waypoints,
)

Format = Literal["ascii", "dot", "svg", "xml"]

#: The formats :func:`render_tree` writes.
FORMATS: Final = ("ascii", "dot", "svg", "xml")

Status = py_trees.common.Status

#: One character per status, for the live view.
STATUS_GLYPH: Final[Mapping[Any, str]] = MappingProxyType(
    {Status.SUCCESS: "✓", Status.FAILURE: "✕", Status.RUNNING: "*", Status.INVALID: "-"}
)

#: Parameters a leaf's one-line summary shows even at their default value.
HEADLINE_PARAMS: Final = frozenset({"p_e", "q_e"})

_POSITIONAL: Final = (LimbList, LimbName, Waypoints, Profile, Postures, Posture, Text)
_UNIT_LABEL: Final = MappingProxyType({"mm_s": "mm/s", "hz": "Hz"})


class Role(StrEnum):
    """What a node does with children."""

    COMPOSITE = "composite"
    DECORATOR = "decorator"
    LEAF = "leaf"


@dataclass(frozen=True)
class Port:
    """One parameter of a leaf, in the mission file's units.

    Attributes:
        name: the model's name (``p_e``).
        key: the mission file's key, unit included (``p_e_mm``); the XML port name.
        value: the value in the file's unit, made of plain JSON types (``inf`` as a float).
        summary: compact text for the one-line summary (``p_e=20 mm``, ``4 waypoints``).
        shown: whether the summary includes it (required, a headline, or not the default).
        spec: the parameter's spec, or None for a node type the registry does not know.
    """

    name: str
    key: str
    value: Any
    summary: str
    shown: bool
    spec: ParamSpec | None = None


@dataclass(frozen=True)
class NodeView:
    """One node of a tree as the renderers see it.

    Attributes:
        uid: stable id from the child indices (``n0`` the root, ``n0_2_0`` ...).
        name: the node's display name.
        role: composite, decorator or leaf.
        kind: ``sequence``, ``fallback``, ``parallel``, ``repeat``, ``retry``, ``timeout``,
            ``inverter``, ``force_success``, ``force_failure``, the leaf's ``node_type``,
            or the class name of anything else.
        symbol: ``→`` sequence, ``?`` fallback, ``⇉`` parallel, ``◇`` decorator, or empty.
        detail: settings as text (``reactive``, ``×3``, ``all succeed``); for a leaf its
            parameter summary.
        settings: the settings behind ``detail`` (``memory``, ``policy``, ``count``,
            ``duration_s``, ...).
        ports: a leaf's parameters, in the registry's order.
        status: the node's last status.
        feedback: its feedback message.
        children: the children, in order.
    """

    uid: str
    name: str
    role: Role
    kind: str
    symbol: str = ""
    detail: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    ports: tuple[Port, ...] = ()
    status: Any = Status.INVALID
    feedback: str = ""
    children: tuple[NodeView, ...] = ()

    def walk(self) -> tuple[NodeView, ...]:
        """This node and all below it, depth first, parents before children."""
        nodes: list[NodeView] = []
        stack: list[NodeView] = [self]
        while stack:
            node = stack.pop()
            nodes.append(node)
            stack.extend(reversed(node.children))
        return tuple(nodes)

    @property
    def title(self) -> str:
        """``→ sequence``, ``◇ repeat ×3``, ``sync_move``: the kind with its symbol."""
        if self.role is Role.LEAF:
            return self.kind
        text = f"{self.symbol} {self.kind}" if self.symbol else self.kind
        if self.role is Role.DECORATOR and self.detail:
            return f"{text} {self.detail}"
        if self.detail:
            return f"{text} ({self.detail})"
        return text

    @property
    def named(self) -> bool:
        """Whether the name says more than the kind (``Sync move`` for ``sync_move`` does not)."""
        return _slug(self.name) != _slug(self.kind)


# Public API ------------------------------------------------------------------------------


def render_tree(
    root: py_trees.behaviour.Behaviour,
    fmt: Format,
    *,
    show_status: bool = False,
    specs: Mapping[str, NodeSpec] = NODE_SPECS,
) -> str:
    """A built tree as text in one of :data:`FORMATS`.

    Args:
        root: the tree's root behaviour.
        fmt: ``ascii`` (indented text), ``dot`` (Graphviz), ``svg`` (a standalone drawing) or
            ``xml`` (BehaviorTree.CPP v4, for Groot2).
        show_status: add each node's status and feedback message (``ascii``, ``dot``,
            ``svg``; the XML describes the tree only).
        specs: the node registry, for the leaves' parameter units and defaults.

    Returns:
        The rendering; text formats end with a newline.

    Raises:
        TreesError: for an unknown format, naming the valid ones.
    """
    view = describe_tree(root, specs)
    if fmt == "ascii":
        return ascii_text(view, show_status=show_status)
    if fmt == "dot":
        return dot_text(view, show_status=show_status)
    if fmt == "svg":
        return svg_text(view, show_status=show_status)
    if fmt == "xml":
        return btcpp_xml(view, specs)
    raise TreesError(f"unknown tree format {fmt!r}; choose one of {', '.join(FORMATS)}")


def describe_tree(
    root: py_trees.behaviour.Behaviour, specs: Mapping[str, NodeSpec] = NODE_SPECS
) -> NodeView:
    """The :class:`NodeView` of ``root`` and everything below it."""

    def visit(behaviour: py_trees.behaviour.Behaviour, uid: str) -> NodeView:
        children = tuple(
            visit(child, f"{uid}_{index}") for index, child in enumerate(behaviour.children)
        )
        common: dict[str, Any] = {
            "uid": uid,
            "name": str(behaviour.name),
            "status": behaviour.status,
            "feedback": str(behaviour.feedback_message or ""),
            "children": children,
        }
        if isinstance(behaviour, py_trees.composites.Composite):
            return NodeView(role=Role.COMPOSITE, **_composite(behaviour), **common)
        if isinstance(behaviour, py_trees.decorators.Decorator):
            return NodeView(role=Role.DECORATOR, symbol="◇", **_decorator(behaviour), **common)
        if isinstance(behaviour, SkillBehaviour):
            ports = _ports(behaviour.params, specs.get(behaviour.node_type))
            summary = " ".join(p.summary for p in ports if p.shown)
            kind = behaviour.node_type or type(behaviour).__name__
            return NodeView(role=Role.LEAF, kind=kind, detail=summary, ports=ports, **common)
        return NodeView(role=Role.LEAF, kind=type(behaviour).__name__, **common)

    return visit(root, "n0")


# Describing nodes ------------------------------------------------------------------------


def _composite(behaviour: py_trees.composites.Composite) -> dict[str, Any]:
    if isinstance(behaviour, py_trees.composites.Parallel):
        policy = behaviour.policy
        selected = tuple(str(c.name) for c in getattr(policy, "children", ()) or ())
        synchronise = bool(getattr(policy, "synchronise", False))
        if isinstance(policy, py_trees.common.ParallelPolicy.SuccessOnOne):
            name, detail = "one", "one succeeds"
        elif isinstance(policy, py_trees.common.ParallelPolicy.SuccessOnSelected):
            name, detail = "selected", f"selected succeed: {', '.join(selected)}"
        else:
            name, detail = "all", "all succeed"
        if name != "one" and not synchronise:
            detail += ", re-ticks successes"
        settings = {"policy": name, "synchronise": synchronise, "selected": selected}
        return {"kind": "parallel", "symbol": "⇉", "detail": detail, "settings": settings}
    memory = bool(getattr(behaviour, "memory", True))
    detail = "" if memory else "reactive"
    if isinstance(behaviour, py_trees.composites.Sequence):
        return {"kind": "sequence", "symbol": "→", "detail": detail, "settings": {"memory": memory}}
    if isinstance(behaviour, py_trees.composites.Selector):
        return {"kind": "fallback", "symbol": "?", "detail": detail, "settings": {"memory": memory}}
    return {"kind": type(behaviour).__name__, "symbol": "□"}


def _decorator(behaviour: py_trees.decorators.Decorator) -> dict[str, Any]:
    if isinstance(behaviour, py_trees.decorators.Repeat):
        count = int(behaviour.num_success)
        detail = "forever" if count < 0 else f"×{count}"
        return {"kind": "repeat", "detail": detail, "settings": {"count": count}}
    if isinstance(behaviour, py_trees.decorators.Retry):
        count = int(behaviour.num_failures)
        detail = "until success" if count < 0 else f"{count} attempt{'s' if count != 1 else ''}"
        return {"kind": "retry", "detail": detail, "settings": {"count": count}}
    if isinstance(behaviour, ClockTimeout | py_trees.decorators.Timeout):
        duration = float(behaviour.duration)
        return {
            "kind": "timeout",
            "detail": f"{duration:g} s",
            "settings": {"duration_s": duration},
        }
    if isinstance(behaviour, py_trees.decorators.Inverter):
        return {"kind": "inverter"}
    if isinstance(behaviour, py_trees.decorators.FailureIsSuccess):
        return {"kind": "force_success"}
    if isinstance(behaviour, py_trees.decorators.SuccessIsFailure):
        return {"kind": "force_failure"}
    return {"kind": type(behaviour).__name__}


def _ports(params: Mapping[str, Any], spec: NodeSpec | None) -> tuple[Port, ...]:
    """A leaf's parameters in file units: the registry's order, then any it does not know."""
    known = {} if spec is None else {p.name: p for p in spec.params}
    names = [n for n in known if n in params] + [n for n in params if n not in known]
    ports: list[Port] = []
    for name in names:
        value = params[name]
        param = known.get(name)
        vtype = None if param is None else param.type
        if value is None and not (isinstance(vtype, Integer) and vtype.forever):
            continue
        key = name if param is None else param.key
        file_value = to_file_units(vtype, value)
        unit = None if vtype is None else vtype.key_unit()
        shown = (
            param is None
            or param.required
            or name in HEADLINE_PARAMS
            or not _same(value, param.default_value())
        )
        ports.append(
            Port(name, key, file_value, _summary(name, vtype, unit, file_value), shown, param)
        )
    return tuple(ports)


def to_file_units(vtype: ValueType | None, value: Any) -> Any:
    """A model (SI) value back in the mission file's unit, as plain JSON types.

    Poses become ``{translation_mm, rotation_deg}`` (rotation left out when zero), joint
    postures ``{q_deg}``, velocity profiles ``{duration_s, velocity_mm_s}``.
    """
    if isinstance(vtype, Integer) and vtype.forever and value is None:
        return "forever"
    if value is None:
        return None
    if isinstance(vtype, Quantity | PerLimb | Vector):
        return _scaled(value, 1.0 / vtype.key_unit().to_si)
    if isinstance(vtype, Waypoints):
        return [_per_limb({limb: _pose_file(pose) for limb, pose in wp.items()}) for wp in value]
    if isinstance(vtype, Profile):
        return [
            {
                "duration_s": _round(float(seg["duration"])),
                "velocity_mm_s": _scaled(seg["velocity"], 1e3),
            }
            for seg in value
        ]
    if isinstance(vtype, Postures):
        return [_per_limb({limb: _posture_file(p) for limb, p in wp.items()}) for wp in value]
    if isinstance(vtype, Posture):
        return _posture_file(value)
    return _plain(value)


def _per_limb(values: dict[str, Any]) -> Any:
    """One value when every limb has the same (as a mission file may say it), else the map."""
    distinct = list(values.values())
    if distinct and all(v == distinct[0] for v in distinct):
        return distinct[0]
    return values


def _round(value: float) -> float:
    return value if not math.isfinite(value) else float(f"{value:.6g}")


def _scaled(value: Any, factor: float) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _scaled(v, factor) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_scaled(v, factor) for v in value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return _plain(value)
    return _round(float(value) * factor)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float):
        return _round(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def _pose_file(pose: Sequence[float]) -> dict[str, Any]:
    out: dict[str, Any] = {"translation_mm": [_round(float(v) * 1e3) for v in pose[:3]]}
    euler = Rotation.from_quat([float(v) for v in pose[3:7]]).as_euler("xyz", degrees=True)
    rotation = [_round(float(v)) + 0.0 for v in euler]
    if any(abs(v) > 1e-9 for v in rotation):
        out["rotation_deg"] = rotation
    return out


def _posture_file(posture: Any) -> Any:
    if isinstance(posture, str):
        return posture
    return {"q_deg": [_round(math.degrees(float(q))) for q in posture]}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int):
        return a == b or math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return dict(a) == dict(b)
    return bool(a == b)


def _number(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:g}"
    return str(value)


def _unit_label(unit: Unit | None) -> str:
    if unit is None or not unit.suffix:
        return ""
    return " " + _UNIT_LABEL.get(unit.suffix, unit.suffix)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        if len(value) > 4 or any(isinstance(v, Mapping | list) for v in value):
            return _plural(len(value), "item")
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return _number(value)


def _summary(name: str, vtype: ValueType | None, unit: Unit | None, value: Any) -> str:
    """Compact text for one parameter (``p_e=20 mm``, ``[heavy, light]``, ``4 waypoints``)."""
    if isinstance(vtype, LimbList):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(vtype, LimbName):
        return f"[{value}]"
    if isinstance(vtype, Waypoints):
        return _plural(len(value), "waypoint")
    if isinstance(vtype, Profile):
        total = sum(float(seg["duration_s"]) for seg in value)
        return f"{_plural(len(value), 'segment')} over {total:g} s"
    if isinstance(vtype, Postures):
        if all(isinstance(p, str) for p in value):
            return " → ".join(value)
        return _plural(len(value), "posture")
    if isinstance(vtype, Posture):
        return value if isinstance(value, str) else f"q={_short(value['q_deg'])} deg"
    if isinstance(vtype, Text):
        return f'"{_clip(str(value), 32)}"'
    if isinstance(vtype, Flag):
        return name if value else f"{name}=false"
    return f"{name}={_short(value)}{_unit_label(unit)}"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# ascii -----------------------------------------------------------------------------------


def _line(view: NodeView) -> str:
    if view.role is Role.LEAF:
        text = f"{view.kind} {view.detail}".rstrip()
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


# dot -------------------------------------------------------------------------------------

_STATUS_FILL: Final[Mapping[Any, str]] = MappingProxyType(
    {Status.SUCCESS: "#c8ecc9", Status.FAILURE: "#f7c6c4", Status.RUNNING: "#fff1b8"}
)
_KIND_FILL: Final = MappingProxyType(
    {"sequence": "#dbe7f5", "fallback": "#f6e3c6", "parallel": "#e4dcf3"}
)


def _dot_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label_lines(node: NodeView, *, show_status: bool, width: int = 40) -> list[str]:
    """The lines of a node's box: kind, name, then a leaf's parameters, then the status."""
    lines = [node.title]
    if node.named:
        lines.append(node.name)
    lines.extend(_clip(p.summary, width) for p in node.ports if p.shown)
    if show_status:
        status = f"{STATUS_GLYPH.get(node.status, '?')} {node.status.value}"
        lines.append(status)
        if node.feedback and node.status != Status.INVALID:
            lines.append(_clip(node.feedback, width))
    return [_clip(line, width) for line in lines]


def dot_text(view: NodeView, *, show_status: bool = False) -> str:
    """Graphviz DOT: composites as boxes, decorators as ellipses, leaves as rounded boxes.

    Node ids are the :attr:`NodeView.uid` paths, so they are the same for the same tree.
    """
    out = [
        f"digraph {_dot_string(view.name)} {{",
        '  graph [rankdir=TB, nodesep=0.3, ranksep=0.45, fontname="Helvetica"];',
        '  node [fontname="Helvetica", fontsize=10, margin="0.12,0.06"];',
        '  edge [arrowsize=0.6, color="#555555"];',
    ]
    for node in view.walk():
        attributes = [
            f"label={_dot_string(chr(10).join(_label_lines(node, show_status=show_status)))}"
        ]
        fill = _STATUS_FILL.get(node.status) if show_status else None
        if node.role is Role.COMPOSITE:
            attributes += ["shape=box", 'style="filled"']
            fill = fill or _KIND_FILL.get(node.kind, "#eeeeee")
        elif node.role is Role.DECORATOR:
            attributes += ["shape=ellipse", 'style="filled"']
            fill = fill or "#f2f2f2"
        else:
            attributes += ["shape=box", 'style="rounded,filled"']
            fill = fill or "#ffffff"
        attributes.append(f'fillcolor="{fill}"')
        tooltip = "; ".join(f"{p.key}={_port_text(p.value)}" for p in node.ports)
        if node.feedback:
            tooltip = f"{node.feedback}; {tooltip}" if tooltip else node.feedback
        if tooltip:
            attributes.append(f"tooltip={_dot_string(tooltip)}")
        out.append(f"  {node.uid} [{', '.join(attributes)}];")
    for node in view.walk():
        out.extend(f"  {node.uid} -> {child.uid};" for child in node.children)
    out.append("}")
    return "\n".join(out) + "\n"


# svg -------------------------------------------------------------------------------------

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
        lines = _label_lines(node, show_status=show_status)
        box = _Box(node, lines, [build(c, depth + 1) for c in node.children], depth)
        box.height = len(lines) * _LINE_PX + 2 * _PAD_PX - 4.0
        box.width = max(len(line) for line in lines) * _CHAR_PX + 2 * _PAD_PX
        if node.role is Role.DECORATOR:
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
        fill = _STATUS_FILL.get(node.status) if show_status else None
        if node.role is Role.COMPOSITE:
            fill, radius = fill or _KIND_FILL.get(node.kind, "#eeeeee"), 2.0
        elif node.role is Role.DECORATOR:
            fill, radius = fill or "#f2f2f2", min(box.height / 2, _DECORATOR_RX)
        else:
            fill, radius = fill or "#ffffff", 6.0
        left = box.x - box.width / 2
        hover = [node.name, *(f"{p.key}: {_port_text(p.value)}" for p in node.ports)]
        if node.feedback:
            hover.append(node.feedback)
        out.append(f'<g id="{node.uid}" class="node {node.role.value}">')
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


# BehaviorTree.CPP v4 XML -----------------------------------------------------------------


def camel_case(node_type: str) -> str:
    """``sync_move`` -> ``SyncMove``: the BT.CPP node ID of a limbtree leaf."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", node_type))


def _port_text(value: Any) -> str:
    """A port value as BT.CPP text: numbers plain, lists of scalars ``;``-joined, else JSON."""
    if isinstance(value, list) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    ):
        return ";".join(_number(v) for v in value)
    if isinstance(value, Mapping | list):
        return json.dumps(_finite_json(value), separators=(",", ":"), ensure_ascii=False)
    return _number(value)


def _finite_json(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _finite_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return _number(value)
    return value


_FIXED: Final = MappingProxyType(
    {
        "inverter": "Inverter",
        "force_success": "ForceSuccess",
        "force_failure": "ForceFailure",
        "Success": "AlwaysSuccess",
        "Failure": "AlwaysFailure",
    }
)


def _port_type(vtype: ValueType | None, value: Any) -> str:
    if isinstance(vtype, Quantity):
        return "double"
    if isinstance(vtype, Flag):
        return "bool"
    if isinstance(vtype, Integer):
        return "int"
    if vtype is None and isinstance(value, bool):
        return "bool"
    if vtype is None and isinstance(value, int | float):
        return "double"
    return "std::string"


def _model_port(param: ParamSpec | None, port: Port | None, name: str) -> ET.Element:
    element = ET.Element("input_port", {"name": name})
    vtype = None if param is None else param.type
    element.set("type", _port_type(vtype, None if port is None else port.value))
    if param is not None:
        if param.default is not REQUIRED and param.default is not None:
            element.set("default", _port_text(_plain(param.default)))
        unit = vtype.key_unit() if vtype is not None else None
        element.text = param.doc + (f" [{unit.name}]" if unit is not None and unit.name else "")
    return element


def _comment(text: str) -> Any:
    """An XML comment (``--`` is not allowed inside one)."""
    return ET.Comment(" " + text.replace("--", "- -") + " ")


def btcpp_xml(view: NodeView, specs: Mapping[str, NodeSpec] = NODE_SPECS) -> str:
    """BehaviorTree.CPP v4 XML with a ``<TreeNodesModel>``, so the tree opens in Groot2.

    The mapping from py_trees is the table of this module's docstring.
    """
    document = ET.Element("root", {"BTCPP_format": "4", "main_tree_to_execute": "MainTree"})
    tree = ET.SubElement(document, "BehaviorTree", {"ID": "MainTree"})
    models: dict[str, tuple[str, dict[str, ET.Element]]] = {}

    def declare(category: str, node_id: str, node: NodeView) -> None:
        _, ports = models.setdefault(node_id, (category, {}))
        spec = specs.get(node.kind)
        if spec is not None:
            for param in spec.params:
                ports.setdefault(param.key, _model_port(param, None, param.key))
        for port in node.ports:
            ports.setdefault(port.key, _model_port(port.spec, port, port.key))

    def emit(node: NodeView, parent: ET.Element) -> None:
        attributes = {"name": node.name}
        settings = node.settings
        tag = _FIXED.get(node.kind)
        if node.kind in ("sequence", "fallback"):
            reactive = not settings.get("memory", True)
            tag = {"sequence": "Sequence", "fallback": "Fallback"}[node.kind]
            tag = "Reactive" + tag if reactive else tag
        elif node.kind == "parallel":
            tag = "Parallel"
            policy = settings.get("policy", "all")
            selected = tuple(settings.get("selected", ()))
            success = {"all": -1, "one": 1}.get(str(policy), len(selected))
            attributes.update(success_count=str(success), failure_count="1")
            if policy == "selected":
                names = ", ".join(selected)
                parent.append(_comment(f"{node.name}: succeeds once these succeed: {names}"))
            if policy != "one" and not settings.get("synchronise", True):
                parent.append(
                    _comment(f"{node.name}: py_trees re-ticks children that already succeeded")
                )
        elif node.kind == "repeat":
            tag = "Repeat"
            attributes["num_cycles"] = str(settings.get("count", -1))
        elif node.kind == "retry":
            tag = "RetryUntilSuccessful"
            attributes["num_attempts"] = str(settings.get("count", -1))
        elif node.kind == "timeout":
            tag = "Timeout"
            attributes["msec"] = str(round(float(settings.get("duration_s", 0.0)) * 1000.0))
        if tag is None:
            tag = {Role.COMPOSITE: "Control", Role.DECORATOR: "Decorator", Role.LEAF: "Action"}[
                node.role
            ]
            node_id = camel_case(node.kind)
            declare(tag, node_id, node)
            attributes = {"ID": node_id, **attributes}
            attributes.update((p.key, _port_text(p.value)) for p in node.ports)
        element = ET.SubElement(parent, tag, attributes)
        for child in node.children:
            emit(child, element)

    emit(view, tree)
    model = ET.SubElement(document, "TreeNodesModel")
    for node_id, (category, ports) in sorted(models.items()):
        entry = ET.SubElement(model, category, {"ID": node_id})
        entry.extend(ports.values())
    ET.indent(document, space="  ")
    body = ET.tostring(document, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
