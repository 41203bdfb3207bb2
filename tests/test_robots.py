"""Tests of limbtree.robots: shipped descriptions, the registry, user robots and the listing."""

import math
import os
import re
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

import limbtree.robots
from limbtree.kinematics.chain import POSITION_MASK
from limbtree.kinematics.pose import Pose
from limbtree.robots import (
    ROBOT_PATH_ENV,
    JointKind,
    RobotDescriptionError,
    RobotsError,
    UnknownLimbError,
    UnknownPostureError,
    UnknownRobotError,
    builtin_robot_dir,
    format_robot_table,
    load_robot,
    load_robot_file,
    load_robots,
    robot_names,
    robot_search_path,
)

SHIPPED = [builtin_robot_dir()]
SHIPPED_NAMES = (
    "heavy_limb",
    "hubrobo",
    "light_limb",
    "mirror_arm",
    "mirror_mar",
    "moonbot_limb_v1",
    "moonbot_limb_v2",
    "moonbot_zero",
)
ALL_LIMBS = [
    (name, limb.name) for name in SHIPPED_NAMES for limb in load_robot(name, SHIPPED).limbs
]

PAN_TILT_URDF = """<?xml version="1.0"?>
<robot name="pan_tilt">
  <link name="base"/>
  <joint name="pan" type="revolute">
    <parent link="base"/><child link="yoke"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="1.5" effort="2" velocity="2.0"/>
  </joint>
  <link name="yoke">
    <inertial><mass value="0.2"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
  </link>
  <joint name="tilt" type="revolute">
    <parent link="yoke"/><child link="head"/>
    <origin xyz="0 0 0.05" rpy="0 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-1.0" upper="1.0" effort="2" velocity="2.0"/>
  </joint>
  <link name="head">
    <inertial><mass value="0.3"/>
      <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>
  </link>
  <joint name="tip_joint" type="fixed">
    <parent link="head"/><child link="tip"/><origin xyz="0.2 0 0" rpy="0 0 0"/>
  </joint>
  <link name="tip"/>
</robot>
"""

PAN_TILT_YAML = """\
name: pan_tilt
description: A two-joint pointing head
limbs:
  head:
    base_link: base
    ee_link: tip
    max_joint_speed: 1.5
    postures:
      home: [0.0, 0.2]
"""


def write_robot(root: Path, yaml_text: str = PAN_TILT_YAML, name: str = "pan_tilt") -> Path:
    """A user robot directory ``root/name`` with the pan-tilt URDF; returns its robot.yaml."""
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.urdf").write_text(PAN_TILT_URDF)
    path = directory / "robot.yaml"
    path.write_text(yaml_text)
    return path


def urdf_masses(path: Path) -> float:
    root = ElementTree.parse(path).getroot()
    return sum(float(m.get("value")) for m in root.findall("link/inertial/mass"))


# ---------------------------------------------------------------------- public API


def test_every_name_in_all_is_importable():
    for name in limbtree.robots.__all__:
        assert getattr(limbtree.robots, name) is not None


def test_errors_derive_from_the_root_exception():
    from limbtree.errors import LimbtreeError

    for error in (RobotsError, UnknownRobotError, UnknownLimbError, RobotDescriptionError):
        assert issubclass(error, LimbtreeError)


# ---------------------------------------------------------------------- shipped robots


def test_the_shipped_robots_are_listed():
    assert robot_names(SHIPPED) == SHIPPED_NAMES


def test_the_listing_fits_an_80_column_terminal():
    """Descriptions and sources were wrapped at 100 columns, and the file's path followed
    the mass on one line; only a path (on a line of its own, copied whole) may be longer."""
    text = format_robot_table([load_robot(name, SHIPPED) for name in SHIPPED_NAMES])
    long = [line for line in text.splitlines() if len(line) > 80]
    assert all(line.startswith("  file: ") for line in long), long


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_every_shipped_robot_loads(name):
    spec = load_robot(name, SHIPPED)
    assert spec.name == name
    assert spec.limbs
    assert spec.urdf_path.is_file()
    assert spec.paper and spec.description


@pytest.mark.parametrize(
    ("name", "limbs", "joints", "speed", "limb_mass"),
    [
        ("heavy_limb", 1, 7, 0.15, 20.0),  # seed 000 Table I
        ("light_limb", 1, 7, 3.1, 9.0),
        ("moonbot_zero", 4, 3, 10.0, 0.3),
    ],
)
def test_limbs_match_seed_000_table_i(name, limbs, joints, speed, limb_mass):
    spec = load_robot(name, SHIPPED)
    assert len(spec.limbs) == limbs
    for limb in spec.limbs:
        assert limb.n == joints
        assert limb.max_joint_speed == speed
        assert all(joint.max_speed == speed for joint in limb.joints)
        assert limb.mass_kg == pytest.approx(limb_mass)


def test_table_i_masses_are_the_robot_masses():
    assert load_robot("heavy_limb", SHIPPED).mass_kg == 20.0
    assert load_robot("light_limb", SHIPPED).mass_kg == 9.0
    quadruped = load_robot("moonbot_zero", SHIPPED)
    assert quadruped.limb_names == ("leg_0", "leg_1", "leg_2", "leg_3")
    assert all(leg.ik_mask == POSITION_MASK for leg in quadruped.limbs)


@pytest.mark.parametrize("name", ["moonbot_limb_v1", "moonbot_limb_v2"])
def test_moonbot_limbs_have_seven_joints_and_a_gripper_at_each_end(name):
    limb = load_robot(name, SHIPPED).limb()
    assert limb.n == 7
    assert limb.grippers == ("gripper_a", "gripper_b")
    assert (limb.base_link, limb.ee_link) == ("end_a", "end_b")


def test_moonbot_limb_v1_and_v2_have_different_kinematics():
    v1 = load_robot("moonbot_limb_v1", SHIPPED).chain()
    v2 = load_robot("moonbot_limb_v2", SHIPPED).chain()
    assert not np.allclose(v1.fk_matrix(np.zeros(7)), v2.fk_matrix(np.zeros(7)))


@pytest.mark.parametrize("name", ["moonbot_limb_v1", "moonbot_limb_v2"])
@pytest.mark.parametrize("height", [0.221, 0.371])
def test_moonbot_limbs_reach_the_seed_002_wheel_grasp_point_and_its_approach(name, height):
    # Seed 002 Fig. 4: wheel at (871, -459, 221) mm; alignment stops 150 mm above it.
    spec = load_robot(name, SHIPPED)
    chain = spec.chain()
    target = Pose((0.871, -0.459, height), (0.0, 0.0, 0.0, 1.0))
    result = chain.ik(target, spec.limb().posture("home"), mask=POSITION_MASK, seed=0)
    assert result.success


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_robot_mass_is_the_sum_of_the_urdf_inertials(name):
    spec = load_robot(name, SHIPPED)
    assert spec.mass_kg == pytest.approx(urdf_masses(spec.urdf_path))


@pytest.mark.parametrize(("name", "limb"), ALL_LIMBS)
def test_limb_joints_agree_with_the_kinematic_chain(name, limb):
    spec = load_robot(name, SHIPPED)
    chain = spec.chain(limb)
    joints = spec.limb(limb)
    assert chain.joint_names == joints.joint_names
    assert np.array_equal(chain.lower, joints.lower)
    assert np.array_equal(chain.upper, joints.upper)
    assert all(joint.kind is JointKind.REVOLUTE for joint in joints.joints)


@pytest.mark.parametrize(("name", "limb"), ALL_LIMBS)
def test_postures_are_inside_the_limits_and_home_is_not_singular(name, limb):
    spec = load_robot(name, SHIPPED)
    limb_spec = spec.limb(limb)
    assert {"home", "safe", "slumped"} <= set(limb_spec.postures)
    for posture in limb_spec.postures:
        q = limb_spec.posture(posture)
        assert np.all(q >= limb_spec.lower) and np.all(q <= limb_spec.upper)
    assert spec.chain(limb).manipulability(limb_spec.posture("home")) > 1e-3


def test_quadruped_feet_are_below_the_body_when_standing_and_level_when_slumped():
    spec = load_robot("moonbot_zero", SHIPPED)
    for leg in spec.limbs:
        chain = spec.chain(leg.name)
        standing = chain.fk(leg.posture("home")).position
        slumped = chain.fk(leg.posture("slumped")).position
        assert -0.08 < standing[2] < -0.05
        assert abs(slumped[2]) < 0.03


# ---------------------------------------------------------------------- lookups


def test_unknown_robot_error_lists_the_valid_names():
    with pytest.raises(UnknownRobotError) as info:
        load_robot("heavy_limbs", SHIPPED)
    assert info.value.valid_names == SHIPPED_NAMES
    assert "heavy_limb, hubrobo, light_limb" in str(info.value)
    assert "LIMBTREE_ROBOT_PATH" in str(info.value)


def test_a_robot_name_cannot_escape_the_search_path():
    with pytest.raises(UnknownRobotError):
        load_robot("../descriptions/heavy_limb", SHIPPED)


def test_unknown_limb_error_lists_the_limbs():
    spec = load_robot("moonbot_zero", SHIPPED)
    with pytest.raises(UnknownLimbError, match="leg_0, leg_1, leg_2, leg_3"):
        spec.limb("leg_4")


def test_a_robot_with_several_limbs_needs_a_limb_name():
    spec = load_robot("moonbot_zero", SHIPPED)
    with pytest.raises(UnknownLimbError, match="4 limbs; name one"):
        spec.chain()


def test_unknown_posture_error_lists_the_postures():
    limb = load_robot("heavy_limb", SHIPPED).limb("arm")
    with pytest.raises(UnknownPostureError, match="home, safe, slumped"):
        limb.posture("parked")


def test_postures_are_read_only():
    posture = load_robot("heavy_limb", SHIPPED).limb().posture("home")
    with pytest.raises(ValueError):
        posture[0] = 1.0


def test_chain_is_built_once_per_spec_and_not_shared_between_specs():
    first = load_robot("light_limb", SHIPPED)
    second = load_robot("light_limb", SHIPPED)
    assert first.chain("arm") is first.chain()
    assert first.chain() is not second.chain()


def test_load_robots_loads_every_robot_sorted_by_name():
    assert tuple(spec.name for spec in load_robots(SHIPPED)) == SHIPPED_NAMES


# ---------------------------------------------------------------------- user robots


def test_user_robot_is_found_on_limbtree_robot_path(tmp_path, monkeypatch):
    write_robot(tmp_path / "mine")
    monkeypatch.setenv(ROBOT_PATH_ENV, f"{tmp_path / 'missing'}{os.pathsep}{tmp_path / 'mine'}")
    assert robot_search_path() == (tmp_path / "missing", tmp_path / "mine", builtin_robot_dir())
    assert "pan_tilt" in robot_names()
    assert "heavy_limb" in robot_names()
    spec = load_robot("pan_tilt")
    limb = spec.limb()
    assert limb.joint_names == ("pan", "tilt")
    assert limb.max_joint_speed == 1.5
    assert limb.mass_kg == pytest.approx(0.5)
    assert spec.mass_kg == pytest.approx(0.5)  # mass_kg omitted: the URDF's
    tip = spec.chain().fk(limb.posture("home")).position  # 0.2 m arm tilted 0.2 rad down
    assert np.allclose(tip, [0.2 * math.cos(0.2), 0.0, 0.15 - 0.2 * math.sin(0.2)])


def test_user_robot_path_entries_before_the_shipped_ones_win(tmp_path, monkeypatch):
    write_robot(tmp_path, PAN_TILT_YAML.replace("pan_tilt", "heavy_limb"), name="heavy_limb")
    monkeypatch.setenv(ROBOT_PATH_ENV, str(tmp_path))
    assert load_robot("heavy_limb").limb().joint_names == ("pan", "tilt")


def test_empty_limbtree_robot_path_means_shipped_robots_only(monkeypatch):
    monkeypatch.setenv(ROBOT_PATH_ENV, "")
    assert robot_search_path() == (builtin_robot_dir(),)


def test_load_robot_file_takes_a_file_or_its_directory(tmp_path):
    text = PAN_TILT_YAML.replace("name: pan_tilt", "name: other_name\nurdf: pan_tilt.urdf")
    path = write_robot(tmp_path, text)
    assert load_robot_file(path).name == "other_name"
    assert load_robot_file(path.parent).name == "other_name"
    with pytest.raises(RobotsError, match="no robot description"):
        load_robot_file(tmp_path / "nowhere")


def test_home_defaults_to_zero_moved_into_the_limits(tmp_path):
    text = PAN_TILT_YAML.replace("    postures:\n      home: [0.0, 0.2]\n", "")
    text = text.replace("max_joint_speed: 1.5", "max_joint_speed: 5.0")
    spec = load_robot_file(write_robot(tmp_path, text))
    assert spec.limb().postures == {"home": (0.0, 0.0)}
    assert [joint.max_speed for joint in spec.limb().joints] == [2.0, 2.0]  # URDF velocity


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ("limbs:", "limbz:", "limbz", "unknown key; valid keys here: name, description"),
        ("name: pan_tilt\n", "", "name", "missing"),
        ("    ee_link: tip\n", "", "limbs.head.ee_link", "missing"),
        ("ee_link: tip", "ee_link: tool0", "limbs.head.ee_link", "no link named 'tool0'"),
        ("ee_link: tip", "ee_link: base", "limbs.head", "no movable joint"),
        ("max_joint_speed: 1.5", "max_joint_speed: -1", "limbs.head.max_joint_speed", "positive"),
        ("max_joint_speed: 1.5", "max_joint_speed: yes", "limbs.head.max_joint_speed", "True"),
        ("max_joint_speed: 1.5", "max_joint_speed: fast", "limbs.head.max_joint_speed", "fast"),
        ("home: [0.0, 0.2]", "home: [0.0]", "limbs.head.postures.home", "expected 2 numbers"),
        ("home: [0.0, 0.2]", "home: [0.0, 1.2]", "limbs.head.postures.home", "tilt = 1.2"),
        ("    postures:", "    ik_mask: [1, 1]\n    postures:", "limbs.head.ik_mask", "6 numbers"),
        (
            "    postures:",
            "    ik_mask: [0, 0, 0, 0, 0, 0]\n    postures:",
            "limbs.head.ik_mask",
            "0",
        ),
        ("    postures:", "    grippers: [claw]\n    postures:", "limbs.head.grippers", "claw"),
        ("    postures:", "    colour: red\n    postures:", "limbs.head.colour", "unknown key"),
        ("limbs:\n", "urdf: nothing.urdf\nlimbs:\n", "urdf", "not found"),
        ("name: pan_tilt", "name: tilt_pan", "name", "the directory is 'pan_tilt'"),
        ("name: pan_tilt", "name: 'pan tilt'", "name", "not a valid robot name"),
        (PAN_TILT_YAML[PAN_TILT_YAML.index("limbs:") :], "limbs: {}\n", "limbs", "at least one"),
    ],
)
def test_bad_robot_yaml_names_the_file_and_the_key(tmp_path, old, new, key, words):
    assert old in PAN_TILT_YAML
    path = write_robot(tmp_path, PAN_TILT_YAML.replace(old, new, 1))
    with pytest.raises(RobotDescriptionError) as info:
        load_robot("pan_tilt", [tmp_path])
    error = info.value
    assert error.path == path
    assert error.key == key
    assert words in str(error)
    assert str(error).startswith(str(path))


def test_description_errors_give_the_line_of_the_key(tmp_path):
    path = write_robot(tmp_path, PAN_TILT_YAML.replace("ee_link: tip", "ee_link: tool0"))
    with pytest.raises(RobotDescriptionError) as info:
        load_robot_file(path)
    assert info.value.line == 6
    assert str(info.value).startswith(f"{path}:6: limbs.head.ee_link: no link named 'tool0'")
    assert "valid links: base, yoke, head, tip" in str(info.value)


def test_invalid_yaml_gives_the_line(tmp_path):
    path = write_robot(tmp_path, PAN_TILT_YAML.replace("ee_link: tip", "ee_link: [tip"))
    with pytest.raises(RobotDescriptionError) as info:
        load_robot_file(path)
    assert info.value.key == "<yaml>"
    assert info.value.line is not None
    assert re.match(rf"{re.escape(str(path))}:\d+: <yaml>: not valid YAML", str(info.value))


@pytest.mark.parametrize(
    ("old", "new", "key", "line", "column", "reason"),
    [
        (
            "max_joint_speed: 1.5",
            "max_joint_speed: 050",
            "limbs.head.max_joint_speed",
            7,
            22,
            "050 has a leading zero, which YAML 1.1 reads as octal (40): write 50 (or 40)",
        ),
        (
            "home: [0.0, 0.2]",
            "home: [0.0, 1:30]",
            "limbs.head.postures.home",
            9,
            19,
            "1:30 is a base-60 number in YAML 1.1 (90): write 90",
        ),
        (
            "description: A two-joint pointing head",
            "mass_kg: 0x10",
            "mass_kg",
            2,
            10,
            "0x10 is a hexadecimal number in YAML 1.1 (16): write 16",
        ),
    ],
)
def test_a_number_yaml_1_1_reads_in_another_base_is_refused_at_its_line_and_column(
    tmp_path, old, new, key, line, column, reason
):
    # PyYAML (YAML 1.1) would read a joint speed of 050 as 40 rad/s, silently.
    path = write_robot(tmp_path, PAN_TILT_YAML.replace(old, new, 1))
    with pytest.raises(RobotDescriptionError) as info:
        load_robot_file(path)
    error = info.value
    assert (error.path, error.key, error.line, error.column) == (path, key, line, column)
    assert str(error) == f"{path}:{line}:{column}: {key}: {reason}"


def test_every_number_yaml_1_1_reads_in_another_base_is_named_in_one_error(tmp_path):
    text = PAN_TILT_YAML.replace("home: [0.0, 0.2]", "home: [00, 0b1]").replace("1.5", "01")
    with pytest.raises(RobotDescriptionError) as info:
        load_robot_file(write_robot(tmp_path, text))
    assert (info.value.line, info.value.column) == (7, 22)
    assert info.value.reason == (
        "01 has a leading zero, which YAML 1.1 reads as octal (1): write 1; more such numbers "
        "in this file: line 9 column 14 (00), line 9 column 18 (0b1)"
    )


def test_quoted_text_with_a_leading_zero_is_not_a_number(tmp_path):
    path = write_robot(tmp_path, PAN_TILT_YAML.replace("A two-joint pointing head", "'007'"))
    assert load_robot_file(path).description == "007"


def test_bad_urdf_names_the_urdf_file(tmp_path):
    path = write_robot(tmp_path)
    urdf = path.parent / "pan_tilt.urdf"
    urdf.write_text(PAN_TILT_URDF.replace('<limit lower="-1.0" upper="1.0"', "<limit"))
    with pytest.raises(RobotDescriptionError) as info:
        load_robot_file(path)
    assert info.value.path == urdf
    assert info.value.key == "<urdf>"
    assert "revolute joint 'tilt' needs <limit lower=... upper=...>" in str(info.value)


def test_unparsable_urdf_is_a_description_error(tmp_path):
    path = write_robot(tmp_path)
    (path.parent / "pan_tilt.urdf").write_text("<robot><link name='a'></robot>")
    with pytest.raises(RobotDescriptionError, match="not a readable URDF"):
        load_robot_file(path)


# ---------------------------------------------------------------------- listing


def test_table_lists_every_robot_limb_and_joint():
    specs = load_robots(SHIPPED)
    table = format_robot_table(specs)
    for spec in specs:
        assert spec.name in table
        for limb in spec.limbs:
            assert f"limb {limb.name}" in table
            for joint in limb.joint_names:
                assert joint in table
    assert "0.15 rad/s" in table and "3.1 rad/s" in table and "10 rad/s" in table
    assert "-170.0 deg" in table
    assert "gripper_a, gripper_b" in table
    assert "position only" in table
    assert "mass 20 kg" in table and "0.3 kg" in table


def test_table_joint_columns_are_aligned():
    table = format_robot_table([load_robot("moonbot_zero", SHIPPED)])
    rows = [line for line in table.splitlines() if "revolute" in line]
    assert len(rows) == 12
    assert len({row.index("revolute") for row in rows}) == 1
    assert len({row.index(" deg") for row in rows}) == 1  # lower limits end in one column
    assert len({len(row) for row in rows}) == 1


def test_table_shows_unlimited_and_prismatic_joints(tmp_path):
    urdf = (
        PAN_TILT_URDF.replace(
            'type="revolute">\n    <parent link="base"/>',
            'type="continuous">\n    <parent link="base"/>',
        )
        .replace(
            '<limit lower="-1.5" upper="1.5" effort="2" velocity="2.0"/>',
            '<limit effort="2" velocity="2.0"/>',
        )
        .replace('<joint name="tilt" type="revolute">', '<joint name="tilt" type="prismatic">')
    )
    path = write_robot(tmp_path)
    (path.parent / "pan_tilt.urdf").write_text(urdf)
    spec = load_robot_file(path)
    pan, tilt = spec.limb().joints
    assert (pan.kind, pan.lower, pan.upper) == (JointKind.CONTINUOUS, -math.inf, math.inf)
    assert tilt.kind is JointKind.PRISMATIC and tilt.unit == "m"
    chain = spec.chain()
    assert np.array_equal(chain.lower, spec.limb().lower)  # -inf for the continuous joint
    assert list(chain.revolute) == [True, False]
    target = chain.fk([3.0, 0.5])
    reached = chain.fk(chain.ik(target, [0.0, 0.0], mask=POSITION_MASK, seed=1).q)
    assert reached.distance_to(target) < 1e-4
    table = format_robot_table([spec])
    assert "none" in table
    assert "-1.000 m" in table and "1.5 m/s" in table


def test_empty_table_says_so():
    assert format_robot_table([]) == "(no robots)"


def test_the_robot_of_the_docs_loads_as_written(tmp_path):
    """docs/robots.md's pan_tilt example, URDF and robot.yaml as the page shows them (its
    ``interfaces: {}`` was refused: "expected a mapping of interface name to link")."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "robots.md").read_text()
    section = page[page.index("## Adding your own robot") :]
    blocks = dict(
        (kind, textwrap.dedent(text))
        for kind, text in reversed(re.findall(r"```(xml|yaml)\n(.*?)```", section, re.S))
    )  # (the first block of each kind)
    folder = tmp_path / "pan_tilt"
    folder.mkdir()
    (folder / "pan_tilt.urdf").write_text(blocks["xml"])
    (folder / "robot.yaml").write_text(blocks["yaml"])
    spec = load_robot_file(folder / "robot.yaml")
    assert spec.name == "pan_tilt" and spec.interfaces == {}
    head = spec.limb("head")
    assert head.posture("safe") == pytest.approx([0.0, -0.5])
