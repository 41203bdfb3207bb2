"""A mission's ``robots`` section: a whole robot as one plant, its limbs named ROBOT.LIMB."""

import math
import textwrap
from pathlib import Path

import pytest

from limbtree.trees.mission import Mission, MissionError, check_mission, load_mission
from limbtree.trees.mission.model import PlantKind

ROBOTS = {
    "heavy_limb": ("arm",),
    "light_limb": ("arm",),
    "moonbot_zero": ("leg_0", "leg_1", "leg_2", "leg_3"),
}
TREE = """
tree:
  sync_move:
    limbs: {limbs}
    waypoints: [{{translation_mm: [10, 0, 0]}}]
"""


def write(tmp_path: Path, head: str, limbs: str = "[quad.leg_0]") -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(textwrap.dedent(head) + TREE.format(limbs=limbs))
    return path


def load(path: Path) -> Mission:
    return load_mission(path, robots=ROBOTS)


def problems(path: Path) -> list[str]:
    return [str(p) for p in check_mission(path, robots=ROBOTS)]


def test_a_robot_brings_all_its_limbs_named_robot_dot_limb_on_one_plant(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          quad: {robot: moonbot_zero, base: {translation_mm: [0, 1500, 0]}}
        """,
        "[quad.leg_0, quad.leg_3]",
    )
    mission = load(path)
    names = ("quad.leg_0", "quad.leg_1", "quad.leg_2", "quad.leg_3")
    assert tuple(limb.name for limb in mission.limbs) == names
    assert [limb.limb for limb in mission.limbs] == ["leg_0", "leg_1", "leg_2", "leg_3"]
    assert {limb.plant_name for limb in mission.limbs} == {"quad"}
    assert all(limb.base_pose[:3] == pytest.approx((0, 1.5, 0)) for limb in mission.limbs)
    (robot,) = mission.robots
    assert (robot.name, robot.robot, robot.plant, robot.agent) == (
        "quad",
        "moonbot_zero",
        PlantKind.KINEMATIC,
        "sim",
    )
    assert robot.limbs == names
    assert robot.declared
    assert mission.root.params["limbs"] == ("quad.leg_0", "quad.leg_3")


def test_a_one_limb_robot_is_also_called_by_the_robots_name(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          big: {robot: heavy_limb, agent: "tcp://127.0.0.1:5555"}
        """,
        "[big]",
    )
    mission = load(path)
    assert [limb.name for limb in mission.limbs] == ["big.arm"]
    assert mission.root.params["limbs"] == ("big.arm",)
    assert mission.robots[0].agent == "tcp://127.0.0.1:5555"


def test_limbs_entries_stay_one_limb_plants_beside_the_robots(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          quad: {robot: moonbot_zero, backlash_deg: 2}
        limbs:
          heavy: {robot: heavy_limb}
        faults:
          - {at_s: 1, limb: quad.leg_2, kind: power_off, duration_s: 2}
        """,
        "[heavy, quad.leg_1]",
    )
    mission = load(path)
    assert [r.name for r in mission.robots] == ["quad", "heavy"]
    assert [r.declared for r in mission.robots] == [True, False]
    assert mission.robots[1].limbs == ("heavy",)
    assert mission.limb("heavy").plant is None
    assert mission.limb("heavy").plant_name == "heavy"
    assert mission.limb("quad.leg_1").sim == {"backlash_rad": pytest.approx(math.radians(2))}
    assert mission.faults[0].limb == "quad.leg_2"


def test_a_mission_without_robots_has_one_plant_per_limb(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        limbs:
          a: {robot: heavy_limb}
          b: {robot: light_limb}
        """,
        "[a, b]",
    )
    mission = load(path)
    assert [(r.name, r.limbs, r.declared) for r in mission.robots] == [
        ("a", ("a",), False),
        ("b", ("b",), False),
    ]


def test_unknown_robot_plant_kind_and_limb_are_reported_where_they_are_written(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          quad: {robot: moonbot_zero, plant: mujocco}
          arm: {robot: heavy_lim}
        """,
        "[quad.leg_7]",
    )
    found = problems(path)
    assert any(
        ":4:38: plant: unknown value mujocco; did you mean mujoco? valid values: kinematic, mujoco"
        in p
        for p in found
    )
    assert any(":5:16: unknown robot heavy_lim; did you mean heavy_limb?" in p for p in found)
    assert any(":9:13: limbs: unknown limb quad.leg_7" in p and "quad.leg_3" in p for p in found)
    with pytest.raises(MissionError):
        load(path)


def test_a_robot_and_a_limb_of_one_name_clash(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          arm: {robot: heavy_limb}
        limbs:
          arm: {robot: light_limb}
        """,
        "[arm]",
    )
    found = problems(path)
    assert any(":6:3: limb arm: robot arm (declared at" in p and "rename one" in p for p in found)


def test_robot_names_must_be_identifiers(tmp_path):
    path = write(
        tmp_path,
        """
        mission: m
        robots:
          my-quad: {robot: moonbot_zero}
        """,
        "[x]",
    )
    assert any("robot name 'my-quad' must be letters, digits, _" in p for p in problems(path))


def test_simulator_settings_are_checked_against_the_simulators_own_limits(tmp_path):
    from limbtree.robots.sim import SIM_OPTION_LIMITS, SimConfig, SimConfigError

    path = write(
        tmp_path,
        """
        mission: m
        robots:
          quad: {robot: moonbot_zero, vibration_hz: 2, vibration_damping: 1}
        """,
    )
    assert any("vibration_damping" in p for p in problems(path))
    with pytest.raises(SimConfigError):
        SimConfig(vibration_hz=2.0, vibration_damping=SIM_OPTION_LIMITS["vibration_damping"].high)


def test_check_counts_the_robots_when_one_has_several_limbs():
    import subprocess
    import sys

    missions = Path(__file__).resolve().parent.parent / "missions"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "check", str(missions / "power_loss_one_plant.yaml")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "OK: mission power_loss_one_plant, 6 limbs on 3 robots, 1 node, 4 faults" in done.stdout
