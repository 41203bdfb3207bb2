"""Make the driver a limb agent serves, by name (``limbtree agent --driver``).

``sim`` is the simulated limb. A real limb's driver, a
:class:`~limbtree.robots.driver.HardwareDriver` subclass in the user's own package, is named
either by its import path, ``package.module:ClassName``, or by the name its package
registers in the ``limbtree.drivers`` entry-point group::

    [project.entry-points."limbtree.drivers"]
    serial_arm = "my_robot.driver:SerialArmDriver"

It is built as ``ClassName(robot, limb, **options)``, the options being the text values of
``limbtree agent --driver-option KEY=VALUE``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Final

from limbtree.kinematics.pose import Pose
from limbtree.robots.assembly import AssemblyLimb, WorldModule, world_from_json
from limbtree.robots.driver import HardwareDriver
from limbtree.robots.errors import RobotsError
from limbtree.robots.faulty import FaultyPlant
from limbtree.robots.kinematic import KinematicPlant
from limbtree.robots.registry import load_robot
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.transport.driver import LimbDriver
from limbtree.transport.plant import DriverPlant, Plant

__all__ = [
    "DRIVERS",
    "ENTRY_POINT_GROUP",
    "DriverOptionError",
    "DriverStartError",
    "UnknownDriverError",
    "driver_class",
    "make_driver",
    "make_plant",
    "registered_drivers",
    "world_from_json",
]

#: The drivers limbtree itself ships, by name.
DRIVERS: Final[tuple[str, ...]] = ("sim",)
#: The entry-point group where packages register their drivers by name.
ENTRY_POINT_GROUP: Final = "limbtree.drivers"


class UnknownDriverError(RobotsError, LookupError):
    """:func:`make_driver` was asked for a driver it does not know.

    Attributes:
        driver: the name that was asked for.
        valid_drivers: the names it knows (``sim`` and the registered ones).
    """

    def __init__(self, driver: str, why: str | None = None) -> None:
        self.driver = driver
        self.valid_drivers = (*DRIVERS, *sorted(registered_drivers()))
        reason = why or (
            f"valid drivers: {', '.join(self.valid_drivers)}, or a HardwareDriver subclass "
            "as package.module:ClassName (see docs/drivers.md)"
        )
        super().__init__(f"unknown driver {driver!r}; {reason}")


class DriverOptionError(RobotsError, ValueError):
    """The options given to a driver do not fit it (``limbtree agent --driver-option``)."""


class DriverStartError(RobotsError, RuntimeError):
    """A hardware driver's constructor failed (its device would not open, a bad setting)."""


def registered_drivers() -> dict[str, str]:
    """The drivers installed packages register (``limbtree.drivers``): name -> import path."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def driver_class(driver: str) -> type[LimbDriver]:
    """The driver class named ``package.module:ClassName`` or by a registered name.

    Raises:
        UnknownDriverError: when the name is not registered, the module cannot be imported,
            it has no such class, or the class is not a
            :class:`~limbtree.transport.driver.LimbDriver`.
    """
    path = registered_drivers().get(driver, driver)
    module_name, sep, class_name = path.partition(":")
    if not sep or not module_name or not class_name:
        raise UnknownDriverError(driver)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownDriverError(
            driver, f"cannot import {module_name!r} ({exc}); is its package installed?"
        ) from exc
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, LimbDriver)):
        what = "has no class" if cls is None else "has no LimbDriver class"
        raise UnknownDriverError(
            driver, f"{module_name} {what} {class_name!r}; subclass HardwareDriver"
        )
    if inspect.isabstract(cls):
        missing = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        raise UnknownDriverError(
            driver, f"{class_name} is abstract (no {missing}); name your subclass of it"
        )
    return cls


def make_driver(
    robot: str,
    limb: str | None = None,
    *,
    driver: str = "sim",
    seed: int = 0,
    config: SimConfig | None = None,
    world: Sequence[WorldModule] | None = None,
    options: Mapping[str, str] | None = None,
) -> LimbDriver:
    """Make the driver of one limb of a registry robot.

    Args:
        robot: the robot's name (``limbtree robots`` lists them).
        limb: the limb's name; None for a robot with a single limb.
        driver: which driver: ``"sim"`` (:class:`~limbtree.robots.sim.SimulatedLimb`), a
            name registered in the ``limbtree.drivers`` entry-point group, or
            ``package.module:ClassName``.
        seed: seed of the simulated limb's noise and IK restarts.
        config: the simulated limb's non-idealities and scheduled faults (default: ideal).
        world: modules placed in the limb's base frame (:func:`world_from_json` reads them
            from ``limbtree agent --world``): given, even empty, the simulated limb is an
            :class:`~limbtree.robots.assembly.AssemblyLimb` that can grasp them and publishes
            motion-capture observations; None: a plain
            :class:`~limbtree.robots.sim.SimulatedLimb`.
        options: keyword arguments (text) for a hardware driver's constructor, called as
            ``ClassName(robot, limb, **options)``; ``seed``, ``config`` and ``world`` are
            for ``sim`` only.

    Returns:
        The driver, ready for :meth:`~limbtree.transport.driver.LimbDriver.advance`.

    Raises:
        UnknownDriverError: for an unknown driver name; it lists the valid ones.
        DriverOptionError: for options the driver does not take, simulator settings
            given to a hardware driver, or motion-capture noise without a world.
        DriverStartError: when a hardware driver's constructor raises; the message names
            the driver and the error.
        limbtree.robots.errors.UnknownRobotError: for an unknown robot.
        limbtree.robots.errors.UnknownLimbError: for an unknown limb, or None on a robot
            with several limbs.
        limbtree.robots.assembly.WorldError: for an unknown module or a name used twice.
    """
    if driver == "sim":
        _check_sim_options(config, world, options)
        if world is not None:
            return AssemblyLimb(robot, limb, seed=seed, config=config, world=world)
        return SimulatedLimb(robot, limb, seed=seed, config=config)
    cls = driver_class(driver)
    if config is not None or world is not None:
        raise DriverOptionError(
            f"simulator settings (--sim-option, --world) are for --driver sim, not {driver}"
        )
    options = dict(options or {})
    signature = inspect.signature(cls)
    try:
        signature.bind_partial(robot, limb)
    except TypeError as exc:
        raise DriverOptionError(
            f"driver {driver} is built as {cls.__name__}(robot, limb, **options), here "
            f"{cls.__name__}({robot!r}, {limb!r}"
            + "".join(f", {key}={value!r}" for key, value in options.items())
            + f"), but its constructor is {cls.__name__}{signature} ({exc}): take the robot "
            "and limb names first, def __init__(self, robot, limb=None, *, your_option=...), "
            "and pass them to super().__init__(robot, limb) (docs/drivers.md)"
        ) from None
    try:
        signature.bind(robot, limb, **options)
    except TypeError as exc:
        raise DriverOptionError(
            f"driver {driver} is built as {cls.__name__}{signature}: {exc}; "
            "give its settings with --driver-option KEY=VALUE"
        ) from None
    # A LimbDriver's constructor is the driver's own business: checked by bind() above.
    make: Callable[..., LimbDriver] = cls
    try:
        made = make(robot, limb, **options)
    except RobotsError:
        raise
    except Exception as exc:  # the user's code: a device that will not open, a bad value
        raise DriverStartError(
            f"driver {driver} could not start: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        made.describe()  # (what the agent asks first: a traceback there named nothing)
    except RobotsError:
        raise
    except Exception as exc:
        forgot = isinstance(made, HardwareDriver) and "_tracker" not in vars(made)
        hint = (
            f"; {cls.__name__}.__init__ must call super().__init__(robot, limb) first "
            "(docs/drivers.md)"
            if forgot
            else ""
        )
        raise DriverStartError(
            f"driver {driver} started but cannot describe its limb: "
            f"{type(exc).__name__}: {exc}{hint}"
        ) from exc
    return made


def _check_sim_options(
    config: SimConfig | None, world: Sequence[WorldModule] | None, options: Mapping[str, str] | None
) -> None:
    if options:
        raise DriverOptionError(
            f"driver options ({', '.join(options)}) are for hardware drivers; "
            "the simulated limb takes simulator settings (--sim-option)"
        )
    capture = [
        name
        for name in ("mocap_noise_m", "mocap_rot_noise_rad")
        if world is None and config is not None and getattr(config, name) is not None
    ]
    if capture:
        raise DriverOptionError(
            f"{' and '.join(capture)} set the noise of a simulated world's motion capture, "
            "and this limb has no world: give --world (even '[]') or drop them"
        )


#: The simulated plant kinds (DESIGN.md, Plants).
PLANT_KINDS: Final = ("kinematic", "mujoco")


def make_plant(
    robot: str,
    limbs: Sequence[str] | None = None,
    *,
    driver: str = "sim",
    seed: int = 0,
    config: SimConfig | None = None,
    world: Sequence[WorldModule] | None = None,
    options: Mapping[str, str] | None = None,
    base: Pose | None = None,
    plant: str = "kinematic",
    physics: str | None = None,
) -> Plant:
    """Make the plant an agent serves (``limbtree agent --robot NAME [--limb L]``).

    ``sim``: a :class:`~limbtree.robots.kinematic.KinematicPlant` of the robot's limbs (all,
    or the ones named) inside the fault decorator
    (:class:`~limbtree.robots.faulty.FaultyPlant`, running ``config.faults``). A hardware
    driver: one limb's driver as a one-limb plant
    (:class:`~limbtree.transport.plant.DriverPlant`); it takes no faults.

    Args:
        robot: the robot's name (``limbtree robots`` lists them).
        limbs: the robot's limbs the plant holds; None for all of them.
        driver: ``"sim"``, a name in the ``limbtree.drivers`` entry-point group, or
            ``package.module:ClassName``.
        seed: the simulated plant's seed (its i-th limb gets ``seed + i``).
        config: the simulated limbs' non-idealities and scheduled faults.
        world: modules in the base frame (see :func:`make_driver`).
        options: a hardware driver's constructor keyword arguments (text).
        base: the plant's base in the world frame (gravity acts in the world).
        plant: the simulated plant's kind: ``kinematic`` (wave 1's simulator) or ``mujoco``
            (rigid-body dynamics, :class:`~limbtree.robots.mujoco_plant.MujocoPlant`).
        physics: the ``mujoco`` plant's settings as JSON
            (:meth:`~limbtree.robots.mujoco_plant.MujocoConfig.from_json`).

    Returns:
        The plant, ready to be advanced.

    Raises:
        DriverOptionError: for settings that do not fit the driver, or several limbs for a
            hardware driver (which drives one limb).
        UnknownDriverError, DriverStartError: as :func:`make_driver`.
        limbtree.robots.errors.UnknownRobotError: for an unknown robot.
        limbtree.robots.errors.UnknownLimbError: for an unknown limb.
        limbtree.transport.driver.DriverError: for a wrong scheduled fault.
    """
    if plant not in PLANT_KINDS:
        raise DriverOptionError(
            f"plant kind {plant!r} is unknown; valid kinds are {', '.join(PLANT_KINDS)}"
        )
    if plant == "mujoco":
        if driver != "sim":
            raise DriverOptionError(f"the mujoco plant is simulated; drop --driver {driver}")
        if limbs is not None:
            raise DriverOptionError(
                "the mujoco plant moves the whole robot (its limbs are coupled through the "
                "base); drop --limb"
            )
        if config is not None:
            raise DriverOptionError(
                "--sim-option sets the kinematic simulator's non-idealities; the mujoco plant "
                "takes --physics"
            )
        from limbtree.robots.mujoco_plant import MujocoConfig, MujocoPlant

        try:
            settings = MujocoConfig.from_json(physics) if physics else MujocoConfig()
            made = MujocoPlant(robot, base=base, world=world or (), config=settings, seed=seed)
        except ValueError as exc:
            raise DriverOptionError(f"mujoco plant of robot {robot!r}: {exc}") from None
        return FaultyPlant(made)
    if physics:
        raise DriverOptionError("--physics sets the mujoco plant; give --plant mujoco")
    if driver == "sim":
        _check_sim_options(config, world, options)
        schedule = () if config is None else config.faults
        if config is not None and config.faults:
            config = dataclasses.replace(config, faults=())
        kinematic = KinematicPlant(robot, limbs, seed=seed, config=config, base=base, world=world)
        return FaultyPlant(kinematic, schedule)
    spec = load_robot(robot)
    names = tuple(spec.limb_names if limbs is None else limbs)
    if len(names) != 1:
        raise DriverOptionError(
            f"driver {driver} drives one limb, and robot {robot!r} has "
            f"{', '.join(names)}: give --limb"
        )
    limb = spec.limb(names[0]).name
    one = make_driver(robot, limb, driver=driver, config=config, world=world, options=options)
    pose = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0) if base is None else base.as_list()
    return DriverPlant(one, limb, pose)
