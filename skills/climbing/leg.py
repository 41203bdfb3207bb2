"""Closed-form kinematics of a climbing robot's 3-joint leg (yaw, pitch, pitch).

HubRobo's legs (and moonbot_zero's) are a yaw joint on the base followed by two parallel
pitch joints, with the foot in the plane the yaw turns: the foot's position decides the
yaw (the plane's direction) and, in the plane, a two-link problem decides the pitches. The
planner solves a whole sampled foot path at once (LRST evaluates 50 samples per candidate
swing, :mod:`.lrst`), which the numeric solver of ``KinematicChain.ik`` would take about
100 us per sample for.

:class:`PlanarLeg` reads the geometry from a :class:`~limbtree.kinematics.floating.FloatingTree`
through its public frame Jacobian at the leg's zero posture: each joint's axis ``a_k`` and
a point ``o_k`` on it (from ``a_k x (p - o_k)``), and checks that the leg is of this kind.
Everything is in the base frame. The knee branch (which side of the femur-foot line the
knee is on) is kept from a reference posture, and each joint is wrapped by whole turns to
the value nearest the reference's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from limbtree.kinematics.floating import FloatingTree
from limbtree.skills.climbing._checks import FloatArray, array, cross, read_only
from limbtree.skills.climbing.errors import ClimbingInputError, LegGeometryError

#: Geometric tolerance of the shape checks (parallel axes, foot in the leg plane) [m or -].
_GEOMETRY_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class LegSolution:
    """Joint values for sampled foot positions.

    Attributes:
        q: ``(k, 3)`` joint values [rad], on the reference's knee branch, each wrapped to
            the value nearest the reference's.
        reach: ``(k,)`` ``1 - |cos γ|`` of the knee angle ``γ`` the two-link problem asks
            for: > 0 inside the leg's reach, 0 on its boundary (stretched or folded), < 0
            out of reach (``q`` is then the nearest stretched or folded posture).
    """

    q: FloatArray
    reach: FloatArray

    def __post_init__(self) -> None:
        read_only(self.q)
        read_only(self.reach)

    @property
    def reachable(self) -> bool:
        """Whether every sample is within reach."""
        return bool((self.reach >= 0.0).all())


def _wrap_near(values: FloatArray, reference: float) -> FloatArray:
    """``values`` shifted by whole turns to lie within pi of ``reference``."""
    result: FloatArray = reference + np.mod(values - reference + math.pi, 2.0 * math.pi) - math.pi
    return result


class PlanarLeg:
    """A yaw-pitch-pitch leg of a floating tree, solved in closed form.

    Args:
        tree: the robot.
        leg: the limb (``tree.limbs``); it must have 3 revolute joints.
        foot_frame: the frame of the foot (``"leg_0.ee"``, a palm's interface frame).
        lower: ``(3,)`` lower joint limits [rad] (default: none); kept for the planners.
        upper: ``(3,)`` upper joint limits [rad].
        reference: ``(3,)`` a posture on the wanted knee branch [rad] (the leg's current
            joints); default: the middle of the limits, or zeros.

    Raises:
        LegGeometryError: if the leg is not yaw-pitch-pitch with the foot in its plane.
        ClimbingInputError: for bad limits or reference.
        limbtree.kinematics.floating.FloatingTreeError: for an unknown limb or frame.
    """

    def __init__(
        self,
        tree: FloatingTree,
        leg: str,
        foot_frame: str,
        *,
        lower: Sequence[float] | FloatArray | None = None,
        upper: Sequence[float] | FloatArray | None = None,
        reference: Sequence[float] | FloatArray | None = None,
    ) -> None:
        self.leg = leg
        self.foot_frame = foot_frame
        self.columns = tree.limb_slice(leg)
        if self.columns.stop - self.columns.start != 3:
            raise LegGeometryError(
                leg, f"it has {self.columns.stop - self.columns.start} joints, not 3"
            )
        low = np.full(3, -math.inf) if lower is None else array("lower", lower, (3,))
        high = np.full(3, math.inf) if upper is None else array("upper", upper, (3,))
        if (low > high).any():
            raise ClimbingInputError("lower", lower, "must not exceed upper")
        self.lower = read_only(low)
        self.upper = read_only(high)
        if reference is None:
            middle = np.where(np.isfinite(low) & np.isfinite(high), 0.5 * (low + high), 0.0)
            reference = middle
        self.reference = read_only(array("reference", reference, (3,)))
        # ---- geometry at the leg's zero posture, from the tree's frame Jacobian
        poses, jacobians = tree.frame_poses_and_jacobians((foot_frame,), np.zeros(tree.n))
        rotation, foot = poses[0][:3, :3], poses[0][:3, 3]
        columns = 6 + np.arange(self.columns.start, self.columns.stop)
        axes = (rotation @ jacobians[0][3:, columns]).T  # (3, 3): a_k per row
        lever = (rotation @ jacobians[0][:3, columns]).T  # a_k x (p - o_k)
        norms = np.linalg.norm(axes, axis=1)
        if not np.allclose(norms, 1.0, atol=_GEOMETRY_TOL):
            raise LegGeometryError(leg, "a joint is not revolute (its axis has no rotation)")
        a1, a2, a3 = axes
        if abs(float(a1 @ a2)) > _GEOMETRY_TOL:
            raise LegGeometryError(leg, "the first axis is not perpendicular to the second")
        if float(np.linalg.norm(cross(a2, a3))) > _GEOMETRY_TOL:
            raise LegGeometryError(leg, "the second and third axes are not parallel")
        points = foot - cross(lever, axes)  # on each axis, nearest the foot
        o1, o2, o3 = points
        if abs(float(a2 @ (foot - o1))) > _GEOMETRY_TOL:
            raise LegGeometryError(
                leg,
                f"the foot is {float(a2 @ (foot - o1)) * 1e3:.3f} mm off the plane of the leg",
            )
        u0 = cross(a2, a1)
        u0 /= np.linalg.norm(u0)
        out = (o2 - o1) - float((o2 - o1) @ a1) * a1
        if float(np.linalg.norm(out)) < _GEOMETRY_TOL:
            out = (foot - o1) - float((foot - o1) @ a1) * a1
        if float(out @ u0) < 0.0:
            u0 = -u0
        self.hip = read_only(o1)  # a point on the yaw axis [m]
        self.yaw_axis = read_only(a1.copy())
        self._u0 = u0
        self._w0 = cross(a1, u0)

        def plane(point: FloatArray) -> tuple[float, float]:
            d = point - o1
            return float(d @ u0), float(d @ a1)

        (x2, y2), (x3, y3), (xf, yf) = plane(o2), plane(o3), plane(foot)
        self._knee_at = (x2, y2)  # the second joint in plane coordinates [m]
        self.femur_m = math.hypot(x3 - x2, y3 - y2)
        self.tibia_m = math.hypot(xf - x3, yf - y3)
        if self.femur_m < _GEOMETRY_TOL or self.tibia_m < _GEOMETRY_TOL:
            raise LegGeometryError(leg, "a pitch link has no length")
        self._beta2 = math.atan2(y3 - y2, x3 - x2)
        self._beta3 = math.atan2(yf - y3, xf - x3)
        turn = cross(u0, a1)  # rotating about it turns u0 towards a1
        self._s2 = 1.0 if float(a2 @ turn) > 0.0 else -1.0
        self._s3 = 1.0 if float(a3 @ turn) > 0.0 else -1.0
        knee = self._beta3 - self._beta2 + self._s3 * float(self.reference[2])
        self.knee_sign = 1.0 if math.sin(knee) >= 0.0 else -1.0

    def __repr__(self) -> str:
        return (
            f"PlanarLeg({self.leg!r}, foot={self.foot_frame!r}, femur={self.femur_m:.4f} m, "
            f"tibia={self.tibia_m:.4f} m)"
        )

    def _angles(self, q: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Yaw, absolute femur and tibia angles in the leg plane."""
        psi2 = self._beta2 + self._s2 * q[:, 1]
        psi3 = psi2 + (self._beta3 - self._beta2) + self._s3 * q[:, 2]
        return q[:, 0], psi2, psi3

    def _joints(self, name: str, q: Sequence[float] | FloatArray) -> FloatArray:
        values = np.atleast_2d(np.asarray(q, dtype=np.float64))
        if values.ndim != 2 or values.shape[1] != 3 or not np.isfinite(values).all():
            raise ClimbingInputError(name, q, "must be finite joint values, (3,) or (k, 3) [rad]")
        return values

    def fk(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Foot positions in the base frame [m]: ``(k, 3)`` for ``(k, 3)`` (or ``(3,)``) joints."""
        yaw, psi2, psi3 = self._angles(self._joints("q", q))
        u = np.cos(yaw)[:, None] * self._u0 + np.sin(yaw)[:, None] * self._w0
        x2, y2 = self._knee_at
        radial = x2 + self.femur_m * np.cos(psi2) + self.tibia_m * np.cos(psi3)
        height = y2 + self.femur_m * np.sin(psi2) + self.tibia_m * np.sin(psi3)
        result: FloatArray = self.hip + radial[:, None] * u + height[:, None] * self.yaw_axis
        return result

    def jacobian(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """``(k, 3, 3)``: the foot's linear velocity in base axes per joint rate [m/rad]."""
        values = self._joints("q", q)
        yaw, psi2, psi3 = self._angles(values)
        u = np.cos(yaw)[:, None] * self._u0 + np.sin(yaw)[:, None] * self._w0
        foot = self.fk(values)
        jac = np.empty((len(values), 3, 3))
        jac[:, :, 0] = cross(self.yaw_axis, foot - self.hip)
        d_radial = -self.femur_m * np.sin(psi2) - self.tibia_m * np.sin(psi3)
        d_height = self.femur_m * np.cos(psi2) + self.tibia_m * np.cos(psi3)
        jac[:, :, 1] = self._s2 * (d_radial[:, None] * u + d_height[:, None] * self.yaw_axis)
        t_radial = -self.tibia_m * np.sin(psi3)
        t_height = self.tibia_m * np.cos(psi3)
        jac[:, :, 2] = self._s3 * (t_radial[:, None] * u + t_height[:, None] * self.yaw_axis)
        return jac

    def ik(
        self,
        points: Sequence[float] | FloatArray,
        reference: Sequence[float] | FloatArray | None = None,
    ) -> LegSolution:
        """Joint values that put the foot at ``points`` (base frame).

        Args:
            points: ``(k, 3)`` (or ``(3,)``) foot positions in the base frame [m].
            reference: ``(3,)`` joint values whose knee branch and turns the solution keeps
                (default: the leg's reference). The knee branch is the leg's
                (:attr:`knee_sign`) unless ``reference`` is given.

        Returns:
            The joints and each sample's reach margin (out of reach: the nearest stretched
            or folded posture, with a negative margin).

        Raises:
            ClimbingInputError: for non-finite points or reference.
        """
        targets = np.atleast_2d(np.asarray(points, dtype=np.float64))
        if targets.ndim != 2 or targets.shape[1] != 3 or not np.isfinite(targets).all():
            raise ClimbingInputError("points", points, "must be finite (3,) or (k, 3) [m]")
        knee_sign = self.knee_sign
        if reference is None:
            ref = self.reference
        else:
            ref = array("reference", reference, (3,))
            knee = self._beta3 - self._beta2 + self._s3 * float(ref[2])
            knee_sign = 1.0 if math.sin(knee) >= 0.0 else -1.0
        d = targets - self.hip
        along_u, along_w = d @ self._u0, d @ self._w0
        yaw = np.arctan2(along_w, along_u)
        radial = np.hypot(along_u, along_w)
        # the other yaw branch (turned half a turn, the foot behind the hip) when it is the
        # nearer to the reference's yaw
        behind = np.abs(_wrap_near(yaw + math.pi, float(ref[0])) - ref[0]) < np.abs(
            _wrap_near(yaw, float(ref[0])) - ref[0]
        )
        yaw = np.where(behind, yaw + math.pi, yaw)
        radial = np.where(behind, -radial, radial)
        height = d @ self.yaw_axis
        x2, y2 = self._knee_at
        x, y = radial - x2, height - y2
        l2, l3 = self.femur_m, self.tibia_m
        cosine = (x * x + y * y - l2 * l2 - l3 * l3) / (2.0 * l2 * l3)
        reach = 1.0 - np.abs(cosine)
        gamma = knee_sign * np.arccos(np.clip(cosine, -1.0, 1.0))
        psi2 = np.arctan2(y, x) - np.arctan2(l3 * np.sin(gamma), l2 + l3 * np.cos(gamma))
        q = np.empty((len(targets), 3))
        q[:, 0] = _wrap_near(yaw, float(ref[0]))
        q[:, 1] = _wrap_near(self._s2 * (psi2 - self._beta2), float(ref[1]))
        q[:, 2] = _wrap_near(self._s3 * (gamma - (self._beta3 - self._beta2)), float(ref[2]))
        return LegSolution(q, reach)

    def limit_margins(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """``(k, 6)``: ``q - lower`` and ``upper - q`` per joint [rad]; all >= 0 inside."""
        values = self._joints("q", q)
        return np.concatenate([values - self.lower, self.upper - values], axis=1)


__all__ = ["LegSolution", "PlanarLeg"]
