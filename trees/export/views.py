"""A built tree as the renderers see it: immutable :class:`NodeView` records.

Each node is found in the node-type registry: by the ``node_type`` and ``node_params`` the
builder put on every behaviour, or, for a tree built by hand, by the declaration that
recognises its class. Its view holds its id (the path of child indices from the root: ``0``,
``0.1``, ``0.1.2``), kind, type, symbol, settings and, for a leaf, its parameters back in the
mission file's units (``p_e_mm: 20``); the renderers read only those records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import py_trees

from limbtree.trees.export.values import same, summary, to_file_units
from limbtree.trees.mission.nodes import KIND_SYMBOL, NodeKind, NodeRegistry, NodeSpec
from limbtree.trees.mission.values import Integer, ParamSpec

Status = py_trees.common.Status

#: One character per status, for the live view.
STATUS_GLYPH: Final[Mapping[Any, str]] = MappingProxyType(
    {Status.SUCCESS: "✓", Status.FAILURE: "✕", Status.RUNNING: "*", Status.INVALID: "-"}
)

#: The fill of a node's box when its node type gives none.
KIND_FILL: Final[Mapping[NodeKind, str]] = MappingProxyType(
    {NodeKind.COMPOSITE: "#eeeeee", NodeKind.DECORATOR: "#f2f2f2", NodeKind.LEAF: "#ffffff"}
)

#: The id of a tree's root; a child's id is its parent's, a dot and its index.
ROOT_ID: Final = "0"


def child_id(parent: str, index: int) -> str:
    """The id of the ``index``-th child of node ``parent`` (``0.1`` -> ``0.1.2``)."""
    return f"{parent}.{index}"


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
        id: the path of child indices from the root (``0`` the root, ``0.2.0`` ...).
        name: the node's display name.
        kind: composite, decorator or leaf.
        type: its node type (``sequence``, ``repeat``, ``sync_move``), or the class name of
            a behaviour no node type recognises.
        symbol: ``→`` sequence, ``?`` fallback, ``⇉`` parallel, ``◇`` decorator, or empty.
        detail: settings as text (``reactive``, ``×3``, ``all succeed``); for a leaf its
            parameter summary.
        params: its model parameters (SI), as built.
        ports: a leaf's parameters in file units, in the registry's order.
        spec: its node type's declaration, or None.
        status: the node's last status.
        feedback: its feedback message.
        children: the children, in order.
        subtree: the mission's subtree this node is the root of a use of (``square``), from
            the ``node_subtree`` the builder puts on such a node; None elsewhere.
        bound: port key -> the parameter of the subtree the node is written in that is its
            whole value (``node_bound``, :attr:`~limbtree.trees.mission.model.NodeModel.bound`).
        passed: on a subtree use's root: the used subtree's parameter -> the enclosing
            subtree's that is its whole ``with`` value (``node_passed``).
    """

    id: str
    name: str
    kind: NodeKind
    type: str
    symbol: str = ""
    detail: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    ports: tuple[Port, ...] = ()
    spec: NodeSpec | None = None
    status: Any = Status.INVALID
    feedback: str = ""
    children: tuple[NodeView, ...] = ()
    subtree: str | None = None
    bound: Mapping[str, str] = field(default_factory=dict)
    passed: Mapping[str, str] = field(default_factory=dict)

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
        """``→ sequence``, ``◇ repeat ×3``, ``sync_move``: the type with its symbol."""
        if self.kind is NodeKind.LEAF:
            return self.type
        text = f"{self.symbol} {self.type}" if self.symbol else self.type
        if self.kind is NodeKind.DECORATOR and self.detail:
            return f"{text} {self.detail}"
        if self.detail:
            return f"{text} ({self.detail})"
        return text

    @property
    def named(self) -> bool:
        """Whether the name says more than the type (``Sync move`` for ``sync_move`` does not)."""
        return _slug(self.name) != _slug(self.type)

    @property
    def fill(self) -> str:
        """The fill colour of its box in DOT and SVG."""
        own = None if self.spec is None else self.spec.export.fill
        return own or KIND_FILL[self.kind]


def identify(
    behaviour: py_trees.behaviour.Behaviour, registry: NodeRegistry
) -> tuple[NodeSpec | None, Mapping[str, Any]]:
    """A behaviour's node type and model parameters.

    The builder tags every behaviour with ``node_type`` and ``node_params``; a leaf built by
    hand has its class's ``node_type`` and its ``params``; any other behaviour is offered to
    each declaration's ``recognise``.

    Returns:
        The declaration (None when the registry has none for it) and the parameters.
    """
    node_type = getattr(behaviour, "node_type", None)
    if isinstance(node_type, str) and node_type:
        params = getattr(behaviour, "node_params", None)
        if params is None:
            params = getattr(behaviour, "params", None)
        return registry.resolve(node_type), params if isinstance(params, Mapping) else {}
    for spec in registry.values():
        recognise = spec.export.recognise
        found = None if recognise is None else recognise(behaviour)
        if found is not None:
            return spec, found
    return None, {}


def _kind_of(behaviour: py_trees.behaviour.Behaviour) -> NodeKind:
    if isinstance(behaviour, py_trees.composites.Composite):
        return NodeKind.COMPOSITE
    if isinstance(behaviour, py_trees.decorators.Decorator):
        return NodeKind.DECORATOR
    return NodeKind.LEAF


def describe_tree(
    root: py_trees.behaviour.Behaviour, registry: NodeRegistry | None = None
) -> NodeView:
    """The :class:`NodeView` of ``root`` and everything below it.

    Args:
        root: the tree's root behaviour.
        registry: the node types; None: :func:`limbtree.trees.nodes.default_registry`.

    Node ids are the behaviours' ``node_id`` when set (the runner's identity pass), else
    the path of child indices from ``root`` (``0``, ``0.1``, ...): the same rule.
    """
    if registry is None:
        from limbtree.trees.nodes import default_registry

        registry = default_registry()
    types = registry

    def visit(behaviour: py_trees.behaviour.Behaviour, path: str) -> NodeView:
        # The runner's identity pass (limbtree.trees.identity) sets node_id by the same rule;
        # a tree built by hand has none, and gets the path computed here.
        assigned = getattr(behaviour, "node_id", None)
        node_id = assigned if isinstance(assigned, str) and assigned else path
        children = tuple(
            visit(child, child_id(node_id, index)) for index, child in enumerate(behaviour.children)
        )
        spec, params = identify(behaviour, types)
        kind = _kind_of(behaviour) if spec is None else spec.kind
        if spec is not None:
            node_type = spec.type
        else:
            node_type = str(getattr(behaviour, "node_type", "") or type(behaviour).__name__)
        ports = _ports(params, spec) if kind is NodeKind.LEAF else ()
        subtree = getattr(behaviour, "node_subtree", None)
        detail_of = None if spec is None else spec.export.detail
        if detail_of is not None:
            detail = detail_of(params)
        elif kind is NodeKind.LEAF:
            detail = " ".join(p.summary for p in ports if p.shown)
        else:
            detail = ""
        return NodeView(
            id=node_id,
            name=str(behaviour.name),
            kind=kind,
            type=node_type,
            symbol=KIND_SYMBOL[kind] if spec is None else spec.symbol,
            detail=detail,
            params=MappingProxyType(dict(params)),
            ports=ports,
            spec=spec,
            status=behaviour.status,
            feedback=str(behaviour.feedback_message or ""),
            children=children,
            subtree=subtree if isinstance(subtree, str) and subtree else None,
            bound=_names(getattr(behaviour, "node_bound", None)),
            passed=_names(getattr(behaviour, "node_passed", None)),
        )

    return visit(root, ROOT_ID)


def _ports(params: Mapping[str, Any], spec: NodeSpec | None) -> tuple[Port, ...]:
    """A leaf's parameters in file units: the registry's order, then any it does not know."""
    known = {} if spec is None else {p.name: p for p in spec.params}
    headline = () if spec is None else spec.export.headline
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
            or name in headline
            or not same(value, param.default_value())
        )
        ports.append(
            Port(name, key, file_value, summary(name, vtype, unit, file_value), shown, param)
        )
    return tuple(ports)


def _names(value: Any) -> Mapping[str, str]:
    """A behaviour's ``node_bound`` or ``node_passed``, read-only; empty when it has none."""
    if not isinstance(value, Mapping):
        return MappingProxyType({})
    return MappingProxyType({str(k): str(v) for k, v in value.items()})


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
