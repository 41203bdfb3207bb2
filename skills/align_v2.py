"""Alignment controller Version 2: continuous adaptive hypersphere clamp (seed 002 Sec. II-B).

Every step, from the measured end-effector and target poses:

1. the errors ``Delta d``, ``Delta theta`` of eq. 1 (averaged over the last ``N`` samples,
   eq. 2; ``N = 1`` by default: the paper uses the latest poses);
2. the base radii ``Delta_t``, ``Delta_r`` interpolated from them (eqs. 5-6);
3. the shrink factors ``f_j`` (jitter), ``f_k`` (error change) and ``f_s`` (off-axis motion)
   of eq. 7, from a short history (``history_s``);
4. the effective radii ``Delta_t_eff = Delta_t f_j f_k f_s``, ``Delta_r_eff = Delta_r f_j f_k``
   (eq. 8);
5. the raw twist ``v_raw = x_t - x_e``, ``omega_raw = axis(q_e^-1 q_t) Delta theta`` (eq. 9);
6. the ellipsoidal clamp of eqs. 10-11;
7. the low-pass filter of eq. 12, whose output is the command.

When the measured error jumps by more than ``delta_jump`` (the stability check shared with
Version 1) the clamped twist is zero until the buffer holds ``N`` samples after the jump:
the "zero-hold intervals" of the paper's Fig. 5b, from which the filter ramps back up.

Units and frames: eq. 9 reads a pose error as a velocity over one second, so ``v_raw`` [m/s]
is numerically ``x_t - x_e`` [m] and ``omega_raw`` [rad/s] is the rotation vector [rad].
``v`` is in the common (motion-capture) frame; ``omega``, as in eq. 9, in the end-effector
frame (the frame of ``q_e``). :attr:`AlignV2Step.twist_world` gives both in the common frame
(``omega_world = R(q_e) omega``), which is what a pose integrator needs:
``x <- x + v dt``, ``q <- exp(omega_world dt) q``.

How the history becomes the paper's stability metrics (the paper names them, we define them):

* ``sigma_jitter`` [m]: the RMS, over the history, of the measured error vectors' residuals
  from their least-squares straight line in time: noise and wobble, not steady motion.
* ``|Delta d_k - Delta d_(k-1)|`` [m]: between this step's and the previous step's
  ``Delta d``.
* ``RMS_perp`` [m]: the RMS distance of the measured end-effector positions over the history
  from their mean, perpendicular to the current error direction: lateral wobble.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from limbtree.kinematics import Pose
from limbtree.kinematics.pose import quaternion_to_matrix
from limbtree.skills.alignment import (
    ZERO_TWIST,
    AlignObservation,
    AlignParams,
    AlignPhase,
    ErrorBuffer,
    FloatArray,
    PoseError,
    Supervisor,
    Twist,
    as_twist,
    check_number,
    check_order,
    interpolate_clamped,
    scaled,
    vector,
)
from limbtree.skills.outcome import Outcome
from limbtree.skills.telemetry import SkillTelemetry

_TINY = 1e-12


@dataclass(frozen=True)
class AlignV2Params(AlignParams):
    """Parameters of Version 2 (seed 002 Sec. II-B), on top of :class:`AlignParams`.

    The paper names these symbols and gives a value only for ``epsilon`` ("e.g. 0.01");
    the other defaults are our choices (``docs/alignment.md``).

    Attributes:
        N: error buffer length [samples]; 1 (the latest poses, as eq. 9 says).
        t_min: the smallest translational radius ``t_min`` of eq. 5 [m/s].
        t_max: the largest translational radius ``t_max`` [m/s].
        D_near: below this ``Delta d`` the radius is ``t_min`` [m].
        D_far: above this ``Delta d`` the radius is ``t_max`` [m].
        r_min: the smallest rotational radius ``r_min`` of eq. 5 [rad/s].
        r_max: the largest rotational radius ``r_max`` [rad/s].
        A_near: below this ``Delta theta`` the radius is ``r_min`` [rad].
        A_far: above this ``Delta theta`` the radius is ``r_max`` [rad].
        alpha_j: weight ``alpha_j`` of the jitter ``sigma_jitter`` in ``f_j`` (eq. 7) [1/m].
        alpha_k: weight ``alpha_k`` of the error change in ``f_k`` (eq. 7) [1/m].
        tau_jitter: off-axis threshold ``tau_jitter`` of ``f_s`` (eq. 7) [m].
        epsilon: the floor ``epsilon`` of ``f_s`` (eq. 7) [-]; the paper's 0.01.
        tau_lin: time constant ``tau_lin`` of the linear low-pass filter (eq. 12) [s].
        tau_rot: time constant ``tau_rot`` of the angular low-pass filter (eq. 12) [s].
        history_s: the short history [s] over which ``sigma_jitter`` and ``RMS_perp`` are
            measured.
    """

    N: int = 1
    t_min: float = 0.005
    t_max: float = 0.050
    D_near: float = 0.005
    D_far: float = 0.050
    r_min: float = math.radians(1.0)
    r_max: float = math.radians(8.0)
    A_near: float = math.radians(1.0)
    A_far: float = math.radians(8.0)
    alpha_j: float = 200.0
    alpha_k: float = 100.0
    tau_jitter: float = 0.005
    epsilon: float = 0.01
    tau_lin: float = 0.3
    tau_rot: float = 0.3
    history_s: float = 0.5

    def __post_init__(self) -> None:
        """Validate every field.

        Raises:
            AlignmentParameterError: naming the first parameter out of range.
        """
        super().__post_init__()
        for name in ("t_min", "t_max", "D_far", "r_min", "r_max", "A_far"):
            check_number(name, getattr(self, name))
        for name in ("D_near", "A_near", "alpha_j", "alpha_k", "tau_lin", "tau_rot"):
            check_number(name, getattr(self, name), strict=False)
        check_number("tau_jitter", self.tau_jitter)
        check_number("epsilon", self.epsilon, high=1.0)
        check_number("history_s", self.history_s)
        check_order(self, "t_min", "t_max", strict=False)
        check_order(self, "r_min", "r_max", strict=False)
        check_order(self, "D_near", "D_far", strict=True)
        check_order(self, "A_near", "A_far", strict=True)


def base_radii(dd: float, dtheta: float, params: AlignV2Params) -> tuple[float, float]:
    """The base radii ``(Delta_t, Delta_r)`` of seed 002 eqs. 5-6.

    ``Delta_t = t_min + alpha (t_max - t_min)`` with
    ``alpha = (Delta d - D_near) / (D_far - D_near)``, clamped: ``t_min`` at and below
    ``D_near``, ``t_max`` at and above ``D_far``; ``Delta_r`` likewise from ``Delta theta``
    with ``beta``, ``A_near``, ``A_far``, ``r_min``, ``r_max``.

    Args:
        dd: ``Delta d`` [m].
        dtheta: ``Delta theta`` [rad].
        params: the controller's parameters.

    Returns:
        ``(Delta_t [m/s], Delta_r [rad/s])``.
    """
    p = params
    return (
        interpolate_clamped(dd, p.D_near, p.D_far, p.t_min, p.t_max),
        interpolate_clamped(dtheta, p.A_near, p.A_far, p.r_min, p.r_max),
    )


def shrink_factors(
    sigma_jitter: float, d_change: float, rms_perp: float, params: AlignV2Params
) -> tuple[float, float, float]:
    """The shrink factors ``(f_j, f_k, f_s)`` of seed 002 eq. 7, each in ``(0, 1]``.

    ``f_j = 1 / (1 + alpha_j sigma_jitter)``, ``f_k = 1 / (1 + alpha_k |Delta d_k -
    Delta d_(k-1)|)``, ``f_s = max(epsilon, 1 - RMS_perp / tau_jitter)``.

    Args:
        sigma_jitter: the measured jitter [m].
        d_change: ``|Delta d_k - Delta d_(k-1)|`` [m].
        rms_perp: the off-axis RMS ``RMS_perp`` [m].
        params: the controller's parameters.

    Returns:
        ``(f_j, f_k, f_s)``.
    """
    p = params
    f_j = 1.0 / (1.0 + p.alpha_j * sigma_jitter)
    f_k = 1.0 / (1.0 + p.alpha_k * abs(d_change))
    f_s = max(p.epsilon, 1.0 - rms_perp / p.tau_jitter)
    return f_j, f_k, f_s


def effective_radii(
    delta_t: float, delta_r: float, f_j: float, f_k: float, f_s: float
) -> tuple[float, float]:
    """The effective radii of seed 002 eq. 8.

    Returns:
        ``(Delta_t_eff = Delta_t f_j f_k f_s [m/s], Delta_r_eff = Delta_r f_j f_k [rad/s])``.
    """
    return delta_t * f_j * f_k * f_s, delta_r * f_j * f_k


def raw_twist(error: PoseError) -> tuple[FloatArray, FloatArray]:
    """The raw twist of seed 002 eq. 9.

    ``v_raw = x_t - x_e`` (common frame) and ``omega_raw = axis(q_e^-1 q_t) Delta theta``
    (end-effector frame), with an implicit gain of 1/s.

    Args:
        error: the (averaged) pose error.

    Returns:
        ``(v_raw [m/s], omega_raw [rad/s])``, two ``(3,)`` arrays.
    """
    return np.array(error.e_xyz), error.rotation_vector


def ellipsoid_clamp(
    v_raw: FloatArray, omega_raw: FloatArray, delta_t_eff: float, delta_r_eff: float
) -> tuple[FloatArray, FloatArray]:
    """The ellipsoidal clamp of seed 002 eqs. 10-11.

    ``u = [v_raw / Delta_t_eff, omega_raw / Delta_r_eff]``, ``u_hat = u / max(1, ||u||)``,
    ``v_c = u_hat[1:3] Delta_t_eff``, ``omega_c = u_hat[4:6] Delta_r_eff``: the twist is
    scaled (direction kept) into the ellipsoid of those radii, and left alone inside it.

    Args:
        v_raw: ``(3,)`` raw linear velocity [m/s].
        omega_raw: ``(3,)`` raw angular velocity [rad/s].
        delta_t_eff: effective translational radius [m/s], > 0.
        delta_r_eff: effective rotational radius [rad/s], > 0.

    Returns:
        ``(v_c [m/s], omega_c [rad/s])``.
    """
    u = np.concatenate([np.asarray(v_raw) / delta_t_eff, np.asarray(omega_raw) / delta_r_eff])
    u_hat = u / max(1.0, float(np.linalg.norm(u)))
    return u_hat[:3] * delta_t_eff, u_hat[3:] * delta_r_eff


def low_pass(previous: FloatArray, clamped: FloatArray, dt: float, tau: float) -> FloatArray:
    """One step of the low-pass filter of seed 002 eq. 12.

    ``v_(k+1) = v_k + dt / (tau + dt) (v_c - v_k)``.

    Args:
        previous: ``v_k``.
        clamped: ``v_c``.
        dt: the step [s], >= 0 (0 leaves ``v_k``; with ``tau = 0`` the output is ``v_c``).
        tau: the time constant [s], >= 0.

    Returns:
        ``v_(k+1)``.
    """
    if tau + dt <= 0.0:
        return np.array(clamped, dtype=np.float64)
    return np.asarray(previous + dt / (tau + dt) * (np.asarray(clamped) - previous))


def jitter(times: FloatArray, samples: FloatArray) -> float:
    """``sigma_jitter`` [m]: RMS of the residuals from a straight line in time.

    Args:
        times: ``(n,)`` sample times [s].
        samples: ``(n, 3)`` measured vectors [m].

    Returns:
        ``sqrt(mean ||r_i||^2)`` where ``r_i`` is sample ``i`` minus the least-squares line
        through the samples; 0 with fewer than three samples.
    """
    if len(times) < 3:
        return 0.0
    t = np.asarray(times, dtype=np.float64) - float(np.mean(times))
    centred = np.asarray(samples, dtype=np.float64) - np.mean(samples, axis=0)
    spread = float(t @ t)
    slope = (t @ centred) / spread if spread > _TINY else np.zeros(3)
    residual = centred - np.outer(t, slope)
    return math.sqrt(float(np.mean(np.sum(residual * residual, axis=1))))


def off_axis_rms(positions: FloatArray, direction: FloatArray) -> float:
    """``RMS_perp`` [m]: RMS spread of positions perpendicular to a direction.

    Args:
        positions: ``(n, 3)`` measured end-effector positions [m].
        direction: ``(3,)`` the main error direction (need not be unit); when zero, every
            direction counts as off-axis.

    Returns:
        ``sqrt(mean ||P_perp (x_i - x_mean)||^2)``; 0 with fewer than two positions.
    """
    if len(positions) < 2:
        return 0.0
    centred = np.asarray(positions, dtype=np.float64) - np.mean(positions, axis=0)
    norm = float(np.linalg.norm(direction))
    if norm > _TINY:
        unit = np.asarray(direction, dtype=np.float64) / norm
        centred = centred - np.outer(centred @ unit, unit)
    return math.sqrt(float(np.mean(np.sum(centred * centred, axis=1))))


@dataclass(frozen=True)
class AlignV2Step:
    """What Version 2 returns each step, with its internals as the paper logs them.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        phase: what the controller is doing.
        message: for a person: why it holds, or why it failed.
        time: the step's time [s].
        twist: the command of eq. 12, ``(vx, vy, vz, wx, wy, wz)`` [m/s, rad/s]: ``v`` in
            the common frame, ``omega`` in the end-effector frame (eq. 9). Zero when lost,
            done or failed.
        twist_world: the same twist with ``omega`` in the common frame.
        goal: the goal pose (target with offset) as measured this step, or None.
        dd: ``Delta d`` (eq. 1, averaged over ``N``) [m], or None when not seen.
        dtheta: ``Delta theta`` [rad], or None.
        jump: True when the jump check fired this step.
        delta_t: the base radius ``Delta_t`` (eq. 5) [m/s], or None.
        delta_r: the base radius ``Delta_r`` (eq. 5) [rad/s], or None.
        delta_t_eff: the effective radius ``Delta_t_eff`` (eq. 8) [m/s], or None.
        delta_r_eff: the effective radius ``Delta_r_eff`` (eq. 8) [rad/s], or None.
        f_j: jitter shrink factor (eq. 7), or None.
        f_k: error-change shrink factor (eq. 7), or None.
        f_s: off-axis shrink factor (eq. 7), or None.
        sigma_jitter: the measured jitter [m], or None.
        d_change: ``|Delta d_k - Delta d_(k-1)|`` [m], or None.
        rms_perp: ``RMS_perp`` [m], or None.
        v_raw: the raw twist of eq. 9 (frames as ``twist``), or None.
        v_clamped: the clamped twist of eq. 11 (zero while holding), or None.
    """

    outcome: Outcome
    phase: AlignPhase
    message: str
    time: float
    twist: Twist = ZERO_TWIST
    twist_world: Twist = ZERO_TWIST
    goal: Pose | None = None
    dd: float | None = None
    dtheta: float | None = None
    jump: bool = False
    delta_t: float | None = None
    delta_r: float | None = None
    delta_t_eff: float | None = None
    delta_r_eff: float | None = None
    f_j: float | None = None
    f_k: float | None = None
    f_s: float | None = None
    sigma_jitter: float | None = None
    d_change: float | None = None
    rms_perp: float | None = None
    v_raw: Twist | None = None
    v_clamped: Twist | None = None

    @property
    def telemetry(self) -> AlignV2Telemetry:
        """The internals for the run record (mm and degrees where the name says so)."""
        return AlignV2Telemetry(
            dd_mm=scaled(self.dd, 1e3),
            dtheta_deg=scaled(self.dtheta, math.degrees(1.0)),
            jump=self.jump,
            delta_t=self.delta_t,
            delta_r=self.delta_r,
            delta_t_eff=self.delta_t_eff,
            delta_r_eff=self.delta_r_eff,
            f_j=self.f_j,
            f_k=self.f_k,
            f_s=self.f_s,
            sigma_jitter_mm=scaled(self.sigma_jitter, 1e3),
            d_change_mm=scaled(self.d_change, 1e3),
            rms_perp_mm=scaled(self.rms_perp, 1e3),
            v_raw=vector(self.v_raw),
            v_clamped=vector(self.v_clamped),
            v_cmd=vector(self.twist),
            phase=self.phase,
            outcome=self.outcome,
        )


@dataclass(frozen=True)
class AlignV2Telemetry(SkillTelemetry):
    """Version 2's figures for one step, as the paper logs them.

    Attributes:
        dd_mm: ``Delta d`` [mm], or None when not measured.
        dtheta_deg: ``Delta theta`` [deg], or None.
        jump: True when the jump check fired.
        delta_t: the base radius ``Delta_t`` [m/s], or None.
        delta_r: the base radius ``Delta_r`` [rad/s], or None.
        delta_t_eff: the effective radius ``Delta_t_eff`` [m/s], or None.
        delta_r_eff: the effective radius ``Delta_r_eff`` [rad/s], or None.
        f_j: jitter shrink factor, or None.
        f_k: error-change shrink factor, or None.
        f_s: off-axis shrink factor, or None.
        sigma_jitter_mm: the measured jitter [mm], or None.
        d_change_mm: ``|Delta d_k - Delta d_(k-1)|`` [mm], or None.
        rms_perp_mm: ``RMS_perp`` [mm], or None.
        v_raw: the raw twist ``[vx, vy, vz, wx, wy, wz]`` [m/s, rad/s], or None.
        v_clamped: the clamped twist [m/s, rad/s], or None.
        v_cmd: the commanded twist [m/s, rad/s].
        phase: what the controller is doing.
        outcome: RUNNING, SUCCESS or FAILURE.
    """

    skill: ClassVar[str] = "align_v2"
    dd_mm: float | None
    dtheta_deg: float | None
    jump: bool
    delta_t: float | None
    delta_r: float | None
    delta_t_eff: float | None
    delta_r_eff: float | None
    f_j: float | None
    f_k: float | None
    f_s: float | None
    sigma_jitter_mm: float | None
    d_change_mm: float | None
    rms_perp_mm: float | None
    v_raw: list[float] | None
    v_clamped: list[float] | None
    v_cmd: list[float] | None
    phase: AlignPhase
    outcome: Outcome


class AlignV2:
    """Version 2 of seed 002's alignment controller: one per alignment.

    A plain stepping object: give it an :class:`AlignObservation` each tick (time injected),
    and send the returned twist. No I/O, no clock of its own.

    Args:
        params: the parameters (defaults: :class:`AlignV2Params`).
    """

    def __init__(self, params: AlignV2Params | None = None) -> None:
        self.params = params if params is not None else AlignV2Params()
        p = self.params
        self._buffer = ErrorBuffer(p.N, p.delta_jump, p.delta_jump_rot)
        self._supervisor = Supervisor(p)
        # (t, measured error vector, measured end-effector position) over history_s.
        self._history: deque[tuple[float, FloatArray, FloatArray]] = deque()
        self._previous_dd: float | None = None
        self._v = np.zeros(3)
        self._omega = np.zeros(3)
        self._final: AlignV2Step | None = None

    def step(self, observation: AlignObservation, dt: float) -> AlignV2Step:
        """Advance one tick.

        Args:
            observation: this tick's time and measurements.
            dt: the time since the previous step [s] (0 at the first): the low-pass
                filter's step (eq. 12).

        Returns:
            The step's :class:`AlignV2Step`. After SUCCESS or FAILURE the same result is
            returned again.
        """
        if self._final is not None:
            return self._final
        p = self.params
        time = observation.time
        ee, target = observation.ee_pose, observation.target_pose
        if ee is None or target is None:
            # Blind: stop at once (no filtered ramp-down) and start afresh when seen again.
            self._buffer.forget()
            self._history.clear()
            self._previous_dd = None
            self._v, self._omega = np.zeros(3), np.zeros(3)
            outcome, message = self._supervisor.lost(time, ee is not None, target is not None)
            phase = AlignPhase.FAILED if outcome is Outcome.FAILURE else AlignPhase.LOST
            return self._finish(AlignV2Step(outcome, phase, message, time))
        self._supervisor.found()
        goal, sample, estimate, jump = self._buffer.measure(time, ee, target, p.offset)
        dd, dtheta = estimate.dd, estimate.dtheta

        self._history.append((time, np.array(sample.e_xyz), np.array(ee.position)))
        while self._history[0][0] < time - p.history_s:
            self._history.popleft()
        times = np.array([h[0] for h in self._history])
        sigma_jitter = jitter(times, np.array([h[1] for h in self._history]))
        rms_perp = off_axis_rms(np.array([h[2] for h in self._history]), estimate.e_xyz)
        d_change = 0.0 if self._previous_dd is None else abs(dd - self._previous_dd)
        self._previous_dd = dd

        delta_t, delta_r = base_radii(dd, dtheta, p)
        f_j, f_k, f_s = shrink_factors(sigma_jitter, d_change, rms_perp, p)
        delta_t_eff, delta_r_eff = effective_radii(delta_t, delta_r, f_j, f_k, f_s)
        v_raw, omega_raw = raw_twist(estimate)
        holding = jump or not self._buffer.ready
        if holding:
            v_c, omega_c = np.zeros(3), np.zeros(3)
        else:
            v_c, omega_c = ellipsoid_clamp(v_raw, omega_raw, delta_t_eff, delta_r_eff)
        self._v = low_pass(self._v, v_c, dt, p.tau_lin)
        self._omega = low_pass(self._omega, omega_c, dt, p.tau_rot)
        result = AlignV2Step(
            outcome=Outcome.RUNNING,
            phase=AlignPhase.MOVING,
            message="",
            time=time,
            twist=as_twist(self._v, self._omega),
            twist_world=as_twist(self._v, quaternion_to_matrix(ee.quaternion) @ self._omega),
            goal=goal,
            dd=dd,
            dtheta=dtheta,
            jump=jump,
            delta_t=delta_t,
            delta_r=delta_r,
            delta_t_eff=delta_t_eff,
            delta_r_eff=delta_r_eff,
            f_j=f_j,
            f_k=f_k,
            f_s=f_s,
            sigma_jitter=sigma_jitter,
            d_change=d_change,
            rms_perp=rms_perp,
            v_raw=as_twist(v_raw, omega_raw),
            v_clamped=as_twist(v_c, omega_c),
        )
        diverged = self._supervisor.failing(time, dd, dtheta)
        within = not holding and self._supervisor.within(dd, dtheta)
        confirmed = self._supervisor.confirm(time, within)
        if diverged is not None:
            return self._stop(replace(result, outcome=Outcome.FAILURE, message=diverged))
        if confirmed:
            message = f"aligned: Δd {dd * 1e3:.1f} mm, Δθ {math.degrees(dtheta):.2f} deg"
            return self._stop(replace(result, outcome=Outcome.SUCCESS, message=message))
        if holding:
            message = (
                f"holding: the measured error jumped by {self._buffer.last_jump_m * 1e3:.1f} mm "
                f"/ {math.degrees(self._buffer.last_jump_rad):.1f} deg (delta_jump is "
                f"{p.delta_jump * 1e3:g} mm / {math.degrees(p.delta_jump_rot):g} deg); "
                "re-averaging"
                if jump
                else f"holding: filling the error buffer (N = {p.N} samples since the last jump)"
            )
            return replace(result, phase=AlignPhase.HOLDING, message=message)
        if within:
            return replace(
                result, phase=AlignPhase.CONFIRMING, message="within the thresholds; confirming"
            )
        return result

    def _stop(self, result: AlignV2Step) -> AlignV2Step:
        """A final result: zero twist from now on."""
        self._v, self._omega = np.zeros(3), np.zeros(3)
        phase = AlignPhase.DONE if result.outcome is Outcome.SUCCESS else AlignPhase.FAILED
        return self._finish(replace(result, phase=phase, twist=ZERO_TWIST, twist_world=ZERO_TWIST))

    def _finish(self, result: AlignV2Step) -> AlignV2Step:
        if result.outcome is not Outcome.RUNNING:
            self._final = result
        return result
