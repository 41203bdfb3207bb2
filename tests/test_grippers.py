"""Tests of limbtree.robots.grippers: ClimbLab's spring-damper grippers and their detachment.

Every expected force is the closed form F = -K (x - x_c) - D x_dot with seed 004's
K = 4000 N/m and D = 1 N s/m, worked out by hand from the displacement.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from limbtree.errors import LimbtreeError
from limbtree.robots.grippers import (
    DAMPING_NS_PER_M,
    GRIP_FORCE_N,
    STIFFNESS_N_PER_M,
    Detachment,
    GripperError,
    GripperParams,
    GripperSet,
    GripperState,
)
from limbtree.robots.terrain import Terrain

K, D = 4000.0, 1.0
LEGS = ("leg_0", "leg_1")
FLAT = Terrain.flat(1.0, 0.01, height_m=0.02)  # ground at z = 0.02 m
STILL = np.zeros((2, 3))


def grippers(terrain: Terrain = FLAT, **params) -> GripperSet:
    return GripperSet(LEGS, terrain, GripperParams(**params))


def feet(a, b) -> np.ndarray:
    return np.array([a, b], dtype=float)


def stand(g: GripperSet, at: np.ndarray, t: float = 0.0):
    """Both palms on the ground at ``at``, supporting: both anchor there."""
    result = g.forces(at, STILL, [True, True], t=t)
    assert g.states == (GripperState.ANCHORED, GripperState.ANCHORED)
    return result


ON_GROUND = feet([0.1, 0.1, 0.02], [-0.1, 0.1, 0.02])


def test_seed_004s_constants_are_the_defaults():
    assert (STIFFNESS_N_PER_M, DAMPING_NS_PER_M, GRIP_FORCE_N) == (4000.0, 1.0, 0.9)
    params = GripperParams()
    assert (params.stiffness_n_per_m, params.damping_ns_per_m, params.grip_force_n) == (K, D, 0.9)


def test_palms_off_the_ground_are_released_and_feel_nothing():
    g = grippers()
    above = ON_GROUND + [0.0, 0.0, 0.01]
    forces, detached = g.forces(above, STILL + 0.1, [False, True], t=0.0)
    assert g.states == (GripperState.RELEASED, GripperState.RELEASED)
    assert not forces.any() and detached == ()
    assert np.isnan(g.anchors).all()


def test_a_palm_anchors_at_its_first_contact_point_on_the_terrain():
    g = grippers()
    # arriving 0.2 mm below the surface: anchored at the surface point above it
    arriving = feet([0.1, 0.1, 0.0198], [-0.1, 0.1, 0.03])
    forces, _ = g.forces(arriving, STILL, [False, False], t=0.0)
    assert g.states == (GripperState.ANCHORED, GripperState.RELEASED)
    np.testing.assert_allclose(g.anchors[0], [0.1, 0.1, 0.02], atol=1e-15)
    np.testing.assert_allclose(forces[0], [0.0, 0.0, K * 0.0002], atol=1e-12)  # pushed out
    # the anchor stays where the contact began
    g.forces(arriving + [0.003, 0.0, 0.0], STILL, [True, False], t=0.001)
    np.testing.assert_allclose(g.anchors[0], [0.1, 0.1, 0.02], atol=1e-15)


@given(
    st.lists(st.floats(-5e-4, 5e-4), min_size=3, max_size=3),
    st.lists(st.floats(-0.2, 0.2), min_size=3, max_size=3),
)
def test_an_anchored_palm_feels_the_spring_damper(displacement, velocity):
    g = grippers(grip_force_n=1e9)  # never detaches here
    stand(g, ON_GROUND)
    moved = ON_GROUND + [displacement, [0.0, 0.0, 0.0]]
    speeds = np.array([velocity, [0.0, 0.0, 0.0]])
    forces, _ = g.forces(moved, speeds, [True, True], t=0.001)
    expected = [-K * d - D * v for d, v in zip(displacement, velocity, strict=True)]
    np.testing.assert_allclose(forces[0], expected, atol=1e-12)
    np.testing.assert_allclose(forces[1], 0.0, atol=1e-12)


def test_stiffness_and_damping_are_the_ones_given():
    g = grippers(stiffness_n_per_m=100.0, damping_ns_per_m=3.0)
    stand(g, ON_GROUND)
    forces, _ = g.forces(
        ON_GROUND + [0.001, 0.0, -0.002], STILL + [0.0, 0.5, 0.0], [True, True], t=0
    )
    np.testing.assert_allclose(forces[0], [-0.1, -1.5, 0.2], atol=1e-12)


def test_pushing_harder_than_the_grip_force_does_not_detach():
    g = grippers()
    stand(g, ON_GROUND)
    # pressed 1 mm into the ground: 4 N, pushing (F . n > 0)
    forces, detached = g.forces(ON_GROUND - [0.0, 0.0, 0.001], STILL, [True, True], t=0.5)
    assert detached == ()
    assert g.states == (GripperState.ANCHORED, GripperState.ANCHORED)
    np.testing.assert_allclose(forces[:, 2], [4.0, 4.0], atol=1e-12)


def test_a_sideways_pull_along_the_ground_does_not_detach():
    g = grippers()
    stand(g, ON_GROUND)
    forces, detached = g.forces(ON_GROUND + [0.001, 0.0, 0.0], STILL, [True, True], t=0.5)
    assert detached == () and forces[0, 0] == pytest.approx(-4.0)


def test_pulling_past_0_9_n_detaches_a_supporting_gripper_and_records_it():
    g = grippers()
    stand(g, ON_GROUND)
    # 0.2 mm up: 0.8 N of pull, held
    forces, detached = g.forces(ON_GROUND + [0.0, 0.0, 0.0002], STILL, [True, True], t=1.0)
    assert detached == () and forces[0, 2] == pytest.approx(-0.8)
    # leg_0 0.25 mm up and moving up at 0.1 m/s: -1.0 - 0.1 = -1.1 N; leg_1 stays
    lifted = ON_GROUND + [[0.0, 0.0, 0.00025], [0.0, 0.0, 0.0]]
    velocity = np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 0.0]])
    forces, detached = g.forces(lifted, velocity, [True, True], t=1.25)
    assert len(detached) == 1
    record = detached[0]
    assert isinstance(record, Detachment)
    assert record.leg == "leg_0" and record.t_s == 1.25
    assert record.force_n == pytest.approx(1.1, abs=1e-12)
    np.testing.assert_allclose(record.force, [0.0, 0.0, -1.1], atol=1e-12)
    np.testing.assert_allclose(record.anchor, ON_GROUND[0], atol=1e-15)
    assert "leg_0" in str(record) and "1.100 N" in str(record)
    assert g.states == (GripperState.DETACHED, GripperState.ANCHORED)
    np.testing.assert_allclose(forces[0], 0.0)  # a torn-off gripper holds nothing
    assert g.detachments == (record,)
    assert g.state("leg_0") is GripperState.DETACHED


def test_the_grip_force_is_the_one_given():
    g = grippers(grip_force_n=3.2)  # HubRobo v2.2's
    stand(g, ON_GROUND)
    _, detached = g.forces(ON_GROUND + [0.0, 0.0, 0.0007], STILL, [True, True], t=0)
    assert detached == ()  # 2.8 N
    _, detached = g.forces(ON_GROUND + [0.0, 0.0, 0.0009], STILL, [True, True], t=0)
    assert len(detached) == 2  # 3.6 N


def test_a_leg_out_of_support_lets_go_instead_of_detaching():
    g = grippers()
    stand(g, ON_GROUND)
    forces, detached = g.forces(ON_GROUND + [0.0, 0.0, 0.001], STILL, [False, True], t=2.0)
    assert detached[0].leg == "leg_1"  # leg_1 still supports: torn off
    assert g.states == (GripperState.RELEASED, GripperState.DETACHED)
    assert not forces.any()


def test_a_detached_gripper_holds_nothing_until_its_leg_leaves_support():
    g = grippers()
    stand(g, ON_GROUND)
    g.forces(ON_GROUND + [0.0, 0.0, 0.001], STILL, [True, True], t=0.0)
    # still told to support, back on the ground and even pressed in: nothing
    forces, detached = g.forces(ON_GROUND - [0.0, 0.0, 0.001], STILL, [True, True], t=0.1)
    assert g.states == (GripperState.DETACHED, GripperState.DETACHED)
    assert not forces.any() and detached == ()
    # support ends: released
    g.forces(ON_GROUND + [0.0, 0.0, 0.01], STILL, [False, False], t=0.2)
    assert g.states == (GripperState.RELEASED, GripperState.RELEASED)
    assert len(g.detachments) == 2


def test_a_gripper_grips_again_at_a_new_anchor():
    g = grippers()
    stand(g, ON_GROUND)
    g.forces(ON_GROUND + [0.0, 0.0, 0.001], STILL, [True, False], t=0.0)  # leg_0 torn off
    g.forces(ON_GROUND + [0.0, 0.0, 0.02], STILL, [False, False], t=0.5)  # both swing up
    assert g.states == (GripperState.RELEASED, GripperState.RELEASED)
    # both come down 80 mm further on and grip there
    landed = ON_GROUND + [0.08, 0.0, 0.0]
    forces, detached = g.forces(landed, STILL, [True, True], t=1.0)
    assert g.states == (GripperState.ANCHORED, GripperState.ANCHORED)
    np.testing.assert_allclose(g.anchors, landed, atol=1e-15)
    assert not forces.any() and detached == ()
    forces, _ = g.forces(landed + [0.0, 0.0, 0.0001], STILL, [True, True], t=1.001)
    np.testing.assert_allclose(forces[:, 2], [-0.4, -0.4], atol=1e-12)


def test_a_supporting_gripper_grips_a_palm_just_above_the_ground_where_it_is():
    g = grippers()  # grip_reach_m = 1 mm
    hovering = ON_GROUND + [[0.0, 0.0, 0.0005], [0.0, 0.0, 0.002]]
    forces, detached = g.forces(hovering, STILL, [True, True], t=0.0)
    # 0.5 mm above: anchored at the palm itself (no preload); 2 mm above: closes on air
    assert g.states == (GripperState.ANCHORED, GripperState.RELEASED)
    np.testing.assert_allclose(g.anchors[0], hovering[0], atol=1e-15)
    assert not forces.any() and detached == ()


def test_pulling_is_judged_along_the_terrain_normal_at_the_anchor():
    # A 45 deg slope rising along x: n = (-1, 0, 1) / sqrt(2).
    x, _ = np.meshgrid(np.linspace(-0.5, 0.5, 101), np.linspace(-0.5, 0.5, 101))
    slope = Terrain(x.copy(), 0.01)
    g = GripperSet(("leg_0",), slope)
    palm = np.array([[0.1, 0.0, 0.1]])
    g.forces(palm, np.zeros((1, 3)), [True], t=0.0)
    # moved 0.5 mm along +x (into the slope): F = (-2, 0, 0), F . n = +1.41 > 0: pushing
    _, detached = g.forces(palm + [0.0005, 0.0, 0.0], np.zeros((1, 3)), [True], t=0.1)
    assert detached == ()
    # moved 0.5 mm along -x (off the slope): F = (+2, 0, 0), F . n < 0 though F_z = 0
    _, detached = g.forces(palm - [0.0005, 0.0, 0.0], np.zeros((1, 3)), [True], t=0.2)
    assert detached and detached[0].force_n == pytest.approx(2.0)


def test_a_palm_off_the_terrains_grid_has_no_ground_to_grip():
    # The 1 m grid spans -0.5..0.5 m; beyond it height() goes on flat, but the physics
    # plant's height field ends: a palm there once anchored on air and held the robot.
    g = grippers()
    off = feet([0.6, 0.1, 0.0], [0.1, 0.5, 0.02])  # 20 mm "below" the flat extension; on the edge
    forces, detached = g.forces(off, STILL, [True, True], t=0.0)
    assert g.states == (GripperState.RELEASED, GripperState.ANCHORED)
    assert not forces[0].any() and detached == ()


def test_an_initial_stance_off_the_terrains_grid_is_refused():
    g = grippers()
    with pytest.raises(GripperError, match=r"leg_0's palm at x = 600 mm, y = 100 mm is off "
                       r"the terrain \(x -500 to 500 mm, y -500 to 500 mm\).*size_mm"):  # fmt: skip
        g.anchor("leg_0", [0.6, 0.1, 0.02])
    assert g.states == (GripperState.RELEASED, GripperState.RELEASED)


def test_anchor_places_a_gripper_explicitly():
    g = grippers()
    g.anchor("leg_1", [0.0, 0.2, 0.02])
    assert g.states == (GripperState.RELEASED, GripperState.ANCHORED)
    forces, _ = g.forces(feet([0.1, 0.1, 0.5], [0.0, 0.2, 0.0201]), STILL, [False, True], t=0.0)
    np.testing.assert_allclose(forces[1], [0.0, 0.0, -0.4], atol=1e-12)


def test_the_arrays_returned_do_not_alias_the_state():
    g = grippers()
    stand(g, ON_GROUND)
    g.anchors[0, 0] = 99.0
    assert g.anchors[0, 0] == pytest.approx(0.1)
    record_force = g.forces(ON_GROUND + [0, 0, 0.001], STILL, [True, True], t=0).detached[0].force
    with pytest.raises(ValueError):
        record_force[0] = 1.0


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda g: g.forces(np.zeros((3, 3)), STILL, [True, True], t=0), "(2, 3) positions"),
        (lambda g: g.forces(ON_GROUND, np.zeros(3), [True, True], t=0), "(2, 3) positions"),
        (lambda g: g.forces(ON_GROUND, STILL, [True], t=0), "(2,) supporting"),
        (lambda g: g.forces(ON_GROUND * math.nan, STILL, [True, True], t=0), "finite"),
        (lambda g: g.forces(ON_GROUND, STILL, [True, True], t=math.inf), "finite time"),
        (lambda g: g.state("leg_9"), "legs: leg_0, leg_1"),
        (lambda g: g.anchor("leg_0", [0.0, 0.0]), "3 finite numbers"),
    ],
)
def test_bad_calls_say_what_is_wrong(call, words):
    with pytest.raises(GripperError) as info:
        call(grippers())
    assert words in str(info.value)
    assert isinstance(info.value, LimbtreeError)


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"stiffness_n_per_m": 0.0}, "stiffness_n_per_m must be a finite number > 0"),
        ({"damping_ns_per_m": -1.0}, "damping_ns_per_m must be a finite number >= 0"),
        ({"grip_force_n": math.nan}, "grip_force_n"),
        ({"grip_reach_m": -0.001}, "grip_reach_m"),
    ],
)
def test_bad_parameters_say_what_is_wrong(params, words):
    with pytest.raises(GripperError) as info:
        GripperParams(**params)
    assert words in str(info.value)


def test_legs_must_be_distinct_names_on_a_terrain():
    with pytest.raises(GripperError, match="distinct"):
        GripperSet(("a", "a"), FLAT)
    with pytest.raises(GripperError, match="distinct"):
        GripperSet((), FLAT)
    with pytest.raises(GripperError, match="must be a Terrain"):
        GripperSet(("a",), np.zeros((3, 3)))  # type: ignore[arg-type]
