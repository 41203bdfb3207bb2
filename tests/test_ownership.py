"""One commander per limb: the static check of ``limbtree check`` and ``limbtree run``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from limbtree.trees import app
from limbtree.trees.app import robot_catalogue
from limbtree.trees.cli import main
from limbtree.trees.mission import MissionError, NodeKind, NodeSpec, check_mission, load_mission
from limbtree.trees.nodes import ALWAYS, builtin_registry
from limbtree.trees.stream import EventKind

ROBOTS = robot_catalogue()
DOCS = Path(__file__).parent.parent / "docs" / "missions.md"

HEAD = """\
mission: same_limb_twice
clock: sim
rate_hz: 50
limbs:
  arm: {robot: light_limb}
  leg: {robot: light_limb}
"""

#: The mission of issue 19, as a new user wrote it.
SAME_LIMB_TWICE = (
    HEAD
    + """\
tree:
  parallel:
    policy: all
    children:
      - sync_move:
          limbs: [arm]
          waypoints: [{translation_mm: [40, 0, 0]}]
      - sync_move:
          limbs: [arm]
          waypoints: [{translation_mm: [0, 40, 0]}]
"""
)


def write(tmp_path, text, name="m.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def problems(tmp_path, text, **kwargs):
    path = write(tmp_path, text)
    return [str(p) for p in check_mission(path, robots=ROBOTS, **kwargs)], str(path)


def test_two_branches_of_a_parallel_on_one_limb_are_refused(tmp_path):
    found, path = problems(tmp_path, SAME_LIMB_TWICE)
    assert len(found) == 1
    (message,) = found
    assert message.startswith(f"{path}:14:9: limb arm may be commanded by two branches")
    assert f'parallel 0 "Parallel" (at {path}:8:3)' in message
    assert f'node 0.0 "Sync move" (sync_move at {path}:11:9)' in message
    assert f'node 0.1 "Sync move" (sync_move at {path}:14:9)' in message
    assert "in a sequence" in message and "its own limbs" in message


def test_load_mission_raises_with_the_same_message(tmp_path):
    path = write(tmp_path, SAME_LIMB_TWICE)
    with pytest.raises(MissionError) as caught:
        load_mission(path, robots=ROBOTS)
    assert "limb arm may be commanded by two branches" in str(caught.value)


def test_a_subtree_used_twice_with_the_same_limbs_conflicts(tmp_path):
    text = (
        HEAD
        + """\
subtrees:
  nudge:
    parameters: {limbs: null}
    tree:
      sequence:
        - wait: {duration_s: 0.1}
        - sync_move: {limbs: $limbs, waypoints: [{translation_mm: [10, 0, 0]}]}
tree:
  parallel:
    - {subtree: nudge, with: {limbs: [arm, leg]}}
    - {subtree: nudge, with: {limbs: [leg]}, name: Second}
"""
    )
    found, path = problems(tmp_path, text)
    assert len(found) == 1
    (message,) = found
    assert message.startswith(f"{path}:17:7: limb leg may be commanded")
    assert f"node 0.0.1 \"Sync move\" (sync_move at {path}:13:11, in subtree nudge used at " \
        f"{path}:16:7)" in message  # fmt: skip
    assert f"node 0.1.1 \"Sync move\" (sync_move at {path}:13:11, in subtree nudge used at " \
        f"{path}:17:7)" in message  # fmt: skip


def test_a_conflict_one_sequence_deep_under_a_parallel_is_found(tmp_path):
    text = (
        HEAD
        + """\
tree:
  parallel:
    - sequence:
        - wait: {duration_s: 0.1}
        - sync_move: {limbs: [leg], waypoints: [{translation_mm: [10, 0, 0]}]}
    - sync_move: {limbs: [arm, leg], waypoints: [{translation_mm: [0, 10, 0]}]}
"""
    )
    found, _ = problems(tmp_path, text)
    assert len(found) == 1
    assert "limb leg may be commanded" in found[0]
    assert 'node 0.0.1 "Sync move"' in found[0] and 'node 0.1 "Sync move"' in found[0]


def test_two_different_skill_types_on_one_limb_conflict(tmp_path):
    text = (
        HEAD
        + """\
tree:
  parallel:
    - joint_move: {limb: arm, posture: {q_deg: [0, 10, 0, 0, 0, 0, 0]}}
    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 10, 0]}]}
"""
    )
    found, _ = problems(tmp_path, text)
    assert len(found) == 1
    assert 'node 0.0 "Joint move" (joint_move' in found[0]
    assert 'node 0.1 "Sync move" (sync_move' in found[0]


def test_a_parameter_set_on_the_command_line_can_make_the_conflict(tmp_path):
    text = (
        HEAD
        + """\
parameters:
  other: [leg]
tree:
  parallel:
    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [10, 0, 0]}]}
    - sync_move: {limbs: $other, waypoints: [{translation_mm: [0, 10, 0]}]}
"""
    )
    assert problems(tmp_path, text)[0] == []
    found, _ = problems(tmp_path, text, overrides={"other": "[arm]"})
    assert len(found) == 1 and "limb arm may be commanded" in found[0]


def test_a_limb_named_by_its_robot_and_as_robot_limb_is_one_limb(tmp_path):
    text = """\
mission: alias
robots:
  big: {robot: heavy_limb}
tree:
  parallel:
    - sync_move: {limbs: [big.arm], waypoints: [{translation_mm: [10, 0, 0]}]}
    - joint_move: {limb: big, posture: {q_deg: [0, 10, 0, 0, 0, 0, 0]}}
"""
    found, _ = problems(tmp_path, text)
    assert len(found) == 1 and "limb big.arm may be commanded" in found[0]


def test_three_children_on_one_limb_give_one_problem_per_later_child(tmp_path):
    text = (
        HEAD
        + """\
tree:
  parallel:
    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [10, 0, 0]}]}
    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 10, 0]}]}
    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 0, 10]}]}
"""
    )
    found, _ = problems(tmp_path, text)
    assert len(found) == 2
    assert all('node 0.0 "Sync move"' in message for message in found)


@pytest.mark.parametrize(
    "tree",
    [
        # a wait beside a looping move: a wait commands no limb
        """\
        parallel:
          policy: one
          children:
            - wait: {duration_s: 1}
            - sync_move:
                limbs: [arm]
                waypoints: [{translation_mm: [20, 0, 0]}, {translation_mm: [0, 0, 0]}]
                loop: true
        """,
        # two moves on different limbs
        """\
        parallel:
          - sync_move: {limbs: [arm], waypoints: [{translation_mm: [10, 0, 0]}]}
          - joint_move: {limb: leg, posture: {q_deg: [0, 10, 0, 0, 0, 0, 0]}}
        """,
        # the same limb in consecutive children of a sequence
        """\
        sequence:
          - sync_move: {limbs: [arm], waypoints: [{translation_mm: [40, 0, 0]}]}
          - sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 40, 0]}]}
        """,
        # one limb twice in a fallback, and a parallel that runs that fallback beside a wait
        """\
        parallel:
          - fallback:
              - sync_move: {limbs: [arm, leg], waypoints: [{translation_mm: [10, 0, 0]}]}
              - retry:
                  times: 2
                  child: {sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 0, 0]}]}}
          - wait: {duration_s: 1}
        """,
    ],
    ids=["wait-and-loop", "different-limbs", "sequence", "fallback"],
)
def test_legal_missions_stay_legal(tmp_path, tree):
    text = HEAD + "tree:\n" + textwrap.indent(textwrap.dedent(tree), "  ")
    assert problems(tmp_path, text)[0] == []


def test_limbtree_run_refuses_the_mission_before_any_agent_starts(tmp_path, monkeypatch, capsys):
    started = []

    class NoAgents:
        def __init__(self, *args, **kwargs):
            started.append(args)

        def start(self, *args, **kwargs):
            started.append(args)
            raise AssertionError("an agent was started")

    monkeypatch.setattr(app, "SimAgents", NoAgents)
    path = write(tmp_path, SAME_LIMB_TWICE)
    status = main(["run", str(path), "--headless", "--record", str(tmp_path / "rec")])
    err = capsys.readouterr().err
    assert status != 0
    assert f"{path}:14:9: limb arm may be commanded by two branches" in err
    assert started == []
    assert not (tmp_path / "rec").exists()
    assert main(["check", str(path)]) != 0
    assert capsys.readouterr().err.count("limb arm may be commanded") == 1


def test_only_a_composite_may_declare_it_ticks_children_at_once():
    with pytest.raises(ValueError, match="only a composite"):
        NodeSpec("act", NodeKind.LEAF, (), (0, 0), concurrent=ALWAYS)


def test_the_documented_example_is_refused_as_shown_and_its_fix_is_accepted(tmp_path, monkeypatch):
    text = DOCS.read_text()
    section = text[text.index("### One commander per limb") : text.index("### Skills (leaves)")]
    blocks = [block.split("```", 1)[0] for block in section.split("```yaml\n")[1:]]
    shown = section.split("```text\n", 1)[1].split("\n```", 1)[0]
    mission, fix = blocks
    monkeypatch.chdir(tmp_path)
    (tmp_path / "same_limb_twice.yaml").write_text(mission)
    found = check_mission("same_limb_twice.yaml", robots=ROBOTS)
    assert [str(p) for p in found] == [shown]
    head = mission[: mission.index("tree:")]
    (tmp_path / "fixed.yaml").write_text(head + fix)
    assert check_mission("fixed.yaml", robots=ROBOTS) == []


def test_the_record_documents_the_claim_events():
    record = (DOCS.parent / "record.md").read_text()
    for kind in (EventKind.LIMB_CLAIMED, EventKind.LIMB_RELEASED, EventKind.LIMB_REFUSED):
        assert f"| `{kind.value}` |" in record


def test_a_plug_in_node_type_takes_part_through_its_declaration(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "plugin_nodes"))
    from limbtree_plugin_nodes import HOLD_STILL

    registry = builtin_registry().with_types(HOLD_STILL)
    text = HEAD + textwrap.dedent("""\
        tree:
          parallel:
            - sync_move: {limbs: [arm], waypoints: [{translation_mm: [10, 0, 0]}]}
            - sequence:
                - hold_still: {limb: leg}
                - hold_still: {limb: arm}
        """)  # fmt: skip
    found, path = problems(tmp_path, text, registry=registry)
    assert len(found) == 1
    assert f'node 0.1.1 "Hold still" (hold_still at {path}:12:11)' in found[0]


@pytest.mark.parametrize("composite", ["sequence", "fallback"])
def test_a_composite_without_memory_re_ticks_its_first_child_beside_a_later_one(
    tmp_path, composite
):
    text = HEAD + textwrap.dedent(f"""\
        tree:
          {composite}:
            memory: false
            children:
              - sync_move: {{limbs: [arm], waypoints: [{{translation_mm: [10, 0, 0]}}]}}
              - sync_move: {{limbs: [arm], waypoints: [{{translation_mm: [0, 10, 0]}}]}}
        """)  # fmt: skip
    found, _ = problems(tmp_path, text)
    assert len(found) == 1
    assert f"limb arm may be commanded by two branches of {composite} 0" in found[0]
    assert "give it memory: true" in found[0]
    assert problems(tmp_path, text.replace("memory: false", "memory: true"))[0] == []


def test_a_conflict_is_reported_beside_the_mission_s_other_problems(tmp_path):
    text = SAME_LIMB_TWICE.replace("rate_hz: 50", "rate_hz: 50\nfaults:\n  - {at_s: 1, limb: arm}")
    found, _ = problems(tmp_path, text)
    assert len(found) == 2
    assert "needs kind" in found[0] and "limb arm may be commanded" in found[1]
