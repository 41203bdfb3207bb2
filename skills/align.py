"""``Align``: one limb's end-effector onto a motion-captured target (seed 002), as one core.

It picks the controller (Version 1, step and settle: :class:`AlignV1`; Version 2, adaptive
hypersphere clamp: :class:`AlignV2`) and owns what turns the controller's output into a
limb command:

* Version 1 issues pose targets; each is reached along a LERP segment from where the limb
  was, clamped around the sensed end-effector every tick (seed 000), so no command leaves
  the hypersphere, and no further than a minimum-jerk interpolation within ``max_speed``
  and ``max_accel`` has reached (seed 002 Sec. II-A's "smooth, incremental joint-space
  motion").
* Version 2 issues a world-frame twist each tick, which the limb integrates.

It also samples the measured end-effector path at 10 Hz for the paper's path figures
(length, deviation, wobble; seed 002 Sec. III-B) and fails with an actionable message when
the alignment runs out of time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
from limbtree.kinematics.trajectory import poses_from_arrays
from limbtree.skills.align_v1 import AlignV1, AlignV1Params, AlignV1Telemetry
from limbtree.skills.align_v2 import AlignV2, AlignV2Params, AlignV2Telemetry
from limbtree.skills.alignment import AlignmentParameterError, AlignObservation, Twist
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

#: Interval [s] at which the end-effector path is sampled for its figures (seed 002: 10 Hz).
PATH_SAMPLE_S = 0.1
#: Samples in the moving average that :func:`path_figures` takes wobble from (0.5 s).
WOBBLE_WINDOW = 5
#: Peak speed and peak acceleration of a minimum-jerk move, per unit of mean speed
#: (length / duration) and of length / duration**2.
_MJ_PEAK_SPEED = 15.0 / 8.0
_MJ_PEAK_ACCEL = 10.0 / math.sqrt(3.0)


def path_figures(samples: Sequence[tuple[float, float, float]]) -> dict[str, float]:
    """Path length and lateral wobble of a sampled end-effector path.

    Args:
        samples: measured positions [m], in time order.

    Returns:
        ``path_length_mm``: the sum of the distances between samples [mm];
        ``deviation_rms_mm``: the RMS distance of the samples from the straight line
        through the first and the last [mm] (0 for a straight path, however curved its
        speed; the paper's "more direct path");
        ``wobble_rms_mm``: the RMS distance of the samples from their centred moving
        average over ``WOBBLE_WINDOW`` samples, across that line [mm]: sideways
        oscillation, with slow curvature and stop-and-go along the path removed (the
        paper's "lateral wobble").
    """
    if len(samples) < 2:
        return {"path_length_mm": 0.0, "deviation_rms_mm": 0.0, "wobble_rms_mm": 0.0}
    points = np.asarray(samples, dtype=np.float64)
    length = float(np.linalg.norm(np.diff(points, axis=0), axis=1).sum())
    chord = points[-1] - points[0]
    norm = float(np.linalg.norm(chord))
    axis = chord / norm if norm > 0.0 else np.zeros(3)

    def lateral(vectors: npt.NDArray[np.float64]) -> float:
        across = vectors - np.outer(vectors @ axis, axis)
        return float(np.sqrt(np.mean(np.sum(across**2, axis=1))))

    deviation = lateral(points - points[0])
    wobble = 0.0
    if len(points) >= WOBBLE_WINDOW:
        kernel = np.ones(WOBBLE_WINDOW) / WOBBLE_WINDOW
        smooth = np.stack([np.convolve(points[:, k], kernel, "valid") for k in range(3)], 1)
        half = WOBBLE_WINDOW // 2
        wobble = lateral(points[half : half + len(smooth)] - smooth)
    return {
        "path_length_mm": length * 1e3,
        "deviation_rms_mm": deviation * 1e3,
        "wobble_rms_mm": wobble * 1e3,
    }


def minimum_jerk(tau: float) -> float:
    """Progress ``10 tau^3 - 15 tau^4 + 6 tau^5`` of a minimum-jerk move at time ``tau``.

    Speed and acceleration are zero at both ends, so a step starts and stops without a jolt
    that would set a flexible limb swinging. Its peak speed is 15/8 of the mean, its peak
    acceleration ``10 / sqrt(3)`` times ``length / duration**2``.

    Args:
        tau: the fraction of the move's duration gone, in [0, 1].

    Returns:
        The fraction of the way covered, in [0, 1].
    """
    return tau * tau * tau * (10.0 + tau * (6.0 * tau - 15.0))


def step_duration(length: float, max_speed: float | None, max_accel: float | None) -> float:
    """The shortest minimum-jerk move over ``length`` within a peak speed and acceleration.

    Args:
        length: the distance [any unit u] (>= 0).
        max_speed: the peak speed [u/s] (> 0), or None for none.
        max_accel: the peak acceleration [u/s^2] (> 0), or None for none.

    Returns:
        The duration [s]; 0 when neither bound is given (the move is not timed).
    """
    duration = 0.0
    if max_speed is not None:
        duration = _MJ_PEAK_SPEED * length / max_speed
    if max_accel is not None:
        duration = max(duration, math.sqrt(_MJ_PEAK_ACCEL * length / max_accel))
    return duration


def _millimetres(pose: Pose | None) -> tuple[float, float, float] | None:
    if pose is None:
        return None
    x, y, z = (pose.position * 1e3).tolist()
    return (x, y, z)


@dataclass(frozen=True)
class AlignTelemetry(SkillTelemetry):
    """An alignment's figures for one tick: its controller's, and where the poses were.

    Attributes:
        version: 1 or 2, the controller.
        ee_mm: the measured end-effector position [mm], or None when not seen.
        goal_mm: the goal position (target with offset) [mm], or None when not seen.
        controller: the controller's own figures (:class:`AlignV1Telemetry` or
            :class:`AlignV2Telemetry`), flattened into :meth:`as_map`.
    """

    skill: ClassVar[str] = "align"
    version: int
    ee_mm: tuple[float, float, float] | None
    goal_mm: tuple[float, float, float] | None
    controller: AlignV1Telemetry | AlignV2Telemetry

    def as_map(self) -> dict[str, Any]:
        """The controller's figures, then ``version``, ``ee_mm`` and ``goal_mm``."""
        figures = self.controller.as_map()
        figures.pop("skill")
        return {
            "skill": self.skill,
            **figures,
            "version": self.version,
            "ee_mm": None if self.ee_mm is None else list(self.ee_mm),
            "goal_mm": None if self.goal_mm is None else list(self.goal_mm),
        }


@dataclass(frozen=True)
class AlignResult:
    """What :meth:`Align.step` returns.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE; the limb should hold once it is not RUNNING.
        message: for a person: what the alignment is doing, or why it failed.
        pose: Version 1: the world-frame end-effector pose to command, or None to send
            nothing this tick.
        center: the sensed end-effector pose ``pose`` was clamped around, or None.
        distance: the metric distance from ``pose`` to ``center`` (``<= 1``), or None.
        twist: Version 2: the world-frame twist ``(vx, vy, vz, wx, wy, wz)`` [m/s,
            rad/s] to command, or None to send nothing.
        telemetry: the tick's figures, or None when the controller was not stepped (the
            alignment ran out of time).
        target: the goal in the limb's own frame (:func:`limb_goal`): an estimate, made
            each step from the capture, of the pose its sensed end-effector will have when
            the captured one meets the goal; None before the capture has seen both.
        metrics: on SUCCESS, the run's alignment figures (duration, final errors, path
            figures); otherwise None.
    """

    outcome: Outcome
    message: str
    pose: Pose | None = None
    center: Pose | None = None
    distance: float | None = None
    twist: Twist | None = None
    telemetry: AlignTelemetry | None = None
    metrics: Mapping[str, Any] | None = None
    target: Pose | None = None


def limb_goal(ee: Pose, goal: Pose, limb_pose: Pose | None) -> Pose:
    """An alignment's goal moved from the capture's frame into the limb's own.

    The capture measures the end-effector at ``ee`` and the goal at ``goal``; the limb
    senses its end-effector at ``limb_pose``. Where they disagree (calibration, flex), the
    limb ends at ``limb_pose`` moved by the captured gap, in the world frame: position
    ``limb + (goal - ee)``, rotation ``R_goal R_ee^T R_limb``. Without ``limb_pose``:
    ``goal``.
    """
    if limb_pose is None:
        return goal
    m = np.eye(4)
    m[:3, :3] = goal.rotation @ ee.rotation.T @ limb_pose.rotation
    m[:3, 3] = limb_pose.position + goal.position - ee.position
    return Pose.from_matrix(m)


class Align:
    """One alignment: a controller of seed 002 and the command it becomes.

    Args:
        params: the controller's parameters; their type picks the version.
        metric: the hypersphere a Version 1 command is clamped to around the sensed
            end-effector (``p_e`` [m], ``r_e`` [rad]).
        max_speed: the peak speed [m/s] of a Version 1 step, or None for no cap.
        max_accel: the peak acceleration [m/s^2] of a Version 1 step, or None for no cap.
        timeout_s: how long [s] the alignment may take before it fails, or None.

    Raises:
        AlignmentParameterError: if a bound is not a positive number.
    """

    def __init__(
        self,
        params: AlignV1Params | AlignV2Params,
        metric: SE3Metric,
        *,
        max_speed: float | None = None,
        max_accel: float | None = None,
        timeout_s: float | None = None,
    ) -> None:
        for name, value in (
            ("max_speed", max_speed),
            ("max_accel", max_accel),
            ("timeout_s", timeout_s),
        ):
            if value is not None and not (math.isfinite(value) and value > 0.0):
                raise AlignmentParameterError(name, value, "must be a positive number or None")
        self.controller: AlignV1 | AlignV2 = (
            AlignV1(params) if isinstance(params, AlignV1Params) else AlignV2(params)
        )
        self.version = 1 if isinstance(self.controller, AlignV1) else 2
        self.metric = metric
        self.timeout_s = timeout_s
        #: how fast [metric units/s] a Version 1 step's goal point may advance; None: no cap
        self.max_rate = None if max_speed is None else max_speed / metric.p_e
        #: its peak acceleration [metric units/s^2]; None: no cap
        self.max_accel = None if max_accel is None else max_accel / metric.p_e
        self._segment: tuple[Pose, Pose] | None = None
        self._segment_since = 0.0  # when the segment started [s]
        self._segment_duration = 0.0  # how long its interpolation takes [s]; 0: no limit
        self._t0: float | None = None
        self._samples: list[tuple[float, float, float]] = []  # measured ee at 10 Hz [m]
        self._next_sample = 0.0
        self._last: AlignV1Telemetry | AlignV2Telemetry | None = None
        self._target: Pose | None = None

    @property
    def params(self) -> AlignV1Params | AlignV2Params:
        """The controller's parameters."""
        return self.controller.params

    def step(self, observation: AlignObservation, dt: float) -> AlignResult:
        """Advance one tick.

        Args:
            observation: the tick time, the captured end-effector and target, and the
                limb's own end-effector pose; its ``limb_settled`` is ignored (the core
                knows when its own segment is done).
            dt: the time since the previous step [s] (0 at the first).

        Returns:
            The tick's :class:`AlignResult`.
        """
        now = observation.time
        if self._t0 is None:
            self._t0 = now
            self._next_sample = now
        if self.timeout_s is not None and now - self._t0 > self.timeout_s:
            return AlignResult(Outcome.FAILURE, self._timeout_message(self.timeout_s))
        ee, target = observation.ee_pose, observation.target_pose
        limb_pose = observation.limb_pose
        if ee is not None and now >= self._next_sample:
            # The paper logs the path at 10 Hz (seed 002 Sec. III-B).
            x, y, z = ee.position.tolist()
            self._samples.append((x, y, z))
            self._next_sample = now + PATH_SAMPLE_S - 1e-9
        pose: Pose | None = None
        distance: float | None = None
        twist: Twist | None = None
        figures: AlignV1Telemetry | AlignV2Telemetry
        controller = self.controller
        if isinstance(controller, AlignV1):
            settled = self._segment_done(limb_pose)
            v1 = controller.step(AlignObservation(now, ee, target, limb_pose, settled), dt)
            if v1.outcome is Outcome.RUNNING:
                pose = self._follow(v1.command, v1.stepped, limb_pose, now)
            outcome, message, figures, goal = v1.outcome, v1.message, v1.telemetry, v1.goal
        else:
            v2 = controller.step(AlignObservation(now, ee, target, limb_pose), dt)
            if v2.outcome is Outcome.RUNNING:
                twist = v2.twist_world
            outcome, message, figures, goal = v2.outcome, v2.message, v2.telemetry, v2.goal
        if pose is not None and limb_pose is not None:
            distance = self.metric.distance(limb_pose, pose)
        self._last = figures
        if ee is not None and goal is not None:
            self._target = limb_goal(ee, goal, limb_pose)
        telemetry = AlignTelemetry(self.version, _millimetres(ee), _millimetres(goal), figures)
        feedback = message or (
            f"V{self.version}: Δd = {figures.dd_mm or 0:.1f} mm, "
            f"Δθ = {figures.dtheta_deg or 0:.2f} deg"
        )
        metrics = None
        if outcome is Outcome.SUCCESS:
            metrics = {
                "version": self.version,
                "duration_s": now - self._t0,
                "final_dd_mm": figures.dd_mm,
                "final_dtheta_deg": figures.dtheta_deg,
                **path_figures(self._samples),
            }
        return AlignResult(
            outcome,
            feedback,
            pose=pose,
            center=limb_pose if pose is not None else None,
            distance=distance,
            twist=twist,
            telemetry=telemetry,
            metrics=metrics,
            target=self._target,
        )

    def _timeout_message(self, limit: float) -> str:
        """Why the alignment ran out of time, from the controller's last figures, and what to do."""
        figures = self._last
        dd = None if figures is None else figures.dd_mm
        dtheta = None if figures is None else figures.dtheta_deg
        if figures is None or dd is None or dtheta is None:
            return (
                f"not aligned after {limit:g} s: the end-effector and the target were not "
                "both seen long enough to measure the error"
            )
        dd_tol = self.params.dd_tol_m * 1e3
        dtheta_tol = math.degrees(self.params.dtheta_tol_rad)
        message = (
            f"not aligned after {limit:g} s: Δd {dd:.1f} mm (needs <= {dd_tol:g}), "
            f"Δθ {dtheta:.2f} deg (needs <= {dtheta_tol:g})"
        )
        v2 = figures if isinstance(figures, AlignV2Telemetry) else None
        jitter = None if v2 is None else v2.sigma_jitter_mm
        if dd <= 2.0 * dd_tol and dtheta <= 2.0 * dtheta_tol:
            if jitter is None:
                return (
                    f"{message}; it hovers around the thresholds: widen dd_mm / dtheta_deg, "
                    "or give it longer (timeout_s)"
                )
            return (
                f"{message}; it hovers around the thresholds while the capture jitters by "
                f"{jitter:.1f} mm: average more samples (v2: {{N: 5}}), widen dd_mm / "
                "dtheta_deg, or give it longer (timeout_s)"
            )
        if v2 is not None and v2.delta_t_eff is not None:
            factors = ", ".join(
                f"{k} {v or 0.0:.2f}"
                for k, v in (("f_j", v2.f_j), ("f_k", v2.f_k), ("f_s", v2.f_s))
            )
            return (
                f"{message}; still far, moving at up to {v2.delta_t_eff * 1e3:.1f} mm/s as the "
                f"shrink factors allow ({factors}): is the limb blocked, or the capture that noisy?"
            )
        return f"{message}; still far: is the limb blocked or much slower than its steps?"

    def _segment_done(self, limb_pose: Pose | None) -> bool | None:
        if self._segment is None or limb_pose is None:
            return None if limb_pose is None else True
        _, end = self._segment
        return limb_pose.distance_to(end) < 1e-3 and limb_pose.angle_to(end) < math.radians(0.2)

    def _follow(
        self, goal: Pose | None, stepped: bool, limb_pose: Pose | None, now: float
    ) -> Pose | None:
        """Version 1: the command towards the step target along a LERP, clamped around the limb.

        The command is the furthest point of the segment inside the hypersphere around the
        limb (seed 000), and no further than the step's interpolation has reached: a
        minimum-jerk profile within ``max_speed`` and ``max_accel``, so a step starts and
        stops without a jolt.

        Returns:
            The pose to command, or None to send nothing.
        """
        if goal is None or limb_pose is None:
            return None
        segment = self._segment
        if stepped or segment is None:
            segment = self._start_segment(limb_pose, goal, now)
        start, end = segment
        result = hypersphere_clamp(limb_pose, start, end, self.metric)
        if result.t is None:
            # Pushed off the segment: start a new one from where the limb is.
            start, end = self._start_segment(limb_pose, end, now)
            result = hypersphere_clamp(limb_pose, start, end, self.metric)
        if result.t is None:
            return None
        t = result.t
        command = poses_from_arrays(*result.problem.points(t))[0]
        if self._segment_duration > 0.0:
            tau = min(1.0, (now - self._segment_since) / self._segment_duration)
            eased = minimum_jerk(tau)
            if eased < t:
                command = poses_from_arrays(*result.problem.points(eased))[0]
                if self.metric.distance(limb_pose, command) > 1.0:
                    # The limb is ahead of the interpolation (still carried by the last
                    # step): the nearest point inside the sphere, found from the far end.
                    back = hypersphere_clamp(limb_pose, end, start, self.metric)
                    t = t if back.t is None else max(eased, 1.0 - back.t)
                    command = poses_from_arrays(*result.problem.points(t))[0]
        return command

    def _start_segment(self, start: Pose, end: Pose, now: float) -> tuple[Pose, Pose]:
        self._segment = (start, end)
        self._segment_since = now
        length = self.metric.distance(start, end)
        self._segment_duration = step_duration(length, self.max_rate, self.max_accel)
        return self._segment


__all__ = [
    "PATH_SAMPLE_S",
    "WOBBLE_WINDOW",
    "Align",
    "AlignResult",
    "AlignTelemetry",
    "minimum_jerk",
    "path_figures",
    "step_duration",
]
