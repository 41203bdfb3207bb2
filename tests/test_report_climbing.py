"""``limbtree report`` on seed 004's telemetry: grip forces, momentum, the GIA margin.

A small synthetic record, written the way the recorder writes a run (the leaves' own
telemetry classes through :class:`Recorder`), one tick every 0.1 s:

* ticks 0-9, node 0.0: ``climb_step`` swings hub.leg_1 (RAMP, α = 0.5 - 0.015 i); its palm
  lands at tick 8 with 1.2 N while its gripper is still open (the peak contact force);
* ticks 9-19, node 0.1: ``base_adjust`` (tick 9 is reported by both leaves, as a real run
  does when one ends and the next starts); the base touches the terrain at ticks 16 and 17;
* ticks 20-24, node 0.2: ``climb_step`` swings hub.leg_0; hub.leg_3 pulls 0.85 N at tick 23
  (the peak on a holding gripper) and is torn off before tick 24 (the plant says 0.912 N at
  2.395 s), where the GIA margin is at its smallest, 0.2 m/s^2, and the leaf fails.

Expected values come from those closed forms.
"""

import math
from pathlib import Path
from types import MappingProxyType

import pytest
from report_figures import report_keeping_figures

from limbtree.skills.climbing.step import Planner, StepPhase
from limbtree.skills.telemetry import Figures
from limbtree.trees.behaviours.climbing import BaseAdjustTelemetry, ClimbStepTelemetry
from limbtree.trees.recorder import Recorder
from limbtree.trees.report import (
    ClimbStep,
    Detachment,
    RunLog,
    make_report,
    read_climb,
    read_run,
)
from limbtree.trees.report.climbing import HOLD_FORCE_N, hold_force
from limbtree.trees.stream import LimbTick, NodeStatus, NodeTick, RunHeader, TickSnapshot, TreeNode

DT = 0.1
TICKS = 25
LEGS = ("hub.leg_0", "hub.leg_1", "hub.leg_2", "hub.leg_3")
FIRST_SWING = range(0, 10)  # node 0.0, hub.leg_1
SUPPORT = range(9, 20)  # node 0.1
SECOND_SWING = range(20, 25)  # node 0.2, hub.leg_0
LANDING = 8  # hub.leg_1's palm touches down, gripper still open
HITS = (16, 17)  # the base on the terrain
PULL = 23  # hub.leg_3's largest pull before it tears off
TORN = 24  # the first tick without hub.leg_3's gripper
CLIMB_PLOTS = {"grip_forces.png", "momentum.png", "gia_margin.png"}

_PARAMS = {"legs": list(LEGS), "planner": "ramp", "metrics": "climb"}
TREE = TreeNode(
    "0",
    "Climb",
    "sequence",
    children=(
        TreeNode("0.0", "swing", "climb_step",
                 MappingProxyType({**_PARAMS, "swing": "hub.leg_1"})),
        TreeNode("0.1", "support", "base_adjust", MappingProxyType(_PARAMS)),
        TreeNode("0.2", "swing", "climb_step",
                 MappingProxyType({**_PARAMS, "swing": "hub.leg_0"})),
    ),
)  # fmt: skip

HEADER = RunHeader(
    mission="climb_test",
    mission_file="missions/climb_test.yaml",
    parameters={"planner": "ramp"},
    seed=0,
    clock="sim",
    rate_hz=1 / DT,
    tree=TREE,
    robots={},
)


# The closed forms the record is written from ---------------------------------------------


def swinging(i: int) -> str | None:
    """The leg swinging (its gripper open) at tick ``i``; tick 9 ends the first swing."""
    if i in range(1, 10):
        return "hub.leg_1"
    if i in range(21, 25):
        return "hub.leg_0"
    return None


def forces(i: int) -> tuple[float, ...]:
    """Each leg's palm force [N]: 0.1 N + a ripple, 0 on a swinging palm, the two events."""
    out = []
    for k, leg in enumerate(LEGS):
        value = 0.1 + 0.01 * k + 0.02 * math.sin(i)
        if leg == swinging(i):
            value = 1.2 if i == LANDING else 0.0
        if leg == "hub.leg_3" and i == PULL:
            value = 0.85
        out.append(value)
    return tuple(out)


def supporting(i: int) -> tuple[bool, ...]:
    return tuple(leg != swinging(i) and not (leg == "hub.leg_3" and i >= TORN) for leg in LEGS)


def margin(i: int) -> float:
    if i == TORN:
        return 0.2
    return 0.6 if swinging(i) else 1.1


def plant(i: int) -> dict:
    """The plant's figures (:class:`PlantGrip`) at tick ``i``."""
    f, held = forces(i), supporting(i)
    return {
        "grip_force_n": f,
        "max_grip_force_n": max(v for v, h in zip(f, held, strict=True) if h),
        "max_contact_force_n": max(f),
        "supporting": held,
        "gia_margin_m_s2": margin(i),
        "momentum_lin_kg_m_s": 0.002 * i,
        "momentum_ang_kg_m2_s": 0.0001 * i,
        "base_contacts": 2 if i in HITS else 0,
    }


def alpha(i: int) -> float:
    return 0.5 - 0.015 * i


def telemetry(i: int) -> dict:
    out = {}
    if i in FIRST_SWING or i in SECOND_SWING:
        first = i in FIRST_SWING
        start = 0 if first else SECOND_SWING[0]
        phase = StepPhase.MOVING
        if i == FIRST_SWING[-1]:
            phase = StepPhase.DONE
        if i == TORN:
            phase = StepPhase.FAILED
        out["0.0" if first else "0.2"] = ClimbStepTelemetry(
            leg="hub.leg_1" if first else "hub.leg_0", planner=Planner.RAMP, phase=phase,
            elapsed_s=(i - start) * DT, alpha=alpha(i), w_min_m3=1.8e-3, swing_lin_kg_m_s=0.01,
            swing_ang_kg_m2_s=0.001, apex_m=0.04, planning_s=0.5, **plant(i),
        )  # fmt: skip
    if i in SUPPORT:
        phase = StepPhase.DONE if i == SUPPORT[-1] else StepPhase.MOVING
        out["0.1"] = BaseAdjustTelemetry(
            planner=Planner.RAMP, phase=phase, elapsed_s=(i - SUPPORT[0]) * DT, shift_mm=20.0,
            raise_mm=0.0, penetration_mm=-5.0, planning_s=0.03, **plant(i),
        )  # fmt: skip
    return out


SUMMARY = {
    "v": 2,
    "mission": "climb_test",
    "outcome": "FAILURE",
    "seed": 0,
    "clock": "sim",
    "sim_time_s": (TICKS - 1) * DT,
    "wall_time_s": 1.0,
    "ticks": TICKS,
    "failure": "swing: gripper of hub.leg_3 detached at t = 2.395 s: pulled with 0.912 N",
    "metrics": {
        "climb": {
            "max_grip_force_n": 0.85,
            "max_pull_force_n": 0.81,
            "max_contact_force_n": 1.2,
            "min_gia_margin": 0.2,
            "detachments": 1,
            "detached": [{"leg": "hub.leg_3", "t_s": 2.395, "force_n": 0.912}],
            "collisions": 2,
            "collision_substeps": 20,
            "steps": [
                {"node": "swing", "t_s": 0.9, "leg": "hub.leg_1", "planner": "ramp",
                 "duration_s": 0.9, "planning_s": 0.5, "apex_m": 0.04, "alpha_min": 0.14,
                 "alpha_max": 0.5, "peak_momentum_lin": 0.018},
                {"node": "support", "t_s": 1.9, "planner": "ramp", "duration_s": 1.0,
                 "planning_s": 0.03, "shift_m": 0.02, "raise_m": 0.0},
                {"node": "swing", "t_s": 2.4, "leg": "hub.leg_0", "planner": "ramp",
                 "duration_s": 0.4, "planning_s": 0.5, "failure": "gripper of hub.leg_3 ..."},
            ],
        },
        "other": {"count": 7},
    },
}  # fmt: skip


def write_climb_run(directory: Path, *, summary: bool = True) -> Path:
    recorder = Recorder(directory)
    recorder.on_start(HEADER)
    # (the legs are driven in joint space: a command 0.01 rad off the joints logged with it)
    commanded = (0.01, 0.0, 0.0)
    limbs = {leg: LimbTick(None, None, (0.0, 0.0, 0.0), commanded, 0, False) for leg in LEGS}
    for i in range(TICKS):
        skills = telemetry(i)
        running = NodeTick(NodeStatus.RUNNING, "", 0.001)
        nodes = {"0": running, **{key: running for key in skills}}
        recorder.on_tick(TickSnapshot(i * DT, i, nodes, limbs, {}, (), skills))
    if summary:
        recorder.close(SUMMARY)
    else:
        recorder._log.close()  # a killed run: the log alone
    return directory


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The synthetic run's report, and each figure it saved by file name (drawn once)."""
    return report_keeping_figures(write_climb_run(tmp_path_factory.mktemp("climb")))


@pytest.fixture(scope="module")
def report(drawn):
    return drawn[0]


@pytest.fixture(scope="module")
def figures(drawn):
    return drawn[1]


@pytest.fixture(scope="module")
def climb(tmp_path_factory):
    from limbtree.trees.recorder import read_record

    path = write_climb_run(tmp_path_factory.mktemp("climb_log")) / "log.msgpack"
    return read_climb(read_run(path), read_record(path)[1])


def _row(text: str, name: str) -> str:
    """The text after ``name`` on its row of the climb block."""
    block = text[text.index("\nClimb (") :]
    line = next(line for line in block.splitlines() if line.strip().startswith(name))
    return line.strip()[len(name) :].strip()


# Figures ----------------------------------------------------------------------------------


def test_a_climbing_run_gets_the_grip_force_momentum_and_gia_margin_plots(report):
    images = {path.name: path for path in report.images}
    assert set(images) >= CLIMB_PLOTS
    for name in CLIMB_PLOTS:
        assert images[name].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert images[name].stat().st_size > 5000


def test_a_run_without_climbing_leaves_gets_none_of_them_and_no_climb_block(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.on_start(HEADER)
    for i in range(10):
        figures = Figures((("mode", "nominal"), ("distance", 0.5)))
        recorder.on_tick(TickSnapshot(i * DT, i, {}, {}, {}, (), {"0.0": figures}))
    recorder.close({"mission": "still", "outcome": "SUCCESS", "metrics": {"walk": {"n": 1}}})
    result = make_report(tmp_path)
    assert not CLIMB_PLOTS & {path.name for path in result.images}
    assert not any((tmp_path / name).exists() for name in CLIMB_PLOTS)
    assert "Climb" not in result.text
    assert "metrics.walk.n" in result.text


def _lines(axes, colour):
    from matplotlib.colors import to_rgba

    return [line for line in axes.lines if to_rgba(line.get_color()) == to_rgba(colour)]


def test_the_grip_force_plot_has_the_holding_limit_the_detachment_and_the_swings(figures):
    from limbtree.trees.report.climbing import _DETACHED, _LIMIT

    (axes,) = figures["grip_forces.png"].axes
    limit = [line for line in _lines(axes, _LIMIT) if len(set(line.get_ydata())) == 1]
    assert [line.get_ydata()[0] for line in limit] == [HOLD_FORCE_N]
    (cross,) = [line for line in _lines(axes, _DETACHED) if line.get_marker() == "x"]
    assert (cross.get_xdata()[0], cross.get_ydata()[0]) == (2.395, 0.912)
    texts = [text.get_text() for text in axes.texts]
    assert any("leg_3" in text and "0.912 N" in text for text in texts)
    assert {"leg_1", "leg_0"} <= set(texts)  # each swing named over its shading
    assert len(axes.patches) == 2 + 1  # the two swings and the base's contacts
    titles = axes.get_title(loc="left")
    assert "0.850 N" in titles and "leg_3 at 2.30 s" in titles
    assert "1.200 N (leg_1 landing at 0.80 s)" in titles


def test_a_leg_is_bold_while_it_holds_and_only_faint_while_its_palm_is_open(figures):
    (axes,) = figures["grip_forces.png"].axes
    bold = {line.get_label(): line for line in axes.lines if line.get_label() in LEGS}
    ydata = list(bold["hub.leg_1"].get_ydata())
    assert all(math.isnan(v) for v in ydata[1:10])  # swinging: the bold line has a gap
    assert ydata[10] == pytest.approx(forces(10)[1])
    assert math.isnan(list(bold["hub.leg_3"].get_ydata())[TORN])


def test_the_momentum_plot_has_both_momenta_and_ramps_alpha(figures):
    lin, ang, alpha_axes = figures["momentum.png"].axes
    assert "L_\\mathrm{lin}" in lin.get_ylabel() and "kg m/s" in lin.get_ylabel()
    assert "kg m²/s" in ang.get_ylabel()
    assert "0.048 kg m/s at 2.40 s" in lin.get_title(loc="left")
    (curve,) = [line for line in alpha_axes.lines if len(line.get_xdata()) == TICKS]
    values = list(curve.get_ydata())
    assert values[0] == pytest.approx(alpha(0))
    assert all(math.isnan(v) for v in values[10:20])  # the support phase has no α


def test_the_gia_margin_plot_marks_zero_and_annotates_the_minimum(figures):
    from limbtree.trees.report.climbing import _LIMIT

    (axes,) = figures["gia_margin.png"].axes
    zero = [line for line in _lines(axes, _LIMIT) if len(set(line.get_ydata())) == 1]
    assert [line.get_ydata()[0] for line in zero] == [0.0]
    (low,) = [line for line in axes.lines if line.get_marker() == "v"]
    assert (low.get_xdata()[0], low.get_ydata()[0]) == pytest.approx((2.4, 0.2))
    assert any("min 0.200 m/s² at 2.40 s" in t.get_text() for t in axes.texts)


# Text -------------------------------------------------------------------------------------


def test_the_text_has_the_climb_block_with_peak_margin_and_detachment(report):
    text = report.text
    assert "Climb (metrics.climb; seed 004, holding force 0.9 N)" in text
    assert _row(text, "planner") == "ramp"
    assert _row(text, "steps done") == "2 (1 swing, 1 support phase); then swing failed at 2.40 s"
    assert _row(text, "peak holding-gripper force") == (
        "0.850 N on hub.leg_3 at 2.30 s (pushed or pulled)"
    )
    # the holding force limits a pull: a push tears nothing off
    assert _row(text, "peak pull on a gripper") == "0.810 N (0.90 of the holding force)"
    assert _row(text, "peak contact force") == (
        "1.200 N on hub.leg_1 at 0.80 s (its palm not holding: landing)"
    )
    assert _row(text, "min GIA margin") == "0.200 m/s^2 at 2.40 s"
    assert _row(text, "detachments") == "hub.leg_3 torn off at 2.395 s, pulled with 0.912 N"
    assert _row(text, "base collisions") == (
        "2 ticks with the base on the terrain (20 physics steps), 1.60 to 1.70 s"
    )


def test_the_limbs_table_counts_joint_commands_and_says_no_clamp_distance(report):
    text = report.text
    assert "commanded" in text and "state| [deg]" in text
    # (its headings on two lines: the table fits 80 columns)
    head = text.splitlines().index("Limbs (from the log)") + 1
    table = text.splitlines()[head : head + 7]
    assert all(len(line) <= 80 for line in table), table
    assert _row(text, "hub.leg_0").split()[2:4] == [str(TICKS), "0.57"]  # 0.01 rad
    assert "clamp distance" not in text  # (nothing was clamped: no meaningless 0)


def test_the_climb_metrics_are_not_listed_raw_nor_taken_for_a_walk(report):
    assert "metrics.climb.max_grip_force_n" not in report.text
    assert "metrics.climb.steps" not in report.text
    assert "Walk" not in report.text
    assert "metrics.other.count" in report.text


def test_a_killed_run_gets_the_climb_block_and_the_detachment_from_the_log(tmp_path):
    result = make_report(write_climb_run(tmp_path, summary=False))
    assert {path.name for path in result.images} >= CLIMB_PLOTS
    assert "Climb (from the log; seed 004, holding force 0.9 N)" in result.text
    assert _row(result.text, "detachments") == (
        "hub.leg_3 stopped holding at 2.40 s (from the log: last logged pull 0.850 N)"
    )
    assert _row(result.text, "steps done") == (
        "2 (1 swing, 1 support phase); then swing [0.2] failed at 2.40 s (from the log)"
    )
    assert _row(result.text, "peak holding-gripper force").startswith("0.850 N")


# Reading ----------------------------------------------------------------------------------


def test_the_series_has_one_row_per_tick_and_the_steps_in_order(climb):
    assert climb.legs == list(LEGS)
    assert climb.t == pytest.approx([i * DT for i in range(TICKS)])
    assert climb.steps == [
        ClimbStep("swing [0.0]", "climb_step", "hub.leg_1", "ramp", 0.0, pytest.approx(0.9),
                  "done"),
        ClimbStep("support", "base_adjust", "", "ramp", pytest.approx(0.9),
                  pytest.approx(1.9), "done"),
        ClimbStep("swing [0.2]", "climb_step", "hub.leg_0", "ramp", 2.0, pytest.approx(2.4),
                  "failed"),
    ]  # fmt: skip
    assert [s.leg for s in climb.swings] == ["hub.leg_1", "hub.leg_0"]
    assert climb.planners == ["ramp"]
    assert climb.collision_ticks() == pytest.approx([1.6, 1.7])


def test_a_tick_two_leaves_report_keeps_the_swings_alpha(climb):
    assert climb.alpha[9] == pytest.approx(alpha(9))
    assert math.isnan(climb.alpha[10])
    assert climb.holding["hub.leg_1"][9] is False


def test_the_log_alone_infers_a_detachment_but_not_a_swing(climb):
    assert climb.detached == [Detachment("hub.leg_3", pytest.approx(2.4), 0.85, True)]


def test_a_repeated_node_is_read_as_one_step_per_run():
    run = RunLog(labels={"0.0": "swing"})
    ticks = []
    for i, elapsed in enumerate((0.0, 0.1, 0.2, 0.0, 0.1)):
        entry = {"skill": "climb_step", "leg": "a", "planner": "baseline", "phase": "moving",
                 "elapsed_s": elapsed, "grip_force_n": [0.1], "supporting": [True],
                 "alpha": 0.0}  # fmt: skip
        ticks.append({"t": i * DT, "skills": {"0.0": entry}})
    climb = read_climb(run, ticks)
    assert [(round(s.start_s, 9), round(s.end_s, 9)) for s in climb.steps] == [
        (0.0, 0.2),
        (0.3, 0.4),
    ]
    assert all(math.isnan(a) for a in climb.alpha)  # the baseline has no α


def test_a_gap_between_climbing_ticks_breaks_the_lines():
    run = RunLog(header={"rate_hz": 10.0})
    entry = {"skill": "base_adjust", "grip_force_n": [0.1, 0.2], "supporting": [True, True]}
    climb = read_climb(run, [{"t": t, "skills": {"0.1": entry}} for t in (0.0, 0.1, 1.0)])
    assert climb.legs == ["leg 1", "leg 2"]
    assert climb.t[:2] == pytest.approx([0.0, 0.1]) and math.isnan(climb.t[2])
    assert climb.t[3] == 1.0 and len(climb.steps) == 2


def test_the_holding_force_comes_from_the_header_when_it_says():
    assert hold_force({"world": {"contact": {"grip_force_n": 1.5}}}) == 1.5
    assert hold_force({"world": {"terrain": {}}}) == HOLD_FORCE_N == 0.9
    assert hold_force(None) == HOLD_FORCE_N
