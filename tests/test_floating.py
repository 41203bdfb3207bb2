"""Tests of limbtree.kinematics.floating (FloatingTree) and limbtree.robots.floating.

MuJoCo is the oracle: the same URDF compiled by :func:`limbtree.robots.mujoco_model.build_model`
with a free joint on the base link. Its coordinates differ from the contract's, and the
conversion is derived, not fitted:

- MuJoCo's velocity is ``qvel = [p_b_dot (world); w_b (base axes); q_dot]``, the contract's
  ``V = [v_b; w_b; q_dot]`` with ``v_b = R_b^T p_b_dot``; so ``qvel = S V`` with
  ``S = blkdiag(R_b, I3, I_n)``.
- ``mj_jacSite`` gives ``p_f_dot = Jp qvel`` and ``w_f (world) = Jr qvel``; the frame's body
  twist is ``blkdiag(R_f^T, R_f^T) [Jp; Jr] qvel``, so ``[T_b T_q] = blkdiag(R_f^T, R_f^T)
  [Jp; Jr] S``.
- ``KE = 1/2 qvel^T M_mj qvel = 1/2 V^T (S^T M_mj S) V``, so ``M = S^T M_mj S``.
- The momentum conjugate to ``V_b`` is ``M[:6, :] V``; from MuJoCo's subtree quantities it
  is ``[R_b^T m c_dot; R_b^T (L_c + (c - p_b) x m c_dot)]`` (``L_c`` about the centre of mass).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")

import limbtree.kinematics.floating as floating_module  # noqa: E402
from limbtree.kinematics.errors import JointCountError  # noqa: E402
from limbtree.kinematics.floating import FloatingTree, FloatingTreeError  # noqa: E402
from limbtree.kinematics.pose import Pose  # noqa: E402
from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.floating import floating_tree  # noqa: E402
from limbtree.robots.mujoco_model import build_model  # noqa: E402

TOL = 1e-8
ROBOTS = ("mirror_arm", "mirror_mar", "moonbot_zero")


class Oracle:
    """A robot in MuJoCo at a random state, with the conversions to the contract's coordinates."""

    def __init__(self, robot: str, seed: int) -> None:
        self.spec = load_robot(robot)
        self.tree = floating_tree(self.spec)
        rng = np.random.default_rng(seed)
        base = Pose(rng.normal(size=3), Rotation.random(random_state=seed).as_quat())
        self.m = build_model(self.spec, base_pose_world=base, floating=True)
        model = self.m.model
        self.data = data = mujoco.MjData(model)
        self.q = np.concatenate([rng.uniform(limb.lower, limb.upper) for limb in self.spec.limbs])
        self.dofs = np.concatenate([self.m.limb_dof[limb.name] for limb in self.spec.limbs])
        for limb in self.spec.limbs:
            data.qpos[self.m.limb_qpos[limb.name]] = self.q[self.tree.limb_slice(limb.name)]
        data.qvel[:] = rng.normal(size=model.nv)
        mujoco.mj_forward(model, data)
        mujoco.mj_subtreeVel(model, data)
        self.rotation = data.xmat[self.m.base_body].reshape(3, 3).copy()
        self.position = data.xpos[self.m.base_body].copy()
        nv = model.nv
        self.S = np.zeros((nv, 6 + self.tree.n))
        self.S[:3, :3] = self.rotation
        self.S[3:6, 3:6] = np.eye(3)
        self.S[self.dofs, 6 + np.arange(self.tree.n)] = 1.0
        self.V = np.linalg.lstsq(self.S, data.qvel, rcond=None)[0]
        np.testing.assert_allclose(self.S @ self.V, data.qvel, atol=1e-12)

    def base_matrix(self) -> np.ndarray:
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = self.rotation, self.position
        return t

    def world(self, rotation: np.ndarray, position: np.ndarray) -> np.ndarray:
        t = np.eye(4)
        t[:3, :3], t[:3, 3] = rotation.reshape(3, 3), position
        return t

    def body_twist_jacobian(
        self, jp: np.ndarray, jr: np.ndarray, rotation: np.ndarray
    ) -> np.ndarray:
        r = rotation.reshape(3, 3)
        return np.vstack([r.T @ jp, r.T @ jr]) @ self.S

    def full_mass_matrix(self) -> np.ndarray:
        nv = self.m.model.nv
        full = np.zeros((nv, nv))
        mujoco.mj_fullM(self.m.model, self.data, full)
        return full


def frames_and_oracle_links(oracle: Oracle) -> list[tuple[str, str, int]]:
    """(frame, kind, id): interface frames are sites; moonbot_zero's feet are bodies."""
    items = [(frame, "site", site) for frame, site in oracle.m.frame_site.items()]
    for limb in oracle.spec.limbs:
        items.append((f"{limb.name}.ee", "body", oracle.m.model.body(limb.ee_link).id))
    return items


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("seed", range(3))
def test_frame_poses_and_jacobians_match_mujoco(robot, seed):
    oracle = Oracle(robot, seed)
    model, data, tree = oracle.m.model, oracle.data, oracle.tree
    base = oracle.base_matrix()
    items = frames_and_oracle_links(oracle)
    poses, jacobians = tree.frame_poses_and_jacobians([f for f, _, _ in items], oracle.q)
    for (frame, kind, ident), pose, jacobian in zip(items, poses, jacobians, strict=True):
        jp, jr = np.zeros((3, model.nv)), np.zeros((3, model.nv))
        if kind == "site":
            world = oracle.world(data.site_xmat[ident], data.site_xpos[ident])
            mujoco.mj_jacSite(model, data, jp, jr, ident)
        else:
            world = oracle.world(data.xmat[ident], data.xpos[ident])
            mujoco.mj_jacBody(model, data, jp, jr, ident)
        np.testing.assert_allclose(base @ pose, world, atol=TOL, err_msg=frame)
        expected = oracle.body_twist_jacobian(jp, jr, world[:3, :3])
        np.testing.assert_allclose(jacobian, expected, atol=TOL, err_msg=frame)
        # the single-frame calls agree with the batched one
        np.testing.assert_array_equal(tree.frame_pose(frame, oracle.q), pose)
        np.testing.assert_array_equal(tree.frame_jacobian(frame, oracle.q), jacobian)
        # and the frame's body twist is the one MuJoCo's velocities give
        velocity = np.concatenate(
            [world[:3, :3].T @ (jp @ data.qvel), world[:3, :3].T @ (jr @ data.qvel)]
        )
        np.testing.assert_allclose(jacobian @ oracle.V, velocity, atol=TOL)


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("seed", range(3))
def test_mass_matrix_matches_mujoco_with_and_without_armature(robot, seed):
    oracle = Oracle(robot, seed)
    expected = oracle.S.T @ oracle.full_mass_matrix() @ oracle.S
    actual = oracle.tree.mass_matrix(oracle.q)
    np.testing.assert_allclose(actual, expected, atol=TOL)
    np.testing.assert_allclose(actual, actual.T, atol=1e-12)
    assert np.linalg.eigvalsh(actual).min() > 0
    # without armature: MuJoCo's model with its armature removed
    oracle.m.model.dof_armature[:] = 0.0
    mujoco.mj_forward(oracle.m.model, oracle.data)
    expected_bare = oracle.S.T @ oracle.full_mass_matrix() @ oracle.S
    np.testing.assert_allclose(
        oracle.tree.mass_matrix(oracle.q, armature=False), expected_bare, atol=TOL
    )
    kinetic = 0.5 * oracle.V @ expected @ oracle.V
    assert kinetic == pytest.approx(
        0.5 * oracle.data.qvel @ oracle.full_mass_matrix() @ oracle.data.qvel
        + 0.5 * oracle.spec.joint_armature_kgm2 * np.sum(oracle.data.qvel[oracle.dofs] ** 2)
    )


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("seed", range(3))
def test_momentum_matches_mujocos_mass_matrix_and_subtree_momentum(robot, seed):
    oracle = Oracle(robot, seed)
    model, data, tree = oracle.m.model, oracle.data, oracle.tree
    H = tree.momentum_matrix(oracle.q)
    momentum = H @ oracle.V
    # M[:6, :] V, in MuJoCo's coordinates: rows of the free joint, the linear ones rotated
    mj_rows = oracle.full_mass_matrix()[:6] @ data.qvel
    from_mass = np.concatenate([oracle.rotation.T @ mj_rows[:3], mj_rows[3:6]])
    np.testing.assert_allclose(momentum, from_mass, atol=TOL)
    # MuJoCo's subtree momentum of the base body (the whole robot)
    b = oracle.m.base_body
    mass = model.body_subtreemass[b]
    assert tree.total_mass == pytest.approx(mass, abs=1e-12)
    linear = mass * data.subtree_linvel[b]
    com = data.subtree_com[b]
    angular = data.subtree_angmom[b] + np.cross(com - oracle.position, linear)
    np.testing.assert_allclose(momentum[:3], oracle.rotation.T @ linear, atol=TOL)
    np.testing.assert_allclose(momentum[3:], oracle.rotation.T @ angular, atol=TOL)
    # the centre of mass, in the base frame
    np.testing.assert_allclose(
        tree.center_of_mass(oracle.q), oracle.rotation.T @ (com - oracle.position), atol=TOL
    )
    # H is M's first rows; each limb's H_bm is its columns
    np.testing.assert_allclose(H, tree.mass_matrix(oracle.q)[:6], atol=1e-10)


@pytest.mark.parametrize("robot", ("mirror_arm", "mirror_mar"))
def test_limb_end_frames_agree_with_the_kinematic_chain(robot):
    spec = load_robot(robot)
    tree = floating_tree(spec)
    rng = np.random.default_rng(7)
    q = np.concatenate([rng.uniform(limb.lower, limb.upper) for limb in spec.limbs])
    for limb in spec.limbs:
        chain = spec.chain(limb.name)
        q_limb = q[tree.limb_slice(limb.name)]
        pose = tree.frame_pose(f"{limb.name}.E2", q)
        np.testing.assert_allclose(pose, chain.fk_matrix(q_limb), atol=1e-12)
        # T_q restricted to the limb is its body Jacobian: the base-frame one turned into E2
        jacobian = tree.frame_jacobian(f"{limb.name}.E2", q)
        base_frame = chain.jacobian(q_limb)
        rotation_t = pose[:3, :3].T
        body = np.vstack([rotation_t @ base_frame[:3], rotation_t @ base_frame[3:]])
        columns = 6 + np.arange(tree.n)[tree.limb_slice(limb.name)]
        np.testing.assert_allclose(jacobian[:, columns], body, atol=1e-12)
        others = np.setdiff1d(np.arange(6, 6 + tree.n), columns)
        assert not jacobian[:, others].any()


def test_the_numpy_path_gives_the_compiled_paths_results(monkeypatch):
    spec = load_robot("mirror_mar")
    compiled = floating_tree(spec)
    monkeypatch.setattr(floating_module, "_FKINE_C_AVAILABLE", False)
    plain = floating_tree(spec)
    q = np.random.default_rng(2).uniform(-3, 3, compiled.n)
    frames = ["arm_2.E2", "E0", "arm_1.E1", "arm_1.E2"]
    for a, b in zip(
        compiled.frame_poses_and_jacobians(frames, q),
        plain.frame_poses_and_jacobians(frames, q),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_the_tree_describes_its_limbs_frames_and_mass():
    spec = load_robot("mirror_mar")
    tree = floating_tree(spec)
    assert tree.base_link == "body"
    assert tree.limbs == ("arm_1", "arm_2")
    assert tree.n == 14
    assert tree.limb_slice("arm_2") == slice(7, 14)
    assert tree.frames == (
        "E0",
        "arm_1.E1",
        "arm_1.E2",
        "arm_2.E1",
        "arm_2.E2",
        "arm_1.ee",
        "arm_2.ee",
    )
    assert tree.total_mass == pytest.approx(68.0)
    np.testing.assert_array_equal(tree.armature, np.full(14, 0.1))
    # the torso's SI and the ports do not move with the joints
    q = np.random.default_rng(0).uniform(-3, 3, 14)
    np.testing.assert_allclose(tree.frame_pose("E0", q), Pose((0, 0, 0.15)).as_matrix())
    e1 = tree.frame_jacobian("arm_1.E1", q)
    assert not e1[:, 6:].any()
    # a frame on the base moves with it: v = w x p for a base turning at w (R = I)
    np.testing.assert_allclose(
        e1[:3, 3:6] @ np.array([1.0, 0.0, 0.0]), np.cross([1.0, 0.0, 0.0], [0.0, 0.12, -0.15])
    )
    assert math.isclose(floating_tree(load_robot("mirror_arm")).total_mass, 19.0)


def test_moonbot_zero_has_its_feet_as_frames_for_seed_004():
    tree = floating_tree(load_robot("moonbot_zero"))
    assert tree.frames == ("leg_0.ee", "leg_1.ee", "leg_2.ee", "leg_3.ee")
    assert tree.n == 12 and tree.limb_slice("leg_3") == slice(9, 12)
    assert tree.armature.sum() == 0.0


def test_bad_input_is_refused_with_a_clear_error():
    spec = load_robot("mirror_arm")
    tree = floating_tree(spec)
    with pytest.raises(
        FloatingTreeError, match=r"unknown frame 'arm\.E3'; valid frames: arm\.E1, arm\.E2"
    ):
        tree.frame_pose("arm.E3", np.zeros(7))
    with pytest.raises(JointCountError):
        tree.frame_poses_and_jacobians(["arm.E2"], np.zeros(6))
    with pytest.raises(FloatingTreeError, match="NaN"):
        tree.mass_matrix(np.full(7, np.nan))
    with pytest.raises(FloatingTreeError, match="no limb 'leg'; valid limbs: arm"):
        tree.limb_slice("leg")
    urdf = spec.urdf_path
    with pytest.raises(FloatingTreeError, match="must be the URDF's root link"):
        FloatingTree.from_urdf(urdf, "link_3", [], {})
    with pytest.raises(FloatingTreeError, match="belong to no limb"):
        FloatingTree.from_urdf(urdf, "e1", [("arm", ["joint_1", "joint_2"])], {})
    with pytest.raises(FloatingTreeError, match="not a movable joint"):
        FloatingTree.from_urdf(urdf, "e1", [("arm", ["joint_9"])], {})
    with pytest.raises(FloatingTreeError, match="frame 'x': 'nowhere' is not a link"):
        FloatingTree.from_urdf(urdf, "e1", [("arm", spec.limb().joint_names)], {"x": "nowhere"})
    with pytest.raises(FloatingTreeError, match="armature"):
        FloatingTree.from_urdf(urdf, "e1", [("arm", spec.limb().joint_names)], {}, armature=-1.0)
