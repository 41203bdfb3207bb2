"""Shared parts of the alignment controllers of seed 002 (Karimov et al., Sec. II).

Both controllers close the loop on two poses from an external motion capture: the measured
end-effector pose ``(x_e, q_e)`` and the measured target pose ``(x_t, q_t)``. This module holds
what they share:

* :class:`AlignObservation`, what a controller is given each step (time injected, poses or
  None when the capture does not see a body);
* :func:`pose_error`, the errors of eq. 1 with the quaternion sign ambiguity handled, and
  :func:`average_errors`, the buffer average of eq. 2;
* :class:`ErrorBuffer`, the buffer of eq. 2 with the jump check of Sec. II-A;
* :class:`AlignParams`, the parameters common to both versions, validated;
* :class:`Supervisor`, which turns errors into SUCCESS (within the thresholds for a
  confirmation window) or FAILURE (target lost too long, error diverging).

Frames: every pose is expressed in one common frame, the motion capture's (the behaviour
transforms them if the limb's base frame differs). The optional ``offset`` is a pose expressed
in the target frame: the controllers align the end-effector with ``target @ offset``, e.g. a
point 150 mm above the grasp point (seed 002 Sec. III-B).

Quaternions are ``(qx, qy, qz, qw)``, scalar last, as in :class:`~limbtree.kinematics.Pose`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from limbtree.errors import LimbtreeError
from limbtree.kinematics import Pose
from limbtree.kinematics.pose import quaternion_to_matrix
from limbtree.kinematics.so3 import (
    canonical,
    quaternion_angle,
    quaternion_conjugate,
    quaternion_multiply,
    rotation_angle,
    rotation_vector,
)
from limbtree.skills.outcome import Outcome

FloatArray = npt.NDArray[np.float64]
#: A 6-vector ``(vx, vy, vz, wx, wy, wz)`` [m/s, rad/s].
Twist = tuple[float, float, float, float, float, float]
#: The zero twist.
ZERO_TWIST: Final[Twist] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
#: Below this norm [m or rad] a direction is undefined and taken as zero.
_TINY: Final = 1e-12


class AlignmentParameterError(LimbtreeError, ValueError):
    """An alignment parameter or input is out of range.

    Attributes:
        parameter: the parameter's name, as in the parameters dataclass.
        value: the offending value, as given.
    """

    def __init__(self, parameter: str, value: object, reason: str) -> None:
        super().__init__(f"alignment parameter {parameter} = {value!r}: {reason}")
        self.parameter = parameter
        self.value = value


class AlignPhase(StrEnum):
    """What an alignment controller is doing this step."""

    LOST = "lost"
    """The motion capture does not see the end-effector or the target: hold."""
    HOLDING = "holding"
    """The measured error jumped by more than ``delta_jump``: hold and re-average."""
    SETTLING = "settling"
    """Version 1: a step was issued; waiting until it has settled."""
    AVERAGING = "averaging"
    """Version 1: settled; filling the error buffer of eq. 2."""
    STEPPING = "stepping"
    """Version 1: a new pose step was issued this step."""
    MOVING = "moving"
    """Version 2: a twist is commanded."""
    CONFIRMING = "confirming"
    """Within the thresholds; waiting ``confirm_s`` before SUCCESS."""
    DONE = "done"
    """SUCCESS."""
    FAILED = "failed"
    """FAILURE; the message says why."""


def _read_only(values: npt.ArrayLike) -> FloatArray:
    array = np.array(values, dtype=np.float64)
    array.setflags(write=False)
    return array


def as_twist(linear: npt.ArrayLike, angular: npt.ArrayLike) -> Twist:
    """``(vx, vy, vz, wx, wy, wz)`` from a linear [m/s] and an angular [rad/s] 3-vector."""
    v = np.asarray(linear, dtype=np.float64).tolist()
    w = np.asarray(angular, dtype=np.float64).tolist()
    return (v[0], v[1], v[2], w[0], w[1], w[2])


# Errors: eqs. 1 and 2 -------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PoseError:
    """The pose error between end-effector and goal (seed 002 eq. 1).

    Attributes:
        e_xyz: ``(3,)`` translational error ``x_t - x_e`` [m], common frame.
        q_err: ``(4,)`` rotation error ``q_e^-1 q_t`` (end-effector frame), sign fixed so
            that ``w >= 0``: the short way round.
        q_ee: ``(4,)`` the end-effector orientation ``q_e`` it was measured at, to express
            rotation errors in the common frame.
        dd: ``Delta d = ||x_t - x_e||`` [m].
        dtheta: ``Delta theta = 2 arccos(|q_t^-1 q_e|)`` [rad], in ``[0, pi]``.
    """

    e_xyz: FloatArray
    q_err: FloatArray
    q_ee: FloatArray
    dd: float
    dtheta: float

    @property
    def rotation_vector(self) -> FloatArray:
        """``axis(q_e^-1 q_t) Delta theta`` [rad], in the end-effector frame (eq. 9)."""
        return rotation_vector(self.q_err)

    @property
    def rotation_vector_world(self) -> FloatArray:
        """The same rotation error in the common frame: ``R(q_e) axis Delta theta`` [rad]."""
        return np.asarray(quaternion_to_matrix(self.q_ee) @ self.rotation_vector)


def goal_pose(target: Pose, offset: Pose | None = None) -> Pose:
    """Where the end-effector should be: the target composed with an offset.

    Args:
        target: the measured target pose, common frame.
        offset: the goal expressed in the target frame (e.g. 150 mm along the target's
            approach axis, seed 002 Sec. III-B), or None for the target itself.

    Returns:
        ``target @ offset``.
    """
    return target if offset is None else target @ offset


def pose_error(ee: Pose, goal: Pose) -> PoseError:
    """The raw errors of seed 002 eq. 1, robust to the quaternion sign.

    ``Delta d = ||x_t - x_e||`` and ``Delta theta = 2 arccos(|q_t^-1 q_e|)``, where
    ``|q_t^-1 q_e|`` is the magnitude of the product's scalar part. Both ``q`` and ``-q``
    describe one rotation; the absolute value makes ``Delta theta`` blind to that sign, and
    the rotation error ``q_e^-1 q_t`` is stored with ``w >= 0`` so that its axis points the
    short way. ``Delta theta`` is computed as ``2 atan2(|v|, |w|)``, which equals the arccos
    form and stays accurate near 0.

    Args:
        ee: the measured end-effector pose ``(x_e, q_e)``.
        goal: the goal pose ``(x_t, q_t)`` (the target, or the target with its offset).

    Returns:
        The :class:`PoseError`.
    """
    e_xyz = goal.position - ee.position
    q_err = canonical(quaternion_multiply(quaternion_conjugate(ee.quaternion), goal.quaternion))
    q_err /= np.linalg.norm(q_err)
    return PoseError(
        e_xyz=_read_only(e_xyz),
        q_err=_read_only(q_err),
        q_ee=_read_only(ee.quaternion),
        dd=float(np.linalg.norm(e_xyz)),
        dtheta=rotation_angle(q_err),
    )


def mean_quaternion(quaternions: Sequence[FloatArray]) -> FloatArray:
    """Chordal mean of unit quaternions, sign-blind.

    Each is aligned with the first (``q`` and ``-q`` are one rotation), then they are
    summed and normalised. Accurate for the small spreads of a noise buffer.

    Args:
        quaternions: at least one ``(4,)`` unit quaternion.

    Returns:
        ``(4,)`` the mean unit quaternion.
    """
    reference = quaternions[0]
    total = np.zeros(4)
    for q in quaternions:
        total += -q if float(q @ reference) < 0.0 else q
    norm = float(np.linalg.norm(total))
    return reference.copy() if norm < _TINY else total / norm


def average_errors(errors: Sequence[PoseError]) -> PoseError:
    """The buffer average of seed 002 eq. 2, with the rotation averaged alongside.

    ``e_xyz_bar = (1/N) sum_i (x_t - x_e)_i``, and ``Delta d = ||e_xyz_bar||``. The paper
    averages the translational error; the rotation errors ``q_e^-1 q_t`` (and the
    end-effector orientations) are averaged the same way, as chordal means after aligning
    every quaternion's sign with the first: a naive mean of ``q`` and ``-q`` would cancel.

    Args:
        errors: at least one :class:`PoseError`.

    Returns:
        The averaged :class:`PoseError`.

    Raises:
        AlignmentParameterError: if ``errors`` is empty.
    """
    if not errors:
        raise AlignmentParameterError("errors", errors, "nothing to average")
    if len(errors) == 1:
        return errors[0]
    e_xyz = np.mean([e.e_xyz for e in errors], axis=0)
    q_err = canonical(mean_quaternion([e.q_err for e in errors]))
    q_ee = mean_quaternion([e.q_ee for e in errors])
    return PoseError(
        e_xyz=_read_only(e_xyz),
        q_err=_read_only(q_err),
        q_ee=_read_only(q_ee),
        dd=float(np.linalg.norm(e_xyz)),
        dtheta=rotation_angle(q_err),
    )


def interpolate_clamped(
    x: float, x_low: float, x_high: float, y_low: float, y_high: float
) -> float:
    """Clamped piecewise-linear interpolation (seed 002 eq. 3 and eqs. 5-6).

    ``y_low`` below ``x_low``, ``y_high`` above ``x_high``, and
    ``y_low + (x - x_low) / (x_high - x_low) (y_high - y_low)`` in between.

    Args:
        x: the input (an error).
        x_low: where the ramp starts; ``x_low < x_high``.
        x_high: where it ends.
        y_low: the output at and below ``x_low``.
        y_high: the output at and above ``x_high``.

    Returns:
        The interpolated output.
    """
    if x <= x_low:
        return y_low
    if x >= x_high:
        return y_high
    return y_low + (x - x_low) / (x_high - x_low) * (y_high - y_low)


class Measurement(NamedTuple):
    """One tick's measurement (:meth:`ErrorBuffer.measure`).

    Attributes:
        goal: the pose the end-effector aligns to, ``target @ offset``.
        sample: this tick's error (eq. 1).
        estimate: the averaged error (eq. 2), or ``sample`` while the buffer is empty.
        jump: whether ``sample`` jumped and was not buffered.
    """

    goal: Pose
    sample: PoseError
    estimate: PoseError
    jump: bool


class ErrorBuffer:
    """The short error buffer of eq. 2 with the jump check of Sec. II-A.

    Each sample is compared with the previous one: when the translational error moved by
    more than ``delta_jump`` [m] or the rotation error by more than ``delta_jump_rot``
    [rad], that is a jump. The jumped sample is not buffered, and the samples before it
    stop counting: the buffer is *ready* again only when it holds ``N`` samples taken
    after the jump (re-averaging until stability returns). A gap in the measurements
    (:meth:`forget`) counts as a jump.

    Args:
        N: buffer length [samples], >= 1.
        delta_jump: translational jump threshold [m].
        delta_jump_rot: rotational jump threshold [rad].
    """

    def __init__(self, N: int, delta_jump: float, delta_jump_rot: float) -> None:
        self.N = N
        self.delta_jump = delta_jump
        self.delta_jump_rot = delta_jump_rot
        self._samples: deque[tuple[float, PoseError]] = deque(maxlen=N)
        self._previous: PoseError | None = None
        self._valid_from = -math.inf
        self.last_jump_m = 0.0
        """Size [m] of the last translational change checked, for messages."""
        self.last_jump_rad = 0.0
        """Size [rad] of the last rotational change checked, for messages."""

    def push(self, time: float, sample: PoseError) -> bool:
        """Check ``sample`` against the previous one and buffer it unless it jumped.

        Args:
            time: the sample's time [s].
            sample: this step's raw error.

        Returns:
            True when the error jumped (the sample was not buffered).
        """
        previous, self._previous = self._previous, sample
        if previous is None:
            self.last_jump_m = self.last_jump_rad = 0.0
        else:
            self.last_jump_m = float(np.linalg.norm(sample.e_xyz - previous.e_xyz))
            self.last_jump_rad = quaternion_angle(previous.q_err, sample.q_err)
            if self.last_jump_m > self.delta_jump or self.last_jump_rad > self.delta_jump_rot:
                self._valid_from = math.nextafter(time, math.inf)
                return True
        self._samples.append((time, sample))
        return False

    def forget(self) -> None:
        """A gap in the measurements: the next sample is the first of a new series."""
        self._previous = None
        self._samples.clear()

    def restart(self, time: float) -> None:
        """Only samples taken at or after ``time`` [s] count towards :attr:`ready`."""
        self._valid_from = max(self._valid_from, time)

    @property
    def ready(self) -> bool:
        """True when the buffer holds ``N`` samples, all taken since the last restart."""
        return len(self._samples) == self.N and self._samples[0][0] >= self._valid_from

    def mean(self) -> PoseError | None:
        """The average (eq. 2) of the buffered samples, or None when it is empty."""
        if not self._samples:
            return None
        return average_errors([s for _, s in self._samples])

    def measure(self, time: float, ee: Pose, target: Pose, offset: Pose | None) -> Measurement:
        """One tick's measurement, as both controllers take it.

        Args:
            time: the tick's time [s].
            ee: the measured end-effector pose.
            target: the measured target pose.
            offset: the goal in the target's frame (see :func:`goal_pose`).

        Returns:
            The goal, this tick's eq. 1 against it, the average of eq. 2 (the sample itself
            until the buffer holds one), and whether the sample jumped (:meth:`push`).
        """
        goal = goal_pose(target, offset)
        sample = pose_error(ee, goal)
        jump = self.push(time, sample)
        return Measurement(goal, sample, self.mean() or sample, jump)


# Parameters ------------------------------------------------------------------------------


def check_number(
    name: str,
    value: object,
    *,
    low: float = 0.0,
    strict: bool = True,
    high: float = math.inf,
    finite: bool = True,
) -> float:
    """Validate one numeric parameter.

    Args:
        name: the parameter's name, for the message.
        value: the value given.
        low: the lower bound.
        strict: whether ``value`` must exceed ``low`` (else it may equal it).
        high: the (inclusive) upper bound.
        finite: whether infinity is refused.

    Returns:
        The value as a float.

    Raises:
        AlignmentParameterError: naming ``name``, if the value is not a number in range.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AlignmentParameterError(name, value, "must be a number")
    number = float(value)
    if math.isnan(number) or (finite and math.isinf(number)):
        raise AlignmentParameterError(name, value, "must be a finite number")
    if number < low or (strict and number == low):
        raise AlignmentParameterError(name, value, f"must be {'>' if strict else '>='} {low:g}")
    if number > high:
        raise AlignmentParameterError(name, value, f"must be <= {high:g}")
    return number


def check_order(params: object, low_name: str, high_name: str, *, strict: bool) -> None:
    """Check that ``params.low_name`` is below (or at most) ``params.high_name``.

    Raises:
        AlignmentParameterError: naming ``high_name``, if the two are out of order.
    """
    low, high = getattr(params, low_name), getattr(params, high_name)
    if high < low or (strict and high == low):
        relation = ">" if strict else ">="
        raise AlignmentParameterError(high_name, high, f"must be {relation} {low_name} ({low:g})")


@dataclass(frozen=True)
class AlignParams:
    """Parameters common to both alignment controllers (seed 002 Sec. II).

    The paper gives no numbers for these; the defaults are our choices, documented in
    ``docs/alignment.md``. All are in SI units.

    Attributes:
        dd_tol_m: convergence threshold on ``Delta d`` [m]. Every final error of the paper's
            Table I is below 10 mm.
        dtheta_tol_rad: convergence threshold on ``Delta theta`` [rad] (2 degrees; every
            Table I mean is below).
        confirm_s: how long [s] both errors must stay within their thresholds before SUCCESS.
        N: length of the error buffer of eq. 2 [samples].
        delta_jump: the jump threshold ``delta_jump`` of Sec. II-A on the translational
            error [m]: a larger change between two samples holds all motion.
        delta_jump_rot: the same on the rotational error [rad].
        offset: the goal expressed in the target frame (identity: the target itself).
        target_timeout_s: how long [s] the end-effector or the target may go unseen before
            FAILURE; until then the controller holds.
        divergence_factor: the error diverges when it exceeds this multiple of its first
            value (or ``divergence_min_m`` / ``divergence_min_rad``, whichever is larger) [-].
        divergence_min_m: the smallest ``Delta d`` that counts as diverging [m].
        divergence_min_rad: the smallest ``Delta theta`` that counts as diverging [rad].
        divergence_max_m: an absolute bound: ``Delta d`` above it is diverging [m].
        divergence_time_s: how long [s] the error must diverge before FAILURE.
        stall_time_s: how long [s] the error may come no closer before FAILURE (a goal out
            of the limb's reach, a blocked limb); infinity: never. It counts only while
            ``Delta d`` is over twice ``dd_tol_m`` or ``Delta theta`` over twice
            ``dtheta_tol_rad`` (hovering near the thresholds is not a stall).
        stall_progress_m: how much closer [m] ``Delta d`` must come than where it was at the
            last progress to count as progress.
        stall_progress_rad: the same for ``Delta theta`` [rad].
    """

    dd_tol_m: float = 0.010
    dtheta_tol_rad: float = math.radians(2.0)
    confirm_s: float = 0.5
    N: int = 10
    delta_jump: float = 0.020
    delta_jump_rot: float = math.radians(5.0)
    offset: Pose = field(default_factory=Pose.identity)
    target_timeout_s: float = 2.0
    divergence_factor: float = 2.0
    divergence_min_m: float = 0.05
    divergence_min_rad: float = math.radians(20.0)
    divergence_max_m: float = 2.0
    divergence_time_s: float = 2.0
    stall_time_s: float = 10.0
    stall_progress_m: float = 0.001
    stall_progress_rad: float = math.radians(0.5)

    def __post_init__(self) -> None:
        """Validate every field.

        Raises:
            AlignmentParameterError: naming the first parameter out of range.
        """
        for name in ("dd_tol_m", "dtheta_tol_rad", "delta_jump", "delta_jump_rot"):
            check_number(name, getattr(self, name))
        for name in ("confirm_s", "target_timeout_s", "divergence_time_s"):
            check_number(name, getattr(self, name), strict=False)
        check_number("divergence_factor", self.divergence_factor, low=1.0)
        check_number("divergence_min_m", self.divergence_min_m)
        check_number("divergence_min_rad", self.divergence_min_rad, high=math.pi)
        check_number("divergence_max_m", self.divergence_max_m, finite=False)
        check_number("stall_time_s", self.stall_time_s, finite=False)
        check_number("stall_progress_m", self.stall_progress_m)
        check_number("stall_progress_rad", self.stall_progress_rad, high=math.pi)
        if isinstance(self.N, bool) or not isinstance(self.N, int) or self.N < 1:
            raise AlignmentParameterError("N", self.N, "must be an int >= 1 [samples]")
        if not isinstance(self.offset, Pose):
            raise AlignmentParameterError(
                "offset", self.offset, "must be a Pose (the goal in the target frame)"
            )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every parameter's name, in declaration order."""
        return tuple(f.name for f in fields(cls))


# Observation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AlignObservation:
    """What an alignment controller is given each step.

    Attributes:
        time: the step's time [s], from the runner's clock (never the wall clock).
        ee_pose: the end-effector pose measured by the motion capture, or None when it is
            not seen this step.
        target_pose: the target pose measured by the motion capture, or None when not seen.
        limb_pose: optionally, the end-effector pose the limb itself senses (its forward
            kinematics), in the same frame. Version 1 applies its steps to it, so a limb
            whose kinematics disagree with the capture (flex, calibration) still moves by
            the step; without it, steps are applied to ``ee_pose``.
        limb_settled: optionally, whether the limb reports that its last commanded step has
            finished (the synchronizer's interpolation is done). Version 1 waits for it as
            well as for the measured pose to stand still; None when unknown.

    Raises:
        AlignmentParameterError: if ``time`` is not a finite number.
    """

    time: float
    ee_pose: Pose | None
    target_pose: Pose | None
    limb_pose: Pose | None = None
    limb_settled: bool | None = None

    def __post_init__(self) -> None:
        """Check the time."""
        check_number("time", self.time, low=-math.inf, strict=False)


# Supervision: success, loss, divergence --------------------------------------------------


class Supervisor:
    """Turns errors into SUCCESS or FAILURE for either controller.

    Args:
        params: the controller's parameters.
    """

    def __init__(self, params: AlignParams) -> None:
        self.params = params
        self.initial: tuple[float, float] | None = None
        """The first estimate of ``(Delta d [m], Delta theta [rad])``, for divergence."""
        self._lost_since: float | None = None
        self._diverging_since: float | None = None
        self._within_since: float | None = None
        self._progress: tuple[float, float, float] | None = None
        """``(time [s], Delta d [m], Delta theta [rad])`` at the last progress, for stalls."""

    def lost(self, time: float, ee_seen: bool, target_seen: bool) -> tuple[Outcome, str]:
        """One step without a measurement: hold, or fail after ``target_timeout_s``.

        Args:
            time: the step's time [s].
            ee_seen: whether the end-effector was seen.
            target_seen: whether the target was seen.

        Returns:
            RUNNING with a holding message, or FAILURE with what to check.
        """
        if self._lost_since is None:
            self._lost_since = time
        self._within_since = None
        waited = time - self._lost_since
        what = (
            "the end-effector and the target"
            if not (ee_seen or target_seen)
            else ("the target" if ee_seen else "the end-effector")
        )
        timeout = self.params.target_timeout_s
        if waited > timeout:
            return Outcome.FAILURE, (
                f"the motion capture has not seen {what} for {waited:.2f} s "
                f"(target_timeout_s is {timeout:g} s): check that the markers on {what} are "
                "in view of the cameras and that the capture is streaming"
            )
        return Outcome.RUNNING, f"holding: the motion capture does not see {what} ({waited:.1f} s)"

    def found(self) -> None:
        """Both bodies are seen this step."""
        self._lost_since = None

    def diverging(self, time: float, dd: float, dtheta: float) -> str | None:
        """Check for divergence; a FAILURE message once it lasted ``divergence_time_s``.

        Args:
            time: the step's time [s].
            dd: the current ``Delta d`` estimate [m].
            dtheta: the current ``Delta theta`` estimate [rad].

        Returns:
            None while not diverging (or not for long enough), else the message.
        """
        p = self.params
        if self.initial is None:
            self.initial = (dd, dtheta)
        dd0, dtheta0 = self.initial
        limit_m = max(p.divergence_factor * dd0, p.divergence_min_m)
        limit_rad = max(p.divergence_factor * dtheta0, p.divergence_min_rad)
        if dd > p.divergence_max_m:
            why = f"Δd is {dd * 1e3:.0f} mm, beyond divergence_max_m ({p.divergence_max_m:g} m)"
        elif dd > limit_m:
            why = (
                f"Δd grew from {dd0 * 1e3:.0f} mm to {dd * 1e3:.0f} mm "
                f"(limit {limit_m * 1e3:.0f} mm)"
            )
        elif dtheta > limit_rad:
            why = (
                f"Δθ grew from {math.degrees(dtheta0):.1f} deg to {math.degrees(dtheta):.1f} deg "
                f"(limit {math.degrees(limit_rad):.1f} deg)"
            )
        else:
            self._diverging_since = None
            return None
        if self._diverging_since is None:
            self._diverging_since = time
        if time - self._diverging_since < p.divergence_time_s:
            return None
        return (
            f"alignment diverging: {why} for {time - self._diverging_since:.1f} s; check that "
            "the motion-capture frame matches the limb's base frame, that the right bodies are "
            "tracked as end-effector and target, and that the limb follows its commands"
        )

    def failing(self, time: float, dd: float, dtheta: float) -> str | None:
        """The FAILURE message of a diverging or a stalled alignment, or None (see both).

        Args:
            time: the step's time [s].
            dd: the current ``Delta d`` estimate [m].
            dtheta: the current ``Delta theta`` estimate [rad].
        """
        return self.diverging(time, dd, dtheta) or self.stalled(time, dd, dtheta)

    def stalled(self, time: float, dd: float, dtheta: float) -> str | None:
        """Check for a stall; a FAILURE message once the error came no closer for ``stall_time_s``.

        Progress is ``Delta d`` coming ``stall_progress_m`` closer than it was at the last
        progress, or ``Delta theta`` ``stall_progress_rad`` closer: a slow but steady
        approach makes progress however small each step is. Near the thresholds (both
        errors within twice theirs) nothing stalls: there the alignment confirms, or hovers
        until the node's own timeout.

        Args:
            time: the step's time [s].
            dd: the current ``Delta d`` estimate [m].
            dtheta: the current ``Delta theta`` estimate [rad].

        Returns:
            None while making progress (or not stalled for long enough), else the message.
        """
        p = self.params
        if dd <= 2.0 * p.dd_tol_m and dtheta <= 2.0 * p.dtheta_tol_rad:
            self._progress = None
            return None
        last = self._progress
        if last is None:
            self._progress = (time, dd, dtheta)
            return None
        since, dd_then, dtheta_then = last
        if dd < dd_then - p.stall_progress_m or dtheta < dtheta_then - p.stall_progress_rad:
            self._progress = (time, min(dd, dd_then), min(dtheta, dtheta_then))
            return None
        if time - since < p.stall_time_s:
            return None
        return (
            f"alignment stalled: Δd {dd * 1e3:.1f} mm, Δθ {math.degrees(dtheta):.1f} deg, not "
            f"{p.stall_progress_m * 1e3:g} mm or {math.degrees(p.stall_progress_rad):g} deg "
            f"closer than {dd_then * 1e3:.1f} mm / {math.degrees(dtheta_then):.1f} deg "
            f"{time - since:.1f} s ago (the stall time is {p.stall_time_s:g} s): is the goal "
            "within the limb's reach, and is the limb free to move (not blocked, powered, "
            "following its commands)? Move the target or the limb's base, or allow longer "
            "(the align node's stall_timeout_s)"
        )

    def confirm(self, time: float, within: bool) -> bool:
        """Whether the errors have been within the thresholds for ``confirm_s``.

        Args:
            time: the step's time [s].
            within: whether they are within this step (and the controller may judge).

        Returns:
            True once ``within`` has held for ``confirm_s`` without interruption.
        """
        if not within:
            self._within_since = None
            return False
        if self._within_since is None:
            self._within_since = time
        return time - self._within_since >= self.params.confirm_s

    def within(self, dd: float, dtheta: float) -> bool:
        """Whether both errors are within their thresholds."""
        return dd <= self.params.dd_tol_m and dtheta <= self.params.dtheta_tol_rad


def vector(values: npt.ArrayLike | None, scale: float = 1.0) -> list[float] | None:
    """A recordable list of floats (scaled), or None."""
    if values is None:
        return None
    return [float(v) * scale for v in np.asarray(values, dtype=np.float64).ravel()]


def scaled(value: float | None, scale: float) -> float | None:
    """``value * scale``, or None."""
    return None if value is None else value * scale
