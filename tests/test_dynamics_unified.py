"""Seed 003's unified controller (eq. 8): passivity (eq. 13), Table 1's closed forms, eq. 5's
wrench as the gradient of Lemma 1's potential, bad input, and a closed loop on MuJoCo.

The oracles are independent of the controller's code: a floating tree written from first
principles (``dynamics_toy_tree``), random Jacobians, numpy's pseudo-inverse, finite
differences, and MuJoCo.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dynamics_toy_tree import inverse, rot, toy_arm, toy_mar, transform, twist_exp

from limbtree.skills.dynamics import (
    ConstraintRankError,
    DynamicsInputError,
    ImpedanceGains,
    ImpedanceInput,
    TaskFrame,
    UnifiedImpedance,
    UnknownFrameError,
    nearest_symmetric_goal,
    pose_error,
    task_potential_and_wrench,
)

GAINS = ImpedanceGains(
    k_n_per_m=100.0, k_nm_per_rad=20.0, d_ns_per_m=200.0, d_nms_per_rad=10.0, null_nms_per_rad=5.0
)
TORSO_GAINS = ImpedanceGains(
    k_n_per_m=400.0, k_nm_per_rad=200.0, d_ns_per_m=800.0, d_nms_per_rad=100.0
)


def random_pose(rng, spread=1.0):
    return transform(rot(rng.normal(size=3), rng.uniform(0, math.pi)), rng.normal(size=3) * spread)


def real_tree(name):
    floating = pytest.importorskip("limbtree.robots.floating", reason="FloatingTree not there yet")
    from limbtree.robots.registry import load_robot

    return floating.floating_tree(load_robot(name))


TREES = {
    "toy_arm": toy_arm,
    "toy_mar": toy_mar,
    "mirror_arm": lambda: real_tree("mirror_arm"),
    "mirror_mar": lambda: real_tree("mirror_mar"),
}
#: (latched frames, task frames) per morphology: A (2a, 2b) and C (ii, i, iii, i + torso).
SCENARIOS = {
    "arm": [(("arm.E1",), ("arm.E2",)), (("arm.E2",), ("arm.E1",))],
    "mar": [
        (("arm_1.E2", "arm_2.E2"), ("E0",)),
        (("arm_1.E2",), ("arm_2.E2",)),
        (("E0",), ("arm_1.E2", "arm_2.E2")),
        (("arm_2.E2",), ("arm_1.E2", "E0")),
    ],
}
CASES = [
    (tree, latched, tasks)
    for tree in TREES
    for latched, tasks in SCENARIOS["arm" if tree.endswith("arm") else "mar"]
]


class RandomJacobians:
    """A tree whose poses and Jacobians are random matrices (fixed per instance)."""

    def __init__(self, n, frames, seed):
        rng = np.random.default_rng(seed)
        self.n = n
        self.frames = tuple(frames)
        self._poses = {f: random_pose(rng) for f in frames}
        self._jacs = {f: rng.normal(size=(6, 6 + n)) for f in frames}

    def frame_pose(self, frame, q):
        return self._poses[frame].copy()

    def frame_poses_and_jacobians(self, frames, q):
        return (
            np.array([self._poses[f] for f in frames]),
            np.array([self._jacs[f] for f in frames]),
        )

    def mass_matrix(self, q):
        return np.eye(6 + self.n)


def gamma_closed_form(world, goal, gains):
    """Eq. 5 written out: γ = [η̃ᵀ𝒦r; sk(Kη̃)^∨], η̃ = R_dᵀR, r = R_dᵀ(p − p_d)."""
    eta = goal[:3, :3].T @ world[:3, :3]
    r = goal[:3, :3].T @ (world[:3, 3] - goal[:3, 3])
    sk = 0.5 * gains.k_nm_per_rad * (eta - eta.T)
    return np.r_[eta.T @ (gains.k_n_per_m * r), sk[2, 1], sk[0, 2], sk[1, 0]]


def potential_closed_form(world, goal, gains):
    eta = goal[:3, :3].T @ world[:3, :3]
    r = goal[:3, :3].T @ (world[:3, 3] - goal[:3, 3])
    return 0.5 * gains.k_nm_per_rad * np.trace(np.eye(3) - eta) + 0.5 * gains.k_n_per_m * r @ r


def reduced(tree, latched, tasks, q):
    """Ψ_b, Ψ_q, Ψ_bq (numpy pinv) and each task's T̃_f, from the tree's own Jacobians."""
    psi = np.vstack([tree.frame_poses_and_jacobians((f,), q)[1][0] for f in latched])
    psi_bq = np.linalg.pinv(psi[:, :6]) @ psi[:, 6:]
    t_tilde = []
    for f in tasks:
        jac = tree.frame_poses_and_jacobians((f,), q)[1][0]
        t_tilde.append(jac[:, 6:] - jac[:, :6] @ psi_bq)
    return psi, psi_bq, t_tilde


def consistent_qdot(psi, n, rng):
    """A joint velocity for which Ψ V = 0 has a base twist (any, when one frame is latched)."""
    psi_b, psi_q = psi[:, :6], psi[:, 6:]
    leak = (np.eye(len(psi)) - psi_b @ np.linalg.pinv(psi_b)) @ psi_q
    if np.abs(leak).max() < 1e-12:
        return rng.normal(size=n)
    _, s, vt = np.linalg.svd(leak)
    null = vt[int(np.sum(s > 1e-9)) :]
    return null.T @ rng.normal(size=len(null))


def setup(tree, latched, task_frames, rng, gains=GAINS):
    q = rng.uniform(-1.2, 1.2, tree.n)
    world = {f: random_pose(rng) for f in latched}
    tasks = [TaskFrame(f, random_pose(rng, 0.3), gains) for f in task_frames]
    return q, world, tasks


def world_poses(tree, latched_world, first, q, frames):
    base = latched_world[first] @ inverse(tree.frame_pose(first, q))
    return base, {f: base @ tree.frame_pose(f, q) for f in frames}


def eq13_right_side(qdot, t_tilde, tasks):
    """−Σ V_fᵀ D_f V_f − Σ P_f q̇ᵀ (I − T̃⁺T̃) q̇, with numpy's pseudo-inverse."""
    total = 0.0
    n = len(qdot)
    for jac, task in zip(t_tilde, tasks, strict=True):
        g = task.gains
        twist = jac @ qdot
        d = np.r_[[g.d_ns_per_m] * 3, [g.d_nms_per_rad] * 3]
        total -= twist @ (d * twist)
        total -= g.null_nms_per_rad * qdot @ (np.eye(n) - np.linalg.pinv(jac) @ jac) @ qdot
    return total


def test_eq13_holds_on_random_jacobians():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(7, 15))
        frames = ("a", "b", "c", "d")
        tree = RandomJacobians(n, frames, seed=trial)
        k = int(rng.integers(1, 3))
        latched, task_frames = frames[:k], frames[k : k + int(rng.integers(1, 3))]
        q, world, tasks = setup(tree, latched, task_frames, rng)
        qdot = rng.normal(size=n)
        step = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks))
        _, _, t_tilde = reduced(tree, latched, task_frames, q)
        _, poses = world_poses(tree, world, latched[0], q, task_frames)
        work = sum(
            gamma_closed_form(poses[t.frame], t.goal, t.gains) @ (jac @ qdot)
            for t, jac in zip(tasks, t_tilde, strict=True)
        )
        rate = qdot @ step.tau + work  # Ẇ without the kinetic part's own work
        expected = eq13_right_side(qdot, t_tilde, tasks)
        assert rate == pytest.approx(expected, rel=1e-7, abs=1e-7)
        assert rate <= 1e-9


@pytest.mark.parametrize(("tree_name", "latched", "task_frames"), CASES)
def test_eq13_holds_along_the_constrained_motion_of_a_tree(tree_name, latched, task_frames):
    tree = TREES[tree_name]()
    rng = np.random.default_rng(7)
    controller = UnifiedImpedance(tree)
    for _ in range(5):
        q, world, tasks = setup(tree, latched, task_frames, rng)
        psi, psi_bq, t_tilde = reduced(tree, latched, task_frames, q)
        qdot = consistent_qdot(psi, tree.n, rng)
        step = controller.step(ImpedanceInput(q, qdot, world, tasks))
        # The base twist is eq. 3's, and it keeps every latched frame still.
        np.testing.assert_allclose(step.base_twist, -psi_bq @ qdot, atol=1e-9)
        np.testing.assert_allclose(psi[:, :6] @ step.base_twist + psi[:, 6:] @ qdot, 0, atol=1e-9)
        # Φ̂ along the motion (the base placed by the first latch) by central differences.
        h = 1e-5
        potentials = []
        for sign in (1.0, -1.0):
            moved = controller.step(ImpedanceInput(q + sign * h * qdot, qdot, world, tasks))
            potentials.append(moved.potential_j)
        potential_rate = (potentials[0] - potentials[1]) / (2 * h)
        _, poses = world_poses(tree, world, latched[0], q, task_frames)
        work = sum(
            gamma_closed_form(poses[t.frame], t.goal, t.gains) @ (jac @ qdot)
            for t, jac in zip(tasks, t_tilde, strict=True)
        )
        assert potential_rate == pytest.approx(work, rel=1e-5, abs=1e-6)
        rate = qdot @ step.tau + potential_rate
        assert rate == pytest.approx(eq13_right_side(qdot, t_tilde, tasks), rel=1e-5, abs=1e-6)
        assert rate < 0.0
        expected_phi = sum(potential_closed_form(poses[t.frame], t.goal, t.gains) for t in tasks)
        assert step.potential_j == pytest.approx(expected_phi, rel=1e-12)


@pytest.mark.parametrize("tree_name", ["toy_arm", "mirror_arm"])
def test_table1_row_a_2a_is_minus_jq_transposed_pd2(tree_name):
    """E1 latched (E1 is the base: Ψ_b = I, Ψ_q = 0), E2 the task: τ − τ_n = −J_qᵀ PD_2."""
    tree = TREES[tree_name]()
    rng = np.random.default_rng(11)
    q, world, tasks = setup(tree, ("arm.E1",), ("arm.E2",), rng)
    np.testing.assert_allclose(tree.frame_pose("arm.E1", q), np.eye(4), atol=1e-12)
    qdot = rng.normal(size=tree.n)
    step = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks))
    jac = tree.frame_poses_and_jacobians(("arm.E2",), q)[1][0]
    j_q = jac[:, 6:]
    world_e2 = world["arm.E1"] @ tree.frame_pose("arm.E2", q)
    pd2 = gamma_closed_form(world_e2, tasks[0].goal, GAINS) + np.r_[[200.0] * 3, [10.0] * 3] * (
        j_q @ qdot
    )
    tau_n = -5.0 * (np.eye(tree.n) - np.linalg.pinv(j_q) @ j_q) @ qdot
    np.testing.assert_allclose(step.tau - tau_n, -j_q.T @ pd2, rtol=1e-7, atol=1e-6)


@pytest.mark.parametrize("tree_name", ["toy_arm", "mirror_arm"])
def test_table1_row_a_2b_is_jq_transposed_jb_inverse_transposed_pd1(tree_name):
    """E2 latched (Ψ_b = J_b, Ψ_q = J_q), E1 = the base the task: τ − τ_n = J_qᵀ J_b⁻ᵀ PD_1."""
    tree = TREES[tree_name]()
    rng = np.random.default_rng(12)
    q, world, tasks = setup(tree, ("arm.E2",), ("arm.E1",), rng)
    qdot = rng.normal(size=tree.n)
    step = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks))
    jac = tree.frame_poses_and_jacobians(("arm.E2",), q)[1][0]
    j_b, j_q = jac[:, :6], jac[:, 6:]
    v1 = -np.linalg.solve(j_b, j_q @ qdot)  # E1 is the base: V_1 = V_b
    world_e1 = world["arm.E2"] @ inverse(tree.frame_pose("arm.E2", q))
    pd1 = gamma_closed_form(world_e1, tasks[0].goal, GAINS) + np.r_[[200.0] * 3, [10.0] * 3] * v1
    t_tilde = -np.linalg.solve(j_b, j_q)
    tau_n = -5.0 * (np.eye(tree.n) - np.linalg.pinv(t_tilde) @ t_tilde) @ qdot
    expected = j_q.T @ np.linalg.solve(j_b.T, pd1)
    np.testing.assert_allclose(step.tau - tau_n, expected, rtol=1e-7, atol=1e-6)
    np.testing.assert_allclose(step.base_pose, world_e1, atol=1e-12)


@pytest.mark.parametrize("tree_name", ["toy_mar", "mirror_mar"])
def test_table1_row_c_ii_is_psi_q_transposed_psi_b_pinv_transposed_pd0(tree_name):
    """Both E2 latched, the torso E0 the task: τ − τ_n = Ψ_qᵀ Ψ_b^{†T} PD_0 (sign as eq. 8)."""
    tree = TREES[tree_name]()
    rng = np.random.default_rng(13)
    latched = ("arm_1.E2", "arm_2.E2")
    q, world, tasks = setup(tree, latched, ("E0",), rng, TORSO_GAINS)
    psi = np.vstack([tree.frame_poses_and_jacobians((f,), q)[1][0] for f in latched])
    qdot = consistent_qdot(psi, tree.n, rng)
    step = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks))
    psi_b, psi_q = psi[:, :6], psi[:, 6:]
    # Ψ_q is blockdiag(J_q¹, J_q²) for this tree: each arm moves only its own E2.
    np.testing.assert_allclose(psi_q[:6, 7:], 0, atol=1e-12)
    np.testing.assert_allclose(psi_q[6:, :7], 0, atol=1e-12)
    e0_base = tree.frame_pose("E0", q)
    jac_e0 = tree.frame_poses_and_jacobians(("E0",), q)[1][0]
    base_twist = -np.linalg.pinv(psi_b) @ psi_q @ qdot
    v0 = jac_e0[:, :6] @ base_twist
    world_base = world[latched[0]] @ inverse(tree.frame_pose(latched[0], q))
    g = TORSO_GAINS
    pd0 = (
        gamma_closed_form(world_base @ e0_base, tasks[0].goal, g)
        + np.r_[[g.d_ns_per_m] * 3, [g.d_nms_per_rad] * 3] * v0
    )
    # With T_b0 = Ad(g_b0⁻¹) (E0 on the torso): T̃_0 = −T_b0 Ψ_b⁺Ψ_q; for E0 = the base it is
    # Table 1's −Ψ_b⁺Ψ_q, and τ − τ_n = Ψ_qᵀ Ψ_b^{†T} T_b0ᵀ PD_0.
    t_tilde = -jac_e0[:, :6] @ np.linalg.pinv(psi_b) @ psi_q
    tau_n = -g.null_nms_per_rad * (np.eye(tree.n) - np.linalg.pinv(t_tilde) @ t_tilde) @ qdot
    expected = psi_q.T @ np.linalg.pinv(psi_b).T @ jac_e0[:, :6].T @ pd0
    np.testing.assert_allclose(step.tau - tau_n, expected, rtol=1e-7, atol=1e-6)


def test_gamma_is_the_gradient_of_phi_along_body_twists():
    rng = np.random.default_rng(5)
    for _ in range(50):
        gains = ImpedanceGains(
            k_n_per_m=float(rng.uniform(1, 500)), k_nm_per_rad=float(rng.uniform(1, 200))
        )
        pose, goal = random_pose(rng), random_pose(rng)
        phi, gamma = task_potential_and_wrench(pose, goal, gains)
        assert phi == pytest.approx(potential_closed_form(pose, goal, gains), rel=1e-12)
        twist = rng.normal(size=6)
        h = 1e-6
        plus, _ = task_potential_and_wrench(pose @ twist_exp(h * twist), goal, gains)
        minus, _ = task_potential_and_wrench(pose @ twist_exp(-h * twist), goal, gains)
        assert (plus - minus) / (2 * h) == pytest.approx(gamma @ twist, rel=1e-6, abs=1e-6)


def test_phi_is_zero_with_no_wrench_at_the_goal():
    goal = random_pose(np.random.default_rng(1))
    phi, gamma = task_potential_and_wrench(goal, goal, GAINS)
    assert phi == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(gamma, 0.0, atol=1e-12)


def test_pose_error_is_the_distance_and_the_rotation_angle():
    goal = transform(rot((0, 0, 1), 0.3), (1.0, 2.0, 3.0))
    pose = goal @ transform(rot((1, 1, 0), math.radians(10)), (0.003, -0.004, 0.0))
    d, a = pose_error(pose, goal)
    assert d == pytest.approx(0.005, rel=1e-9)
    assert a == pytest.approx(math.radians(10), rel=1e-9)
    _, flipped = pose_error(goal @ transform(rot((0, 1, 0), math.pi - 1e-9)), goal)
    assert flipped == pytest.approx(math.pi, abs=1e-6)


def test_the_nearest_symmetric_goal_turns_about_the_si_normal_by_quarter_turns():
    rng = np.random.default_rng(9)
    goal = random_pose(rng)
    for true_turn in (0, 1, 2, 3):
        wobble = transform(rot(rng.normal(size=3), math.radians(20)))
        current = goal @ transform(rot((0, 0, 1), true_turn * math.pi / 2)) @ wobble
        best = nearest_symmetric_goal(goal, current)
        expected = goal @ transform(rot((0, 0, 1), true_turn * math.pi / 2))
        np.testing.assert_allclose(best, expected, atol=1e-12)
        # It is the closest of the four, and the SI normal and position are kept.
        angles = [
            pose_error(current, goal @ transform(rot((0, 0, 1), k * math.pi / 2)))[1]
            for k in range(4)
        ]
        assert pose_error(current, best)[1] == pytest.approx(min(angles))
        np.testing.assert_allclose(best[:3, 2], goal[:3, 2], atol=1e-12)
        np.testing.assert_allclose(best[:3, 3], goal[:3, 3])
    two_fold = nearest_symmetric_goal(goal, goal @ transform(rot((0, 0, 1), math.radians(80))), 2)
    np.testing.assert_allclose(two_fold, goal, atol=1e-12)


def test_without_a_task_the_joints_are_only_damped():
    tree = toy_arm()
    rng = np.random.default_rng(2)
    q, qdot = rng.normal(size=tree.n), rng.normal(size=tree.n)
    step = UnifiedImpedance(tree).step(
        ImpedanceInput(q, qdot, {"arm.E1": np.eye(4)}, (), null_nms_per_rad=3.0)
    )
    np.testing.assert_allclose(step.tau, -3.0 * qdot)
    assert step.potential_j == 0.0 and step.errors == {}


def test_a_task_on_a_latched_frame_is_skipped():
    tree = toy_mar()
    rng = np.random.default_rng(4)
    q, world, tasks = setup(tree, ("arm_1.E2",), ("arm_2.E2",), rng)
    qdot = rng.normal(size=tree.n)
    controller = UnifiedImpedance(tree)
    plain = controller.step(ImpedanceInput(q, qdot, world, tasks))
    extra = TaskFrame("arm_1.E2", random_pose(rng), GAINS)
    with_latched_task = controller.step(ImpedanceInput(q, qdot, world, [*tasks, extra]))
    np.testing.assert_allclose(with_latched_task.tau, plain.tau)
    assert set(with_latched_task.errors) == {"arm_2.E2"}


def test_the_errors_and_w_are_reported_per_task_frame():
    tree = toy_mar()
    rng = np.random.default_rng(6)
    q, world, tasks = setup(tree, ("E0",), ("arm_1.E2", "arm_2.E2"), rng)
    qdot = rng.normal(size=tree.n)
    step = UnifiedImpedance(tree, kinetic_energy=True).step(ImpedanceInput(q, qdot, world, tasks))
    _, poses = world_poses(tree, world, "E0", q, ("arm_1.E2", "arm_2.E2"))
    for task in tasks:
        d = np.linalg.norm(poses[task.frame][:3, 3] - task.goal[:3, 3])
        cos = (np.trace(task.goal[:3, :3].T @ poses[task.frame][:3, :3]) - 1) / 2
        assert step.errors[task.frame][0] == pytest.approx(d, rel=1e-12)
        assert step.errors[task.frame][1] == pytest.approx(math.acos(np.clip(cos, -1, 1)), abs=1e-7)
    velocity = np.r_[step.base_twist, qdot]
    ke = 0.5 * velocity @ tree.mass_matrix(q) @ velocity
    assert step.kinetic_energy_j == pytest.approx(ke, rel=1e-12)
    assert step.lyapunov_j == pytest.approx(ke + step.potential_j, rel=1e-12)
    assert step.constraint_rank == 6
    unknown = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks))
    assert unknown.lyapunov_j is None
    given = UnifiedImpedance(tree).step(ImpedanceInput(q, qdot, world, tasks, kinetic_energy_j=2.0))
    assert given.lyapunov_j == pytest.approx(2.0 + step.potential_j)


def test_nothing_latched_is_refused_with_the_rank():
    tree = toy_arm()
    q = np.zeros(tree.n)
    with pytest.raises(ConstraintRankError, match="rank 0 of 6") as error:
        UnifiedImpedance(tree).step(ImpedanceInput(q, q, {}, [TaskFrame("arm.E2", np.eye(4))]))
    assert error.value.rank == 0


def test_an_unknown_frame_is_refused_naming_the_valid_ones():
    tree = toy_arm()
    q = np.zeros(tree.n)
    controller = UnifiedImpedance(tree)
    with pytest.raises(UnknownFrameError, match=r"arm\.E1, arm\.E2") as error:
        controller.step(ImpedanceInput(q, q, {"arm.E3": np.eye(4)}))
    assert error.value.frame == "arm.E3"
    with pytest.raises(UnknownFrameError, match="task frame 'E0'"):
        controller.step(ImpedanceInput(q, q, {"arm.E1": np.eye(4)}, [TaskFrame("E0", np.eye(4))]))


def test_nan_and_wrong_shapes_are_refused():
    tree = toy_arm()
    q = np.zeros(tree.n)
    bad = q.copy()
    bad[3] = np.nan
    latched = {"arm.E1": np.eye(4)}
    with pytest.raises(DynamicsInputError, match=r"qdot .*entries \[3\]"):
        ImpedanceInput(q, bad, latched)
    with pytest.raises(DynamicsInputError, match=r"^q "):
        ImpedanceInput(bad, q, latched)
    nan_pose = np.eye(4)
    nan_pose[0, 3] = np.nan
    with pytest.raises(DynamicsInputError, match=r"(?s)latched\['arm\.E1'\].*finite"):
        ImpedanceInput(q, q, {"arm.E1": nan_pose})
    with pytest.raises(DynamicsInputError, match=r"latched\['arm\.E1'\].*4x4"):
        ImpedanceInput(q, q, {"arm.E1": "tile0"})
    with pytest.raises(DynamicsInputError, match=r"(?s)goal of arm\.E2.*finite"):
        TaskFrame("arm.E2", nan_pose)
    with pytest.raises(DynamicsInputError, match=r"(?s)not a rigid transform"):
        TaskFrame("arm.E2", np.diag([2.0, 1.0, 1.0, 1.0]))
    with pytest.raises(DynamicsInputError, match=r"shape \(3, 3\)"):
        TaskFrame("arm.E2", np.eye(3))
    with pytest.raises(DynamicsInputError, match="one value per joint of the tree \\(7\\)"):
        UnifiedImpedance(tree).step(ImpedanceInput(np.zeros(6), np.zeros(6), latched))
    with pytest.raises(DynamicsInputError, match="like q"):
        ImpedanceInput(q, np.zeros(6), latched)
    with pytest.raises(DynamicsInputError, match="k_n_per_m"):
        ImpedanceGains(k_n_per_m=0.0)
    with pytest.raises(DynamicsInputError, match="d_ns_per_m"):
        ImpedanceGains(d_ns_per_m=float("nan"))
    with pytest.raises(DynamicsInputError, match="fold"):
        nearest_symmetric_goal(np.eye(4), np.eye(4), fold=0)


def test_the_inputs_are_read_only_copies():
    q = np.zeros(7)
    pose = np.eye(4)
    inp = ImpedanceInput(q, q, {"arm.E1": pose}, [TaskFrame("arm.E2", pose)])
    q[0] = 1.0
    pose[0, 3] = 1.0
    assert inp.q[0] == 0.0 and inp.latched["arm.E1"][0, 3] == 0.0
    assert inp.tasks[0].goal[0, 3] == 0.0
    with pytest.raises(ValueError, match="read-only"):
        inp.q[0] = 2.0


@pytest.mark.slow
def test_closed_loop_on_mujoco_converges_and_w_never_rises():
    """mirror_arm, E1 welded to tile 0, gravity 0, 1 kHz: E2 to a goal 0.1 m / 10 deg away.

    W = ½ qvelᵀ M qvel (MuJoCo's M) + Φ (at MuJoCo's E2 site) must never rise by more than
    1% of its value in one step, and E2 must be inside 2 mm / 1 deg within 30 s.
    """
    rigs = pytest.importorskip("dynamics_mujoco")
    rig = rigs.ArmOnTiles("home")
    q, qdot = rig.begin()
    start = rig.site_pose("arm.E2")
    offset = transform(rot((1, 1, 0), math.radians(10)), (0.0, 0.0, -0.1))  # up, off the tile
    goal = start @ offset
    assert pose_error(start, goal) == pytest.approx((0.1, math.radians(10)))
    gains = GAINS  # the brief's: 100 N/m, 20 N m/rad, 200 N s/m, 10 N m s/rad, P 5
    tasks = (TaskFrame("arm.E2", goal, gains),)
    controller = UnifiedImpedance(rig.tree)
    latched = rig.latched_poses()
    w_before = None
    worst_rise = -math.inf
    converged_at = None
    while rig.time < 30.0:
        step = controller.step(ImpedanceInput(q, qdot, latched, tasks))
        e2 = rig.site_pose("arm.E2")
        w = rig.kinetic_energy() + potential_closed_form(e2, goal, gains)
        if w_before is not None:  # relative rise, with a floor for numerical noise at W ~ 0
            worst_rise = max(worst_rise, (w - w_before) / (w_before + 1e-7))
        w_before = w
        d, a = pose_error(e2, goal)
        if converged_at is None and d < 0.002 and a < math.radians(1.0):
            converged_at = rig.time
        if converged_at is not None and rig.time > converged_at + 1.0:
            break
        rig.finish(step.tau)
        q, qdot = rig.begin()
    assert converged_at is not None and converged_at < 30.0
    d, a = pose_error(rig.site_pose("arm.E2"), goal)
    assert d < 0.002 and a < math.radians(1.0)
    assert worst_rise < 0.01
    # The controller's own estimate of the base (from the latch) matches MuJoCo's base.
    base = rig.data.xpos[rig.m.base_body], rig.data.xmat[rig.m.base_body].reshape(3, 3)
    np.testing.assert_allclose(step.base_pose[:3, 3], base[0], atol=1e-4)
    np.testing.assert_allclose(step.base_pose[:3, :3], base[1], atol=1e-3)


@pytest.mark.parametrize("latched", [("a",), ("a", "b")])
def test_latched_frames_that_do_not_fix_the_base_are_refused_with_their_rank(latched):
    tree = RandomJacobians(7, ("a", "b", "c"), seed=1)
    rng = np.random.default_rng(8)
    basis = rng.normal(size=(6, 4))
    for frame in latched:  # T_b of rank 4: the same 2 base directions are free for both
        tree._jacs[frame][:, :6] = rng.normal(size=(6, 4)) @ np.linalg.pinv(basis)
    q, world, tasks = setup(tree, latched, ("c",), rng)
    with pytest.raises(ConstraintRankError, match="Ψ_b rank 4 of 6") as error:
        UnifiedImpedance(tree).step(ImpedanceInput(q, q, world, tasks))
    assert error.value.rank == 4 and error.value.latched == latched
