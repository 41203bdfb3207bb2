"""Rendering built trees: text, Graphviz DOT, SVG and BehaviorTree.CPP v4 XML."""

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from types import MappingProxyType

import py_trees
import pytest

from limbtree.trees.behaviours import (
    ClockTimeout,
    OperatorGateBehaviour,
    SkillBehaviour,
    WaitBehaviour,
)
from limbtree.trees.context import MissionContext
from limbtree.trees.errors import TreesError
from limbtree.trees.export import FORMATS, describe_tree, render_tree, to_file_units
from limbtree.trees.nodes import builtin_registry

SVG = "{http://www.w3.org/2000/svg}"
NODE_SPECS = builtin_registry()
Status = py_trees.common.Status


class FakeSyncMove(SkillBehaviour):
    """A ``sync_move`` leaf that needs no limbs: RUNNING with a feedback message."""

    node_type = "sync_move"

    def step(self):
        self.feedback_message = "segment 2/4, t = 0.412"
        return Status.RUNNING


class FakeRecover(SkillBehaviour):
    node_type = "recover_to_last_valid"

    def step(self):
        return Status.SUCCESS


def params(kind, **given):
    """A leaf's model parameters: the registry's defaults (SI) and ``given``."""
    out = {p.name: p.default_value() for p in NODE_SPECS[kind].params if not p.required}
    out.update(given)
    return out


def quarter_turn_z():
    return (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4))


def make_tree(memory=True, policy=None):
    """A tree with every composite and decorator kind and a few leaves."""
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    pose = (0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    waypoints = tuple(MappingProxyType({"heavy": pose, "light": pose}) for _ in range(4))
    square = FakeSyncMove(
        "Square", context, params("sync_move", limbs=("heavy", "light"), waypoints=waypoints)
    )
    recover = FakeRecover(
        "Recover to last valid",
        context,
        params("recover_to_last_valid", limbs=("heavy",), p_e=MappingProxyType({"heavy": 0.01})),
    )
    attempts = py_trees.decorators.Retry("Twice", child=square, num_failures=2)
    fallback = py_trees.composites.Selector("Try", memory=memory, children=[attempts, recover])
    gate = OperatorGateBehaviour("Gate", context, {"prompt": "Ready to grasp the wheel?"})
    limit = ClockTimeout(
        "Limit", WaitBehaviour("Pause", context, {"duration": 2.0}), 5.0, context.clock
    )
    inverter = py_trees.decorators.Inverter("Not", child=py_trees.behaviours.Failure("Nope"))
    forced = py_trees.decorators.FailureIsSuccess("Anyway", child=py_trees.behaviours.Failure("No"))
    refused = py_trees.decorators.SuccessIsFailure(
        "Never", child=py_trees.behaviours.Success("Yes")
    )
    policy = policy or py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=True)
    both = py_trees.composites.Parallel("Both", policy=policy, children=[limit, inverter, forced])
    loop = py_trees.decorators.Repeat("Loop", child=fallback, num_success=3)
    return py_trees.composites.Sequence(
        "Mission", memory=memory, children=[gate, loop, both, refused]
    )


NAMES = ["Mission", "Gate", "Loop", "Try", "Twice", "Square", "Recover to last valid"]
NAMES += ["Both", "Limit", "Pause", "Not", "Nope", "Anyway", "No", "Never", "Yes"]


def test_the_node_views_have_stable_path_ids_and_one_per_behaviour():
    view = describe_tree(make_tree())
    uids = [node.id for node in view.walk()]
    assert len(uids) == len(set(uids)) == len(NAMES)
    assert uids[0] == "0"
    assert {uid.rpartition(".")[0] for uid in uids[1:]} <= set(
        uids
    )  # a child's id extends its parent's
    assert sorted(n.name for n in view.walk()) == sorted(NAMES)
    assert describe_tree(make_tree()) == view  # same tree, same ids


def test_ascii_shows_every_node_and_each_leafs_key_parameters():
    text = render_tree(make_tree(), "ascii")
    lines = text.splitlines()
    assert len(lines) == len(NAMES)
    for name in ["Mission", "Gate", "Loop", "Try", "Square", "Both", "Limit", "Not", "Never"]:
        assert name in text
    assert "Square: sync_move [heavy, light] 4 waypoints p_e=20 mm" in text
    assert "recover_to_last_valid [heavy] p_e={heavy: 10} mm" in text
    assert '"Ready to grasp the wheel?"' in text
    assert "→ sequence  Mission" in lines[0]
    assert "◇ repeat ×3  Loop" in text
    assert "◇ retry 2 attempts  Twice" in text
    assert "⇉ parallel (all succeed)  Both" in text
    assert "◇ timeout 5 s  Limit" in text
    assert "└── " in text and "├── " in text


def test_ascii_leaves_out_parameters_at_their_default_except_the_headline_ones():
    text = render_tree(make_tree(), "ascii")
    assert "recovery=" not in text and "settle=" not in text and "r_e=" not in text
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    pose = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    leaf = FakeSyncMove(
        "Move",
        context,
        params(
            "sync_move",
            limbs=("heavy",),
            waypoints=(MappingProxyType({"heavy": pose}),),
            recovery="nearest",
            r_e=math.radians(30),
            max_speed=0.05,
            loop=True,
        ),
    )
    line = render_tree(leaf, "ascii").strip()
    assert line == (
        "Move: sync_move [heavy] 1 waypoint p_e=20 mm r_e=30 deg recovery=nearest "
        "max_speed=50 mm/s loop"
    )


def test_ascii_with_status_marks_each_node_and_shows_feedback():
    root = make_tree()
    root.tick_once()
    root.tick_once()
    lines = render_tree(root, "ascii", show_status=True).splitlines()
    by_name = {name: next(line for line in lines if name in line) for name in ("Gate", "Square")}
    assert lines[0].startswith("* ")
    assert by_name["Gate"].startswith("✓ ") and "— confirmed" in by_name["Gate"]
    assert by_name["Square"].startswith("* ")
    assert by_name["Square"].endswith("— segment 2/4, t = 0.412")
    assert next(line for line in lines if "Both" in line).startswith("- ")


LABEL = re.compile(r'label="((?:[^"\\]|\\.)*)"')


def unescape(dot_string):
    """The text of a DOT string's body: ``\\n`` a newline, ``\\x`` the character x."""
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), dot_string)


def test_dot_is_a_balanced_graph_with_every_node_and_edge():
    text = render_tree(make_tree(), "dot")
    assert text.startswith('digraph "Mission" {') and text.rstrip().endswith("}")
    assert text.count("{") == text.count("}")
    without_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    assert without_strings.count("[") == without_strings.count("]")
    declared = re.findall(r'^  "([0-9.]+)" \[', text, re.MULTILINE)
    edges = re.findall(r'^  "([0-9.]+)" -> "([0-9.]+)";$', text, re.MULTILINE)
    assert len(declared) == len(set(declared)) == len(NAMES)
    assert len(edges) == len(NAMES) - 1
    assert {child for _, child in edges} == set(declared) - {"0"}
    labels = [unescape(label) for label in LABEL.findall(text)]
    assert len(labels) == len(NAMES)
    for node in describe_tree(make_tree()).walk():
        assert any(node.name in label.split("\n") for label in labels) or not node.named
    shapes = dict(re.findall(r'^  "([0-9.]+)" \[.*?shape=(\w+)', text, re.MULTILINE))
    assert shapes["0"] == "box"  # the sequence
    assert shapes["0.1"] == "ellipse"  # the repeat
    assert "→ sequence" in text and "? fallback" in text and "⇉ parallel" in text
    assert "sync_move\\nSquare\\n[heavy, light]\\n4 waypoints\\np_e=20 mm" in text


def test_dot_escapes_quotes_in_labels():
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    gate = OperatorGateBehaviour('Say "go"', context, {"prompt": 'a "quoted" \\ prompt'})
    text = render_tree(gate, "dot")
    assert text.startswith('digraph "Say \\"go\\"" {')
    (label,) = LABEL.findall(text)
    assert unescape(label).split("\n") == ["operator_gate", 'Say "go"', '"a "quoted" \\ prompt"']


def test_svg_is_standalone_xml_with_one_box_per_node():
    text = render_tree(make_tree(), "svg")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    assert float(root.get("width")) > 0 and float(root.get("height")) > 0
    rects = root.findall(f".//{SVG}rect")
    groups = [g for g in root.iter(f"{SVG}g") if "node" in (g.get("class") or "").split()]
    assert len(rects) == len(groups) == len(NAMES)
    assert len(root.findall(f".//{SVG}path")) == len(NAMES) - 1
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    for name in ["Mission", "Square", "Both", "Gate"]:
        assert name in texts


def test_svg_boxes_do_not_overlap_and_parents_sit_above_their_children():
    root = ET.fromstring(render_tree(make_tree(), "svg"))
    boxes = {}
    for group in root.iter(f"{SVG}g"):
        rect = group.find(f"{SVG}rect")
        if rect is not None:
            x, y = float(rect.get("x")), float(rect.get("y"))
            boxes[group.get("id")] = (
                x,
                y,
                x + float(rect.get("width")),
                y + float(rect.get("height")),
            )
    ids = sorted(boxes)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = boxes[a], boxes[b]
            assert ax1 <= bx0 or bx1 <= ax0 or ay1 <= by0 or by1 <= ay0, (a, b)
    for uid, (x0, _, x1, y1) in boxes.items():
        children = [c for c in ids if re.fullmatch(re.escape(uid) + r"\.\d+", c)]
        for child in children:
            assert boxes[child][1] > y1
        if children:
            first, last = boxes[children[0]], boxes[children[-1]]
            centre = ((first[0] + first[2]) / 2 + (last[0] + last[2]) / 2) / 2
            assert x0 <= centre <= x1


def test_svg_with_status_colours_the_running_nodes():
    root = make_tree()
    root.tick_once()
    text = render_tree(root, "svg", show_status=True)
    ET.fromstring(text)
    assert "#fff1b8" in text and "RUNNING" in text


def btcpp(root):
    document = ET.fromstring(render_tree(root, "xml"))
    tree = document.find("BehaviorTree")
    return document, tree


def test_xml_is_btcpp_v4_with_the_main_tree_and_the_mapped_node_names():
    document, tree = btcpp(make_tree())
    assert document.tag == "root"
    assert document.get("BTCPP_format") == "4"
    assert document.get("main_tree_to_execute") == "MainTree"
    assert tree.get("ID") == "MainTree"
    (top,) = list(tree)
    assert top.tag == "Sequence" and top.get("name") == "Mission"
    assert [child.tag for child in top] == ["Action", "Repeat", "Parallel", "ForceFailure"]
    repeat = top.find("Repeat")
    assert repeat.get("num_cycles") == "3"
    fallback = repeat.find("Fallback")
    retry = fallback.find("RetryUntilSuccessful")
    assert retry.get("num_attempts") == "2"
    move = retry.find("Action")
    assert move.get("ID") == "SyncMove" and move.get("name") == "Square"
    assert move.get("limbs") == "heavy;light"
    assert move.get("p_e_mm") == "20" and move.get("r_e_deg") == "inf"
    assert move.get("recovery") == "last_valid" and move.get("monotonic") == "false"
    assert '"translation_mm":[100.0,0.0,0.0]' in move.get("waypoints")
    recover = fallback.find("Action[@ID='RecoverToLastValid']")
    assert recover.get("p_e_mm") == '{"heavy":10.0}'
    parallel = top.find("Parallel")
    assert parallel.get("success_count") == "-1" and parallel.get("failure_count") == "1"
    timeout = parallel.find("Timeout")
    assert timeout.get("msec") == "5000"
    assert timeout.find("Action").get("ID") == "Wait"
    assert timeout.find("Action").get("duration_s") == "2"
    assert parallel.find("Inverter/AlwaysFailure").get("name") == "Nope"
    assert parallel.find("ForceSuccess/AlwaysFailure").get("name") == "No"
    assert top.find("ForceFailure/AlwaysSuccess").get("name") == "Yes"
    gate = top.find("Action[@ID='OperatorGate']")
    assert gate.get("prompt") == "Ready to grasp the wheel?"


def test_xml_declares_every_custom_node_with_its_ports_in_the_tree_nodes_model():
    document, tree = btcpp(make_tree())
    model = document.find("TreeNodesModel")
    declared = {entry.get("ID"): entry for entry in model}
    used = {action.get("ID") for action in tree.iter("Action")}
    assert used == set(declared) == {"SyncMove", "RecoverToLastValid", "OperatorGate", "Wait"}
    assert all(entry.tag == "Action" for entry in model)
    ports = {port.get("name"): port for port in declared["SyncMove"].findall("input_port")}
    assert set(ports) == {p.key for p in NODE_SPECS["sync_move"].params}
    assert ports["p_e_mm"].get("default") == "20"
    assert "millimetres" in ports["p_e_mm"].text
    assert ports["settle_mm"].get("type") == "double"
    assert ports["loop"].get("type") == "bool" and ports["loop"].get("default") == "false"
    assert "default" not in ports["waypoints"].attrib
    for action in tree.iter("Action"):
        names = {p.get("name") for p in declared[action.get("ID")].findall("input_port")}
        assert set(action.attrib) - {"ID", "name", "_fullpath"} <= names


@pytest.mark.parametrize(
    ("memory", "sequence", "fallback"),
    [(True, "Sequence", "Fallback"), (False, "ReactiveSequence", "ReactiveFallback")],
)
def test_xml_maps_memory_to_btcpp_sequence_and_reactive_nodes(memory, sequence, fallback):
    _, tree = btcpp(make_tree(memory=memory))
    assert tree[0].tag == sequence
    assert tree.find(f"{sequence}/Repeat/{fallback}") is not None


def test_xml_maps_the_parallel_policies_to_success_and_failure_counts():
    one = py_trees.common.ParallelPolicy.SuccessOnOne()
    _, tree = btcpp(make_tree(policy=one))
    parallel = tree.find(".//Parallel")
    assert (parallel.get("success_count"), parallel.get("failure_count")) == ("1", "1")

    root = make_tree()
    both = next(node for node in root.iterate() if node.name == "Both")
    both.policy = py_trees.common.ParallelPolicy.SuccessOnSelected(
        children=both.children[:2], synchronise=False
    )
    text = render_tree(root, "xml")
    parallel = ET.fromstring(text).find(".//Parallel")
    assert parallel.get("success_count") == "2"
    assert "succeeds once these succeed: Limit, Not" in text
    assert "re-ticks children that already succeeded" in text


def test_xml_keeps_forever_and_unlimited_counts_as_minus_one():
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    wait = WaitBehaviour("Pause", context, {"duration": 1.0})
    retry = py_trees.decorators.Retry("Until", child=wait, num_failures=-1)
    root = py_trees.decorators.Repeat("Forever", child=retry, num_success=-1)
    _, tree = btcpp(root)
    assert tree.find("Repeat").get("num_cycles") == "-1"
    assert tree.find("Repeat/RetryUntilSuccessful").get("num_attempts") == "-1"
    assert "◇ repeat forever" in render_tree(root, "ascii")


def test_file_units_collapse_equal_poses_and_write_rotations_in_degrees():
    spec = NODE_SPECS["sync_move"].param("waypoints")
    same = (0.1, 0.2, 0.0, 0.0, 0.0, 0.0, 1.0)
    turned = (0.0, 0.0, 0.01, *quarter_turn_z())
    value = (
        MappingProxyType({"a": same, "b": same}),
        MappingProxyType({"a": same, "b": turned}),
    )
    first, second = to_file_units(spec.type, value)
    assert first == {"translation_mm": [100.0, 200.0, 0.0]}
    assert second["b"] == {"translation_mm": [0.0, 0.0, 10.0], "rotation_deg": [0.0, 0.0, 90.0]}
    p_e = NODE_SPECS["sync_move"].param("p_e")
    assert to_file_units(p_e.type, 0.02) == 20.0
    assert to_file_units(p_e.type, math.inf) == math.inf


def test_a_single_pose_port_is_written_in_file_units_like_waypoints():
    # impedance_move's goal (mar_torso) came out as SI "0.08;0;0.05;0;0;0.0436194;0.999048"
    goal = NODE_SPECS["impedance_move"].param("goal")
    value = (0.08, 0.0, 0.05, *quarter_turn_z())
    pose = {"translation_mm": [80.0, 0.0, 50.0], "rotation_deg": [0.0, 0.0, 90.0]}
    assert to_file_units(goal.type, value) == pose
    assert to_file_units(goal.type, (0.0, 0.01, 0.0, 0.0, 0.0, 0.0, 1.0)) == {
        "translation_mm": [0.0, 10.0, 0.0]
    }


def test_an_unknown_format_names_the_valid_ones():
    with pytest.raises(TreesError, match="ascii, dot, svg, xml"):
        render_tree(make_tree(), "png")


def test_a_mission_file_renders_in_every_format_with_every_node():
    from limbtree.trees.app import offline_tree

    root = offline_tree(Path(__file__).parent / "missions" / "full.yaml")
    count = sum(1 for _ in root.iterate())
    outputs = {fmt: render_tree(root, fmt) for fmt in FORMATS}
    assert len(outputs["ascii"].splitlines()) == count
    assert len(re.findall(r'^  "[0-9.]+" \[', outputs["dot"], re.MULTILINE)) == count
    assert len(ET.fromstring(outputs["svg"]).findall(f".//{SVG}rect")) == count
    document = ET.fromstring(outputs["xml"])
    # (full.yaml uses each of its subtrees once: each node is in one tree, a use is a SubTree)
    trees = document.findall("BehaviorTree")
    nodes = [e for tree in trees for e in tree.iter() if e.tag not in ("BehaviorTree", "SubTree")]
    assert len(nodes) == count
    assert "sync_move [heavy, light] 2 waypoints p_e={heavy: 20, light: 10} mm" in outputs["ascii"]
    ids = {e.get("ID") for e in document.find("TreeNodesModel")}
    assert {"SyncMove", "JointMove", "VelocityMove", "JointSyncMove", "Wait"} <= ids


def two_moves_named_alike():
    """A sequence of two leaves with one display name, as a mission file may have."""
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    first = WaitBehaviour("Move", context, {"duration": 1.0})
    second = WaitBehaviour("Move", context, {"duration": 2.0})
    return py_trees.composites.Sequence("Twice", memory=True, children=[first, second])


def test_two_nodes_with_one_name_stay_two_nodes_in_dot_svg_and_xml():
    root = two_moves_named_alike()
    dot = render_tree(root, "dot")
    assert re.findall(r'^  "0" -> "([0-9.]+)";$', dot, re.MULTILINE) == ["0.0", "0.1"]
    svg = ET.fromstring(render_tree(root, "svg"))
    ids = [g.get("id") for g in svg.iter(f"{SVG}g") if "node" in (g.get("class") or "")]
    assert ids == ["node-0", "node-0.0", "node-0.1"]
    _, tree = btcpp(root)
    waits = tree.findall(".//Action[@name='Move']")
    assert [(w.get("_fullpath"), w.get("duration_s")) for w in waits] == [
        ("0.0", "1"),
        ("0.1", "2"),
    ]


def test_a_built_tree_is_described_from_the_params_its_nodes_carry():
    from limbtree.trees.app import offline_tree

    root = offline_tree(Path(__file__).parent / "missions" / "full.yaml")
    for node in describe_tree(root).walk():
        assert node.spec is not None and node.spec.type == node.type
    parallel = next(n for n in describe_tree(root).walk() if n.type == "parallel")
    assert parallel.params["policy"] == "selected" and parallel.detail.startswith("selected")


def test_a_node_type_outside_limbtree_exports_from_its_declaration_alone():
    from limbtree.trees.mission.model import NodeModel
    from limbtree.trees.nodes import NodeExport, NodeKind, NodeSpec, ParamSpec, Text, leaf

    class Beep(SkillBehaviour):
        node_type = "beep"

        def step(self):
            return Status.SUCCESS

    beep = NodeSpec(
        "beep",
        NodeKind.LEAF,
        (ParamSpec("tone", Text(), "A", "which tone"),),
        (0, 0),
        "beep once",
        build=leaf(Beep),
        export=NodeExport(category="Condition", fill="#123456", headline=("tone",)),
    )
    registry = builtin_registry().with_types(beep)
    context = MissionContext(limbs={}, clock=lambda: 0.0)
    node = beep.build(NodeModel("beep", "Ring", {"tone": "A"}, (), None), (), context)
    assert render_tree(node, "ascii", registry=registry).strip() == 'Ring: beep "A"'
    assert 'fillcolor="#123456"' in render_tree(node, "dot", registry=registry)
    document = ET.fromstring(render_tree(node, "xml", registry=registry))
    (declared,) = document.find("TreeNodesModel")
    assert (declared.tag, declared.get("ID")) == ("Condition", "Beep")
    assert document.find("BehaviorTree/Condition").get("tone") == "A"


def test_node_ids_set_by_the_runner_are_the_ones_exported():
    root = two_moves_named_alike()
    second = root.children[1]
    second.node_id = "0.1"  # what the identity pass assigns
    assert [n.id for n in describe_tree(root).walk()] == ["0", "0.0", "0.1"]
    assert describe_tree(second).id == "0.1"  # a subtree rendered alone keeps its identity


def test_ascii_shows_postures_and_offsets_value_by_value_in_file_units():
    from limbtree.trees.app import offline_tree

    mission = Path(__file__).parent.parent / "missions" / "self_assembly_minimal.yaml"
    text = render_tree(offline_tree(mission), "ascii")
    assert "items" not in text
    assert "q=[-4, 34, -34.8, 53.9, 18.7, 96.8, 133.3] deg" in text
    assert "offset=[0, 0, -150] mm" in text


SUBTREE_LIBRARY = """
description: Subtrees for the export tests.
subtrees:
  pause:
    parameters: {seconds: 1}
    tree: {wait: {duration_s: $seconds}}
"""

SUBTREE_MISSION = """
mission: subtrees
clock: sim
include: [lib.yaml]
limbs:
  arm: {robot: light_limb}
subtrees:
  square:
    parameters: {side_mm: 100}
    tree:
      sync_move:
        limbs: [arm]
        waypoints: [{translation_mm: [$side_mm, 0, 0]}, {translation_mm: [0, $side_mm, 0]}]
  twice:
    parameters: {seconds: 1}
    tree:
      sequence:
        - {subtree: pause, with: {seconds: $seconds}}
        - {subtree: pause, with: {seconds: $seconds}}
tree:
  sequence:
    name: Main
    children:
      - {subtree: square, with: {side_mm: 100}}
      - {subtree: square, with: {side_mm: 120}, name: Bigger}
      - {subtree: square}
      - {subtree: twice, with: {seconds: 2}}
      - {subtree: pause}
"""


def subtree_xml(tmp_path):
    from limbtree.trees.app import offline_tree

    (tmp_path / "lib.yaml").write_text(SUBTREE_LIBRARY)
    (tmp_path / "m.yaml").write_text(SUBTREE_MISSION)
    return ET.fromstring(render_tree(offline_tree(tmp_path / "m.yaml"), "xml"))


def test_xml_writes_each_subtree_use_as_a_subtree_of_its_own_behavior_tree(tmp_path):
    document = subtree_xml(tmp_path)
    trees = {tree.get("ID"): tree for tree in document.findall("BehaviorTree")}
    assert document.findall("BehaviorTree")[0].get("ID") == "MainTree"
    assert document.get("main_tree_to_execute") == "MainTree"
    # every <SubTree ID> has its <BehaviorTree ID>, and every definition is used
    uses = {use.get("ID") for use in document.iter("SubTree") if use.get("name")}
    assert uses == set(trees) - {"MainTree"}
    for tree in trees.values():
        assert len([e for e in tree if isinstance(e.tag, str)]) == 1  # BT.CPP: one root
    main = trees["MainTree"].find("Sequence")
    assert main.get("name") == "Main" and main.get("_fullpath") == "0"
    assert [(e.tag, e.get("ID"), e.get("name"), e.get("_fullpath")) for e in main] == [
        ("SubTree", "square", "square", "0.0"),
        ("SubTree", "square_2", "Bigger", "0.1"),
        ("SubTree", "square", "square (2)", "0.2"),  # one name per tree for BT.CPP
        ("SubTree", "twice", "twice", "0.3"),
        ("SubTree", "pause", "pause", "0.4"),
    ]
    assert [tree.get("ID") for tree in document.findall("BehaviorTree")] == [
        "MainTree",
        "square",
        "square_2",
        "twice",
        "pause",
    ]
    # side_mm is inside the waypoints: one definition per distinct use, equal uses share it
    move = trees["square"].find("Action")
    assert move.get("ID") == "SyncMove" and move.get("_fullpath") == "0"
    assert "[100.0,0.0,0.0]" in move.get("waypoints")
    assert "[120.0,0.0,0.0]" in trees["square_2"].find("Action").get("waypoints")
    assert trees["square_2"].find("Action").get("name") == "Bigger"
    assert "side_mm" not in main[0].attrib


def test_xml_passes_a_parameter_that_is_a_whole_value_as_a_subtree_port(tmp_path):
    document = subtree_xml(tmp_path)
    trees = {tree.get("ID"): tree for tree in document.findall("BehaviorTree")}
    main = trees["MainTree"].find("Sequence")
    # the included pause: one definition, its seconds a port (1 s here, 2 s through twice)
    wait = trees["pause"].find("Action")
    assert (wait.get("ID"), wait.get("duration_s"), wait.get("_fullpath")) == (
        "Wait",
        "{seconds}",
        "0",
    )
    assert main[4].get("seconds") == "1"
    assert main[3].get("seconds") == "2"
    model = {entry.get("ID"): entry for entry in document.find("TreeNodesModel")}
    assert model["pause"].tag == "SubTree" and model["twice"].tag == "SubTree"
    for tree_id in ("pause", "twice"):
        assert [port.get("name") for port in model[tree_id]] == ["seconds"]
    assert "square" not in model and {"SyncMove", "Wait"} <= set(model)
    # every port a SubTree model declares is given at every use (BT.CPP requires it)
    for use in document.iter("SubTree"):
        if use.get("ID") in model and use.get("name") is not None:
            declared = {port.get("name") for port in model[use.get("ID")]}
            assert declared <= set(use.attrib)


def test_xml_nests_subtrees_with_ids_relative_to_each_definition(tmp_path):
    document = subtree_xml(tmp_path)
    trees = {tree.get("ID"): tree for tree in document.findall("BehaviorTree")}
    twice = trees["twice"].find("Sequence")
    assert twice.get("_fullpath") == "0"
    # the enclosing subtree's port passed on: seconds="{seconds}"
    assert [(e.get("ID"), e.get("name"), e.get("seconds"), e.get("_fullpath")) for e in twice] == [
        ("pause", "pause", "{seconds}", "0.0"),
        ("pause", "pause (2)", "{seconds}", "0.1"),
    ]


def test_xml_of_a_mission_without_subtrees_has_only_the_main_tree():
    from limbtree.trees.app import offline_tree

    mission = Path(__file__).parent / "missions" / "loop_same_point.yaml"
    document = ET.fromstring(render_tree(offline_tree(mission), "xml"))
    assert [tree.get("ID") for tree in document.findall("BehaviorTree")] == ["MainTree"]
    assert document.find(".//SubTree") is None
