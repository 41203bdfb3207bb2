"""Seed 004's mission end to end: ``limbtree run missions/asteroid_climb.yaml`` on a mujoco plant.

Each test runs the mission as a user would (its own agent process, the sim clock, ``--set``)
and reads the record. Issue 15's acceptance with the 100 mm rock on the base's path: the
baseline loses a gripper (the run FAILS with a detachment naming the leg and the force) and
RAMP never does, on terrain seeds 0, 1 and 2. The record carries every leg's gripper force
each tick (the leaves' telemetry) and the summary the run's figures.
"""

from __future__ import annotations

import re

import pytest
from test_missions import MISSIONS, run

from limbtree.trees.recorder import read_log

pytestmark = pytest.mark.slow

MISSION = "asteroid_climb.yaml"
HOLD_N = 0.9


def _grip_forces(log) -> list[list[float]]:
    """Every tick's four palm forces [N], from the climbing leaves' telemetry."""
    return [forces for forces, _ in _palms(log)]


def _palms(log) -> list[tuple[list[float], list[bool]]]:
    """Every tick's four palm forces [N] and which grippers hold."""
    palms = []
    for tick in read_log(log):
        for telemetry in (tick.get("skills") or {}).values():
            if telemetry.get("skill") in ("climb_step", "base_adjust"):
                palms.append((list(telemetry["grip_force_n"]), list(telemetry["supporting"])))
    return palms


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_with_the_rock_the_baseline_loses_a_gripper_naming_the_leg_and_force(tmp_path, seed):
    s = run(MISSION, tmp_path, "--set", "planner=baseline", "--set", f"terrain_seed={seed}",
            timeout=280)  # fmt: skip
    assert s["outcome"] == "FAILURE", s["_out"]
    climb = s["metrics"]["climb"]
    assert climb["detachments"] >= 1
    lost = climb["detached"][0]
    assert lost["leg"].startswith("hub.leg_") and lost["force_n"] > HOLD_N
    assert climb["max_grip_force_n"] >= lost["force_n"]  # the tearing force is the run's peak
    found = re.search(r"gripper of (hub\.leg_\d) detached at t = ([\d.]+) s: pulled with "
                      r"([\d.]+) N", s["_out"])  # fmt: skip
    assert found is not None, s["_out"]
    assert found.group(1) == lost["leg"]
    assert float(found.group(3)) == pytest.approx(lost["force_n"], abs=1e-3)
    assert climb["collisions"] > 0  # the level base ran into the rock
    forces = _grip_forces(s["_log"])
    assert forces and all(len(f) == 4 for f in forces)


@pytest.mark.timeout(400)
# seeds 0 to 4 in the sweep of docs/climbing.md; seed 2 here (CI's time): the one whose swing,
# before LRST kept clear of the terrain, touched down early and tore leg_1 off.
@pytest.mark.parametrize("seed", [2])
def test_with_the_rock_ramp_climbs_three_cycles_without_losing_a_gripper(tmp_path, seed):
    s = run(MISSION, tmp_path, "--set", "planner=ramp", "--set", f"terrain_seed={seed}",
            timeout=380)  # fmt: skip
    assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
    assert s["sim_time_s"] == pytest.approx(42.0, abs=0.05)  # 3 cycles of 14 s
    climb = s["metrics"]["climb"]
    assert climb["detachments"] == 0 and climb["collisions"] == 0
    assert 0.0 < climb["max_grip_force_n"] < HOLD_N
    assert climb["min_gia_margin"] > 0.0
    assert len(climb["steps"]) == 24  # 3 cycles x 4 legs x (swing + support)
    palms = _palms(s["_log"])
    assert len(palms) >= 4000 and all(len(f) == len(h) == 4 for f, h in palms)
    holding = max(f for forces, held in palms for f, h in zip(forces, held, strict=True) if h)
    assert holding == pytest.approx(climb["max_grip_force_n"])
    assert climb["max_contact_force_n"] >= holding


@pytest.mark.timeout(600)
def test_without_the_rock_ramp_halves_the_baselines_peak_gripper_force(tmp_path):
    # issue 15 over 20 seeds and 3 cycles is a sweep (docs/climbing.md); here seed 0 for one
    # cycle (CI's time): baseline 0.60 N, RAMP 0.20 N when measured
    peaks = {}
    for planner in ("baseline", "ramp"):
        s = run(MISSION, tmp_path / planner, "--set", f"planner={planner}", "--set", "cycles=1",
                "--set", "terrain_seed=0", "--set", "rock_mm=0", timeout=280)  # fmt: skip
        assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
        climb = s["metrics"]["climb"]
        assert climb["detachments"] == 0 and climb["collisions"] == 0
        assert climb["min_gia_margin"] > 0.0
        peaks[planner] = climb["max_grip_force_n"]
    assert 0.0 < peaks["ramp"] <= 0.5 * peaks["baseline"], peaks


@pytest.mark.timeout(600)
def test_touching_down_along_the_normal_lowers_ramps_peak_where_the_papers_lrst_did_not_halve(
    tmp_path,
):
    # seed 12 over two cycles: with the paper's free LRST points RAMP's peak was a landing
    # (0.43 N against the baseline's 0.69 N, 0.63 of it); along the normal 0.30 N when measured
    peaks = {}
    for name, settings in {
        "baseline": ["planner=baseline"],
        "free": ["planner=ramp", "swing_ends=free"],
        "normal": ["planner=ramp"],
    }.items():
        flags = [f for s in [*settings, "cycles=2", "terrain_seed=12", "rock_mm=0"]
                 for f in ("--set", s)]  # fmt: skip
        s = run(MISSION, tmp_path / name, *flags, timeout=280)
        assert s["_exit"] == 0 and s["outcome"] == "SUCCESS", s["_out"]
        climb = s["metrics"]["climb"]
        assert climb["detachments"] == 0 and climb["min_gia_margin"] > 0.0
        peaks[name] = climb["max_grip_force_n"]
    assert peaks["free"] > 0.5 * peaks["baseline"], peaks  # the exception it was
    assert 0.0 < peaks["normal"] <= 0.5 * peaks["baseline"], peaks
    assert peaks["normal"] < 0.8 * peaks["free"], peaks


@pytest.mark.timeout(300)
def test_a_swing_past_the_terrains_edge_fails_naming_the_foothold_not_later_out_of_reach(
    tmp_path,
):
    # On a 300 mm terrain the front legs' first swings went past its edge, where the plant's
    # ground and grippers end: one cycle reported SUCCESS with two grippers holding nothing,
    # three failed at 35 s with a foot "out of reach".
    text = (MISSIONS / MISSION).read_text()
    assert "size_mm: 3000" in text
    path = tmp_path / "small.yaml"
    path.write_text(text.replace("size_mm: 3000", "size_mm: 300"))
    s = run(str(path), tmp_path, "--set", "rock_mm=0", "--set", "cycles=1", timeout=280)
    assert s["outcome"] == "FAILURE", s["_out"]
    found = re.search(
        r"swing of (hub\.leg_\d): its next foothold \((-?\d+), (-?\d+)\) mm is past the "
        r"terrain's edge \(x -150 to 150 mm, y -150 to 150 mm\): there is no ground there to "
        r"grip; make the terrain larger \(world\.terrain\.size_mm\) or the climb shorter",
        s["_out"],
    )
    assert found is not None, s["_out"]
    assert found.group(1) in ("hub.leg_0", "hub.leg_3")  # (the front legs swing third, fourth)
    assert max(abs(int(found.group(2))), abs(int(found.group(3)))) > 150
    assert s["metrics"]["climb"]["detachments"] == 0
