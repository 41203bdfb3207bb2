"""``grip_guard``: a climbing robot standing gripped fails when a gripper lets go.

In process, HubRobo on a MuJoCo plant (the climbing leaves' fixture): the oracles are the
plant's own gripper states and its list of tears (a gripper pulled off by an external 3 N
force, or opened by a gripper command), not the guard's figures. End to end (slow), the
shipped ``missions/asteroid_stand.yaml`` succeeds, and the same world with a leg driven off
its foothold under a fault fails with the guard's message; the record and ``limbtree
report`` say which gripper detached.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import py_trees
import pytest

pytest.importorskip("mujoco")

from test_climbing_leaves import LEGS, hubrobo, tick_until_done

from limbtree.transport.driver import GripperAction
from limbtree.trees.app import load
from limbtree.trees.behaviours.grip_guard import GripGuardBehaviour, faults_text
from limbtree.trees.mission.errors import MissionError
from limbtree.trees.recorder import read_log

Status = py_trees.common.Status
MISSIONS = Path(__file__).resolve().parent.parent / "missions"
STAND = MISSIONS / "asteroid_stand.yaml"
HOLD_N = 0.9


def _guard(context, **params) -> GripGuardBehaviour:
    return GripGuardBehaviour("stand gripped", context, {"legs": LEGS, **params})


def test_standing_still_the_guard_succeeds_after_its_duration_reporting_every_gripper():
    plant, context = hubrobo()
    node = _guard(context, duration=0.3)
    reports = []

    def note(plant) -> None:
        reports.append(context.telemetry.tick["stand gripped"].as_map())

    assert tick_until_done(plant, node, each=note) is Status.SUCCESS
    assert plant.time == pytest.approx(0.3, abs=0.011)
    assert node.feedback_message == "all 4 grippers held for 0.3 s"
    assert len(reports) >= 29
    for report in reports:
        assert report["skill"] == "grip_guard"
        assert report["supporting"] == [True] * 4 and report["holding"] == 4
        assert len(report["grip_force_n"]) == 4
    metrics = context.telemetry.metrics["climb"]
    assert metrics["detachments"] == 0 and metrics["detached"] == []
    assert metrics["steps"] == []


def test_a_gripper_pulled_off_fails_the_guard_naming_the_leg_the_time_and_the_force():
    plant, context = hubrobo()
    node = _guard(context)  # no duration: a guard, RUNNING until a gripper lets go
    body = int(plant.model.model.site_bodyid[plant.model.frame_site["leg_3.palm"]])

    def pull(plant) -> None:
        if plant.time > 0.2:  # 3 N up on leg_3's palm: past the 0.9 N hold
            plant.data.xfrc_applied[body, :3] = (0.0, 0.0, 3.0)

    assert tick_until_done(plant, node, each=pull) is Status.FAILURE
    torn = plant.limb_state("leg_3").detail["detachments"]  # the plant's own record
    assert [d["leg"] for d in torn] == ["leg_3"] and torn[0]["force_n"] > HOLD_N
    assert node.feedback_message == (
        f"gripper of hub.leg_3 detached at t = {torn[0]['t_s']:.3f} s: pulled with "
        f"{torn[0]['force_n']:.3f} N, past its 0.9 N holding force; no fault in force"
    )
    assert 0.2 < torn[0]["t_s"] <= plant.time
    metrics = context.telemetry.metrics["climb"]
    assert metrics["detachments"] == 1
    assert metrics["detached"][0]["leg"] == "hub.leg_3"
    assert metrics["max_pull_force_n"] >= torn[0]["force_n"]


def test_a_gripper_opened_fails_the_guard_as_let_go_at_the_tick_that_saw_it():
    plant, context = hubrobo()
    node = _guard(context)

    def open_leg_2(plant) -> None:
        if plant.time > 0.1:
            plant.gripper("leg_2", GripperAction.OPEN)

    assert tick_until_done(plant, node, each=open_leg_2) is Status.FAILURE
    assert not plant.limb_state("leg_2").detail["grip"]["supporting"]
    assert re.fullmatch(
        r"gripper of hub\.leg_2 let go at t = 0\.1\d0 s: it was opened \(a gripper command\); "
        r"no fault in force",
        node.feedback_message,
    ), node.feedback_message
    assert context.telemetry.metrics["climb"]["detachments"] == 0  # not torn: let go


def test_the_faults_in_force_are_named_leg_by_leg():
    assert faults_text({}) == "no fault in force"
    assert faults_text({"hub.leg_0": ["slowdown"]}) == "fault in force: slowdown on hub.leg_0"
    assert faults_text({"hub.leg_0": ["blockage", "slowdown"], "hub.leg_2": ["power_off"]}) == (
        "faults in force: blockage on hub.leg_0, slowdown on hub.leg_0, power_off on hub.leg_2"
    )


def test_limbtree_check_refuses_the_guard_over_a_kinematic_plants_legs(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        "mission: m\nrobots:\n  hub: {robot: hubrobo}\ntree:\n"
        "  grip_guard: {legs: [hub.leg_0], duration_s: 1}\n"
    )
    with pytest.raises(MissionError) as caught:
        load(path)
    assert (
        'm.yaml:5:3: grip_guard "Grip guard": limb hub.leg_0 is on a kinematic plant, and '
        "grip_guard reads the grippers that hold its legs to a terrain (seed 004's contact "
        "law): only a mujoco plant runs it; give robots.hub plant: mujoco, or leave grip_guard "
        "out for this limb"
    ) in str(caught.value)


def test_the_shipped_stand_guards_all_four_grippers():
    mission = load(STAND)
    guard = mission.root
    assert guard.type == "grip_guard"
    assert list(guard.params["legs"]) == LEGS and guard.params["duration"] == pytest.approx(5.0)


# End to end ---------------------------------------------------------------------------------


def _pulled(tmp_path: Path) -> Path:
    """asteroid_stand's world with leg_0 driven home (off its foothold) under a slowdown."""
    text = STAND.read_text()
    tree = text[text.index("\ntree:\n") :]
    path = tmp_path / "pulled.yaml"
    path.write_text(
        text.replace(
            tree,
            "\nfaults:\n"
            "  - {at_s: 0.5, limb: hub.leg_0, kind: slowdown, factor: 0.5}\n"
            "tree:\n"
            "  parallel:\n"
            "    policy: one\n"
            "    children:\n"
            "      - grip_guard: {name: stand gripped, legs: [hub.leg_0, hub.leg_1, hub.leg_2, "
            "hub.leg_3]}\n"
            "      - sequence:\n"
            "          - wait: {duration_s: 1}\n"
            "          - joint_move: {limb: hub.leg_0, posture: home}\n"
            "          - wait: {duration_s: 3}\n",
        )
    )
    return path


def _limbtree(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "limbtree", *args], capture_output=True, text=True, timeout=240
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_stand_mission_succeeds_and_its_record_shows_every_gripper_held(tmp_path):
    record = tmp_path / "record"
    done = _limbtree("run", str(STAND), "--headless", "--record", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: asteroid_stand in 5.00 s" in done.stdout
    ticks = list(read_log(record / "log.msgpack"))
    held = [
        entry["supporting"]
        for tick in ticks
        for entry in tick["skills"].values()
        if entry.get("skill") == "grip_guard"
    ]
    assert len(held) == len(ticks) == 251 and all(h == [True] * 4 for h in held)
    report = _limbtree("report", str(record))
    assert report.returncode == 0, report.stderr
    assert "Grippers (metrics.climb; seed 004, holding force 0.9 N)" in report.stdout
    assert re.search(r"\n  detachments +none\n", report.stdout), report.stdout
    assert (record / "grip_forces.png").exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_leg_pulled_off_its_foothold_fails_the_stand_naming_leg_time_force_and_fault(tmp_path):
    record = tmp_path / "record"
    done = _limbtree("run", str(_pulled(tmp_path)), "--headless", "--record", str(record))
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    found = re.search(
        r"failed at stand gripped: gripper of hub\.leg_0 detached at t = ([\d.]+) s: pulled "
        r"with ([\d.]+) N, past its 0\.9 N holding force; fault in force: slowdown on hub\.leg_0",
        out,
    )
    assert found is not None, out
    t_s, force_n = float(found.group(1)), float(found.group(2))
    assert 1.0 < t_s < 1.2 and force_n > HOLD_N  # the joint move starts at 1 s
    report = _limbtree("report", str(record))
    assert report.returncode == 0, report.stderr
    assert f"hub.leg_0 torn off at {t_s:.3f} s, pulled with {force_n:.3f} N" in report.stdout
