"""Tests of the plant interface (transport/plant.py) and the one definition of faults."""

import pytest
from fake_hardware import LoopbackArm

from limbtree.errors import LimbtreeError
from limbtree.robots import builtin_robot_dir, load_robot
from limbtree.robots.sim import SimulatedLimb
from limbtree.transport import schema
from limbtree.transport.driver import CommandMode, DriverError
from limbtree.transport.faults import FaultKind, FaultScheduleError, ScheduledFault
from limbtree.transport.plant import (
    BaseState,
    DriverPlant,
    PlantDescription,
    PlantLimb,
    PlantLimbDriver,
    PlantState,
)

HEAVY = load_robot("heavy_limb", [builtin_robot_dir()])


def test_driver_error_derives_from_the_package_root_exception():
    assert issubclass(DriverError, LimbtreeError)


def test_the_wire_schema_names_the_one_fault_kind_enum():
    assert schema.FaultKind is FaultKind


def test_a_scheduled_fault_refuses_a_time_that_is_not_finite():
    with pytest.raises(FaultScheduleError, match=r"faults\.at_s"):
        ScheduledFault(float("nan"), "power_off")


def test_a_driver_is_a_one_limb_plant_with_a_fixed_base():
    pose = (1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0)
    plant = DriverPlant(SimulatedLimb(HEAVY), "arm", pose)
    description = plant.describe()
    assert description.limb_names == ("arm",)
    assert description.base_pose == pose
    assert not description.floating_base
    plant.advance(0.5)
    state = plant.state()
    assert isinstance(state, PlantState)
    assert state.t == 0.5
    assert state.base == BaseState(pose)
    assert state.limbs["arm"].t == 0.5


def test_an_unknown_limb_is_refused_naming_the_plants_limbs():
    plant = DriverPlant(SimulatedLimb(HEAVY), "arm")
    with pytest.raises(DriverError, match=r"no limb 'leg'.*arm") as info:
        plant.command("leg", CommandMode.HOLD, {})
    assert info.value.code == "bad_value"


def test_a_hardware_driver_plant_refuses_faults_as_not_simulated():
    plant = DriverPlant(LoopbackArm("light_limb"), "arm")
    with pytest.raises(DriverError) as info:
        plant.fault("arm", "power_off", {})
    assert info.value.code == "not_simulated"


def test_a_plant_description_refuses_a_limb_named_twice():
    limb = PlantLimb("arm", SimulatedLimb(HEAVY).describe())
    with pytest.raises(ValueError, match="twice"):
        PlantDescription("heavy_limb", "kinematic", (limb, limb))


def test_one_limb_of_a_plant_is_a_limb_driver():
    plant = DriverPlant(SimulatedLimb(HEAVY), "arm")
    limb = PlantLimbDriver(plant, "arm")
    limb.advance(0.25)
    assert limb.time == 0.25
    assert limb.state().t == 0.25
    assert limb.describe().robot == "heavy_limb"
    assert limb.available
