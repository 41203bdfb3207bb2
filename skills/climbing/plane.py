"""The footholds' regression plane and the desired base pose on it (seed 004 Sec. 2.1, eq. 1).

For each support phase the base goes to a pose set by the contact points ``p_1 .. p_n``:

* the support "polygon" is their least-squares regression plane (ClimbLab
  ``pcd_least_squares_plane.m``): through the centroid ``p_c``, normal to the eigenvector of
  the smallest eigenvalue of the centred scatter matrix (orthogonal least squares),
  oriented up (:func:`fit_plane`);
* the base's ``x`` and ``y`` are the centroid's, its height ``z = p_cz + h_n`` and its
  attitude the plane's frame ``Σ_p`` (z along the normal, x along the heading projected
  onto the plane) (:func:`desired_base_pose`);
* eq. 1, base collision avoidance: when the terrain rises through the base's lower face at
  that pose, the base is raised by the largest penetration plus ``h_add``. As printed, eq. 1
  subtracts ``b_low`` from a depth ``d_coll`` measured from an unstated datum; measuring
  the penetration at the lower face itself (``b_low`` below the base origin) is the
  equivalent the wave-2 brief (2.1) adopts: ``x'_bz = p_cz + h_n + max(penetration) +
  h_add`` when ``max(penetration) > 0``, and no raise otherwise (the paper raises only when
  it "detects a collision"). A vertical raise lowers every vertical penetration by the
  same amount, so the lower face then clears the terrain by ``h_add`` exactly.

:func:`level_base_pose` is the baseline's (no plane, no raise): the centroid's ``x, y`` at a
fixed height, level.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from limbtree.skills.climbing._checks import (
    FloatArray,
    array,
    positive,
    read_only,
    unit3,
    vector3,
)
from limbtree.skills.climbing.errors import ClimbingInputError

#: A terrain's height [m] at world ``x, y`` [m] (vectorised: arrays in, an array out), such
#: as ``limbtree.robots.terrain.Terrain.height``.
HeightFunction = Callable[[FloatArray, FloatArray], FloatArray]

#: World up.
UP = (0.0, 0.0, 1.0)
#: The default walking direction (world x).
HEADING = (1.0, 0.0, 0.0)


@dataclass(frozen=True, eq=False)
class RegressionPlane:
    """A plane through ``centroid`` with unit ``normal`` (seed 004 Fig. 2).

    Attributes:
        centroid: ``p_c``, the mean of the points it was fitted to [m].
        normal: unit normal, oriented so that ``normal · up > 0``.
        residual_rms_m: root mean square of the points' distances to the plane [m].

    Raises:
        ClimbingInputError: for a non-finite centroid, a zero normal or a negative residual.
    """

    centroid: FloatArray
    normal: FloatArray
    residual_rms_m: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "centroid", read_only(vector3("centroid", self.centroid)))
        object.__setattr__(self, "normal", read_only(unit3("normal", self.normal)))
        object.__setattr__(
            self, "residual_rms_m", positive("residual_rms_m", self.residual_rms_m, allow_zero=True)
        )

    def distances(self, points: Sequence[Sequence[float]] | FloatArray) -> FloatArray:
        """Signed distances of ``(k, 3)`` points from the plane, > 0 on the normal's side [m]."""
        values = array("points", points, (None, 3), what="rows of x, y, z")
        result: FloatArray = (values - self.centroid) @ self.normal
        return result

    def along(self, direction: Sequence[float] | FloatArray) -> FloatArray:
        """``direction`` projected onto the plane, unit.

        Raises:
            ClimbingInputError: if ``direction`` is (nearly) normal to the plane.
        """
        d = unit3("direction", direction)
        projected = d - float(d @ self.normal) * self.normal
        norm = float(np.linalg.norm(projected))
        if norm < 1e-6:
            raise ClimbingInputError(
                "direction", direction, "is normal to the plane; give one that lies along it"
            )
        result: FloatArray = projected / norm
        return result

    def frame(self, heading: Sequence[float] | FloatArray = HEADING) -> FloatArray:
        """``Σ_p``: z along the normal, x along ``heading`` projected onto the plane.

        Returns:
            ``(3, 3)`` rotation whose columns are the frame's axes in the world.

        Raises:
            ClimbingInputError: if ``heading`` is normal to the plane.
        """
        x = self.along(heading)
        z = self.normal
        return np.column_stack([x, np.cross(z, x), z])


def fit_plane(
    points: Sequence[Sequence[float]] | FloatArray, up: Sequence[float] | FloatArray = UP
) -> RegressionPlane:
    """The least-squares regression plane of ``(k, 3)`` contact points (``k >= 3``).

    Orthogonal least squares, as ClimbLab: the normal is the eigenvector of the smallest
    eigenvalue of ``Σ (p - p_c)(p - p_c)^T``; it minimises the sum of squared distances.

    Args:
        points: the contact points [m], one per row.
        up: the normal is flipped to point this way.

    Returns:
        The plane.

    Raises:
        ClimbingInputError: for fewer than 3 points, NaNs, or points on one line (no plane).
    """
    values = array("points", points, (None, 3), what="rows of x, y, z")
    if len(values) < 3:
        raise ClimbingInputError("points", points, "a plane needs at least 3 contact points")
    n_up = unit3("up", up)
    centroid = values.mean(axis=0)
    centred = values - centroid
    eigenvalues, eigenvectors = np.linalg.eigh(centred.T @ centred)  # ascending
    spread = float(eigenvalues[-1])
    if spread <= 0.0 or eigenvalues[1] <= 1e-12 * spread:
        raise ClimbingInputError(
            "points", points, "are all on one line (or one point); they define no plane"
        )
    normal = eigenvectors[:, 0]
    if float(normal @ n_up) < 0.0:
        normal = -normal
    # From the distances themselves: the smallest eigenvalue is their sum of squares too,
    # but only to about eps times the spread, whose root (1e-9 m) would hide an exact fit.
    distances = centred @ normal
    rms = math.sqrt(float(distances @ distances) / len(values))
    return RegressionPlane(centroid, normal, rms)


@dataclass(frozen=True)
class BaseFootprint:
    """The base body's lower face, as a box below the base origin.

    Attributes:
        half_x_m: half its length along the base's x [m].
        half_y_m: half its width along the base's y [m].
        b_low_m: ``b_low``: how far below the base origin the lower face is [m].
        samples: points per side of the grid checked against the terrain (>= 2).

    Raises:
        ClimbingInputError: for a non-positive size or fewer than 2 samples.
    """

    half_x_m: float
    half_y_m: float
    b_low_m: float
    samples: int = 9

    def __post_init__(self) -> None:
        object.__setattr__(self, "half_x_m", positive("half_x_m", self.half_x_m))
        object.__setattr__(self, "half_y_m", positive("half_y_m", self.half_y_m))
        object.__setattr__(self, "b_low_m", positive("b_low_m", self.b_low_m, allow_zero=True))
        if int(self.samples) != self.samples or self.samples < 2:
            raise ClimbingInputError("samples", self.samples, "must be an integer >= 2")

    def lower_face(self) -> FloatArray:
        """``(samples^2, 3)`` points of the lower face in the base frame [m]."""
        xs = np.linspace(-self.half_x_m, self.half_x_m, self.samples)
        ys = np.linspace(-self.half_y_m, self.half_y_m, self.samples)
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        return np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, -self.b_low_m)])


def base_penetration(
    base_pose: Sequence[Sequence[float]] | FloatArray,
    footprint: BaseFootprint,
    terrain: HeightFunction,
) -> float:
    """How deep the terrain rises through the base's lower face at ``base_pose`` [m].

    Args:
        base_pose: ``(4, 4)`` base pose in the world.
        footprint: the base's lower face.
        terrain: the terrain's height at world ``x, y``.

    Returns:
        ``max(terrain(x, y) - z)`` over the lower face's points in the world: > 0 when the
        terrain penetrates the base, otherwise minus the clearance.

    Raises:
        ClimbingInputError: for a pose that is not 4x4 and finite, or a terrain that does
            not return one finite height per point.
    """
    pose = array("base_pose", base_pose, (4, 4), what="a 4x4 homogeneous transform")
    points = footprint.lower_face() @ pose[:3, :3].T + pose[:3, 3]
    heights = np.asarray(terrain(points[:, 0], points[:, 1]), dtype=np.float64)
    if heights.shape != (len(points),) or not np.isfinite(heights).all():
        raise ClimbingInputError(
            "terrain",
            terrain,
            f"must return {len(points)} finite heights for {len(points)} points, got "
            f"shape {heights.shape}",
        )
    return float(np.max(heights - points[:, 2]))


@dataclass(frozen=True, eq=False)
class BaseTarget:
    """A support phase's desired base pose and how it was found.

    Attributes:
        pose: ``(4, 4)`` ``x'_b`` in the world [m].
        plane: the footholds' regression plane.
        penetration_m: the terrain's largest penetration of the lower face before the raise
            [m] (negative: the clearance); None without a terrain.
        raise_m: what eq. 1 added to the height [m] (0 without a collision).
    """

    pose: FloatArray
    plane: RegressionPlane
    penetration_m: float | None
    raise_m: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "pose", read_only(np.array(self.pose, dtype=np.float64)))


def desired_base_pose(
    footholds: Sequence[Sequence[float]] | FloatArray,
    h_n_m: float,
    *,
    heading: Sequence[float] | FloatArray = HEADING,
    terrain: HeightFunction | None = None,
    footprint: BaseFootprint | None = None,
    h_add_m: float = 0.02,
    up: Sequence[float] | FloatArray = UP,
) -> BaseTarget:
    """Seed 004's desired base pose ``x'_b`` for a support phase, with eq. 1's raise.

    Args:
        footholds: ``(k, 3)`` contact points of the legs [m], ``k >= 3``.
        h_n_m: ``h_n``, the nominal stance height [m] above the centroid.
        heading: the walking direction; the base's x is it projected onto the plane.
        terrain: the terrain's height at world ``x, y``; None: no collision check.
        footprint: the base's lower face (required with ``terrain``).
        h_add_m: ``h_add``, the clearance added above the deepest penetration [m].
        up: the world's up (the plane's normal is oriented along it; the raise is along it).

    Returns:
        The pose, the plane and the raise.

    Raises:
        ClimbingInputError: for bad footholds (see :func:`fit_plane`), a negative height, a
            terrain without a footprint, or a heading normal to the plane.
    """
    plane = fit_plane(footholds, up)
    n_up = unit3("up", up)
    h_n = positive("h_n_m", h_n_m, allow_zero=True)
    h_add = positive("h_add_m", h_add_m, allow_zero=True)
    pose = np.eye(4)
    pose[:3, :3] = plane.frame(heading)
    pose[:3, 3] = plane.centroid + h_n * n_up
    if terrain is None:
        return BaseTarget(pose, plane, None, 0.0)
    if footprint is None:
        raise ClimbingInputError(
            "footprint", None, "the collision check needs the base's lower face (BaseFootprint)"
        )
    if not np.allclose(n_up, UP):
        raise ClimbingInputError(
            "up", up, "a terrain height function measures along world z; use up=(0, 0, 1)"
        )
    penetration = base_penetration(pose, footprint, terrain)
    raised = penetration + h_add if penetration > 0.0 else 0.0
    pose[:3, 3] += raised * n_up
    return BaseTarget(pose, plane, penetration, raised)


def level_base_pose(
    footholds: Sequence[Sequence[float]] | FloatArray,
    height_m: float,
    heading: Sequence[float] | FloatArray = HEADING,
) -> FloatArray:
    """The baseline's base pose: level, over the footholds' centroid, at a fixed world height.

    Args:
        footholds: ``(k, 3)`` contact points [m], ``k >= 1``.
        height_m: the base origin's world z [m].
        heading: the base's x, projected onto the horizontal.

    Returns:
        ``(4, 4)`` pose in the world.

    Raises:
        ClimbingInputError: for bad footholds, a non-finite height or a vertical heading.
    """
    values = array("footholds", footholds, (None, 3), what="rows of x, y, z")
    if len(values) == 0:
        raise ClimbingInputError("footholds", footholds, "needs at least one foothold")
    height = float(height_m)
    if not math.isfinite(height):
        raise ClimbingInputError("height_m", height_m, "must be a finite height [m]")
    level = RegressionPlane(np.zeros(3), np.array(UP))
    pose = np.eye(4)
    pose[:3, :3] = level.frame(heading)
    pose[:3, 3] = (*values[:, :2].mean(axis=0), height)
    return pose


__all__ = [
    "HEADING",
    "UP",
    "BaseFootprint",
    "BaseTarget",
    "HeightFunction",
    "RegressionPlane",
    "base_penetration",
    "desired_base_pose",
    "fit_plane",
    "level_base_pose",
]
