"""``limbtree check`` warns about a looping move whose lap fits in its hypersphere (issue 19)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from limbtree.trees.app import robot_catalogue
from limbtree.trees.cli import main
from limbtree.trees.mission import load_mission
from limbtree.trees.mission.loops import loop_warnings, mission_warnings

MISSIONS = Path(__file__).resolve().parent / "missions"

HEADER = """\
mission: loops
rate_hz: 50
limbs:
  arm: {robot: light_limb}
  leg: {robot: heavy_limb}
tree:
"""


def _warnings(tmp_path: Path, tree: str) -> list[str]:
    path = tmp_path / "loops.yaml"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(tree), "  "))
    mission = load_mission(path, robots=robot_catalogue())
    return [str(w) for w in loop_warnings(mission)]


@pytest.mark.parametrize(
    "mission", ["loop_inside_sphere.yaml", "loop_same_point.yaml", "loop_small_rotation.yaml"]
)
def test_check_warns_about_the_three_looping_missions_of_the_issue(
    mission: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(MISSIONS / mission)]) == 0
    out = capsys.readouterr().out.splitlines()
    name = mission.removesuffix(".yaml")
    assert out[0].endswith(f"OK: mission {name}, 1 limb, 3 nodes, 0 faults")
    (warning,) = out[1:]
    assert warning.startswith(f"{MISSIONS / mission}:")
    assert ": warning: node 0.1 loops over segments that all lie inside its hypersphere" in warning
    assert "command jumps between the waypoints" in warning and "p_e_mm" in warning


def test_a_loop_longer_than_its_hypersphere_gets_no_warning(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints: [{translation_mm: [40, 0, 0]}, {translation_mm: [0, 0, 0]}]
      loop: true
    """
    assert _warnings(tmp_path, tree) == []


def test_a_move_that_does_not_loop_gets_no_warning(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints: [{translation_mm: [5, 0, 0]}, {translation_mm: [0, 0, 0]}]
    """
    assert _warnings(tmp_path, tree) == []


def test_one_long_segment_in_the_lap_is_enough_to_visit_the_waypoints(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints:
        - {translation_mm: [5, 0, 0]}
        - {translation_mm: [10, 0, 0]}
        - {translation_mm: [60, 0, 0]}
      loop: true
    """
    assert _warnings(tmp_path, tree) == []


def test_the_warning_weighs_each_limb_with_its_own_p_e(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm, leg]
      p_e_mm: {arm: 50, leg: 10}
      waypoints: [{translation_mm: [30, 0, 0]}]
      loop: true
    """
    # 30 mm is inside the arm's 50 mm but three of the leg's radii: the lap is visited.
    assert _warnings(tmp_path, tree) == []
    inside = tree.replace("leg: 10", "leg: 40")
    (warning,) = _warnings(tmp_path, inside)
    assert "node 0 loops" in warning and "the longest is 0.75" in warning


def test_a_single_absolute_waypoint_depends_on_the_start_and_gets_no_warning(
    tmp_path: Path,
) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      frame: absolute
      waypoints: [{translation_mm: [300, 0, 400]}]
      loop: true
    """
    assert _warnings(tmp_path, tree) == []


# ---- moves that pass over a whole segment (looping or not)

SQUARE = Path(__file__).resolve().parent.parent / "missions" / "square_sync.yaml"


def _skips(tmp_path: Path, tree: str) -> list[str]:
    path = tmp_path / "skips.yaml"
    path.write_text(HEADER + textwrap.indent(textwrap.dedent(tree), "  "))
    mission = load_mission(path, robots=robot_catalogue())
    return [str(w) for w in mission_warnings(mission)]


def test_check_warns_when_the_square_fits_inside_the_hypersphere_of_its_centre(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # p_e 150 mm: every corner of the 200 mm square is within reach of the centre, so the
    # clamp commands the end (the centre) at once and the square is never traced.
    assert main(["check", str(SQUARE), "--set", "p_e_mm=150"]) == 0
    out = capsys.readouterr().out.splitlines()
    (warning,) = out[1:]
    assert warning.startswith(f"{SQUARE}:24:3: warning: node 0: waypoints 1 and 2 both lie")
    assert "around the limbs' start (0.67 of p_e / r_e)" in warning
    assert "never commanded" in warning and "p_e_mm" in warning
    assert main(["check", str(SQUARE)]) == 0  # the mission's own 20 mm: no warning
    assert capsys.readouterr().out.count("warning") == 0


def test_a_segment_between_two_far_waypoints_gets_no_skip_warning(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints: [{translation_mm: [5, 0, 0]}, {translation_mm: [60, 0, 0]}]
    """
    assert _skips(tmp_path, tree) == []


def test_an_excursion_inside_the_hypersphere_is_named_with_its_waypoints(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints:
        - {translation_mm: [100, 0, 0]}
        - {translation_mm: [105, 0, 0]}
        - {translation_mm: [100, 0, 0]}
    """
    # The limbs at waypoint 1: waypoints 2 and 3 are 5 and 0 mm away (p_e 20 mm).
    (warning,) = _skips(tmp_path, tree)
    assert "node 0: waypoints 2 and 3 both lie inside the hypersphere around waypoint 1" in (
        warning
    )
    absolute = tree.replace("limbs: [arm]\n", "limbs: [arm]\n      frame: absolute\n")
    (warning,) = _skips(tmp_path, absolute)
    assert "waypoints 2 and 3 both lie inside the hypersphere around waypoint 1" in warning


def test_a_loop_inside_its_hypersphere_gets_one_warning_not_two(tmp_path: Path) -> None:
    tree = """
    sync_move:
      limbs: [arm]
      waypoints: [{translation_mm: [5, 0, 0]}, {translation_mm: [0, 0, 0]}]
      loop: true
    """
    (warning,) = _skips(tmp_path, tree)
    assert "loops over segments that all lie inside" in warning


def test_run_prints_the_warning_before_it_starts(tmp_path: Path) -> None:
    import io

    from limbtree.trees.app import RunRequest, run_mission
    from limbtree.trees.runner import RunOutcome

    out = io.StringIO()
    outcome = run_mission(
        RunRequest(
            mission=SQUARE,
            overrides={"p_e_mm": "150"},
            headless=True,
            record=tmp_path / "run",
        ),
        out=out,
    )
    assert outcome is RunOutcome.SUCCESS
    first = out.getvalue().splitlines()[0]
    assert first.startswith(f"{SQUARE}:24:3: warning: node 0: waypoints 1 and 2 both lie")


def test_check_takes_a_set_with_spaces_around_the_equals_sign(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # (--set 'p_e_mm = 150' used to be "unknown parameter p_e_mm ; did you mean p_e_mm?")
    assert main(["check", str(SQUARE), "--set", "p_e_mm = 150"]) == 0
    assert "0.67 of p_e / r_e" in capsys.readouterr().out
