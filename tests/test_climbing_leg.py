"""PlanarLeg, the closed-form kinematics of a yaw-pitch-pitch leg, against the floating tree's
forward kinematics and frame Jacobians and against rtb's numeric IK."""

from __future__ import annotations

import numpy as np
import pytest
from climbing_robot import climber

from limbtree.kinematics import POSITION_MASK, Pose
from limbtree.robots import load_robot
from limbtree.robots.floating import floating_tree
from limbtree.skills.climbing import ClimbingInputError, LegGeometryError, PlanarLeg


def random_leg_joints(robot, leg, count, seed):
    """Joint vectors drawn uniformly inside the leg's limits."""
    lower, upper = robot.legs[leg].lower, robot.legs[leg].upper
    return np.random.default_rng(seed).uniform(lower, upper, size=(count, 3))


def tree_feet(robot, leg, qs):
    """Foot positions and linear Jacobians (base axes) from the floating tree."""
    columns = robot.tree.limb_slice(leg)
    positions, jacobians = [], []
    for q in qs:
        full = robot.q.copy()
        full[columns] = q
        poses, jac = robot.tree.frame_poses_and_jacobians((robot.feet[leg],), full)
        positions.append(poses[0][:3, 3])
        jacobians.append(poses[0][:3, :3] @ jac[0][:3, 6 + columns.start : 6 + columns.stop])
    return np.array(positions), np.array(jacobians)


@pytest.mark.parametrize("leg", ["leg_0", "leg_1", "leg_2", "leg_3"])
def test_closed_form_fk_and_jacobian_match_the_floating_tree(leg):
    robot = climber()
    qs = random_leg_joints(robot, leg, 30, seed=int(leg[-1]))
    positions, jacobians = tree_feet(robot, leg, qs)
    model = robot.legs[leg]
    np.testing.assert_allclose(model.fk(qs), positions, atol=1e-12)
    np.testing.assert_allclose(model.jacobian(qs), jacobians, atol=1e-12)


@pytest.mark.parametrize("leg", ["leg_0", "leg_2"])
def test_ik_returns_the_joints_on_the_references_knee_branch(leg):
    robot = climber()
    model = robot.legs[leg]
    qs = random_leg_joints(robot, leg, 200, seed=7)
    knee = np.sign(np.sin(model._beta3 - model._beta2 + model._s3 * qs[:, 2]))
    same = qs[knee == model.knee_sign]
    assert len(same) > 20
    solution = model.ik(model.fk(same))
    np.testing.assert_allclose(solution.q, same, atol=1e-9)
    assert solution.reachable and (solution.reach > 0).all()


def test_ik_agrees_with_rtbs_numeric_ik_near_the_stance():
    robot = climber()
    chain = robot.spec.chain("leg_1")
    model = robot.legs["leg_1"]
    rng = np.random.default_rng(3)
    targets = model.fk(robot.home)[0] + rng.uniform(-0.04, 0.04, size=(10, 3))
    solution = model.ik(targets)
    for target, q in zip(targets, solution.q, strict=True):
        numeric = chain.ik(Pose(target, (0, 0, 0, 1)), robot.home, mask=POSITION_MASK, tol=1e-14)
        assert numeric.success
        np.testing.assert_allclose(q, numeric.q, atol=1e-6)


def test_a_point_out_of_reach_has_a_negative_margin_and_the_nearest_stretched_leg():
    robot = climber()
    model = robot.legs["leg_0"]
    far = model.hip + 1.0 * np.array([1.0, 1.0, -0.2])
    solution = model.ik(far)
    assert solution.reach[0] < 0 and not solution.reachable
    reach_m = model.femur_m + model.tibia_m
    foot = model.fk(solution.q)[0]
    # stretched towards the target: the foot is on the segment from the knee joint to it
    assert np.linalg.norm(foot - far) > 0.5
    assert np.linalg.norm(foot - model.hip) < reach_m + 0.05


def test_joint_limit_margins_are_distances_to_both_limits():
    robot = climber()
    model = robot.legs["leg_0"]
    margins = model.limit_margins(robot.home)
    np.testing.assert_allclose(margins[0, :3], robot.home - model.lower)
    np.testing.assert_allclose(margins[0, 3:], model.upper - robot.home)


@pytest.mark.parametrize("seed", range(3))
def test_moonbot_zeros_legs_turn_the_other_way_and_still_match(seed):
    # moonbot_zero's pitch axes point the other way round from HubRobo's (positive pitch
    # lowers its leg): the closed form's signs must follow the axes
    spec = load_robot("moonbot_zero")
    tree = floating_tree(spec)
    limb = spec.limbs[seed]
    home = np.array(limb.postures["home"])
    model = PlanarLeg(
        tree, limb.name, f"{limb.name}.ee", lower=limb.lower, upper=limb.upper, reference=home
    )
    qs = np.random.default_rng(seed).uniform(limb.lower, limb.upper, size=(20, 3))
    columns = tree.limb_slice(limb.name)
    for q in qs:
        full = np.zeros(tree.n)
        full[columns] = q
        poses, jac = tree.frame_poses_and_jacobians((f"{limb.name}.ee",), full)
        np.testing.assert_allclose(model.fk(q)[0], poses[0][:3, 3], atol=1e-12)
        linear = poses[0][:3, :3] @ jac[0][:3, 6 + columns.start : 6 + columns.stop]
        np.testing.assert_allclose(model.jacobian(q)[0], linear, atol=1e-12)
    near = home + np.random.default_rng(seed).uniform(-0.2, 0.2, size=(20, 3))
    np.testing.assert_allclose(model.ik(model.fk(near)).q, near, atol=1e-9)


def test_a_seven_joint_arm_is_not_a_planar_leg():
    spec = load_robot("mirror_arm")
    tree = floating_tree(spec)
    limb = spec.limbs[0].name
    with pytest.raises(LegGeometryError, match="not 3"):
        PlanarLeg(tree, limb, tree.frames[0])


def test_bad_points_are_refused():
    model = climber().legs["leg_0"]
    with pytest.raises(ClimbingInputError, match="points"):
        model.ik([[np.nan, 0.0, 0.0]])
    with pytest.raises(ClimbingInputError, match="q"):
        model.fk([0.0, 0.0])
