"""The registry of node types: one declaration each, read by the loader, builder and exports."""

import io
import json
import math
from contextlib import redirect_stdout
from importlib.metadata import EntryPoint
from pathlib import Path

import py_trees
import pytest

from limbtree.trees.app import offline_tree
from limbtree.trees.builder import build_tree
from limbtree.trees.cli import main
from limbtree.trees.context import MissionContext
from limbtree.trees.errors import TreeBuildError
from limbtree.trees.mission import load_mission
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.units import quaternion_from_euler
from limbtree.trees.nodes import (
    BtElement,
    Integer,
    NodeExport,
    NodeKind,
    NodeRegistryError,
    NodeSource,
    NodeSpec,
    ParamSpec,
    Text,
    builtin_registry,
    load_entry_point,
)
from limbtree.trees.nodes.reference import (
    DOCS_COMMAND,
    file_params,
    reference_data,
    reference_markdown,
)
from limbtree.trees.stream import plain

ROOT = Path(__file__).parent.parent
MISSIONS = Path(__file__).parent / "missions"
ROBOTS = {"heavy_limb": ("arm",)}


def run_cli(*argv):
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


def test_docs_nodes_md_is_generated_from_the_registry():
    expected = reference_markdown(builtin_registry())
    actual = (ROOT / "docs" / "nodes.md").read_text()
    assert actual == expected, f"docs/nodes.md is stale: refresh it with `{DOCS_COMMAND}`"


def test_limbtree_nodes_lists_every_node_type_with_its_keys_defaults_and_commands():
    status, text = run_cli("nodes", "--builtin")
    assert status == 0
    headings = [line.split(" (")[0] for line in text.splitlines() if line and line[0] != " "]
    assert headings == list(builtin_registry())
    sync = text[text.index("sync_move (leaf)") :].split("\n\n")[0]
    assert "commands: limbs" in sync
    assert "p_e_mm" in sync and "  20  " in sync  # the default in the key's unit
    assert "commands: no limb" in text[text.index("wait (leaf)") :].split("\n\n")[0]
    # An 80-column terminal's width: a meaning goes on under itself (150 lines were longer).
    assert max(len(line) for line in text.splitlines()) <= 80


def test_limbtree_nodes_json_has_stable_documented_keys():
    status, text = run_cli("nodes", "--format", "json", "--builtin")
    assert status == 0
    data = json.loads(text)
    assert (data["format"], data["version"]) == ("limbtree.nodes", 1)
    node_keys = {"name", "kind", "doc", "aliases", "children", "commands", "source", "params"}
    node_keys |= {"concurrent", "plants", "plants_why"}
    param_keys = {"name", "key", "type", "expected", "unit", "unit_name", "required"}
    param_keys |= {"default", "doc"}
    by_name = {}
    for node in data["node_types"]:
        assert set(node) == node_keys
        assert all(set(param) == param_keys for param in node["params"])
        by_name[node["name"]] = node
    assert list(by_name) == list(builtin_registry())
    assert by_name["sync_move"]["commands"] == ["limbs"]
    assert by_name["align"]["commands"] == ["limb"]
    assert by_name["wait"]["commands"] == [] and by_name["sequence"]["commands"] == []
    assert by_name["fallback"]["aliases"] == ["selector"]
    plants = {name: tuple(node["plants"]) for name, node in by_name.items() if node["plants"]}
    kinematic = ("sync_move", "velocity_move", "recover_to_last_valid", "align")
    mujoco = ("walk_step", "impedance_move", "latch", "unlatch", "climb_step", "base_adjust")
    mujoco += ("grip_guard",)  # (it commands no limb: it reads a mujoco plant's grippers)
    assert plants == {
        **dict.fromkeys(kinematic, ("kinematic",)),
        **dict.fromkeys(mujoco, ("mujoco",)),
    }
    assert by_name["walk_step"]["plants_why"].startswith("latches standard interfaces")
    assert by_name["wait"]["plants_why"] is None
    concurrent = {name: node["concurrent"] for name, node in by_name.items() if node["concurrent"]}
    assert concurrent == {
        "parallel": "always",
        "sequence": "memory false",
        "fallback": "memory false",
    }
    p_e = next(p for p in by_name["sync_move"]["params"] if p["name"] == "p_e")
    assert (p_e["key"], p_e["unit"], p_e["default"], p_e["type"]) == (
        "p_e_mm",
        "mm",
        20.0,
        "per_limb",
    )
    r_e = next(p for p in by_name["sync_move"]["params"] if p["name"] == "r_e")
    assert r_e["default"] == "inf"
    assert by_name["parallel"]["children"] == {"min": 1, "max": None}
    assert by_name["retry"]["params"][0]["required"] is True
    json.dumps(data, allow_nan=False)  # plain JSON: no NaN or Infinity


def test_every_leaf_that_moves_or_grips_a_limb_says_which_parameter_names_it():
    commands = {name: spec.commands for name, spec in builtin_registry().items()}
    assert {name for name, c in commands.items() if c} == {
        "sync_move",
        "velocity_move",
        "joint_sync_move",
        "joint_move",
        "recover_to_last_valid",
        "align",
        "grasp",
        "release",
        "walk_step",
        "impedance_move",
        "latch",
        "unlatch",
        "climb_step",
        "base_adjust",
    }
    spec = builtin_registry()["sync_move"]
    assert spec.commanded_limbs({"limbs": ("a", "b")}) == ("a", "b")
    assert builtin_registry()["grasp"].commanded_limbs({"limb": "a"}) == ("a",)


def test_commands_must_name_a_limb_parameter():
    with pytest.raises(ValueError, match=r"commands names 'prompt'.*valid: none"):
        NodeSpec("ask", NodeKind.LEAF, (ParamSpec("prompt", Text()),), (0, 0), commands=("prompt",))


def test_a_registry_refuses_a_name_or_alias_declared_twice_and_names_both_sources():
    registry = builtin_registry()
    again = NodeSpec("wait", NodeKind.LEAF, (), (0, 0))
    with pytest.raises(NodeRegistryError, match=r"entry point x .*'wait'.*limbtree"):
        registry.with_types(again, source=NodeSource("entry point x of package y"))
    alias = NodeSpec("choose", NodeKind.COMPOSITE, (), (1, None), aliases=("selector",))
    with pytest.raises(NodeRegistryError, match="'selector'"):
        registry.with_types(alias)
    assert registry.resolve("selector") is registry["fallback"]
    assert registry.resolve("nope") is None


def test_every_built_behaviour_carries_its_node_type_and_parameters():
    root = offline_tree(MISSIONS / "full.yaml")
    registry = builtin_registry()
    kinds = set()
    for behaviour in root.iterate():
        spec = registry[behaviour.node_type]
        kinds.add(spec.kind)
        assert {p.name for p in spec.params} <= set(behaviour.node_params)
        with pytest.raises(TypeError):
            behaviour.node_params["x"] = 1
    assert kinds == set(NodeKind)
    repeat = next(b for b in root.iterate() if b.node_type == "repeat")
    assert repeat.node_params["times"] is None  # forever


def test_recorded_parameters_read_back_as_the_mission_file_keys_and_units():
    root = offline_tree(MISSIONS / "full.yaml")
    registry = builtin_registry()
    converted = 0
    for behaviour in root.iterate():
        spec = registry[behaviour.node_type]
        shown = file_params(spec, behaviour.node_params)
        assert set(shown) == {p.key for p in spec.params}
        json.dumps(shown, allow_nan=False)  # infinities are the text inf, as files write them
        for param in spec.params:
            value = behaviour.node_params[param.name]
            if isinstance(value, float) and param.type.key_unit().to_si != 1.0:
                assert param.type.si(shown[param.key]) == pytest.approx(value)
                converted += 1
    assert converted >= 5
    move = next(b for b in root.iterate() if b.node_type == "sync_move")
    assert file_params(registry["sync_move"], move.node_params)["r_e_deg"] == "inf"
    repeat = next(b for b in root.iterate() if b.node_type == "repeat")
    assert file_params(registry["repeat"], repeat.node_params)["times"] == "forever"
    # poses as the file writes them: translation in mm, xyz Euler angles in degrees
    pose = [0.1, -0.02, 0.0, *quaternion_from_euler([0.0, 0.0, math.radians(30.0)])]
    shown = file_params(registry["sync_move"], {"waypoints": [{"a": pose}, pose]})
    first, second = shown["waypoints"]
    assert first["a"]["translation_mm"] == [100.0, -20.0, 0.0] and second == first["a"]
    assert first["a"]["rotation_deg"] == pytest.approx([0.0, 0.0, 30.0])
    # a node type this installation does not know keeps its recorded names and values
    assert file_params(None, {"p_e": 0.02, "r": math.inf}) == {"p_e": 0.02, "r": "inf"}


SHIPPED = sorted((ROOT / "missions").glob("*.yaml"))


@pytest.mark.parametrize("mission", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_mission_s_recorded_parameters_read_back_with_their_file_keys(mission):
    registry = builtin_registry()
    for behaviour in offline_tree(mission).iterate():
        spec = registry[behaviour.node_type]
        shown = file_params(spec, plain(behaviour.node_params))  # (as the record has them)
        assert set(shown) == {p.key for p in spec.params}, behaviour.node_type
        json.dumps(shown, allow_nan=False)


def twice_spec():
    """A decorator limbtree does not have, declared the way a package would."""

    def build(node, children, context):
        (child,) = children
        return py_trees.decorators.Repeat(node.name, child=child, num_success=node.params["n"])

    return NodeSpec(
        "twice",
        NodeKind.DECORATOR,
        (ParamSpec("n", Integer(1), 2, "how many successes"),),
        (1, 1),
        "run the child n times",
        build=build,
        export=NodeExport(
            detail=lambda params: f"n={params['n']}",
            btcpp=lambda params, name: BtElement("Repeat", {"num_cycles": str(params["n"])}),
        ),
    )


def test_a_declared_type_loads_builds_and_exports_with_no_other_code(tmp_path):
    from limbtree.trees.export import render_tree

    registry = builtin_registry().with_types(twice_spec())
    path = tmp_path / "m.yaml"
    path.write_text("mission: m\ntree: {twice: {n: 3, child: {wait: {duration_s: 1}}}}\n")
    mission = load_mission(path, robots=ROBOTS, registry=registry)
    root = build_tree(mission.root, MissionContext(limbs={}, clock=lambda: 0.0), registry)
    assert (root.node_type, dict(root.node_params)) == ("twice", {"n": 3})
    assert render_tree(root, "ascii", registry=registry).splitlines()[0] == "◇ twice n=3"
    assert '<Repeat name="Twice" num_cycles="3" _fullpath="0">' in render_tree(
        root, "xml", registry=registry
    )


def test_the_builder_names_a_node_type_it_has_no_behaviour_for():
    node = NodeModel("weld", "Weld", {}, (), None)
    with pytest.raises(TreeBuildError, match=r"no behaviour for node type 'weld'.*known: align"):
        build_tree(node, MissionContext(limbs={}, clock=lambda: 0.0), builtin_registry())


def test_a_broken_entry_point_is_named_with_its_target():
    missing = EntryPoint("weld", "no_such_limbtree_plugin.nodes:WELD", "limbtree.nodes")
    with pytest.raises(NodeRegistryError, match="entry point weld = no_such_limbtree_plugin"):
        load_entry_point(missing)
    wrong = EntryPoint("pi", "math:pi", "limbtree.nodes")
    with pytest.raises(NodeRegistryError, match="holds float, not a node type"):
        load_entry_point(wrong)


def test_the_reference_data_lists_required_parameters_without_a_default():
    data = reference_data(builtin_registry())
    wait = next(n for n in data["node_types"] if n["name"] == "wait")
    (duration,) = wait["params"]
    assert duration["required"] and duration["default"] is None


def test_a_headline_parameter_must_be_a_parameter_of_the_type():
    with pytest.raises(ValueError, match="headline names no parameter"):
        NodeSpec("ask", NodeKind.LEAF, (), (0, 0), export=NodeExport(headline=("p_e",)))


@pytest.mark.parametrize("module", ["limbtree.trees.nodes", "limbtree.trees.export"])
def test_every_public_name_imports(module):
    import importlib

    api = importlib.import_module(module)
    for name in api.__all__:
        assert getattr(api, name) is not None
