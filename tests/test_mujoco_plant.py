"""Tests of limbtree.robots.mujoco_plant: the ``mujoco`` plant through the Plant interface.

The plant is made as an agent makes it (``make_plant(..., plant="mujoco", physics=JSON)``,
inside the fault decorator) and driven only through ``describe``, ``advance``,
``limb_state``, ``base_state``, ``command``, ``gripper`` and ``fault``. The oracles are
closed forms: the tiles' SI frames written out by hand (a tile lying level at
``(0.6 i, 0, -0.025)`` has its SI at ``(0.6 i, 0, 0)``, turned 180 deg about x), the URDF's
effort limits and ``robot.yaml``'s speed limits, the damping law ``tau = -P qdot``, and a
second plant given the same commands. One test runs ``limbtree agent --plant mujoco`` in
its own process and drives it over the wire.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")

from limbtree.kinematics.pose import Pose  # noqa: E402
from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.assembly import WorldModule  # noqa: E402
from limbtree.robots.factory import DriverOptionError, make_plant  # noqa: E402
from limbtree.robots.faulty import FaultyPlant  # noqa: E402
from limbtree.robots.floating import floating_tree  # noqa: E402
from limbtree.robots.mujoco_plant import MujocoConfig, MujocoPlant  # noqa: E402
from limbtree.skills.dynamics import ImpedanceGains  # noqa: E402
from limbtree.transport import AgentClient  # noqa: E402
from limbtree.transport.driver import CommandMode, DriverError, GripperAction, Health  # noqa: E402
from limbtree.transport.errors import RemoteError  # noqa: E402
from limbtree.transport.plant import Plant  # noqa: E402

TILE_SPACING_M = 0.6  # mirror_arm's tile row (robot.yaml: `home` puts E2 on the next SI)
TILE_HALF_THICKNESS_M = 0.025  # mirror_tile: the SI is on its top face
ARM_START = {"arm.E1": "tile0/si"}
ARM_JOINTS = 7
NULL_DAMPING = ImpedanceGains().null_nms_per_rad  # P of the default gains [N m s/rad]


# ---------------------------------------------------------------------- helpers


def rot_z(angle_rad: float) -> np.ndarray:
    return Rotation.from_euler("z", angle_rad).as_matrix()


def turn_z(angle_rad: float) -> np.ndarray:
    """A 4x4 turn about z [rad]."""
    out = np.eye(4)
    out[:3, :3] = rot_z(angle_rad)
    return out


def tile(
    i: int, *, dx: float = 0.0, yaw_deg: float = 0.0, origin: Sequence[float] = (0, 0, 0)
) -> WorldModule:
    """Tile i lying level on the row, shifted ``dx`` along it and turned ``yaw_deg`` about z."""
    quaternion = Rotation.from_euler("z", yaw_deg, degrees=True).as_quat()
    position = np.add(origin, (TILE_SPACING_M * i + dx, 0.0, -TILE_HALF_THICKNESS_M))
    return WorldModule(f"tile{i}", "mirror_tile", Pose(position, quaternion))


def row(n: int = 3, **tile1: Any) -> list[WorldModule]:
    """Tiles 0..n-1 along +x; ``tile1`` keywords move or turn tile 1 only."""
    return [tile(i, **(tile1 if i == 1 else {})) for i in range(n)]


def si_world(
    i: int, *, dx: float = 0.0, yaw_deg: float = 0.0, origin: Sequence[float] = (0, 0, 0)
) -> np.ndarray:
    """Tile i's SI frame in the world, by hand: on the plane z = 0, its z pointing down."""
    out = np.eye(4)
    out[:3, :3] = rot_z(math.radians(yaw_deg)) @ np.diag([1.0, -1.0, -1.0])
    out[:3, 3] = np.add(origin, (TILE_SPACING_M * i + dx, 0.0, 0.0))
    return out


def as_pose(matrix: np.ndarray) -> list[float]:
    return Pose.from_matrix(matrix).as_array().tolist()


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """The rotation angle from a's frame to b's [rad]."""
    return float(Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude())


def within(pose: np.ndarray, goal: np.ndarray, distance_m: float, angle_rad: float) -> bool:
    return bool(
        np.linalg.norm(pose[:3, 3] - goal[:3, 3]) < distance_m
        and angle_between(pose, goal) < angle_rad
    )


def mujoco_plant(
    robot: str = "mirror_arm",
    *,
    world: Sequence[WorldModule] | None = None,
    latched: Mapping[str, str] | None = None,
    posture: str = "arch",
    base: Pose | None = None,
    **config: Any,
) -> FaultyPlant:
    """A plant as ``limbtree agent --plant mujoco --physics JSON`` makes it."""
    limbs = load_robot(robot).limb_names
    physics = MujocoConfig(
        latched=ARM_START if latched is None else latched,
        postures=dict.fromkeys(limbs, posture),
        **config,
    ).to_json()
    made = make_plant(
        robot, plant="mujoco", physics=physics, world=row() if world is None else world, base=base
    )
    assert isinstance(made, FaultyPlant)
    return made


def end_world(plant: FaultyPlant, end: str, limb: str = "arm") -> np.ndarray:
    """An end's world pose from the plant's state: the base (mirror_arm's E1 link) x FK."""
    base = Pose.from_array(plant.base_state().pose).as_matrix()
    return base @ Pose.from_array(plant.limb_state(limb).ee_poses[end]).as_matrix()


def urdf_efforts(robot: str) -> np.ndarray:
    """The movable joints' effort limits [N m], read from the URDF itself."""
    spec = load_robot(robot)
    root = ElementTree.parse(spec.urdf_path).getroot()
    by_name = {
        j.get("name"): float(j.find("limit").get("effort"))  # type: ignore[union-attr]
        for j in root.findall("joint")
        if j.get("type") != "fixed"
    }
    return np.array([by_name[name] for limb in spec.limbs for name in limb.joint_names])


def sweep(plant: Plant, until_s: float, dt_s: float = 0.001) -> Iterator[float]:
    """Advance in steps of ``dt_s`` from the plant's time to ``until_s``; yield each time."""
    k, start = 1, plant.time
    while start + k * dt_s <= until_s + 1e-9:
        plant.advance(start + k * dt_s)
        yield plant.time
        k += 1


def impedance(plant: FaultyPlant, frame: str, goal: np.ndarray | None, **gains: float) -> None:
    payload: dict[str, Any] = {"frame": frame, "goal": None if goal is None else as_pose(goal)}
    if gains:
        payload["gains"] = gains
    plant.command("arm", CommandMode.IMPEDANCE, payload)


# ---------------------------------------------------------------------- describe, placing


def test_describe_gives_a_floating_mujoco_plant_with_si_ends_and_the_dynamics_modes():
    plant = mujoco_plant()
    described = plant.describe()
    assert (described.robot, described.kind, described.floating_base) == (
        "mirror_arm",
        "mujoco",
        True,
    )
    assert described.limb_names == ("arm",)
    limb = described.limb("arm").description
    assert sorted(limb.end_effectors) == ["E1", "E2"]
    # The default end-effector (the first) is the end at the limb's ee_link: e2 (robot.yaml).
    assert limb.end_effectors[0] == "E2"
    assert not limb.has_gripper
    assert set(limb.command_modes) == {
        CommandMode.IMPEDANCE,
        CommandMode.LATCH,
        CommandMode.JOINT_POSITION,
        CommandMode.JOINT_TORQUE,
        CommandMode.HOLD,
    }
    assert [j.max_speed for j in limb.joints] == [1.0] * ARM_JOINTS
    two_arms = make_plant("mirror_mar", plant="mujoco").describe()
    assert two_arms.limb_names == ("arm_1", "arm_2")
    assert two_arms.floating_base and two_arms.kind == "mujoco"


#: A given base far from the tiles, E1 facing down (as on a tile), turned 1.2 rad about z.
FAR_BASE = Pose((40.0, -25.0, 7.0), Rotation.from_euler("xz", [math.pi, 1.2]).as_quat())


@pytest.mark.parametrize(
    ("base", "origin"),
    [(None, (0.0, 0.0, 0.0)), (FAR_BASE, (0.0, 0.0, 0.0)), (None, (30.0, -20.0, 5.0))],
    ids=["at-origin", "far-base", "far-tiles"],
)
def test_the_first_starting_latch_puts_its_interface_on_the_grasp_point(base, origin):
    # The tiles stay where they are in the world, given in the base frame as an agent takes
    # them; the robot is placed on tile 0, wherever the base was said to be.
    given = np.eye(4) if base is None else base.as_matrix()
    in_base = np.linalg.inv(given)
    world = [
        WorldModule(t.name, t.module, Pose.from_matrix(in_base @ t.pose_in_base.as_matrix()))
        for t in (tile(i, origin=origin) for i in range(3))
    ]
    plant = mujoco_plant(world=world, base=base)
    si = si_world(0, origin=origin)
    turns = [si @ turn_z(k * math.pi / 2) for k in range(4)]
    for pose in (end_world(plant, "E1"), Pose.from_array(plant.describe().base_pose).as_matrix()):
        assert np.abs(pose[:3, 3] - si[:3, 3]).max() < 1e-6
        # On the SI, up to its 4-fold symmetry: the quarter turn nearest the given heading
        # (E1 is mirror_arm's base link), which is unique for the far base.
        off = [angle_between(pose, turn) for turn in turns]
        assert min(off) < 1e-6
        if base is not None:
            assert int(np.argmin(off)) == int(np.argmin([angle_between(given, t) for t in turns]))
    assert plant.limb_state("arm").detail["latched"] == {"arm.E1": "tile0/si"}
    assert plant.limb_state("arm").detail["ends_latched"] == ["E1"]


def test_a_torso_robot_is_placed_by_its_first_latch_and_takes_a_second_one_where_it_lies():
    spacing = 0.35  # mirror_mar's `home`: arm_1's E2 on tile k, arm_2's on tile k + 1
    world = [
        WorldModule(f"tile{i}", "mirror_tile", Pose((spacing * i, 0.0, -TILE_HALF_THICKNESS_M)))
        for i in range(2)
    ]
    latched = {"arm_1.E2": "tile0/si", "arm_2.E2": "tile1/si"}
    plant = mujoco_plant("mirror_mar", world=world, latched=latched, posture="home")
    body = Pose.from_array(plant.base_state().pose).as_matrix()
    for k, limb in enumerate(("arm_1", "arm_2")):
        end = body @ Pose.from_array(plant.limb_state(limb).ee_poses["E2"]).as_matrix()
        si = si_world(0)
        si[0, 3] = spacing * k
        assert np.abs(end[:3, 3] - si[:3, 3]).max() < (1e-6 if k == 0 else 1e-4)
        assert angle_between(end, si) < (1e-6 if k == 0 else 1e-4)
    assert plant.limb_state("arm_2").detail["latched"] == latched


def test_a_second_starting_latch_off_its_grasp_point_is_refused_naming_both():
    config = MujocoConfig(
        latched={"arm.E1": "tile0/si", "arm.E2": "tile2/si"}, postures={"arm": "home"}
    )
    with pytest.raises(ValueError, match=r"arm\.E2 -> tile2/si.*600\.0 mm"):
        MujocoPlant("mirror_arm", world=row(), config=config)
    with pytest.raises(DriverOptionError, match=r"arm\.E2 -> tile2/si"):
        make_plant("mirror_arm", plant="mujoco", physics=config.to_json(), world=row())
    # Where it lies (`home` puts E2 on tile 1), a second starting latch is taken.
    both = {"arm.E1": "tile0/si", "arm.E2": "tile1/si"}
    plant = mujoco_plant(latched=both, posture="home")
    assert plant.limb_state("arm").detail["ends_latched"] == ["E1", "E2"]


@pytest.mark.parametrize(
    ("latched", "named", "listed"),
    [
        ({"arm.E9": "tile0/si"}, "'arm.E9'", "arm.E1, arm.E2"),
        ({"arm.E1": "tile7/si"}, "'tile7/si'", "tile0/si, tile1/si, tile2/si"),
        ({"arm.E1": "tile0/si", "arm.E2": "tile9/si"}, "'tile9/si'", "tile0/si"),
    ],
)
def test_a_starting_latch_to_an_unknown_interface_or_grasp_point_is_named(latched, named, listed):
    config = MujocoConfig(latched=latched, postures={"arm": "home"})
    with pytest.raises(ValueError) as raised:
        MujocoPlant("mirror_arm", world=row(), config=config)
    assert named in str(raised.value) and listed in str(raised.value)


def test_a_state_s_poses_belong_to_its_joint_values():
    # The ends' poses in the state are those of its q, by the URDF's own kinematics (the
    # floating tree, not MuJoCo), even while the arm runs at its speed limit.
    plant = mujoco_plant(posture="home")
    tree = floating_tree(load_robot("mirror_arm"))
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [20.0, -20.0] * 3 + [20.0]})
    for t in (0.1, 0.2, 0.3):
        plant.advance(t)
        state = plant.limb_state("arm")
        assert np.abs(state.dq).max() > 0.5
        e2 = Pose.from_array(state.ee_poses["E2"]).as_matrix()
        expected = tree.frame_pose("arm.E2", np.array(state.q))  # in E1's frame, the base
        assert np.abs(e2[:3, 3] - expected[:3, 3]).max() < 1e-9
        assert angle_between(e2, expected) < 1e-9


# ---------------------------------------------------------------------- latch, unlatch


@pytest.mark.parametrize(
    ("tile1", "engages", "refusal"),
    [
        ({"dx": 0.004}, True, None),
        ({"yaw_deg": 2.5}, True, None),
        ({"dx": 0.006}, False, "6.0 mm / 0.00 deg from tile1/si"),
        ({"yaw_deg": 3.5}, False, "0.0 mm / 3.50 deg from tile1/si"),
    ],
    ids=["4mm", "2.5deg", "6mm", "3.5deg"],
)
def test_latch_engages_within_5_mm_and_3_deg_and_names_the_nearest_grasp_point_beyond(
    tile1, engages, refusal
):
    # `home` puts E2 exactly where tile 1's SI would be; the tile is moved or turned off it.
    plant = mujoco_plant(world=row(**tile1), posture="home")
    latch = {"end": "E2", "engage": True}
    if not engages:
        with pytest.raises(DriverError) as raised:
            plant.command("arm", CommandMode.LATCH, latch)
        assert raised.value.code == "bad_value"
        assert refusal in str(raised.value)
        plant.advance(0.01)
        assert plant.limb_state("arm").detail["latched"] == {"arm.E1": "tile0/si"}
        return
    plant.command("arm", CommandMode.LATCH, latch)
    plant.advance(0.3)
    detail = plant.limb_state("arm").detail
    assert detail["latched"] == {"arm.E1": "tile0/si", "arm.E2": "tile1/si"}
    assert detail["ends_latched"] == ["E1", "E2"]
    assert set(detail["wrench"]) == {"arm.E1", "arm.E2"}
    # The weld has pulled the end onto the SI.
    e2, si = end_world(plant, "E2"), si_world(1, **tile1)
    assert np.linalg.norm(e2[:3, 3] - si[:3, 3]) < 5e-4
    assert angle_between(e2, si) < math.radians(0.1)


@pytest.mark.parametrize("yaw_deg", [88.0, 92.0, -88.0])
def test_an_end_a_quarter_turn_off_latches_to_the_nearest_turn_untwisted(yaw_deg):
    # Tile 1 turned about its normal: E2 lies a quarter turn (+-2 deg) off its SI frame. The
    # SI is 4-fold symmetric, so E2 latches to the nearest quarter turn, not twisted back.
    plant = mujoco_plant(world=row(yaw_deg=yaw_deg), posture="home")
    before = end_world(plant, "E2")
    plant.command("arm", CommandMode.LATCH, {"end": "E2", "engage": True})
    plant.advance(0.5)
    after = end_world(plant, "E2")
    assert angle_between(before, after) < math.radians(3.0)
    si = si_world(1, yaw_deg=yaw_deg)
    off_turns = min(angle_between(si @ turn_z(k * math.pi / 2), after) for k in range(4))
    assert off_turns < math.radians(0.2)  # on a quarter turn of the SI
    # Only E2 latched now: the controller places the base from E2's latched pose. Asked to
    # hold E1 where it is, it must see E1 there (a base estimated from the untwisted SI
    # would put E1 about 0.85 m away) and keep it there.
    plant.command("arm", CommandMode.LATCH, {"end": "E1", "engage": False})
    e1 = end_world(plant, "E1")
    impedance(plant, "E1", e1)
    plant.advance(0.51)
    position_error, angle_error = plant.limb_state("arm").detail["errors"]["arm.E1"]
    assert position_error < 1e-3 and angle_error < math.radians(0.5)
    plant.advance(1.0)
    assert np.linalg.norm(end_world(plant, "E1")[:3, 3] - e1[:3, 3]) < 2e-3


def test_a_latch_far_from_every_grasp_point_is_refused_naming_the_nearest():
    plant = mujoco_plant()  # `arch`: E2 129 mm from tile 1's SI (robot.yaml)
    with pytest.raises(DriverError) as raised:
        plant.command("arm", CommandMode.LATCH, {"end": "E2", "engage": True})
    assert raised.value.code == "bad_value"
    distance = float(str(raised.value).split("arm.E2 is ")[1].split(" mm")[0])
    e2 = end_world(plant, "E2")
    assert distance == pytest.approx(np.linalg.norm(e2[:3, 3] - si_world(1)[:3, 3]) * 1e3, abs=0.1)
    assert "from tile1/si" in str(raised.value)
    with pytest.raises(DriverError, match=r"no interface 'E5'.*E1, E2"):
        plant.command("arm", CommandMode.LATCH, {"end": "E5", "engage": True})


def test_unlatch_releases_and_with_nothing_latched_the_arm_is_only_damped():
    plant = mujoco_plant(posture="home")
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [3.0, 0, 0, -2.0, 0, 0.2, 0]})
    plant.advance(0.2)
    plant.command("arm", CommandMode.LATCH, {"end": "E1", "engage": False})
    impedance(plant, "E2", si_world(2))  # a goal the controller would chase if it ran
    plant.advance(0.201)
    detail = plant.limb_state("arm").detail
    assert detail["latched"] == {} and detail["ends_latched"] == []
    assert detail["mode"] == "impedance"
    previous = np.array(plant.limb_state("arm").dq)
    assert np.abs(previous).max() > 0.05  # it moves: the damping has something to do
    for _ in sweep(plant, 0.3):
        state = plant.limb_state("arm")
        # tau = -P qdot with qdot at the start of the substep: the damping alone.
        np.testing.assert_allclose(state.effort, -NULL_DAMPING * previous, rtol=1e-12, atol=0)
        previous = np.array(state.dq)
    # Nothing holds E1 on tile 0 any more: the floating arm drifts off it.
    assert np.linalg.norm(end_world(plant, "E1")[:3, 3] - si_world(0)[:3, 3]) > 1e-3
    # Releasing what is not latched does nothing.
    plant.command("arm", CommandMode.LATCH, {"end": "E1", "engage": False})
    plant.advance(0.31)
    assert plant.limb_state("arm").detail["latched"] == {}


# ---------------------------------------------------------------------- impedance


def test_an_impedance_goal_drives_the_free_end_onto_the_next_tile_passively():
    plant = mujoco_plant()  # `arch`, E1 latched on tile 0: E2 129 mm / 16.9 deg off tile 1
    goal = si_world(1)
    impedance(plant, "E2", goal)
    reached = None
    for t in sweep(plant, 15.0, dt_s=0.25):
        detail = plant.limb_state("arm").detail
        assert detail["tasks"] == ["arm.E2"]
        assert detail["lyapunov_j"] is not None
        assert detail["max_rise_rel"] < 0.01  # seed 003 eq. 13: W does not rise
        e2 = end_world(plant, "E2")
        if within(e2, goal, 2e-3, math.radians(1.0)):
            reached = t
            break
        impedance(plant, "E2", goal)  # sent again, as a runner may: nothing restarts
    assert reached is not None, "E2 did not reach tile 1's SI within 2 mm / 1 deg in 15 s"
    position_error, angle_error = plant.limb_state("arm").detail["errors"]["arm.E2"]
    assert position_error == pytest.approx(np.linalg.norm(e2[:3, 3] - goal[:3, 3]), abs=1e-4)
    assert angle_error == pytest.approx(angle_between(e2, goal), abs=1e-4)


def test_an_identical_goal_sent_again_keeps_the_passivity_check_and_a_new_goal_restarts_it():
    plant = mujoco_plant()
    goal = si_world(1)
    impedance(plant, "E2", goal)
    plant.advance(0.2)
    # An outside push along joint 6's motion raises W: the check must see that rise.
    inner = plant.inner
    assert isinstance(inner, MujocoPlant)
    dof = int(inner.model.limb_dof["arm"][5])
    push = 20.0 * math.copysign(1.0, plant.limb_state("arm").dq[5])
    inner.data.qfrc_applied[dof] = push
    plant.advance(0.22)
    inner.data.qfrc_applied[dof] = 0.0
    pushed = plant.limb_state("arm").detail
    assert pushed["max_rise_j"] > 0.0 and 0.2 < pushed["max_rise_at_s"] <= 0.22
    impedance(plant, "E2", goal)  # identical
    plant.advance(0.4)
    kept = plant.limb_state("arm").detail
    assert kept["max_rise_j"] == pushed["max_rise_j"]
    assert kept["max_rise_rel"] == pushed["max_rise_rel"]
    moved = goal.copy()
    moved[0, 3] += 0.001
    impedance(plant, "E2", moved)  # a new goal: W jumps, and the check starts again
    plant.advance(0.6)
    assert plant.limb_state("arm").detail["max_rise_j"] == 0.0


def test_bad_impedance_commands_are_refused_with_bad_value():
    plant = mujoco_plant()
    with pytest.raises(DriverError, match="no interface 'E3'") as raised:
        impedance(plant, "E3", si_world(1))
    assert raised.value.code == "bad_value"
    # The wire lets gains >= 0 through; a zero stiffness is the plant's to refuse.
    with pytest.raises(DriverError, match="k_n_per_m") as raised:
        impedance(plant, "E2", si_world(1), k_n_per_m=0.0)
    assert raised.value.code == "bad_value"
    plant.advance(0.01)  # and the plant goes on
    assert plant.limb_state("arm").detail["tasks"] == []


# ---------------------------------------------------------------------- limits


@pytest.mark.parametrize("drive", ["torque_100", "absurd_gains", "far_goal"])
def test_no_joint_exceeds_its_speed_limit_nor_its_effort_limit(drive):
    plant = mujoco_plant()
    if drive == "torque_100":
        plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [100.0, -100.0] * 3 + [100.0]})
    elif drive == "absurd_gains":
        gains = {"k_n_per_m": 1e7, "k_nm_per_rad": 1e7, "d_ns_per_m": 1e5}
        impedance(plant, "E2", si_world(2), **gains, d_nms_per_rad=0.0, null_nms_per_rad=0.0)
    else:  # an outside client's: the motors at their efforts let joint 3 run 8.6% too fast
        goal = Pose((0.6, 0.5, 0.5), (0.0, 0.0, 0.0, 1.0)).as_matrix()
        impedance(plant, "E2", goal, k_n_per_m=1e5, k_nm_per_rad=1e5)
    speed = np.array([j.max_speed for j in plant.describe().limb("arm").description.joints])
    effort = urdf_efforts("mirror_arm")
    fastest = np.zeros(ARM_JOINTS)
    strongest = np.zeros(ARM_JOINTS)
    q = np.array(plant.limb_state("arm").q)
    for _ in sweep(plant, 0.6):
        state = plant.limb_state("arm")
        moved = np.abs(np.array(state.q) - q) / 0.001  # (and what the joints did)
        q = np.array(state.q)
        fastest = np.maximum(fastest, np.maximum(np.abs(state.dq), moved))
        strongest = np.maximum(strongest, np.abs(state.effort))
    assert (fastest <= speed * (1 + 1e-6)).all(), f"joint speeds {fastest} beyond {speed} rad/s"
    assert (strongest <= effort).all()
    assert strongest.max() == pytest.approx(effort.max())  # it was pushing as hard as it may
    assert fastest.max() > 0.9 * speed.max()  # and running as fast


# ---------------------------------------------------------------------- joint modes, hold


def test_joint_position_servos_to_the_targets():
    plant = mujoco_plant(posture="home")
    q0 = np.array(plant.limb_state("arm").q)
    target = q0 + np.array([0.1, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1])
    plant.command("arm", CommandMode.JOINT_POSITION, {"q": target.tolist()})
    plant.advance(3.0)
    state = plant.limb_state("arm")
    assert state.detail["mode"] == "joint_position"
    np.testing.assert_allclose(state.q, target, atol=1e-3)
    with pytest.raises(DriverError, match="7 joints, got 3 values"):
        plant.command("arm", CommandMode.JOINT_POSITION, {"q": [0.0, 0.0, 0.0]})


def test_joint_torque_applies_the_torques_as_commanded():
    plant = mujoco_plant(posture="home")
    tau = [2.0, 0.0, -1.0, 0.5, 0.0, 0.0, -0.25]
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": tau})
    plant.advance(0.05)
    state = plant.limb_state("arm")
    assert state.detail["mode"] == "joint_torque"
    assert state.effort == tuple(tau)
    assert state.dq[0] > 0.0 and state.dq[2] < 0.0  # it turns the way it is pushed
    with pytest.raises(DriverError, match="7 joints, got 2 values"):
        plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [1.0, 2.0]})


def test_hold_under_impedance_freezes_the_tasks_where_the_ends_are():
    plant = mujoco_plant()
    impedance(plant, "E2", si_world(1))
    plant.advance(0.99)
    before = end_world(plant, "E2")
    plant.advance(1.0)
    at_hold = end_world(plant, "E2")
    speed = np.linalg.norm(at_hold[:3, 3] - before[:3, 3]) / 0.01  # [m/s]
    assert speed > 0.02  # on its way to tile 1
    plant.command("arm", CommandMode.HOLD, {})
    plant.advance(1.001)
    detail = plant.limb_state("arm").detail
    assert detail["mode"] == "impedance" and detail["tasks"] == ["arm.E2"]
    # The controller sees E2 through E1's latch (taken as rigid; the weld gives a little).
    position_error, angle_error = detail["errors"]["arm.E2"]
    assert position_error < 5e-4 and angle_error < math.radians(0.05)
    plant.advance(2.0)
    # Without the hold it would have gone on some 40 mm; held, it is pulled back.
    assert np.linalg.norm(end_world(plant, "E2")[:3, 3] - at_hold[:3, 3]) < 0.1 * speed * 1.0


def test_hold_in_a_joint_mode_servos_at_the_joints_where_they_are():
    plant = mujoco_plant(posture="home")
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [3.0, 0, 0, -2.0, 0, 0, 1.0]})
    plant.advance(0.1)
    at_hold = np.array(plant.limb_state("arm").q)
    plant.command("arm", CommandMode.HOLD, {})
    plant.advance(0.101)
    assert plant.limb_state("arm").detail["mode"] == "joint_position"
    worst = 0.0
    for _ in sweep(plant, 3.0, dt_s=0.01):
        worst = max(worst, float(np.abs(np.subtract(plant.limb_state("arm").q, at_hold)).max()))
    assert worst < 0.02  # it stops near where the hold came (it was moving at 0.15 rad/s)
    state = plant.limb_state("arm")
    np.testing.assert_allclose(state.q, at_hold, atol=1e-3)
    assert np.abs(state.dq).max() < 2e-3


def test_ee_pose_ee_twist_and_the_gripper_are_refused_naming_what_to_use():
    plant = mujoco_plant()
    for mode, payload in (
        (CommandMode.EE_POSE, {"pose": [0, 0, 0, 0, 0, 0, 1]}),
        (CommandMode.EE_TWIST, {"twist": [0.0] * 6}),
    ):
        with pytest.raises(DriverError) as raised:
            plant.command("arm", mode, payload)
        assert raised.value.code == "unsupported_mode"
        assert "impedance, latch, joint_position, joint_torque, hold" in str(raised.value)
    with pytest.raises(DriverError, match="'latch' command") as raised:
        plant.gripper("arm", GripperAction.CLOSE)
    assert raised.value.code == "unsupported_mode"
    with pytest.raises(DriverError, match=r"no limb 'leg'.*arm"):
        plant.command("leg", CommandMode.HOLD, {})


# ---------------------------------------------------------------------- joint limits

#: How far past a limit a joint may get, and how near it a joint pushed onto it ends [rad].
LIMIT_TOL_RAD = 0.01
#: heavy_limb's elbow (q4): upper limit 2.3562 rad, a 200 N m motor (its URDF); 0.156 rad from
#: that limit in the posture ``safe``.
ELBOW = 3


def heavy_limb(posture: str = "safe") -> FaultyPlant:
    """heavy_limb (fixed base, no interfaces) as ``limbtree agent --plant mujoco`` makes it."""
    physics = MujocoConfig(postures={"arm": posture}).to_json()
    made = make_plant("heavy_limb", plant="mujoco", physics=physics)
    assert isinstance(made, FaultyPlant)
    return made


@pytest.mark.parametrize("beyond", [3.0, 1e308])
def test_a_joint_position_target_past_a_limit_is_clipped_onto_it_and_flagged(beyond):
    plant = heavy_limb()
    upper = plant.describe().limb("arm").description.joints[ELBOW].upper
    target = list(load_robot("heavy_limb").limb("arm").posture("safe"))
    target[ELBOW] = beyond
    plant.command("arm", CommandMode.JOINT_POSITION, {"q": target})
    furthest = -math.inf
    for _ in sweep(plant, 2.0, dt_s=0.01):
        state = plant.limb_state("arm")
        furthest = max(furthest, state.q[ELBOW])
        assert state.health & Health.JOINT_LIMIT  # from the clipped command on
    assert furthest < upper + LIMIT_TOL_RAD, f"the elbow got {furthest - upper:.4f} rad past"
    assert abs(state.q[ELBOW] - upper) < LIMIT_TOL_RAD
    # A target inside the limits clears the flag once the joint has left its limit.
    target[ELBOW] = 2.2
    plant.command("arm", CommandMode.JOINT_POSITION, {"q": target})
    plant.advance(3.5)
    state = plant.limb_state("arm")
    assert abs(state.q[ELBOW] - 2.2) < 1e-3
    assert not state.health & Health.JOINT_LIMIT


def test_mirror_mar_joint_targets_past_its_limits_are_clipped_onto_them_and_flagged():
    # Its arms turn +-4 pi rad at 1 rad/s: arm_1 starts 0.3 rad from two of its limits.
    spec = load_robot("mirror_mar")
    arm = spec.limb("arm_1")
    near = np.array(arm.posture("safe"))
    near[[0, 3]] = arm.upper[[0, 3]] - 0.3
    limbs = tuple(
        dataclasses.replace(limb, postures={**limb.postures, "near": tuple(near)})
        if limb.name == "arm_1"
        else limb
        for limb in spec.limbs
    )
    plant = MujocoPlant(
        dataclasses.replace(spec, limbs=limbs), config=MujocoConfig(postures={"arm_1": "near"})
    )
    target = near.copy()
    target[[0, 3]] = arm.upper[[0, 3]] + 1.0
    plant.command("arm_1", CommandMode.JOINT_POSITION, {"q": target.tolist()})
    furthest = -math.inf
    for _ in sweep(plant, 1.5, dt_s=0.01):
        past = np.subtract(plant.limb_state("arm_1").q, arm.upper)[[0, 3]]
        furthest = max(furthest, float(past.max()))
    state = plant.limb_state("arm_1")
    assert furthest < LIMIT_TOL_RAD, f"a joint got {furthest:.4f} rad past its upper limit"
    np.testing.assert_allclose(np.array(state.q)[[0, 3]], arm.upper[[0, 3]], atol=LIMIT_TOL_RAD)
    assert state.health & Health.JOINT_LIMIT


def test_a_huge_joint_torque_pushes_no_joint_past_its_limit_and_is_flagged():
    plant = heavy_limb()
    upper = plant.describe().limb("arm").description.joints[ELBOW].upper
    effort = urdf_efforts("heavy_limb")[ELBOW]  # 200 N m
    tau = [0.0] * ARM_JOINTS
    tau[ELBOW] = 1e6
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": tau})
    furthest, strongest = -math.inf, 0.0
    for _ in sweep(plant, 3.0, dt_s=0.01):
        state = plant.limb_state("arm")
        furthest = max(furthest, state.q[ELBOW])
        strongest = max(strongest, abs(state.effort[ELBOW]))
    assert 0.0 < strongest <= effort  # 1e6 N m clipped to the motor's effort limit
    assert furthest < upper + LIMIT_TOL_RAD, f"the elbow got {furthest - upper:.4f} rad past"
    assert abs(state.q[ELBOW] - upper) < LIMIT_TOL_RAD
    assert state.health & Health.JOINT_LIMIT


def test_a_fast_light_joint_driven_into_its_limit_at_full_effort_stops_close_to_it():
    # HubRobo's knee (leg_0, q3 >= -160 deg): 4 N m on a light leg at 5 rad/s. MuJoCo's
    # default soft limit let it in 0.08 rad; the plant's stiff one stops it within 0.02 rad.
    plant = make_plant("hubrobo", plant="mujoco")
    lower = plant.describe().limb("leg_0").description.joints[2].lower
    plant.command("leg_0", CommandMode.JOINT_TORQUE, {"tau": [0.0, 0.0, -1e6]})
    furthest = math.inf
    for _ in sweep(plant, 1.0):
        furthest = min(furthest, plant.limb_state("leg_0").q[2])
    assert furthest > lower - 2 * LIMIT_TOL_RAD, f"the knee got {lower - furthest:.4f} rad past"
    assert plant.limb_state("leg_0").health & Health.JOINT_LIMIT


def test_a_limb_without_interfaces_reports_and_takes_its_ee_link_by_the_name_describe_gives():
    plant = heavy_limb(posture="home")
    assert plant.describe().limb("arm").description.end_effectors == ("ee_link",)
    target = [0.3, 0.5, -0.2, 1.2, 0.4, 0.8, -0.5]
    plant.command("arm", CommandMode.JOINT_POSITION, {"q": target})
    plant.advance(2.5)
    state = plant.limb_state("arm")
    assert set(state.ee_poses) == {"ee_link"}
    # In the limb's base frame (its mount), as forward kinematics of its joints gives it.
    fk = load_robot("heavy_limb").chain("arm").fk(np.array(state.q)).as_matrix()
    pose = Pose.from_array(state.ee_poses["ee_link"]).as_matrix()
    assert within(pose, fk, 1e-6, 1e-6)
    # Commands take that name, and only that name.
    plant.command("arm", CommandMode.IMPEDANCE, {"frame": "ee_link", "goal": as_pose(fk)})
    plant.advance(2.6)
    assert plant.limb_state("arm").detail["tasks"] == ["arm.ee"]
    plant.command("arm", CommandMode.HOLD, {})  # the task frozen where the end is
    plant.advance(2.7)
    with pytest.raises(DriverError, match="no interface 'ee'; its interfaces are ee_link"):
        plant.command("arm", CommandMode.IMPEDANCE, {"frame": "ee", "goal": as_pose(fk)})
    with pytest.raises(DriverError, match="'ee_link' of limb 'arm' is no standard interface"):
        plant.command("arm", CommandMode.LATCH, {"end": "ee_link", "engage": True})


# ---------------------------------------------------------------------- faults


def test_power_off_leaves_the_arm_drifting_without_torque():
    plant = mujoco_plant()
    impedance(plant, "E2", si_world(1))
    plant.advance(0.3)
    plant.fault("arm", "power_off", {})
    at_cut = plant.limb_state("arm")
    assert at_cut.detail["faults"] == ["power_off"]
    for _ in sweep(plant, 0.6, dt_s=0.01):
        dark = plant.limb_state("arm")
        # Its sensors are dark: the last reading stays, flagged, with no torque.
        assert dark.health & Health.POWER_OFF and dark.effort == (0.0,) * ARM_JOINTS
        assert dark.q == at_cut.q
    plant.fault("arm", "power_on", {})
    plant.advance(0.61)
    back = plant.limb_state("arm")
    assert not back.health & Health.POWER_OFF and np.abs(back.effort).max() > 0.0
    # Meanwhile it drifted: nothing braked it.
    assert np.abs(np.subtract(back.q, at_cut.q)).max() > 0.02


def test_blocked_joints_stay_put_under_full_torque_and_move_again_when_freed():
    plant = mujoco_plant(posture="home")
    plant.fault("arm", "blockage", {"joints": [1, 3]})
    at_block = np.array(plant.limb_state("arm").q)
    assert plant.limb_state("arm").health & Health.BLOCKED
    # Every motor at its effort limit (100 N m), the blocked ones too.
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [100.0, -100.0] * 3 + [100.0]})
    worst = np.zeros(ARM_JOINTS)
    for _ in sweep(plant, 0.5, dt_s=0.005):
        worst = np.maximum(worst, np.abs(np.array(plant.limb_state("arm").q) - at_block))
    assert worst[[1, 3]].max() < 1e-3, f"blocked joints moved {worst[[1, 3]]} rad"
    assert worst[[0, 2, 4, 5, 6]].min() > 0.1  # the others ran on
    # Blocking one more joint keeps the first ones where they were blocked.
    plant.fault("arm", "blockage", {"joints": [1, 3, 5]})
    at_second = np.array(plant.limb_state("arm").q)
    plant.advance(0.7)
    q = np.array(plant.limb_state("arm").q)
    assert np.abs(q - at_block)[[1, 3]].max() < 1e-3
    assert abs(q[5] - at_second[5]) < 1e-3
    plant.fault("arm", "clear", {})
    plant.advance(1.0)
    assert np.abs(np.array(plant.limb_state("arm").q) - at_block)[[1, 3]].min() > 0.05


def test_slowdown_scales_the_torques_and_the_speed_limit():
    reference, slowed = mujoco_plant(), mujoco_plant()
    slowed.fault("arm", "slowdown", {"factor": 0.5})
    for plant in (reference, slowed):
        impedance(plant, "E2", si_world(1))
        plant.advance(0.001)
    assert slowed.limb_state("arm").health & Health.SLOWED
    np.testing.assert_array_equal(
        slowed.limb_state("arm").effort, 0.5 * np.array(reference.limb_state("arm").effort)
    )
    slowed.command("arm", CommandMode.JOINT_TORQUE, {"tau": [100.0] * ARM_JOINTS})
    fastest = 0.0
    for _ in sweep(slowed, 0.4):
        fastest = max(fastest, float(np.abs(slowed.limb_state("arm").dq).max()))
    assert 0.45 < fastest <= 0.5 * 1.02


def test_a_disassembled_limb_is_unavailable_and_its_state_frozen():
    plant = mujoco_plant()
    impedance(plant, "E2", si_world(1))
    plant.advance(0.2)
    plant.fault("arm", "disassembly", {})
    frozen = plant.limb_state("arm")
    assert not plant.available("arm")
    plant.advance(0.5)
    state = plant.limb_state("arm")
    assert (state.t, state.q, state.dq) == (frozen.t, frozen.q, frozen.dq)
    assert state.health & Health.DISASSEMBLED
    plant.fault("arm", "reassemble", {})
    plant.advance(0.6)
    assert plant.available("arm") and plant.limb_state("arm").t == 0.6


# ---------------------------------------------------------------------- determinism


def test_two_plants_given_the_same_commands_are_identical_to_the_bit():
    plants = [mujoco_plant(), mujoco_plant()]
    for plant in plants:
        impedance(plant, "E2", si_world(1), k_n_per_m=150.0)
        plant.advance(0.25)
        plant.fault("arm", "slowdown", {"factor": 0.7, "joints": [2]})
        plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [1.0, 0, 0, 0, 0, 0, -1.0]})
        plant.advance(0.4)
        plant.command("arm", CommandMode.HOLD, {})
        plant.advance(0.5)
    first, second = plants
    assert first.limb_state("arm") == second.limb_state("arm")
    assert first.base_state() == second.base_state()
    assert first.limb_state("arm").q != mujoco_plant().limb_state("arm").q  # it did move


# ---------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"timestep": 0.001}', "unknown keys timestep; valid keys are gains, gravity, latched"),
        ("{latched: 1}", "--physics is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"latched": ["arm.E1"]}', "latched must be a JSON object"),
        ('{"gains": {"k_n_per_m": -1}}', "k_n_per_m"),
        ('{"gains": {"stiffness": 1}}', "stiffness"),
        ('{"gains": {"d_ns_per_m": "high"}}', "d_ns_per_m"),
        ('{"timestep_s": 0}', "timestep_s must be in (0, 0.01]"),
        ('{"timestep_s": "fast"}', "timestep_s"),
        ('{"gravity": [0, 0]}', "gravity must be 3 finite numbers"),
        ('{"gravity": 9.81}', "gravity"),
    ],
)
def test_physics_json_errors_name_the_problem(text, message):
    with pytest.raises(ValueError) as raised:
        MujocoConfig.from_json(text)
    assert message in str(raised.value)
    with pytest.raises(DriverOptionError, match="mujoco plant of robot 'mirror_arm'"):
        make_plant("mirror_arm", plant="mujoco", physics=text)


def test_physics_json_round_trips():
    config = MujocoConfig(
        timestep_s=0.002,
        gravity=(0.0, 0.0, -1e-5),
        latched={"arm.E1": "tile0/si"},
        postures={"arm": "arch"},
        gains=ImpedanceGains(k_n_per_m=300.0, null_nms_per_rad=0.0),
    )
    assert MujocoConfig.from_json(config.to_json()) == config


def test_the_factory_refuses_one_limb_of_a_mujoco_plant_and_physics_for_a_kinematic_one(capsys):
    with pytest.raises(DriverOptionError, match=r"moves the whole robot.*drop --limb"):
        make_plant("mirror_arm", ["arm"], plant="mujoco")
    with pytest.raises(DriverOptionError, match="give --plant mujoco"):
        make_plant("mirror_arm", physics="{}")
    from limbtree.trees.cli import main

    argv = ["agent", "--robot", "mirror_arm", "--physics", "{}", "--bind", "tcp://127.0.0.1:9"]
    assert main(argv) == 1
    assert "give --plant mujoco" in capsys.readouterr().err


# ---------------------------------------------------------------------- over the wire


@pytest.fixture
def mujoco_agent(free_port: Callable[[], int]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``limbtree agent --plant mujoco`` in its own process (sim clock); killed at teardown."""
    port = free_port()
    world = [
        {"name": f"tile{i}", "module": "mirror_tile", "pose": as_pose(_tile_matrix(i))}
        for i in range(3)
    ]
    physics = {"latched": ARM_START, "postures": {"arm": "home"}}
    process = subprocess.Popen(
        [
            sys.executable, "-m", "limbtree", "agent", "--robot", "mirror_arm",
            "--plant", "mujoco", "--clock", "sim", "--quiet-steps",
            "--physics", json.dumps(physics), "--world", json.dumps(world),
            "--bind", f"tcp://127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        yield process, f"tcp://127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


def _tile_matrix(i: int) -> np.ndarray:
    out = np.eye(4)
    out[:3, 3] = (TILE_SPACING_M * i, 0.0, -TILE_HALF_THICKNESS_M)
    return out


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_an_agent_process_serves_the_mujoco_plant_over_the_wire(mujoco_agent):
    process, endpoint = mujoco_agent
    with AgentClient(endpoint, subscribe=False) as client:
        described = client.describe(timeout_s=20.0)
        assert described.plant.kind == "mujoco" and described.plant.floating_base
        assert CommandMode.LATCH in described.plant.limb("arm").description.command_modes
        first = client.step(0.1, timeout_s=5.0).states["arm"]
        assert first.detail["latched"] == {"arm.E1": "tile0/si"}
        # `home` puts E2 on tile 1: it latches; E1 lets go; E1 is lifted by the torque loop.
        client.command("arm", "latch", end="E2", engage=True, timeout_s=5.0)
        client.command("arm", "latch", end="E1", engage=False, timeout_s=5.0)
        lifted = si_world(0)
        lifted[2, 3] = 0.05
        client.command("arm", "impedance", frame="E1", goal=as_pose(lifted), timeout_s=5.0)
        stepped = client.step(1.1, timeout_s=10.0)
        assert stepped.base.pose[2] > 0.01  # E1 (the base link) rose off tile 0
        state = stepped.states["arm"]
        assert state.detail["latched"] == {"arm.E2": "tile1/si"}
        assert list(state.detail["ends_latched"]) == ["E2"]
        assert list(state.detail["tasks"]) == ["arm.E1"]
        assert isinstance(state.detail["lyapunov_j"], float) and state.detail["lyapunov_j"] > 0
        assert state.detail["max_rise_rel"] < 0.01
        # E1 is on its way up, out of the capture range: latching it again is refused.
        with pytest.raises(RemoteError, match="from tile0/si") as raised:
            client.command("arm", "latch", end="E1", engage=True, timeout_s=5.0)
        assert raised.value.code == "bad_value"
        with pytest.raises(RemoteError) as raised:
            client.command("arm", "ee_pose", pose=[0, 0, 0, 0, 0, 0, 1], timeout_s=5.0)
        assert raised.value.code == "unsupported_mode"
        # The agent puts its deadline on joint_torque: past it, the limb holds its joints.
        client.command("arm", "joint_torque", tau=[0.5] * ARM_JOINTS, deadline_s=0.1)
        state = client.step(1.5, timeout_s=10.0).states["arm"]
        assert state.detail["command_deadline"]["mode"] == "joint_torque"
        assert state.detail["command_deadline"]["expired_at"] == pytest.approx(1.2)
        assert state.detail["mode"] == "joint_position"
    assert process.poll() is None  # the agent lives on
