"""Every way a mission file can be wrong is reported as ``file:line:column: what is wrong``."""

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from limbtree.trees.mission import MissionError, Problem, check_mission, load_mission

MISSIONS = Path(__file__).parent / "missions"
ROBOTS = {
    "heavy_limb": ("arm",),
    "light_limb": ("arm",),
    "moonbot_zero": ("leg_0", "leg_1", "leg_2", "leg_3"),
}
HEADER = """\
mission: m
limbs:
  left: {robot: heavy_limb}
  right: {robot: light_limb}
"""
Check = Callable[..., list[str]]


@pytest.fixture
def check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Check:
    """Write ``m.yaml`` (HEADER first unless told) and return its problems as text lines."""
    monkeypatch.chdir(tmp_path)

    def run(text: str, *, header: bool = True, **kwargs: object) -> list[str]:
        body = textwrap.dedent(text)
        Path("m.yaml").write_text(HEADER + body if header else body)
        return [str(p) for p in check_mission("m.yaml", robots=ROBOTS, **kwargs)]  # type: ignore[arg-type]

    return run


def only(problems: list[str]) -> str:
    assert len(problems) == 1, problems
    return problems[0]


# The file as a whole ---------------------------------------------------------------------


def test_yaml_syntax_error_is_reported_where_the_parser_stopped(check):
    message = only(check("mission: m\ntree: {wait: {duration_s: 1}\nother: 2\n", header=False))
    assert message == (
        "m.yaml:3:1: YAML syntax error: expected ',' or '}', but got '<scalar>' "
        "(while parsing a flow mapping that starts at line 2, column 7)"
    )


def test_an_unclosed_collection_says_where_it_starts_not_only_the_end_of_the_file(check):
    message = only(check("mission: m\ntree:\n  wait: {duration_s: 1\n", header=False))
    assert message == (
        "m.yaml:4:1: YAML syntax error: expected ',' or '}', but got '<stream end>' "
        "(while parsing a flow mapping that starts at line 3, column 9)"
    )
    message = only(check("mission: m\ntree: [a, b\n", header=False))
    assert message.endswith("(while parsing a flow sequence that starts at line 2, column 7)")


def test_tab_indentation_is_a_syntax_error_with_its_place_and_fix(check):
    message = only(check("mission: m\ntree:\n\twait\n", header=False))
    assert message == (
        "m.yaml:3:1: YAML syntax error: found character '\\t' that cannot start any token "
        "(while scanning for the next token): indent with spaces, not tabs"
    )


def test_a_missing_mission_file_is_one_problem(tmp_path):
    (problem,) = check_mission(tmp_path / "nope.yaml", robots=ROBOTS)
    assert problem.location.line == 1
    assert "cannot read" in problem.message and "No such file" in problem.message


def test_an_empty_file_needs_mission_and_tree(check):
    assert only(check("# nothing\n", header=False)) == (
        "m.yaml:1:1: the mission file is empty; it needs mission and tree"
    )


def test_mission_and_tree_are_required(check):
    assert check("description: nothing\n", header=False) == [
        "m.yaml:1:1: the mission file needs mission",
        "m.yaml:1:1: the mission file needs tree: the behaviour tree to run",
    ]


def test_a_subtree_library_given_as_a_mission_is_named_as_one(check):
    # missions/subtrees/six_limbs.yaml given to limbtree tree/check/run: not "needs mission"
    library = "description: a library\nsubtrees:\n  hop:\n    tree: {wait: {duration_s: 1}}\n"
    message = only(check(library, header=False))
    assert message.startswith("m.yaml:1:1: this file defines subtrees but no mission and no tree")
    assert "include" in message


def test_unknown_top_level_key_lists_the_valid_ones(check):
    message = only(check("tree: {wait: {duration_s: 1}}\ntreee: 1\n"))
    assert message.startswith("m.yaml:6:1: unknown key treee; did you mean tree? valid keys: ")
    keys = (
        "mission, description, clock, rate_hz, gravity_g, timestep_ms, max_tick_s, parameters, "
        "robots, limbs, faults"
    )
    assert keys in message


def test_top_level_key_with_the_wrong_unit_is_pointed_at_the_right_one(check):
    message = only(check("rate_khz: 5\ntree: {wait: {duration_s: 1}}\n"))
    assert message.startswith("m.yaml:5:1: unknown key rate_khz; did you mean rate_hz (hertz)?")


def test_duplicate_keys_are_errors(check):
    message = only(check("tree: {wait: {duration_s: 1, duration_s: 2}}\n"))
    assert message == "m.yaml:5:30: duplicate key duration_s (first at line 5)"


def test_header_values_are_checked(check):
    problems = check("clock: wall\nrate_hz: 0\ntree: {wait: {duration_s: 1}}\n")
    assert problems == [
        "m.yaml:5:8: clock: unknown value wall; valid values: sim, real",
        "m.yaml:6:10: rate_hz must be >= 0.0166667; got 0",
    ]
    # a tick is at most 60 s: an agent's step advances its plant no more
    slow = check("rate_hz: 0.01\ntree: {wait: {duration_s: 1}}\n")
    assert slow == ["m.yaml:5:10: rate_hz must be >= 0.0166667; got 0.01"]


def test_many_problems_are_reported_in_one_pass_in_file_order(check):
    problems = check(
        """\
        clock: moon
        tree:
          sequence:
            - sync_move: {limbs: [middle], waypoints: []}
            - wait: {duration_s: -1}
            - jump
        """
    )
    assert [p.split(": ")[0] for p in problems] == [
        "m.yaml:5:8",
        "m.yaml:8:27",
        "m.yaml:8:47",
        "m.yaml:9:26",
        "m.yaml:10:7",
    ]


def test_mission_error_lists_every_problem_one_per_line(check):
    check("tree: {sequence: [jump, {wait: {duration_s: 0}}]}\n")
    with pytest.raises(MissionError) as caught:
        load_mission("m.yaml", robots=ROBOTS)
    error = caught.value
    assert len(error.problems) == 2
    assert all(isinstance(p, Problem) for p in error.problems)
    lines = str(error).splitlines()
    assert lines[0].startswith("m.yaml:5:19: unknown node type jump")
    assert lines[1] == "m.yaml:5:45: duration_s must be > 0; got 0"


# Limbs -------------------------------------------------------------------------------------


def test_unknown_robot_lists_the_valid_robots(check):
    text = "mission: m\nlimbs: {a: {robot: heavy_limp}}\ntree: {wait: {duration_s: 1}}\n"
    assert only(check(text, header=False)) == (
        "m.yaml:2:20: unknown robot heavy_limp; did you mean heavy_limb? "
        "valid robots: heavy_limb, light_limb, moonbot_zero"
    )


def test_an_unknown_robot_like_none_says_where_robots_are_looked_for(check, monkeypatch):
    # An engineer's robot on LIMBTREE_ROBOT_PATH where the agent runs, not where the mission
    # is checked: the message listed the shipped robots only.
    monkeypatch.delenv("LIMBTREE_ROBOT_PATH", raising=False)
    text = "mission: m\nlimbs: {a: {robot: pan_tilt}}\ntree: {wait: {duration_s: 1}}\n"
    assert only(check(text, header=False)) == (
        "m.yaml:2:20: unknown robot pan_tilt; valid robots: heavy_limb, light_limb, "
        "moonbot_zero; a robot of your own must be in a directory on LIMBTREE_ROBOT_PATH in "
        "the environment of this command (it is not set; docs/robots.md, 'Adding your own "
        "robot')"
    )


def test_unknown_limb_chain_lists_the_robots_limbs(check):
    text = "mission: m\nlimbs:\n  a: {robot: moonbot_zero, limb: leg_9}\ntree: wait_1\n"
    text = text.replace("wait_1", "{wait: {duration_s: 1}}")
    message = only(check(text, header=False))
    assert message.startswith("m.yaml:3:34: unknown limb leg_9; did you mean leg_")
    assert message.endswith("limbs of moonbot_zero: leg_0, leg_1, leg_2, leg_3")


def test_a_limb_needs_a_robot(check):
    text = "mission: m\nlimbs:\n  a: {agent: sim}\ntree: {wait: {duration_s: 1}}\n"
    assert only(check(text, header=False)) == "m.yaml:3:3: limb a needs robot"


def test_duplicate_limb_names_are_errors(check):
    text = "tree: {wait: {duration_s: 1}}\n"
    problems = check(HEADER + "  left: {robot: light_limb}\n" + text, header=False)
    assert only(problems) == "m.yaml:5:3: duplicate limb left (first at line 3)"


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        ("udp://host:5000", "must be sim, tcp://HOST:PORT or ipc://PATH"),
        ("tcp://host", "must be sim, tcp://HOST:PORT or ipc://PATH"),
        ("tcp://*:5000", "* only binds"),
        ("tcp://host:65535", "port must be in 1..65534"),
        ("tcp://host:0", "port must be in 1..65534"),
        ("simulated", "must be sim, tcp://HOST:PORT or ipc://PATH"),
    ],
)
def test_bad_agent_endpoints_are_errors(check, agent, words):
    text = f'mission: m\nlimbs:\n  a: {{robot: heavy_limb, agent: "{agent}"}}\n'
    message = only(check(text + "tree: {wait: {duration_s: 1}}\n", header=False))
    assert message.startswith("m.yaml:3:33: agent ")
    assert words in message


@pytest.mark.parametrize(
    "agent", ["tcp://10.0.0.2:7000", "tcp://[::1]:7000", "ipc:///tmp/a", "sim"]
)
def test_good_agent_endpoints_pass(check, agent):
    text = f'mission: m\nlimbs:\n  a: {{robot: heavy_limb, agent: "{agent}"}}\n'
    assert check(text + "tree: {wait: {duration_s: 1}}\n", header=False) == []


def test_bad_base_pose_names_the_key_and_its_unit(check):
    text = "mission: m\nlimbs:\n  a: {robot: heavy_limb, base: {translation_m: [0, 0, 1]}}\n"
    message = only(check(text + "tree: {wait: {duration_s: 1}}\n", header=False))
    assert message.startswith(
        "m.yaml:3:33: unknown key translation_m; did you mean translation_mm (millimetres)?"
    )


def test_a_vibration_damping_outside_0_1_is_refused_with_its_bounds(check):
    text = "mission: m\nlimbs:\n  a: {robot: heavy_limb, vibration_damping: 1.5}\n"
    message = only(check(text + "tree: {wait: {duration_s: 1}}\n", header=False))
    assert message.startswith("m.yaml:3:") and "vibration_damping" in message
    assert "in (0, 1)" in message


# Tree nodes ----------------------------------------------------------------------------------


def test_unknown_node_type_lists_the_valid_types(check):
    message = only(check("tree:\n  sequence:\n    - sync_mvoe: {limbs: [left]}\n"))
    assert message.startswith("m.yaml:7:7: unknown node type sync_mvoe; did you mean sync_move?")
    assert "valid node types: sequence, fallback, parallel, repeat" in message
    assert (
        "operator_gate, align, grasp, release, walk_step, impedance_move, latch, unlatch, "
        "climb_step, base_adjust, grip_guard, selector, subtree" in message
    )


def test_unknown_bare_node_type_is_reported_at_the_word(check):
    message = only(check("tree: {sequence: [wiat]}\n"))
    assert message.startswith("m.yaml:5:19: unknown node type wiat; did you mean wait?")


def test_unknown_parameter_with_the_wrong_unit_suggests_the_right_one(check):
    text = "tree:\n  sync_move:\n    limbs: [left]\n    waypoints: [{}]\n    p_e_cm: 2\n"
    message = only(check(text))
    assert message.startswith(
        "m.yaml:9:5: unknown key p_e_cm; did you mean p_e_mm (millimetres)? valid keys: limbs"
    )


def test_unknown_parameter_without_a_unit_suggests_the_key_with_its_unit(check):
    message = only(check("tree: {wait: {duration: 2}}\n"))
    assert message.startswith(
        "m.yaml:5:15: unknown key duration; did you mean duration_s (seconds)?"
    )


def test_unknown_parameter_close_to_a_valid_one_gets_a_hint(check):
    message = only(check("tree: {sequence: {memmory: false, children: [operator_gate]}}\n")[:1])
    assert message.startswith("m.yaml:5:19: unknown key memmory; did you mean memory?")
    assert "valid keys: memory, name, children" in message


def test_missing_required_parameter_is_reported_at_the_node(check):
    assert (
        only(check("tree:\n  sync_move: {limbs: [left]}\n"))
        == "m.yaml:6:3: sync_move needs waypoints"
    )


def test_a_bare_node_type_still_needs_its_required_parameters(check):
    assert only(check("tree: operator_gate\n")) == "m.yaml:5:7: operator_gate needs prompt"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("monotonic: maybe", "monotonic must be true or false; got text 'maybe'"),
        ("monotonic: 1", "monotonic must be true or false; got integer 1"),
        ("loop: [true]", "loop must be true or false; got a list"),
        ("p_e_mm: fast", "p_e_mm must be a number in millimetres > 0 or inf; got text 'fast'"),
        ("p_e_mm: true", "p_e_mm must be a number in millimetres > 0 or inf; got boolean true"),
        ("frame: 3", "frame must be one of relative, absolute; got integer 3"),
        ("settle_mm: .nan", "settle_mm must be a number in millimetres > 0; got number .nan"),
    ],
)
def test_wrong_types_say_what_was_expected(check, value, expected):
    text = f"tree:\n  sync_move:\n    limbs: [left]\n    waypoints: [{{}}]\n    {value}\n"
    message = only(check(text))
    assert message.startswith("m.yaml:9:")
    assert message.endswith(expected)


def test_a_limb_list_must_be_a_list(check):
    message = only(check("tree:\n  sync_move: {limbs: left, waypoints: [{}]}\n"))
    assert message == (
        "m.yaml:6:22: limbs must be a list of declared limbs; got text 'left' (a list of one "
        "limb is [left])"
    )


def test_a_waypoint_written_as_a_position_list_says_how_to_write_it(check):
    message = only(check("tree:\n  sync_move: {limbs: [left], waypoints: [[100, 0, 300]]}\n"))
    assert message == (
        "m.yaml:6:42: waypoints 1 must be a pose {translation_mm: [x, y, z], rotation_deg: "
        "[rx, ry, rz]}, or a map limb -> pose; got a list (a position alone is "
        "{translation_mm: [x, y, z]})"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("p_e_mm: 0", "p_e_mm must be > 0; got 0"),
        ("r_e_deg: -5", "r_e_deg must be > 0; got -5"),
        ("norm: 0.5", "norm must be >= 1; got 0.5"),
        ("max_speed_mm_s: 0", "max_speed_mm_s must be > 0; got 0"),
        (
            "max_speed_mm_s: inf",
            "max_speed_mm_s must be a number in millimetres per second > 0; got inf",
        ),
        ("stale_timeout_s: -inf", "stale_timeout_s must be a number in seconds > 0; got -inf"),
    ],
)
def test_out_of_range_numbers_name_the_bounds(check, value, expected):
    text = f"tree:\n  sync_move:\n    limbs: [left]\n    waypoints: [{{}}]\n    {value}\n"
    message = only(check(text))
    assert message.startswith("m.yaml:9:")
    assert message.endswith(expected)


def test_inf_is_allowed_where_documented(check):
    text = "tree:\n  sync_move: {limbs: [left], waypoints: [{}], p_e_mm: inf, r_e_deg: .inf}\n"
    assert check(text) == []
    text = text.replace("p_e_mm: inf", "p_e_mm: Infinity, norm: inf")
    assert check(text) == []


def test_decorator_times_must_be_whole_numbers_or_forever(check):
    problems = check(
        """\
        tree:
          sequence:
            - repeat: {times: 0, child: {wait: {duration_s: 1}}}
            - retry: {times: forever, child: {wait: {duration_s: 1}}}
            - until_success: {times: 2.5, child: {wait: {duration_s: 1}}}
        """
    )
    assert problems == [
        "m.yaml:7:23: times must be >= 1; got 0",
        "m.yaml:8:22: times must be a whole number >= 1; got text 'forever'",
        "m.yaml:9:30: times must be a whole number >= 1; got number 2.5",
    ]


def test_choices_get_a_did_you_mean(check):
    text = "tree:\n  sync_move: {limbs: [left], waypoints: [{}], recovery: last_vaild}\n"
    assert only(check(text)) == (
        "m.yaml:6:57: recovery: unknown value last_vaild; did you mean last_valid? "
        "valid values: last_valid, nearest, restart, none"
    )


def test_unknown_limbs_list_the_declared_limbs(check):
    message = only(check("tree:\n  sync_move: {limbs: [left, rigth], waypoints: [{}]}\n"))
    assert message == (
        "m.yaml:6:29: limbs: unknown limb rigth; did you mean right? declared limbs: left, right"
    )


def test_a_limb_listed_twice_is_an_error(check):
    message = only(check("tree:\n  sync_move: {limbs: [left, left], waypoints: [{}]}\n"))
    assert message == "m.yaml:6:29: limbs: limb left is listed twice"


def test_joint_move_needs_a_declared_limb(check):
    message = only(check("tree: {joint_move: {limb: middle, posture: home}}\n"))
    assert message.startswith("m.yaml:5:27: limb: unknown limb middle; declared limbs: left, right")


def test_empty_waypoints_are_an_error(check):
    message = only(check("tree:\n  sync_move: {limbs: [left], waypoints: []}\n"))
    assert message == "m.yaml:6:41: waypoints must have at least one waypoint"


def test_a_per_limb_waypoint_must_cover_exactly_the_nodes_limbs(check):
    problems = check(
        """\
        tree:
          sync_move:
            limbs: [left, right]
            waypoints:
              - left: {translation_mm: [1, 0, 0]}
              - {left: {}, right: {}, middle: {}}
        """
    )
    assert problems == [
        "m.yaml:9:9: waypoints 1 gives no value for limb right "
        "(give every limb of the node, or one value for all)",
        "m.yaml:10:31: waypoints 2: unknown limb middle; this node's limbs: left, right",
    ]


def test_a_one_limb_robots_name_stands_for_its_limb_in_a_per_limb_map_as_in_limbs(check):
    robots = "mission: m\nrobots:\n  big: {robot: heavy_limb}\n  small: {robot: light_limb}\n"
    text = (
        "tree:\n  sync_move: {limbs: [big, small], waypoints: [{big.arm: {}, small: {}}],"
        " p_e_mm: {big: 10, small.arm: 5}}\n"
    )
    assert check(robots + text, header=False) == []
    twice = text.replace("{big.arm: {}, small: {}}", "{big.arm: {}, small: {}, small.arm: {}}")
    assert only(check(robots + twice, header=False)) == (
        "m.yaml:6:73: waypoints 1: limb small.arm is given twice (as small and small.arm)"
    )


def test_a_waypoint_for_a_limb_the_node_does_not_move_is_an_error(check):
    text = "tree:\n  sync_move: {limbs: [left], waypoints: [{left: {}, right: {}}]}\n"
    assert only(check(text)) == (
        "m.yaml:6:53: waypoints 1: limb right is not one of this node's limbs (left)"
    )


def test_pose_vectors_need_three_numbers(check):
    text = "tree:\n  sync_move: {limbs: [left], waypoints: [{rotation_deg: [0, 90]}]}\n"
    assert only(check(text)) == (
        "m.yaml:6:57: rotation_deg must be a list of 3 numbers in degrees; got 2 numbers"
    )


def test_per_limb_radius_must_cover_every_limb(check):
    text = "tree:\n  sync_move: {limbs: [left, right], waypoints: [{}], p_e_mm: {left: 5}}\n"
    message = only(check(text))
    assert message.startswith("m.yaml:6:62: p_e_mm gives no value for limb right")


def test_velocity_profile_segments_are_checked(check):
    problems = check(
        """\
        tree:
          velocity_move:
            limbs: [left]
            profile:
              - {duration_s: 2, velocity_mm_s: [0, 0, 20]}
              - {duration_s: 0, velocity_mm_s: [0, 0]}
              - {velocity_mm_s: [0, 0, 1]}
        """
    )
    assert problems == [
        "m.yaml:10:22: duration_s must be > 0; got 0",
        "m.yaml:10:40: velocity_mm_s must be a list of 3 numbers in millimetres per second; "
        "got 2 numbers",
        "m.yaml:11:9: profile segment 3 needs duration_s",
    ]


def test_postures_are_names_or_joint_angles(check):
    problems = check(
        """\
        tree:
          sequence:
            - joint_sync_move: {limbs: [left, right], postures: [home, {left: {q: [1]}}]}
            - joint_move: {limb: left, posture: {q_deg: []}}
        """
    )
    assert len(problems) == 3
    assert problems[0].startswith("m.yaml:7:64: postures 2 gives no value for limb right")
    assert problems[1].startswith("m.yaml:7:72: unknown key q; did you mean q_deg (degrees)?")
    assert problems[2] == "m.yaml:8:49: q_deg must list at least one joint angle"


def test_decorators_take_exactly_one_child_under_child(check):
    problems = check(
        """\
        tree:
          sequence:
            - inverter: {children: [wait_a, wait_b]}
            - timeout: {duration_s: 5}
            - repeat: {child: [{wait: {duration_s: 1}}]}
            - force_success
        """
    )
    assert problems == [
        "m.yaml:7:18: inverter is a decorator: it takes exactly one child, under child "
        "(wrap several in a sequence)",
        "m.yaml:8:7: timeout needs child: exactly one node",
        "m.yaml:9:23: repeat is a decorator: child is one node, not a list "
        "(wrap several in a sequence)",
        "m.yaml:10:7: force_success needs child: exactly one node",
    ]


def test_composites_need_children_and_leaves_take_none(check):
    problems = check(
        """\
        tree:
          sequence:
            - fallback: {children: []}
            - parallel: {child: {wait: {duration_s: 1}}}
            - wait: {duration_s: 1, children: [wait]}
        """
    )
    assert problems == [
        "m.yaml:7:28: fallback needs at least 1 child; it has 0",
        "m.yaml:8:18: parallel is a composite: its children go under children, a list",
        "m.yaml:9:29: wait is a leaf: it takes no children",
    ]


def test_a_node_is_a_map_with_a_single_type_key(check):
    problems = check("tree:\n  wait: {duration_s: 1}\n  name: pause\n")
    assert only(problems).startswith("m.yaml:6:3: a tree node is a map with one key, its type")
    assert "found keys: wait, name" in problems[0]


def test_a_node_cannot_be_a_number(check):
    assert only(check("tree: {sequence: [5]}\n")) == (
        "m.yaml:5:19: a tree node must be a node type or a map {TYPE: {...}}; got integer 5"
    )


def test_parallel_selected_names_exactly_one_child_each(check):
    problems = check(
        """\
        tree:
          sequence:
            - parallel:
                policy: selected
                children: [{wait: {duration_s: 1}}]
            - parallel:
                policy: selected
                selected: [Wait, Gone]
                children: [{wait: {duration_s: 1}}]
            - parallel: {policy: one, selected: [Wait], children: [{wait: {duration_s: 1}}]}
        """
    )
    assert problems == [
        "m.yaml:8:9: policy selected needs selected: the names of the children to wait for",
        "m.yaml:12:9: selected: no child named Gone; children: Wait",
        "m.yaml:14:31: selected applies only to policy: selected",
    ]


# Faults --------------------------------------------------------------------------------------


def test_fault_fields_are_checked(check):
    problems = check(
        """\
        faults:
          - {at_s: -1, limb: lefft, kind: melt}
          - {at_s: 1, limb: left, kind: blockage, factor: 0.5, joints: [1, 1]}
          - {at_s: 1, limb: left, kind: slowdown}
          - {at_s: 1, limb: left, kind: slowdown, factor: 1.5}
        tree: {wait: {duration_s: 1}}
        """
    )
    assert problems == [
        "m.yaml:6:12: at_s must be >= 0; got -1",
        "m.yaml:6:22: limb: unknown limb lefft; did you mean left? declared limbs: left, right",
        "m.yaml:6:35: kind: unknown value melt; valid values: "
        "blockage, slowdown, disassembly, power_off, ik_error",
        "m.yaml:7:43: factor applies only to slowdown faults",
        "m.yaml:7:68: joints: 1 is negative or repeated",
        "m.yaml:8:5: a slowdown fault needs factor (in (0, 1))",
        "m.yaml:9:51: factor must be in (0, 1); got 1.5",
    ]


def test_random_fault_groups_are_checked(check):
    problems = check(
        """\
        random_faults:
          count: 0
          kinds: {slowdown: 1, melt: 2}
          between_s: [10, 5]
          duration_s: [1]
          limbs: [middle]
        tree: {wait: {duration_s: 1}}
        """
    )
    assert problems == [
        "m.yaml:6:10: count must be in 1..10000; got 0",
        "m.yaml:7:24: kinds: unknown value melt; valid values: "
        "blockage, slowdown, disassembly, power_off, ik_error",
        "m.yaml:8:14: between_s: low must not exceed high",
        "m.yaml:9:15: duration_s must be [low, high], each a number in seconds > 0, low <= high;"
        " got a list",
        "m.yaml:10:11: limbs: unknown limb middle; declared limbs: left, right",
    ]


# Parameters and overrides --------------------------------------------------------------------


PARAMETERS = """\
parameters:
  speed_mm_s: 50
  limbs_moved: [left]
tree:
  sync_move:
    limbs: $limbs_moved
    waypoints: [{}]
    max_speed_mm_s: $speed_mm_s
"""


def test_an_override_of_the_wrong_type_is_reported_where_it_is_used(check):
    message = only(check(PARAMETERS, overrides={"speed_mm_s": "fast"}))
    assert message == (
        "m.yaml:12:21: max_speed_mm_s must be a number in millimetres per second > 0; "
        "got text 'fast' (parameter speed_mm_s = 'fast' from --set)"
    )


def test_an_override_out_of_range_names_the_parameter(check):
    message = only(check(PARAMETERS, overrides={"limbs_moved": "[left, middle]"}))
    assert message == (
        "m.yaml:10:12: limbs: unknown limb middle; declared limbs: left, right "
        "(parameter limbs_moved = '[left, middle]' from --set)"
    )


def test_an_unknown_override_lists_the_declared_parameters(check):
    message = only(check(PARAMETERS, overrides={"speed": "3"}))
    assert message == (
        "--set speed=3: unknown parameter speed; did you mean speed_mm_s? "
        "declared parameters: speed_mm_s, limbs_moved"
    )


def test_spaces_around_an_overrides_name_are_dropped(check):
    # (as typed: --set 'speed_mm_s = 40'; the value's leading space is fine for YAML)
    assert check(PARAMETERS, overrides={"speed_mm_s ": " 40"}) == []
    assert only(check(PARAMETERS, overrides={" speed_mm_s ": " -4"})).startswith(
        "m.yaml:12:21: max_speed_mm_s must be > 0; got -4"
    )


@pytest.mark.parametrize("text", ["", "null", "~", "  "])
def test_an_empty_or_null_override_is_refused_not_read_as_the_keys_default(check, text):
    # (--set cycles=$N with N unset would make a repeat's times its default: forever)
    message = only(check(PARAMETERS, overrides={"speed_mm_s": text}))
    assert message == (
        f"--set speed_mm_s={text}: an empty or null value; give a value, or leave "
        "--set speed_mm_s out for the mission's default"
    )


def test_an_override_that_is_not_yaml_is_an_error(check):
    message = only(check(PARAMETERS, overrides={"limbs_moved": "[left"}))
    assert message.startswith("--set limbs_moved=[left: cannot read '[left' as YAML")


def test_a_default_of_the_wrong_type_names_the_parameter_and_its_place(check):
    text = PARAMETERS.replace("speed_mm_s: 50", "speed_mm_s: -50")
    assert only(check(text)) == (
        "m.yaml:12:21: max_speed_mm_s must be > 0; got -50 "
        "(parameter speed_mm_s of the mission, default at m.yaml:6:15)"
    )


def test_an_unknown_parameter_reference_lists_the_declared_ones(check):
    text = PARAMETERS.replace("$speed_mm_s", "$sped_mm_s")
    assert only(check(text)) == (
        "m.yaml:12:21: unknown parameter sped_mm_s; did you mean speed_mm_s? "
        "parameters of the mission: speed_mm_s, limbs_moved"
    )


def test_a_bad_parameter_reference_is_an_error(check):
    text = PARAMETERS.replace("$speed_mm_s", "$1st")
    assert only(check(text)) == "m.yaml:12:21: bad parameter reference '$1st': write $NAME"


# Subtrees and includes -----------------------------------------------------------------------


SUBTREES = """\
subtrees:
  hop:
    parameters: {limbs: null, height_mm: 10}
    tree:
      sync_move:
        limbs: $limbs
        waypoints: [{translation_mm: [0, 0, $height_mm]}]
"""


def test_unknown_subtree_lists_the_defined_ones(check):
    message = only(check(SUBTREES + "tree: {subtree: hpo}\n"))
    assert message == "m.yaml:12:17: unknown subtree hpo; did you mean hop? valid subtrees: hop"


def test_subtree_with_params_must_be_declared_and_required_ones_given(check):
    problems = check(
        SUBTREES
        + "tree:\n  sequence:\n    - {subtree: hop, with: {limbs: [left], depth_mm: 3}}\n"
        + "    - {subtree: hop, with: {height_mm: 3}}\n"
    )
    assert problems == [
        "m.yaml:14:44: unknown parameter depth_mm; parameters of subtree hop: limbs, height_mm",
        "m.yaml:15:28: subtree hop needs parameter limbs (under with)",
    ]


def test_a_null_given_for_a_required_subtree_parameter_is_reported_at_the_use(check):
    # (it was reported inside the subtree, "sync_move needs limbs", naming no use)
    text = SUBTREES + "tree: {subtree: hop, with: {limbs: null}}\n"
    assert only(check(text)) == (
        "m.yaml:12:29: with: limbs is null, but parameter limbs of subtree hop is required "
        "(it has no default): give it a value"
    )


def test_a_bad_subtree_argument_is_reported_where_it_is_used_naming_the_use(check):
    text = SUBTREES + "tree: {subtree: hop, with: {limbs: [left], height_mm: high}}\n"
    assert only(check(text)) == (
        "m.yaml:11:45: translation_mm must be a list of 3 numbers in millimetres; "
        "got text 'high' (parameter height_mm of subtree hop, given at m.yaml:12:44)"
    )


def test_a_subtree_argument_can_pass_on_a_mission_parameter(check):
    text = (
        "parameters: {h: 20}\n"
        + SUBTREES
        + "tree: {subtree: hop, with: {limbs: [left], height_mm: $h}}\n"
    )
    assert check(text) == []
    problems = check(text, overrides={"h": "up"})
    assert only(problems) == (
        "m.yaml:12:45: translation_mm must be a list of 3 numbers in millimetres; got text 'up' "
        "(parameter height_mm of subtree hop, given at m.yaml:13:44) "
        "(parameter h = 'up' from --set)"
    )


def test_a_bad_value_in_a_subtree_used_many_times_is_one_problem_naming_every_use(check):
    text = (
        "parameters: {h: 20}\n"
        + SUBTREES
        + "tree:\n  sequence:\n"
        + "".join("    - {subtree: hop, with: {limbs: [left], height_mm: $h}}\n" for _ in range(3))
        + "    - {subtree: hop, with: {limbs: [left], height_mm: low}}\n"
    )
    assert check(text, overrides={"h": "up"}) == [
        "m.yaml:12:45: translation_mm must be a list of 3 numbers in millimetres; got text 'up' "
        "(parameter height_mm of subtree hop, given at m.yaml:15:44, 16:44 and 17:44) "
        "(parameter h = 'up' from --set)",
        "m.yaml:12:45: translation_mm must be a list of 3 numbers in millimetres; got text "
        "'low' (parameter height_mm of subtree hop, given at m.yaml:18:44)",
    ]


def test_subtrees_see_only_their_own_parameters(check):
    text = "parameters: {h: 20}\n" + SUBTREES.replace("$height_mm", "$h")
    message = only(check(text + "tree: {subtree: hop, with: {limbs: [left]}}\n"))
    assert message == (
        "m.yaml:12:45: unknown parameter h; parameters of subtree hop: limbs, height_mm"
    )


def test_subtree_cycles_are_errors_naming_the_chain(check):
    problems = check(
        """\
        subtrees:
          ping: {tree: {subtree: pong}}
          pong: {tree: {sequence: [{subtree: ping}]}}
        tree: {subtree: ping}
        """
    )
    assert only(problems) == "m.yaml:7:38: subtree cycle: ping -> pong -> ping"


def test_a_subtree_needs_a_tree_and_known_keys(check):
    problems = check("subtrees:\n  hop: {parameter: {a: 1}}\ntree: {wait: {duration_s: 1}}\n")
    assert problems == [
        "m.yaml:6:3: subtree hop needs tree",
        "m.yaml:6:9: unknown key parameter; did you mean parameters? "
        "valid keys: parameters, tree, description",
    ]


def test_include_cycles_are_errors_naming_the_chain():
    (problem,) = check_mission(MISSIONS / "include_cycle.yaml", robots=ROBOTS)
    assert problem.location.file == str(MISSIONS / "lib" / "cycle_b.yaml")
    assert (problem.location.line, problem.location.column) == (2, 5)
    assert problem.message == (
        "include cycle: include_cycle.yaml -> lib/cycle_a.yaml -> lib/cycle_b.yaml "
        "-> lib/cycle_a.yaml"
    )


def test_a_file_including_itself_is_a_cycle():
    (problem,) = check_mission(MISSIONS / "self_include.yaml", robots=ROBOTS)
    assert str(problem) == (
        f"{MISSIONS / 'self_include.yaml'}:2:10: "
        "include cycle: self_include.yaml -> self_include.yaml"
    )


def test_a_missing_include_is_reported_at_the_include_line(check):
    problems = check("include:\n  - lib/none.yaml\ntree: {wait: {duration_s: 1}}\n")
    assert only(problems) == "m.yaml:6:5: include lib/none.yaml: no such file"


def test_included_files_hold_only_subtrees(check, tmp_path):
    (tmp_path / "lib.yaml").write_text("tree: {wait: {duration_s: 1}}\nsubtrees: {}\n")
    problems = check("include: lib.yaml\ntree: {wait: {duration_s: 1}}\n")
    assert only(problems) == (
        "lib.yaml:1:1: an included file holds only description, include, subtrees; "
        "tree belongs in the mission file"
    )


def test_a_syntax_error_in_an_include_is_reported_in_that_file(check, tmp_path):
    (tmp_path / "lib.yaml").write_text("subtrees:\n  a: {tree: [\n")
    message = only(check("include: lib.yaml\ntree: {wait: {duration_s: 1}}\n"))
    assert message.startswith("lib.yaml:3:1: YAML syntax error:")


def test_a_broken_include_is_reported_without_its_knock_on_unknown_subtrees(check, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "tab.yaml").write_text("subtrees:\n  square:\n    tree:\n\twait\n")
    message = only(check("include: [bad/tab.yaml]\ntree: {subtree: square}\n"))
    assert message.startswith("bad/tab.yaml:4:1: YAML syntax error:")


def test_an_empty_include_is_an_error_at_the_include(check, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "empty.yaml").write_text("# nothing yet\n")
    problems = check("include: [bad/empty.yaml]\ntree: {subtree: square}\n")
    assert only(problems) == (
        "m.yaml:5:11: include bad/empty.yaml: the file is empty; an included file needs subtrees"
    )


def test_a_missing_include_hides_the_unknown_subtrees_it_would_define(check):
    problems = check("include: lib/none.yaml\ntree: {subtree: square}\n")
    assert only(problems) == "m.yaml:5:10: include lib/none.yaml: no such file"


def test_a_subtree_defined_twice_is_an_error(check, tmp_path):
    (tmp_path / "lib.yaml").write_text("subtrees:\n  hop: {tree: {wait: {duration_s: 1}}}\n")
    problems = check("include: lib.yaml\n" + SUBTREES + "tree: {wait: {duration_s: 1}}\n")
    assert only(problems) == "lib.yaml:2:3: subtree hop is already defined at m.yaml:7:3"


def test_values_yaml_reads_as_dates_or_custom_tags_are_refused(check):
    problems = check(
        "tree:\n  sequence:\n    - wait: {duration_s: 2024-01-01}\n    - wait: !!binary aGk=\n"
    )
    assert (
        problems[0]
        == "m.yaml:7:26: unsupported YAML value '2024-01-01' (tag tag:yaml.org,2002:timestamp)"
    )
    assert problems[1].startswith("m.yaml:8:13: unsupported YAML value")


def test_a_file_of_several_documents_is_an_error(check):
    message = only(
        check("mission: m\ntree: {wait: {duration_s: 1}}\n---\nmission: n\n", header=False)
    )
    assert message.startswith("m.yaml:3:1: YAML syntax error: but found another document")


def test_a_huge_random_faults_count_is_refused_before_drawing(check):
    text = """\
    random_faults: [{count: 100000000, kinds: [power_off], between_s: [0, 2], duration_s: [1, 2]}]
    tree: {wait: {duration_s: 1}}
    """
    assert only(check(text)) == "m.yaml:5:25: count must be in 1..10000; got 100000000"


def test_a_random_fault_kinds_weight_that_is_not_positive_names_its_kind(check):
    # (it said "kinds must be > 0; got 0", not which of the kinds)
    text = """\
    random_faults:
      - {count: 2, kinds: {blockage: 1, power_off: 0}, between_s: [0, 2], duration_s: [1, 2]}
    tree: {wait: {duration_s: 1}}
    """
    assert only(check(text)) == "m.yaml:6:48: kinds: power_off's weight must be > 0; got 0"


def test_random_faults_need_limbs_to_draw_from(check):
    text = "mission: m\nrandom_faults: {count: 1, kinds: [ik_error], between_s: [0, 1], x: 1}\n"
    text = text.replace("x: 1", "duration_s: [1, 1]")
    problems = check(text + "tree: {wait: {duration_s: 1}}\n", header=False)
    assert only(problems) == "m.yaml:2:16: random_faults needs limbs; the mission declares none"


def test_random_faults_cannot_hit_more_distinct_limbs_at_once_than_they_draw_from(check):
    text = """\
    random_faults: {count: 1, kinds: [power_off], between_s: [0, 2], duration_s: [1, 2],
                    limbs: [left], limbs_per_fault: [1, 3]}
    tree: {wait: {duration_s: 1}}
    """
    assert only(check(text)) == (
        "m.yaml:6:49: limbs_per_fault asks up to 3 distinct limbs for one fault, but it draws "
        "from 1 (left): at most 1, or give more limbs"
    )


def test_keys_need_a_remote_agent_and_a_folder_with_the_clients_keys(check, tmp_path):
    def limbs(arm: str) -> str:
        return f"mission: m\nlimbs:\n  arm: {arm}\ntree: {{wait: {{duration_s: 1}}}}\n"

    sim = check(limbs("{robot: light_limb, keys: k}"), header=False)
    assert only(sim).startswith("m.yaml:3:34: keys are for a remote agent that requires CURVE")
    remote = '{robot: light_limb, agent: "tcp://10.0.0.2:7000", keys: k}'
    missing = only(check(limbs(remote), header=False))
    assert missing == (
        "m.yaml:3:64: keys: k is not a directory; give the folder limbtree "
        "keys generate made (copied from the agent's computer without agent.key_secret)"
    )
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "agent.key").write_text("public")
    assert only(check(limbs(remote), header=False)) == (
        "m.yaml:3:64: keys: k has no client.key_secret; a client of a CURVE agent needs "
        "both: copy them from the folder limbtree keys generate made for the agent (keys "
        "generated anew here would not match the agent's)"
    )
    (tmp_path / "k" / "client.key_secret").write_text("secret")
    assert check(limbs(remote), header=False) == []


# YAML 1.1 numbers ----------------------------------------------------------------------------


def test_numbers_yaml_1_1_reads_in_base_8_or_60_are_refused_where_they_are(check):
    # (PyYAML reads 050 as 40 and 1:30 as 90: a 40 mm move and a 90 s wait, silently)
    text = "tree:\n  sequence:\n"
    text += "    - sync_move: {limbs: [left], waypoints: [{translation_mm: [0, 0, 050]}]}\n"
    text += "    - wait: {duration_s: 1:30}\n"
    assert check(text) == [
        "m.yaml:7:70: 050 has a leading zero, which YAML 1.1 reads as octal (40): write 50 (or 40)",
        "m.yaml:8:26: 1:30 is a base-60 number in YAML 1.1 (90): write 90",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-07", "-07 has a leading zero, which YAML 1.1 reads as octal (-7): write -7"),
        ("0_10", "0_10 has a leading zero, which YAML 1.1 reads as octal (8): write 10 (or 8)"),
        ("08", "08 has a leading zero, which YAML 1.1 reads as text: write 8"),
        ("1:30.5", "1:30.5 is a base-60 number in YAML 1.1 (90.5): write 90.5"),
        ("0x10", "0x10 is a hexadecimal number in YAML 1.1 (16): write 16"),
        ("0b101", "0b101 is a binary number in YAML 1.1 (5): write 5"),
    ],
)
def test_every_yaml_1_1_number_form_not_in_base_10_is_refused(check, value, message):
    assert only(check(f"tree: {{wait: {{duration_s: {value}}}}}\n")) == f"m.yaml:5:27: {message}"


@pytest.mark.parametrize("value", ["0", "0.5", "0e3", "10.50", "1_000", "0.0"])
def test_base_10_numbers_with_a_zero_first_are_read(check, value):
    waypoint = f"{{translation_mm: [{value}, 0, 0]}}"
    text = f"tree: {{sync_move: {{limbs: [left], waypoints: [{waypoint}]}}}}\n"
    assert check(text) == []


def test_a_refused_number_in_a_parameter_default_is_one_problem_at_the_default(check):
    text = "parameters: {speed_mm_s: 050}\ntree:\n  sequence:\n"
    text += "    - sync_move: {limbs: [left], waypoints: [{}], max_speed_mm_s: $speed_mm_s}\n" * 2
    assert only(check(text)) == (
        "m.yaml:5:26: 050 has a leading zero, which YAML 1.1 reads as octal (40): write 50 (or 40)"
    )


def test_a_refused_number_in_an_override_is_reported_at_the_override(check):
    problems = check(PARAMETERS, overrides={"speed_mm_s": "010"})
    assert only(problems) == (
        "--set speed_mm_s=010: 010 has a leading zero, which YAML 1.1 reads as octal (8): "
        "write 10 (or 8)"
    )
    assert only(check(PARAMETERS, overrides={"speed_mm_s": "1:30"})) == (
        "--set speed_mm_s=1:30: 1:30 is a base-60 number in YAML 1.1 (90): write 90"
    )


def test_refused_numbers_in_subtrees_and_their_arguments_are_reported_where_written(check):
    text = SUBTREES.replace("height_mm: 10", "height_mm: 010")
    text += "tree:\n  sequence:\n    - {subtree: hop, with: {limbs: [left]}}\n"
    text += "    - {subtree: hop, with: {limbs: [left], height_mm: 0x20}}\n"
    assert check(text) == [
        "m.yaml:7:42: 010 has a leading zero, which YAML 1.1 reads as octal (8): write 10 (or 8)",
        "m.yaml:15:55: 0x20 is a hexadecimal number in YAML 1.1 (32): write 32",
    ]


def test_refused_numbers_in_an_included_file_are_reported_there(check, tmp_path):
    (tmp_path / "lib.yaml").write_text("subtrees:\n  w: {tree: {wait: {duration_s: 2:00}}}\n")
    problems = check("include: lib.yaml\ntree: {subtree: w}\n")
    assert only(problems) == "lib.yaml:2:33: 2:00 is a base-60 number in YAML 1.1 (120): write 120"


def test_a_name_yaml_1_1_reads_as_a_boolean_says_to_quote_it(check):
    text = "tree: {sync_move: {limbs: [on], waypoints: [{}]}}\n"
    assert only(check(text)).endswith(
        "got boolean on (YAML 1.1 reads on as a boolean; write 'on' for text)"
    )


# Parameter declarations ----------------------------------------------------------------------


def test_unknown_keys_of_a_long_form_declaration_are_reported_at_each_key(check):
    text = PARAMETERS.replace("speed_mm_s: 50", "speed_mm_s: {default: 5, descr: x, min: 1}")
    assert check(text) == [
        "m.yaml:6:28: unknown key descr in the declaration of parameter speed_mm_s; "
        "did you mean description? its keys are default, description",
        "m.yaml:6:38: unknown key min in the declaration of parameter speed_mm_s; "
        "its keys are default, description",
    ]


def test_a_misspelt_default_is_one_problem_not_one_per_use(check):
    text = PARAMETERS.replace("speed_mm_s: 50", "speed_mm_s: {defualt: 30, description: x}")
    assert only(check(text)) == (
        "m.yaml:6:16: unknown key defualt in the declaration of parameter speed_mm_s; "
        "did you mean default? its keys are default, description"
    )
    subtree = "subtrees:\n  w:\n    parameters: {t_s: {defualt: 1, description: x}}\n"
    subtree += "    tree: {wait: {duration_s: $t_s}}\ntree: {subtree: w}\n"
    assert only(check(subtree)) == (
        "m.yaml:7:24: unknown key defualt in the declaration of parameter t_s; "
        "did you mean default? its keys are default, description"
    )


def test_a_missing_default_is_one_problem_not_one_per_use(check):
    text = PARAMETERS.replace("speed_mm_s: 50", "speed_mm_s: {description: x}")
    assert only(check(text)) == "m.yaml:6:3: parameter speed_mm_s needs a default"


def test_a_map_without_long_form_keys_is_the_default_itself(check):
    text = "parameters:\n  at: {translation_mm: [0, 0, 50]}\n"
    text += "tree: {sync_move: {limbs: [left], waypoints: [$at]}}\n"
    assert check(text) == []
    long_form = text.replace(
        "{translation_mm: [0, 0, 50]}", "{default: {translation_mm: [0, 0, 50]}}"
    )
    assert check(long_form) == []


def test_an_angle_tolerance_past_180_degrees_is_refused_with_why(check):
    # A rotation error is at most 180 degrees: dtheta_deg: 200 accepted every orientation.
    problems = check(
        """\
        tree:
          sequence:
            - align: {limb: left, target: wheel/grasp, dtheta_deg: 200}
            - walk_step: {limb: left, end: E2, target: wheel/grasp, settle_angle_deg: 180.5}
            - impedance_move: {limbs: [left], goal: {}, hold_tol_angle_deg: 360}
        """
    )
    assert len(problems) == 3, problems
    for problem, (line, key, value) in zip(
        problems,
        [
            (7, "dtheta_deg", "200"),
            (8, "settle_angle_deg", "180.5"),
            (9, "hold_tol_angle_deg", "360"),
        ],
        strict=True,
    ):
        assert problem.startswith(f"m.yaml:{line}:")
        assert f"{key} must be in (0, 180]; got {value}: " in problem
        assert "at most 180 deg" in problem and "give the largest rotation error" in problem
    edge = "tree:\n  align: {limb: left, target: wheel/grasp, dtheta_deg: 180}\n"
    assert not [p for p in check(edge) if "dtheta_deg" in p]


def test_a_walk_step_releasing_or_arcing_about_its_moving_end_is_refused(check):
    # Both passed check and aborted the run at its first tick, without a place in the file.
    problems = check(
        """\
        tree:
          sequence:
            - walk_step: {limb: left, end: E2, target: wheel/grasp, release: E2}
            - walk_step: {limb: left, end: E1, target: wheel/grasp, anchor: E1}
        """
    )
    assert len(problems) == 2, problems
    release, anchor = problems
    assert release.startswith("m.yaml:7:")
    assert "release E2 is the end that moves (end: E2)" in release
    assert "give release: E1" in release and "leave release out" in release
    assert anchor.startswith("m.yaml:8:")
    assert "anchor E1 is the end that moves (end: E1)" in anchor
    assert "give anchor: E2" in anchor
    # Only the arc turns about the anchor; the other ends are fine.
    fine = (
        "tree:\n  sequence:\n"
        "    - walk_step: {limb: left, end: E2, target: t/si, release: E1, anchor: E1}\n"
        "    - walk_step: {limb: left, end: E2, target: t/si, anchor: E2, via: none}\n"
    )
    assert not [p for p in check(fine) if "anchor" in p or "release" in p]


def test_two_entries_on_one_running_agent_are_refused_naming_both(check):
    # (a reviewer's mission named one agent's address for two limbs: `limbtree check` said
    # OK, and `limbtree run` stopped with "another client commands it ... stop the other
    # (another runner?)", the other client being the run itself)
    text = (
        "mission: m\n"
        "robots:\n"
        '  quad: {robot: moonbot_zero, agent: "tcp://10.0.0.2:7000"}\n'
        "limbs:\n"
        '  a: {robot: light_limb, agent: "tcp://10.0.0.3:7000"}\n'
        '  b: {robot: light_limb, agent: "tcp://10.0.0.3:7000"}\n'
        '  c: {robot: moonbot_zero, limb: leg_1, agent: "tcp://10.0.0.2:7000"}\n'
        "  d: {robot: light_limb}\n"
        "  e: {robot: light_limb}\n"
        "tree: {wait: {duration_s: 1}}\n"
    )
    assert check(text, header=False) == [
        "m.yaml:6:3: limb b: agent tcp://10.0.0.3:7000 is also limb a (declared at m.yaml:5:3)'s: "
        "an agent serves one plant to one run, and the run would be two clients of it (the "
        "second refused as another commander); give each its own agent, or declare the limbs "
        "once, as one robot under robots:",
        "m.yaml:7:3: limb c: agent tcp://10.0.0.2:7000 is also robot quad (declared at "
        "m.yaml:3:3)'s: an agent serves one plant to one run, and the run would be two clients "
        "of it (the second refused as another commander); give each its own agent, or declare "
        "the limbs once, as one robot under robots:",
    ]


def test_a_joint_settle_tolerance_past_half_a_turn_is_refused_with_why(check):
    # settle_deg: 400 let a joint_move succeed at its first tick, wherever the joints were.
    problems = check(
        """\
        tree:
          sequence:
            - joint_move: {limb: left, posture: home, settle_deg: 400}
            - joint_sync_move: {limbs: [left], postures: [home], settle_deg: 180.5}
        """
    )
    assert len(problems) == 2, problems
    for problem, line, value in zip(problems, (7, 8), ("400", "180.5"), strict=True):
        assert problem.startswith(f"m.yaml:{line}:")
        assert f"settle_deg must be in (0, 180]; got {value}: a tolerance of half a turn" in problem
    edge = "tree:\n  joint_move: {limb: left, posture: home, settle_deg: 180}\n"
    assert not [p for p in check(edge) if "settle_deg" in p]
