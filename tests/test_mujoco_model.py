"""Tests of limbtree.robots.mujoco_model: the MuJoCo model of a robot and its world.

The oracle is the URDF's own forward kinematics (KinematicChain, over roboticstoolbox) and
the physics of MuJoCo's welds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")

from limbtree.kinematics.pose import Pose  # noqa: E402
from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.assembly import WorldModule  # noqa: E402
from limbtree.robots.modules import UnknownModuleError  # noqa: E402
from limbtree.robots.mujoco_model import (  # noqa: E402
    ANCHOR_SITE,
    WELD_SOLREF,
    MujocoModelError,
    build_model,
    retarget_weld,
)

TILE_HALF_THICKNESS_M = 0.025  # mirror_tile: its SI is 0.025 m above the tile frame


def matrix(pose: Pose) -> np.ndarray:
    return pose.as_matrix()


def site_matrix(data, site: int) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = data.site_xmat[site].reshape(3, 3)
    t[:3, 3] = data.site_xpos[site]
    return t


def body_matrix(data, body: int) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = data.xmat[body].reshape(3, 3)
    t[:3, 3] = data.xpos[body]
    return t


def tile(name: str, si_world: np.ndarray) -> WorldModule:
    """A mirror_tile placed so that its SI's frame is ``si_world`` (z down into the tile)."""
    si_in_tile = np.eye(4)
    si_in_tile[:3, :3] = Rotation.from_euler("x", math.pi).as_matrix()
    si_in_tile[2, 3] = TILE_HALF_THICKNESS_M
    return WorldModule(name, "mirror_tile", Pose.from_matrix(si_world @ np.linalg.inv(si_in_tile)))


def si_at(x: float, y: float = 0.0, z: float = 0.0, yaw_deg: float = 0.0) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = Rotation.from_euler("xz", [math.pi, math.radians(yaw_deg)]).as_matrix()
    t[:3, 3] = (x, y, z)
    return t


BASE = Pose((0.3, -0.2, 0.8), Rotation.from_euler("xyz", [0.3, -0.2, 1.0]).as_quat())


def set_postures(m, data, posture: str = "home") -> None:
    for limb in m.spec.limbs:
        data.qpos[m.limb_qpos[limb.name]] = limb.posture(posture)


# ---------------------------------------------------------------------- building


@pytest.mark.parametrize(
    ("robot", "floating"),
    [("mirror_arm", True), ("mirror_mar", True), ("moonbot_zero", True), ("heavy_limb", False)],
)
def test_each_robot_builds_with_its_joints_motors_welds_and_no_collisions(robot, floating):
    spec = load_robot(robot)
    m = build_model(
        spec, base_pose_world=BASE, floating=floating, gravity=(0, 0, -1), timestep=2e-3
    )
    model = m.model
    n = sum(limb.n for limb in spec.limbs)
    assert (model.nq, model.nv) == ((7 + n, 6 + n) if floating else (n, n))
    assert (m.free_qpos, m.free_dof) == ((0, 0) if floating else (None, None))
    assert model.nu == n
    assert model.opt.timestep == 2e-3
    np.testing.assert_array_equal(model.opt.gravity, [0, 0, -1])
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert model.body(spec.base_link).id == m.base_body
    for limb in spec.limbs:
        for k, joint in enumerate(limb.joints):
            mj_joint = model.joint(joint.name)
            assert m.limb_qpos[limb.name][k] == mj_joint.qposadr[0]
            assert m.limb_dof[limb.name][k] == mj_joint.dofadr[0]
            assert model.dof_armature[mj_joint.dofadr[0]] == spec.joint_armature_kgm2
            assert model.actuator_trnid[m.limb_actuator[limb.name][k], 0] == mj_joint.id
    assert not model.dof_damping.any() and not model.dof_frictionloss.any()
    assert not model.geom_contype.any() and not model.geom_conaffinity.any()
    assert set(m.weld) == set(spec.interface_links) == set(m.frame_site)
    assert model.neq == len(spec.interface_links)
    assert not model.eq_active0.any()
    for weld in m.weld.values():
        assert model.eq_type[weld] == mujoco.mjtEq.mjEQ_WELD
        assert model.eq_objtype[weld] == mujoco.mjtObj.mjOBJ_SITE
        assert tuple(model.eq_solref[weld]) == WELD_SOLREF
        assert model.eq_obj2id[weld] == m.anchor_site == model.site(ANCHOR_SITE).id


def test_the_motors_clip_torques_to_the_urdf_effort_limits():
    spec = load_robot("mirror_arm")
    m = build_model(spec, base_pose_world=BASE, floating=True)
    np.testing.assert_array_equal(m.model.actuator_ctrlrange, [[-100.0, 100.0]] * 7)
    data = mujoco.MjData(m.model)
    data.ctrl[m.limb_actuator["arm"]] = [1000, -1000, 50, 0, 0, 0, 0]
    mujoco.mj_forward(m.model, data)
    np.testing.assert_array_equal(data.actuator_force[:3], [100.0, -100.0, 50.0])
    np.testing.assert_array_equal(data.qfrc_actuator[m.limb_dof["arm"]][:3], [100, -100, 50])


@pytest.mark.parametrize("robot", ["mirror_arm", "mirror_mar"])
def test_interface_sites_are_the_urdf_frames(robot):
    spec = load_robot(robot)
    m = build_model(spec, base_pose_world=BASE, floating=True)
    data = mujoco.MjData(m.model)
    rng = np.random.default_rng(3)
    qs = {limb.name: rng.uniform(limb.lower, limb.upper) for limb in spec.limbs}
    for limb in spec.limbs:
        data.qpos[m.limb_qpos[limb.name]] = qs[limb.name]
    mujoco.mj_forward(m.model, data)
    base = matrix(BASE)
    np.testing.assert_allclose(body_matrix(data, m.base_body), base, atol=1e-12)
    for limb in spec.limbs:
        expected = base @ spec.chain(limb.name).fk_matrix(qs[limb.name])
        np.testing.assert_allclose(
            site_matrix(data, m.frame_site[f"{limb.name}.E2"]), expected, atol=1e-9
        )
    if robot == "mirror_arm":
        np.testing.assert_allclose(site_matrix(data, m.frame_site["arm.E1"]), base, atol=1e-12)
    else:  # the torso's SI on top and the E1 ports below it (the URDF's fixed joints)
        for frame, offset in (
            ("E0", (0, 0, 0.15)),
            ("arm_1.E1", (0, 0.12, -0.15)),
            ("arm_2.E1", (0, -0.12, -0.15)),
        ):
            np.testing.assert_allclose(
                site_matrix(data, m.frame_site[frame]), base @ matrix(Pose(offset)), atol=1e-12
            )


def test_grasp_sites_are_the_module_grasp_points_in_the_world():
    spec = load_robot("mirror_arm")
    tiles = [tile(f"tile{k}", si_at(0.6 * k, yaw_deg=10 * k)) for k in range(3)]
    m = build_model(spec, base_pose_world=Pose(), floating=True, modules=tiles)
    data = mujoco.MjData(m.model)
    mujoco.mj_forward(m.model, data)
    turns = ("", "@90", "@180", "@270")  # each point, and its turns about its normal
    assert set(m.grasp_site) == {f"tile{i}/si{turn}" for i in range(3) for turn in turns}
    for k in range(3):
        np.testing.assert_allclose(
            site_matrix(data, m.grasp_site[f"tile{k}/si"]),
            si_at(0.6 * k, yaw_deg=10 * k),
            atol=1e-12,
        )


def test_the_build_is_deterministic():
    spec = load_robot("mirror_mar")
    tiles = [tile(f"tile{k}", si_at(0.35 * k)) for k in range(3)]
    runs = []
    for _ in range(2):
        m = build_model(spec, base_pose_world=BASE, floating=True, modules=tiles)
        data = mujoco.MjData(m.model)
        set_postures(m, data)
        data.ctrl[:] = np.linspace(-20, 20, m.model.nu)
        mujoco.mj_step(m.model, data, 50)
        runs.append(data.qpos.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


# ---------------------------------------------------------------------- welds


def arm_on_two_tiles(tile1_si: np.ndarray, extra: dict[str, np.ndarray] | None = None):
    """mirror_arm in `home`, E1 on tile0's SI at the origin; tile1's SI where asked."""
    spec = load_robot("mirror_arm")
    tiles = [tile("tile0", si_at(0.0)), tile("tile1", tile1_si)]
    tiles += [tile(name, si) for name, si in (extra or {}).items()]
    m = build_model(
        spec, base_pose_world=Pose.from_matrix(si_at(0.0)), floating=True, modules=tiles
    )
    data = mujoco.MjData(m.model)
    set_postures(m, data)
    retarget_weld(m.model, data, m, "arm.E1", "tile0/si")
    data.eq_active[m.weld["arm.E1"]] = 1
    mujoco.mj_forward(m.model, data)
    return m, data


def offset_of(data, m, frame: str, grasp: str) -> tuple[float, float]:
    a, b = site_matrix(data, m.frame_site[frame]), site_matrix(data, m.grasp_site[grasp])
    angle = Rotation.from_matrix(a[:3, :3].T @ b[:3, :3]).magnitude()
    return float(np.linalg.norm(a[:3, 3] - b[:3, 3])), float(angle)


def test_a_weld_pulls_a_tip_3_mm_and_1_deg_off_onto_the_si_within_100_ms():
    # tile1's SI 3 mm and 1 deg away from where home puts E2 (0.6 m along x)
    target = si_at(0.6, 0.0021, 0.0021, yaw_deg=1.0)
    m, data = arm_on_two_tiles(target)
    distance, angle = offset_of(data, m, "arm.E2", "tile1/si")
    assert distance == pytest.approx(0.003, abs=1e-4)
    assert math.degrees(angle) == pytest.approx(1.0, abs=1e-6)
    retarget_weld(m.model, data, m, "arm.E2", "tile1/si")
    data.eq_active[m.weld["arm.E2"]] = 1
    mujoco.mj_step(m.model, data, 100)  # 100 ms at 1 ms
    distance, angle = offset_of(data, m, "arm.E2", "tile1/si")
    assert distance < 0.2e-3
    assert math.degrees(angle) < 0.1
    # E1 stayed on tile 0's SI
    assert offset_of(data, m, "arm.E1", "tile0/si")[0] < 0.2e-3


def test_an_inactive_weld_does_not_pull():
    m, data = arm_on_two_tiles(si_at(0.603))
    retarget_weld(m.model, data, m, "arm.E2", "tile1/si")
    mujoco.mj_step(m.model, data, 100)
    assert offset_of(data, m, "arm.E2", "tile1/si")[0] == pytest.approx(0.003, abs=1e-4)


def test_a_weld_can_be_retargeted_at_run_time():
    m, data = arm_on_two_tiles(si_at(0.603), extra={"tile1b": si_at(0.6, -0.003)})
    weld = m.weld["arm.E2"]
    retarget_weld(m.model, data, m, "arm.E2", "tile1/si")
    assert m.model.eq_obj2id[weld] == m.grasp_site["tile1/si"] == m.weld_target("arm.E2")
    assert data.eq_active[weld] == 0  # a retarget does not switch the weld on
    data.eq_active[weld] = 1
    mujoco.mj_step(m.model, data, 300)
    assert offset_of(data, m, "arm.E2", "tile1/si")[0] < 0.1e-3
    # release, point the same weld at another tile, latch again: E2 goes there
    data.eq_active[weld] = 0
    retarget_weld(m.model, data, m, "arm.E2", "tile1b/si")
    assert m.model.eq_obj2id[weld] == m.grasp_site["tile1b/si"]
    data.eq_active[weld] = 1
    mujoco.mj_step(m.model, data, 300)
    assert offset_of(data, m, "arm.E2", "tile1b/si")[0] < 0.1e-3
    assert offset_of(data, m, "arm.E2", "tile1/si")[0] > 3e-3
    retarget_weld(m.model, data, m, "arm.E2", ANCHOR_SITE)
    assert m.model.eq_obj2id[weld] == m.anchor_site


# ---------------------------------------------------------------------- errors


def test_an_unknown_module_lists_the_valid_ones():
    with pytest.raises(UnknownModuleError, match="valid modules: mirror_tile"):
        build_model(
            load_robot("mirror_arm"),
            base_pose_world=Pose(),
            floating=True,
            modules=[WorldModule("t", "mirror_tiles", Pose())],
        )


def test_an_unknown_grasp_site_or_frame_is_refused_with_the_valid_names():
    m, data = arm_on_two_tiles(si_at(0.6))
    with pytest.raises(
        MujocoModelError,
        match=r"no grasp site 'tile1/s' in the world; valid grasp sites: tile0/si, tile0/si@90",
    ):
        retarget_weld(m.model, data, m, "arm.E2", "tile1/s")
    with pytest.raises(
        MujocoModelError, match=r"no interface frame 'arm.E3'; valid frames: arm.E1, arm.E2"
    ):
        retarget_weld(m.model, data, m, "arm.E3", "tile1/si")


def test_bad_arguments_are_refused():
    spec = load_robot("mirror_arm")
    with pytest.raises(MujocoModelError, match="timestep"):
        build_model(spec, base_pose_world=Pose(), floating=True, timestep=0.0)
    with pytest.raises(MujocoModelError, match="gravity"):
        build_model(spec, base_pose_world=Pose(), floating=True, gravity=(0, 0))
    with pytest.raises(MujocoModelError, match="used twice"):
        build_model(
            spec,
            base_pose_world=Pose(),
            floating=True,
            modules=[tile("a", si_at(0)), tile("a", si_at(1))],
        )
