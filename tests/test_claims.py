"""One commander per limb at run time: the guard for trees ``limbtree check`` never saw."""

from __future__ import annotations

import io
from dataclasses import replace

import py_trees
import pytest
from fake_limbs import FakeLink, handles

from limbtree.kinematics import Pose
from limbtree.transport.driver import CommandMode
from limbtree.trees.app import robot_catalogue
from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.builder import build_tree
from limbtree.trees.claims import LimbClaims
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.mission import load_mission
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import Runner, RunOptions, RunOutcome, TickClock
from limbtree.trees.stream import EventKind

Status = py_trees.common.Status


class Push(SkillBehaviour):
    """Pushes the limb that ``pick()`` names (its limb is computed at run time) by
    ``offset`` [m] from where it starts, for ``ticks`` ticks, then succeeds."""

    node_type = "push"

    def start(self) -> None:
        self.limb = self.context.limb(self.params["pick"]())
        self.steps = 0
        pose = self.limb.pose()
        assert pose is not None
        self.goal = Pose(position=pose.position + self.params["offset"])

    def step(self) -> Status:
        self.set_target(self.limb.name, self.goal)
        self.limb.command_pose(self.goal)
        self.steps += 1
        return Status.SUCCESS if self.steps >= self.params["ticks"] else Status.RUNNING


class Idle(SkillBehaviour):
    """Commands nothing; succeeds after ``ticks`` ticks."""

    def start(self) -> None:
        self.steps = 0

    def step(self) -> Status:
        self.steps += 1
        return Status.SUCCESS if self.steps >= self.params["ticks"] else Status.RUNNING


def push(context, name, limb, offset, ticks=5):
    params = {"pick": lambda: limb, "offset": offset, "ticks": ticks}
    return Push(name, context, params)


def run(tmp_path, build):
    clock = TickClock()
    links = {
        "a": FakeLink((0.0, 0.0, 0.0), 0.2, clock=clock.now),
        "b": FakeLink((1.0, 0.0, 0.0), 0.2, clock=clock.now),
    }
    context = MissionContext(handles(links), clock.now)
    root = build(context)
    runner = Runner(
        "guard", clock, root, context, links, [],
        RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec", max_time_s=10.0),
        [HeadlessProgress(io.StringIO())],
    )  # fmt: skip
    outcome = runner.run()
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    events = [event for tick in ticks for event in tick["events"]]
    return outcome, root, links, events


def limb_events(events):
    kinds = {"limb_claimed", "limb_released", "limb_refused"}
    return [event for event in events if event["kind"] in kinds]


def test_a_second_commander_of_a_claimed_limb_fails_and_the_limb_hears_only_the_owner(tmp_path):
    def build(context):
        return py_trees.composites.Parallel(
            "both",
            policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
            children=[
                push(context, "forward", "a", (0.04, 0.0, 0.0)),
                push(context, "sideways", "a", (0.0, 0.04, 0.0)),
            ],
        )

    outcome, root, links, events = run(tmp_path, build)
    assert outcome is RunOutcome.FAILURE
    _owner, second = root.children
    assert second.status is Status.FAILURE
    assert "limb a is commanded by node 0.0" in second.feedback_message
    assert '"forward"' in second.feedback_message
    poses = [fields["pose"] for _mode, fields in links["a"].commands if "pose" in fields]
    assert poses and all(pose[1] == 0.0 for pose in poses)  # never the sideways goal
    assert any(pose[0] > 0.0 for pose in poses)
    assert limb_events(events) == [
        {"kind": "limb_claimed", "limb": "a", "node": "0.0", "t": 0.0},
        {
            "kind": "limb_refused",
            "limb": "a",
            "node": "0.1",
            "owner": "0.0",
            "t": 0.0,
            "message": second.feedback_message,
        },
        {"kind": "limb_released", "limb": "a", "node": "0.0", "t": 0.0},
    ]


def test_the_record_keeps_the_owners_target_frame_not_a_refused_nodes(tmp_path):
    def build(context):
        refused = push(context, "sideways", "a", (0.0, 0.04, 0.0), ticks=50)
        return py_trees.composites.Parallel(
            "both",
            policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
            children=[
                push(context, "forward", "a", (0.04, 0.0, 0.0)),
                py_trees.decorators.FailureIsRunning("keep trying", refused),
            ],
        )

    outcome, _root, _links, _events = run(tmp_path, build)
    assert outcome is RunOutcome.SUCCESS
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    targets = [t["limbs"]["a"].get("target") for t in ticks]
    assert targets[:4] == [[0.04, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]] * 4, targets


class AimAndFail(Push):
    """Sets its target frame, then fails."""

    def step(self) -> Status:
        self.set_target(self.limb.name, self.goal)
        return Status.FAILURE


def test_a_node_that_fails_in_its_tick_leaves_no_target_frame(tmp_path):
    outcome, *_ = run(tmp_path, lambda c: AimAndFail("aim", c, {"pick": lambda: "a", "offset": 0}))
    assert outcome is RunOutcome.FAILURE
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    assert [t["limbs"]["a"].get("target") for t in ticks] == [None]


def test_a_node_halted_in_its_tick_leaves_no_target_frame(tmp_path):
    def build(context):
        return py_trees.composites.Parallel(
            "both",
            policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
            children=[
                push(context, "short", "b", (0.04, 0.0, 0.0), ticks=2),  # halts the other
                push(context, "long", "a", (0.04, 0.0, 0.0), ticks=50),
            ],
        )

    run(tmp_path, build)
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    a = [t["limbs"]["a"].get("target") for t in ticks]
    b = [t["limbs"]["b"].get("target") for t in ticks]
    assert a[0] is not None and b[1] is not None
    assert a[1] is None  # "long" was halted in tick 1: its limb holds


def test_a_limb_is_free_again_when_its_owner_ends_or_is_halted(tmp_path):
    def build(context):
        race = py_trees.composites.Parallel(
            "race",
            policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
            children=[
                Idle("short", context, {"ticks": 3}),
                push(context, "long", "a", (0.04, 0.0, 0.0), ticks=1000),
            ],
        )
        return py_trees.composites.Sequence(
            "then",
            memory=True,
            children=[
                race,
                push(context, "first", "b", (0.0, 0.01, 0.0), ticks=2),
                push(context, "again", "b", (0.0, 0.02, 0.0), ticks=2),
                push(context, "after", "a", (0.0, 0.03, 0.0), ticks=2),
            ],
        )

    outcome, _root, _links, events = run(tmp_path, build)
    assert outcome is RunOutcome.SUCCESS
    seen = [(e["kind"], e["limb"], e["node"], round(e["t"], 3)) for e in limb_events(events)]
    assert seen == [
        ("limb_claimed", "a", "0.0.1", 0.0),
        ("limb_released", "a", "0.0.1", 0.04),  # halted when "short" succeeded
        # a sequence starts its next child in the tick the previous one ends: the limb
        # passes from one owner to the next within that tick
        ("limb_claimed", "b", "0.1", 0.04),
        ("limb_released", "b", "0.1", 0.06),
        ("limb_claimed", "b", "0.2", 0.06),
        ("limb_released", "b", "0.2", 0.08),
        ("limb_claimed", "a", "0.3", 0.08),
        ("limb_released", "a", "0.3", 0.1),
    ]


def test_a_halted_node_holds_only_the_limbs_it_owns():
    t = [0.0]
    claims = LimbClaims(lambda: t[0])
    owner = Idle("owner", None, {})
    other = Idle("other", None, {})
    with claims.acting(owner):
        assert claims.may_command("a")
    with claims.acting(other, stopping=True):
        assert not claims.may_command("a")  # a hold on another's limb is dropped
        assert claims.may_command("b")  # a free limb: not claimed while stopping
    assert claims.refusal(other) is None
    assert claims.owner("a") is owner and claims.owner("b") is None
    assert claims.may_command("a")  # no node acting: the runner holding every limb
    assert [event.kind for event in claims.drain()] == [EventKind.LIMB_CLAIMED]
    claims.release(owner)
    assert claims.owner("a") is None
    assert [event.kind for event in claims.drain()] == [EventKind.LIMB_RELEASED]


@pytest.mark.parametrize("first", ["hold", "joints"])
def test_every_kind_of_command_claims_the_limb(first):
    clock = TickClock()
    context = MissionContext(handles({"a": FakeLink()}), clock.now)
    limb = context.limb("a")
    owner, other = Idle("owner", context, {}), Idle("other", context, {})
    with context.claims.acting(owner):
        assert limb.hold() if first == "hold" else limb.command_joints([0.0, 0.0, 0.0])
    with context.claims.acting(other):
        assert not limb.command_twist([0.0, 0.0, 0.01], [0.0, 0.0, 0.0])
        assert not limb.command_pose(Pose())
        assert not limb.gripper(0)
    assert "limb a is commanded by" in (context.claims.refusal(other) or "")
    assert len(limb.link.commands) == 1


def test_the_issue_tree_built_in_python_past_the_check_fails_on_its_second_commander(tmp_path):
    # A legal mission (two limbs), then the model edited in Python so that both moves
    # command limb a: the tree the issue describes, which the check never saw.
    path = tmp_path / "m.yaml"
    path.write_text(
        "mission: two\nrate_hz: 50\nlimbs:\n  a: {robot: light_limb}\n  b: {robot: light_limb}\n"
        "tree:\n  parallel:\n"
        "    - sync_move: {limbs: [a], waypoints: [{translation_mm: [40, 0, 0]}]}\n"
        "    - sync_move: {limbs: [b], waypoints: [{translation_mm: [0, 40, 0]}]}\n"
    )
    model = load_mission(path, robots=robot_catalogue()).root
    params = model.children[1].params
    waypoints = tuple({"a": waypoint["b"]} for waypoint in params["waypoints"])
    second = replace(model.children[1], params={**params, "limbs": ("a",), "waypoints": waypoints})
    model = replace(model, children=(model.children[0], second))

    def build(context):
        return build_tree(model, context)

    outcome, root, links, events = run(tmp_path, build)
    assert outcome is RunOutcome.FAILURE
    assert root.children[1].status is Status.FAILURE
    assert root.children[1].feedback_message.startswith(
        'limb a is commanded by node 0.0 "Sync move"'
    )
    poses = [fields["pose"] for _mode, fields in links["a"].commands if "pose" in fields]
    assert poses and all(abs(pose[1]) < 1e-12 for pose in poses)  # never towards y = +40 mm
    assert [mode for mode, _ in links["b"].commands] == [
        CommandMode.HOLD
    ]  # the runner's, at the end
    refused = [e for e in events if e["kind"] == "limb_refused"]
    assert [(e["limb"], e["node"], e["owner"]) for e in refused] == [("a", "0.1", "0.0")]
