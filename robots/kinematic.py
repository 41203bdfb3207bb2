"""The ``kinematic`` plant: one or several simulated limbs on one fixed body.

Each limb is a :class:`~limbtree.robots.sim.SimulatedLimb` (or, with a world, an
:class:`~limbtree.robots.assembly.AssemblyLimb`): joints that track their commands at their
speed limits, with backlash, flex, noise, a bending mode and IK seeding exactly as in wave 1.
The plant puts them on one base at a pose in the world (MoonBot Zero's four legs on its
body), advances them together, and turns gravity from the world into each limb's base frame.
Faults are not the plant's: wrap it in :class:`~limbtree.robots.faulty.FaultyPlant`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from limbtree.kinematics.pose import Pose
from limbtree.robots.assembly import AssemblyLimb, WorldModule
from limbtree.robots.registry import RobotSpec, load_robot
from limbtree.robots.sim import SimConfig, SimulatedLimb
from limbtree.transport.driver import CommandMode, GripperAction, LimbState
from limbtree.transport.plant import (
    Actuation,
    BaseState,
    FaultClock,
    Plant,
    PlantDescription,
    PlantLimb,
)

__all__ = ["KINEMATIC", "KinematicPlant"]

#: The plant kind's name.
KINEMATIC: Final = "kinematic"


class KinematicPlant(Plant):
    """Simulated limbs of one robot on one fixed base; deterministic for a seed.

    Args:
        robot: the robot, or its name in the registry.
        limbs: which of its limbs (robot description names), in order; None for all.
        seed: the seed of the first limb; the i-th limb gets ``seed + i``.
        config: the limbs' non-idealities (default: ideal); :attr:`SimConfig.gravity` is in
            the world frame. Its ``faults`` must be empty (they are ``FaultyPlant``'s).
        base: the plant's base in the world frame (every limb's base frame, for the robots
            shipped: their limbs are expressed in the body's frame).
        world: modules in the base frame: given (even empty), every limb is an
            :class:`~limbtree.robots.assembly.AssemblyLimb` in that world.

    Raises:
        limbtree.robots.errors.UnknownRobotError: for an unknown robot.
        limbtree.robots.errors.UnknownLimbError: for an unknown limb.
        SimConfigError: for bad settings.
    """

    def __init__(
        self,
        robot: RobotSpec | str,
        limbs: Sequence[str] | None = None,
        *,
        seed: int = 0,
        config: SimConfig | None = None,
        base: Pose | None = None,
        world: Sequence[WorldModule] | None = None,
    ) -> None:
        spec = load_robot(robot) if isinstance(robot, str) else robot
        names = tuple(spec.limb_names if limbs is None else limbs)
        base = Pose() if base is None else base
        self._limbs: dict[str, SimulatedLimb] = {}
        for i, name in enumerate(names):
            spec.limb(name)  # raises UnknownLimbError naming the robot's limbs
            if world is not None:
                self._limbs[name] = AssemblyLimb(
                    spec, name, seed=seed + i, config=config, world=world, base=base
                )
            else:
                self._limbs[name] = SimulatedLimb(
                    spec, name, seed=seed + i, config=config, base=base
                )
        self._setup(spec.name, base)

    @classmethod
    def from_limbs(
        cls, robot: str, limbs: Mapping[str, SimulatedLimb], *, base: Pose | None = None
    ) -> KinematicPlant:
        """A plant of simulated limbs made elsewhere (tests, a custom world).

        Args:
            robot: the robot's name.
            limbs: limb name -> simulated limb, in order; made with the same ``base``.
            base: the plant's base in the world.
        """
        plant = cls.__new__(cls)
        plant._limbs = dict(limbs)
        plant._setup(robot, Pose() if base is None else base)
        return plant

    def _setup(self, robot: str, base: Pose) -> None:
        self._description = PlantDescription(
            robot=robot,
            kind=KINEMATIC,
            limbs=tuple(PlantLimb(n, limb.describe()) for n, limb in self._limbs.items()),
            base_pose=tuple(base.as_list()),
            floating_base=False,
        )
        self._base = BaseState(self._description.base_pose)
        self._t = 0.0

    def limb(self, name: str) -> SimulatedLimb:
        """The simulated limb called ``name`` (its ground truth is there: ``true_ee_pose``).

        Raises:
            DriverError: ``bad_value`` naming the plant's limbs.
        """
        limb = self._limbs.get(name)
        if limb is None:
            self._description.limb(name)  # raises, naming the limbs
            raise AssertionError("unreachable")  # pragma: no cover
        return limb

    @property
    def limbs(self) -> Mapping[str, SimulatedLimb]:
        """Limb name -> simulated limb."""
        return dict(self._limbs)

    # ------------------------------------------------------------------ Plant

    def describe(self) -> PlantDescription:
        """The robot's limbs on a fixed base."""
        return self._description

    @property
    def time(self) -> float:
        """The time of the last :meth:`advance` [s]."""
        return self._t

    def advance(self, t: float) -> None:
        """Integrate every limb to ``t`` [s].

        Raises:
            DriverError: ``bad_value`` for a time that is not finite or goes back.
        """
        for limb in self._limbs.values():
            limb.advance(t)
        self._t = t

    def limb_state(self, limb: str) -> LimbState:
        """The limb's latest state."""
        return self.limb(limb).state()

    def base_state(self) -> BaseState:
        """The fixed base."""
        return self._base

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, object]) -> None:
        """Command one limb."""
        self.limb(limb).command(mode, payload)

    def gripper(self, limb: str, action: GripperAction) -> None:
        """One limb's gripper."""
        self.limb(limb).gripper(action)

    def available(self, limb: str) -> bool:
        """False while the limb is detached."""
        return self.limb(limb).available

    def actuate(self, limb: str, actuation: Actuation) -> None:
        """Set what faults leave of one limb's actuation."""
        self.limb(limb).actuate(actuation)

    def set_fault_clock(self, limb: str, clock: FaultClock | None) -> bool:
        """The limb fires the clock's events at their exact times while it integrates."""
        self.limb(limb).set_fault_clock(clock)
        return True

    def close(self) -> None:
        """Nothing to release."""
