"""Tests of the kinematic plant: several simulated limbs on one base, gravity in the world."""

import math

import numpy as np
import pytest

from limbtree.kinematics import Pose
from limbtree.robots import builtin_robot_dir, load_robot, make_plant
from limbtree.robots.errors import UnknownLimbError
from limbtree.robots.faulty import FaultyPlant
from limbtree.robots.kinematic import KinematicPlant
from limbtree.robots.sim import SIM_OPTION_LIMITS, SimConfig, SimConfigError, SimulatedLimb
from limbtree.transport.driver import CommandMode, DriverError, Health
from limbtree.transport.faults import SLOWDOWN_FACTOR_HIGH, SLOWDOWN_FACTOR_LOW, ScheduledFault

SHIPPED = [builtin_robot_dir()]
ZERO = load_robot("moonbot_zero", SHIPPED)
HEAVY = load_robot("heavy_limb", SHIPPED)
UPSIDE_DOWN = Pose(quaternion=(1.0, 0.0, 0.0, 0.0))  # 180 degrees about x


def run(plant, seconds, dt=0.01):
    start = plant.time
    for k in range(1, round(seconds / dt) + 1):
        plant.advance(start + k * dt)


def test_the_quadruped_is_one_plant_with_its_four_legs_on_one_base():
    base = Pose((0.0, 1.5, 0.0), (0.0, 0.0, 1.0, 0.0))
    plant = KinematicPlant(ZERO, base=base)
    description = plant.describe()
    assert description.kind == "kinematic"
    assert description.limb_names == ("leg_0", "leg_1", "leg_2", "leg_3")
    assert np.allclose(description.base_pose, base.as_array())
    assert not description.floating_base
    plant.advance(0.1)
    state = plant.state()
    assert set(state.limbs) == set(description.limb_names)
    assert np.allclose(state.base.pose, base.as_array())
    assert all(limb.t == 0.1 for limb in state.limbs.values())


def test_commanding_one_leg_moves_that_leg_only():
    plant = KinematicPlant(ZERO)
    before = {name: plant.limb_state(name).q for name in plant.describe().limb_names}
    target = (np.array(before["leg_2"]) + 0.3).tolist()
    plant.command("leg_2", CommandMode.JOINT_POSITION, {"q": target})
    run(plant, 0.5)
    assert plant.limb_state("leg_2").q == pytest.approx(target)
    for name in ("leg_0", "leg_1", "leg_3"):
        assert plant.limb_state(name).q == before[name]


def test_each_limb_of_a_plant_moves_exactly_as_the_same_limb_simulated_alone():
    config = SimConfig(joint_noise_rad=0.001, backlash_rad=0.05, latency_s=0.02)
    plant = KinematicPlant(ZERO, seed=7, config=config)
    alone = SimulatedLimb(ZERO, "leg_1", seed=8, config=config)
    q = (np.array(alone.state().q) + 0.4).tolist()
    plant.command("leg_1", CommandMode.JOINT_POSITION, {"q": q})
    alone.command(CommandMode.JOINT_POSITION, {"q": q})
    for k in range(1, 40):
        plant.advance(k * 0.01)
        alone.advance(k * 0.01)
        assert plant.limb_state("leg_1") == alone.state()


def test_an_unknown_limb_is_refused_naming_the_robots_limbs():
    with pytest.raises(UnknownLimbError, match="leg_0"):
        KinematicPlant(ZERO, ["leg_9"])
    plant = KinematicPlant(ZERO, ["leg_0"])
    with pytest.raises(DriverError, match="its limbs are leg_0"):
        plant.limb_state("leg_1")


def sag_in_base(base):
    limb = SimulatedLimb(HEAVY, config=SimConfig(flex=0.1), base=base)
    limb.advance(0.0)
    rigid = limb.tracker.chain.fk(limb.true_joint_positions())
    return limb.true_ee_pose().position - rigid.position


def test_an_upside_down_limb_sags_the_other_way_in_its_own_frame_and_the_same_in_the_world():
    upright = sag_in_base(Pose())
    flipped = sag_in_base(UPSIDE_DOWN)
    assert upright[2] < -1e-4  # down, in its own frame and in the world
    assert flipped[2] > 1e-4  # up in its own frame ...
    assert (UPSIDE_DOWN.rotation @ flipped)[2] < -1e-4  # ... which is down in the world
    assert np.linalg.norm(flipped) == pytest.approx(np.linalg.norm(upright), rel=1e-6)


def test_a_tilted_base_sags_along_the_world_gravity():
    tilt = Pose(quaternion=(0.0, math.sin(math.pi / 8), 0.0, math.cos(math.pi / 8)))
    sag_world = tilt.rotation @ sag_in_base(tilt)
    assert np.linalg.norm(sag_world[:2]) < 1e-9
    assert sag_world[2] < 0.0


def test_the_simulated_limb_refuses_scheduled_faults_they_are_the_decorators():
    with pytest.raises(SimConfigError, match="FaultyPlant"):
        SimulatedLimb(HEAVY, config=SimConfig(faults=(ScheduledFault(1.0, "power_off"),)))


def test_make_plant_runs_the_configs_scheduled_faults_on_every_limb():
    schedule = (ScheduledFault(0.05, "power_off", {"duration_s": 0.1}),)
    plant = make_plant("moonbot_zero", config=SimConfig(faults=schedule))
    assert isinstance(plant, FaultyPlant)
    run(plant, 0.1)
    assert all(
        plant.limb_state(name).health & Health.POWER_OFF for name in plant.describe().limb_names
    )
    run(plant, 0.1)
    assert not any(
        plant.limb_state(name).health & Health.POWER_OFF for name in plant.describe().limb_names
    )


def test_a_fault_on_one_leg_leaves_the_others_alone():
    plant = make_plant("moonbot_zero")
    plant.fault("leg_3", "disassembly", {})
    assert not plant.available("leg_3")
    assert all(plant.available(name) for name in ("leg_0", "leg_1", "leg_2"))
    run(plant, 0.05)
    assert plant.limb_state("leg_3").health & Health.DISASSEMBLED
    assert plant.limb_state("leg_0").detail["faults"] == []


def test_a_hardware_driver_plant_serves_one_limb():
    from limbtree.robots.factory import DriverOptionError

    with pytest.raises(DriverOptionError, match="give --limb"):
        make_plant("moonbot_zero", driver="fake_hardware:LoopbackArm")


@pytest.mark.parametrize("name", sorted(SIM_OPTION_LIMITS))
def test_the_simulator_accepts_exactly_the_option_limits_it_exposes(name):
    limit = SIM_OPTION_LIMITS[name]
    low_ok = limit.low + (1e-3 if limit.low_open else 0.0)
    SimConfig(**{name: low_ok})
    with pytest.raises(SimConfigError, match=name):
        SimConfig(**{name: limit.low if limit.low_open else limit.low - 1e-3})
    if limit.high is not None:
        SimConfig(**{name: limit.high - 1e-3})
        with pytest.raises(SimConfigError, match=name):
            SimConfig(**{name: limit.high})


def test_the_slowdown_factor_limits_are_what_the_fault_decorator_accepts():
    plant = make_plant("heavy_limb")
    for factor in (SLOWDOWN_FACTOR_LOW, SLOWDOWN_FACTOR_HIGH):
        with pytest.raises(DriverError, match="factor"):
            plant.fault("arm", "slowdown", {"factor": factor})
    plant.fault("arm", "slowdown", {"factor": (SLOWDOWN_FACTOR_LOW + SLOWDOWN_FACTOR_HIGH) / 2})
