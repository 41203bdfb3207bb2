"""One commander per limb, as a property over random trees built from the node registry.

``limbtree check`` accepts a tree iff no limb is reachable from two children of one
parallel (or of a sequence or fallback without memory, which re-ticks its first children
while a later one runs); an accepted tree, run in the sim clock over fake limbs, never has
a limb owned by two nodes at once nor a command refused, and every command in the record
was sent while one node owned the limb (read from the record's claim events).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fake_limbs import FakeLink, handles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limbtree.trees.app import robot_catalogue
from limbtree.trees.builder import build_tree
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.mission import NodeKind, check_mission, load_mission
from limbtree.trees.nodes import builtin_registry
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import Runner, RunOptions, TickClock

REGISTRY = builtin_registry()
ROBOTS = robot_catalogue()
LIMBS = ("a", "b")
HEAD = "mission: random\nclock: sim\nrate_hz: 50\nlimbs:\n" + "".join(
    f"  {limb}: {{robot: light_limb}}\n" for limb in LIMBS
)
#: Values for the required parameters of the registry's decorators, by key.
REQUIRED_VALUES: dict[str, Any] = {"times": 2, "duration_s": 1.0}

COMPOSITES = [name for name, spec in REGISTRY.items() if spec.kind is NodeKind.COMPOSITE]
DECORATORS = [name for name, spec in REGISTRY.items() if spec.kind is NodeKind.DECORATOR]
#: Composites to draw from, parallel three times as often (more conflicts).
DRAWN_COMPOSITES = COMPOSITES + ["parallel"] * 2


def decorator_params(name: str) -> dict[str, Any]:
    return {p.key: REQUIRED_VALUES[p.key] for p in REGISTRY[name].params if p.required}


# A node: (type, params, children, limbs it commands itself).
Node = tuple[str, dict[str, Any], tuple[Any, ...], frozenset[str]]

limb_sets = st.sets(st.sampled_from(LIMBS), min_size=1, max_size=2)
leaves = st.one_of(
    st.floats(0.02, 0.2).map(lambda d: ("wait", {"duration_s": round(d, 2)}, (), frozenset())),
    limb_sets.map(
        lambda limbs: (
            "sync_move",
            {"limbs": sorted(limbs), "waypoints": [{"translation_mm": [10, 0, 0]}]},
            (),
            frozenset(limbs),
        )
    ),
    st.sampled_from(LIMBS).map(
        lambda limb: (
            "joint_move",
            {"limb": limb, "posture": {"q_deg": [5, 0, 0]}},
            (),
            frozenset({limb}),
        )
    ),
)


def composite_params(name: str, policy: str, memory: bool) -> dict[str, Any]:
    keys = {p.key for p in REGISTRY[name].params}
    drawn = {"policy": policy, "memory": memory}
    return {key: value for key, value in drawn.items() if key in keys}


def _composite(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.builds(
        lambda name, kids, policy, memory: (
            name,
            composite_params(name, policy, memory),
            tuple(kids),
            frozenset(),
        ),
        st.sampled_from(DRAWN_COMPOSITES),
        st.lists(children, min_size=1, max_size=3),
        st.sampled_from(["all", "one"]),
        st.booleans(),
    )


def _decorator(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.builds(
        lambda name, child: (name, decorator_params(name), (child,), frozenset()),
        st.sampled_from(DECORATORS),
        children,
    )


trees = st.recursive(
    leaves, lambda children: st.one_of(_composite(children), _decorator(children)), max_leaves=8
)


def reachable(node: Node) -> frozenset[str]:
    """The limbs a node or any node below it commands."""
    _, _, children, limbs = node
    return limbs.union(*(reachable(child) for child in children))


def conflicts(node: Node) -> bool:
    """Whether a limb is reachable from two children of one composite that runs children
    together: a parallel, or a sequence or fallback without memory (the oracle)."""
    name, params, children, _ = node
    if name == "parallel" or (name in ("sequence", "fallback") and not params["memory"]):
        seen: set[str] = set()
        for child in children:
            limbs = reachable(child)
            if seen & limbs:
                return True
            seen |= limbs
    return any(conflicts(child) for child in children)


def as_yaml(node: Node) -> Any:
    name, params, children, _ = node
    body = dict(params)
    spec = REGISTRY[name]
    if spec.kind is NodeKind.COMPOSITE:
        body["children"] = [as_yaml(child) for child in children]
    elif spec.kind is NodeKind.DECORATOR:
        body["child"] = as_yaml(children[0])
    return {name: body}


def write(folder: Path, tree: Node) -> Path:
    path = folder / "random.yaml"
    path.write_text(HEAD + "tree: " + json.dumps(as_yaml(tree)) + "\n")
    return path


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_check_accepts_a_tree_iff_no_limb_is_reachable_from_two_children_of_a_parallel(tree):
    with tempfile.TemporaryDirectory() as folder:
        problems = check_mission(write(Path(folder), tree), robots=ROBOTS, registry=REGISTRY)
    assert (problems == []) == (not conflicts(tree)), [str(p) for p in problems]
    assert all("may be commanded by two branches" in p.message for p in problems)


def run_recorded(path: Path, folder: Path) -> list[dict[str, Any]]:
    mission = load_mission(path, robots=ROBOTS, registry=REGISTRY)
    clock = TickClock()
    links = {limb: FakeLink((float(i), 0.0, 0.0), 0.2, clock=clock.now) for i, limb in
             enumerate(LIMBS)}  # fmt: skip
    context = MissionContext(handles(links), clock.now)
    root = build_tree(mission.root, context, REGISTRY)
    options = RunOptions(rate_hz=50.0, record_dir=folder / "rec", max_time_s=2.0)
    out = [HeadlessProgress(io.StringIO())]
    Runner("random", clock, root, context, links, [], options, out).run()
    return list(read_log(folder / "rec" / "log.msgpack"))


@pytest.mark.slow
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_an_accepted_tree_never_has_two_commanders_on_one_limb_in_its_record(tree):
    if conflicts(tree):
        return  # refused by check: covered by the test above
    with tempfile.TemporaryDirectory() as folder:
        ticks = run_recorded(write(Path(folder), tree), Path(folder))
    owners: dict[str, str] = {}
    for tick in ticks:
        held = {limb: {owners[limb]} if limb in owners else set() for limb in LIMBS}
        for event in tick["events"]:
            assert event["kind"] != "limb_refused", event
            limb = event.get("limb")
            if event["kind"] == "limb_claimed":
                assert limb not in owners, (tick["tick"], event, owners)
                owners[limb] = event["node"]
                held[limb].add(event["node"])
            elif event["kind"] == "limb_released":
                assert owners.pop(limb) == event["node"]
        for limb, entry in tick["limbs"].items():
            if entry["command"] is not None or entry["q_command"] is not None:
                # commanded this tick: by a node that owned the limb during the tick
                assert held[limb], (tick["tick"], limb)
