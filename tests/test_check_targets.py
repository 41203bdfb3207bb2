"""``limbtree check`` refuses names and sizes the robots and the world do not have (issue 12,
item 8): align targets, posture names, joint counts, and faults the clock cannot inject."""

from pathlib import Path

import pytest

from limbtree.trees.app import load
from limbtree.trees.cli import main
from limbtree.trees.mission.errors import MissionError

WORLD = "world:\n  wheel: {module: moonbot_wheel_v2, pose: {translation_mm: [871, -459, 121]}}\n"


def mission(tmp_path: Path, limbs: str, tree: str, extra: str = "") -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(f"mission: m\nlimbs:\n  arm: {limbs}\n{extra}tree:\n  {tree}\n")
    return path


def problems(path: Path) -> str:
    with pytest.raises(MissionError) as caught:
        load(path)
    return str(caught.value)


def test_an_align_target_naming_no_module_of_the_world_names_the_modules(tmp_path):
    path = mission(tmp_path, "{robot: moonbot_limb_v2}",
                   "align: {limb: arm, target: crate/grasp}", WORLD)  # fmt: skip
    text = problems(path)
    assert "m.yaml:7:3:" in text
    assert "'crate/grasp' names no module of the world" in text and "(wheel)" in text
    assert "marker" not in text


def test_an_align_target_naming_no_grasp_point_lists_the_modules_grasp_points(tmp_path):
    path = mission(tmp_path, "{robot: moonbot_limb_v2}",
                   "align: {limb: arm, target: wheel/handle}", WORLD)  # fmt: skip
    text = problems(path)
    assert "has no grasp point 'handle'; its grasp points are grasp, grasp_back" in text


def test_an_align_target_naming_only_a_module_shows_the_form_with_its_grasp_points(tmp_path):
    path = mission(tmp_path, "{robot: moonbot_limb_v2}",
                   "align: {limb: arm, target: wheel}", WORLD)  # fmt: skip
    text = problems(path)
    assert "m.yaml:7:3:" in text
    assert "target 'wheel' names a module but no grasp point: the target is " in text
    assert (
        "MODULE/GRASP_POINT, e.g. wheel/grasp; module wheel (moonbot_wheel_v2) has grasp, "
        "grasp_back" in text
    )


def test_an_align_target_of_the_world_passes(tmp_path):
    path = mission(tmp_path, "{robot: moonbot_limb_v2}",
                   "align: {limb: arm, target: wheel/grasp}", WORLD)  # fmt: skip
    assert load(path).name == "m"


def test_a_grasp_of_a_module_the_world_does_not_place_names_the_modules(tmp_path):
    # It once passed check and failed 28 s into the run, hinting at alignment.
    path = mission(tmp_path, "{robot: moonbot_limb_v2}", "grasp: {limb: arm, module: wheel9}",
                   WORLD)  # fmt: skip
    text = problems(path)
    assert "m.yaml:7:3:" in text
    assert "module 'wheel9' is not in the world" in text and "places (wheel)" in text
    ok = mission(tmp_path, "{robot: moonbot_limb_v2}", "grasp: {limb: arm, module: wheel}", WORLD)
    assert load(ok).name == "m"


def test_a_posture_name_the_limb_does_not_have_lists_its_postures(tmp_path):
    path = mission(tmp_path, "{robot: heavy_limb}", "joint_move: {limb: arm, posture: folded}")
    text = problems(path)
    assert "m.yaml:5:36:" in text
    assert "has no posture 'folded'; its postures are home, safe, slumped" in text


def test_a_joint_target_with_the_wrong_number_of_joints_names_both_counts(tmp_path):
    path = mission(tmp_path, "{robot: heavy_limb}",
                   "joint_move: {limb: arm, posture: {q_deg: [0, 10, 20]}}")  # fmt: skip
    text = problems(path)
    assert "has 3 joint angles; heavy_limb arm has 7 joints" in text


def test_a_joint_target_of_the_wrong_size_given_by_set_names_the_override(tmp_path):
    # (a reviewer was pointed at the node, whose file holds the right count)
    path = mission(tmp_path, "{robot: heavy_limb}", "joint_move: {limb: arm, posture: $q}",
                   "parameters: {q: {default: home}}\n")  # fmt: skip
    with pytest.raises(MissionError) as caught:
        load(path, overrides={"q": "{q_deg: [1, 2, 3]}"})
    (problem,) = caught.value.problems
    assert str(problem) == (
        '--set q={q_deg: [1, 2, 3]}: joint_move "Joint move": the posture for limb arm has 3 '
        "joint angles; heavy_limb arm has 7 joints (joint_1, joint_2, joint_3, joint_4, "
        "joint_5, joint_6, joint_7) (the joint_move is at "
        f"{path}:6:3)"
    )


def test_a_joint_target_past_a_joint_limit_names_the_joint_and_its_limits(tmp_path):
    # (it used to pass check, and the run then waited at the limit for ever)
    past = "joint_move: {limb: arm, posture: {q_deg: [0, 200, 0, 0, 0, 0, 0]}}"
    path = mission(tmp_path, "{robot: heavy_limb}", past)
    text = problems(path)
    assert "m.yaml:5:36:" in text
    assert "joint_2 at 200 deg, its limits -120 deg to 120 deg" in text
    assert "never reach it" in text
    at_limit = mission(tmp_path, "{robot: heavy_limb}", past.replace("200", "120"))
    assert load(at_limit).name == "m"  # a limit itself is within


def test_joint_sync_move_postures_are_checked_per_limb(tmp_path):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "joint_sync_move: {limbs: [arm], postures: [home, {arm: nowhere}]}",
    )
    assert "has no posture 'nowhere'" in problems(path)


def test_scheduled_faults_under_the_real_clock_are_refused_naming_the_sim_clock(tmp_path, capsys):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "wait: {duration_s: 2}",
        "clock: real\nfaults:\n  - {at_s: 1, limb: arm, kind: blockage, duration_s: 1}\n",
    )
    assert main(["check", str(path)]) != 0
    err = capsys.readouterr().err
    assert "m.yaml:6:5:" in err and "need the sim clock" in err and "--clock sim" in err


def test_drawn_faults_under_the_real_clock_are_counted_as_check_counts_them(tmp_path, capsys):
    # Two rows: 1 blockage, then 2 power losses of both limbs at once (4 limb faults). Faults
    # are in time order, so the first is most likely the second row's: the error still points
    # at the file's first row, and counts as the OK line does.
    path = mission(
        tmp_path,
        "{robot: heavy_limb}\n  arm2: {robot: heavy_limb}",
        "wait: {duration_s: 20}",
        "random_faults:\n"
        "  - {count: 1, kinds: [blockage], limbs: [arm], between_s: [15, 16], duration_s: [1, 2]}\n"
        "  - {count: 2, kinds: [power_off], limbs: [arm, arm2], limbs_per_fault: [2, 2], "
        "between_s: [1, 2], duration_s: [1, 2]}\n",
    )
    assert main(["check", str(path)]) == 0
    assert "3 disruptions (5 limb faults)" in capsys.readouterr().out
    real = path.read_text().replace("random_faults:", "clock: real\nrandom_faults:")
    path.write_text(real)
    assert main(["check", str(path)]) != 0
    err = capsys.readouterr().err
    assert "m.yaml:7:5: 3 disruptions (5 limb faults) scheduled but clock: real" in err
    # check takes run's --clock and --seed: the same mission run with --clock sim is fine
    assert main(["check", str(path), "--clock", "sim", "--seed", "3"]) == 0
    assert "3 disruptions (5 limb faults)" in capsys.readouterr().out


def test_check_and_run_with_clock_real_refuse_faults_at_the_first_fault(tmp_path, capsys):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "wait: {duration_s: 2}",
        "faults:\n  - {at_s: 0.5, limb: arm, kind: power_off, duration_s: 1}\n",
    )
    expected = (
        "m.yaml:5:5: 1 fault scheduled but --clock real; faults are injected into simulated "
        "limbs in lockstep, so they need the sim clock: run with --clock sim, or remove the "
        "faults"
    )
    assert main(["check", str(path), "--clock", "real"]) != 0
    assert expected in capsys.readouterr().err
    # (run refuses it the same way, at the fault, before anything starts)
    assert main(["run", str(path), "--clock", "real", "--headless"]) != 0
    assert expected in capsys.readouterr().err


def test_blockage_joints_the_limb_does_not_have_are_refused_at_the_joints(tmp_path):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "wait: {duration_s: 2}",
        "faults:\n  - {at_s: 0.5, limb: arm, kind: blockage, duration_s: 1, joints: [0, 42]}\n",
    )
    text = problems(path)
    assert "m.yaml:5:67: joints: limb arm has no joint 42" in text
    assert "heavy_limb arm has 7 joints, indices 0..6" in text


def test_blockage_joints_given_by_set_name_the_override_and_the_fault(tmp_path):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "wait: {duration_s: 2}",
        "parameters: {stuck: {default: [0]}}\n"
        "faults:\n  - {at_s: 0.5, limb: arm, kind: blockage, duration_s: 1, joints: $stuck}\n",
    )
    with pytest.raises(MissionError) as caught:
        load(path, overrides={"stuck": "[0, 42]"})
    (problem,) = caught.value.problems
    assert str(problem) == (
        "--set stuck=[0, 42]: joints: limb arm has no joint 42; heavy_limb arm has 7 joints, "
        f"indices 0..6 (the fault is at {path}:6:5)"
    )


def test_blockage_joints_within_the_limb_pass(tmp_path):
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "wait: {duration_s: 2}",
        "faults:\n  - {at_s: 0.5, limb: arm, kind: blockage, duration_s: 1, joints: [0, 6]}\n",
    )
    assert load(path).faults[0].params["joints"] == (0, 6)


def test_the_trees_problems_come_in_file_order(tmp_path):
    # (an unreachable waypoint was reported before an unknown posture on the line above it)
    path = mission(
        tmp_path,
        "{robot: heavy_limb}",
        "sequence:\n"
        "    - joint_move: {limb: arm, posture: folded}\n"
        "    - sync_move: {limbs: [arm], waypoints: [{translation_mm: [5000, 0, 0]}]}",
    )
    lines = problems(path).splitlines()
    # (the posture's place, 6:40, and the waypoint's, 7:45)
    assert [line.split(": ")[0] for line in lines] == [f"{path}:6:40", f"{path}:7:45"], lines
    assert "no posture 'folded'" in lines[0] and "5000 mm" in lines[1]


def test_a_parameter_set_twice_is_refused_naming_both_values(tmp_path, capsys):
    # (the last one used to win silently)
    path = mission(tmp_path, "{robot: heavy_limb}", "wait: {duration_s: $d}",
                   "parameters: {d: {default: 1}}\n")  # fmt: skip
    assert main(["check", str(path), "--set", "d=2"]) == 0
    assert main(["check", str(path), "--set", "d=2", "--set", " d =3"]) == 1
    said = capsys.readouterr().err
    assert "limbtree check: --set d is given twice (d=2 and d=3); give it once" in said
    # (a malformed one is the command's error too, not the bare program's)
    assert main(["check", str(path), "--set", "d"]) == 1
    assert "limbtree check: --set wants NAME=VALUE, got 'd'" in capsys.readouterr().err


MAR = Path(__file__).resolve().parents[1] / "missions" / "mar_torso.yaml"
CLIMB = Path(__file__).resolve().parents[1] / "missions" / "asteroid_climb.yaml"


@pytest.mark.parametrize(
    ("mission_file", "old", "new", "said"),
    [
        (MAR, "arm_1.E2: tile0/si", "arm_1.E7: tile0/si",
         "robot mar (mirror_mar): latched: mirror_mar has no interface 'arm_1.E7'; its "
         "interfaces are E0, arm_1.E1, arm_1.E2, arm_2.E1, arm_2.E2"),
        (MAR, "arm_1.E2: tile0/si", "arm_1.E2: tile9/si",
         "latched arm_1.E2: no grasp point 'tile9/si' in the world; give MODULE/GRASP_POINT of "
         "a module the world places: tile0/si, tile1/si"),
        (MAR, "posture: home", "posture: homme",
         "posture: limb arm_1 has no posture 'homme'; its postures are home, safe, slumped"),
        (CLIMB, "leg_0.palm: terrain", "leg_0.palm: terrian",
         "latched leg_0.palm: no grasp point 'terrian' in the world; give MODULE/GRASP_POINT "
         "of a module the world places: terrain"),
    ],
)  # fmt: skip
def test_a_mujoco_robots_start_it_does_not_have_is_refused_where_it_is_declared(
    tmp_path, mission_file, old, new, said
):
    # They once passed check; the run then failed as its agent started, the reason in a log.
    text = mission_file.read_text()
    assert old in text
    path = tmp_path / mission_file.name
    path.write_text(text.replace(old, new))
    found = problems(path)
    assert f"{mission_file.name}:" in found and said in found


def test_a_latch_to_the_terrain_without_one_is_refused(tmp_path):
    text = CLIMB.read_text()
    start = text.index("  terrain:\n")
    path = tmp_path / "climb.yaml"
    path.write_text(text[:start] + text[text.index("  contact:") :])
    assert "latched leg_0.palm: terrain needs a terrain; add world.terrain" in problems(path)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ("size_mm: 3000", "size_mm: 200",
         "leg_0's palm at x = 140 mm, y = 140 mm is off the terrain (x -100 to 100 mm, y -100 "
         "to 100 mm): there is no ground to grip; make the terrain larger "
         "(world.terrain.size_mm)"),
        ("{at_mm: [100, 0], height_mm: $rock_mm, radius_mm: 80}",
         "{at_mm: [140, 140], height_mm: 300, radius_mm: 80}",
         "latched leg_0.palm: terrain: the palm cannot reach the ground 190 mm above it within "
         "the leg's joint limits; start the robot in another posture or place its base "
         "elsewhere"),
    ],
)  # fmt: skip
def test_a_start_the_plant_would_refuse_is_refused_where_the_robot_is_declared(
    tmp_path, old, new, said
):
    # They passed check; the run's agent then refused to start, the reason in its log.
    text = CLIMB.read_text()
    assert old in text
    path = tmp_path / "climb.yaml"
    path.write_text(text.replace(old, new))
    line = 1 + text[: text.index("\n  hub:\n")].count("\n") + 1
    assert f"climb.yaml:{line}:3: robot hub (hubrobo): {said}" in problems(path)


def test_the_shipped_mujoco_missions_start_as_declared():
    for path in (MAR, CLIMB, MAR.with_name("mar_walk_1arm.yaml")):
        assert load(path).name


def test_an_ik_error_on_a_mujoco_robot_is_refused_as_changing_nothing(tmp_path):
    # It once passed check and was reported injected; the walk went on as without it.
    text = MAR.with_name("mar_walk_1arm.yaml").read_text()
    at = text.index("\nsubtrees:") + 1
    fault = "faults:\n  - {at_s: 5, limb: arm, kind: KIND, duration_s: 3}\n\n"
    path = tmp_path / "walk.yaml"
    path.write_text(text[:at] + fault.replace("KIND", "ik_error") + text[at:])
    found = problems(path)
    assert "walk.yaml:30:5: fault ik_error on arm.arm: it makes ee_pose commands fail" in found
    assert "its faults are power_off, blockage, slowdown and disassembly" in found
    path.write_text(text[:at] + fault.replace("KIND", "power_off") + text[at:])
    assert load(path).name == "mar_walk_1arm"


def test_a_node_on_a_plant_that_cannot_run_it_is_refused_naming_the_plant_it_needs(tmp_path):
    # A walk_step on a kinematic arm passed check; the run waited 5 s for interfaces its
    # state never has, then failed asking "is it a mujoco plant?".
    text = MAR.with_name("mar_walk_1arm.yaml").read_text()
    old = "arm: {robot: mirror_arm, plant: mujoco, latched: {arm.E1: tile0/si}, posture: arch}"
    assert old in text
    path = tmp_path / "walk.yaml"
    path.write_text(text.replace(old, "arm: {robot: mirror_arm}"))
    found = problems(path)
    assert found.count("only a mujoco plant runs it") == 3  # each use of the step subtree
    assert (
        'walk_step "E2 to tile 1": limb arm.arm is on a kinematic plant, and walk_step latches '
        "standard interfaces and drives them to impedance goals (seed 003): only a mujoco "
        "plant runs it; give robots.arm plant: mujoco, or move the limb with a node a "
        "kinematic plant runs: sync_move, velocity_move, joint_sync_move, joint_move, " in found
    )


@pytest.mark.parametrize(
    ("tree", "node"),
    [
        ("sync_move: {limbs: [arm], waypoints: [{translation_mm: [0, 0, 20]}]}", "sync_move"),
        ("velocity_move: {limbs: [arm], profile: [{duration_s: 1, velocity_mm_s: [0, 0, 5]}]}",
         "velocity_move"),
        ("align: {limb: arm, target: tile0/si}", "align"),
        ("recover_to_last_valid: {limbs: [arm]}", "recover_to_last_valid"),
    ],
)  # fmt: skip
def test_a_pose_move_on_a_simulated_mujoco_robot_is_refused(tmp_path, tree, node):
    # Its agent refused every ee_pose command: the run stopped at the first one.
    path = tmp_path / "m.yaml"
    path.write_text(
        "mission: m\nworld:\n  tile0: {module: mirror_tile, pose: {translation_mm: [0, 0, -25]}}\n"
        "robots:\n"
        f"  arm: {{robot: mirror_arm, plant: mujoco}}\ntree:\n  {tree}\n"
    )
    found = problems(path)
    assert f"m.yaml:7:3: {node} " in found
    assert "limb arm.arm is on a mujoco plant" in found
    assert "only a kinematic plant runs it; give robots.arm plant: kinematic" in found
    assert (
        "node a mujoco plant runs: joint_sync_move, joint_move, grasp, release, walk_step" in found
    )


def test_a_climbing_node_on_a_kinematic_limb_names_the_limbs_entry(tmp_path):
    path = mission(tmp_path, "{robot: moonbot_limb_v2}",
                   "base_adjust: {legs: [arm]}")  # fmt: skip
    found = problems(path)
    assert 'base_adjust "Base adjust": limb arm is on a kinematic plant' in found
    assert "only a mujoco plant runs it; give limbs.arm plant: mujoco" in found


def test_a_first_walk_step_onto_a_tile_beyond_the_arms_reach_is_refused_at_its_target(tmp_path):
    # It passed check; the run's step failed after its 60 s timeout, blaming the via points.
    text = MAR.with_name("mar_walk_1arm.yaml").read_text()
    near = "tile1: {module: mirror_tile, pose: {translation_mm: [600, 0, -25]}}"
    assert near in text
    path = tmp_path / "walk.yaml"
    path.write_text(text.replace(near, near.replace("600", "5000")))
    found = problems(path)
    assert found.count("out of reach") == 1  # (the later steps' anchors are not known)
    assert (
        'walk.yaml:48:78: walk_step "E2 to tile 1": target tile1/si is out of reach of '
        "arm.arm's end E2: 5000 mm from tile0/si, where its anchor E1 is latched, 3400 mm "
        "beyond the 1600 mm its links reach between its ends (mirror_arm); step onto a nearer "
        "grasp point, or move tile1 in the world" in found
    )
    path.write_text(text.replace(near, near.replace("600", "1500")))  # 1.5 m: within reach
    assert load(path).name == "mar_walk_1arm"
