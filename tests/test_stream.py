"""The tick stream: node ids, immutable snapshots, sinks, clocks and agent errors."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import textwrap

import py_trees
import pytest
from fake_driver import FakeDriver
from fake_limbs import FakeLink, handles

from limbtree.transport import LimbAgent, LimbClient
from limbtree.transport.driver import CommandMode, Health
from limbtree.transport.errors import RemoteError, RequestTimeoutError
from limbtree.trees.app import robot_catalogue
from limbtree.trees.behaviours import WaitBehaviour
from limbtree.trees.builder import build_tree
from limbtree.trees.clocks import RealClock, SimClock
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress, LiveView, health_text
from limbtree.trees.errors import AgentError
from limbtree.trees.identity import assign_node_ids, node_id
from limbtree.trees.launcher import free_port_pairs
from limbtree.trees.limbs import LimbHandle
from limbtree.trees.lockstep import one_limb_agents
from limbtree.trees.mission import load_mission
from limbtree.trees.recorder import read_header, read_log
from limbtree.trees.report import make_report
from limbtree.trees.runner import Runner, RunOptions, RunOutcome, TickClock
from limbtree.trees.stream import NodeStatus, RunEnd, RunHeader, TickSnapshot

LIMBS = """
limbs:
  a: {robot: heavy_limb}
  b: {robot: light_limb}
"""

TWINS = """
tree:
  sequence:
    name: twins
    children:
      - wait: {name: pause, duration_s: 0.2}
      - sync_move:
          name: move
          limbs: [a, b]
          waypoints: [{translation_mm: [20, 0, 0]}]
      - wait: {name: pause, duration_s: 0.3}
"""


class Collect:
    """A sink that keeps everything it is given."""

    def __init__(self) -> None:
        self.header: RunHeader | None = None
        self.snapshots: list[TickSnapshot] = []
        self.messages: list[str] = []
        self.end: RunEnd | None = None

    def on_start(self, header):
        self.header = header

    def on_tick(self, snapshot):
        self.snapshots.append(snapshot)

    def on_message(self, text):
        self.messages.append(text)

    def on_pause(self, paused, t):
        pass

    def on_end(self, end):
        self.end = end


class Broken(Collect):
    """A sink that fails at its fifth tick."""

    def on_tick(self, snapshot):
        if snapshot.tick == 4:
            raise RuntimeError("the viewer's socket closed")
        super().on_tick(snapshot)


class FailingLink(FakeLink):
    """A fake limb whose agent answers the step at ``t >= at`` with an error (or silence)."""

    def __init__(self, *args, at=0.5, error=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.at = at
        self.error = error

    def finish_step(self):
        if self._pending_t >= self.at:
            raise self.error
        return super().finish_step()


def mission(tmp_path, tree=TWINS):
    path = tmp_path / "mission.yaml"
    path.write_text("mission: test\nrate_hz: 50\n" + LIMBS + textwrap.dedent(tree))
    return load_mission(path, robots=robot_catalogue())


def run(tmp_path, *, tree=TWINS, sinks=(), b=None, record=True):
    """Run ``tree`` over fake limbs a and b (``b(clock)`` makes another b)."""
    model = mission(tmp_path, tree)
    clock = TickClock()
    links = {
        "a": FakeLink((0.0, 0.0, 0.0), 0.2, clock=clock.now),
        "b": b(clock) if b else FakeLink((1.0, 0.0, 0.0), 0.2, clock=clock.now),
    }
    context = MissionContext(handles(links), clock.now)
    root = build_tree(model.root, context)
    options = RunOptions(
        rate_hz=50.0, record_dir=tmp_path / "rec" if record else None, max_time_s=30.0
    )
    runner = Runner("test", clock, root, context, links, [], options, list(sinks))
    return runner, links, runner.run()


def test_ids_are_paths_of_child_indices_from_the_root(tmp_path):
    model = mission(tmp_path)
    root = build_tree(
        model.root, MissionContext(handles({"a": FakeLink(), "b": FakeLink()}), float)
    )
    nodes = assign_node_ids(root)
    assert [(i, n.name) for i, n in nodes.items()] == [
        ("0", "twins"),
        ("0.0", "pause"),
        ("0.1", "move"),
        ("0.2", "pause"),
    ]
    assert node_id(root.children[2]) == "0.2"
    with pytest.raises(AttributeError, match="assign_node_ids"):
        node_id(py_trees.behaviours.Success("loose"))


def test_ids_are_the_same_in_every_run_of_the_same_file(tmp_path):
    first, second = Collect(), Collect()
    run(tmp_path, sinks=[first], record=False)
    run(tmp_path, sinks=[second], record=False)
    assert first.header.tree == second.header.tree
    assert [n.id for n in first.header.tree.walk()] == ["0", "0.0", "0.1", "0.2"]
    assert [set(s.nodes) for s in first.snapshots] == [set(s.nodes) for s in second.snapshots]


def test_two_nodes_with_one_name_stay_two_nodes_in_summary_record_view_and_report(tmp_path):
    screen = io.StringIO()
    view = LiveView(screen, interval_s=0.0)
    _, _, outcome = run(tmp_path, sinks=[view])
    assert outcome is RunOutcome.SUCCESS
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    pauses = [n for n in summary["nodes"] if n["name"] == "pause"]
    assert [(n["id"], n["ticks"] > 0, n["last_status"]) for n in pauses] == [
        ("0.0", True, "SUCCESS"),
        ("0.2", True, "SUCCESS"),
    ]
    assert pauses[0]["ticks"] != pauses[1]["ticks"]  # 0.2 s and 0.3 s: counted apart
    ticked = {i for tick in read_log(tmp_path / "rec" / "log.msgpack") for i in tick["nodes"]}
    assert {"0.0", "0.2"} <= ticked
    assert "move" not in ticked and "pause" not in ticked  # ids, not names
    frame = view.frame()
    assert "pause  [0.0]" in frame and "pause  [0.2]" in frame
    text = make_report(tmp_path / "rec").text
    assert "pause [0.0]" in text and "pause [0.2]" in text


def test_the_header_holds_the_tree_and_the_robots(tmp_path):
    run(tmp_path)
    header = read_header(tmp_path / "rec" / "log.msgpack")
    assert header["kind"] == "header" and header["v"] == 2
    assert header["mission"] == "test" and header["clock"] == "sim" and header["rate_hz"] == 50
    tree = header["tree"]
    assert (tree["id"], tree["name"], len(tree["children"])) == ("0", "twins", 3)
    move = tree["children"][1]
    assert (move["id"], move["type"], move["children"]) == ("0.1", "sync_move", [])
    assert move["params"]["limbs"] == ["a", "b"]
    robot = header["robots"]["a"]
    assert robot["limbs"]["a"]["joints"] == ["j0", "j1", "j2"]
    assert robot["limbs"]["a"]["max_joint_speed"] == [1.0, 1.0, 1.0]
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    assert all(t["kind"] == "tick" for t in ticks)
    moving = [t for t in ticks if "0.1" in t["skills"]]
    assert moving and moving[0]["skills"]["0.1"]["mode"] in ("nominal", "done")


def test_the_snapshot_is_immutable(tmp_path):
    sink = Collect()
    run(tmp_path, sinks=[sink], record=False)
    snapshot = next(s for s in sink.snapshots if "0.1" in s.skills)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.t = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.nodes["0.1"] = snapshot.nodes["0"]  # type: ignore[index]
    with pytest.raises(TypeError):
        snapshot.limbs["a"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        snapshot.skills["0.1"] = None  # type: ignore[index]
    with pytest.raises(AttributeError):
        snapshot.limbs["a"].stale = True  # type: ignore[misc]
    with pytest.raises(AttributeError):
        snapshot.nodes["0"].status = NodeStatus.FAILURE  # type: ignore[misc]
    assert isinstance(snapshot.events, tuple)


def test_each_snapshot_times_its_nodes_and_a_composite_includes_its_children(tmp_path):
    sink = Collect()
    run(tmp_path, sinks=[sink], record=False)
    for snapshot in sink.snapshots:
        root = snapshot.nodes["0"]
        children = [n for i, n in snapshot.nodes.items() if i != "0"]
        assert children
        assert root.busy_s >= max(c.busy_s for c in children) >= 0.0
    moving = next(s for s in sink.snapshots if "0.1" in s.nodes)
    assert moving.nodes["0.1"].status is NodeStatus.RUNNING
    assert moving.limbs["a"].command is not None


TWO_WAYPOINTS = """
tree:
  sequence:
    name: twins
    children:
      - sync_move:
          name: move
          limbs: [a, b]
          waypoints: [{translation_mm: [20, 0, 0]}, {translation_mm: [20, 30, 0]}]
      - wait: {name: pause, duration_s: 0.3}
"""


def test_each_limb_carries_its_segments_end_as_its_target_while_the_move_runs(tmp_path):
    sink = Collect()
    run(tmp_path, tree=TWO_WAYPOINTS, sinks=[sink])
    moving = [s for s in sink.snapshots if "0.0" in s.skills]
    ends = {0: (0.02, 0.0, 0.0), 1: (0.02, 0.03, 0.0)}
    seen = set()
    for snapshot in moving:
        segment = snapshot.skills["0.0"].as_map()["segment"]
        seen.add(segment)
        for name, start in (("a", (0.0, 0.0, 0.0)), ("b", (1.0, 0.0, 0.0))):
            target = snapshot.limbs[name].target
            assert target is not None
            expected = [s + d for s, d in zip(start, ends[segment], strict=True)]
            assert target.position.tolist() == pytest.approx(expected, abs=1e-9)
    assert seen == {0, 1}
    # Once the move has ended nothing drives the limbs: no target.
    after = [s for s in sink.snapshots if "0.0" not in s.nodes]
    assert after and all(s.limbs["a"].target is None for s in after)
    # The record keeps it (world pose, metres) on the ticks that have one, and only those.
    entries = [e for e in read_log(tmp_path / "rec" / "log.msgpack") if e.get("kind") == "tick"]
    last_moving = next(e for e in reversed(entries) if "0.0" in e["skills"])
    assert last_moving["limbs"]["b"]["target"][:3] == pytest.approx([1.02, 0.03, 0.0])
    assert "target" not in entries[-1]["limbs"]["b"]


def test_a_sink_that_raises_is_detached_and_the_record_is_kept(tmp_path):
    broken, after = Broken(), Collect()
    runner, _, outcome = run(tmp_path, sinks=[broken, after])
    assert outcome is RunOutcome.SUCCESS
    assert [f.sink for f in runner.sink_failures] == ["Broken"]
    assert "the viewer's socket closed" in runner.sink_failures[0].error
    assert len(broken.snapshots) == 4 and broken.end is None  # detached at its fifth tick
    assert len(after.snapshots) == runner.ticks and after.end is not None
    assert any("Broken failed and was detached" in m for m in after.messages)
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    assert len(ticks) == runner.ticks
    kinds = [e["kind"] for t in ticks for e in t["events"]]
    assert kinds.count("sink_failed") == 1
    assert json.loads((tmp_path / "rec" / "summary.json").read_text())["outcome"] == "SUCCESS"


def test_an_error_reply_to_a_step_ends_the_run_naming_the_limb(tmp_path):
    error = RemoteError("internal", "agent error: ZeroDivisionError()", endpoint="tcp://x:1")
    made = []

    def failing(clock):
        made.append(FailingLink((1.0, 0.0, 0.0), 0.2, clock=clock.now, at=0.1, error=error))
        return made[-1]

    progress = io.StringIO()
    with pytest.raises(AgentError, match=r"limb b: the agent answered the step to t=0\.100") as e:
        run(tmp_path, sinks=[HeadlessProgress(progress)], b=failing)
    assert e.value.limbs == ("b",) and "ZeroDivisionError" in str(e.value)
    # (where its log is, for an agent the run started and for one started by hand: a
    # reviewer's remote agent was said to log in the record's agents/ folder)
    assert "agents/ folder holds the logs of the agents this run started" in str(e.value)
    assert "one started by hand logs where it was started" in str(e.value)
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and "limb b" in summary["failure"]
    assert summary["ticks"] == 5  # t = 0 .. 0.08 s; the step to 0.1 s failed
    assert made[0].commands[-1][0].value == "hold"
    assert "ABORTED" in progress.getvalue()


def move_ab(stale_timeout_s: float) -> str:
    """A tree moving limbs a and b 100 mm along x, giving up on a silent limb after a while."""
    return f"""
    tree:
      sync_move:
        limbs: [a, b]
        waypoints: [{{translation_mm: [100, 0, 0]}}]
        stale_timeout_s: {stale_timeout_s}
    """


def test_a_silent_agent_only_makes_its_limb_stale(tmp_path):
    silence = RequestTimeoutError("tcp://x:1", "step", 2.0)

    def silent(clock):
        return FailingLink((1.0, 0.0, 0.0), 0.2, clock=clock.now, at=0.1, error=silence)

    tree = move_ab(stale_timeout_s=0.5)
    runner, _, outcome = run(tmp_path, tree=tree, b=silent)
    assert outcome is RunOutcome.FAILURE  # the move gave up on b after its stale timeout
    assert "b sent no state" in runner.failure_message()
    assert runner.t == pytest.approx(0.1 + 0.25 + 0.5, abs=0.1)
    events = [e for t in read_log(tmp_path / "rec" / "log.msgpack") for e in t["events"]]
    (link,) = [e for e in events if e["kind"] == "link"]
    assert link["limb"] == "b" and "no reply to step" in link["error"]


class RestartedLink(FakeLink):
    """A fake limb whose agent is silent from ``t = 0.1`` to ``0.3`` s, then back restarted."""

    def finish_step(self):
        if 0.1 <= self._pending_t < 0.3:
            raise RequestTimeoutError("tcp://x:1", "step", 2.0)
        if self._pending_t >= 0.3:
            self.restarts = 1
        return super().finish_step()


def test_a_restarted_agent_is_recorded_and_its_limb_goes_on(tmp_path):
    tree = move_ab(stale_timeout_s=2.0)
    progress = io.StringIO()
    _, _, outcome = run(
        tmp_path,
        tree=tree,
        b=lambda clock: RestartedLink((1.0, 0.0, 0.0), 0.2, clock=clock.now),
        sinks=[HeadlessProgress(progress, every_s=1e9)],
    )
    assert outcome is RunOutcome.SUCCESS
    # A person watching is told, once each: the link lost, back, and the new process.
    said = [line for line in progress.getvalue().splitlines() if " b" in line]
    assert said == [
        "t=   0.10 s  link lost to b, it holds until its agent answers: tcp://x:1: no reply to "
        "step within 2 s",
        "t=   0.30 s  link restored to b",
        "t=   0.30 s  the agent of b restarted (a new process): its state comes from the new one",
    ]
    events = [
        (round(e["t"], 2), e["kind"], e.get("limb"))
        for tick in read_log(tmp_path / "rec" / "log.msgpack")
        for e in tick["events"]
        if e["kind"] in ("link", "link_restored", "agent_restarted")
    ]
    # One link event when the steps start failing (not one per tick), then the way back.
    assert events == [
        (0.1, "link", "b"),
        (0.3, "link_restored", "b"),
        (0.3, "agent_restarted", "b"),
    ]


class SwappedLink(RestartedLink):
    """A fake limb whose agent comes back at 0.3 s driving another robot."""

    def finish_step(self):
        state = super().finish_step()
        if self.restarts:
            self.drives = "other"
        return state

    def send_command(self, mode, **fields) -> bool:
        self.sent_after_restart = getattr(self, "sent_after_restart", [])
        if self.restarts:
            self.sent_after_restart.append(CommandMode(mode))
        return super().send_command(mode, **fields)


def test_an_agent_restarted_as_another_robot_stops_the_run_before_its_limb_is_commanded(
    tmp_path,
):
    tree = move_ab(stale_timeout_s=2.0)
    links: list[SwappedLink] = []

    def swapped(clock):
        links.append(SwappedLink((1.0, 0.0, 0.0), 0.2, clock=clock.now))
        return links[-1]

    with pytest.raises(AgentError, match="limb b: its agent restarted and drives other, but "
                       "the mission declares fake: the run stops"):  # fmt: skip
        run(tmp_path, tree=tree, b=swapped)
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and "drives other" in summary["failure"]
    # The new process was told to hold, never to move.
    (link,) = links
    assert link.sent_after_restart and set(link.sent_after_restart) == {CommandMode.HOLD}


class DisassembledLink(FakeLink):
    """A fake limb whose agent says it is disassembled from ``t = 0.1`` s on."""

    @property
    def disassembled(self):
        return self.t >= 0.1


def test_a_limb_its_agent_says_is_disassembled_shows_it_in_the_tick(tmp_path):
    tree = """
    tree:
      wait: {duration_s: 0.2}
    """
    sink = Collect()
    run(
        tmp_path, tree=tree, sinks=[sink],
        b=lambda clock: DisassembledLink((1.0, 0.0, 0.0), 0.2, clock=clock.now),
    )  # fmt: skip
    early, late = sink.snapshots[1], sink.snapshots[-1]
    assert early.limbs["b"].health == 0
    assert late.limbs["b"].health == int(Health.DISASSEMBLED) and late.limbs["a"].health == 0
    assert "DISASSEMBLED" in health_text(late.limbs["b"].health)


def test_the_sim_clock_never_waits_unless_paced():
    wall = iter(float(i) for i in range(100))  # (a second per reading: any wait would show)
    clock = SimClock(100.0, wall=lambda: next(wall))
    clock.start()
    for index in range(10):
        assert clock.tick_time(index) == pytest.approx(index / 100)
        assert clock.remaining(index) == 0.0
    now = [0.0]
    paced = SimClock(100.0, speed=0.5, wall=lambda: now[0])
    paced.start()
    # 5 ticks of 10 ms at half speed: due at 0.1 s of wall time
    assert paced.remaining(5) == pytest.approx(0.1)


def test_the_real_clock_reads_the_injected_wall_clock():
    now = [10.0]
    slept: list[float] = []
    clock = RealClock(10.0, wall=lambda: now[0], sleep=slept.append)
    clock.start()
    now[0] = 10.25
    assert clock.tick_time(3) == pytest.approx(0.25)
    assert clock.remaining(3) == pytest.approx(0.05)
    assert slept == []  # (reading the time waits for nothing)
    assert clock.elapsed() == pytest.approx(0.25)


class BrokenDriver(FakeDriver):
    """A driver whose ``advance`` raises from 0.1 s on, like a driver with a bug."""

    def advance(self, t: float) -> None:
        if t >= 0.1:
            raise ZeroDivisionError("the driver divided by zero")
        super().advance(t)


@pytest.mark.timeout(60)
def test_a_driver_that_raises_in_a_real_agent_stops_the_run_at_once_naming_the_limb(tmp_path):
    (port,) = free_port_pairs(1)
    agent = LimbAgent(BrokenDriver(), f"tcp://127.0.0.1:{port}", clock="sim")
    agent.start_in_thread()
    clock = TickClock()
    client = LimbClient(f"tcp://127.0.0.1:{port}", stale_after_s=0.25, clock=clock.now)
    try:
        description = client.describe(timeout_s=5.0).limb
        limbs = {"tip": LimbHandle("tip", description, client)}
        context = MissionContext(limbs, clock.now)
        root = py_trees.composites.Sequence("seq", memory=True, children=[])
        root.add_child(WaitBehaviour("wait", context, {"duration": 5.0}))
        options = RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec")
        runner = Runner("broken", clock, root, context, one_limb_agents({"tip": client}),
                        [], options)  # fmt: skip
        with pytest.raises(AgentError, match=r"limb tip: .*ZeroDivisionError") as error:
            runner.run()
    finally:
        client.close()
        agent.stop()
    assert error.value.limbs == ("tip",)
    assert runner.ticks == 5 and runner.t == pytest.approx(0.1)  # stopped at the failed step
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and "the driver divided by zero" in summary["failure"]


class MovingBaseClient:
    """A plant client over one fake limb whose base drifts along x at 0.1 m/s."""

    def __init__(self, link, clock):
        self.link = link
        self.clock = clock
        self.restarts = 0

    def poll(self):
        return self.link.poll()

    def send_step(self, t, timeout_s=1.0):
        self.link.send_step(t, timeout_s)

    def finish_step(self):
        return self.link.finish_step()

    def fault(self, limb, kind, timeout_s=1.0, **params):
        return self.link.fault(kind, timeout_s, **params)

    @property
    def base(self):
        from limbtree.transport.plant import BaseState

        return BaseState(pose=(0.1 * self.clock(), 0.0, 0.0, 0.0, 0.0, 0.0, 1.0))


def test_each_robots_base_in_the_snapshot_is_the_one_its_agent_last_reported(tmp_path):
    from limbtree.trees.lockstep import OneLimbAgent, PlantAgent

    model = mission(tmp_path)
    clock = TickClock()
    links = {
        "a": FakeLink((0.0, 0.0, 0.0), 0.2, clock=clock.now),
        "b": FakeLink((1.0, 0.0, 0.0), 0.2, clock=clock.now),
    }
    context = MissionContext(handles(links), clock.now)
    root = build_tree(model.root, context)
    agents = [
        PlantAgent(MovingBaseClient(links["a"], clock.now), {"a": "a"}, "a"),
        OneLimbAgent("b", links["b"]),
    ]
    options = RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec", max_time_s=30.0)
    Runner("test", clock, root, context, agents, [], options).run()
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    xs = [t["bases"]["a"][0] for t in ticks]
    assert xs[-1] == pytest.approx(0.1 * ticks[-1]["t"])
    assert all(later >= earlier for earlier, later in itertools.pairwise(xs))
    assert {tuple(t["bases"]["b"]) for t in ticks} == {(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)}


def test_a_wait_too_long_to_write_out_says_how_long_in_a_few_digits(tmp_path):
    tree = """
    tree:
      wait: {duration_s: 1e300}
    """
    run(tmp_path, tree=tree)
    first = next(iter(read_log(tmp_path / "rec" / "log.msgpack")))
    assert first["messages"] == {"0": "1e+300 s left"}
