"""Seed 004's terrain in the web debugger: the record's header names it, the server rebuilds it.

The header's ``world.terrain`` (``docs/record.md``) comes from the mission through the
runner; the server rebuilds the heights with :func:`limbtree.robots.terrain.fractal_terrain`
and serves a patch of them around the robots' start (``GET /api/terrain``).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import msgpack
import py_trees
import pytest

from limbtree.robots.terrain import fractal_terrain
from limbtree.trees.clocks import TickClock
from limbtree.trees.context import MissionContext
from limbtree.trees.header import RunInfo, world_of
from limbtree.trees.recorder import header_map, read_header
from limbtree.trees.runner import Runner, RunOptions
from limbtree.trees.stream import RunHeader, TreeNode
from limbtree.trees.web.server import PageState, WebServer
from limbtree.trees.web.store import load_record
from limbtree.trees.web.terrain import (
    Ground,
    GroundError,
    build_terrain,
    patch,
    patch_stride,
    start_of,
)

ROOT = Path(__file__).resolve().parent.parent
#: A small terrain with a rock (1 m square, 10 mm cells: 101 x 101 nodes).
SPEC = {
    "kind": "fractal",
    "size_m": 1.0,
    "cell_m": 0.01,
    "sigma_m": 0.03,
    "hurst": 0.8,
    "seed": 4,
    "rocks": [{"at_m": [0.1, 0.0], "height_m": 0.05, "radius_m": 0.04}],
}


def terrain_of(spec):
    return fractal_terrain(
        spec["size_m"], spec["cell_m"], spec["sigma_m"], spec["hurst"], spec["seed"],
        rocks=spec["rocks"],
    )  # fmt: skip


def at(out, i, j):
    """Patch node (row i, column j): its (x, y) [m] and its height [m]."""
    x0, y0 = out["origin_m"]
    return x0 + j * out["cell_m"], y0 + i * out["cell_m"], out["heights_m"][i * out["nx"] + j]


# -- the header -----------------------------------------------------------------------------


def test_the_header_names_the_missions_terrain_in_si_and_the_runner_records_it(tmp_path):
    from limbtree.trees.app import _info, _offline_handles, load

    mission = load(
        ROOT / "missions" / "asteroid_climb.yaml", {"terrain_seed": "3", "rock_mm": "50"}
    )
    info = _info(mission, _offline_handles(mission))
    assert info.world == {
        "terrain": {
            "kind": "fractal", "size_m": 3.0, "cell_m": 0.01, "sigma_m": 0.03, "hurst": 0.8,
            "seed": 3, "rocks": [{"at_m": [0.1, 0.0], "height_m": 0.05, "radius_m": 0.08}],
        }
    }  # fmt: skip
    clock = TickClock()
    runner = Runner(
        "climb", clock, py_trees.behaviours.Success("done"), MissionContext({}, clock.now),
        [], [], RunOptions(record_dir=tmp_path / "rec"), info=RunInfo(world=info.world),
    )  # fmt: skip
    assert runner.run().value == "SUCCESS"
    header = read_header(tmp_path / "rec" / "log.msgpack")
    assert header is not None and header["v"] == 2
    assert header["world"] == info.world


def test_a_mission_without_terrain_has_no_world_in_its_header():
    from limbtree.trees.app import load

    mission = load(ROOT / "missions" / "robustness.yaml")
    assert mission.terrain is None and world_of(mission.terrain) == {}
    tree = TreeNode("0", "root", "wait", {}, ())
    plain = header_map(RunHeader("m", "", {}, 0, "sim", 10.0, tree, {}))
    assert "world" not in plain
    with_world = header_map(RunHeader("m", "", {}, 0, "sim", 10.0, tree, {}, world_of(SPEC)))
    assert with_world["world"]["terrain"] == SPEC


# -- the heights ----------------------------------------------------------------------------


def test_the_patch_is_every_other_node_of_the_terrain_around_the_start():
    terrain = terrain_of(SPEC)
    assert patch_stride(0.01) == 2 and patch_stride(0.02) == 1 and patch_stride(0.005) == 3
    out = patch(terrain, (0.0, 0.0))
    assert out["cell_m"] == pytest.approx(0.02)
    assert (out["nx"], out["ny"]) == (51, 51)  # the 1 m terrain, clipped (the patch is 1.2 m)
    assert out["origin_m"] == pytest.approx([-0.5, -0.5])
    for i, j in ((0, 0), (25, 25), (25, 30), (50, 50), (7, 43)):
        x, y, h = at(out, i, j)
        assert h == pytest.approx(terrain.height(x, y), abs=1e-5)
    rock_x, rock_y, rock_h = at(out, 25, 30)  # (0.1, 0): the rock's top
    assert (rock_x, rock_y) == pytest.approx((0.1, 0.0))
    assert rock_h == pytest.approx(terrain.height(0.1, 0.0), abs=1e-5)
    assert out["max_m"] >= rock_h - 1e-5


def test_the_patch_is_centred_on_the_start_and_clipped_to_the_terrain():
    terrain = terrain_of({**SPEC, "size_m": 3.0})
    out = patch(terrain, (0.3, -0.2))
    assert (out["nx"], out["ny"]) == (61, 61)
    x0, y0 = out["origin_m"]
    assert (x0 + 30 * out["cell_m"], y0 + 30 * out["cell_m"]) == pytest.approx((0.3, -0.2))
    edge = patch(terrain, (1.4, 9.0))  # beyond the terrain in y: its edge
    x_last, y_last, _ = at(edge, edge["ny"] - 1, edge["nx"] - 1)
    assert (x_last, y_last) == pytest.approx((1.5, 1.5))
    assert edge["ny"] == 31 and edge["nx"] == 36


def test_the_start_is_the_mean_of_the_robots_bases():
    robots = {"a": {"base": [0.2, 0.4, 0.1, 0, 0, 0, 1]}, "b": {"base": [0.4, 0.0, 0, 0, 0, 0, 1]}}
    assert start_of({"robots": robots}) == pytest.approx((0.3, 0.2))
    assert start_of({"robots": {"a": {"robot": "x"}}}) == (0.0, 0.0)
    assert start_of({}) == (0.0, 0.0)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({k: v for k, v in SPEC.items() if k != "sigma_m"}, r"no sigma_m.*its keys are kind"),
        ({**SPEC, "kind": "perlin"}, r"kind 'perlin'.*'fractal'"),
        ({**SPEC, "hurst": 2.0}, r"world.terrain: hurst must be in \(0, 1\]"),
        ({**SPEC, "roughness": 1}, r"unknown keys roughness"),
        ({**SPEC, "rocks": [{"at_m": [0, 0]}]}, r"world.terrain: rock .*missing height_m"),
    ],
)
def test_a_bad_terrain_in_a_header_is_named(spec, message):
    with pytest.raises(GroundError, match=message):
        build_terrain(spec)


def test_the_ground_is_built_once_and_says_when_there_is_none():
    ground = Ground({"world": {"terrain": SPEC}, "robots": {}})
    first = ground.patch_json()
    assert first is not None and ground.patch_json() is first
    out = json.loads(first)
    assert out["kind"] == "fractal" and out["spec"] == SPEC
    assert Ground({"robots": {}}).patch_json() is None
    assert not Ground({"world": {}}).present and ground.present
    with pytest.raises(GroundError, match=r"world\.terrain must be a map of kind, size_m"):
        Ground({"world": {"terrain": 3}}).patch_json()


# -- the server -----------------------------------------------------------------------------


def write_record(directory: Path, world: object | None) -> Path:
    """A two-tick record without limbs; its header has ``world`` when one is given."""
    header = {"kind": "header", "v": 2, "mission": "ground", "mission_file": "", "parameters": {},
              "seed": 0, "clock": "sim", "rate_hz": 10.0,
              "tree": {"id": "0", "name": "w", "type": "wait", "params": {}, "children": []},
              "robots": {"hub": {"robot": "none", "plant": "mujoco", "agent": "sim", "limbs": {},
                                 "base": [0.1, 0.0, 0.15, 0, 0, 0, 1]}}}  # fmt: skip
    if world is not None:
        header["world"] = world
    directory.mkdir(parents=True)
    with open(directory / "log.msgpack", "wb") as log:
        log.write(msgpack.packb(header))
        for t in range(2):
            log.write(msgpack.packb({"kind": "tick", "t": t / 10, "tick": t, "limbs": {},
                                     "bases": {}, "nodes": {"0": "RUNNING"}, "events": [],
                                     "skills": {}}))  # fmt: skip
    return directory


@pytest.fixture
def serve():
    servers: list[WebServer] = []

    def start(directory: Path) -> str:
        server = WebServer(PageState(store=load_record(directory)), port=0)
        server.start()
        servers.append(server)
        return f"http://127.0.0.1:{server.port}"

    yield start
    for server in servers:
        server.stop()


def test_the_server_serves_the_heights_of_the_records_terrain(tmp_path, serve):
    url = serve(write_record(tmp_path / "climb", {"terrain": SPEC}))
    run = httpx.get(url + "/api/run", timeout=10).json()
    assert run["header"]["world"]["terrain"] == SPEC
    reply = httpx.get(url + "/api/terrain", timeout=30)
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    out = reply.json()
    terrain = terrain_of(SPEC)
    assert out["kind"] == "fractal" and out["cell_m"] == pytest.approx(0.02)
    x0, _ = out["origin_m"]
    assert x0 + 30 * out["cell_m"] == pytest.approx(0.1)  # centred on the robot's base
    for i, j in ((0, 0), (10, 40), (25, 30), (out["ny"] - 1, out["nx"] - 1)):
        x, y, h = at(out, i, j)
        assert h == pytest.approx(terrain.height(x, y), abs=1e-5)
    assert httpx.get(url + "/api/terrain", timeout=10).json() == out


def test_a_record_without_terrain_opens_and_has_none_and_a_bad_one_is_named(tmp_path, serve):
    old = serve(write_record(tmp_path / "old", None))
    assert httpx.get(old + "/api/run", timeout=10).status_code == 200
    assert httpx.get(old + "/api/frame/1", timeout=10).status_code == 200
    none = httpx.get(old + "/api/terrain", timeout=10)
    assert none.status_code == 404 and "no terrain" in none.json()["error"]
    bad = serve(write_record(tmp_path / "bad", {"terrain": {**SPEC, "cell_m": -1}}))
    reply = httpx.get(bad + "/api/terrain", timeout=10)
    assert reply.status_code == 422 and "world.terrain" in reply.json()["error"]
    assert "cell_m" in reply.json()["error"]
