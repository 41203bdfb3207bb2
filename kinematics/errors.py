"""Exceptions of ``limbtree.kinematics``."""

from __future__ import annotations

from limbtree.errors import LimbtreeError


class KinematicsError(LimbtreeError):
    """Base of the errors raised by ``limbtree.kinematics``."""


class InvalidPoseError(KinematicsError, ValueError):
    """A pose was built from values that are not a rigid transform.

    Attributes:
        field: which input was wrong (``"position"``, ``"quaternion"`` or ``"matrix"``).
        value: the offending value, as given.
    """

    def __init__(self, field: str, value: object, reason: str) -> None:
        super().__init__(f"invalid pose {field} {value!r}: {reason}")
        self.field = field
        self.value = value


class InvalidMetricError(KinematicsError, ValueError):
    """A metric was given scales it cannot use (zero, negative or NaN)."""


class ShapeMismatchError(KinematicsError, ValueError):
    """Sequences that must have one entry per limb have different lengths."""
