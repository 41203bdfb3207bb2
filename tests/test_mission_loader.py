"""A valid mission file becomes the expected model: SI values, defaults, subtrees, faults."""

import dataclasses
import math
import textwrap
from pathlib import Path

import pytest

from limbtree.trees.mission import (
    Clock,
    FaultKind,
    Mission,
    MissionError,
    NodeModel,
    check_mission,
    load_mission,
)
from limbtree.trees.mission.controllers import VERSIONS

MISSIONS = Path(__file__).parent / "missions"
ROBOTS = {
    "heavy_limb": ("arm",),
    "light_limb": ("arm",),
    "moonbot_zero": ("leg_0", "leg_1", "leg_2", "leg_3"),
}
HALF = math.sqrt(0.5)


def load(path: Path | str, **kwargs: object) -> Mission:
    return load_mission(path, robots=ROBOTS, **kwargs)  # type: ignore[arg-type]


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def nodes(mission: Mission, node_type: str) -> list[NodeModel]:
    return [node for node in mission.root.walk() if node.type == node_type]


@pytest.fixture(scope="module")
def full() -> Mission:
    return load(MISSIONS / "full.yaml")


def test_full_mission_header_is_read(full):
    assert full.name == "full"
    assert full.description == "Every section of a mission file, valid."
    assert full.clock is Clock.SIM
    assert full.rate_hz == 200.0
    assert full.path == MISSIONS / "full.yaml"
    assert dict(full.parameters) == {"side_mm": 100, "speed": 50}


def test_sources_list_the_mission_file_then_its_includes_depth_first(full):
    assert full.sources == (
        MISSIONS / "full.yaml",
        MISSIONS / "lib" / "moves.yaml",
        MISSIONS / "lib" / "common.yaml",
    )


def test_limbs_get_their_robot_chain_agent_keys_and_base_pose_in_si(full):
    heavy, light, leg = full.limbs
    assert (heavy.name, heavy.robot, heavy.limb, heavy.agent) == (
        "heavy",
        "heavy_limb",
        "arm",
        "sim",
    )
    assert heavy.simulated and heavy.keys is None
    assert heavy.base_pose == pytest.approx((0.0, 0.5, 0.0, 0.0, 0.0, HALF, HALF))
    assert light.agent == "tcp://10.0.0.2:7000" and not light.simulated
    assert light.keys == MISSIONS / "keys" / "light"
    assert light.base_pose is None
    assert (leg.robot, leg.limb) == ("moonbot_zero", "leg_2")
    assert (heavy.location.line, heavy.location.column) == (11, 3)


def test_a_limb_without_a_chain_gets_its_robots_first(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        limbs: {leg: {robot: moonbot_zero}}
        tree: {wait: {duration_s: 1}}
        """,
    )
    assert load(path).limbs[0].limb == "leg_0"


def test_a_simulated_limbs_non_idealities_reach_its_driver_in_si(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        limbs:
          arm: {robot: heavy_limb, backlash_deg: 3, flex: 0.04, joint_noise_deg: 0.02,
                latency_s: 0.01, vibration_hz: 2, vibration_damping: 0.1}
        tree: {wait: {duration_s: 1}}
        """,
    )
    assert dict(load(path).limbs[0].sim) == pytest.approx(
        {
            "backlash_rad": math.radians(3),
            "flex": 0.04,
            "joint_noise_rad": math.radians(0.02),
            "latency_s": 0.01,
            "vibration_hz": 2.0,
            "vibration_damping": 0.1,
        }
    )


def test_capture_noise_needs_a_world_and_reaches_the_driver_in_si(tmp_path):
    text = """\
        mission: m
        limbs:
          arm: {robot: heavy_limb, mocap_noise_mm: 0.6, mocap_rot_noise_deg: 0.2}
        %s
        tree: {wait: {duration_s: 1}}
        """
    with_world = write(
        tmp_path,
        text % "world: {wheel: {module: moonbot_wheel_v2, pose: {translation_mm: [0, 0, 0]}}}",
    )
    assert dict(load(with_world).limbs[0].sim) == pytest.approx(
        {"mocap_noise_m": 0.0006, "mocap_rot_noise_rad": math.radians(0.2)}
    )
    without = write(tmp_path, text % "", name="bare.yaml")
    with pytest.raises(MissionError) as raised:
        load(without)
    message = str(raised.value)
    assert "mocap_noise_mm sets the noise of the simulated world's motion capture" in message
    assert "mocap_rot_noise_deg" in message and "bare.yaml:3:" in message


def test_faults_are_sorted_by_time_with_kind_params(full):
    assert [(f.at_s, f.limb, f.kind) for f in full.faults] == [
        (10.0, "heavy", FaultKind.SLOWDOWN),
        (20.0, "light", FaultKind.BLOCKAGE),
        (30.0, "leg", FaultKind.POWER_OFF),
    ]
    slowdown, blockage, power_off = full.faults
    assert slowdown.duration_s is None and dict(slowdown.params) == {"factor": 0.5}
    assert blockage.duration_s == 1.5 and dict(blockage.params) == {"joints": (0, 3)}
    assert dict(power_off.params) == {}
    assert not any(f.drawn for f in full.faults)


def test_tree_structure_follows_the_file(full):
    root = full.root
    assert (root.type, root.name) == ("sequence", "Main")
    assert [child.type for child in root.children] == [
        "operator_gate",
        "sync_move",
        "retry",
        "wait",
        "parallel",
        "timeout",
        "joint_sync_move",
        "recover_to_last_valid",
        "fallback",
    ]
    assert (root.location.line, root.location.column) == (31, 3)


def test_sync_move_values_are_converted_to_si(full):
    move = full.root.children[1]
    params = move.params
    assert params["limbs"] == ("heavy", "light")
    assert dict(params["p_e"]) == pytest.approx({"heavy": 0.02, "light": 0.01})
    assert params["r_e"] == math.inf
    assert params["max_speed"] == pytest.approx(0.05)
    assert params["recovery"] == "nearest"
    first, second = params["waypoints"]
    assert first["heavy"] == pytest.approx((0.1, 0, 0, 0, 0, 0, 1))
    assert first["light"] == first["heavy"]
    assert second["heavy"] == pytest.approx((0, 0, 0.01, HALF, 0, 0, HALF))
    assert second["light"] == pytest.approx((0, 0, 0, 0, 0, 1, 0))


def test_defaults_are_filled_in_with_their_model_names(full):
    params = full.root.children[1].params
    assert params["frame"] == "relative"
    assert params["norm"] == math.inf
    assert params["monotonic"] is False
    assert params["settle"] == pytest.approx(0.002)
    assert params["stale_timeout"] == 5.0
    assert params["loop"] is False
    velocity = nodes(full, "velocity_move")[0].params
    assert velocity["p_e"] == pytest.approx(0.05)
    assert velocity["r_e"] == pytest.approx(math.radians(30))
    joint_move = nodes(full, "joint_move")[0].params
    assert joint_move["settle"] == pytest.approx(math.radians(1))
    assert joint_move["q_e"] == pytest.approx(math.radians(5))
    assert joint_move["timeout"] is None


def test_velocity_profile_and_postures_are_in_si(full):
    (segment,) = nodes(full, "velocity_move")[0].params["profile"]
    assert segment["duration"] == 2.0
    assert segment["velocity"] == pytest.approx((0, 0, 0.02))
    home, mixed = nodes(full, "joint_sync_move")[0].params["postures"]
    assert dict(home) == {"heavy": "home", "light": "home"}
    assert mixed["heavy"] == pytest.approx((0, math.pi / 2, 0, 0, 0, 0, 0))
    assert mixed["light"] == "safe"


def test_decorators_and_composites_keep_their_params(full):
    parallel = nodes(full, "parallel")[0]
    assert dict(parallel.params) == {
        "policy": "selected",
        "synchronise": True,
        "selected": ("Hold",),
    }
    assert nodes(full, "repeat")[0].params["times"] is None
    assert nodes(full, "timeout")[0].params["duration"] == 60.0
    assert nodes(full, "fallback")[0].params["memory"] is True


def test_selector_is_an_alias_of_fallback_and_lists_are_children(full):
    fallback = full.root.children[-1]
    assert fallback.type == "fallback"
    assert [c.type for c in fallback.children] == ["force_success"]
    assert fallback.children[0].children[0].params["duration"] == 0.5


def test_subtree_use_is_inlined_with_its_parameters(full):
    retry = full.root.children[2]
    assert retry.origin == "subtree square"
    assert retry.name == "square"
    assert (retry.location.file, retry.location.line) == (str(MISSIONS / "full.yaml"), 45)
    (move,) = retry.children
    assert move.location.file == str(MISSIONS / "lib" / "moves.yaml")
    assert move.params["limbs"] == ("heavy", "light")
    corners = [x for w in move.params["waypoints"] for x in w["light"][:3]]
    assert corners == pytest.approx([0.1, 0, 0, 0.1, 0.1, 0, 0, 0.1, 0, 0, 0, 0])


def test_subtree_defaults_apply_and_a_use_can_rename_the_root(full):
    pause = full.root.children[3]
    assert (pause.type, pause.name, pause.origin) == ("wait", "Breathe", "subtree pause")
    assert pause.params["duration"] == 1.0


def test_nodes_get_a_display_name_from_their_type(full):
    assert full.root.children[0].name == "Operator gate"
    assert nodes(full, "recover_to_last_valid")[0].name == "Recover to last valid"


def test_overrides_replace_parameter_defaults_everywhere(tmp_path):
    mission = load(MISSIONS / "full.yaml", overrides={"side_mm": "150", "speed": "12.5"})
    assert dict(mission.parameters) == {"side_mm": 150, "speed": 12.5}
    move = mission.root.children[1]
    assert move.params["waypoints"][0]["heavy"][0] == pytest.approx(0.15)
    assert move.params["max_speed"] == pytest.approx(0.0125)
    square = mission.root.children[2].children[0]
    assert square.params["waypoints"][1]["heavy"][:3] == pytest.approx((0.15, 0.15, 0))


def test_overrides_are_read_as_yaml(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        parameters: {offset: [0, 0, 0], gate: false}
        limbs: {a: {robot: heavy_limb}}
        tree:
          sync_move: {limbs: [a], waypoints: [{translation_mm: $offset}], monotonic: $gate}
        """,
    )
    mission = load(path, overrides={"offset": "[1, 2, 3]", "gate": "yes"})
    move = mission.root
    assert move.params["waypoints"][0]["a"][:3] == pytest.approx((0.001, 0.002, 0.003))
    assert move.params["monotonic"] is True
    assert dict(mission.parameters) == {"offset": (1, 2, 3), "gate": True}


def test_a_null_parameter_leaves_an_optional_key_at_its_default(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        parameters: {cap: null}
        tree: {until_success: {times: $cap, child: {wait: {duration_s: 1}}}}
        """,
    )
    assert load(path).root.params["times"] is None
    assert load(path, overrides={"cap": "3"}).root.params["times"] == 3
    assert dict(load(path).parameters) == {"cap": None}


def test_absolute_waypoints_per_limb_and_inf_written_as_text(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        limbs: {a: {robot: heavy_limb}, b: {robot: light_limb}}
        tree:
          sync_move:
            limbs: [a, b]
            frame: absolute
            p_e_mm: inf
            r_e_deg: 1e1
            norm: 2
            waypoints:
              - a: {translation_mm: [1000, 0, 500]}
                b: {translation_mm: [0, 1000, 500], rotation_deg: [0, 90, 0]}
        """,
    )
    params = load(path).root.params
    assert params["frame"] == "absolute"
    assert params["p_e"] == math.inf
    assert params["r_e"] == pytest.approx(math.radians(10))
    assert params["norm"] == 2.0
    (waypoint,) = params["waypoints"]
    assert waypoint["a"] == pytest.approx((1, 0, 0.5, 0, 0, 0, 1))
    assert waypoint["b"] == pytest.approx((0, 1, 0.5, 0, HALF, 0, HALF))


def test_yaml_anchors_and_merge_keys_are_followed(tmp_path):
    path = write(
        tmp_path,
        """\
        mission: m
        limbs: {a: {robot: heavy_limb}}
        tree:
          sequence:
            - sync_move: &move {limbs: [a], waypoints: [{translation_mm: [10, 0, 0]}]}
            - sync_move: {<<: *move, p_e_mm: 5}
        """,
    )
    first, second = load(path).root.children
    assert first.params["waypoints"] == second.params["waypoints"]
    assert (first.params["p_e"], second.params["p_e"]) == pytest.approx((0.02, 0.005))


def test_a_bare_type_is_a_node_without_params(tmp_path):
    path = write(tmp_path, "mission: m\ntree: {inverter: {child: {force_success: {child: wait}}}}")
    with pytest.raises(MissionError, match="wait needs duration_s"):
        load(path)
    path.write_text(path.read_text().replace("child: wait", "child: {wait: {duration_s: 1}}"))
    assert [n.type for n in load(path).root.walk()] == ["inverter", "force_success", "wait"]


def test_model_values_are_read_only(full):
    move = full.root.children[1]
    with pytest.raises(TypeError):
        move.params["limbs"] = ("light",)  # type: ignore[index]
    with pytest.raises(TypeError):
        move.params["waypoints"][0]["heavy"] = (0,) * 7  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        move.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        full.parameters["speed"] = 1  # type: ignore[index]


def test_mission_limb_lookup_names_the_declared_limbs(full):
    assert full.limb("leg").limb == "leg_2"
    with pytest.raises(KeyError, match="heavy, light, leg"):
        full.limb("arm")


def test_a_valid_mission_has_no_problems(full):
    assert check_mission(MISSIONS / "full.yaml", robots=ROBOTS) == []


def test_the_shipped_robot_registry_can_validate_limbs():
    from limbtree.robots import load_robots

    robots = {robot.name: robot.limb_names for robot in load_robots()}
    assert check_mission(MISSIONS / "full.yaml", robots=robots) == []


# Random faults ---------------------------------------------------------------------------


def drawn(seed: int) -> list[tuple[float, str, str, float | None]]:
    mission = load(MISSIONS / "random_faults.yaml", seed=seed)
    return [(f.at_s, f.limb, f.kind.value, f.duration_s) for f in mission.faults]


def test_random_faults_are_the_same_for_the_same_seed():
    assert drawn(7) == drawn(7)


def test_random_faults_differ_across_seeds():
    assert drawn(1) != drawn(2)


def test_random_faults_follow_their_groups_and_merge_with_written_ones():
    mission = load(MISSIONS / "random_faults.yaml", seed=3)
    faults = mission.faults
    assert len(faults) == 1 + 20 + 9
    assert [f.at_s for f in faults] == sorted(f.at_s for f in faults)
    written = [f for f in faults if not f.drawn]
    assert [(f.at_s, f.kind) for f in written] == [(5.0, FaultKind.IK_ERROR)]
    first = [f for f in faults if f.drawn and f.location.line == 10]
    second = [f for f in faults if f.drawn and f.location.line == 15]
    assert len(first) == 20 and len(second) == 9
    for fault in first:
        assert 10 <= fault.at_s <= 700 and 1 <= (fault.duration_s or 0) <= 4
        assert fault.kind in {"blockage", "slowdown", "disassembly", "power_off"}
        assert fault.limb in {"heavy", "light", "leg"}
        if fault.kind is FaultKind.SLOWDOWN:
            assert 0.3 <= fault.params["factor"] <= 0.6
        else:
            assert dict(fault.params) == {}
    for fault in second:
        assert (fault.limb, fault.kind, fault.duration_s) == ("leg", FaultKind.IK_ERROR, 0.5)
        assert 60 <= fault.at_s <= 120


def test_a_file_included_twice_is_read_once(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "base.yaml").write_text(
        "subtrees:\n  rest: {tree: {wait: {duration_s: 2}}}\n"
    )
    for name in ("a", "b"):
        (tmp_path / "lib" / f"{name}.yaml").write_text(
            f"include: base.yaml\nsubtrees:\n  {name}: {{tree: {{subtree: rest}}}}\n"
        )
    path = write(
        tmp_path,
        """\
        mission: m
        include: [lib/a.yaml, lib/b.yaml]
        tree: {sequence: [{subtree: a}, {subtree: b}]}
        """,
    )
    mission = load(path)
    assert [s.name for s in mission.sources] == ["m.yaml", "a.yaml", "base.yaml", "b.yaml"]
    assert [(n.type, n.name, n.origin) for n in mission.root.children] == [
        ("wait", "a", "subtree a"),
        ("wait", "b", "subtree b"),
    ]


def test_every_alignment_parameter_has_a_mission_key():
    # A parameter added to AlignV1Params / AlignV2Params must be settable from missions (but
    # those the align node sets with its own keys).
    own_keys = {"dd_tol_m", "dtheta_tol_rad", "offset", "target_timeout_s", "stall_time_s"}
    for version, (pairs, params) in VERSIONS.items():
        fields = {f.name for f in dataclasses.fields(params)} - own_keys
        assert {field for _, field in pairs} == fields, version


def align_mission(tmp_path: Path, v1: str, v2: str) -> Path:
    """A mission of one align node with the given v1 and v2 maps."""
    return write(
        tmp_path,
        f"""\
        mission: m
        limbs: {{arm: {{robot: heavy_limb}}}}
        world: {{wheel: {{module: moonbot_wheel_v2, pose: {{translation_mm: [500, 0, 0]}}}}}}
        tree:
          align: {{limb: arm, target: wheel/grasp, v1: {v1}, v2: {v2}}}
        """,
    )


def test_an_align_node_takes_both_versions_parameters_in_si(tmp_path):
    path = align_mission(
        tmp_path,
        "{s_max_mm: 40, settle_tol_rot_deg: 0.5, N: 3}",
        "{t_max_mm_s: 30, r_max_deg_s: 6, alpha_j: 100, tau_lin_s: 0.2}",
    )
    (node,) = nodes(load(path), "align")
    assert dict(node.params["v1"]) == pytest.approx(
        {"s_max": 0.04, "settle_tol_rad": math.radians(0.5), "N": 3}
    )
    assert dict(node.params["v2"]) == pytest.approx(
        {"t_max": 0.03, "r_max": math.radians(6), "alpha_j": 100.0, "tau_lin": 0.2}
    )


def test_alignment_parameters_that_do_not_hold_together_are_reported_by_key(tmp_path):
    path = align_mission(tmp_path, "{s_max_mm: 2}", "{t_max: 30}")
    with pytest.raises(MissionError) as raised:
        load(path)
    message = str(raised.value)
    assert "m.yaml:5:" in message
    assert "v1: s_max_mm: alignment parameter s_max = 0.002: must be >= s_min" in message
    assert "unknown key t_max; did you mean t_max_mm_s" in message
