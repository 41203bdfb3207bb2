"""Unreachable waypoints: refused by ``check`` and ``run``, or failing within a timeout."""

from __future__ import annotations

import dataclasses
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from limbtree.robots import load_robot
from limbtree.trees.app import load
from limbtree.trees.mission.errors import MissionError
from limbtree.trees.reach import limb_reach, reach_bound

MISSION = """\
mission: reach
clock: sim
parameters:
  x_mm: {default: 600}
limbs:
  heavy: {robot: heavy_limb, base: {translation_mm: [0, 0, 100]}}
tree:
  sequence:
    - wait: {duration_s: 1}
    - sync_move:
        name: out there
        limbs: [heavy]
        frame: absolute
        waypoints:
          - {translation_mm: [500, 0, 400]}
          - {translation_mm: [$x_mm, 0, 400]}
"""


def write(tmp_path, text=MISSION):
    path = tmp_path / "reach.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def waypoints_from(declaration: str) -> str:
    """:data:`MISSION` whose sync_move takes its waypoints from parameter ``square``, declared
    by ``declaration`` (in place of ``x_mm``)."""
    return MISSION.replace("  x_mm: {default: 600}\n", declaration).replace(
        "        waypoints:\n"
        "          - {translation_mm: [500, 0, 400]}\n"
        "          - {translation_mm: [$x_mm, 0, 400]}\n",
        "        waypoints: $square\n",
    )


def only_problem(path) -> str:
    """The text of the one problem loading ``path`` finds (there must be exactly one)."""
    with pytest.raises(MissionError) as error:
        load(path)
    (problem,) = error.value.problems
    return str(problem)


def test_reachable_absolute_waypoints_pass(tmp_path):
    assert load(write(tmp_path)).name == "reach"


def test_check_names_the_file_line_and_reach_of_an_unreachable_waypoint(tmp_path):
    path = write(tmp_path, MISSION.replace("default: 600", "default: 2000"))
    text = only_problem(path)
    assert text.startswith(f"{path}:16:13: ")  # waypoint 2 itself (the node is at 10:7)
    assert 'sync_move "out there": waypoint 2 is out of reach of limb heavy' in text
    # (2000, 0, 400) mm from the base at (0, 0, 100) mm: 2022 mm; the heavy limb reaches 1400.
    assert "2022 mm from its base, 622 mm beyond the 1400 mm its links reach" in text


def test_a_waypoint_given_by_a_parameter_is_reported_where_it_is_written(tmp_path):
    # The waypoints are a parameter's value: the problem points at waypoint 2 there.
    declared = (
        "  square:\n"
        "    default:\n"
        "      - {translation_mm: [500, 0, 400]}\n"
        "      - {translation_mm: [2000, 0, 400]}\n"
    )
    path = write(tmp_path, waypoints_from(declared))
    text = only_problem(path)
    assert text.startswith(f"{path}:7:9: ")
    assert 'sync_move "out there": waypoint 2 is out of reach of limb heavy' in text
    assert text.endswith(f"(the sync_move is at {path}:13:7)")  # (others may use $square)


def test_two_nodes_using_one_unreachable_parameter_are_told_apart_by_their_places(tmp_path):
    shared = (
        MISSION.replace(
            "  x_mm: {default: 600}\n", "  far: {default: {translation_mm: [2000, 0, 400]}}\n"
        )
        .replace(
            "    - wait: {duration_s: 1}\n",
            "    - sync_move: {limbs: [heavy], frame: absolute, waypoints: [$far]}\n",
        )
        .replace("          - {translation_mm: [$x_mm, 0, 400]}\n", "          - $far\n")
    )
    with pytest.raises(MissionError) as error:
        load(write(tmp_path, shared))
    path = tmp_path / "reach.yaml"
    texts = [str(p) for p in error.value.problems]
    assert [t.split(": ")[0] for t in texts] == [f"{path}:4:18"] * 2  # the parameter's value
    assert texts[0].endswith(f"(the sync_move is at {path}:9:7)")
    assert texts[1].endswith(f"(the sync_move is at {path}:10:7)")


def test_a_set_value_out_of_reach_is_refused_too(tmp_path):
    with pytest.raises(MissionError, match="out of reach"):
        load(write(tmp_path), overrides={"x_mm": "1800"})


def test_a_set_waypoint_out_of_reach_names_the_override_and_the_node(tmp_path):
    # The whole waypoint list comes from --set: it has no line in the file, so the problem
    # stands at the override as typed and says where the node using it is.
    declared = "  square: {default: [{translation_mm: [500, 0, 400]}]}\n"
    path = write(tmp_path, waypoints_from(declared))
    override = "[{translation_mm: [500, 0, 400]}, {translation_mm: [2000, 0, 400]}]"
    with pytest.raises(MissionError) as error:
        load(path, overrides={"square": override})
    (problem,) = error.value.problems
    assert str(problem).startswith(f"--set square={override}: ")
    assert 'sync_move "out there": waypoint 2 is out of reach of limb heavy' in str(problem)
    assert str(problem).endswith(f"(the sync_move is at {path}:10:7)")


def test_the_reach_of_the_heavy_limb_is_the_sum_of_its_links():
    assert limb_reach("heavy_limb", "arm") == pytest.approx(1.4)


@pytest.mark.slow  # builds kinematic chains (roboticstoolbox)
@pytest.mark.parametrize(("robot", "limb"), [("heavy_limb", "arm"), ("moonbot_zero", "leg_1")])
def test_no_posture_reaches_further_than_the_bound_and_some_come_close(robot, limb):
    description = load_robot(robot)
    chain = description.chain(limb)
    spec = description.limb(limb)
    bound = reach_bound(description.urdf_path, spec.base_link, spec.ee_link)
    rng = np.random.default_rng(0)
    low = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    high = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    distances = [
        float(np.linalg.norm(chain.fk(rng.uniform(low, high)).position)) for _ in range(2000)
    ]
    assert max(distances) <= bound + 1e-9
    assert max(distances) >= 0.97 * bound


class ReachLink:
    """A fake limb that stops at the edge of a 500 mm reach around its base."""

    REACH_M = 0.5

    def __new__(cls, *args, **kwargs):
        from fake_limbs import FakeLink

        class _Link(FakeLink):
            def step(self, t, timeout_s=1.0):
                self.target = _within(self.target, cls.REACH_M)
                return super().step(t, timeout_s)

        return _Link(*args, **kwargs)


def _within(point, radius):
    norm = float(np.linalg.norm(point))
    return point if norm <= radius else point * (radius / norm)


def _run_past_the_reach(tmp_path, link, more: str = ""):
    """A move whose second waypoint is 900 mm out, on a limb that stops at 500 mm; the runner."""
    from fake_limbs import handles

    from limbtree.trees.builder import build_tree
    from limbtree.trees.context import MissionContext
    from limbtree.trees.mission import load_mission
    from limbtree.trees.runner import Runner, RunOptions, TickClock

    path = tmp_path / "m.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            mission: runtime_reach
            rate_hz: 50
            limbs:
              a: {robot: heavy_limb}
            tree:
              sync_move:
                limbs: [a]
                waypoints: [{translation_mm: [300, 0, 0]}, {translation_mm: [900, 0, 0]}]
                p_e_mm: 20
            """
        )
        + more
    )
    mission = load_mission(path, robots={"heavy_limb": ("arm",)})
    clock = TickClock()
    links = {"a": link((0.0, 0.0, 0.0), 0.2, clock=clock.now)}
    context = MissionContext(handles(links), clock.now)
    return Runner(
        "runtime_reach", clock, build_tree(mission.root, context), context, links, [],
        RunOptions(rate_hz=50.0, max_time_s=1000.0),
    ), links  # fmt: skip


def test_a_waypoint_met_out_of_reach_at_run_time_fails_within_the_timeout(tmp_path):
    from limbtree.trees.runner import RunOutcome

    runner, links = _run_past_the_reach(tmp_path, ReachLink, "    timeout_s: 20\n")
    assert runner.run() is RunOutcome.FAILURE
    assert runner.t == pytest.approx(20.0, abs=0.05)
    message = runner.failure_message()
    # The second waypoint is 900 mm from the start; the limb stopped at the edge, 500 mm.
    assert "timed out after 20 s short of waypoint 2/2 (from it: a 400 mm)" in message
    assert "reach" in message
    assert links["a"].commands[-1][0].value == "hold"


class IKReachLink:
    """:class:`ReachLink` whose state says ``IK_FAILED`` while its target is past the reach,
    as an agent's does (with the agent's why in ``detail``)."""

    def __new__(cls, *args, **kwargs):
        from fake_limbs import FakeLink

        from limbtree.transport.driver import Health

        class _Link(FakeLink):
            def step(self, t, timeout_s=1.0):
                beyond = float(np.linalg.norm(self.target)) > ReachLink.REACH_M + 1e-9
                self.target = _within(self.target, ReachLink.REACH_M)
                state = super().step(t, timeout_s)
                if beyond:
                    detail = {"ik_failure": "no IK solution: the target is out of reach"}
                    health = state.health | Health.IK_FAILED
                    self._state = state = dataclasses.replace(state, health=health, detail=detail)
                return state

        return _Link(*args, **kwargs)


def test_a_waypoint_met_out_of_reach_without_a_timeout_fails_once_ik_fails_long_enough(tmp_path):
    # No timeout_s: the move once waited at the edge for ever. The limb's IK failing for
    # ik_timeout (10 s by default) on end fails it, naming the waypoint and the gap.
    from limbtree.trees.runner import RunOutcome

    runner, links = _run_past_the_reach(tmp_path, IKReachLink)
    assert runner.run() is RunOutcome.FAILURE
    # IK fails from the first command past 500 mm: at about 2.5 s (0.2 m/s), then 10 s.
    assert 12.0 < runner.t < 13.5
    message = runner.failure_message()
    assert "waypoint 2/2 cannot be reached: IK failed for 10 s on end" in message
    assert "a: IK failed: no IK solution: the target is out of reach" in message
    assert "from it: a 400 mm" in message
    assert links["a"].commands[-1][0].value == "hold"


def test_ik_timeout_ends_on_the_same_tick_count_from_any_start_tick():
    # IK fails from tick 11 (0.22 s): ik_timeout 0.2 s at 50 Hz ends at tick 21 (0.42 s),
    # though 0.42 - 0.22 is 0.19999999999999998 in floats (it once ended at tick 22).
    from types import SimpleNamespace

    from limbtree.transport.driver import Health
    from limbtree.trees.behaviours.sync_move import SyncMoveBehaviour

    limb = SimpleNamespace(health=Health.IK_FAILED, faults=())
    move = SimpleNamespace(params={"ik_timeout": 0.2}, limbs=[limb], _ik_failing_since={})
    ended = [i for i in range(11, 30) if SyncMoveBehaviour._ik_failed_too_long(move, i * 0.02)]
    assert ended[0] == 21


@pytest.mark.parametrize(("dx_mm", "says"), [("2900", "2927 mm"), ("1e300", "1e+300 mm")])
def test_a_relative_move_longer_than_any_two_reachable_points_is_refused(tmp_path, dx_mm, says):
    # (after a joint_move of the limb: the move's start is not known before the run)
    relative = MISSION.replace("frame: absolute", "frame: relative").replace(
        "- wait: {duration_s: 1}", "- joint_move: {limb: heavy, posture: home}"
    )
    assert load(write(tmp_path, relative.replace("default: 600", "default: 2700"))).name
    path = write(tmp_path, relative.replace("default: 600", f"default: {dx_mm}"))
    text = only_problem(path)
    assert text.startswith(f"{path}:16:13: ")  # waypoint 2
    assert f"waypoint 2 moves limb heavy {says} from where it starts; no two points its " in text
    assert "more than 2800 mm apart (heavy_limb): shorten the move" in text


FIRST = """\
mission: first
clock: sim
limbs:
  heavy: {robot: heavy_limb, base: {translation_mm: [0, 0, 100]}}
  light: {robot: light_limb, base: {translation_mm: [1500, 0, 0]}}
tree:
  sequence:
    - wait: {duration_s: 1}
    - sync_move:
        name: far
        limbs: [heavy]
        waypoints:
          - {translation_mm: [500, 0, 400]}
          - {translation_mm: [600, 0, 400]}
"""


def test_a_limbs_first_relative_move_starts_from_its_initial_posture(tmp_path):
    # The heavy limb's home posture puts its end-effector at (600, 0, 449) mm from its base,
    # (600, 0, 549) mm in the world. Each waypoint is that start plus its offset: waypoint 2
    # at (1200, 0, 949) mm is 1470 mm from the base at (0, 0, 100) mm (the offset alone is
    # 721 mm, well within twice the 1400 mm reach).
    path = write(tmp_path, FIRST)
    text = only_problem(path)
    assert text.startswith(f"{path}:14:13: ")  # waypoint 2
    assert text.endswith(
        'sync_move "far": waypoint 2 is out of reach of limb heavy: the move is the limb\'s '
        "first, from its home posture at (600, 0, 549) mm, so the waypoint is at "
        "(1200, 0, 949) mm: 1470 mm from its base, 70 mm beyond the 1400 mm its links reach "
        "(heavy_limb), more than its settle_mm of 2 mm; shorten the offset, move the limb's "
        "base, or move the limb closer first"
    )
    # Waypoint 1 at (1100, 0, 949) mm is 1390 mm from the base; 400 mm out for the second is
    # 1312 mm.
    assert load(write(tmp_path, FIRST.replace("[600, 0, 400]", "[400, 0, 400]"))).name


EDGE = """\
mission: edge
clock: sim
limbs:
  heavy: {robot: heavy_limb, base: {translation_mm: [0, 0, 100]}}
tree:
  sync_move:
    limbs: [heavy]
    frame: absolute
    waypoints:
      - {translation_mm: [PASSED, 0, 100]}
      - {translation_mm: [1000, 0, 100]}
      - {translation_mm: [LAST, 0, 100]}
"""


@pytest.mark.parametrize(
    ("passed_mm", "last_mm", "extra", "refused"),
    [
        (1415, 1000, "", None),  # 15 mm past the reach: within p_e_mm (20), the move goes on
        (1425, 1000, "", "waypoint 1 is out of reach of limb heavy: 1425 mm from its base, 25 mm "
         "beyond the 1400 mm its links reach (heavy_limb), more than its p_e_mm of 20 mm"),
        (1000, 1404, "settle_mm: 10", None),  # the last one: within settle_mm, it succeeds
        (1000, 1404, "", "waypoint 3 is out of reach of limb heavy: 1404 mm from its base, 4 mm "
         "beyond the 1400 mm its links reach (heavy_limb), more than its settle_mm of 2 mm"),
        (1000, 1404, "loop: true", None),  # looping, the last is passed as the others
        (1000, 1404, "settle_mm: 50", None),  # settle_mm beyond p_e_mm: p_e_mm rules, 20 mm
        (1000, 1425, "settle_mm: 50", "more than its p_e_mm of 20 mm"),
        (3000, 3000, "p_e_mm: inf", None),  # no position goal: wherever the limb stops
    ],
)  # fmt: skip
def test_a_waypoint_is_refused_only_beyond_the_reach_and_what_the_move_lets_a_limb_miss_it_by(
    tmp_path, passed_mm, last_mm, extra, refused
):
    # The clamp passes a waypoint once it lies within the limb's p_e; the move succeeds once
    # the limb is within settle_mm of the last. A limb stopped at the edge of its reach, this
    # close, still goes on.
    text = EDGE.replace("PASSED", str(passed_mm)).replace("LAST", str(last_mm))
    if extra:
        text = text.replace("    frame: absolute\n", f"    frame: absolute\n    {extra}\n")
    path = write(tmp_path, text)
    if refused is None:
        assert load(path).name == "edge"
    else:
        assert refused in only_problem(path)


def _under(parent: str, text: str = FIRST) -> str:
    """``text`` with its tree's root under ``parent`` (lines, ending where its child goes)."""
    head, tree = text.split("tree:\n")
    return f"{head}tree:\n{parent}{textwrap.indent(tree, '      ')}"


def _robot(plant: str) -> str:
    """:data:`FIRST` with the heavy limb a ``robots`` entry of plant ``plant``."""
    robot = FIRST.replace("limbs:\n  heavy: {robot: heavy_limb,", "robots:\n  heavy: {robot: "
                          f"heavy_limb, plant: {plant},")  # fmt: skip
    return robot.replace("  light:", "limbs:\n  light:")


@pytest.mark.parametrize(
    "first",
    [
        # another limb moves first; the wait, a timeout and a fault that moves nothing do not
        # change where the heavy limb starts
        FIRST.replace("wait: {duration_s: 1}", "joint_move: {limb: light, posture: home}"),
        _under("  timeout:\n    duration_s: 60\n    child:\n"),
        FIRST + "faults:\n  - {at_s: 0, limb: heavy, kind: slowdown, factor: 0.5}\n",
        FIRST + "faults:\n  - {at_s: 0, limb: light, kind: power_off}\n",
        # a kinematic robot of `robots`, as a lone limb of `limbs`
        _robot("kinematic"),
    ],
)
def test_what_moves_no_limb_before_it_leaves_the_start_known(tmp_path, first):
    assert "waypoint 2 is out of reach of limb heavy" in only_problem(write(tmp_path, first))


@pytest.mark.parametrize(
    "first",
    [
        # a node before it moves the limb
        FIRST.replace("wait: {duration_s: 1}", "joint_move: {limb: heavy, posture: home}"),
        # a node above may start it again, or first after a later node moved the limb
        _under("  repeat:\n    times: 2\n    child:\n"),
        _under("  retry:\n    times: 2\n    child:\n"),
        _under("  until_success:\n    child:\n"),
        _under("  sequence:\n    memory: false\n    children:\n      -\n"),
        _under("  parallel:\n    synchronise: false\n    children:\n      -\n"),
        # a mujoco robot's base floats (one served by its own agent: a simulated one takes no
        # sync_move); a real limb starts where it is; a noisy one where its noise says
        _robot("mujoco, agent: 'tcp://127.0.0.1:5555'"),
        FIRST.replace("heavy_limb,", "heavy_limb, agent: 'tcp://127.0.0.1:5555',"),
        FIRST.replace("heavy_limb,", "heavy_limb, joint_noise_deg: 0.01,"),
        # its joints fall while its power is off; drawn faults differ with the seed
        FIRST + "faults:\n  - {at_s: 30, limb: heavy, kind: power_off, duration_s: 1}\n",
        FIRST + "random_faults: {count: 1, kinds: [slowdown], limbs: [light], between_s: [1, 2], "
        "duration_s: [1, 2]}\n",
    ],
)
def test_a_relative_move_whose_start_may_differ_is_left_to_the_run(tmp_path, first):
    assert load(write(tmp_path, first)).name == "first"


ALIGN = """\
mission: far_align
clock: sim
rate_hz: 30
parameters:
  x_mm: {default: 1500}
limbs:
  arm: {robot: moonbot_limb_v2, agent: sim}
world:
  wheel: {module: moonbot_wheel_v2, pose: {translation_mm: [$x_mm, -459, 121]}}
tree:
  align: {limb: arm, target: wheel/grasp}
"""


def test_check_names_the_line_and_reach_of_an_align_goal_no_limb_can_bring_closer(tmp_path):
    path = write(tmp_path, ALIGN)
    text = only_problem(path)
    assert text.startswith(f"{path}:11:3: ")  # the align node
    # The grasp point at (1500, -459, 221) mm: 1584 mm from the base; Limb V2 reaches 1500.
    assert 'align "Align": its goal (wheel/grasp) is out of reach of limb arm' in text
    assert "1584 mm from its base, 84 mm beyond the 1500 mm its links reach" in text
    # Its offset counts: 150 mm back along the approach, 100 mm closer to the base.
    offset = ALIGN.replace("target: wheel/grasp}", "target: wheel/grasp, offset: "
                           "{translation_mm: [0, 0, -150]}}")  # fmt: skip
    path = write(tmp_path, offset.replace("default: 1500", "default: 1800"))
    text = only_problem(path)
    # At the node, not the offset: the grasp point itself is out of reach (else the limb
    # could carry the module), so the offset is not what puts the goal there.
    assert text.startswith(f"{path}:11:3: ")
    assert "wheel/grasp with its offset" in text
    assert load(write(tmp_path, ALIGN.replace("default: 1500", "default: 1300"))).name


def test_an_align_goal_on_a_module_a_limb_can_carry_is_left_to_the_run(tmp_path):
    # The wheel's grasp point is within reach: the limb may grasp and carry it, so a goal
    # far from it (its offset) is only known at run time.
    far_offset = ALIGN.replace("default: 1500", "default: 800").replace(
        "target: wheel/grasp}", "target: wheel/grasp, offset: {translation_mm: [0, 0, -3000]}}"
    )
    assert load(write(tmp_path, far_offset)).name == "far_align"


@pytest.mark.parametrize("version", [1, 2])
def test_an_align_goal_met_out_of_reach_at_run_time_fails_once_it_stalls(tmp_path, version):
    # Within the links' bound (1500 mm), beyond what the arm's joints reach: at run time the
    # error stops shrinking about 510 mm short, and the node fails 10 s later.
    from limbtree.trees.cli import main

    # (its timeout only bounds this test, should the stall go unnoticed)
    at_1400 = ALIGN.replace("default: 1500", "default: 1400")
    bounded = f"target: wheel/grasp, timeout_s: 60, version: {version}}}"
    path = write(tmp_path, at_1400.replace("target: wheel/grasp}", bounded))
    record = tmp_path / "record"
    assert main(["run", str(path), "--headless", "--record", str(record)]) == 1
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "FAILURE"
    assert summary["sim_time_s"] < 40.0  # (once, it ran for ever)
    assert summary["failure"].startswith("Align: alignment stalled: Δd ")
    assert "reach" in summary["failure"]
    # (named as the mission writes it: a reviewer was sent to look for stall_time_s)
    assert "(the stall time is 10 s)" in summary["failure"]
    assert "stall_time_s" not in summary["failure"] and "stall_timeout_s" in summary["failure"]


LIBRARY = """\
subtrees:
  reach_out:
    parameters:
      x_mm: 600
    tree:
      sequence:
        - wait: {duration_s: 1}
        - sync_move:
            limbs: [heavy]
            frame: absolute
            waypoints:
              - {translation_mm: [$x_mm, 0, 400]}
"""

USES = """\
mission: uses
include: [library.yaml]
limbs:
  heavy: {robot: heavy_limb}
tree:
  sequence:
    - {subtree: reach_out, with: {x_mm: 1500}}
    - {subtree: reach_out, with: {x_mm: 700}}
    - {subtree: reach_out, with: {x_mm: 1500}}
    - {subtree: reach_out, with: {x_mm: 1600}}
"""


def test_a_waypoint_out_of_reach_in_a_subtree_names_the_uses_that_give_it(tmp_path):
    # The subtree's lines are the same for every use: the problem says which uses put the
    # waypoint out of reach (two uses with one value: one problem naming both).
    (tmp_path / "library.yaml").write_text(LIBRARY)
    path = tmp_path / "uses.yaml"
    path.write_text(USES)
    with pytest.raises(MissionError) as raised:
        load(path)
    texts = [str(problem) for problem in raised.value.problems]
    assert len(texts) == 2, texts
    assert all(text.startswith(f"{tmp_path / 'library.yaml'}:12:17: ") for text in texts)
    assert "1552 mm from its base" in texts[0]
    assert texts[0].endswith(f"(subtree reach_out given at {path}:7:7 and 9:7)")
    assert "1649 mm from its base" in texts[1]
    assert texts[1].endswith(f"(subtree reach_out given at {path}:10:7)")


FLOATING = """\
mission: floating
clock: sim
world:
  tile0: {module: mirror_tile, pose: {translation_mm: [3000, 0, -25]}}
robots:
  arm: {robot: mirror_arm, plant: mujoco, agent: 'tcp://127.0.0.1:5555'}
tree:
  sync_move:
    limbs: [arm]
    frame: absolute
    waypoints: [{translation_mm: [3580, 0, 40], rotation_deg: [180, 0, 0]}]
"""


def test_a_robot_whose_base_floats_is_not_measured_from_the_world_origin(tmp_path):
    # On a mujoco plant the base is where its latched foot puts it (by the tile, 3 m out, on
    # the agent's computer), not a declared pose: a waypoint 3.58 m from the origin may be
    # 0.58 m from the tile. (A simulated mujoco robot takes no sync_move: test_targets.py.)
    assert load(write(tmp_path, FLOATING)).name == "floating"


PER_LIMB = """\
mission: per_limb
limbs:
  heavy: {robot: heavy_limb}
  light: {robot: light_limb, base: {translation_mm: [1500, 0, 0]}}
tree:
  sync_move:
    limbs: [heavy, light]
    frame: absolute
    waypoints:
      - heavy:
          translation_mm: [600, 0, 400]
        light:
          translation_mm: [3000, 0, 400]
"""


def test_a_waypoint_written_per_limb_is_reported_at_the_limb_out_of_reach(tmp_path):
    path = write(tmp_path, PER_LIMB)
    text = only_problem(path)
    assert text.startswith(f"{path}:13:11: ")  # light's pose, not the waypoint's first line
    assert "waypoint 1 is out of reach of limb light" in text


def test_the_docs_absolute_waypoint_example_runs_to_success(tmp_path):
    # (a reviewer copied the docs' first absolute example: its identity orientation was out
    # of the heavy limb's joint limits, and the move failed after its IK timeout)
    from limbtree.trees.cli import main

    docs = (Path(__file__).parent.parent / "docs" / "missions.md").read_text()
    block = docs.split("both tools pointing down:\n\n```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "absolute.yaml"
    path.write_text(
        "mission: absolute\nlimbs:\n  heavy: {robot: heavy_limb}\n"
        "  light: {robot: light_limb, base: {translation_mm: [0, 600, 0], "
        "rotation_deg: [0, 0, 90]}}\ntree:\n" + textwrap.indent(block, "  ")
    )
    record = tmp_path / "record"
    assert main(["run", str(path), "--headless", "--record", str(record)]) == 0
    assert json.loads((record / "summary.json").read_text())["outcome"] == "SUCCESS"


RECOVER = """\
mission: recover
clock: sim
limbs:
  arm: {robot: light_limb}
  heavy: {robot: heavy_limb, base: {translation_mm: [0, 1500, 0]}}
tree:
  sequence:
    - joint_move: {limb: arm, posture: safe}
    - sync_move: {limbs: [heavy], waypoints: [{translation_mm: [0, 0, 20]}]}
    - recover_to_last_valid: {limbs: [arm, heavy]}
"""


def test_a_recover_to_last_valid_no_move_came_before_is_refused_naming_the_limb(tmp_path):
    # It passed check and failed at run time ("no last valid command for arm"): a joint
    # move leaves no last valid command, and nothing else moved the arm before it.
    message = only_problem(write(tmp_path, RECOVER))
    assert message.startswith(f"{tmp_path / 'reach.yaml'}:10:7: ")
    assert 'recover_to_last_valid "Recover to last valid": no move before it leaves arm ' in message
    assert "so it always fails; place it after a sync_move over these limbs" in message


def test_a_recover_to_last_valid_after_a_move_or_run_again_passes(tmp_path):
    moved = RECOVER.replace("sync_move: {limbs: [heavy]", "sync_move: {limbs: [heavy, arm]")
    assert load(write(tmp_path, moved)).name == "recover"
    # Under a repeat, a later move may have run before it: not certain, not refused.
    again = RECOVER.replace(
        "  sequence:\n", "  repeat:\n    times: 2\n    child:\n     sequence:\n"
    ).replace("    - ", "      - ")
    assert load(write(tmp_path, again)).name == "recover"
