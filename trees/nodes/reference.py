"""The reference of node types, derived from a registry: ``limbtree nodes`` and ``docs/nodes.md``.

Three renderings of the same data (:func:`reference_data`): plain text for people, JSON for
tools (:data:`REFERENCE_FORMAT` version :data:`REFERENCE_VERSION`, keys documented in
``docs/nodes.md``), and the Markdown of ``docs/nodes.md``
(``limbtree nodes --format markdown --builtin > docs/nodes.md``).
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Mapping
from typing import Any, Final

from limbtree.trees.mission.nodes import BUILT_IN, NodeRegistry, NodeSpec
from limbtree.trees.mission.values import REQUIRED, ParamSpec, file_fields

#: The ``format`` of the JSON reference.
REFERENCE_FORMAT: Final = "limbtree.nodes"
#: The ``version`` of the JSON reference; it changes only when a key changes meaning.
REFERENCE_VERSION: Final = 1
#: The command that writes docs/nodes.md.
DOCS_COMMAND: Final = "limbtree nodes --format markdown --builtin > docs/nodes.md"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _plain(value: Any) -> Any:
    """A default as JSON: tuples as lists, infinities as the text ``inf`` / ``-inf``."""
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "nan"
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def file_params(spec: NodeSpec | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """A node's recorded parameters as its mission file writes them, for people and JSON.

    A record keeps parameters in SI under their model names (``p_e: 0.02``); here each key
    gets its unit back (``p_e_mm: 20``), numbers are in that unit, and infinities are the
    text ``inf`` as mission files write them (JSON has no infinity). A name ``spec`` does not
    declare, or a node type this installation does not know (``spec`` None), keeps its name
    and value.

    Args:
        spec: the node's type, or None.
        params: the node's parameters as recorded (the record header's ``params``).
    """
    shown: dict[str, Any] = _plain(file_fields(spec.params if spec is not None else (), params))
    return shown


def param_data(param: ParamSpec) -> dict[str, Any]:
    """One parameter as plain data (the JSON reference's ``params`` items)."""
    unit = param.type.key_unit()
    return {
        "name": param.name,
        "key": param.key,
        "type": _snake(type(param.type).__name__),
        "expected": param.type.expected(),
        "unit": unit.suffix or None,
        "unit_name": unit.name or None,
        "required": param.required,
        "default": None if param.default is REQUIRED else _plain(param.default),
        "doc": param.doc,
    }


def node_type_data(spec: NodeSpec, source: str) -> dict[str, Any]:
    """One node type as plain data (the JSON reference's ``node_types`` items)."""
    low, high = spec.children
    return {
        "name": spec.type,
        "kind": spec.kind.value,
        "doc": spec.doc,
        "aliases": list(spec.aliases),
        "children": {"min": low, "max": high},
        "commands": list(spec.commands),
        "plants": [plant.value for plant in spec.plants],
        "plants_why": spec.plants_why or None,
        "concurrent": None if spec.concurrent is None else spec.concurrent.doc,
        "source": source,
        "params": [param_data(param) for param in spec.params],
    }


def reference_data(registry: NodeRegistry) -> dict[str, Any]:
    """Every node type of ``registry`` as plain data, in the registry's order."""
    return {
        "format": REFERENCE_FORMAT,
        "version": REFERENCE_VERSION,
        "node_types": [
            node_type_data(spec, registry.source(name).label) for name, spec in registry.items()
        ],
    }


def reference_json(registry: NodeRegistry) -> str:
    """The JSON reference (``limbtree nodes --format json``), ending with a newline."""
    return json.dumps(reference_data(registry), indent=2, ensure_ascii=False) + "\n"


def _default_text(param: Mapping[str, Any]) -> str:
    if param["required"]:
        return "required"
    default = param["default"]
    if default is None:
        return "none"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


def _header(node: Mapping[str, Any]) -> list[str]:
    lines = []
    if node["aliases"]:
        lines.append(f"aliases: {', '.join(node['aliases'])}")
    low, high = node["children"]["min"], node["children"]["max"]
    if node["kind"] == "composite":
        lines.append(f"children: at least {low}" + ("" if high is None else f", at most {high}"))
    elif node["kind"] == "decorator":
        lines.append("child: exactly one")
    lines.append("commands: " + (", ".join(node["commands"]) or "no limb"))
    if node["plants"]:
        lines.append(
            f"plants: {' or '.join(node['plants'])} only, for a simulated robot: it "
            f"{node['plants_why']}"
        )
    if node["concurrent"]:
        lines.append(
            f"runs its children together ({node['concurrent']}): no two of them may command "
            "one limb"
        )
    return lines


def reference_text(registry: NodeRegistry, columns: int = 80) -> str:
    """The plain-text reference (``limbtree nodes``), ending with a newline.

    Args:
        registry: the node types.
        columns: the width the lines are wrapped to (a parameter's meaning goes on under
            itself, its key and default alone on the left).
    """
    out: list[str] = []

    def wrap(text: str, first: str, rest: str) -> None:
        out.extend(
            textwrap.wrap(
                text,
                columns,
                initial_indent=first,
                subsequent_indent=rest,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )

    for node in reference_data(registry)["node_types"]:
        wrap(f"{node['name']} ({node['kind']}): {node['doc']}", "", "    ")
        for line in _header(node):
            wrap(line, "  ", "    ")
        if node["source"] != BUILT_IN.label:
            out.append(f"  from {node['source']}")
        params = node["params"]
        width = max((len(p["key"]) for p in params), default=0)
        for param in params:
            left = f"  {param['key']:<{width}}  {_default_text(param):<10}  "
            wrap(f"{param['doc']} ({param['expected']})", left, " " * len(left))
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def reference_markdown(registry: NodeRegistry) -> str:
    """The Markdown reference: the text of ``docs/nodes.md``."""
    data = reference_data(registry)
    out = [
        "# Node types",
        "",
        f"<!-- Generated from the node-type registry by `{DOCS_COMMAND}`; do not edit. -->",
        "",
        "Every node type a mission tree may use, with its parameters: the key as written in a",
        "mission file (its unit is in the key: `_mm`, `_deg`, `_s`, ...), the default in that",
        "unit, and what the value must be. `commands` lists the parameters naming the limbs a",
        "node commands (reading a limb is not commanding it). No two children of a composite",
        "that runs its children together (one while another still runs: `parallel` always,",
        "`sequence` and `fallback` with memory false) may command one limb",
        "(`docs/missions.md`, One commander per limb). `limbtree nodes` prints the same",
        "for the node types installed here (plug-ins included); `limbtree nodes --format json`",
        "prints it for tools (keys below). The file format itself is in `docs/missions.md`.",
        "",
    ]
    for kind in ("composite", "decorator", "leaf"):
        out.append(f"## {kind.capitalize()}s")
        out.append("")
        for node in data["node_types"]:
            if node["kind"] != kind:
                continue
            out.append(f"### `{node['name']}`")
            out.append("")
            out.append(node["doc"] + ".")
            out.append("")
            out.extend(f"- {line}" for line in _header(node))
            out.append("")
            if node["params"]:
                out.append("| key | default | meaning | value |")
                out.append("|---|---|---|---|")
                for param in node["params"]:
                    out.append(
                        f"| `{param['key']}` | {_cell(_default_text(param))} | "
                        f"{_cell(param['doc'])} | {_cell(param['expected'])} |"
                    )
                out.append("")
    out.extend(
        [
            "## Subtrees",
            "",
            "`subtree` is no node type: a use `{subtree: NAME, with: {...}, name: ...}` is",
            "replaced by the subtree's own tree when the mission is loaded, its parameters",
            "substituted (`docs/missions.md`, Subtrees).",
            "",
            "## The JSON reference",
            "",
            f"`limbtree nodes --format json` prints one object: `format` (`{REFERENCE_FORMAT}`),",
            f"`version` ({REFERENCE_VERSION}; it changes only when a key changes meaning) and",
            "`node_types`, a list in the registry's order. Each node type has `name`, `kind`",
            "(`composite`, `decorator` or `leaf`), `doc`, `aliases`, `children` (`min`, `max`;",
            "`max` null: no limit), `commands` (parameter names), `concurrent` (when it runs",
            "its children together, in words: `always`, `memory false`; null: never),",
            "`plants` (the plants of a simulated robot whose limbs it can command, e.g.",
            '`["mujoco"]`; empty: any; `limbtree check` refuses it on another\'s limb) and',
            "`plants_why` (what it does that needs them, or null),",
            "`source` (`limbtree (built in)` or the entry point and package that declared it)",
            "and `params`, a list in the",
            "reference's order. Each parameter has `name` (the model's, SI), `key` (the mission",
            "file's, unit included), `type` (the value type, e.g. `quantity`, `per_limb`,",
            "`limb_list`), `expected` (what the value must be, in words), `unit` (the key's",
            "unit suffix, e.g. `mm`, or null), `unit_name`, `required`, `default` (in the",
            'file\'s unit; null when required or when there is none; infinity as `"inf"`) and',
            "`doc`.",
            "",
        ]
    )
    return "\n".join(out)
