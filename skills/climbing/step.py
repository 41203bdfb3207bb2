"""Seed 004's stepping cores: one swing of one leg, and the support phase's base adjustment.

These are what the tree's leaves ``climb_step`` and ``base_adjust`` wrap, in the style of
:class:`~limbtree.skills.dynamics.walk.WalkStep`: ``step(observation, dt) -> result`` with
an outcome, the tick's commands, typed telemetry and, at the end, metrics.

* :class:`SwingStep`: one leg swings to its next foothold while the others support. The
  whole swing is planned once, at the first tick, from the observation (every leg's joints,
  the base's pose, the footholds, the terrain's height function):

  - ``baseline``: ClimbLab's two cubic segments (:class:`~.swing.CubicSwing`), no momentum
    distribution, the base held where it is;
  - ``ramp``: LRST (:func:`~.lrst.optimise_swing`: eq. 2's Bezier-7 optimised against the
    swing leg's reaction) and eq. 4's momentum distribution with eq. 6's ``α``
    (:func:`~.md.plan_swing_motion`): the base moves to take up the swing's momentum.

  Each tick then returns every leg's joint targets at its time, interpolated from the plan,
  the gripper actions (open the swinging leg's at the first tick, close it at the last) and
  SUCCESS when the swing's time is over. It fails when the observation reports that a
  supporting gripper has detached (naming the leg, the force and the time) or when the
  plan needs a foot out of its leg's reach.
* :class:`SupportStep`: every leg supports and the base moves to the support phase's pose
  (``ramp``: :func:`~.plane.desired_base_pose`, the footholds' regression plane raised by
  eq. 1 with ``h_add``; ``baseline``: :func:`~.plane.level_base_pose`, level at a fixed
  height) along :class:`~.gait.BaseMotion` (quintic for ramp, ClimbLab's cubic for the
  baseline); each tick returns the legs' joints that keep the feet on their footholds with
  the base at its pose (each leg's closed-form IK, :class:`~.leg.PlanarLeg`).

Per-tick cost: both plans are sampled at ``rate_hz`` when they are made (the support phase's
leg IK for every sample in one vectorised call per leg), so a tick only interpolates
between two samples: the joints linearly, the base pose along the screw between them. At
100 Hz the interpolation error of a foot is far below a micrometre (the path's curvature
times ``dt^2 / 8``).

Planning time: the cores never read a clock (they are deterministic). Give them one
(``clock=time.perf_counter``) and the planning time of each plan is measured with it and
reported in the telemetry and the metrics; without one it is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Final

import numpy as np

from limbtree.kinematics.floating import FloatingTree
from limbtree.skills.climbing._checks import (
    FloatArray,
    positive,
    read_only,
    unit3,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.gait import BaseMotion, Profile, advance_foothold
from limbtree.skills.climbing.leg import PlanarLeg
from limbtree.skills.climbing.lrst import CLEARANCE_M, LrstMethod, LrstWeights, optimise_swing
from limbtree.skills.climbing.md import AlphaLimits, SwingMotion, plan_swing_motion
from limbtree.skills.climbing.plane import (
    HEADING,
    UP,
    BaseFootprint,
    HeightFunction,
    desired_base_pose,
    fit_plane,
    level_base_pose,
)
from limbtree.skills.climbing.swing import CubicSwing, Swing
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

#: A clock for the planning time [s] (``time.perf_counter``); the cores never read one.
Clock = Callable[[], float]

#: HubRobo v3.2's lower face (robot.yaml: the base box spans the hip square, +-54 mm, and its
#: lower face is 30 mm below the base frame): eq. 1's collision check.
HUBROBO_FOOTPRINT = BaseFootprint(half_x_m=0.054, half_y_m=0.054, b_low_m=0.03)


class Planner(StrEnum):
    """Which of seed 004's planners shapes the motion."""

    BASELINE = "baseline"  # ClimbLab's cubic swing, base held; level base at a fixed height
    RAMP = "ramp"  # LRST + MD with alpha; the regression plane raised by eq. 1


class StepPhase(StrEnum):
    """Where a stepping core is."""

    MOVING = "moving"  # following the plan
    SETTLING = "settling"  # the plan ended: the swinging palm comes to rest, gripper open
    DONE = "done"
    FAILED = "failed"


def _planner(value: Planner | str) -> Planner:
    try:
        return Planner(value)
    except ValueError:
        valid = ", ".join(p.value for p in Planner)
        raise ClimbingInputError("planner", value, f"must be one of {valid}") from None


@dataclass(frozen=True)
class GripLoss:
    """A supporting gripper torn off the terrain, as the plant reports it.

    Attributes:
        leg: the leg.
        force_n: the pulling force that tore it off [N].
        t_s: when [s].
    """

    leg: str
    force_n: float
    t_s: float


@dataclass(frozen=True, eq=False)
class ClimbObservation:
    """What a stepping core sees at one tick.

    Attributes:
        t: the tick's time [s].
        q: ``(n,)`` every joint of the robot, in the tree's order [rad].
        base_pose: ``(4, 4)`` the base's pose in the world.
        footholds: every leg -> its contact point in the world [m] (the swinging leg's is
            where its swing starts).
        terrain: the terrain's height at world ``x, y`` (for the next foothold and eq. 1),
            or None: flat footholds' plane, no collision check.
        detached: the grippers the plant reports torn off.

    Raises:
        ClimbingInputError: for a non-finite time or joint, a pose that is not rigid, or a
            foothold that is not a finite 3-vector.
    """

    t: float
    q: FloatArray
    base_pose: FloatArray
    footholds: Mapping[str, FloatArray]
    terrain: HeightFunction | None = None
    detached: tuple[GripLoss, ...] = ()

    def __post_init__(self) -> None:
        if not math.isfinite(float(self.t)):
            raise ClimbingInputError("t", self.t, "must be a finite time [s]")
        object.__setattr__(self, "q", read_only(_finite("q", self.q, None, "joints [rad]")))
        object.__setattr__(self, "base_pose", read_only(_rigid("base_pose", self.base_pose)))
        holds = {
            str(leg): read_only(_finite(f"footholds[{leg!r}]", p, 3, "an x, y, z point [m]"))
            for leg, p in self.footholds.items()
        }
        object.__setattr__(self, "footholds", holds)
        object.__setattr__(self, "detached", tuple(self.detached))


def _finite(name: str, value: Any, size: int | None, what: str) -> FloatArray:
    """A fresh 1-D finite float array (of ``size``): the per-tick check, cheaper than _checks'."""
    try:
        result = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ClimbingInputError(name, value, f"must be {what}") from None
    if result.ndim != 1 or (size is not None and result.shape[0] != size):
        raise ClimbingInputError(name, value, f"must be {what}")
    if not np.isfinite(result).all():
        raise ClimbingInputError(name, value, "contains NaN or infinity")
    return result


def _rigid(name: str, value: Any) -> FloatArray:
    """A fresh 4x4 rigid transform (rotation orthonormal to 1e-6, last row 0 0 0 1)."""
    try:
        pose = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        pose = np.full(1, math.nan)
    if pose.shape != (4, 4) or not np.isfinite(pose).all():
        raise ClimbingInputError(name, value, "must be a finite 4x4 homogeneous transform")
    rotation = pose[:3, :3]
    error = float(np.abs(rotation.T @ rotation - _EYE3).max())
    row = float(np.abs(pose[3] - _LAST_ROW).max())
    if error > 1e-6 or row > 1e-9 or np.linalg.det(rotation) < 0.0:
        raise ClimbingInputError(
            name, value, "must be a rigid transform (orthonormal rotation, last row 0 0 0 1)"
        )
    return pose


_EYE3 = np.eye(3)
_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])


#: A swing's palm at rest, for its gripper to close [m/s] (SwingParams.settle_speed_m_s):
#: 0, the paper's (the gripper closes when the plan ends); 0.005 was measured (docs/climbing.md).
SETTLE_SPEED_M_S: Final = 0.0
#: The longest wait for it [s].
SETTLE_TIMEOUT_S: Final = 0.5


@dataclass(frozen=True)
class SwingParams:
    """How one swing is planned (defaults: seed 004 Sec. 3).

    Attributes:
        planner: baseline or ramp.
        swing_s: ``T_sw`` [s].
        stride_m: how far the foot moves along the footholds' plane [m].
        step_height_m: ``h_sw`` [m], above the higher foothold.
        heading: the walking direction in the world.
        weights: eq. 2's C1, C2, C3 (ramp).
        alpha: a fixed ``α`` (Sec. 4's 0.3), or None for eq. 6 (ramp).
        alpha_limits: eq. 6's ``w_min``, ``w_max`` (ramp).
        rate_hz: how densely the plan is sampled [Hz].
        lrst_samples: eq. 2's samples per swing (ramp).
        lrst_iterations: SLSQP's iteration limit (ramp).
        clearance_m: the swinging foot's clearance over the terrain between the footholds
            [m] (ramp, when the observation has a terrain; :mod:`~.lrst`); 0: none.
        normal_ends: LRST's free points on the normals over the footholds, so the foot
            lifts off and touches down along the footholds' plane normal (ramp; not in the
            paper, :mod:`~.lrst`); False: the paper's eq. 2, all six coordinates free.
        track_foot: the swinging leg's joint targets put its foot on its world path from
            the base's measured pose each tick (both planners); False: the plan's joints,
            computed for the planned base pose.
        settle_speed_m_s: when the plan ends, the gripper closes once the swinging palm
            moves slower than this [m/s] (both planners; not in the paper, whose gripper
            closes when the plan ends, on a palm the servo has not yet brought to rest:
            the spring then takes the rest of its motion); 0 (the default): at once.
        settle_timeout_s: the gripper closes after this long [s] whatever the palm does.

    Raises:
        ClimbingInputError: for an unknown planner or a non-positive duration, stride,
            rate or sample count.
    """

    planner: Planner = Planner.RAMP
    swing_s: float = 1.75
    stride_m: float = 0.08
    step_height_m: float = 0.04
    heading: tuple[float, float, float] = HEADING
    weights: LrstWeights = field(default_factory=LrstWeights)
    alpha: float | None = None
    alpha_limits: AlphaLimits = field(default_factory=AlphaLimits)
    rate_hz: float = 100.0
    lrst_samples: int = 50
    lrst_iterations: int = 60
    clearance_m: float = CLEARANCE_M
    normal_ends: bool = True
    track_foot: bool = True
    settle_speed_m_s: float = SETTLE_SPEED_M_S
    settle_timeout_s: float = SETTLE_TIMEOUT_S

    def __post_init__(self) -> None:
        object.__setattr__(self, "planner", _planner(self.planner))
        for name in ("settle_speed_m_s", "settle_timeout_s"):
            object.__setattr__(self, name, positive(name, getattr(self, name), allow_zero=True))
        object.__setattr__(
            self, "clearance_m", positive("clearance_m", self.clearance_m, allow_zero=True)
        )
        for name in ("swing_s", "stride_m", "rate_hz"):
            object.__setattr__(self, name, positive(name, getattr(self, name)))
        object.__setattr__(
            self, "step_height_m", positive("step_height_m", self.step_height_m, allow_zero=True)
        )
        object.__setattr__(self, "heading", tuple(unit3("heading", self.heading)))
        if self.alpha is not None and not 0.0 <= float(self.alpha) <= 1.0:
            raise ClimbingInputError("alpha", self.alpha, "must be in [0, 1] (or None: eq. 6)")
        for name in ("lrst_samples", "lrst_iterations"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 5:
                raise ClimbingInputError(name, value, "must be a whole number >= 5")


@dataclass(frozen=True)
class SwingTelemetry(SkillTelemetry):
    """A swing's figures for one tick.

    Attributes:
        leg: the swinging leg.
        planner: baseline or ramp.
        phase: where the swing is.
        elapsed_s: time since the swing started [s].
        alpha: eq. 6's ``α`` at this time (0 for the baseline).
        w_min_m3: the smallest manipulability of the legs here [m^3].
        swing_lin_kg_m_s: ``|L_sw,lin|``, the swing leg's linear momentum with the base held
            [kg m/s].
        swing_ang_kg_m2_s: ``|L_sw,ang|`` about the base origin [kg m^2/s].
        apex_m: the planned apex above the higher foothold [m].
        planning_s: the plan's wall time [s] (NaN without a clock).
    """

    skill: ClassVar[str] = "climb_step"
    leg: str
    planner: Planner
    phase: StepPhase
    elapsed_s: float
    alpha: float
    w_min_m3: float
    swing_lin_kg_m_s: float
    swing_ang_kg_m2_s: float
    apex_m: float
    planning_s: float


@dataclass(frozen=True, eq=False)
class Foothold:
    """Where a swing puts its leg down.

    Attributes:
        leg: the swinging leg.
        position: ``(3,)`` the foothold in the world [m].
        normal: ``(3,)`` the unit normal of the footholds' regression plane there (up).
    """

    leg: str
    position: FloatArray
    normal: FloatArray


@dataclass(frozen=True, eq=False)
class StepResult:
    """What a stepping core returns for one tick.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        message: for a person: what the core is doing, or why it failed.
        q: ``(n,)`` every joint's target [rad] (None on FAILURE: hold where you are).
        joint_targets: leg -> its joints' targets [rad] (empty on FAILURE).
        base_pose: ``(4, 4)`` the base's planned pose at this time (what ``q`` assumes).
        open_grippers: legs whose grippers to open now.
        close_grippers: legs whose grippers to close now.
        telemetry: the tick's figures.
        metrics: at SUCCESS or FAILURE, the step's figures; otherwise None.
        foothold: a swing's planned foothold (its target), once planned; else None.
    """

    outcome: Outcome
    message: str
    q: FloatArray | None
    joint_targets: Mapping[str, FloatArray]
    base_pose: FloatArray | None
    open_grippers: tuple[str, ...]
    close_grippers: tuple[str, ...]
    telemetry: SkillTelemetry
    metrics: Mapping[str, Any] | None = None
    foothold: Foothold | None = None


def _rotvec(rotation: FloatArray) -> FloatArray:
    """``log(R)`` as a rotation vector [rad] (for turns well below half a turn)."""
    cosine = min(max(0.5 * (float(np.trace(rotation)) - 1.0), -1.0), 1.0)
    angle = math.acos(cosine)
    axis = np.array(
        [
            rotation[2, 1] - rotation[1, 2],
            rotation[0, 2] - rotation[2, 0],
            rotation[1, 0] - rotation[0, 1],
        ]
    )
    if angle < 1e-9:
        return 0.5 * axis
    return angle / (2.0 * math.sin(angle)) * axis


class _Track:
    """A plan sampled at a fixed rate: joints and base poses, interpolated per tick.

    Both are blended linearly between the two samples around ``t`` (one vector operation).
    For the base's rotation that leaves it orthonormal to ``θ² / 8``, ``θ`` the turn between
    two samples (1e-3 rad at most at 100 Hz: 1e-7); the feet's error from the blend is of
    the same order times the leg's length.
    """

    def __init__(self, times: FloatArray, q: FloatArray, poses: FloatArray) -> None:
        self.times = times
        self.n = q.shape[1]
        self.duration = float(times[-1])
        self.dt = float(times[1] - times[0]) if len(times) > 1 else 1.0
        self._last = len(times) - 1
        self._rows = np.concatenate([q, poses.reshape(len(times), 16)], axis=1)

    def index(self, t: float) -> tuple[int, float]:
        """The segment ``k`` holding ``t`` and the fraction through it."""
        last = self._last
        if last == 0 or t <= 0.0:
            return 0, 0.0
        if t >= self.duration:
            return last - 1, 1.0
        k = min(int(t / self.dt), last - 1)
        return k, min(max((t - float(self.times[k])) / self.dt, 0.0), 1.0)

    def at(self, t: float) -> tuple[FloatArray, FloatArray]:
        """Joints and base pose at ``t`` [s] from the plan's start (held beyond its ends)."""
        if self._last == 0:
            row = self._rows[0].copy()
        else:
            k, s = self.index(t)
            row = (1.0 - s) * self._rows[k] + s * self._rows[k + 1]
        return row[: self.n], row[self.n :].reshape(4, 4)


def _check_legs(tree: FloatingTree, legs: Mapping[str, PlanarLeg]) -> dict[str, PlanarLeg]:
    if len(legs) < 3:
        raise ClimbingInputError(
            "legs", sorted(legs), "needs at least 3 legs (a support plane needs 3 footholds)"
        )
    for name, leg in legs.items():
        if leg.columns.stop > tree.n:
            raise ClimbingInputError("legs", name, f"its joints lie outside the tree's {tree.n}")
    return dict(legs)


def _check_observation(
    obs: ClimbObservation, tree: FloatingTree, legs: Mapping[str, PlanarLeg]
) -> None:
    if obs.q.shape != (tree.n,):
        raise ClimbingInputError(
            "q", obs.q.shape, f"must hold the robot's {tree.n} joints in the tree's order"
        )
    missing = [leg for leg in legs if leg not in obs.footholds]
    if missing:
        raise ClimbingInputError(
            "footholds", sorted(obs.footholds), f"needs the contact points of {', '.join(missing)}"
        )


def _loss_message(loss: GripLoss, what: str) -> str:
    return (
        f"gripper of {loss.leg} detached at t = {loss.t_s:.3f} s: pulled with "
        f"{loss.force_n:.3f} N during {what}"
    )


def _failure(message: str, telemetry: SkillTelemetry, metrics: dict[str, Any]) -> StepResult:
    """The final result of a step that failed: no targets, no gripper action."""
    return StepResult(
        Outcome.FAILURE, message, None, {}, None, (), (), telemetry, {**metrics, "failure": message}
    )


class SwingStep:
    """One swing of one leg (module docstring), stepped at the tree's rate.

    Args:
        tree: the robot.
        legs: every leg -> its closed-form model (the swinging leg and the supporting ones).
        swing_leg: the leg that swings.
        params: how the swing is planned.
        target: the foothold to swing to, in the world [m]; None: ``stride_m`` along the
            footholds' regression plane in the heading, dropped onto the terrain
            (:func:`~.gait.advance_foothold`).
        clock: a clock to time the plan with (``time.perf_counter``), or None.

    Raises:
        ClimbingInputError: for a swinging leg not in ``legs``, fewer than 3 legs or a bad
            target.
    """

    def __init__(
        self,
        tree: FloatingTree,
        legs: Mapping[str, PlanarLeg],
        swing_leg: str,
        params: SwingParams | None = None,
        *,
        target: Sequence[float] | FloatArray | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.legs = _check_legs(tree, legs)
        if swing_leg not in self.legs:
            raise ClimbingInputError("swing_leg", swing_leg, f"must be one of {', '.join(legs)}")
        self.tree = tree
        self.swing_leg = swing_leg
        self.params = params or SwingParams()
        self.target = None if target is None else vector3("target", target)
        self.clock = clock
        self.phase: StepPhase | None = None
        self.swing: Swing | None = None
        self.motion: SwingMotion | None = None
        self.planning_s = math.nan
        self.apex_m = math.nan
        self.settle_s = math.nan  # from the plan's end to the gripper's closing [s]
        self._last_palm: tuple[float, FloatArray] | None = None
        self._track: _Track | None = None
        self._t0 = 0.0
        self._lrst: dict[str, Any] = {}
        self._final: StepResult | None = None
        self._foothold: Foothold | None = None

    # ---- planning
    def _plan(self, obs: ClimbObservation) -> str | None:
        """Plan the swing; returns why it cannot be flown, or None."""
        p, legs, leg = self.params, self.legs, self.swing_leg
        started = self.clock() if self.clock is not None else math.nan
        start = obs.footholds[leg]
        plane = fit_plane(np.array([obs.footholds[name] for name in legs]))
        end = (
            self.target
            if self.target is not None
            else advance_foothold(start, p.stride_m, plane, p.heading, obs.terrain)
        )
        supports = {name: obs.footholds[name] for name in legs if name != leg}
        # the target must be in reach with the base where it is now (baseline) or thereabouts
        rotation_t, origin = obs.base_pose[:3, :3].T, obs.base_pose[:3, 3]
        reach = float(legs[leg].ik(rotation_t @ (end - origin), obs.q[legs[leg].columns]).reach[0])
        if reach < 0.0:
            return (
                f"the foothold {np.round(end * 1e3, 1).tolist()} mm is out of {leg}'s reach "
                f"from the base at {np.round(origin * 1e3, 1).tolist()} mm"
            )
        self._foothold = Foothold(leg, np.array(end, dtype=float), np.asarray(plane.normal))
        swing: Swing
        if p.planner is Planner.RAMP:
            up = plane.normal
            result = optimise_swing(
                self.tree,
                legs[leg],
                obs.q,
                obs.base_pose,
                start,
                end,
                p.swing_s,
                p.step_height_m,
                up=up,
                weights=p.weights,
                samples=p.lrst_samples,
                method=LrstMethod.SMOOTH,
                max_iterations=p.lrst_iterations,
                terrain=obs.terrain if p.clearance_m > 0.0 else None,
                clearance_m=p.clearance_m,
                normal_ends=p.normal_ends,
            )
            swing = result.swing
            self._lrst = {
                "objective_before": result.before.objective,
                "objective_after": result.after.objective,
                "lrst_improved": result.improved,
                "lrst_iterations": result.iterations,
                "lrst_feasible": result.after.feasible,
                # None: no terrain to clear
                "lrst_min_clearance_m": (
                    result.after.min_clearance_m
                    if math.isfinite(result.after.min_clearance_m)
                    else None
                ),
            }
        else:
            up = np.array(UP)
            swing = CubicSwing.between(start, end, p.swing_s, p.step_height_m)
        motion = plan_swing_motion(
            self.tree,
            legs,
            obs.q,
            obs.base_pose,
            supports,
            leg,
            swing,
            rate_hz=p.rate_hz,
            alpha=p.alpha,
            limits=p.alpha_limits,
            distribute=p.planner is Planner.RAMP,
        )
        heights = swing.evaluate(motion.t).position @ up
        self.apex_m = float(heights.max() - max(float(start @ up), float(end @ up)))
        self.swing, self.motion = swing, motion
        self._track = _Track(motion.t, motion.q, motion.base_poses)
        if self.clock is not None:
            self.planning_s = self.clock() - started
        if motion.min_reach < 0.0:
            return (
                f"the planned motion takes a foot out of reach (reach margin "
                f"{motion.min_reach:.3g}, below 0: the leg would have to stretch past straight "
                "or fold past its knee); the foothold is too far for this stance"
            )
        return None

    # ---- ticking
    def step(self, observation: ClimbObservation, dt: float) -> StepResult:
        """Advance one tick.

        Args:
            observation: this tick's joints, base pose, footholds and grippers.
            dt: time since the previous tick [s] (unused: the plan reads ``observation.t``).

        Returns:
            The tick's command and figures; once SUCCESS or FAILURE, the same result again.

        Raises:
            ClimbingInputError: at the first tick, for an observation that does not fit the
                robot (wrong joint count, a leg's foothold missing).
        """
        if self._final is not None:
            return self._final
        obs = observation
        opened: tuple[str, ...] = ()
        if self.phase is None:
            _check_observation(obs, self.tree, self.legs)
            self._t0 = float(obs.t)
            self.phase = StepPhase.MOVING
            opened = (self.swing_leg,)
            why = self._plan(obs)
            if why is not None:
                return self._fail(obs, f"swing of {self.swing_leg} cannot be planned: {why}")
        lost = [loss for loss in obs.detached if loss.leg != self.swing_leg]
        if lost:
            return self._fail(obs, _loss_message(lost[0], f"the swing of {self.swing_leg}"))
        track = self._track
        assert track is not None
        elapsed = float(obs.t) - self._t0
        q, pose = track.at(elapsed)
        targets = {name: q[leg.columns] for name, leg in self.legs.items()}
        if self.params.track_foot:
            targets[self.swing_leg] = self._foot_on_path(obs, min(elapsed, track.duration), q)
        speed = self._palm_speed(obs)
        if elapsed >= track.duration - 1e-9:
            settling = elapsed - track.duration
            if not self._settled(speed, settling):
                self.phase = StepPhase.SETTLING
                return StepResult(
                    Outcome.RUNNING,
                    f"{self.swing_leg} over its foothold, coming to rest: "
                    f"{speed * 1000.0:.1f} mm/s",
                    q,
                    targets,
                    pose,
                    opened,
                    (),
                    self._telemetry(elapsed),
                    foothold=self._foothold,
                )
            self.phase = StepPhase.DONE
            self.settle_s = settling
            rested = (
                f", its palm at rest after {settling:.2f} s"
                if self.params.settle_speed_m_s > 0.0
                else ""
            )
            self._final = StepResult(
                Outcome.SUCCESS,
                f"{self.swing_leg} swung onto its foothold in {track.duration:.2f} s "
                f"({self.params.planner.value}){rested}",
                q,
                targets,
                pose,
                opened,
                (self.swing_leg,),
                self._telemetry(elapsed),
                self._metrics(elapsed),
                foothold=self._foothold,
            )
            return self._final
        return StepResult(
            Outcome.RUNNING,
            f"swinging {self.swing_leg} ({self.params.planner.value}): "
            f"{elapsed:.2f} of {track.duration:.2f} s",
            q,
            targets,
            pose,
            opened,
            (),
            self._telemetry(elapsed),
            foothold=self._foothold,
        )

    def _palm_speed(self, obs: ClimbObservation) -> float:
        """The swinging palm's speed since the previous tick [m/s] (inf at the first)."""
        palm = obs.footholds[self.swing_leg]
        last, self._last_palm = self._last_palm, (float(obs.t), palm)
        if last is None or float(obs.t) <= last[0]:
            return math.inf
        return float(np.linalg.norm(palm - last[1])) / (float(obs.t) - last[0])

    def _settled(self, speed: float, waited_s: float) -> bool:
        """Whether the gripper may close: the palm at rest, or waited long enough."""
        p = self.params
        return (
            p.settle_speed_m_s == 0.0
            or speed <= p.settle_speed_m_s
            or (waited_s >= p.settle_timeout_s - 1e-9)
        )

    def _foot_on_path(self, obs: ClimbObservation, elapsed: float, q: FloatArray) -> FloatArray:
        """The swinging leg's joints that put its foot on its path from the measured base.

        The plan's joints are computed for the planned base pose: they leave the foot off
        its world path by as much as the base is off its plan.
        """
        model = self.legs[self.swing_leg]
        planned = q[model.columns]
        assert self.swing is not None
        point = self.swing.evaluate(np.array([elapsed])).position[0]
        rotation, origin = obs.base_pose[:3, :3], obs.base_pose[:3, 3]
        solution = model.ik(rotation.T @ (point - origin), planned)
        if solution.reach[0] < 0.0:  # out of reach from here: keep the plan's
            return planned
        result: FloatArray = solution.q[0]
        return result

    def _sample(self, elapsed: float) -> int:
        if self._track is None:
            return 0
        k, s = self._track.index(elapsed)
        return k + (1 if s >= 0.5 else 0)

    def _telemetry(self, elapsed: float) -> SwingTelemetry:
        motion = self.motion
        alpha = w_min = lin = ang = math.nan
        if motion is not None:
            k = self._sample(elapsed)
            alpha, w_min = float(motion.alpha[k]), float(motion.min_manipulability[k])
            lin = float(np.linalg.norm(motion.swing_momentum[k, :3]))
            ang = float(np.linalg.norm(motion.swing_momentum[k, 3:]))
        return SwingTelemetry(
            leg=self.swing_leg,
            planner=self.params.planner,
            phase=self.phase or StepPhase.MOVING,
            elapsed_s=elapsed,
            alpha=alpha,
            w_min_m3=w_min,
            swing_lin_kg_m_s=lin,
            swing_ang_kg_m2_s=ang,
            apex_m=self.apex_m,
            planning_s=self.planning_s,
        )

    def _metrics(self, elapsed: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "leg": self.swing_leg,
            "planner": self.params.planner.value,
            "duration_s": elapsed,
            "settle_s": self.settle_s,
            "planning_s": self.planning_s,
            "apex_m": self.apex_m,
        }
        motion = self.motion
        if motion is not None:
            out.update(
                alpha_min=float(motion.alpha.min()),
                alpha_max=float(motion.alpha.max()),
                peak_swing_momentum_lin=float(
                    np.linalg.norm(motion.swing_momentum[:, :3], axis=1).max()
                ),
                peak_momentum_lin=float(np.linalg.norm(motion.momentum[:, :3], axis=1).max()),
                peak_momentum_ang=float(np.linalg.norm(motion.momentum[:, 3:], axis=1).max()),
            )
        out.update(self._lrst)
        return out

    def _fail(self, obs: ClimbObservation, message: str) -> StepResult:
        self.phase = StepPhase.FAILED
        elapsed = float(obs.t) - self._t0
        self._final = _failure(message, self._telemetry(elapsed), self._metrics(elapsed))
        return self._final


@dataclass(frozen=True)
class SupportParams:
    """How the support phase moves the base (defaults: seed 004 Sec. 3, HubRobo).

    Attributes:
        planner: ramp (the regression plane, eq. 1, a quintic) or baseline (level at a
            fixed height, ClimbLab's cubic).
        support_s: the phase's duration [s].
        h_n_m: ``h_n``, the base origin's height above the footholds' centroid [m].
        h_add_m: eq. 1's ``h_add`` [m] (ramp).
        footprint: the base's lower face for eq. 1 (ramp, with a terrain).
        base_height_m: the baseline's fixed world height of the base origin [m]; None: the
            footholds' mean height plus ``h_n_m``.
        heading: the walking direction in the world (the base's x).
        rate_hz: how densely the plan is sampled [Hz].

    Raises:
        ClimbingInputError: for an unknown planner or a bad duration, height or rate.
    """

    planner: Planner = Planner.RAMP
    support_s: float = 1.75
    h_n_m: float = 0.11
    h_add_m: float = 0.02
    footprint: BaseFootprint = HUBROBO_FOOTPRINT
    base_height_m: float | None = None
    heading: tuple[float, float, float] = HEADING
    rate_hz: float = 100.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "planner", _planner(self.planner))
        for name in ("support_s", "rate_hz"):
            object.__setattr__(self, name, positive(name, getattr(self, name)))
        for name in ("h_n_m", "h_add_m"):
            object.__setattr__(self, name, positive(name, getattr(self, name), allow_zero=True))
        if self.base_height_m is not None and not math.isfinite(float(self.base_height_m)):
            raise ClimbingInputError("base_height_m", self.base_height_m, "must be finite [m]")
        object.__setattr__(self, "heading", tuple(unit3("heading", self.heading)))


@dataclass(frozen=True)
class SupportTelemetry(SkillTelemetry):
    """A support phase's figures for one tick.

    Attributes:
        planner: baseline or ramp.
        phase: where the base adjustment is.
        elapsed_s: time since it started [s].
        shift_mm: how far the base origin has to go from its start [mm].
        raise_mm: eq. 1's raise [mm] (0 without a collision).
        penetration_mm: the terrain's largest penetration of the lower face at the plane
            pose before the raise [mm] (negative: clearance; NaN without a terrain).
        planning_s: the plan's wall time [s] (NaN without a clock).
    """

    skill: ClassVar[str] = "base_adjust"
    planner: Planner
    phase: StepPhase
    elapsed_s: float
    shift_mm: float
    raise_mm: float
    penetration_mm: float
    planning_s: float


class SupportStep:
    """The support phase's base adjustment (module docstring), stepped at the tree's rate.

    Args:
        tree: the robot.
        legs: every leg -> its closed-form model (all support).
        params: where and how the base moves.
        clock: a clock to time the plan with, or None.

    Raises:
        ClimbingInputError: for fewer than 3 legs.
    """

    def __init__(
        self,
        tree: FloatingTree,
        legs: Mapping[str, PlanarLeg],
        params: SupportParams | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.legs = _check_legs(tree, legs)
        self.tree = tree
        self.params = params or SupportParams()
        self.clock = clock
        self.phase: StepPhase | None = None
        self.goal: FloatArray | None = None
        self.motion: BaseMotion | None = None
        self.planning_s = math.nan
        self.raise_m = 0.0
        self.penetration_m = math.nan
        self._track: _Track | None = None
        self._t0 = 0.0
        self._final: StepResult | None = None

    def _plan(self, obs: ClimbObservation) -> str | None:
        p = self.params
        started = self.clock() if self.clock is not None else math.nan
        holds = np.array([obs.footholds[name] for name in self.legs])
        if p.planner is Planner.RAMP:
            target = desired_base_pose(
                holds,
                p.h_n_m,
                heading=p.heading,
                terrain=obs.terrain,
                footprint=p.footprint if obs.terrain is not None else None,
                h_add_m=p.h_add_m,
            )
            goal = np.array(target.pose)
            self.raise_m = target.raise_m
            if target.penetration_m is not None:
                self.penetration_m = target.penetration_m
            profile = Profile.QUINTIC
        else:
            height = (
                float(holds[:, 2].mean()) + p.h_n_m
                if p.base_height_m is None
                else float(p.base_height_m)
            )
            goal = level_base_pose(holds, height, p.heading)
            profile = Profile.CUBIC
        motion = BaseMotion(obs.base_pose, goal, p.support_s, profile)
        count = max(math.ceil(p.support_s * p.rate_hz), 1) + 1
        times = np.linspace(0.0, p.support_s, count)
        poses = np.array([motion.at(float(t)).pose for t in times])
        qs = np.tile(obs.q, (count, 1))
        rotation_t = np.transpose(poses[:, :3, :3], (0, 2, 1))
        worst, farthest = math.inf, ""
        for name, leg in self.legs.items():
            local = np.einsum("kij,kj->ki", rotation_t, obs.footholds[name] - poses[:, :3, 3])
            solution = leg.ik(local, obs.q[leg.columns])
            qs[:, leg.columns] = solution.q
            if float(solution.reach.min()) < worst:
                worst, farthest = float(solution.reach.min()), name
        self.goal, self.motion = goal, motion
        self._track = _Track(times, qs, poses)
        if self.clock is not None:
            self.planning_s = self.clock() - started
        if worst < 0.0:
            return (
                f"the base pose at {np.round(goal[:3, 3] * 1e3, 1).tolist()} mm puts "
                f"{farthest}'s foot out of reach (reach margin {worst:.3g}, below 0: the leg "
                "would have to stretch past straight or fold past its knee); the base is "
                "raised or moved too far from the footholds for the legs"
            )
        return None

    def step(self, observation: ClimbObservation, dt: float) -> StepResult:
        """Advance one tick (as :meth:`SwingStep.step`); no gripper actions."""
        if self._final is not None:
            return self._final
        obs = observation
        if self.phase is None:
            _check_observation(obs, self.tree, self.legs)
            self._t0 = float(obs.t)
            self.phase = StepPhase.MOVING
            why = self._plan(obs)
            if why is not None:
                return self._fail(obs, f"base adjustment cannot be planned: {why}")
        if obs.detached:
            return self._fail(obs, _loss_message(obs.detached[0], "the base adjustment"))
        track = self._track
        assert track is not None
        elapsed = float(obs.t) - self._t0
        q, pose = track.at(elapsed)
        targets = {name: q[leg.columns] for name, leg in self.legs.items()}
        if elapsed >= track.duration - 1e-9:
            self.phase = StepPhase.DONE
            self._final = StepResult(
                Outcome.SUCCESS,
                f"base at its support pose ({self.params.planner.value}), raised "
                f"{self.raise_m * 1e3:.1f} mm",
                q,
                targets,
                pose,
                (),
                (),
                self._telemetry(elapsed),
                self._metrics(elapsed),
            )
            return self._final
        return StepResult(
            Outcome.RUNNING,
            f"moving the base ({self.params.planner.value}): {elapsed:.2f} of "
            f"{track.duration:.2f} s",
            q,
            targets,
            pose,
            (),
            (),
            self._telemetry(elapsed),
        )

    def _shift(self) -> float:
        if self.motion is None:
            return math.nan
        return float(np.linalg.norm(self.motion.end[:3, 3] - self.motion.start[:3, 3]))

    def _telemetry(self, elapsed: float) -> SupportTelemetry:
        return SupportTelemetry(
            planner=self.params.planner,
            phase=self.phase or StepPhase.MOVING,
            elapsed_s=elapsed,
            shift_mm=self._shift() * 1e3,
            raise_mm=self.raise_m * 1e3,
            penetration_mm=self.penetration_m * 1e3,
            planning_s=self.planning_s,
        )

    def _metrics(self, elapsed: float) -> dict[str, Any]:
        turn = math.nan
        if self.motion is not None:
            relative = self.motion.start[:3, :3].T @ self.motion.end[:3, :3]
            turn = math.degrees(float(np.linalg.norm(_rotvec(relative))))
        return {
            "planner": self.params.planner.value,
            "duration_s": elapsed,
            "planning_s": self.planning_s,
            "shift_m": self._shift(),
            "turn_deg": turn,
            "raise_m": self.raise_m,
            "penetration_m": self.penetration_m,
        }

    def _fail(self, obs: ClimbObservation, message: str) -> StepResult:
        self.phase = StepPhase.FAILED
        elapsed = float(obs.t) - self._t0
        self._final = _failure(message, self._telemetry(elapsed), self._metrics(elapsed))
        return self._final


__all__ = [
    "HUBROBO_FOOTPRINT",
    "ClimbObservation",
    "Clock",
    "GripLoss",
    "Planner",
    "StepPhase",
    "StepResult",
    "SupportParams",
    "SupportStep",
    "SupportTelemetry",
    "SwingParams",
    "SwingStep",
    "SwingTelemetry",
]
