"""The ground under the limbs, for the web debugger's 3D view (seed 004's terrain).

A record whose mission has a terrain names it in its header (``world.terrain``,
``docs/record.md``): the spec in SI, from which :func:`~limbtree.robots.terrain.fractal_terrain`
rebuilds the very heights the run's plant had (deterministic given its arguments). The page
is sent a patch of it around the robots' start (:data:`PATCH_SIDE_M` square), on a grid of
every k-th node of the terrain's (:func:`patch_stride`), as ``GET /api/terrain`` documents
(``docs/visualization.md``).

:class:`Ground` builds the terrain once (a 301 x 301 grid: tens of milliseconds, and up to
a second to import the robots package the first time), thread-safely, and keeps the patch's
JSON.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from limbtree.trees.errors import RunError

if TYPE_CHECKING:
    from limbtree.robots.terrain import Terrain

#: The side of the square patch the page draws, centred on the robots' start [m].
PATCH_SIDE_M: Final = 1.2
#: The patch's cell is the smallest whole number of the terrain's cells at least this [m].
PATCH_CELL_M: Final = 0.015
#: Heights are sent rounded to this many decimals of a metre (0.01 mm).
HEIGHT_DECIMALS: Final = 5
#: The keys of the header's ``world.terrain``.
TERRAIN_KEYS: Final = ("kind", "size_m", "cell_m", "sigma_m", "hurst", "seed", "rocks")


class GroundError(RunError):
    """A header's ``world.terrain`` cannot be rebuilt (the message names the key and why)."""


def terrain_spec(header: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The header's ``world.terrain``, or None when the run has no terrain.

    Raises:
        GroundError: when ``world`` or its ``terrain`` is not a map.
    """
    world = header.get("world")
    if world is None:
        return None
    if not isinstance(world, Mapping):
        raise GroundError(f"the record's header has a 'world' that is not a map: {world!r}")
    spec = world.get("terrain")
    if spec is None:
        return None
    if not isinstance(spec, Mapping):
        raise GroundError(
            f"the record's world.terrain must be a map of {', '.join(TERRAIN_KEYS)}, not {spec!r}"
        )
    return spec


def build_terrain(spec: Mapping[str, Any]) -> Terrain:
    """The terrain a header's ``world.terrain`` describes.

    Raises:
        GroundError: naming the missing, unknown or bad key and what it must be.
    """
    from limbtree.robots.terrain import TerrainSpec

    kind = spec.get("kind", "fractal")
    if kind != "fractal":
        raise GroundError(
            f"the record's world.terrain has kind {kind!r}: this limbtree draws 'fractal' only"
        )
    missing = [key for key in TERRAIN_KEYS[1:-1] if key not in spec]
    unknown = sorted(str(key) for key in spec if key not in TERRAIN_KEYS)
    if missing or unknown:
        problems = [f"no {', '.join(missing)}"] if missing else []
        problems += [f"unknown keys {', '.join(unknown)}"] if unknown else []
        raise GroundError(
            f"the record's world.terrain has {'; '.join(problems)}: its keys are "
            f"{', '.join(TERRAIN_KEYS)}"
        )
    settings = {key: value for key, value in spec.items() if key != "kind"}
    settings["rocks"] = settings.get("rocks") or []
    try:
        return TerrainSpec.from_mapping(settings, "the record's world.terrain").terrain
    except (ValueError, TypeError) as exc:
        raise GroundError(str(exc)) from None


def start_of(header: Mapping[str, Any]) -> tuple[float, float]:
    """Where the robots start, ``(x, y)`` [m]: the mean of the header's robot bases.

    The world's origin when no robot has a base.
    """
    points = []
    for robot in (header.get("robots") or {}).values():
        base = robot.get("base") if isinstance(robot, Mapping) else None
        if not isinstance(base, Sequence) or len(base) < 2:
            continue
        x, y = base[0], base[1]
        numbers = isinstance(x, int | float) and isinstance(y, int | float)
        if numbers and math.isfinite(x) and math.isfinite(y):
            points.append((float(x), float(y)))
    if not points:
        return (0.0, 0.0)
    return (
        sum(p[0] for p in points) / len(points),
        sum(p[1] for p in points) / len(points),
    )


def patch_stride(terrain_cell_m: float, at_least_m: float = PATCH_CELL_M) -> int:
    """How many of the terrain's cells make one of the patch's.

    The fewest that reach ``at_least_m`` [m]; 1 for a terrain coarser than that.
    """
    return max(1, math.ceil(at_least_m / terrain_cell_m - 1e-9))


def patch(
    terrain: Terrain,
    centre_m: tuple[float, float],
    side_m: float = PATCH_SIDE_M,
    at_least_m: float = PATCH_CELL_M,
) -> dict[str, Any]:
    """A square patch of the terrain's heights, on every k-th node of its grid.

    The patch's nodes are nodes of the terrain's grid (its heights exact there), the
    patch's side about ``side_m`` around ``centre_m``, clipped to the terrain.

    Args:
        terrain: the terrain.
        centre_m: ``(x, y)`` [m] the patch is centred on.
        side_m: its side [m].
        at_least_m: its cell is the smallest multiple of the terrain's cell at least this [m].

    Returns:
        ``{"origin_m": [x0, y0], "cell_m", "nx", "ny", "heights_m"}``: ``heights_m`` row
        after row (``ny`` rows along y of ``nx`` heights along x), ``heights_m[i * nx + j]``
        at ``x = x0 + j * cell_m``, ``y = y0 + i * cell_m`` [m]; and ``"min_m"``, ``"max_m"``.
    """
    ny_t, nx_t = terrain.shape
    # (at most the whole terrain, for one smaller than a patch cell)
    stride = min(patch_stride(terrain.cell_m, at_least_m), nx_t - 1, ny_t - 1)
    cell = stride * terrain.cell_m
    ox, oy = terrain.origin_m
    half = max(1, round(side_m / 2.0 / cell))  # patch cells each side of the centre

    def nodes(centre: float, origin: float, count: int) -> range:
        """The terrain's node indices along one axis (a start off the terrain: its edge)."""
        middle = min(max(round((centre - origin) / terrain.cell_m), 0), count - 1)
        first = max(0, middle - half * stride)
        last = min(count - 1, middle + half * stride)
        return range(first, last + 1, stride)

    cols = nodes(centre_m[0], ox, nx_t)
    rows = nodes(centre_m[1], oy, ny_t)
    heights = terrain.heights[rows.start : rows.stop : stride, cols.start : cols.stop : stride]
    return {
        "origin_m": [ox + cols.start * terrain.cell_m, oy + rows.start * terrain.cell_m],
        "cell_m": cell,
        "nx": int(heights.shape[1]),
        "ny": int(heights.shape[0]),
        "heights_m": heights.round(HEIGHT_DECIMALS).ravel().tolist(),
        "min_m": float(heights.min()),
        "max_m": float(heights.max()),
    }


class Ground:
    """A run's terrain for the page, built on first use and kept (thread-safe).

    Args:
        header: the run's header map.
    """

    def __init__(self, header: Mapping[str, Any]) -> None:
        self._header = header
        self._lock = threading.Lock()
        self._json: str | None = None
        self._error: GroundError | None = None

    @property
    def present(self) -> bool:
        """Whether the header names a terrain (a bad one too)."""
        try:
            return terrain_spec(self._header) is not None
        except GroundError:
            return True

    def patch_json(self) -> str | None:
        """The patch around the robots' start as JSON, or None when the run has no terrain.

        The JSON is :func:`patch`'s map with ``kind`` and the header's ``spec``.

        Raises:
            GroundError: when the header's terrain cannot be rebuilt (every call).
        """
        with self._lock:
            if self._error is not None:
                raise self._error
            if self._json is None:
                try:
                    spec = terrain_spec(self._header)
                    if spec is None:
                        return None
                    terrain = build_terrain(spec)
                except GroundError as exc:
                    self._error = exc
                    raise
                out = {
                    "kind": str(spec.get("kind", "fractal")),
                    **patch(terrain, start_of(self._header)),
                    "spec": dict(spec),
                }
                self._json = json.dumps(out, separators=(",", ":"), allow_nan=False)
            return self._json


__all__ = [
    "HEIGHT_DECIMALS",
    "PATCH_CELL_M",
    "PATCH_SIDE_M",
    "TERRAIN_KEYS",
    "Ground",
    "GroundError",
    "build_terrain",
    "patch",
    "patch_stride",
    "start_of",
    "terrain_spec",
]
