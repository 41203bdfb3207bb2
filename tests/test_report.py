"""``limbtree report DIR``: plots and a text summary from run records."""

import itertools
import json
import math
import shutil
from pathlib import Path
from types import MappingProxyType

import msgpack
import pytest
from records import held_by_a_run

from limbtree.kinematics import Pose
from limbtree.skills.telemetry import Figures
from limbtree.trees.errors import RunError
from limbtree.trees.recorder import Recorder
from limbtree.trees.report import approach_path, make_report, read_run
from limbtree.trees.stream import (
    EventKind,
    LimbTick,
    NodeStatus,
    NodeTick,
    RunEvent,
    RunHeader,
    TickSnapshot,
    TreeNode,
)

V1_RECORD = Path(__file__).parent / "data" / "record_v1"

DT = 0.1
TICKS = 80  # 8 s


TREE = TreeNode(
    "0",
    "Mission",
    "sequence",
    children=(TreeNode("0.0", "Square", "sync_move", MappingProxyType({"p_e": 0.02})),),
)


def header(limbs):
    return RunHeader(
        mission="square_test",
        mission_file="missions/square_test.yaml",
        parameters={},
        seed=7,
        clock="sim",
        rate_hz=1 / DT,
        tree=TREE,
        robots={},
    )


def along_x(index, offset):
    """The limbs' move of :func:`write_run`: along x, 10 mm a tick [m]."""
    return (0.01 * index, offset, 0.5)


def write_run(
    directory,
    *,
    summary=True,
    skills_extra=None,
    limbs=("heavy", "light"),
    move=along_x,
    lead=(0.015, 0.0, 0.0),
):
    """A run of a move (along x), the light limb disrupted from 3 s to 5 s (record layout 2).

    ``move(index, offset)`` is a limb's sensed position at a tick [m]; its command leads it
    by ``lead`` [m].
    """
    recorder = Recorder(directory)
    recorder.on_start(header(limbs))
    for index in range(TICKS):
        t = index * DT
        events = []
        if index == 30:
            events.append(RunEvent(EventKind.FAULT_INJECTED, t, "light", "power_off"))
        if index == 50:
            events.append(RunEvent(EventKind.FAULT_ENDED, t, "light", "power_off"))
        if index == 55:
            events.append(RunEvent(EventKind.FAULT_RECOVERED, t, "light", "power_off"))
        recovering = 50 <= index < 55
        limb_ticks = {}
        for offset, name in enumerate(limbs):
            x, y, z = move(index, offset)
            state = Pose((x, y, z))
            command = Pose((x + lead[0], y + lead[1], z + lead[2] + (0.02 if recovering else 0.0)))
            limb_ticks[name] = LimbTick(state, command, (0.0, 0.5), None, 0, False)
        internals = {
            "mode": "recovering" if recovering else "nominal",
            "segment": 0,
            "t": index / TICKS,
            "distance": 0.75 + (0.2 if recovering else 0.0),
            "message": "",
        }
        internals.update((skills_extra or (lambda i: {}))(index))
        running = NodeTick(NodeStatus.RUNNING, "", 0.001)
        recorder.on_tick(
            TickSnapshot(
                t=t,
                tick=index,
                nodes={"0": running, "0.0": running},
                limbs=limb_ticks,
                bases={},
                events=tuple(events),
                skills={"0.0": Figures(tuple(internals.items()))},
            )
        )
    if summary:
        recorder.close(
            {
                "v": 2,
                "mission": "square_test",
                "mission_file": "missions/square_test.yaml",
                "outcome": "SUCCESS",
                "seed": 7,
                "clock": "sim",
                "sim_time_s": (TICKS - 1) * DT,
                "wall_time_s": 0.5,
                "ticks": TICKS,
                "faults_injected": 1,
                "faults_recovered": 1,
                "recoveries": 1,
                "max_command_state_distance": 0.95,
                "metrics": {"square": {"laps": 1}},
                "faults": [
                    {
                        "at_s": 3.0,
                        "limb": "light",
                        "kind": "power_off",
                        "duration_s": 2.0,
                        "recovered_at_s": 5.5,
                    }
                ],
                "nodes": [
                    {
                        "id": "0",
                        "name": "Mission",
                        "type": "sequence",
                        "ticks": None,
                        "busy_s": None,
                        "last_status": "RUNNING",
                    },
                    {
                        "id": "0.0",
                        "name": "Square",
                        "type": "sync_move",
                        "ticks": TICKS,
                        "busy_s": 0.0123,
                        "last_status": "RUNNING",
                    },
                ],
            }
        )
    else:
        recorder._log.close()
    return directory


def names(result):
    return sorted(path.name for path in result.images)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """The report of a finished two-limb run (drawn once: the plots take a second)."""
    return make_report(write_run(tmp_path_factory.mktemp("run")))


@pytest.mark.slow
def test_a_finished_run_gets_every_limb_plot_the_skill_plot_and_its_numbers(finished):
    result = finished
    assert names(result) == [
        "limb_heavy_path.png",
        "limb_heavy_time.png",
        "limb_light_path.png",
        "limb_light_time.png",
        "skills.png",
    ]
    for path in result.images:
        assert path.parent.is_dir() and path.parent.joinpath("summary.json").exists()
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 5000
    text = result.text
    assert "square_test (missions/square_test.yaml)" in text
    assert "SUCCESS" in text
    assert "7, sim" in text
    assert "7.90 s mission time, 0.50 s wall (15.8x real time)" in text
    assert f"{TICKS} (log: {TICKS} ticks, t = 0.00 .. 7.90 s)" in text
    assert "1 injected, 1 recovered" in text
    assert "max clamp distance" in text and "0.9500 (<= 1: each command in its sphere)" in text
    assert "metrics.square.laps" in text
    assert "No summary" not in text


@pytest.mark.slow
def test_the_text_lists_faults_limbs_skills_and_per_node_tick_counts(finished):
    text = finished.text
    fault = next(line for line in text.splitlines() if "power_off" in line).split()
    assert fault == ["3.00", "light", "power_off", "2.00", "5.50"]
    heavy = next(line for line in text.splitlines() if line.strip().startswith("heavy")).split()
    assert heavy[1] == str(TICKS)  # commanded ticks
    assert math.isclose(float(heavy[2]), math.hypot(15.0, 20.0), abs_tol=0.01)  # mm
    (skill,) = [line.split() for line in text.splitlines() if line.strip().startswith("Square")]
    assert skill[1:4] == [str(TICKS), "0.9500", "1"]
    assert "nominal 75, recovering 5" in " ".join(skill)
    node = next(line for line in text.splitlines() if line.strip().startswith("0.0 ")).split()
    assert node == ["0.0", "Square", "sync_move", str(TICKS), "12.3", "RUNNING"]
    mission = next(line for line in text.splitlines() if line.strip().startswith("0 ")).split()
    assert mission == ["0", "Mission", "sequence", str(TICKS), "80.0", "RUNNING"]  # from the log


def overlapping_tick_labels(figure):
    """Pairs of neighbouring x tick labels drawn over each other, in any of ``figure``'s axes."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    clashes = []
    for axes in figure.axes:
        boxes = sorted(
            (
                (label.get_window_extent(renderer), label.get_text())
                for label in axes.get_xticklabels()
                if label.get_visible() and label.get_text()
            ),
            key=lambda box: box[0].x0,
        )
        for (left, a), (right, b) in itertools.pairwise(boxes):
            if left.x1 > right.x0:
                clashes.append((a, b))
    return clashes


@pytest.mark.slow
def test_a_path_that_holds_still_to_a_micrometre_along_an_axis_has_readable_ticks(tmp_path):
    # out_of_range.yaml: the heavy limb goes straight up and down, x still to 0.001 mm
    def up(index, offset):
        return (0.5998319 + 1e-7 * math.sin(index), offset, 0.45 + 0.002 * index)

    directory = write_run(tmp_path, limbs=("heavy",), move=up, lead=(0.0, 0.0, 0.0006))
    from report_figures import report_keeping_figures

    _, figures = report_keeping_figures(directory)
    figure = figures["limb_heavy_path.png"]
    assert overlapping_tick_labels(figure) == []
    for axes in figure.axes:  # (x-y, x-z) still shows where the limb is, in mm
        low, high = axes.get_xlim()
        assert low <= 599.8319 <= high


def test_a_fault_still_in_force_when_the_run_ended_did_not_last_its_schedule():
    from limbtree.trees.report.reading import RunLog
    from limbtree.trees.report.text import summary_text

    def fault(limb, ended_at_s, **more):
        return {"at_s": 6.0, "limb": limb, "kind": "power_off", "duration_s": 2.0,
                "injected_at_s": 6.02, "ended_at_s": ended_at_s, "recovered_at_s": None,
                **more}  # fmt: skip

    # aborted at 6.32 s, leg_0's power still off; leg_1's cut short by another at 7.0 s
    summary = {"outcome": "ABORTED", "sim_time_s": 6.32, "faults": [
        fault("leg_0", None), fault("leg_1", 7.0), {"at_s": 1.0, "limb": "leg_2",
        "kind": "blockage", "duration_s": 3.0}]}  # fmt: skip
    text = summary_text(Path("r"), summary, RunLog(), [], [])
    rows = {line.split()[1]: line.split() for line in text.splitlines() if "leg_" in line}
    assert rows["leg_0"][3:] == ["-", "NOT"]  # not 2.00: the run ended 0.30 s into it
    assert rows["leg_1"][3] == "0.98"  # in force from 6.02 s to 7.00 s
    assert rows["leg_2"][3] == "3.00"  # (a summary without the ticks: its schedule)


def test_one_image_is_one_png_file_in_the_text():
    from limbtree.trees.report.reading import RunLog
    from limbtree.trees.report.text import summary_text

    summary = {"outcome": "SUCCESS"}
    one = summary_text(Path("r"), summary, RunLog(), [Path("r/skills.png")], [])
    assert "Images (1 PNG file in r)" in one
    two = summary_text(Path("r"), summary, RunLog(), [Path("r/a.png"), Path("r/b.png")], [])
    assert "Images (2 PNG files in r)" in two


def test_disruptions_pair_each_fault_with_its_end_and_recovery(tmp_path):
    run = read_run(write_run(tmp_path) / "log.msgpack")
    (disruption,) = run.disruptions()
    assert disruption.limb == "light" and disruption.fault == "power_off"
    assert disruption.start == pytest.approx(3.0)
    assert disruption.end == pytest.approx(5.0)
    assert disruption.recovered == pytest.approx(5.5)
    assert run.skills["Square"].recoveries == 1
    assert run.limbs["light"].state[10] == pytest.approx((0.1, 1.0, 0.5))


@pytest.mark.slow
def test_a_killed_run_with_a_truncated_log_is_reported_from_the_log_alone(tmp_path):
    directory = write_run(tmp_path, summary=False, limbs=("light",))
    log = directory / "log.msgpack"
    log.write_bytes(log.read_bytes()[:-25])  # the last tick cut short
    result = make_report(directory)
    assert "No summary.json" in result.text and "from the log alone" in result.text
    assert f"log: {TICKS - 1} ticks" in result.text
    assert "1 injected, 1 recovered" in result.text
    assert "unknown (no summary)" in result.text
    assert "0.9500" in result.text  # the clamp distance, from the skills' internals
    assert "limb_light_time.png" in names(result)


@pytest.mark.slow
def test_a_record_a_run_is_still_writing_is_reported_as_its_ticks_so_far(tmp_path):
    directory = write_run(tmp_path, summary=False, limbs=("light",))
    with held_by_a_run(directory):
        result = make_report(directory)
    assert "A run is still writing this record: the report covers its ticks so far" in (result.text)
    assert "killed?" not in result.text


@pytest.mark.slow
def test_a_log_damaged_half_way_is_reported_up_to_the_damage(tmp_path):
    directory = write_run(tmp_path, summary=False, limbs=("light",))
    with open(directory / "log.msgpack", "ab") as log:
        log.write(msgpack.packb(42))
    result = make_report(directory)
    assert f"read up to its first {TICKS} ticks (0 to {TICKS - 1})" in result.text
    assert result.images


@pytest.mark.slow
def test_alignment_internals_add_the_error_and_speed_plots(tmp_path):
    def alignment(index):
        return {
            "dd_mm": 100.0 * math.exp(-index / 20),
            "dtheta_deg": 10.0 * math.exp(-index / 20),
            "v_raw": [0.03, 0.04, 0.0, 0.0, 0.0, 0.1],  # a twist: 50 mm/s linear
            "v_clamped": 0.02,
        }

    result = make_report(write_run(tmp_path, skills_extra=alignment, limbs=("light",)))
    assert {"alignment.png", "alignment_speed.png"} <= set(names(result))
    run = read_run(tmp_path / "log.msgpack")
    assert run.skills["Square"].extra["v_raw"][0] == pytest.approx(0.05)
    assert run.skills["Square"].extra["dd_mm"][0] == pytest.approx(100.0)


@pytest.mark.slow
def test_an_alignment_reporting_its_path_adds_the_path_plot_unrolled_along_its_line(tmp_path):
    # The end-effector goes from (0, 0, 0) to (300, 0, 0) mm, bulging 20 mm in y halfway;
    # the capture is blind for the first 5 ticks; the goal it reports moves at first.
    def path(index):
        if index < 5:
            return {"dd_mm": 300.0, "ee_mm": None, "goal_mm": None}
        s = (index - 5) / (TICKS - 6)
        bulge = 20.0 * math.sin(math.pi * s)
        goal = [300.0, 0.0, 0.0] if index >= 10 else [290.0, 5.0, 0.0]
        return {"dd_mm": 300.0 * (1 - s), "ee_mm": [300.0 * s, bulge, 0.0], "goal_mm": goal}

    result = make_report(write_run(tmp_path, skills_extra=path, limbs=("light",)))
    assert "alignment_path.png" in names(result)
    skill = read_run(tmp_path / "log.msgpack").skills["Square"]
    assert len(skill.points["ee_mm"]) == TICKS and math.isnan(skill.points["ee_mm"][0][0])
    approach = approach_path(skill)
    assert approach.goal == (300.0, 0.0, 0.0)  # the last goal reported
    along, across = approach.unrolled()
    assert along[0] == 0.0 and along[-1] == pytest.approx(300.0)
    assert max(across) == pytest.approx(20.0, abs=0.1)


@pytest.mark.slow
def test_without_a_path_there_is_no_path_plot(tmp_path):
    result = make_report(write_run(tmp_path, skills_extra=lambda i: {"dd_mm": 5.0}))
    assert "alignment.png" in names(result)
    assert "alignment_path.png" not in names(result)


def test_alignment_keys_that_appear_late_are_padded(tmp_path):
    def late(index):
        return {"dd_mm": 5.0} if index >= 40 else {}

    run = read_run(write_run(tmp_path, skills_extra=late) / "log.msgpack")
    values = run.skills["Square"].extra["dd_mm"]
    assert len(values) == TICKS
    assert math.isnan(values[0]) and values[-1] == 5.0
    assert "v_raw" not in run.skills["Square"].extra


def test_an_empty_log_with_a_summary_reports_the_summary_without_plots(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.close({"mission": "nothing", "outcome": "ABORTED", "ticks": 0})
    result = make_report(tmp_path)
    assert result.images == []
    assert "ABORTED" in result.text and "no complete tick" in result.text


def test_an_empty_log_without_a_summary_is_an_error(tmp_path):
    (tmp_path / "log.msgpack").write_bytes(b"")
    with pytest.raises(RunError, match="nothing to report"):
        make_report(tmp_path)


def test_a_summary_without_a_log_reports_the_summary(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"mission": "m", "outcome": "FAILURE"}))
    result = make_report(tmp_path)
    assert "FAILURE" in result.text and "No log.msgpack" in result.text
    assert result.images == []


@pytest.mark.parametrize("make", ["missing", "file", "empty"])
def test_a_directory_that_is_not_a_run_record_is_a_clear_error(tmp_path, make):
    target = tmp_path / "record"
    if make == "file":
        target.write_text("x")
    elif make == "empty":
        target.mkdir()
    expected = {"missing": "does not exist", "file": "is not a directory", "empty": "neither"}
    with pytest.raises(RunError, match=expected[make]) as error:
        make_report(target)
    assert "--record DIR" in str(error.value)


def test_a_sweeps_folder_is_refused_naming_a_run_record_it_holds(tmp_path):
    sweep = tmp_path / "sweep"
    for name in ("k=1,seed=0", "k=2,seed=0"):
        (sweep / name).mkdir(parents=True)
        (sweep / name / "summary.json").write_text(json.dumps({"outcome": "SUCCESS"}))
    (sweep / "sweep.csv").write_text("run,k,seed\n")
    with pytest.raises(RunError, match="is not a run record") as error:
        make_report(sweep)
    assert f"it holds 2 run records (a sweep's folder?): give one of them, e.g. {sweep}/k=1," in (
        str(error.value)
    )


@pytest.mark.parametrize("name", ["log.msgpack", "summary.json"])
def test_a_records_own_file_given_instead_of_its_directory_names_the_directory(tmp_path, name):
    directory = write_run(tmp_path / "rec")
    with pytest.raises(RunError, match="is not a directory") as error:
        make_report(directory / name)
    assert str(error.value).endswith(f"(limbtree run MISSION --record DIR): {directory}")


def test_a_damaged_summary_is_a_clear_error(tmp_path):
    write_run(tmp_path)
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(RunError, match=r"summary\.json cannot be read"):
        make_report(tmp_path)


@pytest.mark.parametrize("with_log", [False, True])
def test_a_summary_json_without_an_outcome_is_not_taken_for_a_runs(tmp_path, with_log):
    if with_log:
        write_run(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"loss": 0.1, "epochs": 3}))
    with pytest.raises(RunError, match=r"summary\.json is not a run summary: it has no outcome"):
        make_report(tmp_path)


def test_a_file_that_is_not_a_limbtree_log_is_an_error(tmp_path):
    (tmp_path / "log.msgpack").write_bytes(msgpack.packb([1, 2, 3]))
    with pytest.raises(RunError, match="not a limbtree run log"):
        make_report(tmp_path)


def test_a_version_1_record_reads_and_reports_as_before(tmp_path):
    record = tmp_path / "v1"
    shutil.copytree(V1_RECORD, record)
    run = read_run(record / "log.msgpack")
    assert run.header is None and run.ticks == 101
    assert list(run.skills) == ["up past reach and back down"]  # v1 keys skills by name
    result = make_report(record)
    text = result.text
    assert "out_of_range (missions/out_of_range.yaml)" in text
    assert "101 (log: 101 ticks, t = 0.00 .. 2.00 s)" in text
    heavy = next(line for line in text.splitlines() if line.strip().startswith("heavy")).split()
    assert heavy[1:] == ["100", "1.20", "0"]
    node = next(line for line in text.splitlines() if "velocity_move" in line).split()
    assert node[-4:] == ["velocity_move", "101", "64.3", "SUCCESS"]  # no id column in v1
    assert names(result) == ["limb_heavy_path.png", "limb_heavy_time.png", "skills.png"]


def test_a_version_2_log_cut_half_way_through_a_tick_reads_up_to_the_cut(tmp_path):
    directory = write_run(tmp_path, summary=False, limbs=("light",))
    log = directory / "log.msgpack"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) - len(data) // (2 * TICKS)])  # half the last tick
    run = read_run(log)
    assert run.header is not None and run.header["v"] == 2
    assert run.ticks == TICKS - 1 and run.damage is None
    assert run.labels == {"0": "Mission", "0.0": "Square"}
    assert make_report(directory).images


def test_a_finished_runs_log_cut_short_is_named_against_the_summarys_count(tmp_path):
    # (a record copied while its run wrote it, or a disk that filled: the summary counts
    # every tick, the log holds the first half; the report mixed the two without a word)
    directory = write_run(tmp_path, limbs=("light",))
    log = directory / "log.msgpack"
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])
    run = read_run(log)
    assert 0 < run.ticks < TICKS and run.damage is None
    text = make_report(directory).text
    assert (
        f"The log ends at its first {run.ticks} ticks (0 to {run.ticks - 1}) "
        f"(t = {run.t_last:.2f} s) of the {TICKS} the summary counts: it was cut short"
    ) in text
    # a whole log, or an aborted run's (one map more than its summary counts), says nothing
    for whole in (write_run(tmp_path / "whole", limbs=("light",)), directory):
        if whole == directory:
            summary = json.loads((directory / "summary.json").read_text())
            summary["ticks"] = run.ticks - 1
            (directory / "summary.json").write_text(json.dumps(summary))
        assert "cut short" not in make_report(whole).text


def test_a_log_of_a_layout_this_version_cannot_read_is_a_clear_error(tmp_path):
    (tmp_path / "log.msgpack").write_bytes(msgpack.packb({"kind": "header", "v": 99, "t": 0}))
    with pytest.raises(RunError, match="layout 99"):
        make_report(tmp_path)


def test_two_nodes_with_one_name_are_two_rows_in_the_report(tmp_path):
    recorder = Recorder(tmp_path)
    tree = TreeNode(
        "0", "Mission", "sequence",
        children=(TreeNode("0.0", "move", "wait"), TreeNode("0.1", "move", "wait")),
    )  # fmt: skip
    recorder.on_start(RunHeader("twins", "", {}, 0, "sim", 10.0, tree, {}))
    for index in range(10):
        node = "0.0" if index < 4 else "0.1"
        ticks = {"0": NodeTick(NodeStatus.RUNNING, "", 0.0),
                 node: NodeTick(NodeStatus.RUNNING, "", 0.0)}  # fmt: skip
        recorder.on_tick(TickSnapshot(index * 0.1, index, ticks, {}, {}, (), {}))
    recorder.close({"mission": "twins", "outcome": "SUCCESS", "nodes": [
        {"id": "0", "name": "Mission", "type": "sequence", "ticks": 10},
        {"id": "0.0", "name": "move", "type": "wait", "ticks": 4},
        {"id": "0.1", "name": "move", "type": "wait", "ticks": 6},
    ]})  # fmt: skip
    text = make_report(tmp_path).text
    rows = [line.split() for line in text.splitlines() if "move [" in line]
    assert [row[:5] for row in rows] == [
        ["0.0", "move", "[0.0]", "wait", "4"],
        ["0.1", "move", "[0.1]", "wait", "6"],
    ]


# Plots: what a person reads off them (issue 12, item 12) ----------------------------------


def _legend_and_patches(disruptions):
    from matplotlib.figure import Figure

    from limbtree.trees.report.figures import _mark_disruptions

    axes = Figure().subplots()
    _mark_disruptions(axes, disruptions, 10.0)
    labels = [text.get_text() for text in axes.legend().get_texts()]
    return axes, labels


def test_each_fault_kind_is_shaded_in_its_own_colour_and_named_once_in_the_legend():
    from limbtree.trees.report import Disruption
    from limbtree.trees.report.figures import fault_colour

    kinds = ("blockage", "slowdown", "disassembly", "power_off", "ik_error")
    assert len({fault_colour(kind) for kind in kinds}) == len(kinds)
    disruptions = [
        Disruption("a", "blockage", 1.0, 2.0, 2.5),
        Disruption("b", "blockage", 3.0, 4.0, None),
        Disruption("a", "power_off", 5.0, 6.0, 6.5),
    ]
    axes, labels = _legend_and_patches(disruptions)
    assert labels.count("fault: blockage") == 1
    assert labels.count("fault: power_off") == 1
    assert labels.count("recovered") == 1
    colours = {tuple(p.get_facecolor()[:3]) for p in axes.patches}
    assert len(colours) == 2


def test_a_power_off_gap_is_hatched_and_labelled_on_the_plot():
    from limbtree.trees.report import Disruption

    axes, _ = _legend_and_patches([Disruption("a", "power_off", 5.0, 6.0, None)])
    assert [p.get_hatch() for p in axes.patches] == ["//"]
    assert any("power off" in text.get_text() for text in axes.texts)


def test_a_power_off_label_late_in_the_run_stays_inside_the_plot():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from limbtree.trees.report import Disruption

    # (an aborted run: power lost at 9.5 s of a 10 s run, the label ran past the right edge)
    axes, _ = _legend_and_patches([Disruption("a", "power_off", 9.5, None, None)])
    axes.set_xlim(0.0, 10.0)  # (the run's ticks, drawn from 0)
    canvas = FigureCanvasAgg(axes.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    (label,) = [t for t in axes.texts if "power off" in t.get_text()]
    box = label.get_window_extent(renderer)
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1


def test_power_off_labels_close_together_are_written_once_not_over_each_other():
    from limbtree.trees.report import Disruption

    # a run of 10 s: labels at least 1 s apart; four legs cut together, then two more cuts
    cuts = [Disruption(leg, "power_off", 2.0, 3.0 + i, None) for i, leg in enumerate("abcd")]
    cuts += [
        Disruption("a", "power_off", 2.5, 3.0, None),
        Disruption("a", "power_off", 7.0, 8.0, None),
    ]
    axes, _ = _legend_and_patches(cuts)
    placed = [text.xy[0] for text in axes.texts if "power off" in text.get_text()]
    assert placed == [2.0, 7.0]
    assert len(axes.patches) == 6  # every gap still hatched


def test_the_skill_series_carry_each_moves_progress_along_its_waypoints(tmp_path):
    run = read_run(write_run(tmp_path) / "log.msgpack")
    progress = run.skills["Square"].progress
    assert progress[0] == 0.0
    assert progress[40] == pytest.approx(40 / TICKS)
    assert all(b >= a for a, b in itertools.pairwise(progress))


@pytest.mark.slow
def test_the_skill_plot_shows_tracking_per_limb_not_a_flat_clamp_distance(tmp_path):
    from matplotlib.figure import Figure

    from limbtree.trees.report.figures import _skills, _tracking_mm

    run = read_run(write_run(tmp_path) / "log.msgpack")
    # The command leads the state by 15 mm, and by 25 mm while recovering.
    tracking = _tracking_mm(run.limbs["light"])
    assert tracking[10] == pytest.approx(15.0)
    assert tracking[52] == pytest.approx(25.0)
    drawn: list[Figure] = []

    def keep(*args, **kwargs):
        figure = Figure(*args, **kwargs)
        drawn.append(figure)
        return figure

    _skills(keep, run.skills, run.limbs, run.disruptions(), run.t_last, tmp_path)
    tracking_axes, progress_axes, _ = drawn[0].axes[:3]
    assert tracking_axes.get_ylabel() == "|command - state| [mm]"
    assert {line.get_label() for line in tracking_axes.lines} >= {"heavy", "light"}
    assert progress_axes.get_ylabel() == "waypoint reached"
    assert not tracking_axes.yaxis.get_major_formatter().get_useOffset()


def test_a_killed_runs_text_takes_the_mission_seed_clock_and_node_types_from_the_header(
    tmp_path,
):
    from limbtree.trees.report.text import summary_text

    directory = write_run(tmp_path, summary=False, limbs=("light",))
    run = read_run(directory / "log.msgpack")
    text = summary_text(directory, None, run, [], [])
    line = {row.split("  ")[1].strip(): row for row in text.splitlines() if row.startswith("  ")}
    assert "square_test (missions/square_test.yaml)" in line["mission"]
    assert line["seed, clock"].split()[-2:] == ["7,", "sim"]
    node = next(row for row in text.splitlines() if row.strip().startswith("0.0 ")).split()
    assert node[:3] == ["0.0", "Square", "sync_move"]


def test_a_killed_runs_node_times_are_summed_from_the_ticks_busy(tmp_path):
    from limbtree.trees.report.text import summary_text

    directory = write_run(tmp_path, summary=False, limbs=("light",))
    run = read_run(directory / "log.msgpack")
    text = summary_text(directory, None, run, [], [])
    rows = {row.split()[0]: row.split() for row in text.splitlines() if row[:4] in ("  0 ", "  0.")}
    # each node was ticked TICKS times, each tick 1 ms of wall time (NodeTick's busy)
    assert rows["0"] == ["0", "Mission", "sequence", str(TICKS), f"{TICKS * 1.0:.1f}", "RUNNING"]
    assert rows["0.0"] == [
        "0.0",
        "Square",
        "sync_move",
        str(TICKS),
        f"{TICKS * 1.0:.1f}",
        "RUNNING",
    ]


def test_an_aborted_runs_extra_log_map_is_named_as_the_aborts(tmp_path):
    from limbtree.trees.report.text import summary_text

    directory = write_run(tmp_path, summary=False, limbs=("light",))
    run = read_run(directory / "log.msgpack")
    aborted = {"outcome": "ABORTED", "ticks": run.ticks - 1}
    assert f"(log: {run.ticks} ticks, the last one the abort's," in summary_text(
        directory, aborted, run, [], []
    )
    finished = {"outcome": "SUCCESS", "ticks": run.ticks}
    assert "abort's" not in summary_text(directory, finished, run, [], [])
