"""Tests of limbtree.robots.modules: the MoonBot wheels of seed 002, grasp points, tolerances."""

import fnmatch
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, robot_names
from limbtree.robots.errors import RobotsError
from limbtree.robots.modules import (
    DEFAULT_APPROACH_DISTANCE_M,
    GraspPoint,
    GraspTolerance,
    ModuleDescriptionError,
    UnknownGraspPointError,
    UnknownModuleError,
    builtin_module_dir,
    load_module,
    load_module_file,
    module_names,
)

WHEELS = ("moonbot_wheel_v1", "moonbot_wheel_v2")
SHIPPED_MODULES = ("mirror_tile", *WHEELS)
ROOT = Path(__file__).resolve().parent.parent

GOOD_FILE = """\
name: crate
mass_kg: 2.0
size_m: [0.2, 0.2, 0.2]
grasp_tolerance: {position_m: 0.01, angle_rad: 0.05}
grasp_points:
  top:
    position_m: [0, 0, 0.1]
    quaternion: [1, 0, 0, 0]
"""


def write(tmp_path, text, name="crate.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- shipped modules


def test_the_shipped_modules_are_the_mirror_tile_and_the_moonbot_wheels_v1_and_v2():
    assert module_names() == SHIPPED_MODULES


@pytest.mark.parametrize("name", WHEELS)
def test_each_wheel_loads_with_mass_size_grasp_points_and_a_tolerance(name):
    spec = load_module(name)
    assert spec.name == name
    assert "MoonBot Wheel" in spec.description
    assert spec.mass_kg > 0.0
    assert all(extent > 0.0 for extent in spec.size_m)
    assert "grasp" in spec.grasp_points
    assert 0.0 < spec.grasp_tolerance.position_m <= 0.02
    assert 0.0 < spec.grasp_tolerance.angle_rad <= math.radians(10.0)
    assert spec.path == builtin_module_dir() / f"{name}.yaml"


@pytest.mark.parametrize("name", WHEELS)
def test_each_wheel_says_what_comes_from_seed_002_and_what_was_chosen(name):
    spec = load_module(name)
    assert "Seed 002" in spec.paper
    assert "150 mm" in spec.paper
    assert "not measurements" in spec.notes


@pytest.mark.parametrize("name", WHEELS)
def test_the_approach_distance_is_seed_002s_150_mm(name):
    assert load_module(name).approach_distance_m == DEFAULT_APPROACH_DISTANCE_M == 0.15


@pytest.mark.parametrize("name", WHEELS)
def test_every_grasp_frame_approaches_towards_the_module_and_sits_on_its_surface(name):
    spec = load_module(name)
    half = np.array(spec.size_m) / 2.0
    for point in spec.grasp_points.values():
        position = point.pose.position
        assert np.all(np.abs(position) <= half + 1e-12)
        approach_in_module = point.pose.rotation @ np.array(point.approach)
        # The gripper moves from the grasp point towards the module's inside.
        assert float(approach_in_module @ -position) > 0.0


@pytest.mark.parametrize("name", WHEELS)
def test_the_approach_pose_is_150_mm_back_from_the_grasp_point_with_the_same_rotation(name):
    spec = load_module(name)
    for point in spec.grasp_points.values():
        approach = spec.approach_pose(point.name)
        assert point.pose.distance_to(approach) == pytest.approx(0.15)
        assert point.pose.angle_to(approach) == pytest.approx(0.0, abs=1e-12)
        # Moving along the approach direction for 150 mm brings the gripper to the grasp point.
        direction = point.pose.rotation @ np.array(point.approach)
        assert approach.position + 0.15 * direction == pytest.approx(point.pose.position)


@pytest.mark.parametrize("name", WHEELS)
def test_the_trials_grasp_point_is_approached_from_above_when_the_wheel_lies_flat(name):
    spec = load_module(name)
    lying_flat = Pose((0.871, -0.459, spec.size_m[2] / 2.0))
    grasp = lying_flat @ spec.grasp_point("grasp").pose
    above = lying_flat @ spec.approach_pose("grasp")
    assert above.position - grasp.position == pytest.approx([0.0, 0.0, 0.15])
    # The end-effector's z (out of the gripper face) points down onto the connector.
    assert grasp.rotation[:, 2] == pytest.approx([0.0, 0.0, -1.0])
    # As an align offset in the grasp frame: 150 mm back along -z.
    offset = spec.grasp_point("grasp").approach_offset(0.15)
    assert (grasp @ offset).isclose(above, atol_m=1e-12, atol_rad=1e-12)
    assert offset.position == pytest.approx([0.0, 0.0, -0.15])


def test_the_modules_directory_is_not_taken_for_a_robot():
    assert "modules" not in robot_names([builtin_robot_dir()])


def test_the_module_files_are_shipped_as_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["limbtree.robots"]
    for name in WHEELS:
        relative = f"descriptions/modules/{name}.yaml"
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative


# ---------------------------------------------------------------------- errors


def test_an_unknown_module_error_lists_the_valid_modules():
    with pytest.raises(UnknownModuleError) as info:
        load_module("moonbot_wheel_v3")
    assert info.value.name == "moonbot_wheel_v3"
    assert info.value.valid_names == SHIPPED_MODULES
    assert "moonbot_wheel_v1, moonbot_wheel_v2" in str(info.value)
    assert isinstance(info.value, RobotsError)
    assert isinstance(info.value, LookupError)


@pytest.mark.parametrize("name", ["../robots", "", "modules/moonbot_wheel_v1"])
def test_a_name_that_is_a_path_is_an_unknown_module(name):
    with pytest.raises(UnknownModuleError):
        load_module(name)


def test_an_unknown_grasp_point_error_lists_the_valid_grasp_points():
    spec = load_module("moonbot_wheel_v1")
    with pytest.raises(UnknownGraspPointError) as info:
        spec.grasp_point("handle")
    assert info.value.valid_grasp_points == ("grasp", "grasp_back")
    assert "valid grasp points: grasp, grasp_back" in str(info.value)


def test_a_module_file_loads_with_defaults_for_the_optional_keys(tmp_path):
    spec = load_module_file(write(tmp_path, GOOD_FILE))
    assert spec.name == "crate"
    assert spec.approach_distance_m == 0.15
    assert spec.grasp_point("top").approach == (0.0, 0.0, 1.0)
    assert spec.grasp_point("top").pose.position == pytest.approx([0.0, 0.0, 0.1])


@pytest.mark.parametrize(
    ("old", "new", "key", "words"),
    [
        ("mass_kg: 2.0", "mass_kg: -2.0", "mass_kg", "positive number [kg]"),
        ("mass_kg: 2.0\n", "", "<top>", "missing key 'mass_kg'"),
        ("size_m: [0.2, 0.2, 0.2]", "size_m: [0.2, 0.2]", "size_m", "expected 3 numbers"),
        ("[1, 0, 0, 0]", "[1, 0, 0, 1]", "grasp_points.top.quaternion", "unit vector"),
        ("angle_rad: 0.05", "angle_deg: 3", "grasp_tolerance.angle_deg", "position_m, angle_rad"),
        ("  top:", "  top/side:", "grasp_points.top/side", "no '/'"),
        ("name: crate", "name: crate\ncolour: red", "colour", "valid keys here"),
        ("    quaternion: [1, 0, 0, 0]\n", "", "grasp_points.top", "missing key 'quaternion'"),
    ],
)
def test_a_wrong_module_file_names_the_file_line_and_key(tmp_path, old, new, key, words):
    text = GOOD_FILE.replace(old, new)
    assert text != GOOD_FILE
    path = write(tmp_path, text)
    with pytest.raises(ModuleDescriptionError) as info:
        load_module_file(path)
    assert info.value.key == key
    assert words in info.value.reason
    assert str(info.value).startswith(str(path))
    if key != "<top>":
        assert info.value.line is not None


def test_a_module_file_that_is_not_yaml_says_so_with_the_line(tmp_path):
    with pytest.raises(ModuleDescriptionError) as info:
        load_module_file(write(tmp_path, "name: [crate\nmass_kg: 1\n"))
    assert info.value.key == "<yaml>"
    assert info.value.line is not None


def test_a_module_number_yaml_1_1_reads_in_another_base_is_refused_at_its_line_and_column(
    tmp_path,
):
    # PyYAML (YAML 1.1) would read a mass of 020 kg as 16 kg, silently.
    path = write(tmp_path, GOOD_FILE.replace("mass_kg: 2.0", "mass_kg: 020"))
    with pytest.raises(ModuleDescriptionError) as info:
        load_module_file(path)
    assert (info.value.key, info.value.line, info.value.column) == ("mass_kg", 2, 10)
    assert str(info.value) == (
        f"{path}:2:10: mass_kg: 020 has a leading zero, which YAML 1.1 reads as octal (16): "
        "write 20 (or 16)"
    )


def test_a_missing_module_file_cannot_be_read(tmp_path):
    with pytest.raises(ModuleDescriptionError, match="cannot read it"):
        load_module_file(tmp_path / "nothing.yaml")


# ---------------------------------------------------------------------- values


def test_a_grasp_tolerance_admits_poses_within_both_bounds_only():
    tolerance = GraspTolerance(position_m=0.01, angle_rad=0.05)
    grasp = Pose((1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
    assert tolerance.admits(grasp, grasp)
    assert tolerance.admits(Pose((1.0, 0.0, 0.0099), grasp.quaternion), grasp)
    assert not tolerance.admits(Pose((1.0, 0.0, 0.0101), grasp.quaternion), grasp)
    turned = Pose(grasp.position, (math.cos(0.024), math.sin(0.024), 0.0, 0.0))  # 0.048 rad
    assert tolerance.admits(turned, grasp)
    turned_more = Pose(grasp.position, (math.cos(0.026), math.sin(0.026), 0.0, 0.0))
    assert not tolerance.admits(turned_more, grasp)


@pytest.mark.parametrize(("position_m", "angle_rad"), [(0.0, 0.1), (0.01, -1.0), (math.inf, 0.1)])
def test_a_grasp_tolerance_must_be_positive_and_finite(position_m, angle_rad):
    with pytest.raises(ValueError, match="GraspTolerance"):
        GraspTolerance(position_m, angle_rad)


def test_a_grasp_point_needs_a_unit_approach_and_a_name_without_a_slash():
    with pytest.raises(ValueError, match="unit 3-vector"):
        GraspPoint("top", Pose(), (0.0, 0.0, 2.0))
    with pytest.raises(ValueError, match="letters, digits"):
        GraspPoint("a/b", Pose())
    with pytest.raises(ValueError, match="distance_m"):
        GraspPoint("top", Pose()).approach_offset(-0.1)
