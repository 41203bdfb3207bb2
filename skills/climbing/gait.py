"""The periodic crawl gait of seed 004 (Sec. 2.1 and 3) and the base's support-phase motion.

One leg swings at a time, rear legs first, then the front ones. Each step is a swing phase
of ``T_sw`` followed by a support phase of the same length in which only the base moves
(to the pose of :func:`~limbtree.skills.climbing.plane.desired_base_pose`), so a cycle of
``n`` legs lasts ``T = 2 n T_sw`` (14 s for four legs at 1.75 s). Each swing moves its foot
by the stride along the footholds' plane (:func:`advance_foothold`; 80 mm, 0.57 cm/s).

:class:`BaseMotion` is the support phase's "simple polynomial" from the base's pose to its
target: a quintic (at rest, zero acceleration at both ends; RAMP) or ClimbLab's cubic
(at rest at both ends; the baseline). Rotation follows the same profile along the
relative rotation's axis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from scipy.spatial.transform import Rotation

from limbtree.skills.climbing._checks import (
    FloatArray,
    positive,
    read_only,
    transform,
    unit3,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.plane import HEADING, UP, HeightFunction, RegressionPlane


class PhaseKind(StrEnum):
    """What a gait phase does."""

    SWING = "swing"  # one leg moves to its next foothold (the others support)
    SUPPORT = "support"  # every leg supports; the base moves


@dataclass(frozen=True)
class GaitPhase:
    """One phase of the crawl gait.

    Attributes:
        cycle: which cycle (0 first).
        step: which step of the cycle (0 .. n - 1), the index into the swing order.
        leg: the leg that swings in this step.
        kind: swing or support.
        start_s: when the phase starts [s].
        end_s: when it ends [s].
    """

    cycle: int
    step: int
    leg: str
    kind: PhaseKind
    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        """``end_s - start_s`` [s]."""
        return self.end_s - self.start_s

    def fraction(self, t: float) -> float:
        """How far through the phase ``t`` is, clipped to ``[0, 1]``."""
        return min(max((t - self.start_s) / self.duration_s, 0.0), 1.0)


@dataclass(frozen=True)
class CrawlGait:
    """Seed 004's periodic crawl gait (Sec. 3: T 14 s, stride 8 cm, step height 4 cm).

    Attributes:
        order: the legs in swing order (rear legs first: :func:`rear_first_order`).
        swing_s: ``T_sw`` [s]; the support phase lasts as long.
        stride_m: how far each foot moves per cycle [m].
        step_height_m: ``h_sw`` [m].

    Raises:
        ClimbingInputError: for no legs, a leg named twice, or a non-positive duration,
            stride or height.
    """

    order: tuple[str, ...]
    swing_s: float = 1.75
    stride_m: float = 0.08
    step_height_m: float = 0.04

    def __post_init__(self) -> None:
        order = tuple(self.order)
        if not order or len(set(order)) != len(order):
            raise ClimbingInputError("order", self.order, "must name each leg once, in swing order")
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "swing_s", positive("swing_s", self.swing_s))
        object.__setattr__(self, "stride_m", positive("stride_m", self.stride_m))
        object.__setattr__(
            self, "step_height_m", positive("step_height_m", self.step_height_m, allow_zero=True)
        )

    @property
    def support_s(self) -> float:
        """The support phase's duration [s] (equal to ``T_sw``)."""
        return self.swing_s

    @property
    def period_s(self) -> float:
        """``T = 2 n T_sw`` [s]."""
        return 2.0 * len(self.order) * self.swing_s

    @property
    def speed_m_s(self) -> float:
        """The mean speed, stride per cycle [m/s] (0.57 cm/s in Sec. 3)."""
        return self.stride_m / self.period_s

    def phase_at(self, t: float) -> GaitPhase:
        """The phase the gait is in at ``t`` [s] from its start (``t >= 0``).

        Raises:
            ClimbingInputError: for a negative or non-finite time.
        """
        time = positive("t", t, allow_zero=True)
        index = math.floor(time / self.swing_s)
        return self._phase(index)

    def phases(self, cycles: int) -> tuple[GaitPhase, ...]:
        """Every phase of ``cycles`` cycles, in order.

        Raises:
            ClimbingInputError: for a negative number of cycles.
        """
        if int(cycles) != cycles or cycles < 0:
            raise ClimbingInputError("cycles", cycles, "must be an integer >= 0")
        return tuple(self._phase(i) for i in range(2 * len(self.order) * int(cycles)))

    def _phase(self, index: int) -> GaitPhase:
        n = len(self.order)
        cycle, within = divmod(index, 2 * n)
        step, support = divmod(within, 2)
        start = index * self.swing_s
        kind = PhaseKind.SUPPORT if support else PhaseKind.SWING
        return GaitPhase(cycle, step, self.order[step], kind, start, start + self.swing_s)


def rear_first_order(
    hips: Mapping[str, Sequence[float] | FloatArray],
    heading: Sequence[float] | FloatArray = HEADING,
    up: Sequence[float] | FloatArray = UP,
) -> tuple[str, ...]:
    """The crawl's swing order: rear legs first, then front; left before right in each half.

    Args:
        hips: leg name -> where the leg is on the base (hip or nominal foot) [m], in any
            frame in which ``heading`` and ``up`` are given (the base frame, usually).
        heading: the walking direction.
        up: the base's up (left is ``up x heading``).

    Returns:
        The leg names in swing order (for HubRobo's legs at 45, 135, 225 and 315 deg and
        heading +x: ``leg_1, leg_2, leg_0, leg_3``).

    Raises:
        ClimbingInputError: for no legs, a non-finite position or a heading along ``up``.
    """
    if not hips:
        raise ClimbingInputError("hips", hips, "needs at least one leg")
    forward = unit3("heading", heading)
    n_up = unit3("up", up)
    left = np.cross(n_up, forward)
    if float(np.linalg.norm(left)) < 1e-9:
        raise ClimbingInputError("heading", heading, "must not be along up")
    left /= np.linalg.norm(left)
    positions = {name: vector3(f"hips[{name!r}]", p) for name, p in hips.items()}
    along = {name: float(p @ forward) for name, p in positions.items()}
    middle = float(np.median(list(along.values())))
    rear = [name for name in positions if along[name] < middle]
    front = [name for name in positions if along[name] >= middle]

    def lateral(name: str) -> float:
        return -float(positions[name] @ left)

    return tuple(sorted(rear, key=lateral) + sorted(front, key=lateral))


def advance_foothold(
    foothold: Sequence[float] | FloatArray,
    stride_m: float,
    plane: RegressionPlane,
    heading: Sequence[float] | FloatArray = HEADING,
    terrain: HeightFunction | None = None,
) -> FloatArray:
    """The next foothold: the stride along the plane in the heading, then onto the terrain.

    Args:
        foothold: the leg's current contact point [m].
        stride_m: the stride [m].
        plane: the footholds' regression plane.
        heading: the walking direction (projected onto the plane).
        terrain: the terrain's height at world ``x, y``; the point is dropped (or lifted)
            vertically onto it (ClimbLab ``get_map_pos``). None: stay on the plane's line.

    Returns:
        ``(3,)`` [m].

    Raises:
        ClimbingInputError: for a bad point or stride, a heading normal to the plane, or a
            terrain that does not return a finite height.
    """
    point = vector3("foothold", foothold) + positive("stride_m", stride_m) * plane.along(heading)
    if terrain is not None:
        height = np.asarray(terrain(point[:1], point[1:2]), dtype=np.float64).reshape(-1)
        if height.shape != (1,) or not np.isfinite(height).all():
            raise ClimbingInputError("terrain", terrain, "must return one finite height")
        point[2] = float(height[0])
    return point


class Profile(StrEnum):
    """The time profile of a base motion."""

    QUINTIC = "quintic"  # 10 s^3 - 15 s^4 + 6 s^5: at rest, zero acceleration at both ends
    CUBIC = "cubic"  # 3 s^2 - 2 s^3: at rest at both ends (ClimbLab's spline3)


def _profile(profile: Profile, s: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    if profile is Profile.QUINTIC:
        return (
            10 * s**3 - 15 * s**4 + 6 * s**5,
            30 * s**2 - 60 * s**3 + 30 * s**4,
            60 * s - 180 * s**2 + 120 * s**3,
        )
    return 3 * s**2 - 2 * s**3, 6 * s - 6 * s**2, 6 - 12 * s


@dataclass(frozen=True, eq=False)
class BaseSample:
    """A base motion evaluated at one time.

    Attributes:
        pose: ``(4, 4)`` base pose in the world [m].
        twist: ``(6,)`` body twist ``[v; w]`` (base axes) [m/s; rad/s].
        acceleration: ``(3,)`` world linear acceleration of the base origin [m/s^2].
    """

    pose: FloatArray
    twist: FloatArray
    acceleration: FloatArray


@dataclass(frozen=True, eq=False)
class BaseMotion:
    """The base from ``start`` to ``end`` in ``duration_s`` (the support phase's polynomial).

    Position moves along the straight line; rotation turns about the fixed axis of
    ``R_start^T R_end``; both follow ``profile``.

    Attributes:
        start: ``(4, 4)`` pose at ``t = 0``.
        end: ``(4, 4)`` pose at ``t = duration_s``.
        duration_s: [s].
        profile: quintic (default) or cubic.

    Raises:
        ClimbingInputError: for a pose that is not a rigid transform or a bad duration.
    """

    start: FloatArray
    end: FloatArray
    duration_s: float
    profile: Profile = Profile.QUINTIC
    _turn: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", read_only(transform("start", self.start)))
        object.__setattr__(self, "end", read_only(transform("end", self.end)))
        object.__setattr__(self, "duration_s", positive("duration_s", self.duration_s))
        object.__setattr__(self, "profile", Profile(self.profile))
        turn = Rotation.from_matrix(self.start[:3, :3].T @ self.end[:3, :3]).as_rotvec()
        object.__setattr__(self, "_turn", read_only(turn))

    def at(self, t: float) -> BaseSample:
        """The pose, body twist and acceleration at ``t`` [s] (clipped to the motion)."""
        time = float(t)
        if not math.isfinite(time):
            raise ClimbingInputError("t", t, "must be a finite time [s]")
        s = min(max(time / self.duration_s, 0.0), 1.0)
        value, rate, curvature = (float(x) for x in _profile(self.profile, np.array(s)))
        if time < 0.0 or time > self.duration_s:  # before or after: at rest
            rate = curvature = 0.0
        turn = self._turn
        shift = self.end[:3, 3] - self.start[:3, 3]
        pose = np.eye(4)
        pose[:3, :3] = self.start[:3, :3] @ Rotation.from_rotvec(value * turn).as_matrix()
        pose[:3, 3] = self.start[:3, 3] + value * shift
        velocity = rate / self.duration_s * shift
        twist = np.concatenate([pose[:3, :3].T @ velocity, rate / self.duration_s * turn])
        acceleration = curvature / self.duration_s**2 * shift
        return BaseSample(pose, twist, acceleration)


__all__ = [
    "BaseMotion",
    "BaseSample",
    "CrawlGait",
    "GaitPhase",
    "PhaseKind",
    "Profile",
    "advance_foothold",
    "rear_first_order",
]
