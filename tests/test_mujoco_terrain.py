"""The terrain as a MuJoCo height field (limbtree.robots.mujoco_model.build_model(terrain=...)).

The oracle is MuJoCo itself: rays cast down onto the compiled height field (``mj_ray``) and
its collision detection, compared with :class:`~limbtree.robots.terrain.Terrain`.
"""

from __future__ import annotations

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from limbtree.kinematics.pose import Pose  # noqa: E402
from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.mujoco_model import (  # noqa: E402
    TERRAIN_NAME,
    MujocoModelError,
    build_model,
)
from limbtree.robots.terrain import Terrain, fractal_terrain  # noqa: E402

HUBROBO = load_robot("hubrobo")
RAY_FROM_M = 1.0  # rays start this high, far above any terrain here


def rough_terrain() -> Terrain:
    """Off-centre, not square, with a rock: a transposed or shifted field cannot pass."""
    base = fractal_terrain(
        (0.8, 0.5),
        0.01,
        0.03,
        0.8,
        seed=11,
        rocks=[{"at_m": [0.1, 0.05], "height_m": 0.1, "radius_m": 0.03}],
    )
    return Terrain(base.heights, base.cell_m, origin_m=(0.3, -0.2))


def mission_terrain() -> Terrain:
    """Seed 004's ground (sigma 30 mm, Hurst 0.8, 10 mm cells) on 3 m x 2 m."""
    return fractal_terrain((3.0, 2.0), 0.01, 0.03, 0.8, seed=12)


def compile_with(terrain: Terrain, base_z: float = 0.5, spec=HUBROBO):
    m = build_model(spec, base_pose_world=Pose((0.0, 0.0, base_z)), floating=True, terrain=terrain)
    data = mujoco.MjData(m.model)
    mujoco.mj_forward(m.model, data)
    return m, data


def ray_heights(m, data, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The height of the first surface a vertical ray meets at each (x, y) [m]."""
    z = np.empty(len(x))
    geom = np.zeros(1, dtype=np.int32)
    for k, (px, py) in enumerate(zip(x, y, strict=True)):
        distance = mujoco.mj_ray(
            m.model,
            data,
            np.array([px, py, RAY_FROM_M]),
            np.array([0.0, 0.0, -1.0]),
            None,
            1,
            m.base_body,
            geom,
        )
        assert geom[0] == m.terrain_geom
        z[k] = RAY_FROM_M - distance
    return z


def far_from_robot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.hypot(x, y) > 0.35


def test_the_terrain_is_one_static_height_field_geom():
    terrain = rough_terrain()
    m, _ = compile_with(terrain)
    model = m.model
    assert m.terrain is terrain
    assert model.geom(m.terrain_geom).name == TERRAIN_NAME
    assert model.geom_type[m.terrain_geom] == mujoco.mjtGeom.mjGEOM_HFIELD
    assert model.geom_bodyid[m.terrain_geom] == 0  # the world
    assert (model.hfield_nrow[0], model.hfield_ncol[0]) == terrain.shape  # rows along y


def test_without_a_terrain_nothing_collides_as_before():
    m = build_model(HUBROBO, base_pose_world=Pose((0.0, 0.0, 0.5)), floating=True)
    assert m.terrain is None and m.terrain_geom == -1 and m.body_geoms == ()
    assert m.model.ngeom == 0  # geoms that collide with nothing are dropped


def test_mujoco_heights_at_the_nodes_and_on_cell_edges_are_the_terrain_heights():
    terrain = rough_terrain()
    m, data = compile_with(terrain)
    # every node but the outermost (a ray on the field's very edge may miss it), and the
    # middles of the cell edges next to them (both surfaces are linear along cell edges)
    xx, yy = np.meshgrid(terrain.x_m[1:-1], terrain.y_m[1:-1])
    nodes = far_from_robot(xx, yy)
    x, y = xx[nodes], yy[nodes]
    for dx, dy in [(0.0, 0.0), (0.005, 0.0), (0.0, 0.005)]:
        got = ray_heights(m, data, x + dx, y + dy)
        np.testing.assert_allclose(got, terrain.height(x + dx, y + dy), atol=1e-6)  # float32


def test_mujoco_heights_inside_cells_are_within_1_mm_of_the_bilinear_terrain():
    # Inside a cell MuJoCo's surface is two triangles, the terrain's bilinear: they differ by
    # at most a quarter of the cell's twist |h00 + h11 - h01 - h10|.
    terrain = mission_terrain()
    m, data = compile_with(terrain)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1.49, 1.49, 5000), rng.uniform(-0.99, 0.99, 5000)
    keep = far_from_robot(x, y)
    x, y = x[keep], y[keep]
    got = ray_heights(m, data, x, y)
    want = terrain.height(x, y)
    h = terrain.heights
    j = np.minimum(((x - terrain.origin_m[0]) / 0.01).astype(int), terrain.shape[1] - 2)
    i = np.minimum(((y - terrain.origin_m[1]) / 0.01).astype(int), terrain.shape[0] - 2)
    twist = np.abs(h[i, j] + h[i + 1, j + 1] - h[i, j + 1] - h[i + 1, j])
    error = np.abs(got - want)
    assert np.all(error <= twist / 4 + 1e-6)
    assert np.percentile(error, 99) < 1e-3
    assert error.max() < 2e-3


def test_a_flat_terrain_is_flat_in_mujoco():
    m, data = compile_with(Terrain.flat(1.0, 0.02, height_m=-0.03))
    x, y = np.array([0.4, -0.45, 0.37]), np.array([0.4, 0.1, -0.42])
    np.testing.assert_allclose(ray_heights(m, data, x, y), -0.03, atol=1e-9)


def contacts(m, data) -> set[tuple[int, int]]:
    return {tuple(sorted((int(c.geom1), int(c.geom2)))) for c in data.contact[: data.ncon]}


def test_the_robots_body_collides_with_the_terrain_and_is_pushed_straight_up():
    # hubrobo's base (its lower face 30 mm below the base frame) 5 mm into flat ground.
    m, data = compile_with(Terrain.flat(1.0, 0.01), base_z=0.025)
    assert len(m.body_geoms) == 9  # the lower face as 3 x 3 spheres
    assert data.ncon > 0
    pairs = {tuple(sorted((g, m.terrain_geom))) for g in m.body_geoms}
    assert contacts(m, data) <= pairs
    push = np.zeros(3)
    for k in range(data.ncon):
        force = np.zeros(6)
        mujoco.mj_contactForce(m.model, data, k, force)
        world = data.contact.frame[k].reshape(3, 3).T @ force[:3]  # on geom2, from geom1
        push += world if data.contact.geom1[k] == m.terrain_geom else -world
    assert push[2] > 1.0
    assert np.linalg.norm(push[:2]) < 1e-6 * push[2]


def test_the_legs_and_palms_do_not_collide_with_the_terrain():
    # Base well clear of the ground, legs reaching 90 mm down into it.
    m, data = compile_with(Terrain.flat(1.0, 0.01), base_z=0.08)
    for leg in HUBROBO.limbs:
        data.qpos[m.limb_qpos[leg.name]] = [0.0, -0.9, -0.3]
    mujoco.mj_forward(m.model, data)
    palms = np.array([data.site_xpos[m.frame_site[f"{leg}.palm"]] for leg in HUBROBO.limb_names])
    assert np.all(palms[:, 2] < -0.05)
    assert data.ncon == 0


def test_the_body_of_a_robot_includes_links_fixed_to_its_base():
    # mirror_mar: the arms' E1 ends are fixed on the torso's ports; the arms move.
    spec = load_robot("mirror_mar")
    m, _ = compile_with(Terrain.flat(4.0, 0.05), base_z=2.0, spec=spec)
    bodies = {m.model.body(int(m.model.geom_bodyid[g])).name for g in m.body_geoms}
    assert bodies == {"body", "arm_1_e1", "arm_2_e1"}


def test_a_terrain_that_is_not_a_terrain_is_refused():
    with pytest.raises(MujocoModelError, match="terrain must be"):
        build_model(
            HUBROBO, base_pose_world=Pose((0.0, 0.0, 0.5)), floating=True, terrain=np.zeros((3, 3))
        )
