"""Make the driver a limb agent serves, by name (``limbtree agent --driver``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from limbtree.robots.assembly import AssemblyLimb, WorldModule, world_from_json
from limbtree.robots.errors import RobotsError
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.transport.driver import LimbDriver

__all__ = ["DRIVERS", "UnknownDriverError", "make_driver", "world_from_json"]

#: The drivers :func:`make_driver` knows, by name.
DRIVERS: Final[tuple[str, ...]] = ("sim",)


class UnknownDriverError(RobotsError, LookupError):
    """:func:`make_driver` was asked for a driver it does not know.

    Attributes:
        driver: the name that was asked for.
        valid_drivers: the names it knows.
    """

    def __init__(self, driver: str) -> None:
        self.driver = driver
        self.valid_drivers = DRIVERS
        super().__init__(
            f"unknown driver {driver!r}; valid drivers: {', '.join(DRIVERS)} (a real limb "
            "needs its own HardwareDriver subclass, see docs/drivers.md)"
        )


def make_driver(
    robot: str,
    limb: str | None = None,
    *,
    driver: str = "sim",
    seed: int = 0,
    config: SimConfig | None = None,
    world: Sequence[WorldModule] | None = None,
) -> LimbDriver:
    """Make the driver of one limb of a registry robot.

    Args:
        robot: the robot's name (``limbtree robots`` lists them).
        limb: the limb's name; None for a robot with a single limb.
        driver: which driver: ``"sim"`` (:class:`~limbtree.robots.sim.SimulatedLimb`).
        seed: seed of the simulated limb's noise and IK restarts.
        config: the simulated limb's non-idealities and scheduled faults (default: ideal).
        world: modules placed in the limb's base frame (:func:`world_from_json` reads them
            from ``limbtree agent --world``): given, even empty, the simulated limb is an
            :class:`~limbtree.robots.assembly.AssemblyLimb` that can grasp them and publishes
            motion-capture observations; None: a plain
            :class:`~limbtree.robots.sim.SimulatedLimb`.

    Returns:
        The driver, ready for :meth:`~limbtree.transport.driver.LimbDriver.advance`.

    Raises:
        UnknownDriverError: for an unknown driver name; it lists the valid ones.
        limbtree.robots.errors.UnknownRobotError: for an unknown robot.
        limbtree.robots.errors.UnknownLimbError: for an unknown limb, or None on a robot
            with several limbs.
        limbtree.robots.assembly.WorldError: for an unknown module or a name used twice.
    """
    if driver == "sim":
        if world is not None:
            return AssemblyLimb(robot, limb, seed=seed, config=config, world=world)
        return SimulatedLimb(robot, limb, seed=seed, config=config)
    raise UnknownDriverError(driver)
