"""Tests of limbtree.robots.terrain: fractal ground, rocks, heights and normals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from limbtree.errors import LimbtreeError
from limbtree.robots.terrain import Rock, Terrain, TerrainError, fractal_terrain

SIZE_M, CELL_M, SIGMA_M, HURST = 1.0, 0.01, 0.03, 0.8


def ground(seed: int = 0, **kwargs) -> Terrain:
    return fractal_terrain(SIZE_M, CELL_M, SIGMA_M, HURST, seed, **kwargs)


# ---------------------------------------------------------------------- fractal


def test_the_heights_have_exactly_the_standard_deviation_asked_for():
    for sigma, hurst in [(0.03, 0.8), (0.01, 0.4), (0.05, 1.0)]:
        heights = fractal_terrain(SIZE_M, CELL_M, sigma, hurst, 3).heights
        assert float(heights.std()) == pytest.approx(sigma, rel=1e-12)
        assert abs(float(heights.mean())) < 1e-15


def test_the_grid_has_size_over_cell_plus_one_nodes_centred_on_the_origin():
    terrain = fractal_terrain((3.0, 2.0), CELL_M, SIGMA_M, HURST, 0)
    assert terrain.shape == (201, 301)  # rows along y, columns along x
    assert terrain.size_m == pytest.approx((3.0, 2.0))
    assert terrain.origin_m == pytest.approx((-1.5, -1.0))
    assert terrain.center_m == pytest.approx((0.0, 0.0))
    assert terrain.x_m[-1] == pytest.approx(1.5) and terrain.y_m[-1] == pytest.approx(1.0)


def test_the_same_seed_gives_the_same_ground():
    assert np.array_equal(ground(7).heights, ground(7).heights)


def test_different_seeds_give_different_ground():
    a, b = ground(0).heights, ground(1).heights
    assert float(np.abs(a - b).max()) > SIGMA_M
    assert abs(float(np.corrcoef(a.ravel(), b.ravel())[0, 1])) < 0.5


def test_a_smaller_hurst_exponent_gives_rougher_ground():
    def slope_rms(hurst: float) -> float:
        heights = fractal_terrain(SIZE_M, CELL_M, SIGMA_M, hurst, 2).heights
        return float(np.sqrt(np.mean(np.diff(heights, axis=1) ** 2)))

    assert slope_rms(0.4) > 2 * slope_rms(0.8)


def test_increments_scale_with_the_hurst_exponent():
    # fBm: the standard deviation of h(x + l) - h(x) grows as l^H at small lags.
    heights = fractal_terrain(3.0, CELL_M, SIGMA_M, 0.8, 5).heights
    spread = [float(np.std(heights[:, lag:] - heights[:, :-lag])) for lag in (1, 4)]
    assert math.log(spread[1] / spread[0], 4) == pytest.approx(0.8, abs=0.1)


def test_sigma_zero_is_flat_ground():
    assert not fractal_terrain(SIZE_M, CELL_M, 0.0, HURST, 0).heights.any()


def test_heights_are_read_only():
    with pytest.raises(ValueError):
        ground().heights[0, 0] = 1.0


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"size_m": 1.005}, "whole number of 0.01 m cells"),
        ({"size_m": -1.0}, "size_m"),
        ({"cell_m": 0.0}, "cell_m"),
        ({"sigma_m": -0.01}, "sigma_m"),
        ({"hurst": 0.0}, "hurst must be in (0, 1]"),
        ({"hurst": 1.5}, "hurst must be in (0, 1]"),
        ({"seed": -1}, "seed must be an int >= 0"),
        ({"seed": 1.5}, "seed must be an int >= 0"),
    ],
)
def test_bad_arguments_say_what_is_wrong(kwargs, words):
    args = {"size_m": SIZE_M, "cell_m": CELL_M, "sigma_m": SIGMA_M, "hurst": HURST, "seed": 0}
    args.update(kwargs)
    with pytest.raises(TerrainError, match=None) as info:
        fractal_terrain(**args)
    assert words in str(info.value)
    assert isinstance(info.value, LimbtreeError)


# ---------------------------------------------------------------------- rocks


def test_a_rock_adds_its_height_at_its_centre_and_nothing_beyond_its_radius():
    rock = {"at_m": [0.2, -0.1], "height_m": 0.1, "radius_m": 0.03}  # centre on a node
    bare, rocky = ground(4), ground(4, rocks=[rock])
    assert rocky.height(0.2, -0.1) - bare.height(0.2, -0.1) == pytest.approx(0.1, abs=1e-12)
    added = rocky.heights - bare.heights
    xx, yy = np.meshgrid(bare.x_m, bare.y_m)
    far = np.hypot(xx - 0.2, yy + 0.1) >= 0.03
    assert not added[far].any()
    assert added.max() == pytest.approx(0.1, abs=1e-12)


def test_a_rock_is_a_raised_cosine():
    rock = Rock(at_m=(0.0, 0.0), height_m=0.1, radius_m=0.03)
    d = np.array([0.0, 0.0075, 0.015, 0.0225, 0.03, 0.05])
    expected = [
        0.1,
        0.1 * (1 + math.cos(math.pi / 4)) / 2,
        0.05,
        0.1 * (1 - math.cos(math.pi / 4)) / 2,
        0,
        0,
    ]
    np.testing.assert_allclose(rock.bump(d, 0.0), expected, atol=1e-15)


def test_rocks_given_as_objects_or_mappings_are_the_same():
    rock = Rock(at_m=(0.1, 0.1), height_m=0.05, radius_m=0.04)
    mapping = {"at_m": [0.1, 0.1], "height_m": 0.05, "radius_m": 0.04}
    assert np.array_equal(ground(rocks=[rock]).heights, ground(rocks=[mapping]).heights)


@pytest.mark.parametrize(
    ("rock", "words"),
    [
        ({"at_m": [0, 0], "height_m": 0.1}, "missing radius_m"),
        ({"at_m": [0, 0], "height_m": 0.1, "radius_m": 0.03, "size": 1}, "unknown size"),
        ({"at_m": [0, 0, 0], "height_m": 0.1, "radius_m": 0.03}, "at_m must be [x, y]"),
        ({"at_m": [0, 0], "height_m": -0.1, "radius_m": 0.03}, "height_m must be"),
        ({"at_m": [0, 0], "height_m": 0.1, "radius_m": 0}, "radius_m must be"),
        ("rock", "a rock is a mapping"),
    ],
)
def test_a_badly_written_rock_says_what_is_wrong(rock, words):
    with pytest.raises(TerrainError) as info:
        ground(rocks=[rock])
    assert words in str(info.value)


# ---------------------------------------------------------------------- height and normal


def test_height_is_exact_at_the_nodes():
    terrain = ground(1)
    xx, yy = np.meshgrid(terrain.x_m, terrain.y_m)
    np.testing.assert_allclose(terrain.height(xx, yy), terrain.heights, atol=1e-15)
    assert terrain.height(terrain.x_m[37], terrain.y_m[12]) == terrain.heights[12, 37]


@given(
    st.floats(-0.5, 0.5),
    st.floats(-0.5, 0.5),
)
def test_height_is_the_bilinear_interpolation_of_the_cell_corners(x, y):
    terrain = ground(2)
    fx, fy = (x - terrain.origin_m[0]) / CELL_M, (y - terrain.origin_m[1]) / CELL_M
    j, i = min(int(fx), terrain.shape[1] - 2), min(int(fy), terrain.shape[0] - 2)
    tx, ty = fx - j, fy - i
    h = terrain.heights
    corners = [h[i, j], h[i, j + 1], h[i + 1, j], h[i + 1, j + 1]]
    weights = [(1 - tx) * (1 - ty), tx * (1 - ty), (1 - tx) * ty, tx * ty]
    assert terrain.height(x, y) == pytest.approx(float(np.dot(weights, corners)), abs=1e-12)


def test_height_of_a_plane_is_the_plane():
    # A bilinear surface reproduces a plane exactly, between nodes too.
    x, y = np.meshgrid(np.linspace(-0.5, 0.5, 101), np.linspace(-0.5, 0.5, 101))
    terrain = Terrain(0.3 * x - 0.2 * y + 0.01, CELL_M)
    px, py = np.array([0.1234, -0.4321, 0.0]), np.array([0.3333, 0.0101, -0.25])
    np.testing.assert_allclose(terrain.height(px, py), 0.3 * px - 0.2 * py + 0.01, atol=1e-14)
    expected = np.array([-0.3, 0.2, 1.0]) / math.sqrt(0.09 + 0.04 + 1.0)
    np.testing.assert_allclose(terrain.normal(px, py), np.tile(expected, (3, 1)), atol=1e-12)


def test_heights_beyond_the_edges_are_the_edges():
    terrain = ground(3)
    assert terrain.height(5.0, 0.0) == pytest.approx(terrain.height(0.5, 0.0), abs=1e-15)
    assert terrain.height(-0.2, -9.0) == pytest.approx(terrain.height(-0.2, -0.5), abs=1e-15)
    np.testing.assert_allclose(terrain.normal(5.0, 9.0), [0.0, 0.0, 1.0])


@given(st.floats(-0.49, 0.49), st.floats(-0.49, 0.49))
def test_the_normal_is_the_unit_upward_normal_of_the_surface(x, y):
    terrain = ground(6)
    n = terrain.normal(x, y)
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12) and n[2] > 0
    # against central finite differences of height() inside the cell
    fx, fy = (x - terrain.origin_m[0]) / CELL_M, (y - terrain.origin_m[1]) / CELL_M
    tx, ty = fx - math.floor(fx), fy - math.floor(fy)
    step = 1e-7
    if min(tx, 1 - tx, ty, 1 - ty) * CELL_M > 2 * step:
        dx = (terrain.height(x + step, y) - terrain.height(x - step, y)) / (2 * step)
        dy = (terrain.height(x, y + step) - terrain.height(x, y - step)) / (2 * step)
        expected = np.array([-dx, -dy, 1.0]) / math.sqrt(dx * dx + dy * dy + 1.0)
        np.testing.assert_allclose(n, expected, atol=1e-6)


def test_height_and_normal_broadcast_over_arrays():
    terrain = ground(0)
    x, y = np.linspace(-0.3, 0.3, 6).reshape(2, 3), 0.1
    assert terrain.height(x, y).shape == (2, 3)
    assert terrain.normal(x, y).shape == (2, 3, 3)
    assert isinstance(terrain.height(0.1, 0.2), float)


def test_flat_ground_has_one_height_and_straight_up_normals():
    terrain = Terrain.flat(2.0, 0.05, height_m=-0.02)
    assert terrain.shape == (41, 41)
    assert terrain.height(0.333, -0.777) == pytest.approx(-0.02)
    np.testing.assert_allclose(terrain.normal(0.1, 0.2), [0.0, 0.0, 1.0])


def test_a_bad_grid_says_what_is_wrong():
    with pytest.raises(TerrainError, match="ny, nx >= 2"):
        Terrain(np.zeros(5), 0.01)
    with pytest.raises(TerrainError, match="finite"):
        Terrain(np.full((3, 3), np.nan), 0.01)
    with pytest.raises(TerrainError, match="cell_m"):
        Terrain(np.zeros((3, 3)), -0.01)
    with pytest.raises(TerrainError, match="x and y must be finite"):
        Terrain(np.zeros((3, 3)), 0.01).height(math.nan, 0.0)


def test_one_point_and_array_calls_agree_inside_on_nodes_and_outside():
    terrain = ground(8)
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-0.7, 0.7, 300), terrain.x_m[::10], [0.5, -0.5, 2.0]])
    y = np.concatenate([rng.uniform(-0.7, 0.7, 300), terrain.y_m[::10], [0.5, -0.5, -3.0]])
    one_h = [terrain.height(float(a), float(b)) for a, b in zip(x, y, strict=True)]
    one_n = [terrain.normal(float(a), float(b)) for a, b in zip(x, y, strict=True)]
    np.testing.assert_array_equal(one_h, terrain.height(x, y))
    np.testing.assert_allclose(one_n, terrain.normal(x, y), atol=1e-15)
