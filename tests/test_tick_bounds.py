"""Composites and decorators that re-run a child tick it at most once per tick (issue 19).

A child that ends at once (SUCCESS or FAILURE on its first tick) under ``repeat`` forever,
``until_success`` or ``retry`` must not be started again inside the same tick: each tick of
the root ticks it once, so a tick does a bounded amount of work however fast its children
end.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import py_trees
import pytest

from limbtree.trees.app import robot_catalogue
from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.builder import build_tree
from limbtree.trees.context import MissionContext
from limbtree.trees.mission import load_mission
from limbtree.trees.nodes import Choice, NodeKind, NodeSpec, ParamSpec, default_registry, leaf


class Instant(SkillBehaviour):
    """Ends on its first tick with the status of its ``outcome`` parameter; counts ticks."""

    node_type = "instant"

    def step(self) -> py_trees.common.Status:
        return py_trees.common.Status[str(self.params["outcome"]).upper()]


INSTANT = NodeSpec(
    "instant",
    NodeKind.LEAF,
    (ParamSpec("outcome", Choice(("success", "failure")), "success", "how it ends"),),
    (0, 0),
    "ends at once",
    build=leaf(Instant),
)

CASES = {
    "repeat forever": "repeat: {times: forever, child: {instant: {outcome: success}}}",
    "until_success": "until_success: {child: {instant: {outcome: failure}}}",
    "retry": "retry: {times: 1000, child: {instant: {outcome: failure}}}",
    "sequence of repeats": """
        sequence:
          children:
            - repeat: {times: forever, child: {instant: {outcome: success}}}
    """,
}


@pytest.mark.parametrize("tree", CASES.values(), ids=CASES.keys())
def test_a_child_that_ends_at_once_is_ticked_once_per_tick(tmp_path: Path, tree: str) -> None:
    registry = default_registry().with_types(INSTANT)
    path = tmp_path / "bounded.yaml"
    body = textwrap.indent(textwrap.dedent(tree).strip(), "  ")
    path.write_text(f"mission: bounded\ntree:\n{body}\n")
    mission = load_mission(path, robots=robot_catalogue(), registry=registry)
    root = build_tree(mission.root, MissionContext({}, lambda: 0.0), registry)
    (child,) = [node for node in root.iterate() if isinstance(node, Instant)]
    for tick in range(1, 21):
        root.tick_once()
        assert child.ticks == tick
        assert root.status is py_trees.common.Status.RUNNING
