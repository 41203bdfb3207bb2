"""``limbtree report`` on seed 003's telemetry: walk steps, impedance moves, latches, bases.

A small synthetic record, written the way the recorder writes a run (the leaves' own
telemetry classes through :class:`Recorder`), its clock starting at T0 = 1 s: a walk step of
``mar.arm_1.E2`` (two via points, an approach, engagement 1.5 s after its start, its end
latched 0.1 s later), 0.5 s with no leaf, then an impedance move of the torso ``mar.E0``
that settles 0.5 s after its start. The torso's base moves 10 mm and turns 2 deg about z per
tick. Expected values come from those closed forms.
"""

import math
from types import MappingProxyType

import pytest
from report_figures import report_keeping_figures

from limbtree.kinematics import Pose
from limbtree.skills.dynamics import MovePhase, WalkPhase
from limbtree.skills.telemetry import Figures
from limbtree.trees.behaviours.dynamics import ImpedanceMoveTelemetry, WalkStepTelemetry
from limbtree.trees.recorder import Recorder
from limbtree.trees.report import make_report, read_run, summary_text
from limbtree.trees.report.dynamics import _GOAL, _LATCHED, goal_switches, joint_torques
from limbtree.trees.stream import (
    LimbInfo,
    LimbTick,
    NodeStatus,
    NodeTick,
    RobotInfo,
    RunHeader,
    TickSnapshot,
    TreeNode,
)

DT = 0.1
T0 = 1.0  # the first tick's time [s]
TICKS = 40
WALK = range(0, 20)  # node 0.0
IDLE = range(20, 25)  # node 0.1: a wait, no telemetry
MOVE = range(25, 40)  # node 0.2
ENGAGE = 15  # the walk step's engage tick (t = T0 + 1.5 s); latched from the next
SETTLE = 30  # the move's first holding tick (t = T0 + 3.0 s)
SETTLE_ANGLE = math.radians(1.0)

NEW_PLOTS = {
    "dynamics_error.png",
    "lyapunov.png",
    "joint_torques.png",
    "latches.png",
    "base_position.png",
}

TREE = TreeNode(
    "0",
    "Mission",
    "sequence",
    children=(
        TreeNode("0.0", "step A", "walk_step", MappingProxyType(
            {"limb": "mar.arm_1", "end": "E2", "settle": 0.002, "settle_angle": SETTLE_ANGLE,
             "metrics": "walk"})),
        TreeNode("0.1", "pause", "wait"),
        TreeNode("0.2", "torso", "impedance_move", MappingProxyType(
            {"limbs": ["mar.arm_1", "mar.arm_2"], "frame": "E0", "settle": 0.002,
             "settle_angle": SETTLE_ANGLE, "metrics": "torso"})),
    ),
)  # fmt: skip


def _arm(prefix: str) -> LimbInfo:
    return LimbInfo(
        joints=(f"{prefix}_j1", f"{prefix}_j2"),
        max_joint_speed=(1.0, 1.0),
        lower=(-3.0, -3.0),
        upper=(3.0, 3.0),
        end_effectors=("E1", "E2"),
    )


HEADER = RunHeader(
    mission="walk_test",
    mission_file="missions/walk_test.yaml",
    parameters={},
    seed=3,
    clock="sim",
    rate_hz=1 / DT,
    tree=TREE,
    robots={
        "mar": RobotInfo(
            "mirror_mar", "mujoco", "sim", {"mar.arm_1": _arm("a1"), "mar.arm_2": _arm("a2")}
        )
    },
)


# The closed forms the record is written from ---------------------------------------------


def walk_err_mm(i: int) -> float:
    return 200.0 * math.exp(-0.35 * i)


def walk_err_deg(i: int) -> float:
    return 5.0 * math.exp(-0.3 * i)


def walk_phase(i: int) -> tuple[WalkPhase, int | None]:
    if i < 5:
        return WalkPhase.VIA, 0
    if i < 10:
        return WalkPhase.VIA, 1
    if i < ENGAGE:
        return WalkPhase.APPROACH, None
    if i == ENGAGE:
        return WalkPhase.ENGAGE, None
    return (WalkPhase.HOLD if i < 19 else WalkPhase.DONE), None


def walk_w(i: int) -> float | None:
    """W falls by 20% a tick, restarting at each new goal (ticks 0, 5, 10); None once latched."""
    if i > ENGAGE:
        return None
    start = 5 * min(i // 5, 2)
    return 2.0 * 0.8 ** (i - start)


def walk_tau(i: int) -> tuple[float, float]:
    return (0.1 * i, -0.2 * i)


def move_err_mm(i: int) -> float:
    return 10.0 * math.exp(-0.5 * (i - MOVE[0]))


def move_tau(i: int) -> tuple[float, ...]:
    return tuple(0.01 * k * i for k in (1, 2, 3, 4))


def base_pose(i: int) -> Pose:
    """x = 10 mm a tick, turned 2 deg a tick about z; every other quaternion negated."""
    half = math.radians(2.0 * i) / 2
    sign = -1.0 if i % 2 else 1.0
    return Pose((0.01 * i, 0.0, 1.2), (0.0, 0.0, sign * math.sin(half), sign * math.cos(half)))


def telemetry(i: int) -> dict:
    if i in WALK:
        phase, via = walk_phase(i)
        tau = walk_tau(i)
        latched = ("arm_1.E2", "arm_2.E2") if i > ENGAGE else ("arm_2.E2",)
        return {
            "0.0": WalkStepTelemetry(
                frame="mar.arm_1.E2", phase=phase, via_index=via, via_count=2,
                err_mm=walk_err_mm(i), err_deg=walk_err_deg(i), elapsed_s=i * DT,
                lyapunov_j=walk_w(i), max_rise_rel=0.0, tau_max_nm=max(map(abs, tau)),
                tau_nm=tau, latched=latched,
            )
        }  # fmt: skip
    if i in MOVE:
        phase = MovePhase.MOVING if i < SETTLE else MovePhase.HOLDING
        phase = MovePhase.DONE if i == MOVE[-1] else phase
        steady = move_err_mm(SETTLE) if i >= SETTLE else None
        return {
            "0.2": ImpedanceMoveTelemetry(
                frame="mar.E0", phase=phase, err_mm=move_err_mm(i), err_deg=0.1,
                steady_max_mm=steady, steady_max_deg=0.1 if steady else None,
                elapsed_s=(i - MOVE[0]) * DT, lyapunov_j=0.5 * 0.9 ** (i - MOVE[0]),
                max_rise_rel=1e-3 if i == 35 else 0.0, tau_max_nm=max(move_tau(i)),
                tau_nm=move_tau(i), latched=("arm_1.E2", "arm_2.E2"),
            )
        }  # fmt: skip
    return {}


SUMMARY = {
    "v": 2,
    "mission": "walk_test",
    "mission_file": "missions/walk_test.yaml",
    "outcome": "SUCCESS",
    "seed": 3,
    "clock": "sim",
    "sim_time_s": T0 + (TICKS - 1) * DT,
    "wall_time_s": 1.0,
    "ticks": TICKS,
    "metrics": {
        "passivity": {"max_rise_rel": 1e-3, "max_rise_j": 2.5e-4, "max_tau_nm": 3.8},
        "walk": {
            "steps": [
                {
                    "node": "step A",
                    "duration_s": ENGAGE * DT,
                    "final_err_mm": walk_err_mm(ENGAGE),
                    "final_err_deg": walk_err_deg(ENGAGE),
                    "engaged_at_s": T0 + ENGAGE * DT,
                    "total_s": 1.9,
                }
            ]
        },
        "torso": {
            "settle_s": (SETTLE - MOVE[0]) * DT,
            "steady_max_err_mm": move_err_mm(SETTLE),
            "steady_max_err_deg": 0.1,
            "final_err_mm": move_err_mm(MOVE[-1]),
            "final_err_deg": 0.1,
            "hold_s": 0.9,
        },
        "other": {"count": 7},
    },
}


def write_walk_run(directory, *, summary=True):
    recorder = Recorder(directory)
    recorder.on_start(HEADER)
    for i in range(TICKS):
        node = "0.0" if i in WALK else ("0.1" if i in IDLE else "0.2")
        running = NodeTick(NodeStatus.RUNNING, "", 0.001)
        limbs = {
            n: LimbTick(None, None, (0.0, 0.0), None, 0, False) for n in HEADER.robots["mar"].limbs
        }
        recorder.on_tick(
            TickSnapshot(
                t=T0 + i * DT, tick=i, nodes={"0": running, node: running}, limbs=limbs,
                bases={"mar": base_pose(i)}, events=(), skills=telemetry(i),
            )
        )  # fmt: skip
    if summary:
        recorder.close(SUMMARY)
    else:
        recorder._log.close()
    return directory


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The synthetic run's report, and each figure it saved by file name (drawn once)."""
    return report_keeping_figures(write_walk_run(tmp_path_factory.mktemp("walk")))


@pytest.fixture(scope="module")
def report(drawn):
    return drawn[0]


@pytest.fixture(scope="module")
def figures(drawn):
    return drawn[1]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return read_run(write_walk_run(tmp_path_factory.mktemp("walk_log")) / "log.msgpack")


# Figures ----------------------------------------------------------------------------------


def test_a_seed_003_run_gets_the_error_lyapunov_torque_latch_and_base_plots(report):
    names = {path.name for path in report.images}
    assert names == NEW_PLOTS  # the limbs have no pose: no limb plots, no skills plot
    for path in report.images:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 5000


def test_a_run_without_seed_003_telemetry_or_a_moving_base_gets_none_of_them(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.on_start(HEADER)
    still = Pose((0.0, 1.5, 0.0), (0.0, 0.0, 1.0, 0.0))
    for i in range(10):
        figures = Figures((("mode", "nominal"), ("distance", 0.5)))
        recorder.on_tick(TickSnapshot(i * DT, i, {}, {}, {"mar": still}, (), {"0.0": figures}))
    recorder.close({"mission": "still", "outcome": "SUCCESS", "metrics": {"walk": {"n": 1}}})
    result = make_report(tmp_path)
    assert not NEW_PLOTS & {path.name for path in result.images}
    assert "Walk" not in result.text and "Passivity" not in result.text
    assert "metrics.walk.n" in result.text


def _vertical_lines(axes, colour):
    from matplotlib.colors import to_rgba

    return sorted(
        line.get_xdata()[0]
        for line in axes.lines
        if len(set(line.get_xdata())) == 1 and to_rgba(line.get_color()) == to_rgba(colour)
    )


def test_the_error_plot_is_log_scaled_with_the_engagement_and_settling_marked(figures):
    axes_mm, axes_deg = figures["dynamics_error.png"].axes
    assert axes_mm.get_yscale() == axes_deg.get_yscale() == "log"
    assert axes_mm.get_ylabel() == "position error [mm]"
    assert axes_deg.get_ylabel() == "angle error [deg]"
    markers = {(line.get_marker(), float(line.get_xdata()[0]), float(line.get_ydata()[0]))
               for line in axes_mm.lines if line.get_marker() in ("o", "D") and
               len(line.get_xdata()) == 1}  # fmt: skip
    assert sorted(markers) == [
        ("D", pytest.approx(T0 + 3.0), pytest.approx(move_err_mm(SETTLE))),
        ("o", pytest.approx(T0 + 1.5), pytest.approx(walk_err_mm(ENGAGE))),
    ]
    tolerance = [line for line in axes_mm.lines if list(line.get_ydata()) == [2.0, 2.0]]
    assert len(tolerance) == 1  # 2 mm, once
    labels = [text.get_text() for text in axes_mm.get_legend().get_texts()]
    assert "step A (mar.arm_1.E2)" in labels and "tolerance 2 mm, 1 deg" in labels


def test_the_lyapunov_plot_marks_the_latch_switch_and_the_new_goals(figures):
    (axes,) = figures["lyapunov.png"].axes
    assert axes.get_yscale() == "log"
    assert _vertical_lines(axes, _LATCHED) == pytest.approx([T0 + 1.6])
    assert _vertical_lines(axes, _GOAL) == pytest.approx([T0 + 0.5, T0 + 1.0])
    assert "0.001 of W at the switch" in axes.get_title()


def test_the_torque_plot_has_one_panel_per_limb_and_one_line_per_joint(figures):
    panels = figures["joint_torques.png"].axes
    assert [a.get_ylabel() for a in panels] == ["mar.arm_1\nτ [N m]", "mar.arm_2\nτ [N m]"]
    joints = [[line for line in a.lines if "_j" in str(line.get_label())] for a in panels]
    assert [[line.get_label() for line in lines] for lines in joints] == [
        ["a1_j1", "a1_j2"],
        ["a2_j1", "a2_j2"],
    ]
    assert joints[0][1].get_ydata()[7] == pytest.approx(walk_tau(7)[1])
    assert joints[1][0].get_ydata()[0] == pytest.approx(move_tau(MOVE[0])[2])


# Reading -------------------------------------------------------------------------------


def test_engagement_is_where_a_step_enters_its_engage_phase_and_a_move_settles(run):
    assert run.skills["step A"].engaged() == (pytest.approx(T0 + 1.5), "engaged")
    assert run.skills["torso"].engaged() == (pytest.approx(T0 + 3.0), "settled")
    assert run.skills["step A"].kind == "walk_step"
    assert run.skills["torso"].frame == "mar.E0"


def test_new_goals_are_new_via_points_and_the_approach(run):
    assert goal_switches(run.skills["step A"]) == pytest.approx([T0 + 0.5, T0 + 1.0])
    assert goal_switches(run.skills["torso"]) == []  # one goal, set at its start


def test_the_latch_timeline_is_per_interface_and_unknown_while_no_leaf_reports(run):
    states = run.latches.states()
    assert list(states) == ["mar.arm_1.E2", "mar.arm_2.E2"]
    arm_1, arm_2 = states["mar.arm_1.E2"], states["mar.arm_2.E2"]
    for i in range(TICKS):
        if i in IDLE:
            assert math.isnan(arm_1[i]) and math.isnan(arm_2[i])
        else:
            assert arm_1[i] == (1.0 if i > ENGAGE else 0.0)
            assert arm_2[i] == 1.0
    # The idle gap hides no change: the only switch is the walk step's engagement.
    assert run.latches.switches() == [(pytest.approx(T0 + 1.6), "mar.arm_1.E2", True)]


def test_torques_split_by_limb_with_the_header_joint_names_and_break_at_gaps(run):
    torques = joint_torques(run)
    assert list(torques) == ["mar.arm_1", "mar.arm_2"]
    arm_1, arm_2 = torques["mar.arm_1"], torques["mar.arm_2"]
    assert arm_1.joints == ("a1_j1", "a1_j2") and arm_2.joints == ("a2_j1", "a2_j2")
    # arm 1: the walk's 20 ticks, a break for the idle 0.5 s, the move's 15 ticks.
    assert len(arm_1.t) == len(WALK) + 1 + len(MOVE)
    assert math.isnan(arm_1.t[len(WALK)]) and math.isnan(arm_1.tau[0][len(WALK)])
    assert arm_1.tau[1][7] == pytest.approx(walk_tau(7)[1])
    # The move's four torques are arm 1's two, then arm 2's two.
    first = len(WALK) + 1
    assert (arm_1.tau[0][first], arm_1.tau[1][first]) == pytest.approx(move_tau(MOVE[0])[:2])
    assert arm_2.t[0] == pytest.approx(T0 + 2.5) and len(arm_2.t) == len(MOVE)
    assert (arm_2.tau[0][-1], arm_2.tau[1][-1]) == pytest.approx(move_tau(MOVE[-1])[2:])
    assert arm_1.peak_nm == pytest.approx(max(0.2 * 19, *move_tau(MOVE[-1])[:2]))


def test_the_base_series_holds_its_position_and_its_turn_whatever_the_quaternion_sign(run):
    base = run.bases["mar"]
    assert base.moved
    assert base.position[12] == pytest.approx((0.12, 0.0, 1.2))
    assert base.turned_deg() == pytest.approx([2.0 * i for i in range(TICKS)], abs=1e-6)


# Text ------------------------------------------------------------------------------------


def _row(text, start):
    return next(line.split() for line in text.splitlines() if line.strip().startswith(start))


def test_the_text_has_the_walk_table_the_torso_and_the_passivity_line(report):
    text = report.text
    assert "Walk (metrics.walk.steps)" in text
    row = _row(text, "step A ")
    expected_deg = f"{walk_err_deg(ENGAGE):.3f}"
    assert row == ["step", "A", "mar.arm_1.E2", "1.50", "2.50", f"{walk_err_mm(ENGAGE):.2f}",
                   expected_deg]  # fmt: skip
    assert "Impedance move (metrics.torso): mar.E0 settled in 0.50 s" in text
    assert f"at most {move_err_mm(SETTLE):.2f} mm / 0.1 deg" in text
    assert "over the 0.9 s hold" in text
    assert "largest rise of W between switches: 0.001 relative to W at the switch, 0.00025 J" in (
        text
    )
    assert "largest joint torque (at the tick rate): 3.80 N m" in text
    # The tables replace the raw metrics; other metrics stay.
    raw = [line.split()[0] for line in text.splitlines() if line.startswith("  metrics.")]
    assert raw == ["metrics.other.count"]


def test_a_killed_run_gets_the_walk_table_and_passivity_from_the_log(tmp_path):
    directory = write_walk_run(tmp_path, summary=False)
    text = summary_text(directory, None, read_run(directory / "log.msgpack"), [])
    assert "Walk (from the log)" in text
    row = _row(text, "step A ")
    assert row[2:] == ["mar.arm_1.E2", "1.50", "2.50", f"{walk_err_mm(ENGAGE):.2f}",
                       f"{walk_err_deg(ENGAGE):.3f}"]  # fmt: skip
    assert "Impedance move (torso (from the log)): mar.E0 settled in 0.50 s" in text
    assert "Passivity (from the log" in text
    assert "0.001 relative to W at the switch, -" in text
    largest = max(max(abs(v) for v in walk_tau(WALK[-1])), *move_tau(MOVE[-1]))
    assert f"largest joint torque (at the tick rate): {largest:.2f} N m" in text
