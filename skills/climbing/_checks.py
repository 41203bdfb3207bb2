"""Input checks shared by the climbing cores (private)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from limbtree.skills.climbing.errors import ClimbingInputError

FloatArray = npt.NDArray[np.float64]


def positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as a float that is finite and > 0 (or >= 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and (number >= 0.0 if allow_zero else number > 0.0)):
        raise ClimbingInputError(
            name, value, "must be a finite number " + (">= 0" if allow_zero else "> 0")
        )
    return number


def array(name: str, value: Any, shape: tuple[int | None, ...], *, what: str = "") -> FloatArray:
    """``value`` as a fresh finite float array of ``shape`` (None: any length)."""
    try:
        result = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ClimbingInputError(name, value, f"must be {what or 'numbers'}") from None
    if result.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(result.shape, shape, strict=True)
    ):
        dims = " x ".join("k" if s is None else str(s) for s in shape)
        raise ClimbingInputError(
            name, value, f"must have shape ({dims}){' (' + what + ')' if what else ''}"
        )
    if not np.isfinite(result).all():
        raise ClimbingInputError(name, value, "contains NaN or infinity")
    return result


def vector3(name: str, value: Any) -> FloatArray:
    """A finite 3-vector [m]."""
    return array(name, value, (3,), what="an x, y, z vector")


def unit3(name: str, value: Any) -> FloatArray:
    """A 3-vector normalised to length 1 (it must not be zero)."""
    vector = vector3(name, value)
    norm = float(np.linalg.norm(vector))
    if norm < 1e-12:
        raise ClimbingInputError(name, value, "must be a non-zero direction")
    return vector / norm


def transform(name: str, value: Any) -> FloatArray:
    """A 4x4 rigid transform (rotation orthonormal to 1e-6, last row 0 0 0 1)."""
    matrix = array(name, value, (4, 4), what="a 4x4 homogeneous transform")
    rotation = matrix[:3, :3]
    if (
        not np.allclose(matrix[3], (0.0, 0.0, 0.0, 1.0), atol=1e-9)
        or not np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-6)
        or np.linalg.det(rotation) < 0.0
    ):
        raise ClimbingInputError(
            name, value, "must be a rigid transform (orthonormal rotation, last row 0 0 0 1)"
        )
    return matrix


def cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a x b`` over the last axis, broadcasting (numpy's ``cross`` costs ten times more)."""
    result = np.empty(np.broadcast_shapes(a.shape, b.shape))
    result[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    result[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    result[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return result


def read_only(value: FloatArray) -> FloatArray:
    """``value`` made read-only (an immutable value object's array)."""
    value.setflags(write=False)
    return value
