"""BehaviorTree.CPP v4 XML of a tree, with its ``<TreeNodesModel>``, so it opens in Groot2.

Every node type says how it is written (:class:`~limbtree.trees.mission.nodes.NodeExport`):
the composites and decorators BT.CPP has built in give their element (``Sequence``,
``Repeat num_cycles="3"``; the mapping is documented with their declarations in
:mod:`limbtree.trees.nodes`); every other node is a custom node of its category,
``<Action ID="SyncMove" name=... p_e_mm="20" .../>``: the CamelCase of its type, its
parameters as input ports named like the mission file's keys (unit in the name), declared in
``<TreeNodesModel>``.

Each element carries its node id in ``_fullpath`` (``_fullpath="0.1.2"``), so two nodes with
one name stay two nodes. BT.CPP's parser takes an attribute that does not start with a letter
for no port (``IsAllowedPortName``) and keeps it among the node's other attributes, so the
file loads; BT.CPP itself writes ``_fullpath`` (a subtree's path) and ``_uid`` in the
metadata of the trees it sends to Groot2. ``_uid`` is BT.CPP's own 16-bit counter, so
limbtree leaves it alone.

The tree is ``MainTree``. Each use of one of the mission's subtrees (the node the builder
marks with ``node_subtree``, :attr:`NodeView.subtree`) is a ``<SubTree ID=... name=...>``
of a ``<BehaviorTree ID=...>`` that follows the main tree (BT.CPP v4: a ``<SubTree>`` has no
children and its ID is no registered node type's, ``src/xml_parsing.cpp``,
``VerifyXML``). A subtree parameter that is a port's whole value is a port of the subtree
(``limb="{arm}"`` inside, ``<SubTree ... arm="mar.arm_1"/>`` at the use, as in
``include/behaviortree_cpp/decorators/subtree_node.h``), declared in ``<TreeNodesModel>``
(``parseSubtreeModelPorts``); uses that still differ (a parameter inside a waypoint list)
are a definition each (``square``, ``square_2``), equal ones share one. Inside a
definition, ``_fullpath`` counts from the definition's root (``0``).
docs/visualization.md, "Subtrees in the XML".
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from types import MappingProxyType
from typing import Any, Final

from limbtree.trees.export.values import plain, port_text
from limbtree.trees.export.views import ROOT_ID, NodeView, Port
from limbtree.trees.mission.nodes import KIND_CATEGORY
from limbtree.trees.mission.values import REQUIRED, Flag, Integer, ParamSpec, Quantity, ValueType

#: The attribute that carries a node's id.
ID_ATTRIBUTE: Final = "_fullpath"

#: The ID of the tree BT.CPP runs (``main_tree_to_execute``).
MAIN_TREE: Final = "MainTree"

#: What a BT.CPP port name looks like (for a subtree parameter: letters, digits, _).
_PORT_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")

#: Names BT.CPP reserves among a node's attributes (docs/name_validation_rules.md).
_RESERVED_PORTS: Final = frozenset({"ID", "name"})

#: IDs a subtree's definition may not take: BT.CPP v4's built-in node types (registered by
#: ``BehaviorTreeFactory``'s constructor, src/bt_factory.cpp), ``Root`` (``validateModelName``
#: in src/xml_parsing.cpp) and the main tree's.
_RESERVED_IDS: Final = frozenset(
    {
        *("Fallback", "AsyncFallback", "Sequence", "AsyncSequence", "SequenceWithMemory"),
        *("SequenceStar", "Parallel", "ParallelAll", "ReactiveSequence", "ReactiveFallback"),
        *("IfThenElse", "WhileDoElse", "TryCatch", "Inverter", "RetryUntilSuccessful"),
        *("KeepRunningUntilFailure", "Repeat", "Timeout", "Delay", "RunOnce", "ForceSuccess"),
        *("ForceFailure", "AlwaysSuccess", "AlwaysFailure", "Script", "ScriptCondition"),
        *("SetBlackboard", "Sleep", "UnsetBlackboard", "SubTree", "Precondition"),
        *("WasEntryUpdated", "SkipUnlessUpdated", "WaitValueUpdate", "Switch2", "Switch3"),
        *("Switch4", "Switch5", "Switch6", "LoopInt", "LoopDouble", "LoopString", "LoopBool"),
        *("Root", "root", MAIN_TREE),
    }
)

#: py_trees behaviours that are no limbtree node type but BT.CPP has built in (by class).
_PY_TREES_BUILT_IN: Final[Mapping[str, str]] = MappingProxyType(
    {"Success": "AlwaysSuccess", "Failure": "AlwaysFailure"}
)


def camel_case(node_type: str) -> str:
    """``sync_move`` -> ``SyncMove``: the BT.CPP node ID of a limbtree node type."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", node_type))


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
            element.set("default", port_text(plain(param.default)))
        unit = vtype.key_unit() if vtype is not None else None
        element.text = param.doc + (f" [{unit.name}]" if unit is not None and unit.name else "")
    return element


def _comment(text: str) -> Any:
    """An XML comment (``--`` is not allowed inside one)."""
    return ET.Comment(" " + text.replace("--", "- -") + " ")


class _Subtrees:
    """The ``<BehaviorTree>`` definitions of a mission's subtrees, one per distinct use.

    Two uses of one subtree share a definition when they resolve to the same nodes (types,
    names, values once the ports are taken out, nested subtrees, relative ids), whatever
    their root's name; otherwise each distinct one gets its own: ``square``, ``square_2``,
    ``square_3`` in the order the uses come in the tree (depth first).
    """

    def __init__(self) -> None:
        self.trees: dict[str, ET.Element] = {}
        self._ids: dict[tuple[str, str], str] = {}
        self._root_names: dict[str, list[str]] = {}
        self._subtree: dict[str, str] = {}

    def add(self, subtree: str, tree: ET.Element, reserved: AbstractSet[str]) -> str:
        """The ID of the definition ``tree`` (one ``<BehaviorTree>``) of a use of ``subtree``.

        Args:
            subtree: the subtree's name in the mission.
            tree: the ``<BehaviorTree>`` holding this use's nodes (no ID yet).
            reserved: IDs BT.CPP would refuse (its node types, the custom nodes).
        """
        root = tree[-1]
        name = root.get("name", "")
        root.set("name", "")
        key = (subtree, ET.tostring(tree, encoding="unicode"))
        found = self._ids.get(key)
        if found is None:
            number = 1
            found = subtree
            while found in self.trees or found in reserved:
                number += 1
                found = f"{subtree}_{number}"
            self._ids[key] = found
            tree.set("ID", found)
            self.trees[found] = tree
            self._subtree[found] = subtree
        self._root_names.setdefault(found, []).append(name)
        root.set("name", name)
        return found

    def finish(self) -> None:
        """Name each definition's root as its uses do when they agree, else after the subtree."""
        for tree_id, names in self._root_names.items():
            agreed = names[0] if len(set(names)) == 1 else self._subtree[tree_id]
            self.trees[tree_id][-1].set("name", agreed)

    def in_order(self, main: ET.Element) -> list[ET.Element]:
        """The definitions in the order their first use comes, depth first from ``main``."""
        ordered: dict[str, ET.Element] = {}

        def visit(tree: ET.Element) -> None:
            for use in tree.iter("SubTree"):
                tree_id = use.get("ID", "")
                if tree_id in self.trees and tree_id not in ordered:
                    ordered[tree_id] = self.trees[tree_id]
                    visit(self.trees[tree_id])

        visit(main)
        return list(ordered.values())


class _Ports:
    """The ports of one subtree definition being written.

    A subtree's parameter becomes a port when it is the whole value of node attributes of
    the definition (``limb: $arm`` -> ``limb="{arm}"``) and has one text in this use: the
    ``<SubTree>`` then passes it (``arm="mar.arm_1"``). One that is not a BT.CPP port name
    (``ID``, ``name``, ``_...``: ``IsAllowedPortName``, docs/name_validation_rules.md), or
    whose text would read as a blackboard pointer (``{...}``, a JSON map), stays a value.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str | None] = {}
        self._places: list[tuple[ET.Element, str, str]] = []

    def offer(self, element: ET.Element, attribute: str, param: str) -> None:
        """``element``'s ``attribute`` is the whole value of the parameter ``param``."""
        text = element.get(attribute)
        if text is None:
            return
        usable = (
            _PORT_NAME.fullmatch(param) is not None
            and param not in _RESERVED_PORTS
            and not (text.startswith("{") and text.endswith("}"))
            and self._texts.get(param, text) == text
        )
        self._texts[param] = text if usable else None
        self._places.append((element, attribute, param))

    def apply(self) -> dict[str, str]:
        """Write ``{param}`` in place of each port's value; the ports' values, in order."""
        ports = {param: text for param, text in self._texts.items() if text is not None}
        for element, attribute, param in self._places:
            if param in ports:
                element.set(attribute, "{" + param + "}")
        return ports


def _relative_id(node_id: str, base: str | None) -> str:
    """A node's id as written in a subtree's definition: from that definition's root, ``0``."""
    if base is None or not (node_id == base or node_id.startswith(base + ".")):
        return node_id
    return ROOT_ID + node_id[len(base) :]


def btcpp_xml(view: NodeView) -> str:
    """BehaviorTree.CPP v4 XML with a ``<TreeNodesModel>`` of the custom nodes it uses.

    The main tree is ``MainTree``; each use of a mission subtree is a ``<SubTree>`` of a
    ``<BehaviorTree>`` definition that follows it (see the module's docstring).
    """
    document = ET.Element("root", {"BTCPP_format": "4", "main_tree_to_execute": "MainTree"})
    main = ET.SubElement(document, "BehaviorTree", {"ID": MAIN_TREE})
    models: dict[str, tuple[str, dict[str, ET.Element]]] = {}
    subtrees = _Subtrees()
    # (every type's ID, not only the custom nodes' met so far: a subtree may come first)
    reserved = _RESERVED_IDS | {camel_case(node.type) for node in view.walk()}

    def declare(category: str, node_id: str, node: NodeView) -> None:
        _, ports = models.setdefault(node_id, (category, {}))
        if node.spec is not None:
            for param in node.spec.params:
                ports.setdefault(param.key, _model_port(param, None, param.key))
        for port in node.ports:
            ports.setdefault(port.key, _model_port(port.spec, port, port.key))

    def use(
        node: NodeView, parent: ET.Element, base: str | None, names: set[str], outer: _Ports | None
    ) -> None:
        """A ``<SubTree>`` for a subtree's use, and its definition when it is a new one."""
        assert node.subtree is not None
        tree = ET.Element("BehaviorTree")
        ports = _Ports()
        emit(node, tree, node.id, set(), ports)
        values = ports.apply()
        tree_id = subtrees.add(node.subtree, tree, reserved)
        if values:
            models[tree_id] = (
                "SubTree",
                {port: ET.Element("input_port", {"name": port}) for port in values},
            )
        # BT.CPP refuses two SubTrees with one name in one tree ("Duplicate SubTree path").
        name, number = node.name, 1
        while name in names:
            number += 1
            name = f"{node.name} ({number})"
        names.add(name)
        attributes = {"ID": tree_id, "name": name, **values}
        attributes[ID_ATTRIBUTE] = _relative_id(node.id, base)
        element = ET.SubElement(parent, "SubTree", attributes)
        if outer is not None:
            for port, param in node.passed.items():
                outer.offer(element, port, param)

    def emit(
        node: NodeView, parent: ET.Element, base: str | None, names: set[str], ports: _Ports | None
    ) -> None:
        if node.subtree is not None and node.id != base:
            use(node, parent, base, names, ports)
            return
        attributes = {"name": node.name}
        built_in = None if node.spec is None else node.spec.export.btcpp
        if built_in is not None:
            element = built_in(node.params, node.name)
            parent.extend(_comment(text) for text in element.comments)
            tag = element.tag
            attributes.update(element.attributes)
        elif node.spec is None and node.type in _PY_TREES_BUILT_IN:
            tag = _PY_TREES_BUILT_IN[node.type]
        else:
            tag = KIND_CATEGORY[node.kind] if node.spec is None else node.spec.category
            model_id = camel_case(node.type)
            declare(tag, model_id, node)
            attributes = {"ID": model_id, **attributes}
            attributes.update((p.key, port_text(p.value)) for p in node.ports)
        attributes[ID_ATTRIBUTE] = _relative_id(node.id, base)
        xml_node = ET.SubElement(parent, tag, attributes)
        if ports is not None and built_in is None:
            for key, param in node.bound.items():
                ports.offer(xml_node, key, param)
        for child in node.children:
            emit(child, xml_node, base, names, ports)

    emit(view, main, None, set(), None)
    subtrees.finish()
    document.extend(subtrees.in_order(main))
    model = ET.SubElement(document, "TreeNodesModel")
    for model_id, (category, ports) in sorted(models.items()):
        entry = ET.SubElement(model, category, {"ID": model_id})
        entry.extend(ports.values())
    ET.indent(document, space="  ")
    body = ET.tostring(document, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
