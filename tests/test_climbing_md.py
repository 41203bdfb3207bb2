"""Momentum distribution (seed 004 eqs. 3-6): α, the base twist of eq. 4, the supporting legs'
rates, and a swing planned with it. The momentum is checked with the floating tree's momentum
matrix (itself checked against MuJoCo in test_floating.py) and the feet with its frame
Jacobians, never with the functions under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from climbing_robot import climber
from scipy.linalg import expm
from scipy.spatial.transform import Rotation

from limbtree.skills.climbing import (
    AlphaLimits,
    BezierSwing,
    ClimbingInputError,
    CubicSwing,
    base_velocity,
    distribute_momentum,
    distribution_factor,
    integrate_pose,
    manipulability,
    plan_swing_motion,
    support_rates,
)

SWING = "leg_1"


def posture(seed=0, spread=0.15):
    """Every joint near the stance, perturbed."""
    robot = climber()
    return robot.q + np.random.default_rng(seed).uniform(-spread, spread, robot.tree.n)


def foot_velocities(q, base_twist, joint_rates):
    """Each foot's linear velocity (base axes) from the tree's frame Jacobians."""
    robot = climber()
    poses, jacobians = robot.tree.frame_poses_and_jacobians(tuple(robot.feet.values()), q)
    velocity = np.concatenate([base_twist, joint_rates])
    return {leg: poses[i][:3, :3] @ jacobians[i][:3] @ velocity for i, leg in enumerate(robot.feet)}


def test_alpha_is_eq_6_clamped_to_0_1():
    limits = AlphaLimits()  # 1.2e-3 and 2.5e-3 m^3
    assert distribution_factor([1.0e-3, 3e-3]) == 0.0  # min w below w_min
    assert distribution_factor([2.6e-3, 3e-3]) == 1.0  # above w_max
    assert distribution_factor([1.85e-3, 2.2e-3]) == pytest.approx(0.5)
    assert distribution_factor(1.2e-3 + 0.25 * 1.3e-3, limits) == pytest.approx(0.25)
    with pytest.raises(ClimbingInputError, match="w_max_m3"):
        AlphaLimits(2e-3, 1e-3)
    with pytest.raises(ClimbingInputError, match="manipulabilities"):
        distribution_factor([])


def test_manipulability_is_eq_5_and_hubrobos_stance_is_inside_the_alpha_range():
    robot = climber()
    jacobian = robot.legs["leg_0"].jacobian(robot.home)[0]
    w = manipulability(jacobian)
    assert w == pytest.approx(abs(np.linalg.det(jacobian)), rel=1e-12)  # square J: |det J|
    # rtb's own Jacobian of the same leg (an independent path)
    assert w == pytest.approx(robot.spec.chain("leg_0").manipulability(robot.home), rel=1e-9)
    if robot.name == "hubrobo":  # the wave-2 brief measured 1.72 to 1.91e-3 m^3
        assert 1.7e-3 < w < 1.95e-3


@pytest.mark.parametrize("seed", range(4))
def test_eq_4_with_alpha_1_leaves_the_robot_without_momentum(seed):
    robot = climber()
    q = posture(seed)
    rates = np.random.default_rng(10 + seed).normal(0.0, 0.5, 3)
    result = distribute_momentum(robot.tree, q, robot.feet, swing_rates={SWING: rates}, alpha=1.0)
    total = robot.tree.momentum_matrix(q) @ np.concatenate([result.base_twist, result.joint_rates])
    swing_columns = robot.tree.limb_slice(SWING)
    alone = robot.tree.momentum_matrix(q)[:, 6 + swing_columns.start : 6 + swing_columns.stop]
    assert np.linalg.norm(alone @ rates) > 1e-3  # the swing alone carries momentum
    np.testing.assert_allclose(total, 0.0, atol=1e-13)
    np.testing.assert_allclose(result.joint_rates[swing_columns], rates)
    # the supporting feet stay still; the base moves
    feet = foot_velocities(q, result.base_twist, result.joint_rates)
    for leg in robot.feet:
        if leg != SWING:
            np.testing.assert_allclose(feet[leg], 0.0, atol=1e-14)
    assert np.linalg.norm(result.base_twist) > 1e-3


def test_alpha_scales_the_momentum_the_swing_leaves_in_the_robot():
    robot = climber()
    q = posture(5)
    rates = {SWING: np.array([0.3, -0.4, 0.6])}
    matrix = robot.tree.momentum_matrix(q)
    for alpha in (0.0, 0.3, 0.8):
        result = distribute_momentum(robot.tree, q, robot.feet, swing_rates=rates, alpha=alpha)
        total = matrix @ np.concatenate([result.base_twist, result.joint_rates])
        np.testing.assert_allclose(total, (1 - alpha) * result.swing_momentum, atol=1e-13)
    still = distribute_momentum(robot.tree, q, robot.feet, swing_rates=rates, alpha=0.0)
    np.testing.assert_allclose(still.base_twist, 0.0)


def test_base_velocity_and_support_rates_are_eq_4_term_by_term():
    robot = climber()
    q = posture(2)
    rates = np.array([0.2, 0.5, -0.3])
    result = distribute_momentum(robot.tree, q, robot.feet, swing_rates={SWING: rates}, alpha=0.7)
    matrix = robot.tree.momentum_matrix(q)
    poses, jacobians = robot.tree.frame_poses_and_jacobians(tuple(robot.feet.values()), q)
    support, swing = [], []
    for i, leg in enumerate(robot.feet):
        columns = robot.tree.limb_slice(leg)
        block = slice(6 + columns.start, 6 + columns.stop)
        linear = poses[i][:3, :3] @ jacobians[i][:3]
        if leg == SWING:
            swing.append((matrix[:, block], rates))
        else:
            support.append((matrix[:, block], linear[:, :6], linear[:, block]))
            np.testing.assert_allclose(
                support_rates(linear[:, :6], linear[:, block], result.base_twist),
                result.joint_rates[columns],
                atol=1e-12,
            )
    twist = base_velocity(matrix[:, :6], swing, support, 0.7)
    np.testing.assert_allclose(twist, result.base_twist, atol=1e-12)


def test_alpha_follows_the_legs_manipulability_when_not_given():
    robot = climber()
    q = posture(4, spread=0.05)
    result = distribute_momentum(robot.tree, q, robot.feet, swing_rates={SWING: np.ones(3) * 0.1})
    w = [
        manipulability(robot.legs[leg].jacobian(q[robot.legs[leg].columns])[0])
        for leg in robot.legs
    ]
    np.testing.assert_allclose(sorted(result.manipulability.values()), sorted(w), rtol=1e-9)
    assert result.alpha == pytest.approx(distribution_factor(w))


def test_a_foot_velocity_is_met_in_the_world_while_the_base_moves():
    robot = climber()
    q = posture(6)
    wanted = np.array([0.04, 0.0, 0.03])
    result = distribute_momentum(
        robot.tree, q, robot.feet, swing_foot_velocities={SWING: wanted}, alpha=1.0
    )
    feet = foot_velocities(q, result.base_twist, result.joint_rates)
    np.testing.assert_allclose(feet[SWING], wanted, atol=1e-13)
    total = robot.tree.momentum_matrix(q) @ np.concatenate([result.base_twist, result.joint_rates])
    np.testing.assert_allclose(total, 0.0, atol=1e-13)


def test_the_swing_must_be_given_once_and_leave_a_supporting_leg():
    robot = climber()
    with pytest.raises(ClimbingInputError, match="exactly one"):
        distribute_momentum(robot.tree, robot.q, robot.feet)
    with pytest.raises(ClimbingInputError, match="supporting"):
        distribute_momentum(
            robot.tree, robot.q, robot.feet, swing_rates={leg: np.zeros(3) for leg in robot.feet}
        )
    with pytest.raises(ClimbingInputError, match="alpha"):
        distribute_momentum(
            robot.tree, robot.q, robot.feet, swing_rates={SWING: np.zeros(3)}, alpha=2
        )


def test_integrate_pose_is_the_exponential_of_the_body_twist():
    g = np.eye(4)
    g[:3, :3] = Rotation.from_rotvec([0.1, -0.2, 0.3]).as_matrix()
    g[:3, 3] = [0.1, 0.2, 0.3]
    for twist in ([0.1, -0.2, 0.05, 0.4, 0.1, -0.3], [0.1, 0.0, 0.0, 0.0, 0.0, 1e-9]):
        v, w = np.array(twist[:3]), np.array(twist[3:])
        hat = np.zeros((4, 4))
        hat[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
        hat[:3, 3] = v
        np.testing.assert_allclose(integrate_pose(g, twist, 0.7), g @ expm(hat * 0.7), atol=1e-14)


@pytest.fixture(scope="module")
def planned():
    robot = climber()
    start = robot.footholds[SWING]
    swing = BezierSwing.through_apex(start, start + [0.08, 0.0, 0.0], 1.75, 0.04)
    motion = plan_swing_motion(
        robot.tree,
        robot.legs,
        robot.q,
        robot.base,
        robot.footholds,
        SWING,
        swing,
        alpha=1.0,
        rate_hz=200.0,
    )
    return swing, motion


def test_a_swing_planned_with_alpha_1_conserves_momentum_along_the_way(planned):
    robot = climber()
    _, motion = planned
    # the plan's own velocities: zero momentum by eq. 4
    np.testing.assert_allclose(motion.momentum, 0.0, atol=1e-12)
    # its poses and joints, differentiated: the momentum they carry is ~0 too, far below the
    # swing leg's own (what it would be with the base held)
    dt = motion.t[1] - motion.t[0]
    rates = np.gradient(motion.q, dt, axis=0)
    worst = 0.0
    for k in range(1, len(motion.t) - 1):
        before, after, now = (
            motion.base_poses[k - 1],
            motion.base_poses[k + 1],
            motion.base_poses[k],
        )
        v = now[:3, :3].T @ (after[:3, 3] - before[:3, 3]) / (2 * dt)
        w = Rotation.from_matrix(before[:3, :3].T @ after[:3, :3]).as_rotvec() / (2 * dt)
        total = robot.tree.momentum_matrix(motion.q[k]) @ np.concatenate([v, w, rates[k]])
        worst = max(worst, float(np.abs(total).max()))
    peak = float(np.abs(motion.swing_momentum).max())
    assert peak > 5e-3
    assert worst < 0.01 * peak
    assert float(np.linalg.norm(motion.base_poses[-1][:3, 3] - robot.base[:3, 3])) > 1e-3


def test_a_planned_swing_keeps_the_supporting_feet_and_follows_the_path(planned):
    robot = climber()
    swing, motion = planned
    path = swing.evaluate(motion.t).position
    for k in range(0, len(motion.t), 25):
        base = motion.base_poses[k]
        for leg, model in robot.legs.items():
            full = motion.q[k]
            foot = base[:3, :3] @ robot.tree.frame_pose(model.foot_frame, full)[:3, 3] + base[:3, 3]
            target = path[k] if leg == SWING else robot.footholds[leg]
            np.testing.assert_allclose(foot, target, atol=1e-9)
    assert motion.min_reach > 0


def test_without_distribution_the_base_stays_put():
    robot = climber()
    start = robot.footholds[SWING]
    swing = CubicSwing.between(start, start + [0.08, 0.0, 0.0], 1.75, 0.04)
    motion = plan_swing_motion(
        robot.tree,
        robot.legs,
        robot.q,
        robot.base,
        robot.footholds,
        SWING,
        swing,
        distribute=False,
        rate_hz=40.0,
    )
    np.testing.assert_allclose(
        motion.base_poses, np.broadcast_to(robot.base, motion.base_poses.shape)
    )
    np.testing.assert_allclose(motion.alpha, 0.0)
    np.testing.assert_allclose(motion.momentum, motion.swing_momentum, atol=1e-15)
    assert math.isclose(motion.t[-1], 1.75)


@pytest.mark.parametrize("alpha", [None, 0.3])
def test_the_planned_swing_is_eq_4_sample_by_sample_integrated_by_explicit_euler(alpha):
    # the planner solves all samples at once (a fixed-point iteration over the base poses);
    # here each sample is solved on its own with distribute_momentum at the planned posture
    # and the poses are integrated one after the other, as the plain sequential method does
    robot = climber()
    start = robot.footholds[SWING]
    swing = BezierSwing.through_apex(start, start + [0.08, 0.01, 0.01], 1.75, 0.04)
    motion = plan_swing_motion(
        robot.tree, robot.legs, robot.q, robot.base, robot.footholds, SWING, swing, alpha=alpha
    )
    path = swing.evaluate(motion.t)
    feet = {leg: model.foot_frame for leg, model in robot.legs.items()}
    dt = motion.t[1] - motion.t[0]
    pose = robot.base.copy()
    for k in range(len(motion.t)):
        np.testing.assert_allclose(motion.base_poses[k], pose, atol=1e-9)
        one = distribute_momentum(
            robot.tree,
            motion.q[k],
            feet,
            swing_foot_velocities={SWING: pose[:3, :3].T @ path.velocity[k]},
            alpha=alpha,
        )
        np.testing.assert_allclose(motion.base_twists[k], one.base_twist, atol=1e-9)
        np.testing.assert_allclose(motion.joint_rates[k], one.joint_rates, atol=1e-8)
        np.testing.assert_allclose(motion.momentum[k], one.momentum, atol=1e-10)
        assert motion.alpha[k] == pytest.approx(one.alpha, abs=1e-12)
        pose = integrate_pose(pose, one.base_twist, dt)
    assert float(np.abs(motion.base_twists).max()) > 1e-3  # the base did move
