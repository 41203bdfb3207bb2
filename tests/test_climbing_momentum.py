"""FloatingTree.momentum_matrices, the batched momentum matrix LRST scores swings with: equal
to momentum_matrix row by row (which test_floating.py checks against MuJoCo), its limb
columns alone, and the linear momentum equal to the mass times the centre of mass's velocity."""

from __future__ import annotations

import numpy as np
import pytest
from climbing_robot import climber

from limbtree.kinematics.errors import JointCountError
from limbtree.kinematics.floating import FloatingTreeError
from limbtree.robots import load_robot
from limbtree.robots.floating import floating_tree

ROBOTS = ("moonbot_zero", "mirror_mar", "mirror_arm")


@pytest.mark.parametrize("robot", ROBOTS)
def test_batched_momentum_matrices_equal_the_single_one_row_by_row(robot):
    tree = floating_tree(load_robot(robot))
    qs = np.random.default_rng(0).uniform(-2.0, 2.0, size=(12, tree.n))
    batched = tree.momentum_matrices(qs)
    for q, matrix in zip(qs, batched, strict=True):
        np.testing.assert_allclose(matrix, tree.momentum_matrix(q), atol=1e-12)
    for limb in tree.limbs:
        columns = tree.limb_slice(limb)
        np.testing.assert_allclose(
            tree.momentum_matrices(qs, limb=limb),
            batched[:, :, 6 + columns.start : 6 + columns.stop],
            atol=1e-12,
        )


def test_the_climbers_matrices_and_its_linear_momentum():
    robot = climber()
    tree = robot.tree
    rng = np.random.default_rng(1)
    qs = robot.q + rng.uniform(-0.3, 0.3, size=(6, tree.n))
    batched = tree.momentum_matrices(qs)
    for q, matrix in zip(qs, batched, strict=True):
        np.testing.assert_allclose(matrix, tree.momentum_matrix(q), atol=1e-12)
        # with the base held, P = m dc/dt: finite differences of the centre of mass
        rates = rng.normal(size=tree.n)
        h = 1e-6
        c_dot = (tree.center_of_mass(q + h * rates) - tree.center_of_mass(q - h * rates)) / (2 * h)
        np.testing.assert_allclose(matrix[:3, 6:] @ rates, tree.total_mass * c_dot, atol=1e-8)


def test_bad_joint_arrays_are_refused():
    tree = climber().tree
    with pytest.raises(JointCountError):
        tree.momentum_matrices(np.zeros((3, tree.n + 1)))
    with pytest.raises(FloatingTreeError, match="2-D"):
        tree.momentum_matrices(np.zeros(tree.n))
    with pytest.raises(FloatingTreeError, match="NaN"):
        tree.momentum_matrices(np.full((1, tree.n), np.nan))
    with pytest.raises(FloatingTreeError, match="no limb"):
        tree.momentum_matrices(np.zeros((1, tree.n)), limb="tail")
