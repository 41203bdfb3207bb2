"""The HubRobo v3.2 description of seed 004 against ClimbLab's figures.

The figures are ClimbLab's (``ini_HubRobo_v3_2_grip_to_palm_LP.m`` and
``config_robot_param.m``; wave 2 brief, section 2.5), written here by hand. The description
is checked through two independent forward kinematics: roboticstoolbox's (KinematicChain)
and MuJoCo's (the compiled model).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from limbtree.kinematics.chain import POSITION_MASK
from limbtree.kinematics.pose import Pose
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.trees.cli import main

SHIPPED = [builtin_robot_dir()]
LEGS = ("leg_0", "leg_1", "leg_2", "leg_3")
# ClimbLab: hips at (+-54, +-54) mm, legs facing 45, 135, 225, 315 deg, in this order.
HIP_SIGNS = {"leg_0": (1, 1), "leg_1": (-1, 1), "leg_2": (-1, -1), "leg_3": (1, -1)}
HIP_M = 0.054
COXA_OUT_M, COXA_UP_M = 0.028448, 0.017529
FEMUR_M, TIBIA_TO_PALM_M = 0.10715, 0.1463
# The nominal stance: feet at (+-140, +-140) mm, base 110 mm above them.
STANCE_XY_M, STANCE_HEIGHT_M = 0.14, 0.11
# ClimbLab v3.2 masses [kg]: base; coxa, femur, tibia + gripper of each leg.
BASE_KG = 0.4417225774
LEG_KG = (0.205573522155681, 0.0273056120035877, 0.111252512707499 + 0.10891073026)
TOTAL_KG = 2.254


ROBOT = load_robot("hubrobo", SHIPPED)  # one spec: each builds its chains once


def spec():
    return ROBOT


def stance_foot(leg: str) -> np.ndarray:
    sx, sy = HIP_SIGNS[leg]
    return np.array([sx * STANCE_XY_M, sy * STANCE_XY_M, -STANCE_HEIGHT_M])


def test_hubrobo_is_a_floating_quadruped_with_a_gripping_palm_on_each_leg():
    robot = spec()
    assert robot.floating
    assert robot.base_link == "base_link"
    assert robot.limb_names == LEGS
    for leg in robot.limbs:
        assert leg.n == 3
        assert leg.ik_mask == POSITION_MASK
        assert leg.ee_link == f"{leg.name}_palm"
        assert leg.grippers == (f"{leg.name}_palm",)
        assert dict(leg.interfaces) == {"palm": f"{leg.name}_palm"}
        assert {"home", "safe", "slumped"} <= set(leg.postures)
    assert dict(robot.interface_links) == {f"{leg}.palm": f"{leg}_palm" for leg in LEGS}
    assert "ClimbLab" in robot.paper and "guess" in robot.notes


def test_joint_limits_are_climblabs():
    limits_deg = [(-60.0, 60.0), (-60.0, 90.0), (-160.0, 0.0)]
    for leg in spec().limbs:
        got = [(math.degrees(j.lower), math.degrees(j.upper)) for j in leg.joints]
        np.testing.assert_allclose(got, limits_deg, atol=1e-9)


def test_total_mass_is_2_254_kg_as_climblab_sums_it():
    robot = spec()
    assert robot.mass_kg == pytest.approx(TOTAL_KG, abs=5e-4)
    assert robot.mass_kg == pytest.approx(BASE_KG + 4 * sum(LEG_KG), abs=1e-6)
    for leg in robot.limbs:
        assert leg.mass_kg == pytest.approx(sum(LEG_KG), abs=1e-6)


@pytest.mark.parametrize("leg", LEGS)
def test_home_puts_each_foot_at_the_nominal_stance(leg):
    robot = spec()
    foot = robot.chain(leg).fk(robot.limb(leg).posture("home")).position
    np.testing.assert_allclose(foot, stance_foot(leg), atol=2e-3)


@pytest.mark.parametrize("leg", LEGS)
def test_a_straight_leg_has_climblabs_link_lengths(leg):
    # q = 0: the leg straight out along its hip's diagonal, the coxa raising it 17.5 mm.
    robot = spec()
    sx, sy = HIP_SIGNS[leg]
    out = np.array([sx, sy, 0.0]) / math.sqrt(2.0)
    hip = np.array([sx * HIP_M, sy * HIP_M, 0.0])
    reach = COXA_OUT_M + FEMUR_M + TIBIA_TO_PALM_M
    expected = hip + reach * out + np.array([0.0, 0.0, COXA_UP_M])
    np.testing.assert_allclose(robot.chain(leg).fk(np.zeros(3)).position, expected, atol=1e-9)


def test_positive_pitch_and_knee_lift_a_straight_leg():
    chain = spec().chain("leg_0")
    z = chain.fk(np.zeros(3)).position[2]
    lifted = chain.fk(np.array([0.0, 0.1, 0.0])).position[2]
    assert lifted - z == pytest.approx((FEMUR_M + TIBIA_TO_PALM_M) * math.sin(0.1), abs=1e-12)
    lifted = chain.fk(np.array([0.0, 0.0, 0.1])).position[2]
    assert lifted - z == pytest.approx(TIBIA_TO_PALM_M * math.sin(0.1), abs=1e-12)


def test_home_is_inside_the_limits_and_well_conditioned():
    # wave 2 brief, section 2.4: sqrt(det(J_v J_v^T)) at the stance is 1.72e-3 to 1.91e-3 m^3
    robot = spec()
    for leg in robot.limbs:
        home = leg.posture("home")
        assert np.all(home >= leg.lower) and np.all(home <= leg.upper)
        assert 1.7e-3 < robot.chain(leg.name).manipulability(home) < 1.95e-3


def test_mujoco_agrees_on_the_stance_masses_and_hips():
    mujoco = pytest.importorskip("mujoco")
    from limbtree.robots.mujoco_model import build_model

    robot = spec()
    m = build_model(robot, base_pose_world=Pose((0.0, 0.0, 0.0)), floating=True)
    model = m.model
    data = mujoco.MjData(model)
    for leg in robot.limbs:
        data.qpos[m.limb_qpos[leg.name]] = leg.posture("home")
    mujoco.mj_forward(model, data)
    assert float(model.body_mass.sum()) == pytest.approx(TOTAL_KG, abs=5e-4)
    assert float(model.body_mass[m.base_body]) == pytest.approx(BASE_KG, abs=1e-9)
    for leg in LEGS:
        palm = data.site_xpos[m.frame_site[f"{leg}.palm"]]
        np.testing.assert_allclose(palm, stance_foot(leg), atol=2e-3)
        sx, sy = HIP_SIGNS[leg]
        coxa = data.xpos[model.body(f"{leg}_coxa").id]
        np.testing.assert_allclose(coxa, [sx * HIP_M, sy * HIP_M, 0.0], atol=1e-12)
        masses = [
            float(model.body_mass[model.body(f"{leg}_{part}").id])
            for part in ("coxa", "femur", "tibia")
        ]
        np.testing.assert_allclose(masses, LEG_KG, atol=1e-9)


def test_limbtree_robots_lists_hubrobo(capsys):
    assert main(["robots", "hubrobo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("hubrobo - HubRobo v3.2")
    for leg in LEGS:
        assert f"limb {leg}" in out
        assert f"{leg}_knee" in out
    assert main(["robots"]) == 0
    assert "hubrobo - " in capsys.readouterr().out
    assert main(["robots", "hubrobo", "hubrobo"]) == 0  # (listed once, as asked for once)
    assert capsys.readouterr().out == out
