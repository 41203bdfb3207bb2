"""The MIRROR descriptions of seed 003 and the registry keys they brought.

Checks the geometry the walking controllers rely on against the URDF through the existing
:class:`~limbtree.kinematics.chain.KinematicChain` (forward kinematics and its IK), and the
new ``robot.yaml`` keys (``floating``, ``interfaces``, ``joint_armature_kgm2``) with their
``FILE:LINE`` errors.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from limbtree.kinematics.pose import Pose
from limbtree.robots import RobotDescriptionError, builtin_robot_dir, load_robot, load_robot_file
from limbtree.robots.modules import load_module

SHIPPED = [builtin_robot_dir()]
TILE_SPACING_M = 0.35  # mirror_mar's tile row (wave 2 brief, section 1.6)
TORSO_HEIGHT_M = 1.2  # torso centre above the tile plane, as robot.yaml notes


def rot_x(angle: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = Rotation.from_euler("x", angle).as_matrix()
    return t


def translation(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def tile_si(k: int, spacing: float) -> np.ndarray:
    """World pose of tile k's SI: on the plane z = 0, z pointing down (into the tile)."""
    return translation(spacing * k, 0.0, 0.0) @ rot_x(math.pi)


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    return float(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude())


def smallest_singular_value(chain, q) -> float:
    return float(np.linalg.svd(chain.jacobian(q), compute_uv=False).min())


# ---------------------------------------------------------------------- mirror_arm


def test_mirror_arm_is_a_floating_seven_joint_arm_with_an_si_at_each_end():
    spec = load_robot("mirror_arm", SHIPPED)
    assert spec.floating
    assert spec.base_link == "e1"
    assert spec.joint_armature_kgm2 == pytest.approx(0.1)
    assert spec.mass_kg == pytest.approx(19.0)
    limb = spec.limb("arm")
    assert (limb.base_link, limb.ee_link) == ("e1", "e2")
    assert dict(limb.interfaces) == {"E1": "e1", "E2": "e2"}
    assert dict(spec.interface_links) == {"arm.E1": "e1", "arm.E2": "e2"}
    assert limb.n == 7
    turns = 4.0 * math.pi  # two turns each way: walking end over end winds J2 and J6
    assert all(
        j.lower == pytest.approx(-turns) and j.upper == pytest.approx(turns) and j.max_speed == 1.0
        for j in limb.joints
    )
    assert "guess" in spec.notes


def test_mirror_arm_is_1_6_m_straight_with_z_y_z_y_z_y_z_axes():
    chain = load_robot("mirror_arm", SHIPPED).chain("arm")
    straight = chain.fk_matrix(np.zeros(7))
    # e2 1.6 m along -z of e1, turned half a turn about x: both faces point away from the arm.
    np.testing.assert_allclose(straight, translation(0, 0, -1.6) @ rot_x(math.pi), atol=1e-12)
    joints = chain.joint_positions(np.zeros(7))
    # joint frame origins along the arm: 0.1, 0.2, 0.5, 0.8, 1.1, 1.4 and J7 on E2's face
    np.testing.assert_allclose(-joints[1:-1, 2], [0.1, 0.2, 0.5, 0.8, 1.1, 1.4, 1.6], atol=1e-12)
    # axes: turning joint k about its axis moves E2 as a z or y axis would
    jac = chain.jacobian(np.zeros(7))
    axes_in_e1 = jac[3:, :]  # angular columns, in e1's frame; the arm runs along -z of e1
    for k, axis in enumerate("zyzyzyz"):
        expected = np.array([0.0, 0.0, -1.0]) if axis == "z" else np.array([0.0, -1.0, 0.0])
        np.testing.assert_allclose(axes_in_e1[:, k], expected, atol=1e-12)


def test_mirror_arm_home_latches_both_ends_on_tiles_0_6_m_apart():
    spec = load_robot("mirror_arm", SHIPPED)
    chain = spec.chain("arm")
    q = spec.limb("arm").posture("home")
    e2 = tile_si(0, 0.6) @ chain.fk_matrix(q)  # E1's frame is tile 0's SI frame
    np.testing.assert_allclose(e2, tile_si(1, 0.6), atol=1e-10)
    assert smallest_singular_value(chain, q) > 0.2


def test_mirror_arm_arch_is_the_prototype_start_129_mm_and_17_deg_off_tile_1():
    spec = load_robot("mirror_arm", SHIPPED)
    chain = spec.chain("arm")
    e2 = tile_si(0, 0.6) @ chain.fk_matrix(spec.limb("arm").posture("arch"))
    target = tile_si(1, 0.6)
    assert np.linalg.norm(e2[:3, 3] - target[:3, 3]) == pytest.approx(0.129, abs=1e-3)
    assert math.degrees(angle_between(e2, target)) == pytest.approx(16.9, abs=0.1)
    assert e2[2, 3] > 0.05  # above the tile plane
    assert e2[2, 2] < -0.9  # E2's z points down, into the tile row
    assert smallest_singular_value(chain, spec.limb("arm").posture("arch")) > 0.2


# ---------------------------------------------------------------------- mirror_mar


def test_mirror_mar_is_a_floating_torso_with_two_arms_fixed_on_ports():
    spec = load_robot("mirror_mar", SHIPPED)
    assert spec.floating
    assert spec.base_link == "body"
    assert spec.mass_kg == pytest.approx(68.0)
    assert dict(spec.interfaces) == {"E0": "e0"}
    assert dict(spec.interface_links) == {
        "E0": "e0",
        "arm_1.E1": "arm_1_e1",
        "arm_1.E2": "arm_1_e2",
        "arm_2.E1": "arm_2_e1",
        "arm_2.E2": "arm_2_e2",
    }
    for k in (1, 2):
        limb = spec.limb(f"arm_{k}")
        assert (limb.base_link, limb.ee_link) == ("body", f"arm_{k}_e2")
        assert limb.mass_kg == pytest.approx(19.0)
        assert limb.n == 7


def stance_solution(spec, limb: str, target_in_body: np.ndarray, seeds) -> np.ndarray | None:
    chain = spec.chain(limb)
    for q0 in seeds:
        result = chain.ik(Pose.from_matrix(target_in_body), q0, tol=1e-14, ilimit=200, slimit=1)
        if result.success:
            return result.q
    return None


@pytest.mark.parametrize("k", range(5))
@pytest.mark.parametrize("arm_1_behind", [True, False])
def test_mirror_mar_stands_on_tiles_k_and_k_plus_1_both_ways(k, arm_1_behind):
    spec = load_robot("mirror_mar", SHIPPED)
    torso = translation(TILE_SPACING_M * (k + 0.5), 0.0, TORSO_HEIGHT_M)  # level, above the row
    tiles = {"arm_1": k, "arm_2": k + 1} if arm_1_behind else {"arm_1": k + 1, "arm_2": k}
    homes = [spec.limb(name).posture("home") for name in ("arm_1", "arm_2")]
    seeds = [*homes, *(h * np.array([-1, 1, 1, 1, 1, 1, -1]) for h in homes)]
    seeds += [h * np.array([1, -1, 1, -1, 1, -1, 1]) for h in list(seeds)]
    for name, tile in tiles.items():
        target = np.linalg.inv(torso) @ tile_si(tile, TILE_SPACING_M)
        q = stance_solution(spec, name, target, seeds)
        assert q is not None, f"{name} cannot reach tile {tile}"
        chain = spec.chain(name)
        limb = spec.limb(name)
        np.testing.assert_allclose(
            torso @ chain.fk_matrix(q), tile_si(tile, TILE_SPACING_M), atol=1e-6
        )
        assert np.all(q > limb.lower + 0.1) and np.all(q < limb.upper - 0.1)
        assert smallest_singular_value(chain, q) > 0.2


def test_mirror_mar_home_is_arm_1_on_tile_k_and_arm_2_on_tile_k_plus_1():
    spec = load_robot("mirror_mar", SHIPPED)
    torso = translation(TILE_SPACING_M * 0.5, 0.0, TORSO_HEIGHT_M)
    for name, tile in (("arm_1", 0), ("arm_2", 1)):
        chain = spec.chain(name)
        q = spec.limb(name).posture("home")
        np.testing.assert_allclose(
            torso @ chain.fk_matrix(q), tile_si(tile, TILE_SPACING_M), atol=1e-10
        )
        assert smallest_singular_value(chain, q) > 0.3


def test_mirror_mar_e0_is_on_the_torso_top_and_the_e1_ports_below():
    spec = load_robot("mirror_mar", SHIPPED)
    chain = spec.chain("arm_1")
    # arm_1's E1 is fixed: where the chain starts before joint 1 (first joint position)
    points = chain.joint_positions(np.zeros(7))
    np.testing.assert_allclose(points[1], [0.0, 0.12, -0.25], atol=1e-12)  # J1, 0.1 m below
    assert spec.chain("arm_2").joint_positions(np.zeros(7))[1][1] == pytest.approx(-0.12)


# ---------------------------------------------------------------------- mirror_tile


def test_mirror_tile_has_one_si_pointing_into_the_tile_with_a_2_mm_1_deg_tolerance():
    tile = load_module("mirror_tile")
    assert tuple(tile.grasp_points) == ("si",)
    si = tile.grasp_point("si")
    matrix = si.pose.as_matrix()
    np.testing.assert_allclose(matrix[:3, 3], [0.0, 0.0, tile.size_m[2] / 2])  # the top face
    np.testing.assert_allclose(matrix[:3, 2], [0.0, 0.0, -1.0], atol=1e-12)  # z into the tile
    assert tile.grasp_tolerance.position_m == pytest.approx(0.002)
    assert math.degrees(tile.grasp_tolerance.angle_rad) == pytest.approx(1.0)
    assert tile.approach_distance_m == pytest.approx(0.1)
    assert "4-fold" in tile.notes


# ---------------------------------------------------------------------- the new keys


@pytest.fixture
def arm_copy(tmp_path: Path) -> Path:
    """A copy of mirror_arm's directory to break."""
    target = tmp_path / "mirror_arm"
    shutil.copytree(builtin_robot_dir() / "mirror_arm", target)
    return target / "robot.yaml"


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_the_new_keys_default_to_a_fixed_base_without_interfaces_or_armature():
    spec = load_robot("heavy_limb", SHIPPED)
    assert not spec.floating
    assert dict(spec.interfaces) == {}
    assert dict(spec.interface_links) == {}
    assert spec.joint_armature_kgm2 == 0.0
    assert dict(spec.limb().interfaces) == {}
    assert spec.base_link == "mount"  # the URDF's root link


@pytest.mark.parametrize(
    ("old", "new", "key", "reason", "line"),
    [
        (
            "floating: true",
            "floating: yes please",
            "floating",
            "expected true or false",
            "floating:",
        ),
        (
            "joint_armature_kgm2: 0.1",
            "joint_armature_kgm2: -1",
            "joint_armature_kgm2",
            ">= 0",
            "joint_armature_kgm2:",
        ),
        (
            "{E1: e1, E2: e2}",
            "{E1: e1, E2: e3}",
            "limbs.arm.interfaces.E2",
            "no link named 'e3'",
            "E2: e3",
        ),
        ("{E1: e1, E2: e2}", "{1E: e1}", "limbs.arm.interfaces", "interface name '1E'", "{1E"),
        ("{E1: e1, E2: e2}", "[e1, e2]", "limbs.arm.interfaces", "expected a mapping", "[e1, e2]"),
        (
            "floating: true",
            "floating: true\ninterfaces: {E0: e2}",
            "interfaces.E0",
            "moves against the base link 'e1'",
            "{E0: e2}",
        ),
    ],
)
def test_a_wrong_new_key_names_the_file_line_and_key(arm_copy, old, new, key, reason, line):
    replace(arm_copy, old, new)
    with pytest.raises(RobotDescriptionError) as raised:
        load_robot_file(arm_copy)
    error = raised.value
    assert error.key == key
    assert reason in error.reason
    assert error.line == line_of(arm_copy, line)
    assert f"{arm_copy}:{error.line}: {key}: " in str(error)


def test_a_limb_interface_must_be_on_the_limb_chain(tmp_path):
    target = tmp_path / "mirror_mar"
    shutil.copytree(builtin_robot_dir() / "mirror_mar", target)
    yaml_path = target / "robot.yaml"
    replace(yaml_path, "{E1: arm_1_e1, E2: arm_1_e2}", "{E1: arm_2_e1, E2: arm_1_e2}")
    with pytest.raises(RobotDescriptionError) as raised:
        load_robot_file(yaml_path)
    assert raised.value.key == "limbs.arm_1.interfaces.E1"
    assert "not on the chain from 'body' to 'arm_1_e2'" in raised.value.reason
    assert raised.value.line == line_of(yaml_path, "{E1: arm_2_e1")
