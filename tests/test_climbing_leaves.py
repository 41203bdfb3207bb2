"""Seed 004's leaves ``climb_step`` and ``base_adjust`` over a MuJoCo plant, in process.

HubRobo stands gripping a fractal terrain at 1e-6 g (servo kp 3, kd 0.02); the leaves drive
its four legs through :class:`LimbHandle` over a link to the plant (no agent process). The
oracles are the plant's own physics and the terrain's heights, not the leaves' figures: the
palm's position in MuJoCo after the swing against the stride and ``Terrain.height_at``, the
gripper's state as the plant reports it, a detachment forced by an external pull.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import py_trees
import pytest

mujoco = pytest.importorskip("mujoco")

from limbtree.robots.mujoco_plant import (  # noqa: E402
    MujocoConfig,
    MujocoPlant,
    ServoGains,
    TerrainSpec,
)
from limbtree.transport.driver import CommandMode  # noqa: E402
from limbtree.trees.app import load  # noqa: E402
from limbtree.trees.behaviours.climbing import (  # noqa: E402
    BaseAdjustBehaviour,
    ClimbStepBehaviour,
)
from limbtree.trees.context import MissionContext  # noqa: E402
from limbtree.trees.limbs import LimbHandle  # noqa: E402
from limbtree.trees.mission.errors import MissionError  # noqa: E402

ROBOT_LEGS = tuple(f"leg_{i}" for i in range(4))
LEGS = [f"hub.{leg}" for leg in ROBOT_LEGS]
G_MICRO = (0.0, 0.0, -9.81e-6)
TERRAIN = TerrainSpec(size_m=1.0, cell_m=0.01, sigma_m=0.03, hurst=0.8, seed=0)
RATE_HZ = 100.0
MISSION = Path(__file__).parents[1] / "missions" / "asteroid_climb.yaml"
Status = py_trees.common.Status


class PlantLink:
    """What a LimbHandle needs of a limb client, straight over a plant."""

    def __init__(self, plant: MujocoPlant, limb: str) -> None:
        self.plant, self.limb = plant, limb

    @property
    def state(self):
        return self.plant.limb_state(self.limb)

    @property
    def is_stale(self) -> bool:
        return False

    @property
    def disassembled(self) -> bool:
        return False

    def send_command(self, mode, **fields) -> bool:
        self.plant.command(self.limb, mode, fields)
        return True

    def send_gripper(self, action) -> bool:
        self.plant.gripper(self.limb, action)
        return True


def hubrobo() -> tuple[MujocoPlant, MissionContext]:
    config = MujocoConfig(
        gravity=G_MICRO,
        terrain=TERRAIN,
        latched={f"{leg}.palm": "terrain" for leg in ROBOT_LEGS},
        servo=ServoGains(3.0, 0.02),
    )
    plant = MujocoPlant("hubrobo", config=config)
    for leg in ROBOT_LEGS:
        plant.command(leg, CommandMode.JOINT_POSITION, {"q": list(plant.limb_state(leg).q)})
    described = plant.describe()
    handles = {
        f"hub.{leg}": LimbHandle(
            f"hub.{leg}",
            described.limb(leg).description,
            PlantLink(plant, leg),
            live_base=plant.base_state,
        )
        for leg in ROBOT_LEGS
    }
    physics = {"gravity": list(G_MICRO), "contact": {"grip_force_n": 0.9}}
    context = MissionContext(handles, lambda: plant.time, terrain=TERRAIN.terrain, physics=physics)
    return plant, context


def tick_until_done(plant, node, limit_s=5.0, each=None):
    """Tick ``node`` at RATE_HZ, the plant advanced between ticks; its final status."""
    start = plant.time
    while True:
        node.tick_once()
        if node.status is not Status.RUNNING:
            return node.status
        if each is not None:
            each(plant)
        plant.advance(plant.time + 1.0 / RATE_HZ)
        assert plant.time - start < limit_s, "the node did not end"


def palm(plant: MujocoPlant, leg: str) -> np.ndarray:
    return np.array(plant.data.site_xpos[plant.model.frame_site[f"{leg}.palm"]])


@pytest.fixture(scope="module", params=["baseline", "ramp"])
def swung(request):
    plant, context = hubrobo()
    before = {leg: palm(plant, leg) for leg in ROBOT_LEGS}
    node = ClimbStepBehaviour(
        "swing", context, {"legs": LEGS, "swing": "hub.leg_1", "planner": request.param}
    )
    reports = []
    targets = []
    status = None
    start = plant.time
    while True:
        context.telemetry.new_tick()
        node.tick_once()
        reports.append(context.telemetry.tick["swing"].as_map())
        targets.append(context.telemetry.targets.get("hub.leg_1"))
        status = node.status
        if status is not Status.RUNNING:
            break
        plant.advance(plant.time + 1.0 / RATE_HZ)
        assert plant.time - start < 5.0
    # let the closed gripper settle onto the terrain, every leg servoed where it was sent
    for _ in range(50):
        plant.advance(plant.time + 1.0 / RATE_HZ)
    return request.param, plant, context, before, reports, status, node, targets


@pytest.mark.slow  # a swing and a support phase of 1.75 s each: ~10 s
def test_a_swing_moves_its_palm_one_stride_onto_the_terrain_and_grips_again(swung):
    _, plant, _, before, _, status, node, targets = swung
    assert status is Status.SUCCESS, node.feedback_message
    after = palm(plant, "leg_1")
    step = after - before["leg_1"]
    assert step[0] == pytest.approx(0.08, abs=0.01)  # the stride along world x
    assert abs(step[1]) < 0.01
    ground = TERRAIN.terrain.height_at(float(after[0]), float(after[1]))
    assert after[2] == pytest.approx(ground, abs=0.005)  # on the terrain, not above it
    grip = plant.limb_state("leg_1").detail["grip"]
    assert grip["closed"] and grip["state"] == "anchored"
    for leg in ("leg_0", "leg_2", "leg_3"):  # the supporting palms stayed put
        assert np.linalg.norm(palm(plant, leg) - before[leg]) < 0.005
        assert plant.limb_state(leg).detail["grip"]["supporting"]
    assert plant.limb_state("leg_0").detail["detachments"] == []
    # Every tick of the swing carries its foothold as leg_1's target frame: the palm there,
    # z into the ground as the palm lands.
    assert all(t is not None for t in targets)
    assert all(t.isclose(targets[-1]) for t in targets)
    assert np.linalg.norm(targets[-1].position - after) < 0.01
    assert targets[-1].rotation[:, 2] @ np.array([0.0, 0.0, 1.0]) < -0.9
    # (the legs place the palm, not its turn about that axis: only z is compared)
    landed = node.handles["hub.leg_1"].pose()
    assert landed is not None
    tilt = math.acos(min(1.0, targets[-1].rotation[:, 2] @ landed.rotation[:, 2]))
    assert math.degrees(tilt) < 20.0


@pytest.mark.slow  # a swing and a support phase of 1.75 s each: ~10 s
def test_the_swing_reports_the_plants_grip_forces_and_gia_margin_every_tick(swung):
    planner, _, context, _, reports, _, _, _ = swung
    assert all(r["skill"] == "climb_step" and r["planner"] == planner for r in reports)
    assert all(len(r["grip_force_n"]) == 4 for r in reports)
    middle = reports[len(reports) // 2]
    assert middle["supporting"] == [True, False, True, True]  # leg_1's gripper is open
    assert middle["grip_force_n"][1] == 0.0
    assert max(r["max_grip_force_n"] for r in reports) > 0.0
    # three grasps at 1e-6 g: the margin is set by F_hold (docs/climbing.md: ~0.45 m/s^2)
    assert 0.1 < middle["gia_margin_m_s2"] < 1.0
    metrics = context.telemetry.metrics["climb"]
    assert metrics["max_grip_force_n"] == pytest.approx(max(r["max_grip_force_n"] for r in reports))
    assert metrics["detachments"] == 0 and metrics["steps"][-1]["leg"] == "hub.leg_1"


@pytest.mark.slow  # a swing and a support phase of 1.75 s each: ~10 s
def test_a_base_adjustment_after_the_swing_keeps_every_gripper(swung):
    planner, plant, context, *_ = swung
    node = BaseAdjustBehaviour("support", context, {"legs": LEGS, "planner": planner})
    start = plant.base_state().pose[:3]
    assert tick_until_done(plant, node) is Status.SUCCESS, node.feedback_message
    moved = np.array(plant.base_state().pose[:3]) - np.array(start)
    assert 0.005 < moved[0] < 0.04  # the base follows the feet's centroid (+20 mm of x)
    assert all(plant.limb_state(leg).detail["grip"]["supporting"] for leg in ROBOT_LEGS)


def test_a_supporting_gripper_pulled_off_fails_the_swing_naming_the_leg_and_force():
    plant, context = hubrobo()
    node = ClimbStepBehaviour(
        "swing", context, {"legs": LEGS, "swing": "hub.leg_1", "planner": "baseline"}
    )
    body = int(plant.model.model.site_bodyid[plant.model.frame_site["leg_3.palm"]])

    def pull(plant: MujocoPlant) -> None:
        if plant.time > 0.3:  # 3 N up on leg_3's palm: past the 0.9 N hold
            plant.data.xfrc_applied[body, :3] = (0.0, 0.0, 3.0)

    assert tick_until_done(plant, node, each=pull) is Status.FAILURE
    message = node.feedback_message
    assert "gripper of hub.leg_3 detached" in message, message
    detached = context.telemetry.metrics["climb"]["detached"]
    assert detached[0]["leg"] == "hub.leg_3" and detached[0]["force_n"] > 0.9
    assert f"{detached[0]['force_n']:.3f} N" in message


def test_the_mission_loads_with_its_parameters_and_names_a_bad_planner():
    mission = load(
        MISSION,
        {"planner": "baseline", "rock_mm": "0", "terrain_seed": "2"},
    )
    assert mission.name == "asteroid_climb"
    with pytest.raises(MissionError) as caught:
        load(
            MISSION,
            {"planner": "fast"},
        )
    assert "planner" in str(caught.value) and "baseline, ramp" in str(caught.value)


@pytest.mark.parametrize(("value", "expected"), [(None, 0.0), ("5", 0.005)])
def test_settle_mm_s_reaches_every_swing(value, expected):
    overrides = {} if value is None else {"settle_mm_s": value}
    swings = [n for n in load(MISSION, overrides).root.walk() if n.type == "climb_step"]
    assert len(swings) == 4
    assert [n.params["settle_speed"] for n in swings] == pytest.approx([expected] * 4)
