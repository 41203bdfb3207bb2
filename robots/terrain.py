"""Terrain height fields: seeded fractal ground, rocks on it, heights and normals anywhere.

Seed 004 climbs "fractal terrain" with 30 mm of elevation standard deviation (wave 2 brief,
section 2.8). :func:`fractal_terrain` makes one as a spectral fractional Brownian motion
(fBm) surface: white Gaussian noise shaped in the Fourier domain by ``|k|^-(H + 1)`` (the
power spectrum ``|k|^-(2H + 2)`` of a 2D fBm with Hurst exponent ``H``), then shifted to mean
0 and scaled to the standard deviation asked for, exactly, over the grid's nodes. The same
arguments always give the same heights (numpy's PCG64 generator, seeded). A smaller Hurst
exponent gives rougher ground (0.8 smooth hills, 0.4 rough).

:class:`Rock` adds a smooth bump (a raised cosine of the rock's radius) to the heights, so
that a rock's top is ``height_m`` above the ground it sits on.

:class:`Terrain` is a grid of heights ``heights[i, j]`` [m]: row ``i`` lies at
``y = origin_y + i * cell_m``, column ``j`` at ``x = origin_x + j * cell_m`` (rows along y,
columns along x, as MuJoCo's height fields). Between nodes the surface is bilinear:
:meth:`Terrain.height` and :meth:`Terrain.normal` are exact for it. Beyond the grid's edges
the edge heights continue (the surface is flat outwards).

Pure numpy: the physics plant turns a :class:`Terrain` into a MuJoCo height field
(:func:`limbtree.robots.mujoco_model.build_model`); the climbing cores and the grippers
(:mod:`limbtree.robots.grippers`) read heights and normals from the same object.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, overload

import numpy as np
import numpy.typing as npt

from limbtree.robots.errors import RobotsError

FloatArray = npt.NDArray[np.float64]

#: Relative slack when checking that a size is a whole number of cells.
_CELL_SLACK: Final = 1e-6
#: The keys of a rock given as a mapping (mission files).
ROCK_KEYS: Final = ("at_m", "height_m", "radius_m")


class TerrainError(RobotsError, ValueError):
    """A terrain or a rock is described wrongly (the message says what and how to fix it)."""


@dataclass(frozen=True)
class Rock:
    """A rock on the terrain: a smooth bump added to the heights.

    The bump is a raised cosine: ``height_m * (1 + cos(pi * d / radius_m)) / 2`` at a
    distance ``d < radius_m`` from ``at_m``, 0 beyond. Its top is ``height_m`` above the
    ground under it; its sides are smooth (continuous slope) and it ends flat at its radius.

    Attributes:
        at_m: ``(x, y)`` of its centre in the world [m].
        height_m: height of its top above the ground [m], > 0.
        radius_m: radius of its foot [m], > 0.
    """

    at_m: tuple[float, float]
    height_m: float
    radius_m: float

    def __post_init__(self) -> None:
        at = tuple(self.at_m)
        if len(at) != 2 or not all(_finite(v) for v in at):
            raise TerrainError(f"rock at_m must be two finite numbers [x, y] [m], got {at!r}")
        object.__setattr__(self, "at_m", (float(at[0]), float(at[1])))
        for name in ("height_m", "radius_m"):
            value = getattr(self, name)
            if not _finite(value) or value <= 0:
                raise TerrainError(f"rock {name} must be a finite number > 0 [m], got {value!r}")
            object.__setattr__(self, name, float(value))

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> Rock:
        """A rock from ``{at_m: [x, y], height_m: H, radius_m: R}`` (a mission file's form).

        Raises:
            TerrainError: for a missing or unknown key, or a bad value; it lists the keys.
        """
        if not isinstance(value, Mapping):
            raise TerrainError(
                f"a rock is a mapping with keys {', '.join(ROCK_KEYS)}, got {value!r}"
            )
        unknown = sorted(set(value) - set(ROCK_KEYS))
        missing = [key for key in ROCK_KEYS if key not in value]
        if unknown or missing:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if unknown:
                problems.append(f"unknown {', '.join(map(str, unknown))}")
            raise TerrainError(
                f"rock {dict(value)!r}: {'; '.join(problems)}; "
                f"a rock has exactly the keys {', '.join(ROCK_KEYS)}"
            )
        at = value["at_m"]
        if not isinstance(at, Sequence) or isinstance(at, str) or len(at) != 2:
            raise TerrainError(f"rock at_m must be [x, y] [m], got {at!r}")
        return cls(at_m=(at[0], at[1]), height_m=value["height_m"], radius_m=value["radius_m"])

    def bump(self, x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
        """The rock's added height [m] at world points ``(x, y)`` [m] (broadcast)."""
        d = np.hypot(np.asarray(x, dtype=np.float64) - self.at_m[0], np.asarray(y) - self.at_m[1])
        inside = d < self.radius_m
        return np.where(
            inside,
            0.5 * self.height_m * (1.0 + np.cos(np.pi * np.minimum(d / self.radius_m, 1.0))),
            0.0,
        )


@dataclass(frozen=True, eq=False)
class Terrain:
    """A height field on a grid of square cells, bilinear between its nodes.

    Attributes:
        heights: ``(ny, nx)`` heights [m], read-only; ``heights[i, j]`` is at
            ``x = origin_m[0] + j * cell_m``, ``y = origin_m[1] + i * cell_m``.
        cell_m: grid spacing [m], > 0.
        origin_m: ``(x, y)`` [m] of node ``[0, 0]``; default: the grid centred on the world
            origin.

    Raises:
        TerrainError: for heights that are not a finite ``(ny, nx)`` grid with ny, nx >= 2,
            or a bad cell or origin.
    """

    heights: FloatArray
    cell_m: float
    origin_m: tuple[float, float] = field(default=(math.nan, math.nan))

    def __post_init__(self) -> None:
        heights = np.array(self.heights, dtype=np.float64)
        if heights.ndim != 2 or heights.shape[0] < 2 or heights.shape[1] < 2:
            raise TerrainError(
                f"terrain heights must be a (ny, nx) array with ny, nx >= 2, got shape "
                f"{heights.shape}"
            )
        if not np.isfinite(heights).all():
            raise TerrainError("terrain heights must all be finite numbers [m]")
        if not _finite(self.cell_m) or self.cell_m <= 0:
            raise TerrainError(
                f"terrain cell_m must be a finite number > 0 [m], got {self.cell_m!r}"
            )
        heights.setflags(write=False)
        object.__setattr__(self, "heights", heights)
        object.__setattr__(self, "cell_m", float(self.cell_m))
        origin = tuple(self.origin_m)
        if len(origin) == 2 and all(isinstance(v, float) and math.isnan(v) for v in origin):
            ny, nx = heights.shape
            origin = (-(nx - 1) * self.cell_m / 2.0, -(ny - 1) * self.cell_m / 2.0)
        if len(origin) != 2 or not all(_finite(v) for v in origin):
            raise TerrainError(f"terrain origin_m must be two finite numbers [m], got {origin!r}")
        object.__setattr__(self, "origin_m", (float(origin[0]), float(origin[1])))

    @classmethod
    def flat(cls, size_m: float | Sequence[float], cell_m: float, height_m: float = 0.0) -> Terrain:
        """Level ground of one height [m], centred on the world origin.

        Args:
            size_m: side [m], or ``(x side, y side)``: whole numbers of cells.
            cell_m: grid spacing [m].
            height_m: the ground's height [m].

        Raises:
            TerrainError: for a bad size or cell.
        """
        nx, ny = _node_counts(size_m, cell_m)
        return cls(np.full((ny, nx), float(height_m)), cell_m)

    @property
    def shape(self) -> tuple[int, int]:
        """``(ny, nx)``: nodes along y (rows) and along x (columns)."""
        ny, nx = self.heights.shape
        return int(ny), int(nx)

    @property
    def size_m(self) -> tuple[float, float]:
        """``(x side, y side)`` [m] from the first node to the last."""
        ny, nx = self.shape
        return ((nx - 1) * self.cell_m, (ny - 1) * self.cell_m)

    @property
    def center_m(self) -> tuple[float, float]:
        """``(x, y)`` [m] of the grid's centre."""
        sx, sy = self.size_m
        return (self.origin_m[0] + sx / 2.0, self.origin_m[1] + sy / 2.0)

    @property
    def x_m(self) -> FloatArray:
        """``(nx,)`` x of the columns [m] (a new array)."""
        return np.asarray(self.origin_m[0] + self.cell_m * np.arange(self.shape[1]), np.float64)

    @property
    def y_m(self) -> FloatArray:
        """``(ny,)`` y of the rows [m] (a new array)."""
        return np.asarray(self.origin_m[1] + self.cell_m * np.arange(self.shape[0]), np.float64)

    @overload
    def height(self, x: float, y: float) -> float: ...

    @overload
    def height(self, x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray | float: ...

    def height(self, x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray | float:
        """Height [m] of the bilinear surface at world points ``(x, y)`` [m].

        Exact at the nodes; bilinear in each cell; the edge heights beyond the grid.

        Args:
            x: x [m], a number or an array.
            y: y [m], broadcast against ``x``.

        Returns:
            A float for scalar ``x`` and ``y``, else an array of their broadcast shape.
        """
        if isinstance(x, int | float) and isinstance(y, int | float):
            return self.height_at(float(x), float(y))
        j, i, tx, ty, _, _ = self._locate(x, y)
        h = self.heights
        z = (1.0 - ty) * ((1.0 - tx) * h[i, j] + tx * h[i, j + 1]) + ty * (
            (1.0 - tx) * h[i + 1, j] + tx * h[i + 1, j + 1]
        )
        return float(z) if z.ndim == 0 else z

    def covers(self, x: float, y: float) -> bool:
        """Whether the point ``(x, y)`` [m] is over the grid, edges included.

        :meth:`height` goes on flat beyond the grid, but the physics plant's ground (its
        height field) ends there: nothing off the grid can be stood on or gripped.
        """
        x0, y0 = self.origin_m
        sx, sy = self.size_m
        return x0 <= x <= x0 + sx and y0 <= y <= y0 + sy

    def extent_text(self) -> str:
        """The grid's extent for a person: ``x -150 to 150 mm, y -150 to 150 mm``."""
        (x0, y0), (sx, sy) = self.origin_m, self.size_m
        return (
            f"x {x0 * 1e3:.0f} to {(x0 + sx) * 1e3:.0f} mm, "
            f"y {y0 * 1e3:.0f} to {(y0 + sy) * 1e3:.0f} mm"
        )

    def height_at(self, x: float, y: float) -> float:
        """:meth:`height` at one point ``(x, y)`` [m], in plain Python (the 1 kHz path)."""
        j, i, tx, ty = self._locate_one(x, y)
        item = self.heights.item
        return (1.0 - ty) * ((1.0 - tx) * item(i, j) + tx * item(i, j + 1)) + ty * (
            (1.0 - tx) * item(i + 1, j) + tx * item(i + 1, j + 1)
        )

    def normal(self, x: npt.ArrayLike, y: npt.ArrayLike) -> FloatArray:
        """Upward unit normals of the bilinear surface at world points ``(x, y)`` [m].

        Inside a cell the normal is that of the bilinear patch, ``(-dh/dx, -dh/dy, 1)``
        normalised; on a cell edge the slope of the cell above it (in x or y) is taken;
        beyond the grid the surface is flat outwards (zero slope across the edge).

        Returns:
            ``(..., 3)`` normals, ``...`` the broadcast shape of ``x`` and ``y``.
        """
        if isinstance(x, int | float) and isinstance(y, int | float):
            return np.array(self._normal_one(float(x), float(y)))
        j, i, tx, ty, out_x, out_y = self._locate(x, y)
        h, c = self.heights, self.cell_m
        dh_dx = ((1.0 - ty) * (h[i, j + 1] - h[i, j]) + ty * (h[i + 1, j + 1] - h[i + 1, j])) / c
        dh_dy = ((1.0 - tx) * (h[i + 1, j] - h[i, j]) + tx * (h[i + 1, j + 1] - h[i, j + 1])) / c
        dh_dx = np.where(out_x, 0.0, dh_dx)
        dh_dy = np.where(out_y, 0.0, dh_dy)
        n = np.stack([-dh_dx, -dh_dy, np.ones_like(dh_dx)], axis=-1)
        return np.asarray(n / np.linalg.norm(n, axis=-1, keepdims=True), dtype=np.float64)

    def with_rocks(self, rocks: Iterable[Rock | Mapping[str, Any]]) -> Terrain:
        """This terrain with rocks added (each a :class:`Rock` or its mapping form).

        Raises:
            TerrainError: for a badly described rock.
        """
        heights = np.array(self.heights)
        xx, yy = np.meshgrid(self.x_m, self.y_m)
        for rock in rocks:
            stone = rock if isinstance(rock, Rock) else Rock.from_mapping(rock)
            heights += stone.bump(xx, yy)
        return Terrain(heights, self.cell_m, self.origin_m)

    def _normal_one(self, x: float, y: float) -> tuple[float, float, float]:
        """:meth:`normal` at one point, without numpy."""
        j, i, tx, ty = self._locate_one(x, y)
        item, c = self.heights.item, self.cell_m
        h00, h01, h10, h11 = item(i, j), item(i, j + 1), item(i + 1, j), item(i + 1, j + 1)
        ox, oy = self.origin_m
        ny, nx = self.heights.shape
        inside_x = ox <= x <= ox + (nx - 1) * c
        inside_y = oy <= y <= oy + (ny - 1) * c
        dh_dx = ((1.0 - ty) * (h01 - h00) + ty * (h11 - h10)) / c if inside_x else 0.0
        dh_dy = ((1.0 - tx) * (h10 - h00) + tx * (h11 - h01)) / c if inside_y else 0.0
        norm = math.sqrt(dh_dx * dh_dx + dh_dy * dh_dy + 1.0)
        return (-dh_dx / norm, -dh_dy / norm, 1.0 / norm)

    def _locate_one(self, x: float, y: float) -> tuple[int, int, float, float]:
        """:meth:`_locate` for one point, without numpy."""
        ny, nx = self.heights.shape
        fx = (x - self.origin_m[0]) / self.cell_m
        fy = (y - self.origin_m[1]) / self.cell_m
        if not (math.isfinite(fx) and math.isfinite(fy)):
            raise TerrainError(f"terrain: x and y must be finite numbers [m], got {x!r}, {y!r}")
        fx = min(max(fx, 0.0), nx - 1.0)
        fy = min(max(fy, 0.0), ny - 1.0)
        j = min(int(fx), nx - 2)
        i = min(int(fy), ny - 2)
        return j, i, fx - j, fy - i

    def _locate(
        self, x: npt.ArrayLike, y: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], FloatArray, FloatArray, Any, Any]:
        """Cell indices ``(j, i)``, fractions ``(tx, ty)`` in [0, 1] and out-of-grid masks."""
        ny, nx = self.heights.shape
        fx = (np.asarray(x, dtype=np.float64) - self.origin_m[0]) / self.cell_m
        fy = (np.asarray(y, dtype=np.float64) - self.origin_m[1]) / self.cell_m
        fx, fy = np.broadcast_arrays(fx, fy)
        if not (np.isfinite(fx).all() and np.isfinite(fy).all()):
            raise TerrainError("terrain: x and y must be finite numbers [m]")
        out_x = (fx < 0.0) | (fx > nx - 1)
        out_y = (fy < 0.0) | (fy > ny - 1)
        fx = np.clip(fx, 0.0, nx - 1)
        fy = np.clip(fy, 0.0, ny - 1)
        j = np.minimum(fx.astype(np.intp), nx - 2)
        i = np.minimum(fy.astype(np.intp), ny - 2)
        return j, i, fx - j, fy - i, out_x, out_y


def fractal_terrain(
    size_m: float | Sequence[float],
    cell_m: float,
    sigma_m: float,
    hurst: float,
    seed: int,
    *,
    rocks: Iterable[Rock | Mapping[str, Any]] = (),
) -> Terrain:
    """Seeded fractal ground: a spectral fBm height field with a given standard deviation.

    Seed 004's terrain (wave 2 brief, section 2.8: 3 m x 3 m, 10 mm cells, sigma 30 mm,
    Hurst 0.8). The heights over the grid's nodes have mean 0 and standard deviation
    ``sigma_m`` exactly (before rocks are added). Deterministic: the same arguments give the
    same heights; different seeds give different ground.

    Args:
        size_m: side [m], or ``(x side, y side)``; each a whole number of cells. The grid is
            centred on the world origin and has ``size / cell + 1`` nodes per side.
        cell_m: grid spacing [m], > 0.
        sigma_m: standard deviation of the heights [m], >= 0 (0: flat).
        hurst: Hurst exponent, in (0, 1]; smaller is rougher.
        seed: random seed, an int >= 0.
        rocks: rocks to add (:class:`Rock` or ``{at_m, height_m, radius_m}`` mappings).

    Returns:
        The terrain.

    Raises:
        TerrainError: for a bad argument; the message names it and its valid range.
    """
    nx, ny = _node_counts(size_m, cell_m)
    if not _finite(sigma_m) or sigma_m < 0:
        raise TerrainError(f"sigma_m must be a finite number >= 0 [m], got {sigma_m!r}")
    if not _finite(hurst) or not 0.0 < hurst <= 1.0:
        raise TerrainError(f"hurst must be in (0, 1] (0.8 smooth, 0.4 rough), got {hurst!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise TerrainError(f"seed must be an int >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    kx = np.fft.rfftfreq(nx, d=cell_m)
    ky = np.fft.fftfreq(ny, d=cell_m)
    k = np.hypot(kx[np.newaxis, :], ky[:, np.newaxis])
    amplitude = np.zeros_like(k)
    np.power(k, -(hurst + 1.0), out=amplitude, where=k > 0)
    noise = rng.standard_normal(k.shape) + 1j * rng.standard_normal(k.shape)
    heights = np.fft.irfft2(amplitude * noise, s=(ny, nx))
    heights -= heights.mean()
    spread = float(heights.std())
    if sigma_m == 0 or spread == 0:
        heights = np.zeros((ny, nx))
    else:
        heights *= sigma_m / spread
    terrain = Terrain(heights, cell_m)
    rocks = tuple(rocks)
    return terrain.with_rocks(rocks) if rocks else terrain


def _node_counts(size_m: float | Sequence[float], cell_m: float) -> tuple[int, int]:
    """``(nx, ny)`` nodes for a size [m] that is a whole number of cells."""
    if not _finite(cell_m) or cell_m <= 0:
        raise TerrainError(f"cell_m must be a finite number > 0 [m], got {cell_m!r}")
    if isinstance(size_m, Sequence) and not isinstance(size_m, str):
        sides = tuple(size_m)
    else:
        sides = (size_m, size_m)
    if len(sides) != 2 or not all(_finite(s) and s > 0 for s in sides):
        raise TerrainError(f"size_m must be a number > 0 or [x, y] [m], got {size_m!r}")
    counts = []
    for side in sides:
        cells = round(float(side) / cell_m)
        if cells < 1 or abs(cells * cell_m - side) > _CELL_SLACK * max(side, cell_m):
            raise TerrainError(
                f"size {side} m is not a whole number of {cell_m} m cells; use a multiple "
                f"of cell_m (e.g. {max(cells, 1) * cell_m:g} m)"
            )
        counts.append(cells + 1)
    return counts[0], counts[1]


def _finite(value: object) -> bool:
    return (
        isinstance(value, int | float | np.integer | np.floating)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


@dataclass(frozen=True)
class TerrainSpec:
    """A seeded fractal terrain with rocks (seed 004's asteroid ground), built once.

    Attributes:
        size_m: side of the square grid [m] (a whole number of cells), centred on the origin.
        cell_m: grid spacing [m].
        sigma_m: standard deviation of the heights [m] (seed 004: 0.03).
        hurst: Hurst exponent in (0, 1] (0.8 smooth, 0.4 rough).
        seed: the random seed, an int >= 0.
        rocks: rocks added to it.

    Raises:
        TerrainError: naming the bad field and its valid range (the terrain is built here,
            once).
    """

    size_m: float = 3.0
    cell_m: float = 0.01
    sigma_m: float = 0.03
    hurst: float = 0.8
    seed: int = 0
    rocks: tuple[Rock, ...] = ()
    #: The terrain the settings make (:func:`fractal_terrain`), built with the spec.
    terrain: Terrain = field(init=False, repr=False, compare=False)

    #: The JSON keys of a terrain (``--physics`` ``terrain``).
    KEYS: ClassVar[tuple[str, ...]] = ("size_m", "cell_m", "sigma_m", "hurst", "seed", "rocks")

    def __post_init__(self) -> None:
        object.__setattr__(self, "rocks", tuple(self.rocks))
        terrain = fractal_terrain(
            self.size_m, self.cell_m, self.sigma_m, self.hurst, self.seed, rocks=self.rocks
        )
        object.__setattr__(self, "terrain", terrain)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any], what: str = "terrain") -> TerrainSpec:
        """A terrain from its JSON form (every key but ``rocks`` required).

        The form is ``{size_m, cell_m, sigma_m, hurst, seed, rocks: [{at_m, height_m,
        radius_m}]}``.

        Raises:
            ValueError: naming ``what``, the bad key and what it must be.
        """
        if not isinstance(raw, Mapping):
            raise ValueError(f"{what} must be an object with keys {', '.join(cls.KEYS)}")
        unknown = sorted(set(raw) - set(cls.KEYS))
        missing = [key for key in cls.KEYS[:-1] if key not in raw]
        if unknown or missing:
            problems = [f"unknown keys {', '.join(map(str, unknown))}"] if unknown else []
            problems += [f"missing {', '.join(missing)}"] if missing else []
            raise ValueError(
                f"{what} has {'; '.join(problems)}; its keys are {', '.join(cls.KEYS)}"
            )
        rocks = raw.get("rocks", [])
        if not isinstance(rocks, list | tuple):
            raise ValueError(f"{what} rocks must be a list of {{at_m, height_m, radius_m}}")
        try:
            return cls(
                size_m=raw["size_m"],
                cell_m=raw["cell_m"],
                sigma_m=raw["sigma_m"],
                hurst=raw["hurst"],
                seed=raw["seed"],
                rocks=tuple(Rock.from_mapping(rock) for rock in rocks),
            )
        except TerrainError as exc:
            raise ValueError(f"{what}: {exc}") from None

    def to_mapping(self) -> dict[str, Any]:
        """The JSON form :meth:`from_mapping` reads."""
        return {
            "size_m": self.size_m,
            "cell_m": self.cell_m,
            "sigma_m": self.sigma_m,
            "hurst": self.hurst,
            "seed": self.seed,
            "rocks": [
                {"at_m": list(r.at_m), "height_m": r.height_m, "radius_m": r.radius_m}
                for r in self.rocks
            ],
        }
