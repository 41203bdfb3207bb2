"""Load a mission file into a validated :class:`Mission`, or say everything wrong with it.

The loader composes the YAML (so every value keeps its line and column), reads the
parameters and ``--set`` overrides, the included files' subtrees, the robots, limbs and world
(:mod:`~limbtree.trees.mission.declarations`), the faults and the tree, and collects every
problem it finds on the way rather than stopping at the first. Subtree uses are inlined with
their parameters substituted. It builds no behaviour and loads no robot description: the
robots' limbs are given to it (:func:`load_mission`'s ``robots``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

import numpy as np
import yaml

from limbtree.transport.schema import MAX_STEP_SPAN_S
from limbtree.trees.mission.declarations import CAPTURE_KEYS, Declarations
from limbtree.trees.mission.errors import Location, MissionError, Problem, merge_uses
from limbtree.trees.mission.faults import read_faults, read_random_faults
from limbtree.trees.mission.model import (
    Clock,
    FaultDecl,
    Mission,
    NodeModel,
)
from limbtree.trees.mission.nodes import NodeKind, NodeRegistry, NodeSpec
from limbtree.trees.mission.ownership import limb_conflicts
from limbtree.trees.mission.source import (
    INVALID,
    NAME,
    NULL,
    STR,
    Binding,
    Entry,
    Item,
    Reader,
    Scope,
    compose,
    compose_text,
    describe,
    did_you_mean,
    reference,
    refused,
    unknown,
)
from limbtree.trees.mission.units import HZ, MS, NONE, G, S
from limbtree.trees.mission.values import (
    REQUIRED,
    SIM_AGENT,
    Choice,
    ParamSpec,
    Quantity,
    Text,
    ValueContext,
    read_fields,
    unknown_key,
    value_places,
)

#: Top-level keys read by :func:`read_fields`.
HEADER_SPECS: Final = (
    ParamSpec("mission", Text(), REQUIRED, "the mission's name"),
    ParamSpec("description", Text(), None, "what it does"),
    ParamSpec("clock", Choice(tuple(c.value for c in Clock)), "sim", "sim or real"),
    ParamSpec(
        "rate",
        Quantity(HZ, low=1.0 / MAX_STEP_SPAN_S),
        100.0,
        f"tick rate (a tick is at most {MAX_STEP_SPAN_S:g} s: an agent's step advances no more)",
    ),
    ParamSpec(
        "gravity",
        Quantity(G, low=0),
        0.0,
        "mujoco plants: gravity along the world's -z (seed 003: 0, on orbit)",
    ),
    ParamSpec(
        "timestep",
        Quantity(MS, low=0, low_open=True, high=10),
        1.0,
        "mujoco plants: integration step and torque-loop period (seed 003: 1 ms)",
    ),
    ParamSpec(
        "max_tick",
        Quantity(S, low=0, low_open=True),
        5.0,
        "hard limit on one tick of the tree, in wall time: a longer tick aborts the run",
    ),
)
#: Top-level keys the loader reads itself.
SECTION_KEYS: Final = (
    "parameters",
    "robots",
    "limbs",
    "faults",
    "random_faults",
    "subtrees",
    "include",
    "world",
    "tree",
)
#: Every top-level key of a mission file, in the order of the reference.
TOP_KEYS: Final = tuple(spec.key for spec in HEADER_SPECS) + SECTION_KEYS
_HEADER_KEYS: Final = frozenset(spec.key for spec in HEADER_SPECS)
#: The keys of a file brought in by ``include``: a library of subtrees.
LIBRARY_KEYS: Final = ("description", "include", "subtrees")

_SUBTREE_KEYS: Final = ("parameters", "tree", "description")
_USE_KEYS: Final = ("subtree", "with", "name")
_PARAM_LONG_KEYS: Final = ("default", "description")
#: Deeper than this, a tree is taken for a recursive YAML alias.
_MAX_DEPTH: Final = 200


def _is_null(node: yaml.Node | None) -> bool:
    """Whether ``node`` is YAML's null (``null``, ``~`` or nothing); False for None."""
    return isinstance(node, yaml.ScalarNode) and node.tag == NULL


@dataclass(frozen=True)
class SubtreeDef:
    """A subtree as declared, read at each use.

    Attributes:
        name: its name.
        params: parameter name -> default (None: required), in declaration order.
        tree: its tree, as composed YAML.
        location: where it is declared.
    """

    name: str
    params: Mapping[str, Binding | None]
    tree: yaml.Node
    location: Location


def _own_reference(item: Item, node: yaml.Node, stack: tuple[str, ...]) -> str | None:
    """``NAME`` for a value written exactly ``$NAME`` of the innermost subtree being expanded.

    Args:
        item: the value's parent, read in the scope ``$NAME`` refers to.
        node: the value as written.
        stack: the subtrees being expanded, outermost first.
    """
    name = reference(node)
    if name is None or not stack or item.scope.owner != f"subtree {stack[-1]}":
        return None
    return name if name in item.scope.bindings else None


def check_mission(
    path: str | os.PathLike[str],
    *,
    robots: Mapping[str, Sequence[str]],
    overrides: Mapping[str, str] | None = None,
    seed: int = 0,
    registry: NodeRegistry | None = None,
    modules: Sequence[str] | None = None,
) -> list[Problem]:
    """Every problem of a mission file, in file order; empty when it is valid.

    Args: as :func:`load_mission`.

    Returns:
        The problems, each with its ``file:line:column``.
    """
    return _Loader(path, robots, overrides or {}, seed, registry, modules).load()[1]


def load_mission(
    path: str | os.PathLike[str],
    *,
    robots: Mapping[str, Sequence[str]],
    overrides: Mapping[str, str] | None = None,
    seed: int = 0,
    registry: NodeRegistry | None = None,
    modules: Sequence[str] | None = None,
) -> Mission:
    """Read and validate a mission file.

    Args:
        path: the mission file; messages name it as given.
        robots: robot name -> the names of its limbs (kinematic chains), first the
            default; e.g. ``{r.name: r.limb_names for r in limbtree.robots.load_robots()}``.
        overrides: ``--set NAME=VALUE`` pairs: parameter name -> value, read as YAML.
        seed: the seed ``random_faults`` are drawn with (``numpy.random.default_rng``).
        registry: the node types; None: :func:`limbtree.trees.nodes.default_registry`.
        modules: the module names ``world`` may place (``limbtree.robots``); None: any.

    Returns:
        The validated mission.

    Raises:
        MissionError: listing every problem found, each as ``file:line:column: message``.
    """
    mission, problems = _Loader(path, robots, overrides or {}, seed, registry, modules).load()
    if problems or mission is None:
        raise MissionError(problems)
    return mission


def _display_name(node_type: str) -> str:
    """The default display name of a node: ``sync_move`` -> ``Sync move``."""
    return node_type.replace("_", " ").capitalize()


def _note(text: str) -> str:
    return f"({text})"


def _long_form(node: yaml.Node) -> bool:
    """Whether a parameter's declaration is the long form: a map with a long-form key.

    Any other map is the default itself (a pose: ``{translation_mm: [0, 0, 50]}``).
    """
    return isinstance(node, yaml.MappingNode) and any(
        isinstance(key, yaml.ScalarNode) and key.value in _PARAM_LONG_KEYS for key, _ in node.value
    )


def _unknown_declaration_key(key: str, name: str) -> str:
    """``unknown key descr in the declaration of parameter b_mm; did you mean ...``."""
    hint = did_you_mean(key, _PARAM_LONG_KEYS)
    guess = f"did you mean {hint}? " if hint is not None else ""
    return (
        f"unknown key {key} in the declaration of parameter {name}; "
        f"{guess}its keys are {', '.join(_PARAM_LONG_KEYS)}"
    )


class _Loader:
    """One load of one mission file (all its state lives here, none globally)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        robots: Mapping[str, Sequence[str]],
        overrides: Mapping[str, str],
        seed: int,
        registry: NodeRegistry | None,
        modules: Sequence[str] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.overrides = overrides
        self.seed = seed
        if registry is None:
            from limbtree.trees.nodes import default_registry  # builds behaviours: on demand

            registry = default_registry()
        self.registry = registry
        self.reader = Reader()
        self.sources: list[str] = []
        self.loaded: set[Path] = set()
        self.subtrees: dict[str, SubtreeDef] = {}
        #: Whether an included file could not be read (reported): its subtrees are unknown,
        #: so uses of unknown subtrees are not reported again.
        self.include_failed = False
        self.declarations = Declarations(self.reader, robots, modules)

    # The whole file ---------------------------------------------------------------------

    def load(self) -> tuple[Mission | None, list[Problem]]:
        """Read everything; the mission when there was no problem, and the problems."""
        mission = self._mission()
        return (None if self.reader.problems else mission), self._sorted_problems()

    def _sorted_problems(self) -> list[Problem]:
        order = {name: i for i, name in enumerate(self.sources)}
        unique = merge_uses(dict.fromkeys(self.reader.problems))
        return sorted(
            unique,
            key=lambda p: (
                -1 if p.location.on_command_line else order.get(p.location.file, len(order)),
                p.location.line,
                p.location.column,
            ),
        )

    def _mission(self) -> Mission | None:
        reader = self.reader
        ok, root = compose(self.path, reader)
        if not ok:
            return None
        self._mark_loaded(self.path)
        if root is None:
            reader.report(
                Location(self.path, 1, 1), "the mission file is empty; it needs mission and tree"
            )
            return None
        bare = Item(root, Location.of(root), Scope())
        entries = reader.entries(bare, "a mission file (keys mission, tree, ...)")
        if entries is None:
            return None
        sections = self._sections(entries)
        keys = {entry.key for entry in entries}
        if "subtrees" in sections and not keys & {"mission", "tree"}:
            # A subtree library (missions/subtrees/*.yaml) is not a mission: say what it is.
            reader.report(
                bare.at,
                "this file defines subtrees but no mission and no tree: it is a library for "
                "missions to include (include: [subtrees/FILE.yaml]); give limbtree a mission "
                "file that includes it and uses its subtrees (subtree: NAME)",
            )
            return None
        scope, values = self._parameters(bare, sections.get("parameters"))
        top = replace(bare, scope=scope)
        self._library(top, sections, (Path(self.path).resolve(),))
        ctx = ValueContext(reader, (), base_dir=os.path.dirname(self.path))
        header = read_fields(
            ctx,
            top,
            [e for e in entries if e.key in _HEADER_KEYS],
            HEADER_SPECS,
            what="the mission file",
            at=bare.at,
        )
        robots = self.declarations.read_robots(ctx, top, sections.get("robots"))
        lone = self.declarations.read_limbs(ctx, top, sections.get("limbs"))
        limbs = self.declarations.join(robots, lone)
        ctx = replace(
            ctx, declared_limbs=self.declarations.declared, limb_aliases=self.declarations.aliases
        )
        faults = self._faults(ctx, top, sections.get("faults"), sections.get("random_faults"))
        before_world = len(reader.problems)
        world = self.declarations.read_world(ctx, top, sections.get("world"))
        world_ok = len(reader.problems) == before_world
        tree = sections.get("tree")
        root_node: NodeModel | None = None
        if tree is None:
            reader.report(bare.at, "the mission file needs tree: the behaviour tree to run")
        else:
            item = reader.child(top, tree.node)
            root_node = None if item is None else self._node(ctx, item, (), 0)
        if limbs is not None and not world and world_ok:
            for limb in limbs:
                for option, key in CAPTURE_KEYS:
                    if option in limb.sim and limb.agent == SIM_AGENT:
                        reader.report(
                            limb.location,
                            f"limb {limb.name}: {key} sets the noise of the simulated world's "
                            "motion capture, and this mission has no world: add the modules "
                            "to grasp under world, or drop the key",
                        )
        if root_node is not None:
            # One commander per limb, in a valid tree: subtrees inlined, parameters resolved.
            for conflict in limb_conflicts(root_node, self.registry):
                reader.report(conflict.location, conflict.message())
        if reader.problems or root_node is None or limbs is None or faults is None:
            return None
        return Mission(
            name=header["mission"],
            description=header["description"] or "",
            path=Path(self.path),
            clock=Clock(header["clock"]),
            rate_hz=header["rate"],
            parameters=values,
            limbs=limbs,
            faults=faults,
            root=root_node,
            sources=tuple(Path(source) for source in self.sources),
            world=world,
            robots=self.declarations.plants(robots or (), limbs),
            max_tick_s=header["max_tick"],
            gravity_m_s2=header["gravity"],
            timestep_s=header["timestep"],
            terrain=self.declarations.terrain,
            contact=self.declarations.contact,
        )

    def _sections(self, entries: Sequence[Entry]) -> dict[str, Entry]:
        """The section entries by key; unknown top-level keys reported."""
        valid = [(spec.key, spec.type.key_unit()) for spec in HEADER_SPECS]
        valid += [(key, NONE) for key in SECTION_KEYS]
        sections: dict[str, Entry] = {}
        for entry in entries:
            if entry.key in SECTION_KEYS:
                sections[entry.key] = entry
            elif entry.key not in TOP_KEYS:
                self.reader.report(entry.at, unknown_key(entry.key, valid))
        return sections

    def _mark_loaded(self, path: str) -> None:
        self.sources.append(path)
        self.loaded.add(Path(path).resolve())

    # Parameters -------------------------------------------------------------------------

    def _parameters(self, top: Item, entry: Entry | None) -> tuple[Scope, Mapping[str, Any]]:
        """The mission's parameters with the overrides applied, and their final values."""
        reader = self.reader
        declared: dict[str, Binding | None] = {}
        if entry is not None:
            item = reader.child(top, entry.node)
            if item is not None and not (_is_null(item.node)):
                declared = self._declarations(item, "the mission", allow_required=False)
        bindings = {name: b for name, b in declared.items() if b is not None}
        for given, text in self.overrides.items():
            name = given.strip()  # (--set 'side_mm = 100': the name is side_mm)
            # (problems found later in the value, a waypoint out of reach, are also placed
            # here: the option as typed says which override to change)
            at = Location.command_line(f"--set {name}={text}")
            if name not in bindings:
                reader.report(at, unknown("parameter", name, list(bindings), "declared parameters"))
                continue
            node = compose_text(text, reader, at)
            if _is_null(node):
                # (an unset shell variable, --set cycles=$N, is the usual way here: a null
                # would silently give the key's default, for a repeat's times forever)
                reader.report(
                    at,
                    "an empty or null value; give a value, or leave "
                    f"--set {name} out for the mission's default",
                )
                continue
            if node is not None:
                note = _note(f"parameter {name} = {text!r} from --set")
                bindings[name] = Binding(node, note, Scope())
        values: dict[str, Any] = {}
        for name, binding in bindings.items():
            values[name] = reader.plain(Item(binding.node, Location.of(binding.node), Scope()))
        scope = Scope("the mission", MappingProxyType(bindings))
        return scope, MappingProxyType(values)

    def _declarations(
        self, item: Item, owner: str, *, allow_required: bool
    ) -> dict[str, Binding | None]:
        """Parameter declarations: name -> default binding (None: required).

        A declaration is ``name: default`` or ``name: {default: ..., description: ...}``.
        With ``allow_required`` (subtrees) a null default makes the parameter required;
        otherwise (the mission's) null is a value: where it is used, the key takes its
        default as if it were not written.
        """
        reader = self.reader
        entries = reader.entries(item, f"parameters of {owner}", noun="parameter")
        declared: dict[str, Binding | None] = {}
        for entry in entries or ():
            if not NAME.match(entry.key):
                reader.report(entry.at, f"parameter name {entry.key!r} must be letters, digits, _")
                continue
            node = entry.node
            if _long_form(node):
                fields = reader.entries(Item(node, Location.of(node), Scope()), "a parameter")
                given = {f.key: f for f in fields or ()}
                strays = [key for key in given if key not in _PARAM_LONG_KEYS]
                for key in strays:
                    reader.report(given[key].at, _unknown_declaration_key(key, entry.key))
                if "default" not in given:
                    if not strays and not allow_required:
                        reader.report(entry.at, f"parameter {entry.key} needs a default")
                    # (a misspelt or missing default is reported: its uses say nothing more;
                    # a subtree's parameter without one is required)
                    missing = strays or not allow_required
                    declared[entry.key] = Binding(refused(node), "", Scope()) if missing else None
                    continue
                node = given["default"].node
            if allow_required and _is_null(node):
                declared[entry.key] = None
                continue
            note = _note(f"parameter {entry.key} of {owner}, default at {Location.of(node)}")
            declared[entry.key] = Binding(node, note, Scope())
        return declared

    # Includes and subtrees --------------------------------------------------------------

    def _library(self, top: Item, sections: Mapping[str, Entry], chain: tuple[Path, ...]) -> None:
        """Read a file's subtrees, then the files it includes (depth first)."""
        reader = self.reader
        subtrees = sections.get("subtrees")
        if subtrees is not None:
            item = reader.child(top, subtrees.node)
            if item is not None and not (_is_null(item.node)):
                self._subtrees(item)
        include = sections.get("include")
        if include is None:
            return
        item = reader.child(top, include.node)
        if item is None:
            return
        nodes = item.node.value if isinstance(item.node, yaml.SequenceNode) else [item.node]
        base = os.path.dirname(top.at.file)
        for node in nodes:
            element = reader.child(item, node)
            name = (
                None
                if element is None
                else Text().read(ValueContext(reader, ()), element, "include")
            )
            if element is None or name is INVALID or name is None:
                continue
            self._include(element, os.path.normpath(os.path.join(base, name)), chain)

    def _include(self, element: Item, path: str, chain: tuple[Path, ...]) -> None:
        reader = self.reader
        resolved = Path(path).resolve()
        if resolved in chain:
            root_dir = os.path.dirname(os.path.abspath(self.path))
            names = [os.path.relpath(p, root_dir) for p in (*chain, resolved)]
            reader.error(element, "include cycle: " + " -> ".join(names))
            return
        if resolved in self.loaded:
            return
        if not os.path.exists(path):
            reader.error(element, f"include {path}: no such file")
            self.include_failed = True
            return
        ok, root = compose(path, reader, element.at)
        if not ok:
            self.include_failed = True
            return
        self._mark_loaded(path)
        if root is None:
            reader.error(
                element, f"include {path}: the file is empty; an included file needs subtrees"
            )
            self.include_failed = True
            return
        item = Item(root, Location.of(root), Scope())
        entries = reader.entries(item, f"an included file ({', '.join(LIBRARY_KEYS)})")
        if entries is None:
            self.include_failed = True
        sections: dict[str, Entry] = {}
        for entry in entries or ():
            if entry.key in LIBRARY_KEYS:
                sections[entry.key] = entry
            else:
                reader.report(
                    entry.at,
                    f"an included file holds only {', '.join(LIBRARY_KEYS)}; "
                    f"{entry.key} belongs in the mission file",
                )
        self._library(item, sections, (*chain, resolved))

    def _subtrees(self, item: Item) -> None:
        reader = self.reader
        for entry in reader.entries(item, "subtrees", noun="subtree") or ():
            if not NAME.match(entry.key):
                reader.report(entry.at, f"subtree name {entry.key!r} must be letters, digits, _")
                continue
            first = self.subtrees.get(entry.key)
            if first is not None:
                reader.report(
                    entry.at, f"subtree {entry.key} is already defined at {first.location}"
                )
                continue
            body = reader.child(item, entry.node)
            fields = None if body is None else reader.entries(body, f"subtree {entry.key}")
            if body is None or fields is None:
                continue
            given = {f.key: f for f in fields}
            for field in fields:
                if field.key not in _SUBTREE_KEYS:
                    reader.report(
                        field.at, unknown_key(field.key, [(k, NONE) for k in _SUBTREE_KEYS])
                    )
            if "tree" not in given:
                reader.report(entry.at, f"subtree {entry.key} needs tree")
                continue
            params: dict[str, Binding | None] = {}
            if "parameters" in given:
                declared = reader.child(body, given["parameters"].node)
                if declared is not None and declared.node.tag != NULL:
                    params = self._declarations(
                        declared, f"subtree {entry.key}", allow_required=True
                    )
            self.subtrees[entry.key] = SubtreeDef(
                entry.key, MappingProxyType(params), given["tree"].node, entry.at
            )

    # Faults -----------------------------------------------------------------------------

    def _faults(
        self,
        ctx: ValueContext,
        top: Item,
        faults_entry: Entry | None,
        random_entry: Entry | None,
    ) -> tuple[FaultDecl, ...] | None:
        """Written and drawn faults, sorted by time (stable)."""
        reader = self.reader
        faults: list[FaultDecl] = []
        ok = True
        if faults_entry is not None:
            item = reader.child(top, faults_entry.node)
            written = None if item is None else read_faults(ctx, item)
            ok = written is not None
            faults.extend(written or ())
        if random_entry is not None:
            item = reader.child(top, random_entry.node)
            groups = None if item is None else read_random_faults(ctx, item)
            if groups is None:
                ok = False
            else:
                rng = np.random.default_rng(self.seed)
                for group in groups:
                    faults.extend(group.draw(rng))
        if not ok:
            return None
        return tuple(sorted(faults, key=lambda f: f.at_s))

    # The tree ---------------------------------------------------------------------------

    def _spec(self, item: Item, node_type: str) -> NodeSpec | None:
        spec = self.registry.resolve(node_type)
        if spec is None:
            valid = [*self.registry.names(), "subtree"]
            self.reader.error(item, unknown("node type", node_type, valid))
        return spec

    def _node(
        self,
        ctx: ValueContext,
        item: Item,
        stack: tuple[str, ...],
        depth: int,
        default_name: str | None = None,
    ) -> NodeModel | None:
        """One tree node (and its children), or None when it is invalid (reported).

        Args:
            ctx: the declared limbs and the reader.
            item: the node as written.
            stack: the subtrees being expanded, outermost first.
            depth: how deep the node is.
            default_name: the display name unless the node names itself.
        """
        reader = self.reader
        if depth > _MAX_DEPTH:
            reader.error(item, f"the tree is nested deeper than {_MAX_DEPTH} (a recursive alias?)")
            return None
        node = item.node
        if isinstance(node, yaml.ScalarNode) and node.tag == STR:
            spec = self._spec(item, str(node.value))
            if spec is None:
                return None
            return self._typed(ctx, spec, item, item, [], stack, depth, default_name)
        if not isinstance(node, yaml.MappingNode):
            reader.error(
                item,
                f"a tree node must be a node type or a map {{TYPE: {{...}}}}; got {describe(node)}",
            )
            return None
        entries = reader.entries(item, "a tree node")
        if entries is None:
            return None
        if any(e.key == "subtree" for e in entries):
            return self._use(ctx, item, entries, stack, depth, default_name)
        if len(entries) != 1:
            keys = ", ".join(e.key for e in entries) or "none"
            reader.error(
                item,
                "a tree node is a map with one key, its type, e.g. "
                f"{{sequence: {{children: [...]}}}}; found keys: {keys}",
            )
            return None
        type_entry = entries[0]
        type_item = replace(item, at=type_entry.at)
        spec = self._spec(type_item, type_entry.key)
        if spec is None:
            return None
        body = reader.child(item, type_entry.node)
        if body is None:
            return None
        body_node = body.node
        if _is_null(body_node):
            fields: list[Entry] = []
        elif isinstance(body_node, yaml.SequenceNode) and spec.kind is NodeKind.COMPOSITE:
            fields = [Entry("children", body.at, body_node)]
        else:
            found = reader.entries(body, f"the body of {spec.type} (its parameters)")
            if found is None:
                return None
            fields = found
        return self._typed(ctx, spec, type_item, body, fields, stack, depth, default_name)

    def _typed(
        self,
        ctx: ValueContext,
        spec: NodeSpec,
        at: Item,
        body: Item,
        fields: Sequence[Entry],
        stack: tuple[str, ...],
        depth: int,
        default_name: str | None,
    ) -> NodeModel | None:
        """A node of a known type from its body's entries."""
        reader = self.reader
        child_key = spec.child_key
        kept: list[Entry] = []
        misplaced = False
        for field in fields:
            if field.key in ("child", "children") and field.key != child_key:
                misplaced = True
                if spec.kind is NodeKind.LEAF:
                    message = f"{spec.type} is a leaf: it takes no children"
                elif spec.kind is NodeKind.DECORATOR:
                    message = (
                        f"{spec.type} is a decorator: it takes exactly one child, under child "
                        "(wrap several in a sequence)"
                    )
                else:
                    message = f"{spec.type} is a composite: its children go under children, a list"
                reader.report(field.at, message, body.note)
            else:
                kept.append(field)
        extra = ("name",) + ((child_key,) if child_key else ())
        params = read_fields(ctx, body, kept, spec.params, what=spec.type, at=at.at, extra=extra)
        ok = not misplaced and INVALID not in params.values()
        given = {f.key: f for f in kept}
        name = default_name or _display_name(spec.type)
        if "name" in given:
            value = reader.child(body, given["name"].node)
            read: Any = INVALID if value is None else Text().read(ctx, value, "name")
            ok = ok and read is not INVALID
            name = str(read) if read is not INVALID else name
        children: tuple[NodeModel, ...] | None = None
        if not misplaced or child_key in given or spec.kind is NodeKind.LEAF:
            # (children under the wrong key were reported: "needs child" would repeat it)
            entry = given.get(child_key or "")
            children = self._children(ctx, spec, at, body, entry, stack, depth)
        ok = ok and children is not None
        if ok and children is not None and spec.check is not None:
            before = len(reader.problems)

            def report(key: str, message: str) -> None:
                entry = given.get(key)
                reader.report(entry.at if entry else at.at, message, body.note)

            params = dict(spec.check(params, children, report))
            ok = len(reader.problems) == before
        if not ok or children is None:
            return None
        places = value_places(body, kept, spec.params)
        keys = {param.key for param in spec.params}
        bound: dict[str, str] = {}
        for field in kept:
            param = _own_reference(body, field.node, stack) if field.key in keys else None
            if param is not None:
                bound[field.key] = param
        return NodeModel(spec.type, name, params, children, at.at, params_at=places, bound=bound)

    def _children(
        self,
        ctx: ValueContext,
        spec: NodeSpec,
        at: Item,
        body: Item,
        entry: Entry | None,
        stack: tuple[str, ...],
        depth: int,
    ) -> tuple[NodeModel, ...] | None:
        reader = self.reader
        low, high = spec.children
        if spec.kind is NodeKind.LEAF:
            return ()
        if entry is None:
            if spec.kind is NodeKind.DECORATOR:
                reader.error(at, f"{spec.type} needs child: exactly one node")
            else:
                reader.error(at, f"{spec.type} needs children: a list of at least {low} node(s)")
            return None
        value = reader.child(body, entry.node)
        if value is None:
            return None
        if spec.kind is NodeKind.DECORATOR:
            if isinstance(value.node, yaml.SequenceNode):
                reader.error(
                    value,
                    f"{spec.type} is a decorator: child is one node, not a list "
                    "(wrap several in a sequence)",
                )
                return None
            child = self._node(ctx, value, stack, depth + 1)
            return None if child is None else (child,)
        elements = reader.elements(value, "children")
        if elements is None:
            return None
        count = len(elements)
        if count < low or (high is not None and count > high):
            wanted = f"at least {low}" if high is None else f"{low} to {high}"
            noun = "child" if (high or low) == 1 else "children"
            reader.error(value, f"{spec.type} needs {wanted} {noun}; it has {count}")
            return None
        children: list[NodeModel | None] = []
        for element in elements:
            child_item = reader.child(value, element)
            children.append(
                None if child_item is None else self._node(ctx, child_item, stack, depth + 1)
            )
        if any(child is None for child in children):
            return None
        return tuple(child for child in children if child is not None)

    def _use(
        self,
        ctx: ValueContext,
        item: Item,
        entries: Sequence[Entry],
        stack: tuple[str, ...],
        depth: int,
        default_name: str | None = None,
    ) -> NodeModel | None:
        """A subtree use ``{subtree: NAME, with: {...}, name: ...}``, inlined.

        The inlined root is named by the use's ``name``, else by its own ``name``, else
        after the outermost subtree it stands for.
        """
        reader = self.reader
        given: dict[str, Entry] = {}
        for entry in entries:
            if entry.key in _USE_KEYS:
                given[entry.key] = entry
            else:
                valid = [(k, NONE) for k in _USE_KEYS]
                reader.report(entry.at, unknown_key(entry.key, valid), item.note)
        name_item = reader.child(item, given["subtree"].node)
        if name_item is None:
            return None
        name = Text().read(ctx, name_item, "subtree")
        if name is INVALID:
            return None
        definition = self.subtrees.get(name)
        if definition is None:
            if not self.include_failed:  # else it may be in that file: its problem is enough
                reader.error(name_item, unknown("subtree", name, sorted(self.subtrees)))
            return None
        if name in stack:
            reader.error(name_item, "subtree cycle: " + " -> ".join((*stack, name)))
            return None
        bindings = self._arguments(item, definition, given.get("with"))
        if bindings is None:
            return None
        display = None
        if "name" in given:
            value = reader.child(item, given["name"].node)
            display = None if value is None else Text().read(ctx, value, "name")
            if display is INVALID or display is None:
                return None
        body = reader.root(definition.tree, Scope(f"subtree {name}", MappingProxyType(bindings)))
        if body is None:
            return None
        outer = default_name or name
        model = self._node(ctx, body, (*stack, name), depth + 1, default_name=outer)
        if model is None:
            return None
        passed: dict[str, str] = {}
        with_node = given["with"].node if "with" in given else None
        if isinstance(with_node, yaml.MappingNode):
            for key_node, value_node in with_node.value:
                outer = _own_reference(item, value_node, stack)
                if isinstance(key_node, yaml.ScalarNode) and outer is not None:
                    passed[str(key_node.value)] = outer
        return replace(
            model,
            name=display or model.name,
            location=item.at,
            origin=f"subtree {name}",
            passed=passed,
        )

    def _arguments(
        self, item: Item, definition: SubtreeDef, with_entry: Entry | None
    ) -> dict[str, Binding] | None:
        """The subtree's parameters bound to the ``with`` values or their defaults."""
        reader = self.reader
        owner = f"subtree {definition.name}"
        arguments: list[Entry] = []
        if with_entry is not None:
            value = reader.child(item, with_entry.node)
            if value is None:
                return None
            if not _is_null(value.node):
                found = reader.entries(value, "with (parameter -> value)", noun="parameter")
                if found is None:
                    return None
                arguments = found
            item = value
        given: dict[str, Binding] = {}
        ok = True
        for argument in arguments:
            if argument.key not in definition.params:
                label = f"parameters of {owner}"
                message = unknown("parameter", argument.key, list(definition.params), label)
                reader.report(argument.at, message, item.note)
                ok = False
                continue
            bound = reader.child(item, argument.node)
            if bound is None:
                ok = False
                continue
            if definition.params[argument.key] is None and _is_null(bound.node):
                # (a null takes the key's default where used: a required one has none, and
                # the problem would stand inside the subtree, naming no use)
                reader.report(
                    argument.at,
                    f"with: {argument.key} is null, but parameter {argument.key} of {owner} "
                    "is required (it has no default): give it a value",
                    bound.note or item.note,
                )
                ok = False
                given[argument.key] = Binding(bound.node, "", bound.scope)  # (given: said)
                continue
            note = _note(f"parameter {argument.key} of {owner}, given at {argument.at}")
            if bound.note:
                note = f"{note} {bound.note}"
            given[argument.key] = Binding(bound.node, note, bound.scope)
        bindings: dict[str, Binding] = {}
        for param, default in definition.params.items():
            binding = given.get(param, default)
            if binding is None:
                reader.error(item, f"{owner} needs parameter {param} (under with)")
                ok = False
            else:
                bindings[param] = binding
        return bindings if ok else None
