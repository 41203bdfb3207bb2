"""The runner's hard tick limit (issue 19 part 2): a node that never returns ends the run.

A node type built through the Python API whose ``update`` never returns (a busy loop, or a
blocking sleep) is ticked by a runner over in-process fake limbs with ``max_tick_s`` short.
The run must end ABORTED, naming the node, with the summary written and the limbs told to
hold. Without the watchdog these tests would hang (pytest-timeout ends them).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import threading
import time
from pathlib import Path

import py_trees
import pytest
from fake_limbs import FakeLink, handles

from limbtree.transport.driver import CommandMode
from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.behaviours.wait import WaitBehaviour
from limbtree.trees.context import MissionContext
from limbtree.trees.nodes import REQUIRED, LimbName, NodeKind, NodeSpec, ParamSpec, leaf
from limbtree.trees.runner import Runner, RunOptions, RunOutcome, TickClock
from limbtree.trees.watchdog import Overrun, TickOverrun, TickWatchdog


class NeverReturns(py_trees.behaviour.Behaviour):
    """A user's node whose update never returns: it spins, or it blocks in a sleep."""

    def __init__(self, name: str, *, block: bool) -> None:
        super().__init__(name)
        self.block = block
        self.calls = 0

    def update(self) -> py_trees.common.Status:
        self.calls += 1
        if self.calls < 3:  # two good ticks first
            return py_trees.common.Status.RUNNING
        if self.block:
            time.sleep(3600.0)
        while True:  # a careless node's broad except cannot swallow the interruption
            with contextlib.suppress(Exception):
                self.calls += 1


def _run(tmp_path: Path, *, block: bool) -> tuple[RunOutcome, Runner, FakeLink]:
    clock = TickClock()
    link = FakeLink((0.0, 0.0, 0.0), 0.1, clock=clock.now)
    context = MissionContext(handles({"a": link}), clock.now)
    stuck = NeverReturns("stuck node", block=block)
    root = py_trees.composites.Parallel(
        "both",
        policy=py_trees.common.ParallelPolicy.SuccessOnOne(),
        children=[WaitBehaviour("wait", context, {"duration": 5.0}), stuck],
    )
    options = RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec", max_tick_s=0.3)
    runner = Runner("stuck", clock, root, context, {"a": link}, [], options)
    return runner.run(), runner, link


@pytest.mark.timeout(60)
@pytest.mark.parametrize("block", [False, True], ids=["busy-loop", "blocking-sleep"])
def test_a_node_that_never_returns_aborts_the_run_naming_it(tmp_path: Path, block: bool) -> None:
    outcome, _runner, link = _run(tmp_path, block=block)
    assert outcome is RunOutcome.ABORTED
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED"
    assert "max_tick_s = 0.3 s" in summary["failure"]
    assert "node 0.1 'stuck node' (NeverReturns)" in summary["failure"]
    assert summary["ticks"] == 2 and summary["max_tick_wall_s"] > 0.3
    assert link.commands[-1][0] is CommandMode.HOLD  # the limbs were told to hold
    assert (tmp_path / "rec" / "log.msgpack").stat().st_size > 0


@pytest.mark.timeout(60)
def test_a_runner_in_another_thread_is_interrupted_too(tmp_path: Path) -> None:
    result: list[RunOutcome] = []
    thread = threading.Thread(target=lambda: result.append(_run(tmp_path, block=False)[0]))
    thread.start()
    thread.join(timeout=30.0)
    assert not thread.is_alive() and result == [RunOutcome.ABORTED]
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert "'stuck node'" in summary["failure"]


def test_a_tick_that_ends_in_time_is_never_interrupted() -> None:
    watchdog = TickWatchdog(60.0, poll_s=0.01)
    with watchdog:
        for tick in range(200):
            watchdog.enter(tick)
            watchdog.leave()
    assert watchdog.overrun is None


def test_an_overrun_noticed_as_the_tick_ends_is_raised_by_leave() -> None:
    now = [0.0]
    watchdog = TickWatchdog(1.0, wall=lambda: now[0], poll_s=0.01)
    with pytest.raises(TickOverrun), watchdog:
        watchdog.enter(7)
        now[0] = 2.0  # the wall clock says the tick has run 2 s
        deadline = time.monotonic() + 10.0
        while watchdog.overrun is None and time.monotonic() < deadline:
            time.sleep(0.01)  # interrupted here (main thread) or by leave below
        watchdog.leave()
    overrun = watchdog.overrun
    assert isinstance(overrun, Overrun) and overrun.tick == 7 and overrun.node_id is None


def test_max_tick_s_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_tick_s must be a positive number"):
        TickWatchdog(0.0)


MISSION = """\
mission: capped
rate_hz: 50
{extra}
limbs:
  arm: {{robot: light_limb}}
tree:
  wait: {{duration_s: 1}}
"""


def _load(tmp_path: Path, extra: str):
    from limbtree.trees.app import robot_catalogue
    from limbtree.trees.mission import load_mission

    path = tmp_path / "capped.yaml"
    path.write_text(MISSION.format(extra=extra))
    return load_mission(path, robots=robot_catalogue())


def test_the_mission_key_max_tick_s_sets_the_hard_limit(tmp_path: Path) -> None:
    assert _load(tmp_path, "max_tick_s: 0.5").max_tick_s == 0.5
    assert _load(tmp_path, "").max_tick_s == RunOptions().max_tick_s == 5.0


def test_a_max_tick_s_that_is_not_positive_is_refused_with_its_place(tmp_path: Path) -> None:
    from limbtree.trees.mission import MissionError

    with pytest.raises(MissionError, match=r"capped\.yaml:3:\d+.*max_tick_s"):
        _load(tmp_path, "max_tick_s: 0")


class SlowEveryOtherTick(py_trees.behaviour.Behaviour):
    """Sleeps three tick periods on its first ``slow`` ticks, then succeeds."""

    def __init__(self, period_s: float, slow: int) -> None:
        super().__init__("slow")
        self.period_s = period_s
        self.slow = slow
        self.calls = 0

    def update(self) -> py_trees.common.Status:
        self.calls += 1
        if self.calls <= self.slow:
            time.sleep(3 * self.period_s)
            return py_trees.common.Status.RUNNING
        return py_trees.common.Status.SUCCESS


@pytest.mark.parametrize("clock_mode", ["real", "sim"])
def test_ticks_that_overrun_their_period_are_counted_in_the_real_clock(
    tmp_path: Path, clock_mode: str
) -> None:
    clock = TickClock()
    link = FakeLink((0.0, 0.0, 0.0), 0.1, clock=clock.now)
    context = MissionContext(handles({"a": link}), clock.now)
    options = RunOptions(clock=clock_mode, rate_hz=50.0, record_dir=tmp_path / "rec")
    runner = Runner("slow", clock, SlowEveryOtherTick(0.02, 3), context, {"a": link}, [], options)
    assert runner.run() is RunOutcome.SUCCESS
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["max_tick_wall_s"] >= 0.06 and summary["max_tick_s"] == 5.0
    if clock_mode == "real":
        assert summary["tick_overruns"] >= 3
    else:  # the sim clock has no period in wall time
        assert summary["tick_overruns"] is None


class SpinForever(SkillBehaviour):
    """A user's node type whose update never returns after its second tick."""

    node_type = "spin_forever"

    def start(self) -> None:
        self.calls = 0

    def step(self) -> py_trees.common.Status:
        self.calls += 1
        while self.calls > 2:
            pass
        return py_trees.common.Status.RUNNING


SPIN_FOREVER = NodeSpec(
    "spin_forever",
    NodeKind.LEAF,
    (ParamSpec("limb", LimbName(), REQUIRED, "the limb it would command"),),
    (0, 0),
    "never returns from its third tick",
    build=leaf(SpinForever),
    commands=("limb",),
)

STUCK_MISSION = """\
mission: stuck
rate_hz: 50
max_tick_s: 1
limbs:
  arm: {robot: light_limb}
tree:
  parallel:
    policy: one
    children:
      - wait: {duration_s: 30}
      - spin_forever: {limb: arm, name: spinner}
"""


def _agent_children() -> list[int]:
    """This process's children that are limbtree agents (and not zombies)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"agent" in command:
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_limbtree_run_aborts_a_mission_whose_node_never_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from limbtree.trees import app

    registry = app.default_registry().with_types(SPIN_FOREVER)
    monkeypatch.setattr(app, "default_registry", lambda: registry)
    mission = tmp_path / "stuck.yaml"
    mission.write_text(STUCK_MISSION)
    out = io.StringIO()
    record = tmp_path / "rec"
    request = app.RunRequest(mission=mission, headless=True, record=record)
    assert app.run_mission(request, out) is RunOutcome.ABORTED
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and summary["ticks"] == 2
    assert "max_tick_s = 1 s" in summary["failure"]
    assert "node 0.1 'spinner' (spin_forever)" in summary["failure"]
    assert "ABORTED" in out.getvalue()
    assert _agent_children() == []  # the run's agent was stopped


def test_a_sigusr2_that_is_not_the_watchdogs_goes_to_the_previous_handler() -> None:
    import signal

    received: list[int] = []

    def handler(signum: int, frame: object) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGUSR2, handler)
    try:
        with TickWatchdog(60.0) as watchdog:
            watchdog.enter(0)
            # Sent to this thread, the signal's handler runs before pthread_kill returns.
            signal.pthread_kill(threading.get_ident(), signal.SIGUSR2)
            watchdog.leave()
            assert received == [signal.SIGUSR2]
        assert signal.getsignal(signal.SIGUSR2) is handler  # restored after the run
    finally:
        signal.signal(signal.SIGUSR2, previous)
