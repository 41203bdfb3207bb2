"""``WalkStep``: one step of a MIRROR arm end from standard interface to standard interface.

Seed 003 walks by switching constraints (Sec. 5-A, 5-C; wave-2 brief 1.3): the moving end
is a task frame of the unified controller (:class:`~limbtree.skills.dynamics.UnifiedImpedance`,
which runs in the plant at 1 kHz) until it reaches the target SI and latches; then, 0.1 s
later, the other end lets go (the paper's 27 s -> 27.1 s). This core decides, at the tree's
rate (e.g. 100 Hz), what to command: the moving end's goal, when to latch it, when to
release the other frame. Phases, in order:

1. ``release_own`` (only if the moving end starts latched, as in a 2-arm step): unlatch it.
2. ``via``: through the via points, each taken within ``via_tol_m`` / ``via_tol_rad``:
   ``arc``: three points on an arc about the anchor end, raised by ``lift_m`` (a plain step
   can trap the free end in a local minimum, brief 1.6); ``lift_over_down``: lift off along
   the target SI's outward normal, over the target, then down (for morphology C);
   ``none``: the paper's plain step.
3. ``approach``: the goal is the target SI, turned by its 4-fold symmetry to the
   orientation nearest the moving end's (:func:`nearest_symmetric_goal`).
4. ``engage``: once within ``settle_m`` and ``settle_rad`` and ‖q̇‖ < ``settle_speed_rad_s``,
   latch the moving end; wait until the plant reports it latched.
5. ``hold``: ``release_after_s`` with both ends latched.
6. ``release``: release the other frame (morphology A: the arm's other end; C: none) and
   wait until it is free. Then SUCCESS.

A step that runs out of time fails with a message naming the phase, the error and the time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from limbtree.skills.dynamics.errors import DynamicsInputError
from limbtree.skills.dynamics.unified import checked_transform, nearest_symmetric_goal, pose_error
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

FloatArray = npt.NDArray[np.float64]

#: Where on the way (fraction of the turn about the anchor) the arc's via points lie.
ARC_FRACTIONS = (0.25, 0.5, 0.75)


class ViaMode(StrEnum):
    """How the moving end travels to the target SI."""

    ARC = "arc"
    LIFT_OVER_DOWN = "lift_over_down"
    NONE = "none"


class WalkPhase(StrEnum):
    """Where a walk step is (module docstring)."""

    RELEASE_OWN = "release_own"
    VIA = "via"
    APPROACH = "approach"
    ENGAGE = "engage"
    HOLD = "hold"
    RELEASE = "release"
    DONE = "done"
    FAILED = "failed"


def _check(name: str, value: float, *, allow_zero: bool = False) -> float:
    number = float(value)
    if not (math.isfinite(number) and (number >= 0.0 if allow_zero else number > 0.0)):
        raise DynamicsInputError(
            name, value, "must be a finite number " + (">= 0" if allow_zero else "> 0")
        )
    return number


@dataclass(frozen=True)
class WalkParams:
    """How a walk step moves, engages and lets go (defaults: wave-2 brief, section 1.6).

    Attributes:
        via: the via points (:class:`ViaMode`).
        lift_m: how far the via points are raised [m] (arc, lift_over_down).
        settle_m: position error to engage within [m] (the paper's 2 mm).
        settle_rad: angle error to engage within [rad] (the paper's 1 deg).
        settle_speed_rad_s: ‖q̇‖ to engage below [rad/s].
        release_after_s: how long both ends stay latched before the other frame is released
            [s] (the paper's 0.1 s).
        via_tol_m: a via point is taken within this position error [m].
        via_tol_rad: ... and this angle error [rad].
        timeout_s: how long the whole step may take [s], or None for no limit.
        fold: the order of the SI's rotational symmetry about its normal.
        reach_m: the farthest the moving end can be from the anchor [m] (the arm's links
            between the two interfaces), or None when not known. A target farther than that
            (and ``settle_m``) from a latched anchor fails the step at once, instead of
            at its timeout.

    Raises:
        DynamicsInputError: for a value that is not a positive finite number (a whole
            number >= 1 for ``fold``), or an unknown via mode.
    """

    via: ViaMode = ViaMode.ARC
    lift_m: float = 0.1
    settle_m: float = 0.002
    settle_rad: float = math.radians(1.0)
    settle_speed_rad_s: float = 0.01
    release_after_s: float = 0.1
    via_tol_m: float = 0.03
    via_tol_rad: float = math.radians(5.0)
    timeout_s: float | None = 60.0
    fold: int = 4
    reach_m: float | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "via", ViaMode(self.via))
        except ValueError as error:
            valid = ", ".join(mode.value for mode in ViaMode)
            raise DynamicsInputError("via", self.via, f"must be one of {valid}") from error
        for name in ("settle_m", "settle_rad", "settle_speed_rad_s", "via_tol_m", "via_tol_rad"):
            object.__setattr__(self, name, _check(name, getattr(self, name)))
        for name in ("lift_m", "release_after_s"):
            object.__setattr__(self, name, _check(name, getattr(self, name), allow_zero=True))
        if self.timeout_s is not None:
            object.__setattr__(self, "timeout_s", _check("timeout_s", self.timeout_s))
        if self.reach_m is not None:
            object.__setattr__(self, "reach_m", _check("reach_m", self.reach_m))
        if isinstance(self.fold, bool) or not isinstance(self.fold, int) or self.fold < 1:
            raise DynamicsInputError("fold", self.fold, "must be a whole number >= 1")


@dataclass(frozen=True, eq=False)
class WalkObservation:
    """What a walk step sees at one tick.

    Attributes:
        t: the tick time [s].
        moving_pose: the moving end's 4x4 world pose.
        anchor_pose: the anchor end's 4x4 world pose (the pivot of an arc).
        target_pose: the target SI's 4x4 world pose (z into its module).
        qdot_norm: ‖q̇‖ of the robot's joints [rad/s].
        moving_latched: whether the moving end is latched.
        release_latched: whether the frame to release at the end is latched.
        anchor_latched: whether the anchor end is latched to the world (it stays where it
            is for the whole step, so the target must be within reach of it).

    Raises:
        DynamicsInputError: for a pose that is not a finite rigid transform, or a time or
            speed that is not finite.
    """

    t: float
    moving_pose: FloatArray
    anchor_pose: FloatArray
    target_pose: FloatArray
    qdot_norm: float
    moving_latched: bool
    release_latched: bool = False
    anchor_latched: bool = False

    def __post_init__(self) -> None:
        for name in ("moving_pose", "anchor_pose", "target_pose"):
            object.__setattr__(self, name, checked_transform(name, getattr(self, name)))
        if not math.isfinite(self.t):
            raise DynamicsInputError("t", self.t, "must be a finite time [s]")
        _check("qdot_norm", self.qdot_norm, allow_zero=True)


@dataclass(frozen=True)
class WalkTelemetry(SkillTelemetry):
    """A walk step's figures for one tick.

    Attributes:
        frame: the moving end's frame.
        phase: where the step is.
        via_index: the via point being approached (0-based), or None outside ``via``.
        via_count: how many via points the step has.
        err_mm: the moving end's position error from the target [mm].
        err_deg: its angle error from the (symmetric) target [deg].
        elapsed_s: time since the step started [s].
    """

    skill: ClassVar[str] = "walk_step"
    frame: str
    phase: WalkPhase
    via_index: int | None
    via_count: int
    err_mm: float
    err_deg: float
    elapsed_s: float


@dataclass(frozen=True, eq=False)
class WalkResult:
    """What :meth:`WalkStep.step` returns: the command for this tick.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        message: for a person: what the step is doing, or why it failed.
        goal: the moving end's goal (4x4 world pose), or None: no task for it (it is
            latched, or being released).
        latch_moving: latch the moving end now.
        unlatch_moving: unlatch the moving end now.
        release: release this other frame now, or None.
        telemetry: the tick's figures.
        metrics: on SUCCESS, the step's figures: ``duration_s`` (start to engagement: the
            latch request the plant took, the last one sent), ``final_err_mm`` and
            ``final_err_deg`` (at engagement), ``engaged_at_s``,
            ``total_s`` (start to SUCCESS); otherwise None.
    """

    outcome: Outcome
    message: str
    goal: FloatArray | None
    latch_moving: bool
    unlatch_moving: bool
    release: str | None
    telemetry: WalkTelemetry
    metrics: Mapping[str, Any] | None = None


def _rotate(axis: FloatArray, angle: float, vector: FloatArray) -> FloatArray:
    """Rodrigues: ``vector`` turned by ``angle`` [rad] about the unit ``axis``."""
    c, s = math.cos(angle), math.sin(angle)
    out: FloatArray = vector * c + np.cross(axis, vector) * s + axis * (axis @ vector) * (1.0 - c)
    return out


def _slerp_rotation(start: FloatArray, end: FloatArray, s: float) -> FloatArray:
    """The rotation a fraction ``s`` of the way from ``start`` to ``end`` (3x3, geodesic)."""
    relative = start.T @ end
    skew = 0.5 * (relative - relative.T)
    sin_angle = math.sqrt(skew[2, 1] ** 2 + skew[0, 2] ** 2 + skew[1, 0] ** 2)
    angle = math.atan2(sin_angle, 0.5 * (np.trace(relative) - 1.0))
    if angle < 1e-12:
        return start.copy()
    if math.pi - angle < 1e-6:  # half a turn: the axis from the symmetric part
        symmetric = 0.5 * (relative + np.eye(3))
        axis = symmetric[:, int(np.argmax(np.diag(symmetric)))]
    else:
        axis = np.array([skew[2, 1], skew[0, 2], skew[1, 0]])
    axis = axis / np.linalg.norm(axis)
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    turn = np.eye(3) + math.sin(s * angle) * k + (1.0 - math.cos(s * angle)) * (k @ k)
    result: FloatArray = start @ turn
    return result


def _pose(rotation: FloatArray, position: FloatArray) -> FloatArray:
    out = np.eye(4)
    out[:3, :3] = rotation
    out[:3, 3] = position
    return out


#: Below this |d_s x d_g| (sin 10 deg), start and goal directions pointing apart count as
#: opposite, and the arc turns through the goal SI's outward normal (over the top).
NEARLY_OPPOSITE: Final = math.sin(math.radians(10.0))


def arc_points(
    start: npt.ArrayLike,
    anchor: npt.ArrayLike,
    goal: npt.ArrayLike,
    lift_m: float,
    fractions: tuple[float, ...] = ARC_FRACTIONS,
) -> tuple[FloatArray, ...]:
    """Via points on an arc about the anchor end, raised: the ``arc`` via mode.

    The moving end turns about the anchor's position from its start to the goal. At each
    fraction ``s`` of the turn, the direction from the anchor is the start direction turned
    by ``s`` of the angle to the goal direction (through the goal SI's outward normal ``n``
    when they are opposite, as when an arm flips end over end), then tilted towards ``n``
    as far as a lift of ``lift_m`` subtends; the point lies at the mean of the start's and
    the goal's distances from the anchor, so every via point is equally far from the anchor
    and higher (along ``n``) than the plain arc. The orientation is ``s`` of the way from
    the start's to the goal's (geodesic).

    Args:
        start: the moving end's 4x4 world pose at the start.
        anchor: the anchor end's 4x4 world pose.
        goal: the goal, a 4x4 world pose (the target SI, z into its module).
        lift_m: the lift [m] (>= 0).
        fractions: where on the turn the points lie, each in (0, 1).

    Returns:
        The via points, 4x4 world poses, in order.

    Raises:
        DynamicsInputError: for bad poses, a negative lift, or a start or goal at the
            anchor (the arc has no radius).
    """
    g_s = checked_transform("start", start)
    g_a = checked_transform("anchor", anchor)
    g_g = checked_transform("goal", goal)
    lift = _check("lift_m", lift_m, allow_zero=True)
    up = -g_g[:3, 2]  # the goal SI's outward normal: its z points into the module
    centre = g_a[:3, 3]
    u_s, u_g = g_s[:3, 3] - centre, g_g[:3, 3] - centre
    r_s, r_g = float(np.linalg.norm(u_s)), float(np.linalg.norm(u_g))
    if min(r_s, r_g) < 1e-6:
        raise DynamicsInputError(
            "anchor", g_a[:3, 3].tolist(), "the arc needs the start and the goal away from it"
        )
    d_s, d_g = u_s / r_s, u_g / r_g
    cross = np.cross(d_s, d_g)
    angle = math.atan2(float(np.linalg.norm(cross)), float(d_s @ d_g))
    opposite = float(d_s @ d_g) < 0.0 and np.linalg.norm(cross) < NEARLY_OPPOSITE
    if not opposite and np.linalg.norm(cross) > 1e-9:
        axis = cross / np.linalg.norm(cross)
    else:
        # Nearly opposite (an arm flipping end over end along a row of tiles), or parallel:
        # the plane of the turn is then decided by round-off, and the arc could pass under
        # the tiles or beside them. Turn in the plane of the start direction and the normal,
        # over the top.
        axis = np.cross(d_s, up)
        if np.linalg.norm(axis) < 1e-9:
            axis = np.cross(d_s, np.array([1.0, 0.0, 0.0]))
            if np.linalg.norm(axis) < 1e-9:
                axis = np.cross(d_s, np.array([0.0, 1.0, 0.0]))
        axis = axis / np.linalg.norm(axis)
    radius = 0.5 * (r_s + r_g)
    points = []
    for s in fractions:
        direction = _rotate(axis, s * angle, d_s)
        raised = radius * direction + lift * up
        position = centre + radius * raised / np.linalg.norm(raised)
        points.append(_pose(_slerp_rotation(g_s[:3, :3], g_g[:3, :3], s), position))
    return tuple(points)


def lift_over_down_points(
    start: npt.ArrayLike, goal: npt.ArrayLike, lift_m: float
) -> tuple[FloatArray, ...]:
    """Via points of the ``lift_over_down`` mode: lift off, then over the goal.

    Along the goal SI's outward normal ``n`` (its z points into the module): first the
    start raised by ``lift_m`` (the start's orientation), then the goal raised by
    ``lift_m`` (the goal's orientation); the approach then comes down onto the goal.

    Args:
        start: the moving end's 4x4 world pose at the start.
        goal: the goal, a 4x4 world pose.
        lift_m: the lift [m] (>= 0).

    Returns:
        The two via points, 4x4 world poses.

    Raises:
        DynamicsInputError: for bad poses or a negative lift.
    """
    g_s = checked_transform("start", start)
    g_g = checked_transform("goal", goal)
    up = -g_g[:3, 2] * _check("lift_m", lift_m, allow_zero=True)
    return (_pose(g_s[:3, :3], g_s[:3, 3] + up), _pose(g_g[:3, :3], g_g[:3, 3] + up))


class WalkStep:
    """One SI-to-SI step of an arm end, stepped at the tree's rate (module docstring).

    Args:
        moving: the moving end's frame (``"arm.E2"``).
        params: how it moves, engages and lets go.
        release: the frame to release once the moving end has latched and held (morphology
            A: the arm's other end), or None (morphology C).

    Raises:
        DynamicsInputError: if ``moving`` and ``release`` are the same frame.
    """

    def __init__(
        self, moving: str, params: WalkParams | None = None, *, release: str | None = None
    ) -> None:
        if release is not None and release == moving:
            raise DynamicsInputError(
                "release", release, "must be another frame than the moving end"
            )
        self.moving = moving
        self.params = params or WalkParams()
        self.release = release
        self.phase: WalkPhase | None = None
        self.via_points: tuple[FloatArray, ...] = ()
        self.goal: FloatArray | None = None  # the symmetric target, once planned
        self._via = 0
        self._t0 = 0.0
        self._engaged_at: float | None = None
        self._latched_at: float | None = None
        self._at_engagement = (math.nan, math.nan)
        self._final: WalkResult | None = None

    def _plan(self, obs: WalkObservation) -> None:
        p = self.params
        self.goal = nearest_symmetric_goal(obs.target_pose, obs.moving_pose, p.fold)
        if p.via is ViaMode.ARC:
            self.via_points = arc_points(obs.moving_pose, obs.anchor_pose, self.goal, p.lift_m)
        elif p.via is ViaMode.LIFT_OVER_DOWN:
            self.via_points = lift_over_down_points(obs.moving_pose, self.goal, p.lift_m)
        else:
            self.via_points = ()
        self._via = 0
        self.phase = WalkPhase.VIA if self.via_points else WalkPhase.APPROACH

    def step(self, observation: WalkObservation, dt: float) -> WalkResult:
        """Advance one tick.

        Args:
            observation: this tick's poses, speed and latch states.
            dt: time since the previous step [s] (unused: the phases read ``observation.t``).

        Returns:
            The tick's command and figures; once SUCCESS or FAILURE, the same result again.
        """
        if self._final is not None:
            return self._final
        obs, p = observation, self.params
        if self.phase is None:
            self._t0 = obs.t
            self.phase = WalkPhase.RELEASE_OWN
            beyond = self._beyond_reach(obs)
            if beyond is not None:
                return beyond
            if not obs.moving_latched:
                self._plan(obs)
        elapsed = obs.t - self._t0
        target = self.goal
        if target is None:  # not planned yet (the moving end is still latched)
            target = nearest_symmetric_goal(obs.target_pose, obs.moving_pose, p.fold)
        error = pose_error(obs.moving_pose, target)
        if p.timeout_s is not None and elapsed > p.timeout_s:
            return self._fail(obs, error, elapsed)

        goal: FloatArray | None = None
        latch = unlatch = False
        release: str | None = None
        if self.phase is WalkPhase.RELEASE_OWN:
            if obs.moving_latched:
                unlatch = True
            else:
                self._plan(obs)
        if self.phase is WalkPhase.VIA:
            point = self.via_points[self._via]
            d, a = pose_error(obs.moving_pose, point)
            if d <= p.via_tol_m and a <= p.via_tol_rad:
                self._via += 1
            if self._via >= len(self.via_points):
                self.phase = WalkPhase.APPROACH
            else:
                goal = self.via_points[self._via]
        if self.phase is WalkPhase.APPROACH:
            goal = self.goal
            settled = error[0] <= p.settle_m and error[1] <= p.settle_rad
            if settled and obs.qdot_norm < p.settle_speed_rad_s:
                self.phase = WalkPhase.ENGAGE
                self._engaged_at = obs.t
                self._at_engagement = error
        if self.phase is WalkPhase.ENGAGE:
            if obs.moving_latched:
                self.phase = WalkPhase.HOLD
                self._latched_at = obs.t
                goal = None
            else:
                latch = True
                goal = self.goal  # kept until the latch holds (the controller skips it then)
                # Engagement is the request the plant takes, not the first: one that finds
                # the end outside the plant's capture range (settle_m wider than it) is
                # refused and asked again, the end still closing in.
                self._engaged_at = obs.t
                self._at_engagement = error
        if self.phase is WalkPhase.HOLD:
            latched_at = self._latched_at if self._latched_at is not None else obs.t
            if obs.t - latched_at >= p.release_after_s - 1e-9:
                self.phase = WalkPhase.RELEASE if self.release is not None else WalkPhase.DONE
        if self.phase is WalkPhase.RELEASE:
            if obs.release_latched:
                release = self.release
            else:
                self.phase = WalkPhase.DONE
        telemetry = self._telemetry(error, elapsed)
        if self.phase is WalkPhase.DONE:
            self._final = WalkResult(
                Outcome.SUCCESS,
                f"{self.moving} latched on the target at {self._at_engagement[0] * 1e3:.2f} mm / "
                f"{math.degrees(self._at_engagement[1]):.3f} deg"
                + (f"; {self.release} released" if self.release else ""),
                None,
                False,
                False,
                None,
                telemetry,
                self._metrics(obs.t),
            )
            return self._final
        return WalkResult(
            Outcome.RUNNING,
            self._message(error),
            goal,
            latch,
            unlatch,
            release,
            telemetry,
        )

    def _telemetry(self, error: tuple[float, float], elapsed: float) -> WalkTelemetry:
        phase = self.phase if self.phase is not None else WalkPhase.RELEASE_OWN
        return WalkTelemetry(
            frame=self.moving,
            phase=phase,
            via_index=self._via if phase is WalkPhase.VIA else None,
            via_count=len(self.via_points),
            err_mm=error[0] * 1e3,
            err_deg=math.degrees(error[1]),
            elapsed_s=elapsed,
        )

    def _message(self, error: tuple[float, float]) -> str:
        where = {
            WalkPhase.RELEASE_OWN: f"releasing {self.moving}",
            WalkPhase.VIA: f"via point {self._via + 1} of {len(self.via_points)}",
            WalkPhase.APPROACH: "approaching the target",
            WalkPhase.ENGAGE: f"latching {self.moving}",
            WalkPhase.HOLD: "holding with both ends latched",
            WalkPhase.RELEASE: f"releasing {self.release}",
        }.get(self.phase or WalkPhase.RELEASE_OWN, str(self.phase))
        return (
            f"{where}: {error[0] * 1e3:.1f} mm / {math.degrees(error[1]):.2f} deg from the target"
        )

    def _metrics(self, now: float) -> dict[str, Any]:
        engaged = self._engaged_at if self._engaged_at is not None else now
        return {
            "duration_s": engaged - self._t0,
            "final_err_mm": self._at_engagement[0] * 1e3,
            "final_err_deg": math.degrees(self._at_engagement[1]),
            "engaged_at_s": engaged,
            "total_s": now - self._t0,
        }

    def _beyond_reach(self, obs: WalkObservation) -> WalkResult | None:
        """The FAILURE of a step whose target no end can reach from the latched anchor."""
        p = self.params
        if p.reach_m is None or not obs.anchor_latched:
            return None
        apart = float(np.linalg.norm(obs.target_pose[:3, 3] - obs.anchor_pose[:3, 3]))
        if apart <= p.reach_m + p.settle_m:
            return None
        error = pose_error(obs.moving_pose, obs.target_pose)
        self.phase = WalkPhase.FAILED
        self._final = WalkResult(
            Outcome.FAILURE,
            f"walk step of {self.moving}: the target is {apart * 1e3:.0f} mm from the latched "
            f"anchor, {(apart - p.reach_m) * 1e3:.0f} mm beyond the {p.reach_m * 1e3:.0f} mm "
            "the arm's links reach between its ends; the end did not move. Choose a target "
            "within reach, or walk there in shorter steps",
            None,
            False,
            False,
            None,
            self._telemetry(error, 0.0),
        )
        return self._final

    def _fail(self, obs: WalkObservation, error: tuple[float, float], elapsed: float) -> WalkResult:
        p = self.params
        phase = self.phase or WalkPhase.RELEASE_OWN
        where = phase.value
        if phase is WalkPhase.VIA:
            where += f" (via point {self._via + 1} of {len(self.via_points)})"
        hint = {
            WalkPhase.RELEASE_OWN: f"{self.moving} never reported unlatched",
            WalkPhase.VIA: "the end does not reach the via point: try another via mode or lift_mm",
            WalkPhase.APPROACH: (
                f"it engages within {p.settle_m * 1e3:g} mm / {math.degrees(p.settle_rad):g} "
                f"deg and below {p.settle_speed_rad_s:g} rad/s: is the target in reach, or the "
                "end stuck in a local minimum (try via: arc)?"
            ),
            WalkPhase.ENGAGE: f"the plant did not latch {self.moving}",
            WalkPhase.HOLD: "the hold did not end",
            WalkPhase.RELEASE: f"the plant did not release {self.release}",
        }.get(phase, "")
        self.phase = WalkPhase.FAILED
        self._final = WalkResult(
            Outcome.FAILURE,
            f"walk step of {self.moving} timed out after {elapsed:.2f} s (limit {p.timeout_s:g} s) "
            f"at t = {obs.t:.2f} s in phase {where}: {error[0] * 1e3:.1f} mm / "
            f"{math.degrees(error[1]):.2f} deg from the target; {hint}",
            None,
            False,
            False,
            None,
            self._telemetry(error, elapsed),
        )
        return self._final


__all__ = [
    "ARC_FRACTIONS",
    "ViaMode",
    "WalkObservation",
    "WalkParams",
    "WalkPhase",
    "WalkResult",
    "WalkStep",
    "WalkTelemetry",
    "arc_points",
    "lift_over_down_points",
]
