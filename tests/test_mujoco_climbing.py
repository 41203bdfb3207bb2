"""Tests of seed 004's world in the ``mujoco`` plant: terrain, ClimbLab's grippers, telemetry.

HubRobo stands on a seeded fractal terrain with its grippers closed (``latched: {leg_K.palm:
terrain}``). The oracles are independent of the plant's code: the terrain's own heights
(:meth:`Terrain.height_at`), the contact law's threshold (0.9 N), Newton's law for a pushed
free robot (a = F / m), MuJoCo's own ``mj_step`` and ``subtree_linvel``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.mujoco_plant import (  # noqa: E402
    MujocoConfig,
    MujocoPlant,
    ServoGains,
    TerrainSpec,
)
from limbtree.robots.terrain import Rock  # noqa: E402
from limbtree.transport.driver import (  # noqa: E402
    CommandMode,
    DriverError,
    GripperAction,
    Health,
)

LEGS = tuple(f"leg_{i}" for i in range(4))
G_MICRO = (0.0, 0.0, -9.81e-6)  # seed 004: 1e-6 g [m/s^2]
GRIP_FORCE_N = 0.9
TERRAIN = TerrainSpec(size_m=1.0, cell_m=0.01, sigma_m=0.03, hurst=0.8, seed=4)


def hubrobo(
    terrain: TerrainSpec | None = TERRAIN, *, gripped: tuple[str, ...] = LEGS
) -> MujocoPlant:
    """HubRobo set down on the terrain, the given grippers closed, joints servoed at home."""
    config = MujocoConfig(
        gravity=G_MICRO,
        terrain=terrain,
        latched={f"{leg}.palm": "terrain" for leg in gripped},
        servo=ServoGains(3.0, 0.02),
    )
    plant = MujocoPlant("hubrobo", config=config)
    for leg in LEGS:
        plant.command(leg, CommandMode.JOINT_POSITION, {"q": list(plant.limb_state(leg).q)})
    return plant


def run(plant: MujocoPlant, until_s: float, step_s: float = 0.01) -> None:
    t = plant.time
    while t < until_s - 1e-9:
        t = min(until_s, t + step_s)
        plant.advance(t)


def ramp(plant: MujocoPlant, leg: str, start: np.ndarray, end: np.ndarray, span_s: float) -> None:
    """Servo ``leg`` from ``start`` to ``end`` [rad] in a smooth ramp over ``span_s`` [s]."""
    t0, steps = plant.time, round(span_s / 0.01)
    for k in range(1, steps + 1):
        s = 0.5 - 0.5 * np.cos(np.pi * k / steps)
        plant.command(leg, CommandMode.JOINT_POSITION, {"q": list(start + s * (end - start))})
        plant.advance(t0 + k * 0.01)


def palm(plant: MujocoPlant, leg: str) -> np.ndarray:
    return np.array(plant.data.site_xpos[plant.model.frame_site[f"{leg}.palm"]])


def test_the_robot_is_set_down_with_every_gripping_palm_on_the_terrain():
    # a closed gripper starts on the ground, none holding on to air: each leg reaches the
    # terrain under its palm (rough ground: the home posture's palms are 30-70 mm apart)
    plant = hubrobo()
    ground = TERRAIN.terrain
    clearance = [palm(plant, leg)[2] - ground.height_at(*palm(plant, leg)[:2]) for leg in LEGS]
    assert clearance == pytest.approx([0.0] * 4, abs=1e-9)
    home = np.array(load_robot("hubrobo").limb("leg_0").postures["home"])
    bent = [np.abs(np.array(plant.limb_state(leg).q) - home).max() for leg in LEGS]
    assert max(bent) > 0.01  # the legs did move off the home posture to get there
    for leg in LEGS:
        grip = plant.limb_state(leg).detail["grip"]
        assert grip["state"] == "anchored" and grip["supporting"]
        assert grip["anchor"] == pytest.approx(palm(plant, leg).tolist(), abs=1e-12)
    assert plant.describe().limb("leg_0").description.has_gripper


def test_standing_3_s_with_four_grippers_closed_holds_still_with_tiny_forces():
    plant = hubrobo()
    base0 = np.array(plant.base_state().pose)
    run(plant, 3.0)
    forces = [np.linalg.norm(plant.limb_state(leg).detail["grip"]["force_n"]) for leg in LEGS]
    assert max(forces) < 1e-3
    assert np.abs(np.array(plant.base_state().pose) - base0).max() < 1e-6  # [m], quaternion
    detail = plant.limb_state("leg_0").detail
    assert detail["detachments"] == []
    assert detail["contacts"]["count"] == 0


def test_a_robot_that_starts_gripping_stands_on_its_servo_before_any_command():
    # asteroid_stand's tree only waits: no leaf ever commands the joints. The servo must
    # hold the start posture, not leave the legs limp until the grippers are torn off.
    config = MujocoConfig(
        gravity=G_MICRO,
        terrain=TERRAIN,
        latched={f"{leg}.palm": "terrain" for leg in LEGS},
        servo=ServoGains(3.0, 0.02),
    )
    plant = MujocoPlant("hubrobo", config=config)
    q0 = {leg: np.array(plant.limb_state(leg).q) for leg in LEGS}
    run(plant, 1.0)
    for leg in LEGS:
        state = plant.limb_state(leg)
        assert state.detail["grip"]["state"] == "anchored"
        assert np.abs(np.array(state.q) - q0[leg]).max() < 1e-3  # [rad]
        assert state.detail["mode"] == "joint_position"
    assert plant.limb_state("leg_0").detail["detachments"] == []


def test_a_push_past_the_grip_force_detaches_that_leg_naming_it_and_the_force():
    plant = hubrobo()
    run(plant, 0.1)
    tibia = int(plant.model.model.site_bodyid[plant.model.frame_site["leg_0.palm"]])
    plant.data.xfrc_applied[tibia, :3] = (0.0, 0.0, 2.0)  # lifts leg 0's foot [N]
    t = plant.time
    while not plant.limb_state("leg_0").detail["detachments"] and t < 1.0:
        t += 0.001
        plant.advance(t)
    plant.data.xfrc_applied[tibia] = 0.0
    record = plant.limb_state("leg_0").detail["detachments"]
    assert [d["leg"] for d in record] == ["leg_0"]
    # past the limit by at most what the spring gains in one 1 ms step under the 2 N push
    assert GRIP_FORCE_N < record[0]["force_n"] < GRIP_FORCE_N * 1.15
    assert record[0]["force"][2] < 0.0  # the spring held the palm down: a pull
    assert 0.1 < record[0]["t_s"] <= plant.time
    assert plant.limb_state("leg_0").detail["grip"]["state"] == "detached"
    assert not plant.limb_state("leg_0").detail["grip"]["supporting"]
    # the torn gripper is in the leg's health, for every view of the limbs to show
    assert plant.limb_state("leg_0").health == Health.GRIP_LOST
    for leg in LEGS[1:]:
        assert plant.limb_state(leg).detail["grip"]["state"] == "anchored"
        assert plant.limb_state(leg).health == Health.OK
    # opened, the leg leaves support and its gripper is ready again: the flag clears
    plant.gripper("leg_0", GripperAction.OPEN)
    plant.advance(plant.time + 0.01)
    assert plant.limb_state("leg_0").detail["grip"]["state"] != "detached"
    assert plant.limb_state("leg_0").health == Health.OK


def test_a_push_below_the_grip_force_holds():
    plant = hubrobo()
    tibia = int(plant.model.model.site_bodyid[plant.model.frame_site["leg_0.palm"]])
    plant.data.xfrc_applied[tibia, :3] = (0.0, 0.0, 0.5)
    run(plant, 0.3)
    assert plant.limb_state("leg_0").detail["detachments"] == []
    force = np.linalg.norm(plant.limb_state("leg_0").detail["grip"]["force_n"])
    assert 0.05 < force < GRIP_FORCE_N


def test_opening_a_gripper_releases_the_lifted_leg_and_closing_it_on_the_ground_anchors_it():
    plant = hubrobo()
    ground = TERRAIN.terrain
    # The leg over the highest ground: set down, its palm touches the terrain.
    leg = min(LEGS, key=lambda g: palm(plant, g)[2] - ground.height_at(*palm(plant, g)[:2]))
    others = [g for g in LEGS if g != leg]
    home = np.array(plant.limb_state(leg).q)
    plant.gripper(leg, GripperAction.OPEN)
    ramp(plant, leg, home, home + (0.0, 0.3, 0.0), 1.0)
    grip = plant.limb_state(leg).detail["grip"]
    assert grip["state"] == "released" and grip["anchor"] is None
    assert grip["force_n"] == [0.0, 0.0, 0.0] and not grip["supporting"]
    assert palm(plant, leg)[2] > ground.height_at(*palm(plant, leg)[:2]) + 0.01
    for other in others:
        assert plant.limb_state(other).detail["grip"]["state"] == "anchored"
    # Closed, and stepping down slowly (0.1 rad/s) until it grips, then held there.
    plant.gripper(leg, GripperAction.CLOSE)
    q = home + (0.0, 0.3, 0.0)
    while plant.limb_state(leg).detail["grip"]["state"] != "anchored" and q[1] > home[1] - 0.3:
        q = q - (0.0, 0.001, 0.0)
        plant.command(leg, CommandMode.JOINT_POSITION, {"q": list(q)})
        plant.advance(plant.time + 0.01)
    plant.command(leg, CommandMode.JOINT_POSITION, {"q": list(plant.limb_state(leg).q)})
    run(plant, plant.time + 0.5)
    grip = plant.limb_state(leg).detail["grip"]
    assert grip["state"] == "anchored" and grip["supporting"]
    x, y, z = grip["anchor"]
    assert z == pytest.approx(ground.height_at(x, y), abs=1.5e-3)
    assert all(plant.limb_state(g).detail["grip"]["supporting"] for g in LEGS)
    assert plant.limb_state(leg).detail["detachments"] == []


def test_the_base_hitting_a_rock_shows_in_contacts():
    rock = Rock(at_m=(0.0, 0.0), height_m=0.2, radius_m=0.15)
    plant = hubrobo(
        TerrainSpec(size_m=1.0, cell_m=0.01, sigma_m=0.0, hurst=0.8, seed=0, rocks=(rock,))
    )
    run(plant, 0.05)
    contacts = plant.limb_state("leg_0").detail["contacts"]
    assert contacts["count"] > 0 and contacts["deepest_m"] > 0.0 and contacts["ticks"] > 0
    flat = hubrobo(TerrainSpec(size_m=1.0, cell_m=0.01, sigma_m=0.0, hurst=0.8, seed=0))
    run(flat, 0.05)
    assert flat.limb_state("leg_0").detail["contacts"] == {"count": 0, "deepest_m": 0.0, "ticks": 0}


def test_momentum_and_com_acceleration_of_a_pushed_free_robot_follow_newton():
    plant = hubrobo(gripped=())  # set nowhere: the base at the origin, 0 above the ground
    plant.data.qpos[2] = 0.5  # [m] well above the terrain: nothing touches
    mujoco.mj_forward(plant.model.model, plant.data)
    mass = float(plant.model.model.body_subtreemass[plant.model.base_body])
    force = np.array([0.3, -0.2, 0.1])  # [N] at the base's centre of mass
    plant.data.xfrc_applied[plant.model.base_body, :3] = force
    run(plant, 0.2)
    detail = plant.limb_state("leg_0").detail
    expected = force / mass + np.array(G_MICRO)
    assert detail["com_acceleration"] == pytest.approx(expected.tolist(), rel=1e-6, abs=1e-9)
    impulse = (force + mass * np.array(G_MICRO)) * 0.2  # [N s], from rest
    assert detail["momentum"][:3] == pytest.approx(impulse.tolist(), rel=1e-6)
    mujoco.mj_forward(plant.model.model, plant.data)
    mujoco.mj_subtreeVel(plant.model.model, plant.data)
    com_velocity = plant.data.subtree_linvel[plant.model.base_body]
    assert detail["momentum"][:3] == pytest.approx((mass * com_velocity).tolist(), rel=1e-5)
    assert mass == pytest.approx(2.254, abs=1e-3)


def test_without_grippers_a_substep_is_mj_step_to_the_bit():
    plant = MujocoPlant("mirror_arm")
    plant.command("arm", CommandMode.JOINT_TORQUE, {"tau": [0.2, -0.1, 0.3, 0.0, 0.1, -0.2, 0.1]})
    model = plant.model.model
    twin = mujoco.MjData(model)
    twin.qpos[:], twin.qvel[:] = plant.data.qpos, plant.data.qvel
    for k in range(1, 51):
        twin.ctrl[:] = plant.data.ctrl
        twin.ctrl[plant.model.limb_actuator["arm"]] = [0.2, -0.1, 0.3, 0.0, 0.1, -0.2, 0.1]
        mujoco.mj_step(model, twin)
        plant.advance(k * 1e-3)
    assert np.array_equal(twin.qpos, plant.data.qpos)
    assert np.array_equal(twin.qvel, plant.data.qvel)


def test_gripper_on_a_limb_without_one_is_refused_naming_why():
    with pytest.raises(DriverError, match="no terrain to grip"):
        hubrobo(None, gripped=()).gripper("leg_0", GripperAction.CLOSE)
    with pytest.raises(DriverError, match="latch"):
        MujocoPlant("mirror_arm").gripper("arm", GripperAction.CLOSE)


def test_terrain_contact_and_servo_round_trip_through_physics_json():
    config = MujocoConfig(
        terrain=TerrainSpec(1.0, 0.01, 0.03, 0.8, 7, (Rock((0.1, 0.0), 0.1, 0.05),)),
        servo=ServoGains(3.0, 0.02),
        latched={"leg_0.palm": "terrain"},
    )
    assert MujocoConfig.from_json(config.to_json()) == config
    default = json.loads(MujocoConfig().to_json())
    assert default["servo"] == {"kp_nm_per_rad": 400.0, "kd_nms_per_rad": 40.0}
    assert default["contact"]["stiffness_n_per_m"] == 4000.0
    assert default["contact"]["damping_ns_per_m"] == 1.0
    assert default["contact"]["grip_force_n"] == 0.9


TERRAIN_JSON = {"size_m": 1.0, "cell_m": 0.01, "sigma_m": 0.03, "hurst": 0.8, "seed": 0}


@pytest.mark.parametrize(
    ("physics", "message"),
    [
        ({"terrain": {**TERRAIN_JSON, "sigma": 1}}, "unknown keys sigma"),
        ({"terrain": {"size_m": 1.0}}, "missing cell_m"),
        ({"terrain": {**TERRAIN_JSON, "hurst": 2.0}}, "hurst must be in"),
        ({"terrain": {**TERRAIN_JSON, "size_m": 1.005}}, "not a whole number"),
        ({"terrain": {**TERRAIN_JSON, "rocks": [{"at_m": [0, 0]}]}}, "missing height_m"),
        ({"contact": {"stiffness": 1}}, "contact has unknown keys stiffness"),
        ({"contact": {"grip_force_n": -1}}, "grip_force_n must be"),
        ({"servo": {"kp_nm_per_rad": "x"}}, "servo kp_nm_per_rad must be a number"),
        ({"servo": {"kd_nms_per_rad": -1}}, "kd_nms_per_rad must be a finite number >= 0"),
    ],
)
def test_physics_json_errors_name_the_bad_key(physics, message):
    with pytest.raises(ValueError, match=message):
        MujocoConfig.from_json(json.dumps(physics))


def test_a_terrain_grip_on_a_non_palm_or_without_terrain_is_refused():
    with pytest.raises(ValueError, match="needs a terrain"):
        MujocoPlant("hubrobo", config=MujocoConfig(latched={"leg_0.palm": "terrain"}))
    with pytest.raises(ValueError, match=r"palms of robot hubrobo are leg_0\.palm"):
        MujocoPlant(
            "hubrobo", config=MujocoConfig(terrain=TERRAIN, latched={"leg_9.palm": "terrain"})
        )
