"""The world's modules are checked: an unknown module fails ``load_mission`` and ``check``."""

import textwrap
from pathlib import Path

import pytest

from limbtree.trees.cli import main
from limbtree.trees.mission import MissionError, load_mission

ROBOTS = {"heavy_limb": ("arm",)}
MISSION = textwrap.dedent(
    """\
    mission: m
    limbs:
      arm: {robot: heavy_limb}
    world:
      wheel: {module: %s, pose: {translation_mm: [0, 0, 0]}}
    tree:
      wait: {duration_s: 1}
    """
)


def write(tmp_path: Path, module: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(MISSION % module)
    return path


def test_load_mission_rejects_a_module_it_was_not_told_of_with_its_place(tmp_path):
    path = write(tmp_path, "no_such_wheel")
    with pytest.raises(MissionError) as raised:
        load_mission(path, robots=ROBOTS, modules=("moonbot_wheel_v2",))
    message = str(raised.value)
    assert f"{path}:5:" in message
    assert "no_such_wheel" in message and "moonbot_wheel_v2" in message


def test_load_mission_accepts_a_known_module(tmp_path):
    path = write(tmp_path, "moonbot_wheel_v2")
    mission = load_mission(path, robots=ROBOTS, modules=("moonbot_wheel_v2",))
    assert [w.module for w in mission.world] == ["moonbot_wheel_v2"]


def test_limbtree_check_fails_on_an_unknown_module_naming_file_line_and_column(tmp_path, capsys):
    path = write(tmp_path, "no_such_wheel")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:5:19: unknown module no_such_wheel" in err
    assert main(["check", str(write(tmp_path, "moonbot_wheel_v2"))]) == 0
