"""Node types of mission trees: one declaration each, gathered in an immutable registry.

A :class:`NodeSpec` declares a node type once: its name, kind, typed parameters (units and
defaults written once, :class:`~limbtree.trees.mission.values.ParamSpec`), documentation,
how to build its behaviour, the parameters naming the limbs it commands, and what the exports
need (:class:`NodeExport`). A :class:`NodeRegistry` holds the declarations; the loader,
``limbtree check``, the tree builder, the exports, ``limbtree nodes`` and ``docs/nodes.md``
all read one. The built-in node types and the ``limbtree.nodes`` entry points are gathered
by :func:`limbtree.trees.nodes.default_registry`; this module knows no behaviour.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from limbtree.errors import LimbtreeError
from limbtree.trees.mission.model import NodeModel, PlantKind
from limbtree.trees.mission.values import LimbList, LimbName, ParamSpec

if TYPE_CHECKING:
    import py_trees

    from limbtree.trees.context import MissionContext

    #: Builds a node's behaviour from its model (validated parameters in SI), its built
    #: children, and the mission context (limbs, clock, operator).
    NodeBuild = Callable[
        [NodeModel, tuple[py_trees.behaviour.Behaviour, ...], MissionContext],
        py_trees.behaviour.Behaviour,
    ]


class NodeKind(StrEnum):
    """What a node does with children."""

    COMPOSITE = "composite"
    DECORATOR = "decorator"
    LEAF = "leaf"


#: A node type's own check over its read parameters and children: returns the parameters
#: (possibly completed), and reports problems through ``report(key, message)``.
NodeCheck = Callable[
    [Mapping[str, Any], tuple[NodeModel, ...], Callable[[str, str], None]], Mapping[str, Any]
]

#: The names mission files reserve in a node's body.
RESERVED_KEYS: Final = frozenset({"name", "child", "children"})

#: The symbol of each kind in the text and drawn exports, unless a node type gives its own.
KIND_SYMBOL: Final[Mapping[NodeKind, str]] = MappingProxyType(
    {NodeKind.COMPOSITE: "□", NodeKind.DECORATOR: "◇", NodeKind.LEAF: ""}
)

#: The BehaviorTree.CPP category of a custom node of each kind (``<Action ID=...>``).
KIND_CATEGORY: Final[Mapping[NodeKind, str]] = MappingProxyType(
    {NodeKind.COMPOSITE: "Control", NodeKind.DECORATOR: "Decorator", NodeKind.LEAF: "Action"}
)


@dataclass(frozen=True)
class BtElement:
    """How one node is written in BehaviorTree.CPP v4 XML when BT.CPP has it built in.

    Attributes:
        tag: the BT.CPP element (``Sequence``, ``Repeat``, ``RetryUntilSuccessful``, ...).
        attributes: its attributes besides ``name`` (``num_cycles="3"``), as text.
        comments: XML comments written before the element (what BT.CPP cannot say).
    """

    tag: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    comments: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeExport:
    """What the tree exports (``limbtree tree``, the live view) need of a node type.

    Attributes:
        symbol: its mark in the text and drawn trees (``→`` sequence); None: its kind's.
        detail: one-line settings from its model parameters (``×3``, ``all succeed``);
            None: a leaf shows its parameter summary, others nothing.
        fill: the DOT/SVG fill colour of its box (``#dbe7f5``); None: its kind's.
        headline: parameters the summary shows even at their default (``p_e``).
        category: its BehaviorTree.CPP category as a custom node (``Action``, ``Condition``,
            ``Control``, ``Decorator``); None: its kind's.
        btcpp: the BT.CPP built-in node it maps to, from its model parameters and display
            name; None: a custom node ``<Category ID="CamelCase" ports.../>`` declared in
            the ``<TreeNodesModel>``.
        recognise: for trees built by hand (no ``node_type`` on the behaviour): the model
            parameters of a behaviour of this type, or None when it is not one.
    """

    symbol: str | None = None
    detail: Callable[[Mapping[str, Any]], str] | None = None
    fill: str | None = None
    headline: tuple[str, ...] = ()
    category: str | None = None
    btcpp: Callable[[Mapping[str, Any], str], BtElement] | None = None
    recognise: Callable[[Any], Mapping[str, Any] | None] | None = None


@dataclass(frozen=True)
class Concurrency:
    """When a composite runs children together: one ticked while another still runs.

    ``parallel`` always does; a ``sequence`` or ``fallback`` without memory re-ticks its
    first children while a later one runs. Then no two of its children may command one
    limb (``limbtree check`` refuses it, :mod:`~limbtree.trees.mission.ownership`).

    Attributes:
        when: whether a node with these model parameters does.
        doc: when, in words, for the reference (``always``, ``memory false``).
    """

    when: Callable[[Mapping[str, Any]], bool]
    doc: str


#: A composite that always ticks its children together (``parallel``).
ALWAYS: Final = Concurrency(lambda params: True, "always")


@dataclass(frozen=True)
class NodeSpec:
    """The one declaration of a node type of mission trees.

    Attributes:
        type: the name in mission files (``sync_move``).
        kind: composite (``children: [...]``), decorator (``child: ...``) or leaf.
        params: its parameters, in the order of the reference.
        children: the least and most number of children (None: no limit).
        doc: one line for the reference.
        check: checks across parameters and children, or None.
        build: how to build its behaviour; None for a type that only validates.
        commands: the parameters naming the limbs it commands (``limbs`` of ``sync_move``);
            empty when it commands none. Reading a limb is not commanding it.
        aliases: other names mission files may use for it (``selector``).
        export: what the exports need.
        concurrent: when it ticks several children in one tick, one while another still
            runs (:data:`ALWAYS` for ``parallel``); None: never. Then no two of its children
            may command one limb.
        plants: the plants whose limbs it can command, for a simulated robot (``sync_move``
            sends end-effector poses, which only the ``kinematic`` plant takes; ``walk_step``
            latches standard interfaces, which only the ``mujoco`` plant has); empty: any.
            ``limbtree check`` refuses it on a limb of another plant.
        plants_why: why it needs them, completing "it ..." (``"sends end-effector
            poses"``); required with ``plants``.
    """

    type: str
    kind: NodeKind
    params: tuple[ParamSpec, ...]
    children: tuple[int, int | None]
    doc: str = ""
    check: NodeCheck | None = None
    build: NodeBuild | None = None
    commands: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    export: NodeExport = field(default_factory=NodeExport)
    concurrent: Concurrency | None = None
    plants: tuple[PlantKind, ...] = ()
    plants_why: str = ""

    def __post_init__(self) -> None:
        if bool(self.plants) != bool(self.plants_why):
            raise ValueError(f"{self.type}: give plants and plants_why together")
        low, high = self.children
        expected = {NodeKind.LEAF: (0, 0), NodeKind.DECORATOR: (1, 1)}.get(self.kind)
        if expected is not None and (low, high) != expected:
            raise ValueError(f"a {self.kind} takes {expected} children, not {self.children}")
        if self.kind is NodeKind.COMPOSITE and (low < 0 or (high is not None and high < low)):
            raise ValueError(f"bad children range {self.children} for {self.type}")
        if self.concurrent is not None and self.kind is not NodeKind.COMPOSITE:
            raise ValueError(f"{self.type}: only a composite ticks several children at once")
        keys = [p.key for p in self.params]
        if len(set(keys)) != len(keys) or RESERVED_KEYS & set(keys):
            raise ValueError(f"{self.type}: parameter keys must be distinct and not reserved")
        unknown = [
            name for name in self.export.headline if name not in {p.name for p in self.params}
        ]
        if unknown:
            raise ValueError(f"{self.type}: export.headline names no parameter: {unknown}")
        limb_params = [p.name for p in self.params if isinstance(p.type, LimbList | LimbName)]
        for name in self.commands:
            if name not in limb_params:
                valid = ", ".join(limb_params) or "none (it has no limb parameter)"
                raise ValueError(
                    f"{self.type}: commands names {name!r}, which is not one of its limb "
                    f"parameters; valid: {valid}"
                )

    @property
    def child_key(self) -> str | None:
        """The key its children go under: ``children``, ``child``, or None for a leaf."""
        return {NodeKind.COMPOSITE: "children", NodeKind.DECORATOR: "child"}.get(self.kind)

    @property
    def symbol(self) -> str:
        """Its mark in the text and drawn trees."""
        symbol = self.export.symbol
        return KIND_SYMBOL[self.kind] if symbol is None else symbol

    @property
    def category(self) -> str:
        """Its BehaviorTree.CPP category as a custom node."""
        return self.export.category or KIND_CATEGORY[self.kind]

    def param(self, name: str) -> ParamSpec:
        """The parameter with model name ``name``.

        Raises:
            KeyError: when the node type has no such parameter.
        """
        for spec in self.params:
            if spec.name == name:
                return spec
        raise KeyError(f"{self.type} has no parameter {name!r}")

    def ticks_together(self, params: Mapping[str, Any]) -> bool:
        """Whether a node with model parameters ``params`` runs children together.

        See :class:`Concurrency`: one child ticked while another still runs.
        """
        return self.concurrent is not None and self.concurrent.when(params)

    def commanded_limbs(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """The limbs a node of this type with model parameters ``params`` commands."""
        return _limbs_of(params, self.commands)

    def named_limbs(self, params: Mapping[str, Any]) -> tuple[str, ...]:
        """Every limb a node of this type names in ``params``, commanded or only read.

        The limbs of its limb parameters (:class:`LimbName`, :class:`LimbList`), in order:
        those ``grip_guard`` reads, for instance, commanding none.
        """
        names = tuple(p.name for p in self.params if isinstance(p.type, LimbList | LimbName))
        return _limbs_of(params, names)


def _limbs_of(params: Mapping[str, Any], names: Sequence[str]) -> tuple[str, ...]:
    """The limbs the parameters ``names`` of ``params`` hold (a name, or a list), once each."""
    limbs: list[str] = []
    for name in names:
        value = params.get(name)
        if isinstance(value, str):
            limbs.append(value)
        elif isinstance(value, Sequence):
            limbs.extend(str(limb) for limb in value)
    return tuple(dict.fromkeys(limbs))


class NodeRegistryError(LimbtreeError):
    """Node type declarations that cannot form one registry.

    A name declared twice, or a broken ``limbtree.nodes`` plug-in; the message names where
    the declarations came from.
    """


@dataclass(frozen=True)
class NodeSource:
    """Where node type declarations came from, for messages.

    Attributes:
        label: ``limbtree`` for the built-in types, else ``entry point NAME of package PKG``.
    """

    label: str


#: The source of limbtree's own node types.
BUILT_IN: Final = NodeSource("limbtree (built in)")
#: The source of node types added in code (:meth:`NodeRegistry.with_types`).
IN_CODE: Final = NodeSource("declared in code (NodeRegistry.with_types)")


class NodeRegistry(Mapping[str, NodeSpec]):
    """An immutable set of node types: type name -> :class:`NodeSpec`, plus their aliases.

    Build one with :meth:`of` (or :meth:`with_types` from another); nothing changes it
    afterwards. Iteration follows declaration order.
    """

    __slots__ = ("_aliases", "_sources", "_specs")

    def __init__(
        self,
        specs: Mapping[str, NodeSpec],
        aliases: Mapping[str, str],
        sources: Mapping[str, NodeSource],
    ) -> None:
        self._specs: Mapping[str, NodeSpec] = MappingProxyType(dict(specs))
        self._aliases: Mapping[str, str] = MappingProxyType(dict(aliases))
        self._sources: Mapping[str, NodeSource] = MappingProxyType(dict(sources))

    @classmethod
    def of(cls, specs: Sequence[NodeSpec], source: NodeSource = BUILT_IN) -> NodeRegistry:
        """A registry of ``specs``, all from ``source``.

        Raises:
            NodeRegistryError: when two declarations share a name or an alias.
        """
        return cls({}, {}, {}).with_types(*specs, source=source)

    def with_types(self, *specs: NodeSpec, source: NodeSource = IN_CODE) -> NodeRegistry:
        """A new registry: this one plus ``specs``.

        Raises:
            NodeRegistryError: when a name or alias of ``specs`` is taken already, naming
                both declarations' sources.
        """
        merged = dict(self._specs)
        aliases = dict(self._aliases)
        sources = dict(self._sources)
        for spec in specs:
            if not isinstance(spec, NodeSpec):
                raise NodeRegistryError(
                    f"{source.label}: expected a NodeSpec (limbtree.trees.nodes.NodeSpec), "
                    f"got {type(spec).__name__}"
                )
            for name in (spec.type, *spec.aliases):
                taken = aliases.get(name, name if name in merged else None)
                if taken is not None:
                    raise NodeRegistryError(
                        f"{source.label} declares node type {name!r}, which "
                        f"{sources[taken].label} declares already; rename one of them"
                    )
                if name != spec.type:
                    aliases[name] = spec.type
            merged[spec.type] = spec
            sources[spec.type] = source
        return NodeRegistry(merged, aliases, sources)

    def __getitem__(self, name: str) -> NodeSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"NodeRegistry({', '.join(self._specs)})"

    @property
    def aliases(self) -> Mapping[str, str]:
        """Other names for node types: alias -> type."""
        return self._aliases

    def resolve(self, name: str) -> NodeSpec | None:
        """The node type called ``name`` or aliased so, or None."""
        return self._specs.get(self._aliases.get(name, name))

    def source(self, name: str) -> NodeSource:
        """Where node type ``name`` was declared.

        Raises:
            KeyError: for an unknown node type.
        """
        return self._sources[name]

    def names(self) -> tuple[str, ...]:
        """Every name a mission file may use: the types, then the aliases."""
        return (*self._specs, *self._aliases)
