"""A move never succeeds on a limb that is powered off or disassembled.

Such a limb's last state stays frozen where the limb was (a powered-off limb falls meanwhile;
the sim clock's step replies repeat the frozen state, flagged ``POWER_OFF``, and the client
only calls it stale 0.25 s later). The limb handle's one rule (:attr:`LimbHandle.fresh`)
makes that state unusable from the first state that says so, for every skill: the moves
hold, fail after ``stale_timeout_s`` naming the limb and why, and when the limb comes back
recover it onto the path and succeed only once every limb is within its tolerance.
"""

from __future__ import annotations

import dataclasses
import io
import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fake_limbs import FakeLink, handles
from threaded_missions import run_threaded

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import (
    LimbDown,
    Mode,
    Outcome,
    PoseSpace,
    SyncConfig,
    SyncMove,
    SyncObservation,
)
from limbtree.transport.driver import Health, LimbState
from limbtree.trees.app import robot_catalogue
from limbtree.trees.builder import build_tree
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.mission import load_mission
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import Runner, RunOptions, RunOutcome, ScheduledFault, TickClock

MISSIONS = Path(__file__).resolve().parent / "missions"

LIMBS = """
limbs:
  a: {robot: heavy_limb}
  b: {robot: light_limb}
"""


class FaultListingLink(FakeLink):
    """A fake limb whose states list the faults in force (``detail["faults"]``), as a
    simulated limb's do."""

    def step(self, t: float, timeout_s: float = 1.0) -> LimbState:
        state = super().step(t, timeout_s)
        names = sorted({kind for kind, end in self.faults if end > t})
        self._state = LimbState(**{**state.__dict__, "detail": {"faults": names}})
        return self._state


def run(tmp_path: Path, tree_yaml: str, faults: list[ScheduledFault]):
    """Run ``tree_yaml`` over fake limbs a (fast, at the origin) and b (slow, x = 1 m)."""
    path = tmp_path / "mission.yaml"
    path.write_text("mission: test\nrate_hz: 50\n" + LIMBS + textwrap.dedent(tree_yaml))
    mission = load_mission(path, robots=robot_catalogue())
    clock = TickClock()
    links = {
        "a": FaultListingLink((0.0, 0.0, 0.0), 0.2, clock=clock.now),
        "b": FaultListingLink((1.0, 0.0, 0.0), 0.05, clock=clock.now),
    }
    context = MissionContext(handles(links), clock.now)
    root = build_tree(mission.root, context)
    out = io.StringIO()
    runner = Runner(
        "test", clock, root, context, links, faults,
        RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec", max_time_s=60.0),
        [HeadlessProgress(out)], None,
    )  # fmt: skip
    outcome = runner.run()
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    return outcome, runner, summary, list(read_log(tmp_path / "rec" / "log.msgpack"))


# The command is at the goal from the start (80 mm < p_e): a reaches it in 0.4 s, b in
# 1.6 s, so a powered off at 1 s has arrived and b has not.
MOVE = """
tree:
  sync_move:
    name: move
    limbs: [a, b]
    waypoints: [{translation_mm: [80, 0, 0]}]
    p_e_mm: 90
"""


def _success_tick(ticks: list[dict]) -> dict:
    (done,) = [t for t in ticks if t["nodes"].get("0") == "SUCCESS"]
    return done


# -- the limb handle: the one rule -------------------------------------------------------


def test_a_powered_off_limbs_frozen_state_is_no_reading_for_a_skill():
    link = FaultListingLink((0.1, 0.2, 0.3))
    limb = handles({"a": link})["a"]
    link.step(0.02)
    assert limb.fresh and limb.pose() is not None and limb.down() is None
    link.fault("power_off", duration_s=1.0)
    link.step(0.04)  # the state is frozen, flagged POWER_OFF, and not stale yet
    assert not link.is_stale and limb.health & Health.POWER_OFF
    assert not limb.fresh
    assert limb.pose() is None and limb.joints() is None
    assert limb.interface_pose("ee") is None and limb.mocap("ee") is None
    assert limb.down() == LimbDown("powered off", "power_off fault")
    # The record still shows the frozen state, as the record's docs say.
    assert limb.last_pose() is not None
    assert np.allclose(limb.last_pose().position, [0.1, 0.2, 0.3])
    link.step(1.1)  # power is back
    assert limb.fresh and limb.pose() is not None and limb.down() is None


def test_a_limb_its_agent_says_is_disassembled_is_down_before_it_goes_stale():
    link = FakeLink((0.1, 0.2, 0.3))
    limb = handles({"a": link})["a"]
    link.step(0.02)
    link.fault("disassembly", duration_s=1.0)
    link.step(0.04)
    assert not link.is_stale  # (the client calls it stale 0.25 s later)
    assert limb.health & Health.DISASSEMBLED
    assert limb.pose() is None and limb.joints() is None and not limb.fresh
    assert limb.down() == LimbDown("disassembled")


def test_a_hardware_limb_whose_bus_fails_is_no_reading_though_its_state_keeps_coming():
    # (its agent republishes the last reading each tick, flagged BUS_FAULT: never stale)
    link = FakeLink((0.1, 0.2, 0.3))
    limb = handles({"a": link})["a"]
    link.step(0.02)
    assert limb.fresh
    link._state = dataclasses.replace(link.state, health=Health.BUS_FAULT)
    assert not link.is_stale and not limb.fresh
    assert limb.pose() is None and limb.joints() is None
    assert limb.down() == LimbDown("without joint readings (its bus fails)")
    assert limb.down().text("a", 0.02) == (
        "limb a is without joint readings (its bus fails) since t=0.02 s"
    )


# -- the cores -----------------------------------------------------------------------------


def _one_limb_move(stale_timeout: float = 0.5) -> SyncMove[Pose]:
    start, goal = Pose(np.zeros(3)), Pose(np.array([0.01, 0.0, 0.0]))
    space = PoseSpace((SE3Metric(0.02),))
    return SyncMove(space, [(start,), (goal,)], SyncConfig(stale_timeout=stale_timeout), ["arm"])


def test_a_down_limb_holds_the_move_and_fails_it_naming_the_limb_and_why():
    move = _one_limb_move()
    down = (LimbDown("powered off", "power_off fault"),)
    held = move.step(SyncObservation(1.0, (None,), down), 0.0)
    assert held.outcome is Outcome.RUNNING and held.mode is Mode.STALE and held.command is None
    assert held.message == (
        "holding: limb arm is powered off since t=1.00 s (power_off fault); "
        "waiting for it to come back"
    )
    failed = move.step(SyncObservation(1.52, (None,), down), 0.02)
    assert failed.outcome is Outcome.FAILURE
    assert failed.message.startswith(
        "limb arm is powered off since t=1.00 s (power_off fault): the move cannot succeed "
        "without it"
    )
    assert "stale_timeout_s is 0.5" in failed.message


def test_a_down_limb_that_comes_back_lets_the_move_succeed_once_it_is_there():
    move = _one_limb_move()
    down = (LimbDown("disassembled"),)
    assert move.step(SyncObservation(0.0, (None,), down), 0.0).outcome is Outcome.RUNNING
    assert move.missing.cannot_succeed() == (
        "limb arm is disassembled since t=0.00 s: the move cannot succeed without it"
    )
    arrived = Pose(np.array([0.01, 0.0, 0.0]))
    done = move.step(SyncObservation(0.3, (arrived,), (None,)), 0.3)
    assert done.outcome is Outcome.SUCCESS
    assert move.missing.cannot_succeed() is None


def test_an_observation_must_say_why_for_every_limb_or_none():
    move = _one_limb_move()
    with pytest.raises(ValueError, match="1 limbs"):
        move.step(SyncObservation(0.0, (None,), (None, None)), 0.0)


# -- moves over fake limbs in the sim clock ------------------------------------------------


def test_a_move_waits_for_a_powered_off_limb_recovers_it_and_counts_the_fault(tmp_path):
    faults = [ScheduledFault(1.0, "a", "power_off", 2.0)]
    outcome, _runner, summary, ticks = run(tmp_path, MOVE, faults)
    assert outcome is RunOutcome.SUCCESS
    for entry in ticks:
        if entry["nodes"].get("0") == "SUCCESS":
            assert all(limb["health"] == 0 for limb in entry["limbs"].values())
    done = _success_tick(ticks)
    assert done["t"] > 3.0  # not while a was powered off (b arrives at about 1.6 s)
    # a fell 100 mm when power came back; the move brought it back to its goal.
    goal_a = np.array([0.08, 0.0, 0.0])
    assert np.linalg.norm(np.array(done["limbs"]["a"]["state"][:3]) - goal_a) <= 0.002 + 1e-9
    held = [t["messages"].get("0", "") for t in ticks if 1.0 <= t["t"] < 3.0]
    assert all("limb a is powered off since t=1.00 s (power_off fault)" in m for m in held)
    assert summary["faults_injected"] == 1 and summary["faults_recovered"] == 1
    assert summary["recoveries"] >= 1
    (fault,) = summary["faults"]
    assert fault["recovered_at_s"] is not None and fault["recovered_at_s"] >= 3.0


def test_a_move_fails_on_a_limb_that_stays_powered_off_saying_so(tmp_path):
    tree = MOVE + "    stale_timeout_s: 1\n"
    faults = [ScheduledFault(1.0, "a", "power_off", 30.0)]
    outcome, runner, summary, ticks = run(tmp_path, tree, faults)
    assert outcome is RunOutcome.FAILURE
    assert runner.t == pytest.approx(2.02)  # 1 s of stale_timeout_s from the POWER_OFF state
    assert runner.failure_message().startswith(
        "move: limb a is powered off since t=1.00 s (power_off fault): the move cannot "
        "succeed without it"
    )
    assert summary["faults_recovered"] == 0
    assert not [t for t in ticks if t["nodes"].get("0") == "SUCCESS"]


def test_a_move_timing_out_on_a_powered_off_limb_says_so(tmp_path):
    tree = MOVE + "    timeout_s: 2\n"
    faults = [ScheduledFault(1.0, "a", "power_off", 30.0)]
    outcome, runner, _, _ = run(tmp_path, tree, faults)
    assert outcome is RunOutcome.FAILURE
    assert runner.failure_message() == (
        "move: timed out after 2 s: limb a is powered off since t=1.00 s (power_off fault): "
        "the move cannot succeed without it"
    )


def test_a_joint_move_never_succeeds_while_its_limb_is_powered_off(tmp_path):
    tree = """
    tree:
      joint_sync_move:
        name: move
        limbs: [a, b]
        # (the fake joints are the position [m]: a goes 0.08 "rad" in 0.4 s, b in 1.6 s)
        postures: [{a: {q_deg: [4.6, 0, 0]}, b: {q_deg: [61.9, 0, 0]}}]
    """
    faults = [ScheduledFault(1.0, "a", "power_off", 2.0)]
    outcome, _runner, summary, ticks = run(tmp_path, tree, faults)
    assert outcome is RunOutcome.SUCCESS
    done = _success_tick(ticks)
    assert done["t"] > 3.0  # not at 1.6 s, on a's frozen joints
    assert done["limbs"]["a"]["q"][2] == pytest.approx(0.0, abs=0.018)  # a fell, came back
    assert summary["faults_recovered"] == 1


def test_a_velocity_move_never_succeeds_while_its_limb_is_powered_off(tmp_path):
    tree = """
    tree:
      velocity_move:
        name: move
        limbs: [a, b]
        profile: [{duration_s: 1.5, velocity_mm_s: [40, 0, 0]}]
    """
    faults = [ScheduledFault(1.0, "b", "power_off", 2.0)]
    outcome, _runner, _, ticks = run(tmp_path, tree, faults)
    assert outcome is RunOutcome.SUCCESS
    assert _success_tick(ticks)["t"] >= 3.0


# -- the reviewer's mission, as limbtree run runs it ---------------------------------------


@pytest.mark.timeout(120)
def test_a_sync_move_whose_limb_loses_power_recovers_it_before_succeeding(tmp_path):
    summary, ticks, out = run_threaded(MISSIONS / "limb_down_during_move.yaml", tmp_path)
    assert summary["outcome"] == "SUCCESS"
    move = [t for t in ticks if "0.0" in t["nodes"]]
    (done,) = [t for t in move if t["nodes"]["0.0"] == "SUCCESS"]
    assert done["t"] > 4.0  # power came back at 4 s
    assert all(limb["health"] == 0 for limb in done["limbs"].values())
    start = ticks[0]["limbs"]["light"]["state"][2]
    assert done["limbs"]["light"]["state"][2] == pytest.approx(start + 0.06, abs=0.002)
    held = [t["messages"]["0.0"] for t in move if 1.0 <= t["t"] < 4.0]
    assert held and all(
        "limb light is powered off since t=1.00 s (power_off fault)" in m for m in held
    )
    assert summary["faults_injected"] == 1 and summary["faults_recovered"] == 1
    assert "recovered from power_off on light" in out


@pytest.mark.timeout(120)
def test_a_sync_move_fails_on_a_limb_that_never_gets_power_back(tmp_path):
    summary, ticks, _ = run_threaded(
        MISSIONS / "limb_down_during_move.yaml", tmp_path, {"duration_s": "100"}
    )
    assert summary["outcome"] == "FAILURE"
    assert summary["failure"].startswith(
        "up: limb light is powered off since t=1.00 s (power_off fault): the move cannot "
        "succeed without it"
    )
    assert summary["faults_recovered"] == 0
    assert not [t for t in ticks if t["nodes"].get("0.0") == "SUCCESS"]


@pytest.mark.timeout(120)
def test_a_sync_move_waits_for_a_disassembled_limb(tmp_path):
    summary, ticks, _ = run_threaded(
        MISSIONS / "limb_down_during_move.yaml", tmp_path, {"kind": "disassembly"}
    )
    assert summary["outcome"] == "SUCCESS"
    (done,) = [t for t in ticks if t["nodes"].get("0.0") == "SUCCESS"]
    assert done["t"] >= 4.0
    held = [t["messages"]["0.0"] for t in ticks if "0.0" in t["nodes"] and 1.0 <= t["t"] < 4.0]
    assert held and all("limb light is disassembled since t=1.00 s" in m for m in held)
    assert summary["faults_recovered"] == 1
