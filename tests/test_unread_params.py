"""``limbtree check`` warns about an align node given keys its controller version does not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from limbtree.trees.app import robot_catalogue
from limbtree.trees.cli import main
from limbtree.trees.mission import load_mission
from limbtree.trees.mission.loops import mission_warnings

MISSION = """\
mission: unread
rate_hz: 30
parameters:
  version: 2
limbs:
  arm: {robot: moonbot_limb_v2}
world:
  wheel: {module: moonbot_wheel_v2, pose: {translation_mm: [871, -459, 121]}}
tree:
  sequence:
    - align: {limb: arm, target: wheel/grasp, version: $version, dd_mm: 5, max_speed_mm_s: 5,
              v1: {s_max_mm: 20}}
    - align: {limb: arm, target: wheel/grasp, version: $version, v2: {t_max_mm_s: 30}}
"""


def _warnings(tmp_path: Path, **overrides: str) -> list[str]:
    path = tmp_path / "unread.yaml"
    path.write_text(MISSION)
    mission = load_mission(path, robots=robot_catalogue(), overrides=overrides)
    return [str(w) for w in mission_warnings(mission)]


def test_version_2_given_version_1_keys_is_warned_at_the_first_of_them(tmp_path: Path) -> None:
    # max_speed_mm_s: 5 under Version 2 (the default) moved as fast as without it, silently.
    (warning,) = _warnings(tmp_path)
    assert warning.startswith(f"{tmp_path / 'unread.yaml'}:11:92: warning: node 0.0: ")
    assert "align version 2 does not read max_speed_mm_s, v1 (Version 1's)" in warning
    assert "they change nothing" in warning
    assert "v2: {t_max_mm_s: 50, r_max_deg_s: 8}" in warning and "set version: 1" in warning


def test_version_1_given_version_2_keys_is_warned_at_them(tmp_path: Path) -> None:
    (warning,) = _warnings(tmp_path, version="1")
    assert warning.startswith(f"{tmp_path / 'unread.yaml'}:13:70: warning: node 0.1: ")
    assert "align version 1 does not read v2 (Version 2's): it changes nothing" in warning


def test_check_prints_the_warning_and_still_succeeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "unread.yaml"
    path.write_text(MISSION)
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "OK: mission unread" in out
    assert "warning: node 0.0: align version 2 does not read max_speed_mm_s, v1" in out


def test_keys_of_the_version_that_runs_get_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "read.yaml"
    given = "dd_mm: 5, max_speed_mm_s: 5,\n              v1: {s_max_mm: 20}"
    assert given in MISSION
    path.write_text(MISSION.replace(given, "dd_mm: 5"))
    mission = load_mission(path, robots=robot_catalogue())
    assert [str(w) for w in mission_warnings(mission)] == []


TURN = """\
mission: turn
rate_hz: 50
limbs:
  arm: {robot: heavy_limb}
  light: {robot: light_limb, base: {translation_mm: [0, 1500, 0]}}
tree:
  sequence:
    - sync_move: {name: turn, limbs: [arm, light], waypoints: [{translation_mm: [0, 0, 20]},
                  {rotation_deg: [0, 0, 60]}], r_e_deg: {arm: 30, light: inf}}
    - sync_move: {name: up, limbs: [arm], waypoints: [{translation_mm: [0, 0, 50]}]}
"""


def test_a_turn_a_move_does_not_wait_for_is_warned_at_its_waypoint(tmp_path: Path) -> None:
    # With r_e_deg inf (the default) the turn was commanded, the move succeeded as soon as
    # the positions settled, and the next relative move kept the unturned orientation.
    path = tmp_path / "turn.yaml"
    path.write_text(TURN)
    mission = load_mission(path, robots=robot_catalogue())
    (warning,) = [str(w) for w in mission_warnings(mission)]
    assert warning.startswith(f"{path}:9:19: warning: node 0.0: waypoint 2 turns limb light ")
    assert "by 60 deg, but its r_e_deg is inf" in warning
    assert "succeeds once the positions settle, before the turn is done" in warning
    assert "give r_e_deg (e.g. 30)" in warning
    # Every limb turned with r_e_deg given: the move waits for the turn, no warning.
    path.write_text(TURN.replace("light: inf", "light: 30"))
    mission = load_mission(path, robots=robot_catalogue())
    assert [str(w) for w in mission_warnings(mission)] == []


DOLLAR = """\
mission: dollar
clock: sim
rate_hz: 50
parameters:
  lift_mm: 30
  question: "lift?"
limbs:
  a: {robot: heavy_limb}
tree:
  sequence:
    - operator_gate: {prompt: "lift by $lift_mm mm? ($HOME and $5 are not parameters)"}
    - operator_gate: {prompt: $question}
"""


def test_a_parameters_name_inside_a_text_is_warned_as_staying_as_written(tmp_path: Path) -> None:
    # The gate asked "lift by $lift_mm mm?", as written, with no word from check or run.
    path = tmp_path / "dollar.yaml"
    path.write_text(DOLLAR)
    mission = load_mission(path, robots=robot_catalogue())
    (warning,) = [str(w) for w in mission_warnings(mission)]
    assert warning == (
        f"{path}:11:31: warning: node 0.0: prompt holds $lift_mm inside a text, which stays "
        "as written: a parameter is only a whole value (prompt: $lift_mm)"
    )
