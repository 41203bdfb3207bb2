"""The shipped missions, end to end: real agent processes on loopback, the sim clock.

Each test runs ``limbtree run MISSION --headless --record DIR`` as a user would and checks
the record against what the paper shows.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from limbtree.trees.recorder import node_ids_named, read_header, read_log
from limbtree.trees.report import make_report

#: Every test here runs a mission in processes: seconds each.
pytestmark = pytest.mark.slow

MISSIONS = Path(__file__).resolve().parent.parent / "missions"


def run(
    mission: str,
    tmp_path: Path,
    *args: str,
    timeout: float = 240.0,
    env: dict[str, str] | None = None,
) -> dict:
    record = tmp_path / "record"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(MISSIONS / mission), "--headless",
         "--record", str(record), *args],
        capture_output=True, text=True, timeout=timeout,
        env=None if env is None else {**os.environ, **env},
    )  # fmt: skip
    summary = json.loads((record / "summary.json").read_text())
    summary["_exit"] = done.returncode
    summary["_out"] = done.stdout + done.stderr
    summary["_log"] = record / "log.msgpack"
    return summary


def commands_within_their_spheres(log: Path, p_e: float) -> None:
    for tick in read_log(log):
        for limb in tick["limbs"].values():
            if limb["command"] is not None:
                gap = np.linalg.norm(np.subtract(limb["command"][:3], limb["state"][:3]))
                assert gap <= p_e + 1e-9


@pytest.mark.timeout(300)
def test_out_of_range_stops_at_the_edge_and_comes_back_down_the_same_path(tmp_path):
    s = run("out_of_range.yaml", tmp_path)
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    assert s["max_command_state_distance"] <= 1.0
    ticks = list(read_log(s["_log"]))
    commands = np.array([t["limbs"]["heavy"]["command"] for t in ticks
                         if t["limbs"]["heavy"]["command"] is not None])  # fmt: skip
    states = np.array([t["limbs"]["heavy"]["state"] for t in ticks])
    top = states[:, 2].max()
    # The command never goes more than p_e = 50 mm beyond what the limb reaches...
    assert commands[:, 2].max() <= top + 0.05 + 1e-9
    # ... it went past the reach (the limb lagged), it stayed on the vertical line, and it
    # came back down.
    assert commands[:, 2].max() > top + 0.04
    assert np.abs(commands[:, :2] - commands[0, :2]).max() < 1e-6
    assert commands[-1, 2] < commands[0, 2]


@pytest.mark.timeout(300)
def test_six_limbs_trace_the_square_in_sync(tmp_path):
    s = run("square_sync.yaml", tmp_path)
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    assert s["max_command_state_distance"] <= 1.0
    commands_within_their_spheres(s["_log"], 0.02)
    ticks = list(read_log(s["_log"]))
    start = {n: np.array(limb["state"][:3]) for n, limb in ticks[0]["limbs"].items()}
    for tick in ticks[::10]:
        offsets = [np.array(limb["state"][:3]) - start[n] for n, limb in tick["limbs"].items()]
        spread = max(np.linalg.norm(a - b) for a in offsets for b in offsets)
        assert spread <= 2 * 0.02 + 1e-6  # all within two radii of each other


@pytest.mark.timeout(300)
def test_legs_that_lose_power_fall_recover_and_resume_with_the_others(tmp_path):
    s = run("power_loss.yaml", tmp_path)
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    assert s["faults_injected"] == 4 and s["faults_recovered"] == 4
    assert s["recoveries"] >= 1
    assert s["max_command_state_distance"] <= 1.0
    ticks = list(read_log(s["_log"]))
    (square,) = node_ids_named(read_header(s["_log"]), "square of 200 mm diagonal")
    modes = [t["skills"][square]["mode"] for t in ticks]
    first = modes.index("recovering")
    # The heavy limb holds still while the legs recover.
    held = [np.array(t["limbs"]["heavy"]["command"][:3]) for t in ticks[first:]
            if t["skills"][square]["mode"] == "recovering"]  # fmt: skip
    assert max(np.linalg.norm(h - held[0]) for h in held) <= 0.02 + 1e-9
    assert s["faults_skipped"] == []
    assert s["startup_s"] > 0.0  # the agents' start-up, before the run's own wall time
    # the power cut set past the mission's end: said, not silently a run without faults
    late = run("power_loss.yaml", tmp_path / "late", "--set", "power_off_at_s=100")
    assert late["_exit"] == 0 and late["faults_injected"] == 0, late["_out"]
    assert len(late["faults_skipped"]) == 4
    assert "faults 0/0 recovered, 4 scheduled not injected (faults_skipped)" in late["_out"]


@pytest.mark.timeout(400)
def test_the_quadruped_as_one_plant_with_one_agent_loses_power_like_four_limbs(tmp_path):
    # A process per agent (LIMBTREE_AGENT_PROCESSES): the quadruped's is one of three.
    one = run("power_loss_one_plant.yaml", tmp_path / "one",
              env={"LIMBTREE_AGENT_PROCESSES": "3"})  # fmt: skip
    assert one["_exit"] == 0 and one["outcome"] == "SUCCESS", one["_out"]
    assert one["faults_injected"] == 4 and one["faults_recovered"] == 4
    agents = sorted(p.name for p in (tmp_path / "one" / "record" / "agents").glob("*.log"))
    assert agents == ["agent-heavy.log", "agent-light.log", "agent-quad.log"]
    robots = read_header(one["_log"])["robots"]
    assert sorted(robots["quad"]["limbs"]) == [f"quad.leg_{i}" for i in range(4)]
    # The same run as power_loss.yaml's four one-limb agents, tick for tick.
    four = run("power_loss.yaml", tmp_path / "four")
    for key in ("outcome", "sim_time_s", "ticks", "recoveries", "max_command_state_distance"):
        assert one[key] == four[key], key
    for a, b in zip(read_log(one["_log"]), read_log(four["_log"]), strict=True):
        for i in range(4):
            assert a["limbs"][f"quad.leg_{i}"]["state"] == b["limbs"][f"leg_{i}"]["state"]
        assert a["limbs"]["heavy"]["command"] == b["limbs"]["heavy"]["command"]


@pytest.mark.timeout(600)
def test_robustness_recovers_every_disruption_of_table_ii(tmp_path):
    s = run("robustness.yaml", tmp_path, "--seed", "1", timeout=560.0)
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    assert s["sim_time_s"] >= 720.0
    disruptions = {(f["kind"], round(f["at_s"], 6)) for f in s["faults"]}
    assert len(disruptions) >= 29
    assert s["faults_recovered"] == s["faults_injected"]
    assert s["max_command_state_distance"] <= 1.0


@pytest.mark.timeout(900)
def test_the_campaigns_first_1230_s_recover_every_disruption_overlapping_ones_too(tmp_path):
    # The two-hour campaign (issue 12) takes longer than CI allows. Its first 1230 s hold the
    # first scheduled overlap (a slowdown on a blocked leg at 1200 s, which drawn power-offs
    # and a disassembly overlap too) and every kind of Table II; all are recovered by 1221 s.
    # The whole run's figures are in the closing note.
    s = run("robustness_campaign.yaml", tmp_path, "--set", "duration_s=1230", timeout=840.0)
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    kinds = {f["kind"] for f in s["faults"]}
    assert kinds == {"blockage", "slowdown", "disassembly", "power_off", "ik_error"}
    assert s["faults_recovered"] == s["faults_injected"]
    overlapping = [f for f in s["faults"] if f["limb"] == "leg_0" and 1200 <= f["at_s"] <= 1202]
    assert {"blockage", "slowdown"} <= {f["kind"] for f in overlapping}  # and a drawn power_off
    assert all(f["recovered_at_s"] is not None for f in overlapping)
    assert s["max_command_state_distance"] <= 1.0
    commands_within_their_spheres(s["_log"], 0.02)


def test_a_broken_mission_is_refused_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mission: bad\nlimbs:\n  a: {robot: heavy_limb}\ntree:\n  sync_mve: {}\n")
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(bad), "--headless"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"{bad}:5:3:" in done.stderr and "sync_move" in done.stderr


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mission", ["self_assembly_minimal.yaml", "self_assembly_dragon.yaml"])
def test_self_assembly_aligns_grasps_and_reconfigures_v2_faster_than_v1(tmp_path, mission):
    aligns = {}
    for version in (1, 2):
        s = run(mission, tmp_path / f"v{version}", "--auto-confirm", "--seed", "1",
                "--set", f"controller_version={version}")  # fmt: skip
        assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
        align = aligns[version] = s["metrics"]["align"]
        assert align["version"] == version
        assert align["final_dd_mm"] <= 10.0 and align["final_dtheta_deg"] <= 2.0
        assert s["metrics"]["align_grasp"]["final_dd_mm"] <= 10.0
        assert s["max_command_state_distance"] <= 1.0
        # The aligned limb ends on its target frame (the record's, in its own frame).
        last = [
            e for e in read_log(s["_log"])
            if any(k.get("skill") == "align" for k in e.get("skills", {}).values())
        ][-1]  # fmt: skip
        targeted = {n: limb for n, limb in last["limbs"].items() if "target" in limb}
        assert targeted, "no target frame on the alignment's last tick"
        for limb in targeted.values():
            assert 1e3 * math.dist(limb["state"][:3], limb["target"][:3]) <= 12.0
        # A joint move's target frame is where its posture puts the end-effector (forward
        # kinematics): it stays put while the arm moves there, and the arm ends on it (within
        # what settle_deg 2 leaves on an arm of about 1 m reach: 1 deg is 17 mm at 1 m).
        (posture,) = node_ids_named(read_header(s["_log"]), "assembly posture")
        moving = [e for e in read_log(s["_log"]) if posture in e.get("skills", {})]
        targets = [e["limbs"]["arm"]["target"] for e in moving]
        assert all(np.allclose(t, targets[-1]) for t in targets)
        gaps = [1e3 * math.dist(e["limbs"]["arm"]["state"][:3], e["limbs"]["arm"]["target"][:3])
                for e in (moving[0], moving[-1])]  # fmt: skip
        assert gaps[0] > 100.0 and gaps[1] <= 25.0, gaps
        # The report draws Fig. 4 (the measured paths) and Fig. 5 (speeds, Version 2 only).
        images = {path.name for path in make_report(s["_log"].parent).images}
        assert {"alignment.png", "alignment_path.png"} <= images
        assert ("alignment_speed.png" in images) == (version == 2)
    # Seed 002 Table I and Fig. 4: Version 2 converges 15 to 40 % sooner, on a shorter path.
    speedup = 1.0 - aligns[2]["duration_s"] / aligns[1]["duration_s"]
    assert 0.15 <= speedup <= 0.40, aligns
    assert aligns[2]["path_length_mm"] < aligns[1]["path_length_mm"]


@pytest.mark.timeout(300)
def test_grasping_from_the_approach_pose_fails_with_what_to_do(tmp_path):
    mission = tmp_path / "early_grasp.yaml"
    source = (MISSIONS / "self_assembly_minimal.yaml").read_text()
    # Grasp right after the approach alignment, 150 mm above the grasp point.
    early = source.replace(
        '      - operator_gate: {prompt: "aligned above the wheel: grasp it?"}',
        "      - grasp: {limb: arm, module: wheel}",
    )
    assert early != source
    mission.write_text(early)
    record = tmp_path / "record"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(mission), "--headless", "--auto-confirm",
         "--record", str(record)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 1
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "FAILURE"
    assert "closed on nothing" in summary["failure"] and "align again" in summary["failure"]


@pytest.mark.timeout(300)
def test_grasping_another_module_than_the_one_named_says_which_it_holds(tmp_path):
    # The gripper closed on the wheel, the grasp named a spare wheel elsewhere: the message
    # said "the end-effector was not within the grasp tolerance; align again without the
    # offset", which it was (on the wheel's).
    mission = tmp_path / "wrong_module.yaml"
    source = (MISSIONS / "self_assembly_minimal.yaml").read_text()
    wheel = "  wheel: {module: moonbot_wheel_v2, pose: {translation_mm: [871, -459, 121]}}\n"
    spare = "  spare: {module: moonbot_wheel_v2, pose: {translation_mm: [0, 900, 121]}}\n"
    wrong = source.replace(wheel, wheel + spare).replace(
        "- grasp: {limb: arm, module: wheel}", "- grasp: {limb: arm, module: spare}"
    )
    assert wrong.count("spare") == 2
    mission.write_text(wrong)
    summary = run(str(mission), tmp_path, "--auto-confirm")
    assert summary["_exit"] == 1, summary["_out"]
    failure = summary["failure"]
    assert "gripper holds wheel, not spare: it closed on another module" in failure, failure
    assert "align to spare's grasp point" in failure and "tolerance" not in failure


@pytest.mark.timeout(300)
def test_an_alignment_out_of_time_says_how_far_it_got_and_what_to_change(tmp_path):
    source = (MISSIONS / "self_assembly_minimal.yaml").read_text()
    hurried = source.replace("timeout_s: 120", "timeout_s: 2", 1)
    assert hurried != source
    (tmp_path / "hurried.yaml").write_text(hurried)
    record = tmp_path / "record"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(tmp_path / "hurried.yaml"), "--headless",
         "--auto-confirm", "--record", str(record)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 1
    failure = json.loads((record / "summary.json").read_text())["failure"]
    assert "not aligned after 2 s: Δd" in failure and "(needs <= 10)" in failure
    assert "still far, moving at up to" in failure and "f_j" in failure
