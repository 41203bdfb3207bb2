"""ClimbLab's grippers: each palm held to its first contact point by a spring, torn off past F_grip.

Seed 004 grips the terrain with "compliant contact, K = 4000 N/m, D = 1 N s/m" and a gripper
that "detaches when the pulling force exceeds 0.9 N". The law is ClimbLab's (wave 2 brief,
section 2.5; ClimbLab ``upd_collision_endeffector.m``, ``upd_ground_reaction_forces_spring_
damper.m``, ``upd_grasp_detach.m``):

- A palm in contact is **anchored** at its first contact point ``x_c``; the terrain then
  pushes and pulls it with the isotropic spring-damper ``F = -K (x - x_c) - D x_dot`` [N]
  (``x``, ``x_dot``: the palm's world position [m] and velocity [m/s]).
- A supporting leg's gripper **detaches** when ``||F|| > F_grip`` and the force pulls, i.e.
  holds the palm back against being lifted off: ``F . n < 0`` with ``n`` the terrain's
  upward normal at the anchor (ClimbLab tests ``F_z < 0``; on rough ground the local normal
  is the direction a gripper is pulled out along).
- A leg that is not supporting lets go (**released**) as soon as its palm is above the
  terrain; a detached gripper stays detached, holding nothing, until its leg leaves support.

Why an explicit spring and not MuJoCo's contacts: MuJoCo's contact stiffness is normalised by
the effective mass, so no ``solref`` gives 4000 N/m on every foot (wave 2 brief, section
3.2). The physics plant computes these forces between ``mj_step1`` and ``mj_step2`` (stable
at 1 ms) and applies them at the palms; the palms have no native contact with the terrain.

When a gripper anchors (a choice the papers leave open):

- its palm touches the terrain, ``z <= h(x, y)``: anchored at the terrain point under it,
  ``(x, y, h(x, y))`` (ClimbLab), so a palm that arrives below the surface is pushed out; or
- its leg is supporting (the gripper is told to close) and its palm is at most
  ``grip_reach_m`` above the terrain: anchored where the palm is, with no spring preload.
  ClimbLab grips on command at any height, at the surface point: a palm 0.3 mm short would
  start with a 1.2 N pull and detach at once; here a gripper closing on air holds nothing.

Only over the terrain's grid (:meth:`~limbtree.robots.terrain.Terrain.covers`): the height
field ends at its edges, so a palm beyond them has nothing to grip and never anchors, and an
initial stance anchored there is refused.

Pure numpy, deterministic, no clock: the caller passes the simulation time of each call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from limbtree.robots.errors import RobotsError
from limbtree.robots.terrain import Terrain

#: What a mission's or plant's ``latched`` names for a palm whose gripper starts closed on
#: the terrain (instead of ``MODULE/GRASP_POINT``).
TERRAIN_GRIP: Final = "terrain"

#: The interface (``LIMB.palm``) of a leg that has a gripper (seed 004's HubRobo).
PALM: Final = "palm"

FloatArray = npt.NDArray[np.float64]
Vector = tuple[float, float, float]

#: Seed 004's contact stiffness [N/m] and damping [N s/m], and its grippers' holding force [N].
STIFFNESS_N_PER_M: Final = 4000.0
DAMPING_NS_PER_M: Final = 1.0
GRIP_FORCE_N: Final = 0.9


class GripperError(RobotsError, ValueError):
    """Grippers are set up or called wrongly (the message says what and how to fix it)."""


def off_terrain(leg: str, x: float, y: float, terrain: Terrain) -> str | None:
    """Why ``leg``'s palm at ``(x, y)`` [m] cannot grip: it is not over the terrain's grid.

    Returns:
        A message saying where the palm and the terrain are and what to change, or None
        for a palm over the grid.
    """
    if terrain.covers(x, y):
        return None
    return (
        f"{leg}'s palm at x = {x * 1e3:.0f} mm, y = {y * 1e3:.0f} mm is off the terrain "
        f"({terrain.extent_text()}): there is no ground to grip; make the terrain larger "
        "(world.terrain.size_mm)"
    )


class GripperState(StrEnum):
    """What one gripper is doing."""

    RELEASED = "released"
    """Open and off the terrain: no force."""
    ANCHORED = "anchored"
    """Held to its anchor by the spring-damper (gripping, or a non-supporting palm touching)."""
    DETACHED = "detached"
    """Torn off while supporting: no force until its leg leaves support."""


@dataclass(frozen=True)
class GripperParams:
    """The contact law's constants (seed 004 Sec. 3; ClimbLab).

    Attributes:
        stiffness_n_per_m: spring K [N/m], > 0 (4000).
        damping_ns_per_m: damper D [N s/m], >= 0 (1).
        grip_force_n: holding force F_grip [N], > 0 (0.9): a supporting gripper pulled
            harder detaches.
        grip_reach_m: a supporting gripper anchors where its palm is when the palm is at
            most this far above the terrain [m], >= 0 (1 mm).
    """

    stiffness_n_per_m: float = STIFFNESS_N_PER_M
    damping_ns_per_m: float = DAMPING_NS_PER_M
    grip_force_n: float = GRIP_FORCE_N
    grip_reach_m: float = 1e-3

    def __post_init__(self) -> None:
        checks = (
            ("stiffness_n_per_m", self.stiffness_n_per_m, False, "N/m"),
            ("damping_ns_per_m", self.damping_ns_per_m, True, "N s/m"),
            ("grip_force_n", self.grip_force_n, False, "N"),
            ("grip_reach_m", self.grip_reach_m, True, "m"),
        )
        for name, value, zero_ok, unit in checks:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            ok = ok and math.isfinite(value) and (value >= 0 if zero_ok else value > 0)
            if not ok:
                bound = ">= 0" if zero_ok else "> 0"
                raise GripperError(
                    f"{name} must be a finite number {bound} [{unit}], got {value!r}"
                )


@dataclass(frozen=True)
class Detachment:
    """A gripper torn off the terrain.

    Attributes:
        leg: the leg (limb) name.
        t_s: simulation time of the detachment [s].
        force_n: magnitude of the spring force that tore it off [N] (> F_grip).
        force: ``(3,)`` that force on the palm, world frame [N] (read-only).
        anchor: ``(3,)`` the anchor it was torn from, world frame [m] (read-only).
    """

    leg: str
    t_s: float
    force_n: float
    force: FloatArray
    anchor: FloatArray

    def __str__(self) -> str:
        return (
            f"gripper of {self.leg} detached at t = {self.t_s:.3f} s: pulled with "
            f"{self.force_n:.3f} N"
        )


class GripperForces(NamedTuple):
    """One call's result: the forces to apply and the grippers torn off in it."""

    forces: FloatArray
    """``(n, 3)`` force on each palm, world frame [N] (zeros where not anchored)."""
    detached: tuple[Detachment, ...]
    """Detachments that happened in this call (usually none)."""


class GripperSet:
    """The grippers of a robot's legs on one terrain, with their state.

    Args:
        legs: leg names, in the order of the arrays passed to :meth:`forces`.
        terrain: the ground the grippers hold on to.
        params: the contact law's constants.

    Raises:
        GripperError: for no legs or a leg named twice.
    """

    def __init__(
        self, legs: Sequence[str], terrain: Terrain, params: GripperParams | None = None
    ) -> None:
        names = tuple(legs)
        if not names or len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise GripperError(f"legs must be distinct names, at least one, got {legs!r}")
        if not isinstance(terrain, Terrain):
            raise GripperError(f"terrain must be a Terrain, got {type(terrain).__name__}")
        self._legs = names
        self._terrain = terrain
        self._params = params if params is not None else GripperParams()
        n = len(names)
        self._states = [GripperState.RELEASED] * n
        # Per leg: (the anchor [m], the terrain's upward unit normal there), or None.
        self._anchor: list[tuple[Vector, Vector] | None] = [None] * n
        self._detachments: list[Detachment] = []

    @property
    def legs(self) -> tuple[str, ...]:
        """Leg names, in array order."""
        return self._legs

    @property
    def params(self) -> GripperParams:
        """The contact law's constants."""
        return self._params

    @property
    def terrain(self) -> Terrain:
        """The ground."""
        return self._terrain

    @property
    def states(self) -> tuple[GripperState, ...]:
        """Each gripper's state, in leg order."""
        return tuple(self._states)

    @property
    def anchors(self) -> FloatArray:
        """``(n, 3)`` anchors, world frame [m]; NaN rows where not anchored (a new array)."""
        nan = (math.nan, math.nan, math.nan)
        return np.array([nan if a is None else a[0] for a in self._anchor], dtype=np.float64)

    @property
    def detachments(self) -> tuple[Detachment, ...]:
        """Every detachment so far, in time order."""
        return tuple(self._detachments)

    def state(self, leg: str) -> GripperState:
        """One leg's gripper state.

        Raises:
            GripperError: for an unknown leg; it lists the legs.
        """
        return self._states[self._index(leg)]

    def anchor(self, leg: str, point: Sequence[float]) -> None:
        """Anchor a gripper at a point now, whatever its state (e.g. the initial stance).

        Args:
            leg: the leg.
            point: ``(3,)`` the anchor, world frame [m]; its terrain normal is the
                pulling reference.

        Raises:
            GripperError: for an unknown leg, a bad point or one off the terrain's grid.
        """
        i = self._index(leg)
        p = np.asarray(point, dtype=np.float64)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise GripperError(f"anchor point must be 3 finite numbers [m], got {point!r}")
        x, y, z = p.tolist()
        if (off := off_terrain(leg, x, y, self._terrain)) is not None:
            raise GripperError(off)
        self._set_anchor(i, (x, y, z))

    def forces(
        self,
        positions: npt.ArrayLike,
        velocities: npt.ArrayLike,
        supporting: npt.ArrayLike,
        *,
        t: float,
    ) -> GripperForces:
        """Update every gripper's state and return the contact forces on the palms.

        Call once per physics step, with the palms' current state (between ``mj_step1``
        and ``mj_step2``), and apply the forces at the palms.

        Args:
            positions: ``(n, 3)`` palm positions, world frame [m].
            velocities: ``(n, 3)`` palm velocities, world frame [m/s].
            supporting: ``(n,)`` whether each leg is in support (its gripper told to hold).
            t: simulation time [s], recorded with a detachment.

        Returns:
            The ``(n, 3)`` forces [N] and the detachments of this call.

        Raises:
            GripperError: for arrays of the wrong shape or non-finite values.
        """
        n = len(self._legs)
        p = np.asarray(positions, dtype=np.float64)
        v = np.asarray(velocities, dtype=np.float64)
        support = np.asarray(supporting)
        if p.shape != (n, 3) or v.shape != (n, 3) or support.shape != (n,):
            raise GripperError(
                f"forces() takes ({n}, 3) positions and velocities and ({n},) supporting "
                f"(legs {', '.join(self._legs)}), got {p.shape}, {v.shape} and {support.shape}"
            )
        if not isinstance(t, int | float) or not math.isfinite(t):
            raise GripperError(f"forces(): t must be a finite time [s], got {t!r}")
        # Plain Python per leg: a handful of legs at 1 kHz, where numpy's per-call cost
        # would dominate.
        positions_l, velocities_l, held_l = p.tolist(), v.tolist(), support.tolist()
        k, d = self._params.stiffness_n_per_m, self._params.damping_ns_per_m
        limit, reach = self._params.grip_force_n, self._params.grip_reach_m
        height, covers = self._terrain.height_at, self._terrain.covers
        forces: list[Vector] = []
        torn: list[Detachment] = []
        for i in range(n):
            x, y, z = positions_l[i]
            vx, vy, vz = velocities_l[i]
            if not all(map(math.isfinite, (x, y, z, vx, vy, vz))):
                raise GripperError(
                    f"forces(): the position and velocity of {self._legs[i]}'s palm must be "
                    f"finite, got {positions_l[i]} and {velocities_l[i]}"
                )
            held = bool(held_l[i])
            state = self._states[i]
            if state is GripperState.DETACHED:
                if not held:
                    self._release(i)
            elif state is GripperState.ANCHORED:
                if not held and z > height(x, y):
                    self._release(i)
            elif covers(x, y):  # off the grid there is no ground to grip
                h = height(x, y)
                if z <= h:
                    self._set_anchor(i, (x, y, h))
                elif held and z <= h + reach:
                    self._set_anchor(i, (x, y, z))
            grip = self._anchor[i]
            if grip is None:
                forces.append((0.0, 0.0, 0.0))
                continue
            anchor, normal = grip
            fx = -k * (x - anchor[0]) - d * vx
            fy = -k * (y - anchor[1]) - d * vy
            fz = -k * (z - anchor[2]) - d * vz
            magnitude = math.sqrt(fx * fx + fy * fy + fz * fz)
            pulling = fx * normal[0] + fy * normal[1] + fz * normal[2] < 0.0
            if held and magnitude > limit and pulling:
                torn.append(
                    Detachment(
                        leg=self._legs[i],
                        t_s=float(t),
                        force_n=magnitude,
                        force=_frozen((fx, fy, fz)),
                        anchor=_frozen(anchor),
                    )
                )
                self._states[i] = GripperState.DETACHED
                self._anchor[i] = None
                forces.append((0.0, 0.0, 0.0))
            else:
                forces.append((fx, fy, fz))
        self._detachments.extend(torn)
        return GripperForces(np.array(forces, dtype=np.float64), tuple(torn))

    def _set_anchor(self, i: int, point: Vector) -> None:
        nx, ny, nz = self._terrain.normal(point[0], point[1]).tolist()
        self._states[i] = GripperState.ANCHORED
        self._anchor[i] = (point, (nx, ny, nz))

    def _release(self, i: int) -> None:
        self._states[i] = GripperState.RELEASED
        self._anchor[i] = None

    def _index(self, leg: str) -> int:
        try:
            return self._legs.index(leg)
        except ValueError:
            raise GripperError(
                f"no gripper on leg {leg!r}; legs: {', '.join(self._legs)}"
            ) from None


def _frozen(values: Sequence[float]) -> FloatArray:
    out = np.array(values, dtype=np.float64)
    out.setflags(write=False)
    return out
