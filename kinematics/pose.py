"""Rigid poses in SE(3): a position in metres and a unit quaternion, scalar last."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import InvalidPoseError
from limbtree.kinematics.so3 import quaternion_angle

if TYPE_CHECKING:
    from spatialmath import SE3

FloatArray = npt.NDArray[np.float64]

#: How far from 1 a quaternion's norm may be before it is refused rather than normalised.
UNIT_TOLERANCE = 1e-6


def _frozen(values: Any, shape: tuple[int, ...], name: str) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidPoseError(name, values, f"not numbers ({exc})") from None
    if array.shape != shape:
        raise InvalidPoseError(name, values, f"expected shape {shape}, got {array.shape}")
    # Plain floats: for 3 or 4 values this is several times faster than np.isfinite().all().
    if not all(map(math.isfinite, array.tolist())):
        raise InvalidPoseError(name, values, "contains NaN or infinity")
    array.setflags(write=False)
    return array


def quaternion_to_matrix(quaternion: FloatArray) -> FloatArray:
    """Rotation matrices of unit quaternions.

    Args:
        quaternion: ``(..., 4)`` unit quaternions ``(qx, qy, qz, qw)``.

    Returns:
        ``(..., 3, 3)`` rotation matrices.
    """
    x, y, z, w = np.moveaxis(np.asarray(quaternion, dtype=np.float64), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def matrix_to_quaternion(rotation: FloatArray) -> FloatArray:
    """Unit quaternion ``(qx, qy, qz, qw)`` of a 3x3 rotation matrix, with ``qw >= 0``.

    Shepperd's method: picks the largest of the four squared components to divide by, so it
    is accurate for every rotation, including half turns. Written on Python floats: it runs
    for every forward kinematics, where numpy's per-element indexing would dominate.
    """
    rows = np.asarray(rotation, dtype=np.float64)[:3, :3].tolist()
    return np.array(_shepperd(*rows[0], *rows[1], *rows[2]))


def _shepperd(
    m00: float, m01: float, m02: float,
    m10: float, m11: float, m12: float,
    m20: float, m21: float, m22: float,
) -> list[float]:  # fmt: skip
    """:func:`matrix_to_quaternion` on the nine elements, as a list (``qw >= 0``)."""
    trace = m00 + m11 + m22
    largest = max(trace, m00, m11, m22)
    if largest == trace:
        s = 2.0 * math.sqrt(max(1.0 + trace, 0.0))
        q = [(m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, s / 4]
    elif largest == m00:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 0.0))
        q = [s / 4, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s]
    elif largest == m11:
        s = 2.0 * math.sqrt(max(1.0 - m00 + m11 - m22, 0.0))
        q = [(m01 + m10) / s, s / 4, (m12 + m21) / s, (m02 - m20) / s]
    else:
        s = 2.0 * math.sqrt(max(1.0 - m00 - m11 + m22, 0.0))
        q = [(m02 + m20) / s, (m12 + m21) / s, s / 4, (m10 - m01) / s]
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if q[3] < 0:
        norm = -norm
    return [q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm]


def pose_of_rigid_transform(transform: FloatArray) -> Pose:
    """The pose of a 4x4 transform known to be rigid (a product of rigid transforms).

    Nothing is checked (use :meth:`Pose.from_matrix` for outside input): this is forward
    kinematics' hot path, one conversion of the matrix to Python floats and two arrays.
    """
    (m00, m01, m02, px), (m10, m11, m12, py), (m20, m21, m22, pz) = transform[:3].tolist()
    position = np.array((px, py, pz))
    quaternion = np.array(_shepperd(m00, m01, m02, m10, m11, m12, m20, m21, m22))
    position.setflags(write=False)
    quaternion.setflags(write=False)
    pose = object.__new__(Pose)
    object.__setattr__(pose, "position", position)
    object.__setattr__(pose, "quaternion", quaternion)
    return pose


@dataclass(frozen=True, eq=False)
class Pose:
    """A rigid pose: where a frame is and how it is turned.

    Immutable: both arrays are read-only. The quaternion is stored as given (after
    normalisation), so ``q`` and ``-q`` give two ``Pose`` objects that describe the same
    rotation; compare rotations with :meth:`angle_to`, not with ``==``.

    Attributes:
        position: ``(3,)`` position [m].
        quaternion: ``(4,)`` unit quaternion ``(qx, qy, qz, qw)``, scalar last.

    Raises:
        InvalidPoseError: if the position is not three finite numbers, or the quaternion is
            not four finite numbers of norm 1 (within 1e-6): zero, NaN and non-unit
            quaternions are refused rather than silently normalised.
    """

    position: FloatArray = field(default_factory=lambda: np.zeros(3))
    quaternion: FloatArray = field(default_factory=lambda: np.array([0.0, 0.0, 0.0, 1.0]))

    def __post_init__(self) -> None:
        position = _frozen(self.position, (3,), "position")
        quaternion = np.array(_frozen(self.quaternion, (4,), "quaternion"))
        norm = math.sqrt(sum(v * v for v in quaternion.tolist()))
        if norm == 0.0:
            raise InvalidPoseError(
                "quaternion", self.quaternion, "the zero quaternion is no rotation"
            )
        if abs(norm - 1.0) > UNIT_TOLERANCE:
            raise InvalidPoseError(
                "quaternion",
                self.quaternion,
                f"norm is {norm:.9g}, not 1; give a unit quaternion (qx, qy, qz, qw), scalar last",
            )
        quaternion /= norm
        quaternion.setflags(write=False)
        object.__setattr__(self, "position", position)
        object.__setattr__(self, "quaternion", quaternion)

    @classmethod
    def identity(cls) -> Pose:
        """The pose at the origin with no rotation."""
        return cls()

    @classmethod
    def from_array(cls, values: Sequence[float] | FloatArray) -> Pose:
        """Build from ``[x, y, z, qx, qy, qz, qw]`` (the run record's layout)."""
        array = np.asarray(values, dtype=np.float64)
        if array.shape != (7,):
            raise InvalidPoseError("array", values, f"expected 7 numbers, got shape {array.shape}")
        return cls(array[:3], array[3:])  # validated: arrays come from the wire

    @classmethod
    def from_matrix(cls, matrix: FloatArray | Sequence[Sequence[float]]) -> Pose:
        """Build from a 4x4 homogeneous transform.

        Raises:
            InvalidPoseError: if the matrix is not 4x4, its last row is not ``[0, 0, 0, 1]``, or
                its rotation block is not orthonormal with determinant +1 (within 1e-6).
        """
        m = np.asarray(matrix, dtype=np.float64)
        if m.shape != (4, 4) or not np.all(np.isfinite(m)):
            raise InvalidPoseError("matrix", matrix, "expected a finite 4x4 homogeneous transform")
        if np.abs(m[3] - (0.0, 0.0, 0.0, 1.0)).max() > 1e-9:
            raise InvalidPoseError("matrix", matrix, "last row must be [0, 0, 0, 1]")
        r = m[:3, :3]
        if np.abs(r @ r.T - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0:
            raise InvalidPoseError("matrix", matrix, "rotation block is not a proper rotation")
        return cls._trusted(m[:3, 3], matrix_to_quaternion(r))

    @classmethod
    def from_se3(cls, transform: SE3) -> Pose:
        """Build from a spatialmath ``SE3`` holding one transform."""
        return cls.from_matrix(transform.A)

    @classmethod
    def _trusted(
        cls, position: Sequence[float] | FloatArray, quaternion: Sequence[float] | FloatArray
    ) -> Pose:
        """Build without validation from values known to be finite and unit (internal)."""
        pose = object.__new__(cls)
        p = np.array(position, dtype=np.float64)
        q = np.array(quaternion, dtype=np.float64)
        p.setflags(write=False)
        q.setflags(write=False)
        object.__setattr__(pose, "position", p)
        object.__setattr__(pose, "quaternion", q)
        return pose

    @property
    def rotation(self) -> FloatArray:
        """The ``(3, 3)`` rotation matrix."""
        x, y, z, w = self.quaternion.tolist()
        return np.array(
            [
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ]
        )

    def as_matrix(self) -> FloatArray:
        """The ``(4, 4)`` homogeneous transform."""
        m = np.eye(4)
        m[:3, :3] = self.rotation
        m[:3, 3] = self.position
        return m

    def transform_point(self, point: Sequence[float] | FloatArray) -> FloatArray:
        """``R p + v``: a point of this frame expressed in the parent frame [m]."""
        return np.asarray(self.rotation @ np.asarray(point, dtype=np.float64) + self.position)

    def as_se3(self) -> SE3:
        """The pose as a spatialmath ``SE3``."""
        from spatialmath import SE3

        return SE3(self.as_matrix(), check=False)

    def as_array(self) -> FloatArray:
        """``[x, y, z, qx, qy, qz, qw]``: the run record's layout."""
        return np.concatenate([self.position, self.quaternion])

    def as_list(self) -> list[float]:
        """``[x, y, z, qx, qy, qz, qw]`` as Python floats: the wire's and the record's layout.

        ``as_array().tolist()`` in a third of the time (every tick writes a few dozen).
        """
        listed: list[float] = self.position.tolist() + self.quaternion.tolist()
        return listed

    def angle_to(self, other: Pose) -> float:
        """Angle [rad] of the rotation from this pose's frame to ``other``'s, in ``[0, pi]``.

        This is ``theta(R_a^-1 R_b)`` of seed 000 eq. 7, computed from the quaternion dot
        product, which is exact near 0 where ``arccos`` of the trace is not.
        """
        return quaternion_angle(self.quaternion, other.quaternion)

    def distance_to(self, other: Pose) -> float:
        """Euclidean distance [m] between the two positions."""
        return float(np.linalg.norm(other.position - self.position))

    def __matmul__(self, other: Pose) -> Pose:
        """Compose: ``T_ac = T_ab @ T_bc`` (quaternion product, renormalised).

        Written in scalars: this runs for every limb on every tick, where numpy's per-call
        cost on 3- and 4-vectors would dominate.
        """
        x1, y1, z1, w1 = self.quaternion.tolist()
        x2, y2, z2, w2 = other.quaternion.tolist()
        px, py, pz = other.position.tolist()
        # Rotate other's position by self's quaternion: v + 2 w (u x v) + 2 u x (u x v).
        cx, cy, cz = y1 * pz - z1 * py, z1 * px - x1 * pz, x1 * py - y1 * px
        ox, oy, oz = self.position.tolist()
        position = (
            ox + px + 2.0 * (w1 * cx + y1 * cz - z1 * cy),
            oy + py + 2.0 * (w1 * cy + z1 * cx - x1 * cz),
            oz + pz + 2.0 * (w1 * cz + x1 * cy - y1 * cx),
        )
        qx = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
        qy = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
        qz = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
        qw = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
        norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
        return Pose._trusted(position, (qx / norm, qy / norm, qz / norm, qw / norm))

    def inverse(self) -> Pose:
        """The inverse transform."""
        r_t = self.rotation.T
        x, y, z, w = self.quaternion.tolist()
        return Pose._trusted(-r_t @ self.position, (-x, -y, -z, w))

    def isclose(self, other: Pose, *, atol_m: float = 1e-9, atol_rad: float = 1e-9) -> bool:
        """Whether both poses describe the same transform within the given tolerances."""
        return self.distance_to(other) <= atol_m and self.angle_to(other) <= atol_rad

    def __repr__(self) -> str:
        p = ", ".join(f"{v:.6g}" for v in self.position)
        q = ", ".join(f"{v:.6g}" for v in self.quaternion)
        return f"Pose(position=({p}), quaternion=({q}))"
