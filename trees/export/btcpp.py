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
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from limbtree.trees.export.values import plain, port_text
from limbtree.trees.export.views import NodeView, Port
from limbtree.trees.mission.nodes import KIND_CATEGORY
from limbtree.trees.mission.values import REQUIRED, Flag, Integer, ParamSpec, Quantity, ValueType

#: The attribute that carries a node's id.
ID_ATTRIBUTE: Final = "_fullpath"

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


def btcpp_xml(view: NodeView) -> str:
    """BehaviorTree.CPP v4 XML with a ``<TreeNodesModel>`` of the custom nodes it uses."""
    document = ET.Element("root", {"BTCPP_format": "4", "main_tree_to_execute": "MainTree"})
    tree = ET.SubElement(document, "BehaviorTree", {"ID": "MainTree"})
    models: dict[str, tuple[str, dict[str, ET.Element]]] = {}

    def declare(category: str, node_id: str, node: NodeView) -> None:
        _, ports = models.setdefault(node_id, (category, {}))
        if node.spec is not None:
            for param in node.spec.params:
                ports.setdefault(param.key, _model_port(param, None, param.key))
        for port in node.ports:
            ports.setdefault(port.key, _model_port(port.spec, port, port.key))

    def emit(node: NodeView, parent: ET.Element) -> None:
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
        attributes[ID_ATTRIBUTE] = node.id
        xml_node = ET.SubElement(parent, tag, attributes)
        for child in node.children:
            emit(child, xml_node)

    emit(view, tree)
    model = ET.SubElement(document, "TreeNodesModel")
    for model_id, (category, ports) in sorted(models.items()):
        entry = ET.SubElement(model, category, {"ID": model_id})
        entry.extend(ports.values())
    ET.indent(document, space="  ")
    body = ET.tostring(document, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"
