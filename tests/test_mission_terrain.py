"""Seed 004's world in mission files: ``world.terrain``, ``world.contact``, a robot's ``servo``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from limbtree.trees.app import load, physics_json
from limbtree.trees.mission.errors import MissionError

MISSIONS = Path(__file__).resolve().parent.parent / "missions"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def test_terrain_contact_and_servo_reach_the_plant_in_si(tmp_path):
    mission = load(MISSIONS / "asteroid_stand.yaml", overrides={"rock_mm": "100"})
    assert mission.gravity_m_s2 == pytest.approx(9.80665e-6)
    assert mission.terrain == {
        "size_m": pytest.approx(3.0),
        "cell_m": pytest.approx(0.01),
        "sigma_m": pytest.approx(0.03),
        "hurst": pytest.approx(0.8),
        "seed": 0,
        "rocks": [{"at_m": [0.2, 0.0], "height_m": pytest.approx(0.1), "radius_m": 0.03}],
    }
    physics = json.loads(physics_json(mission, mission.robots[0]))
    assert physics["contact"] == {
        "stiffness_n_per_m": 4000.0,
        "damping_ns_per_m": 1.0,
        "grip_force_n": 0.9,
    }
    assert physics["servo"] == {"kp_nm_per_rad": 3.0, "kd_nms_per_rad": 0.02}
    assert physics["latched"]["leg_0.palm"] == "terrain"
    assert physics["terrain"]["rocks"][0]["height_m"] == pytest.approx(0.1)
    # A rock of height 0 (the default parameter) is no rock.
    flat = load(MISSIONS / "asteroid_stand.yaml")
    assert flat.terrain is not None and flat.terrain["rocks"] == []


def test_bad_terrain_contact_and_servo_keys_are_named_where_they_are(tmp_path):
    path = write(
        tmp_path,
        "mission: m\n"
        "world:\n"
        "  terrain: {sigma_cm: 3, seed: -1}\n"
        "  contact: {grip_force_n: 0}\n"
        "robots:\n"
        "  hub: {robot: hubrobo, servo: {kp_nm_per_rad: 3}}\n"
        "tree:\n"
        "  wait: {duration_s: 1}\n",
    )
    with pytest.raises(MissionError) as caught:
        load(path)
    text = str(caught.value)
    assert ":3:13: unknown key sigma_cm; did you mean sigma_mm" in text
    assert ":3:32: seed must be >= 0; got -1" in text
    assert ":4:27: grip_force_n must be > 0; got 0" in text
    assert ":6:32: servo sets a mujoco plant's start; add plant: mujoco" in text
