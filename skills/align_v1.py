"""Alignment controller Version 1: step and settle (seed 002 Sec. II-A).

Each step of the controller reads the measured end-effector and target poses, checks for a
jump, buffers the error (eq. 2) and, once the last pose step has settled and the buffer holds
``N`` fresh samples, either confirms convergence or issues the next pose step:

* the step size ``s`` interpolated between ``s_min`` and ``s_max`` over
  ``[r_low, r_high]`` of the averaged ``Delta d`` (eq. 3);
* the translation ``Delta p = s e_xyz_bar / ||e_xyz_bar||`` (eq. 4), issued while
  ``Delta d`` exceeds its threshold;
* the rotation towards the target by ``Delta theta`` clamped to ``[theta_min, theta_max]``,
  issued while ``Delta theta`` exceeds its threshold.

The step is added to the limb's own end-effector pose (``limb_pose``; the measured one when
the limb gives none) and returned as a pose target for the limb's IK; the behaviour sends it
through the synchronizer's LERP and clamp. Then the controller waits until it has settled:
the limb reports it finished (``limb_settled``, when given) and the measured end-effector
pose has stood still over ``settle_window_s``: the window is cut into ``SETTLE_PARTS``
consecutive parts and each part's mean is within ``settle_tol_m`` and ``settle_tol_rad`` of
the whole window's mean. Averaging parts keeps the motion-capture noise (0.3 mm) well below
the tolerance, and a limb still swinging from the step (a flexible arm's bending mode) shows
as parts on either side of the mean whatever the swing's phase; with two halves, a swing
whose period is the window averaged out and passed. If stillness does not come within
``settle_timeout_s`` (a limb that keeps jittering) the step counts as settled and the
record says so.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from limbtree.kinematics import Pose
from limbtree.kinematics.so3 import (
    quaternion_angle,
    quaternion_from_rotation_vector,
    quaternion_multiply,
)
from limbtree.skills.alignment import (
    AlignObservation,
    AlignParams,
    AlignPhase,
    ErrorBuffer,
    FloatArray,
    PoseError,
    Supervisor,
    check_number,
    check_order,
    interpolate_clamped,
    mean_quaternion,
    scaled,
    vector,
)
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

_TINY = 1e-12
#: The settle window is cut into this many consecutive parts; the pose has stood still when
#: every part's mean is within the tolerances of the whole window's mean. Two halves would
#: miss a swing whose period is the window (both halves average to the middle).
SETTLE_PARTS = 4


@dataclass(frozen=True)
class AlignV1Params(AlignParams):
    """Parameters of Version 1 (seed 002 Sec. II-A), on top of :class:`AlignParams`.

    The paper names these symbols but gives no values; the defaults are our choices
    (``docs/alignment.md``).

    Attributes:
        s_min: the smallest step ``s_min`` of eq. 3 [m].
        s_max: the largest step ``s_max`` of eq. 3 [m].
        r_low: below this ``Delta d`` the step is ``s_min`` (eq. 3's ``r_low``) [m].
        r_high: above this ``Delta d`` the step is ``s_max`` (eq. 3's ``r_high``) [m].
        theta_min: the smallest rotation step ``theta_min`` [rad].
        theta_max: the largest rotation step ``theta_max`` [rad].
        settle_window_s: the window [s] over which the measured pose must stand still.
        settle_tol_m: how far [m] the mean position of each of the window's
            ``SETTLE_PARTS`` parts may be from the whole window's for the pose to count as
            still.
        settle_tol_rad: the same for the orientation [rad].
        settle_timeout_s: after this long [s] a step counts as settled even if the pose
            never stood still.
    """

    s_min: float = 0.005
    s_max: float = 0.030
    r_low: float = 0.020
    r_high: float = 0.150
    theta_min: float = math.radians(0.5)
    theta_max: float = math.radians(5.0)
    settle_window_s: float = 0.5
    settle_tol_m: float = 0.001
    settle_tol_rad: float = math.radians(0.3)
    settle_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        """Validate every field.

        Raises:
            AlignmentParameterError: naming the first parameter out of range.
        """
        super().__post_init__()
        for name in ("s_min", "s_max", "r_high", "settle_window_s", "settle_timeout_s"):
            check_number(name, getattr(self, name))
        for name in ("r_low", "settle_tol_m", "settle_tol_rad"):
            check_number(name, getattr(self, name), strict=False)
        check_number("theta_min", self.theta_min, high=math.pi)
        check_number("theta_max", self.theta_max, high=math.pi)
        check_order(self, "s_min", "s_max", strict=False)
        check_order(self, "r_low", "r_high", strict=True)
        check_order(self, "theta_min", "theta_max", strict=False)


def step_size(dd: float, params: AlignV1Params) -> float:
    """The step size ``s`` of seed 002 eq. 3 [m].

    ``s_max`` when ``Delta d > r_high``, ``s_min`` when ``Delta d < r_low``, and
    ``s_min + (Delta d - r_low) / (r_high - r_low) (s_max - s_min)`` in between.

    Args:
        dd: the averaged translational error ``Delta d`` [m].
        params: the controller's parameters.

    Returns:
        ``s`` [m].
    """
    return interpolate_clamped(dd, params.r_low, params.r_high, params.s_min, params.s_max)


def offset_step(e_avg: FloatArray, s: float) -> FloatArray:
    """The translation step ``Delta p = s e_xyz_bar / ||e_xyz_bar||`` of seed 002 eq. 4.

    Args:
        e_avg: ``(3,)`` the averaged error vector ``e_xyz_bar`` of eq. 2 [m].
        s: the step size of eq. 3 [m].

    Returns:
        ``(3,)`` ``Delta p`` [m], towards the target; zero when ``e_avg`` is zero.
    """
    norm = float(np.linalg.norm(e_avg))
    if norm < _TINY:
        return np.zeros(3)
    return np.asarray(e_avg, dtype=np.float64) * (s / norm)


def rotation_step(dtheta: float, theta_min: float, theta_max: float) -> float:
    """The rotation step [rad]: ``Delta theta`` clamped to ``[theta_min, theta_max]``.

    Seed 002 Sec. II-A: "we then clamp the incremental rotation step to lie between
    theta_min and theta_max".

    Args:
        dtheta: the averaged rotational error ``Delta theta`` [rad].
        theta_min: the smallest step [rad].
        theta_max: the largest step [rad].

    Returns:
        The step's angle [rad].
    """
    return min(max(dtheta, theta_min), theta_max)


@dataclass(frozen=True)
class AlignV1Step:
    """What Version 1 returns each step, with its internals as the paper logs them.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        phase: what the controller is doing.
        message: for a person: why it holds, or why it failed.
        time: the step's time [s].
        command: the end-effector pose target in force (the last step issued), for the
            limb's IK through the synchronizer; None before the first step.
        stepped: True on the step a new ``command`` was issued.
        goal: the goal pose (target with offset) as measured this step, or None.
        dd_raw: this sample's ``Delta d`` of eq. 1 [m], or None when not seen.
        dtheta_raw: this sample's ``Delta theta`` of eq. 1 [rad], or None.
        dd: the averaged ``Delta d`` (eq. 2 over the buffer) [m], or None.
        dtheta: the averaged ``Delta theta`` [rad], or None.
        e_avg: the averaged error vector ``e_xyz_bar`` of eq. 2 [m], or None.
        jump: True when the jump check fired this step.
        s: the step size of eq. 3 at the averaged ``Delta d`` [m], or None.
        theta_step: the clamped rotation step at the averaged ``Delta theta`` [rad], or None.
        delta_p: the translation of the step issued this step (eq. 4) [m], or None.
        settled: whether the last step has settled (True when none is in flight).
        settle_timed_out: True when the last step was declared settled by
            ``settle_timeout_s`` rather than by standing still.
    """

    outcome: Outcome
    phase: AlignPhase
    message: str
    time: float
    command: Pose | None = None
    stepped: bool = False
    goal: Pose | None = None
    dd_raw: float | None = None
    dtheta_raw: float | None = None
    dd: float | None = None
    dtheta: float | None = None
    e_avg: tuple[float, float, float] | None = None
    jump: bool = False
    s: float | None = None
    theta_step: float | None = None
    delta_p: tuple[float, float, float] | None = None
    settled: bool = True
    settle_timed_out: bool = False

    @property
    def telemetry(self) -> AlignV1Telemetry:
        """The internals for the run record (mm and degrees where the name says so)."""
        return AlignV1Telemetry(
            dd_mm=scaled(self.dd, 1e3),
            dtheta_deg=scaled(self.dtheta, math.degrees(1.0)),
            dd_raw_mm=scaled(self.dd_raw, 1e3),
            dtheta_raw_deg=scaled(self.dtheta_raw, math.degrees(1.0)),
            e_avg_mm=vector(self.e_avg, 1e3),
            jump=self.jump,
            step_mm=scaled(self.s, 1e3),
            step_deg=scaled(self.theta_step, math.degrees(1.0)),
            delta_p_mm=vector(self.delta_p, 1e3),
            stepped=self.stepped,
            settled=self.settled,
            settle_timed_out=self.settle_timed_out,
            phase=self.phase,
            outcome=self.outcome,
        )


@dataclass(frozen=True)
class AlignV1Telemetry(SkillTelemetry):
    """Version 1's figures for one step, as the paper logs them.

    Attributes:
        dd_mm: the averaged ``Delta d`` [mm], or None when not measured.
        dtheta_deg: the averaged ``Delta theta`` [deg], or None.
        dd_raw_mm: this sample's ``Delta d`` [mm], or None.
        dtheta_raw_deg: this sample's ``Delta theta`` [deg], or None.
        e_avg_mm: the averaged error vector [mm], or None.
        jump: True when the jump check fired.
        step_mm: the step size ``s`` of eq. 3 [mm], or None.
        step_deg: the rotation step [deg], or None.
        delta_p_mm: the translation issued this step [mm], or None.
        stepped: True when a new pose target was issued.
        settled: whether the last step has settled.
        settle_timed_out: True when it was declared settled by ``settle_timeout_s``.
        phase: what the controller is doing.
        outcome: RUNNING, SUCCESS or FAILURE.
    """

    skill: ClassVar[str] = "align_v1"
    dd_mm: float | None
    dtheta_deg: float | None
    dd_raw_mm: float | None
    dtheta_raw_deg: float | None
    e_avg_mm: list[float] | None
    jump: bool
    step_mm: float | None
    step_deg: float | None
    delta_p_mm: list[float] | None
    stepped: bool
    settled: bool
    settle_timed_out: bool
    phase: AlignPhase
    outcome: Outcome


def _triple(values: FloatArray) -> tuple[float, float, float]:
    x, y, z = np.asarray(values, dtype=np.float64).tolist()
    return (x, y, z)


class AlignV1:
    """Version 1 of seed 002's alignment controller: one per alignment.

    A plain stepping object: give it an :class:`AlignObservation` each tick (time injected),
    and send the returned pose target. No I/O, no clock of its own.

    Args:
        params: the parameters (defaults: :class:`AlignV1Params`).
    """

    def __init__(self, params: AlignV1Params | None = None) -> None:
        self.params = params if params is not None else AlignV1Params()
        p = self.params
        self._buffer = ErrorBuffer(p.N, p.delta_jump, p.delta_jump_rot)
        self._supervisor = Supervisor(p)
        # Measured end-effector poses since the last step was issued: (t, position, quat).
        self._window: deque[tuple[float, FloatArray, FloatArray]] = deque()
        self._command: Pose | None = None
        self._issued_at: float | None = None  # time of the step in flight, if any
        self._settle_timed_out = False
        self._final: AlignV1Step | None = None

    @property
    def command(self) -> Pose | None:
        """The pose target in force, or None before the first step."""
        return self._command

    def step(self, observation: AlignObservation, dt: float) -> AlignV1Step:
        """Advance one tick.

        Args:
            observation: this tick's time and measurements.
            dt: the time since the previous step [s]; unused: Version 1 steps on events
                (a step settled, the buffer full), timed by ``observation.time``.

        Returns:
            The step's :class:`AlignV1Step`. After SUCCESS or FAILURE the same result is
            returned again.
        """
        if self._final is not None:
            return self._final
        p = self.params
        time = observation.time
        ee, target = observation.ee_pose, observation.target_pose
        if ee is None or target is None:
            self._buffer.forget()
            outcome, message = self._supervisor.lost(time, ee is not None, target is not None)
            phase = AlignPhase.FAILED if outcome is Outcome.FAILURE else AlignPhase.LOST
            return self._finish(
                AlignV1Step(
                    outcome=outcome,
                    phase=phase,
                    message=message,
                    time=time,
                    command=self._command,
                    settled=self._issued_at is None,
                    settle_timed_out=self._settle_timed_out,
                )
            )
        self._supervisor.found()
        goal, sample, estimate, jump = self._buffer.measure(time, ee, target, p.offset)
        settled = self._settled(time, ee, observation.limb_settled)
        s = step_size(estimate.dd, p)
        theta_step = rotation_step(estimate.dtheta, p.theta_min, p.theta_max)
        result = AlignV1Step(
            outcome=Outcome.RUNNING,
            phase=AlignPhase.MOVING,
            message="",
            time=time,
            command=self._command,
            goal=goal,
            dd_raw=sample.dd,
            dtheta_raw=sample.dtheta,
            dd=estimate.dd,
            dtheta=estimate.dtheta,
            e_avg=_triple(estimate.e_xyz),
            jump=jump,
            s=s,
            theta_step=theta_step,
            settled=settled,
            settle_timed_out=self._settle_timed_out,
        )
        diverged = self._supervisor.failing(time, estimate.dd, estimate.dtheta)
        ready = settled and not jump and self._buffer.ready
        within = ready and self._supervisor.within(estimate.dd, estimate.dtheta)
        confirmed = self._supervisor.confirm(time, within)
        if diverged is not None:
            return self._finish(
                replace(result, outcome=Outcome.FAILURE, phase=AlignPhase.FAILED, message=diverged)
            )
        if jump:
            message = (
                f"holding: the measured error jumped by {self._buffer.last_jump_m * 1e3:.1f} mm "
                f"/ {math.degrees(self._buffer.last_jump_rad):.1f} deg (delta_jump is "
                f"{p.delta_jump * 1e3:g} mm / {math.degrees(p.delta_jump_rot):g} deg); "
                "re-averaging"
            )
            return replace(result, phase=AlignPhase.HOLDING, message=message)
        if not settled:
            return replace(
                result, phase=AlignPhase.SETTLING, message="waiting for the step to settle"
            )
        if not self._buffer.ready:
            return replace(result, phase=AlignPhase.AVERAGING, message="averaging the error")
        if confirmed:
            message = (
                f"aligned: Δd {estimate.dd * 1e3:.1f} mm, "
                f"Δθ {math.degrees(estimate.dtheta):.2f} deg"
            )
            return self._finish(
                replace(result, outcome=Outcome.SUCCESS, phase=AlignPhase.DONE, message=message)
            )
        if within:
            return replace(
                result, phase=AlignPhase.CONFIRMING, message="within the thresholds; confirming"
            )
        delta_p = self._issue(time, ee, observation.limb_pose, estimate, s, theta_step)
        return replace(
            result,
            phase=AlignPhase.STEPPING,
            message=f"step: {float(np.linalg.norm(delta_p)) * 1e3:.1f} mm",
            command=self._command,
            stepped=True,
            delta_p=_triple(delta_p),
            settled=False,
        )

    def _issue(
        self,
        time: float,
        ee: Pose,
        limb_pose: Pose | None,
        estimate: PoseError,
        s: float,
        theta_step: float,
    ) -> FloatArray:
        """Form the next pose target (eq. 4 and the clamped rotation); return ``Delta p``."""
        p = self.params
        base = limb_pose if limb_pose is not None else ee
        delta_p = offset_step(estimate.e_xyz, s) if estimate.dd > p.dd_tol_m else np.zeros(3)
        quaternion = base.quaternion
        if estimate.dtheta > p.dtheta_tol_rad:
            # The rotation error's axis in the common frame, turned by the clamped step and
            # applied on the left, so the limb's tool-frame convention does not matter.
            axis = estimate.rotation_vector_world
            norm = float(np.linalg.norm(axis))
            if norm > _TINY:
                turn = quaternion_from_rotation_vector(axis * (theta_step / norm))
                quaternion = quaternion_multiply(turn, base.quaternion)
                quaternion = quaternion / np.linalg.norm(quaternion)
        self._command = Pose(base.position + delta_p, quaternion)
        self._issued_at = time
        self._settle_timed_out = False
        self._window.clear()
        self._buffer.restart(time)
        return delta_p

    def _settled(self, time: float, ee: Pose, limb_settled: bool | None) -> bool:
        """Whether the step in flight has settled (see the module docstring)."""
        if self._issued_at is None:
            return True
        p = self.params
        self._window.append((time, ee.position, ee.quaternion))
        while self._window and self._window[0][0] < time - p.settle_window_s:
            self._window.popleft()
        elapsed = time - self._issued_at
        if elapsed >= p.settle_timeout_s:
            self._settle_timed_out = True
            return self._land(time)
        if limb_settled is False or elapsed < p.settle_window_s:
            return False
        window = list(self._window)
        if len(window) < 2:
            return False
        positions = np.array([x for _, x, _ in window])
        quaternions = [q for _, _, q in window]
        centre = positions.mean(axis=0)
        attitude = mean_quaternion(quaternions)
        moved = turned = 0.0
        # At a slow tick rate the window may hold fewer samples than parts: one per part.
        for part in np.array_split(np.arange(len(window)), min(SETTLE_PARTS, len(window))):
            moved = max(moved, float(np.linalg.norm(positions[part].mean(axis=0) - centre)))
            turned = max(
                turned, quaternion_angle(attitude, mean_quaternion([quaternions[i] for i in part]))
            )
        if moved <= p.settle_tol_m and turned <= p.settle_tol_rad:
            return self._land(time)
        return False

    def _land(self, time: float) -> bool:
        """The step has settled: only samples from the still window count from now on."""
        self._issued_at = None
        self._buffer.restart(time - self.params.settle_window_s)
        self._window.clear()
        return True

    def _finish(self, result: AlignV1Step) -> AlignV1Step:
        if result.outcome is not Outcome.RUNNING:
            self._final = result
        return result
