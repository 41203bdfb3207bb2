"""``align``: drive an end-effector onto a motion-captured target (seed 002).

Version 1 (step-and-settle) issues pose targets; each is reached through the synchronizer's
LERP, clamped around the sensed end-effector every tick (seed 000), so no command leaves the
hypersphere. Version 2 (adaptive hypersphere clamp) issues a twist each tick, which the limb
integrates. Both read the end-effector and the target from the motion capture; Version 1
also gives its core the limb's own kinematics, so steps move the limb by the right amount
even where the capture sees a flexed arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import py_trees

from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
from limbtree.kinematics.trajectory import poses_from_arrays
from limbtree.skills import Outcome
from limbtree.skills.align_v1 import AlignV1, AlignV1Params
from limbtree.skills.align_v2 import AlignV2, AlignV2Params
from limbtree.skills.alignment import AlignObservation
from limbtree.trees.behaviours.base import STATUS, CannotStart, SkillBehaviour
from limbtree.trees.context import MissionContext

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


class AlignBehaviour(SkillBehaviour):
    """Align one limb's end-effector to a target (``align``)."""

    node_type = "align"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limb = context.limb(str(self.params["limb"]))
        self.version = int(self.params.get("version", 2))
        self.core: AlignV1 | AlignV2 | None = None
        self.metric = SE3Metric(
            float(self.params.get("p_e", 0.02)), float(self.params.get("r_e", math.radians(10)))
        )
        max_speed = self.params.get("max_speed")
        max_accel = self.params.get("max_accel")
        #: how fast [metric units/s] a Version 1 step's goal point may advance; None: no cap
        self.max_rate = None if max_speed is None else float(max_speed) / self.metric.p_e
        #: its peak acceleration [metric units/s^2]; None: no cap
        self.max_accel = None if max_accel is None else float(max_accel) / self.metric.p_e
        self._segment: tuple[Pose, Pose] | None = None
        self._segment_since = 0.0  # when the segment started [s]
        self._segment_duration = 0.0  # how long its interpolation takes [s]; 0: no limit
        self._t0 = 0.0
        self._samples: list[tuple[float, float, float]] = []  # measured ee at 10 Hz [m]
        self._next_sample = 0.0
        self._last_figures: Mapping[str, Any] = {}  # the core's last record()

    def start(self) -> None:
        """A fresh controller each time the node starts."""
        offset = self.params.get("offset")
        common: dict[str, Any] = {
            "dd_tol_m": float(self.params.get("dd", 0.010)),
            "dtheta_tol_rad": float(self.params.get("dtheta", math.radians(2.0))),
        }
        if offset is not None:
            common["offset"] = Pose.from_array(offset)
        timeout = self.params.get("stale_timeout")
        if timeout is not None:
            common["target_timeout_s"] = float(timeout)
        tuned = dict(self.params.get(f"v{self.version}") or {})  # the mission's v1 / v2 map
        self.core = (
            AlignV1(AlignV1Params(**common, **tuned))
            if self.version == 1
            else AlignV2(AlignV2Params(**common, **tuned))
        )
        self._segment = None
        self._t0 = self.context.clock()
        self._samples = []
        self._next_sample = self._t0
        self._last_figures = {}

    def step(self) -> py_trees.common.Status:
        """Observe, step the core, command the limb."""
        core = self.core
        if core is None:
            raise CannotStart(f"{self.name} was ticked before it was initialised")
        now = self.context.clock()
        limit = self.params.get("timeout")
        if limit is not None and now - self._t0 > float(limit):
            self.limb.hold()
            self.feedback_message = self._timeout_message(float(limit))
            return py_trees.common.Status.FAILURE
        ee = self.limb.mocap("ee")
        target = self.limb.mocap(str(self.params["target"]))
        limb_pose = self.limb.pose()
        if ee is not None and now >= self._next_sample:
            # The paper logs the path at 10 Hz (seed 002 Sec. III-B).
            self._samples.append(tuple(ee.position.tolist()))
            self._next_sample = now + PATH_SAMPLE_S - 1e-9
        if isinstance(core, AlignV1):
            v1 = core.step(
                AlignObservation(now, ee, target, limb_pose, self._segment_done(limb_pose))
            )
            if v1.outcome is Outcome.RUNNING:
                self._follow(v1.command, v1.stepped, limb_pose, now)
            outcome, message, figures, goal = v1.outcome, v1.message, v1.record(), v1.goal
        else:
            v2 = core.step(AlignObservation(now, ee, target, limb_pose))
            if v2.outcome is Outcome.RUNNING:
                twist = np.asarray(v2.twist_world, dtype=np.float64)
                self.limb.command_twist(twist[:3].tolist(), twist[3:].tolist())
            outcome, message, figures, goal = v2.outcome, v2.message, v2.record(), v2.goal
        self._last_figures = figures
        self.report(
            **figures,
            version=self.version,
            ee_mm=None if ee is None else (ee.position * 1e3).tolist(),
            goal_mm=None if goal is None else (goal.position * 1e3).tolist(),
        )
        self.feedback_message = message or (
            f"V{self.version}: Δd = {figures.get('dd_mm') or 0:.1f} mm, "
            f"Δθ = {figures.get('dtheta_deg') or 0:.2f} deg"
        )
        if outcome is Outcome.SUCCESS:
            self._record_metrics(now, figures)
        if outcome is not Outcome.RUNNING:
            self.limb.hold()
        return STATUS[outcome]

    def _timeout_message(self, limit: float) -> str:
        """Why the alignment ran out of time, from the core's last figures, and what to do."""
        figures = self._last_figures
        dd, dtheta = figures.get("dd_mm"), figures.get("dtheta_deg")
        if dd is None or dtheta is None or self.core is None:
            return (
                f"not aligned after {limit:g} s: the end-effector and the target were not "
                "both seen long enough to measure the error"
            )
        dd_tol = self.core.params.dd_tol_m * 1e3
        dtheta_tol = math.degrees(self.core.params.dtheta_tol_rad)
        message = (
            f"not aligned after {limit:g} s: Δd {dd:.1f} mm (needs <= {dd_tol:g}), "
            f"Δθ {dtheta:.2f} deg (needs <= {dtheta_tol:g})"
        )
        jitter = figures.get("sigma_jitter_mm")
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
        speed = figures.get("delta_t_eff")
        if speed is not None:
            factors = ", ".join(f"{k} {figures.get(k) or 0.0:.2f}" for k in ("f_j", "f_k", "f_s"))
            return (
                f"{message}; still far, moving at up to {speed * 1e3:.1f} mm/s as the shrink "
                f"factors allow ({factors}): is the limb blocked, or the capture that noisy?"
            )
        return f"{message}; still far: is the limb blocked or much slower than its steps?"

    def _segment_done(self, limb_pose: Pose | None) -> bool | None:
        if self._segment is None or limb_pose is None:
            return None if limb_pose is None else True
        _, end = self._segment
        return limb_pose.distance_to(end) < 1e-3 and limb_pose.angle_to(end) < math.radians(0.2)

    def _follow(self, goal: Pose | None, stepped: bool, limb_pose: Pose | None, now: float) -> None:
        """Version 1: move towards the step target along a LERP, clamped around the limb.

        The command is the furthest point of the segment inside the hypersphere around the
        limb (seed 000), and no further than the step's interpolation has reached: a
        minimum-jerk profile within ``max_speed`` and ``max_accel``, so a step starts and
        stops without a jolt, as the synchronizer's "smooth, incremental joint-space motion"
        (seed 002 Sec. II-A).
        """
        if goal is None or limb_pose is None:
            return
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
            return
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
        self.limb.command_pose(command, limb_pose)
        telemetry = self.context.telemetry
        distance = self.metric.distance(limb_pose, command)
        telemetry.max_command_state_distance = max(telemetry.max_command_state_distance, distance)

    def _start_segment(self, start: Pose, end: Pose, now: float) -> tuple[Pose, Pose]:
        self._segment = (start, end)
        self._segment_since = now
        length = self.metric.distance(start, end)
        self._segment_duration = step_duration(length, self.max_rate, self.max_accel)
        return self._segment

    def _record_metrics(self, now: float, figures: Mapping[str, Any]) -> None:
        key = str(self.params.get("metrics", "align"))
        self.context.telemetry.metrics[key] = {
            "version": self.version,
            "duration_s": now - self._t0,
            "final_dd_mm": figures.get("dd_mm"),
            "final_dtheta_deg": figures.get("dtheta_deg"),
            **path_figures(self._samples),
        }

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Interrupted: the limb holds."""
        if new_status is py_trees.common.Status.INVALID and self.core is not None:
            self.limb.hold()
