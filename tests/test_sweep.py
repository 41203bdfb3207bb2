"""``limbtree sweep``: the product of settings as recorded runs, one CSV row each, resumable.

Planning, tables, the plot, the progress output and bad input are checked without processes.
The runs (marked slow, like every test that runs missions) are real ``limbtree run``
processes of a tiny mission, a ``wait`` on one simulated leg, so every figure checked is a
closed form of the mission: a wait of ``w`` seconds at 50 Hz ends at ``t = w`` after
``50 w + 1`` ticks. A wrapper around ``limbtree`` that dies before the run starts for
``tag=boom`` stands for a run that cannot start; a limb whose agent address nothing listens
on is a real one.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from records import held_by_a_run

from limbtree.trees.cli import main
from limbtree.trees.interrupts import STOP_WITH_ENV
from limbtree.trees.recorder import read_header
from limbtree.trees.sweep import (
    Finished,
    PlannedRun,
    RunResult,
    RunStatus,
    Setting,
    SweepError,
    SweepPlan,
    SweepProgress,
    SweepReport,
    SweepRequest,
    SweepResult,
    check_plan,
    draw_plot,
    flatten_numbers,
    format_table,
    kept_result,
    parse_seeds,
    parse_settings,
    parse_values,
    plan_sweep,
    replaced_table_note,
    run_sweep,
    sweep,
    sweep_table,
)

RATE_HZ = 50
TINY = f"""\
mission: tiny
clock: sim
rate_hz: {RATE_HZ}
parameters:
  wait_s: {{default: 0.2, description: "how long to wait, s"}}
  tag: a
  where: sim
limbs:
  leg: {{robot: moonbot_zero, limb: leg_0, agent: $where}}
tree:
  wait: {{duration_s: $wait_s}}
"""
#: ``limbtree``, except that a run with ``--set tag=boom`` dies before it starts.
CRASHING = """\
import sys
if "tag=boom" in sys.argv:
    sys.exit("boom: this run could not start")
from limbtree.trees.cli import main
sys.exit(main(sys.argv[1:]))
"""


def write_mission(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    mission = folder / "tiny.yaml"
    mission.write_text(TINY)
    return mission


def read_csv(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as source:
        return {row["run"]: row for row in csv.DictReader(source)}


def ticks_of(wait_s: float) -> int:
    """The ticks of a wait of ``wait_s`` at RATE_HZ: t = 0, 1/50, ..., wait_s."""
    return round(wait_s * RATE_HZ) + 1


def test_every_public_name_imports():
    import limbtree.trees.sweep as module

    assert all(hasattr(module, name) for name in module.__all__)


# Planning -------------------------------------------------------------------------------


def test_values_are_lists_and_integer_ranges_with_both_ends():
    assert parse_values("--set x", "baseline,ramp") == ("baseline", "ramp")
    assert parse_values("--set x", "0..3, 7") == ("0", "1", "2", "3", "7")
    assert parse_values("--set x", "-2..0") == ("-2", "-1", "0")
    assert parse_values("--set x", "[1, 2],[3, 4]") == ("[1, 2]", "[3, 4]")
    assert parse_values("--set x", "'a,b',c") == ("'a,b'", "c")
    assert parse_values("--set x", "'../up'") == ("'../up'",)
    assert parse_seeds("0..19") == tuple(range(20))
    assert parse_seeds("3") == (3,)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("5..2", "ends (2) before it starts (5); write 2..5"),
        ("0.5..2", "integers"),
        ("1..", "A..B"),
        ("a..b", "A..B"),
    ],
)
def test_a_bad_range_is_refused_with_how_to_write_it(text, says):
    with pytest.raises(SweepError, match="bad range") as error:
        parse_settings([f"terrain_seed={text}"])
    assert says in str(error.value)
    assert "--set terrain_seed" in str(error.value)


def test_an_empty_product_is_refused():
    with pytest.raises(SweepError, match="product of the settings is empty"):
        parse_settings(["planner="])
    with pytest.raises(SweepError, match="product of the settings is empty"):
        parse_seeds(" ")
    with pytest.raises(SweepError, match="empty value"):
        parse_settings(["planner=a,,b"])


def test_a_setting_or_value_given_twice_and_a_malformed_set_are_refused():
    with pytest.raises(SweepError, match="given twice; give all its values at once"):
        parse_settings(["planner=a", "planner=b"])
    with pytest.raises(SweepError, match="the value 2 is given twice"):
        parse_settings(["k=1..3,2"])
    with pytest.raises(SweepError, match="NAME=V1,V2"):
        parse_settings(["planner"])
    with pytest.raises(SweepError, match="seeds are integers >= 0"):
        parse_seeds("1,x")
    with pytest.raises(SweepError, match="--seed"):
        plan_sweep(Path("m.yaml"), parse_settings(["seed=1,2"]))


@pytest.mark.parametrize("text", ["00,0", "0..2,02", "7,0007"])
def test_a_seed_written_twice_in_two_ways_is_refused(text):
    # (two runs of one seed would share one folder: --seed 00,0 named both seed=0-b6589fc6)
    with pytest.raises(SweepError, match=r"--seed .*: the seed \d+ is given twice; give it once"):
        parse_seeds(text)


def test_the_product_has_every_combination_once_named_from_its_settings():
    settings = parse_settings(["planner=baseline,ramp", "terrain_seed=0..11"])
    plan = plan_sweep(Path("m.yaml"), settings, (1, 2))
    expected = list(itertools.product(["baseline", "ramp"], range(12), [1, 2]))
    assert [(dict(r.settings)["planner"], int(dict(r.settings)["terrain_seed"]), r.seed)
            for r in plan.runs] == expected  # fmt: skip
    assert plan.runs[0].name == "planner=baseline,terrain_seed=00,seed=1"
    assert plan.runs[-1].name == "planner=ramp,terrain_seed=11,seed=2"
    assert len({r.name for r in plan.runs}) == len(plan.runs) == 48
    assert plan.swept == ("planner", "terrain_seed", "seed")
    # Seeds repeat a condition: the table pools them.
    assert plan.default_by() == ("planner",)
    assert plan_sweep(Path("m.yaml"), ()).runs == (PlannedRun("run", (), 0),)


def test_values_unsafe_in_a_file_name_get_distinct_safe_names():
    plan = plan_sweep(Path("m.yaml"), [Setting("p", ("a/b", "a_b", "tcp://h:9", "x" * 60))])
    names = [run.name for run in plan.runs]
    assert len(set(names)) == 4
    for name in names:
        assert all(c.isalnum() or c in "._+-=," for c in name), name
        assert len(name) < 60


def test_an_unknown_parameter_is_refused_with_the_missions_parameters(tmp_path):
    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait=1"]))
    with pytest.raises(SweepError) as error:
        check_plan(plan)
    assert "has no parameter wait; its parameters: wait_s, tag, where" in str(error.value)


@pytest.mark.parametrize("values", ["0.2,0.20", "1,1.0,2", "0.50,.5"])
def test_two_values_the_mission_reads_as_one_are_refused_before_anything_runs(tmp_path, values):
    # (--set up_s=10,10.0 ran one run twice, and the table counted it as two conditions)
    plan = plan_sweep(write_mission(tmp_path), parse_settings([f"wait_s={values}"]))
    with pytest.raises(SweepError, match=r"are the same value of wait_s \(.+\) for the mission"):
        check_plan(plan)
    # text the mission keeps as text is not a number: 'a' and 'A' are two tags
    check_plan(plan_sweep(write_mission(tmp_path), parse_settings(["tag=a,A"])))


def test_a_value_the_mission_refuses_is_refused_before_anything_runs(tmp_path):
    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1,-1"]))
    with pytest.raises(SweepError) as error:
        check_plan(plan)
    assert "--set wait_s=-1: the mission does not load with it" in str(error.value)
    assert "duration_s must be > 0" in str(error.value)
    assert not (tmp_path / "runs").exists()


def test_the_command_line_refuses_bad_jobs_and_a_missing_ray_with_one_line(
    tmp_path, capsys, monkeypatch
):
    mission = str(write_mission(tmp_path))
    out = str(tmp_path / "out")
    assert main(["sweep", mission, "--jobs", "0", "--out", out]) == 1
    assert "--jobs must be at least 1 (runs at a time), got 0" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    assert main(["sweep", mission, "--ray", "auto", "--out", out]) == 1
    assert "pip install 'limbtree[cluster]'" in capsys.readouterr().err
    assert main(["sweep", mission, "--set", "tag=a,b", "--by", "tags", "--out", out]) == 1
    assert "--by tags: not a setting of this sweep; its settings: tag, seed" in (
        capsys.readouterr().err
    )
    assert not Path(out).exists()


@pytest.mark.parametrize(
    ("by", "says"),
    [("tag,tag", "--by tag,tag: tag is given twice; give it once"),
     ("tag,,seed", "--by tag,,seed: an empty name between two commas; remove it"),
     (",", "--by ,: an empty name between two commas")],
)  # fmt: skip
def test_a_by_name_given_twice_or_empty_is_refused_before_anything_runs(tmp_path, capsys, by, says):
    # (--by up_s,up_s printed the table with two up_s columns; --by , pooled every run)
    mission, out = str(write_mission(tmp_path)), tmp_path / "out"
    assert main(["sweep", mission, "--set", "tag=a,b", "--by", by, "--out", str(out)]) == 1
    assert says in capsys.readouterr().err
    assert not out.exists()


# Tables ---------------------------------------------------------------------------------


def test_metrics_are_flattened_to_their_numbers():
    metrics = {"align": {"final_dd_mm": 4.5, "ok": True, "label": "x", "nan": None},
               "walk": {"steps": [{"s": 27}, {"s": 23.5}]}}  # fmt: skip
    assert dict(flatten_numbers(metrics, "metrics")) == {
        "metrics.align.final_dd_mm": 4.5,
        "metrics.walk.steps.0.s": 27,
        "metrics.walk.steps.1.s": 23.5,
    }


def synthetic_result() -> SweepResult:
    """planner=baseline,ramp x seeds 0..2 with made-up summaries (one baseline failure)."""
    plan = plan_sweep(Path("m.yaml"), [Setting("planner", ("baseline", "ramp"))], (0, 1, 2))
    peak = {"baseline": [1.0, 2.0, 3.0], "ramp": [0.5, 0.5, 0.8]}
    results = []
    for run in plan.runs:
        planner = run.overrides["planner"]
        outcome = "FAILURE" if (planner, run.seed) == ("baseline", 2) else "SUCCESS"
        summary = {"outcome": outcome, "sim_time_s": 10.0 + run.seed, "wall_time_s": 1.0,
                   "ticks": 500, "faults_injected": 0, "recoveries": 0,
                   "metrics": {"grip": {"peak_n": peak[planner][run.seed]}}}  # fmt: skip
        results.append(RunResult(run, RunStatus.DONE, summary, 0 if outcome == "SUCCESS" else 1))
    return SweepResult(plan, Path("out"), results)


def test_the_table_gives_each_group_its_outcomes_and_mean_and_sd():
    table = sweep_table(synthetic_result())
    assert table.metric(None) == "metrics.grip.peak_n"
    assert table.metric("grip.peak_n") == "metrics.grip.peak_n"
    with pytest.raises(SweepError, match="numeric columns: sim_time_s, wall_time_s"):
        table.metric("grip.nope")
    lines = format_table(table, ("planner",)).splitlines()
    assert lines[0].split() == ["planner", "runs", "outcomes", "sim_time_s", "wall_time_s",
                                "grip.peak_n"]  # fmt: skip
    # baseline: peaks 1, 2, 3: mean 2, sample sd 1; times 10, 11, 12: mean 11, sd 1; the
    # wall times are all 1: sd 0.
    # (the sd to two significant figures, the mean to the same place)
    assert lines[2].split() == ["baseline", "3", "2", "SUCCESS,", "1", "FAILURE",
                                "11.0", "±", "1.0", "1", "±", "0", "2.0", "±", "1.0"]  # fmt: skip
    # ramp: 0.5, 0.5, 0.8: mean 0.6, sd sqrt(((0.1)^2 * 2 + 0.2^2) / 2) = sqrt(0.03) = 0.173.
    assert lines[3].split()[-3:] == ["0.60", "±", "0.17"]
    # One group of all runs when nothing but seeds is swept.
    assert format_table(table, ()).splitlines()[2].split()[:2] == ["6", "5"]


def test_a_mean_is_given_to_the_place_of_its_sds_second_figure():
    """``0.023 ± 0.01705`` and ``0.05506 ± 0.005257`` gave the spread more figures than
    the mean, and each cell its own precision."""
    from limbtree.trees.sweep import _rounded

    assert _rounded(0.023, 0.01705) == "0.023 ± 0.017"
    assert _rounded(0.05506, 0.005257) == "0.0551 ± 0.0053"
    assert _rounded(12345.6, 234.0) == "12350 ± 230"
    assert _rounded(1e-9, 3e-10) == "1e-09 ± 3e-10"  # (beyond plain decimals: 4 figures)


def test_a_table_too_wide_for_a_line_per_group_has_a_column_per_group():
    lines = format_table(sweep_table(synthetic_result()), ("planner",), width=40).splitlines()
    assert lines[0].split() == ["planner=baseline", "planner=ramp"]
    rows = {line.split("  ")[0]: line.split()[-6:] for line in lines[2:]}
    assert lines[2].split() == ["runs", "3", "3"]
    assert rows["grip.peak_n"] == ["2.0", "±", "1.0", "0.60", "±", "0.17"]


def test_the_plot_draws_each_group_and_nothing_when_no_run_has_the_metric(tmp_path):
    table = sweep_table(synthetic_result())
    image = draw_plot(table, ("planner",), "metrics.grip.peak_n", tmp_path / "a.png", "peaks")
    assert image is not None and image.read_bytes()[:4] == b"\x89PNG"
    plan = plan_sweep(Path("m.yaml"), [Setting("k", ("1", "2"))])
    failed = SweepResult(plan, tmp_path, [RunResult(r, RunStatus.ERROR) for r in plan.runs])
    assert draw_plot(sweep_table(failed), ("k",), "sim_time_s", tmp_path / "b.png", "") is None
    assert not (tmp_path / "b.png").exists()


def test_the_plot_names_its_unit_says_what_marks_are_and_slants_long_labels():
    from limbtree.trees.sweep import metric_unit, plot_figure

    assert metric_unit("metrics.climb.max_grip_force_n") == "N"
    assert metric_unit("metrics.climb.min_gia_margin_m_s2") == "m/s²"
    assert metric_unit("metrics.climb.detachments") == ""
    table = sweep_table(synthetic_result())
    (axes,) = plot_figure(table, ("planner",), "metrics.grip.peak_n", "t").axes
    assert axes.get_ylabel() == "metrics.grip.peak_n [N]"
    legend = axes.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["SUCCESS", "FAILURE or ABORTED"]
    assert all(t.get_rotation() == 0 for t in axes.get_xticklabels())  # two short labels
    (axes,) = plot_figure(table, ("planner", "seed"), "metrics.grip.peak_n", "t").axes
    assert all(t.get_rotation() == 30 for t in axes.get_xticklabels())  # six long ones
    result = synthetic_result()
    good = [r for r in result.results if r.summary and r.summary["outcome"] == "SUCCESS"]
    succeeded = sweep_table(dataclasses.replace(result, results=good))
    (axes,) = plot_figure(succeeded, ("planner",), "metrics.grip.peak_n", "t").axes
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["SUCCESS"]  # (one kind)


@pytest.mark.parametrize(("why", "code"), [(None, 1), ("Ctrl-C", 130), ("SIGTERM", 143),
                                          ("SIGHUP", 129)])  # fmt: skip
def test_the_exit_status_says_which_signal_stopped_the_sweep(why, code):
    plan = plan_sweep(Path("m.yaml"), [Setting("k", ("1", "2"))])
    results = [RunResult(plan.runs[0], RunStatus.DONE), RunResult(plan.runs[1], RunStatus.NOT_RUN)]
    assert SweepResult(plan, Path("out"), results, why).exit_code == code


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar_and_other_streams_plain_lines():
    result = synthetic_result()
    for stream in (Terminal(), io.StringIO()):
        progress = SweepProgress(stream, total=6, kept=2)
        progress.start(result.plan, Path("out"), 4, 2, "local processes")
        progress.running(1)
        progress.finished(result.results[0], 0)
        progress.close()
        text = stream.getvalue()
        assert "6 runs of m.yaml into out (2 finished before: kept); 4 runs to do" in text
        assert "[3/6] planner=baseline,seed=0: SUCCESS in 10.00 s mission time" in text
        bar = "\r\x1b[K[##########--------------------] 2/6, 1 running"
        assert (bar in text) == isinstance(stream, Terminal)


# Runs (processes: slow, as every test that runs missions) --------------------------------


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> SweepReport:
    """wait_s=0.1,0.3 x tag=a,boom at --jobs 2; the two tag=boom runs cannot start."""
    folder = tmp_path_factory.mktemp("sweep")
    crashing = folder / "crashing_limbtree.py"
    crashing.write_text(CRASHING)
    request = SweepRequest(
        mission=write_mission(folder),
        settings=["wait_s=0.1,0.3", "tag=a,boom"],
        jobs=2,
        out=folder / "out",
        command=[sys.executable, str(crashing)],
    )
    return sweep(request, io.StringIO())


@pytest.mark.slow
def test_each_run_is_one_csv_row_with_its_settings_outcome_and_times(swept):
    rows = read_csv(swept.csv)
    assert list(rows) == ["wait_s=0.1,tag=a", "wait_s=0.1,tag=boom",
                          "wait_s=0.3,tag=a", "wait_s=0.3,tag=boom"]  # fmt: skip
    for wait_s in (0.1, 0.3):
        row = rows[f"wait_s={wait_s},tag=a"]
        assert (row["wait_s"], row["tag"], row["seed"]) == (str(wait_s), "a", "0")
        assert (row["status"], row["outcome"], row["exit"]) == ("done", "SUCCESS", "0")
        assert float(row["sim_time_s"]) == pytest.approx(wait_s, abs=1e-9)
        assert int(row["ticks"]) == ticks_of(wait_s)
        assert 0 < float(row["wall_time_s"]) < 30
        # Each run is a normal record, with its settings in its header.
        record = swept.result.out / f"wait_s={wait_s},tag=a"
        assert read_header(record / "log.msgpack")["parameters"]["wait_s"] == wait_s


@pytest.mark.slow
def test_a_run_that_cannot_start_is_one_error_row_and_the_sweep_exits_non_zero(swept):
    rows = read_csv(swept.csv)
    for wait_s in (0.1, 0.3):
        row = rows[f"wait_s={wait_s},tag=boom"]
        assert (row["status"], row["outcome"], row["sim_time_s"]) == ("error", "", "")
        assert row["exit"] == "1"
        assert "boom: this run could not start" in row["failure"]
    assert swept.result.exit_code == 1
    assert swept.plot is not None and swept.plot.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_the_printed_table_groups_the_runs_by_the_swept_settings(swept):
    lines = swept.text.splitlines()
    assert lines[0].split() == ["wait_s", "tag", "runs", "outcomes", "sim_time_s",
                                "wall_time_s"]  # fmt: skip
    assert lines[2].split()[:6] == ["0.1", "a", "1", "1", "SUCCESS", "0.1"]
    assert lines[3].split()[:7] == ["0.1", "boom", "1", "1", "could", "not", "run"]
    assert lines[4].split()[:6] == ["0.3", "a", "1", "1", "SUCCESS", "0.3"]


@pytest.mark.slow
def test_a_second_sweep_keeps_the_finished_runs_and_runs_the_others_again(swept, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(swept.result.out, out)
    finished = [out / "wait_s=0.1,tag=a" / "summary.json", out / "wait_s=0.3,tag=a" / "log.msgpack"]
    before = [path.stat().st_mtime_ns for path in finished]
    crashing = swept.result.out.parent / "crashing_limbtree.py"
    request = SweepRequest(
        mission=swept.result.plan.mission,
        settings=["wait_s=0.1,0.3", "tag=a,boom"],
        jobs=2,
        out=out,
        command=[sys.executable, str(crashing)],
    )
    progress = io.StringIO()
    again = sweep(request, progress)
    assert [r.status for r in again.result.results] == [
        RunStatus.KEPT, RunStatus.ERROR, RunStatus.KEPT, RunStatus.ERROR,
    ]  # fmt: skip
    assert [path.stat().st_mtime_ns for path in finished] == before
    assert "(2 finished before: kept)" in progress.getvalue()
    assert read_csv(out / "sweep.csv")["wait_s=0.3,tag=a"]["status"] == "kept"


def test_another_sweeps_table_replaced_is_said_keeping_only_its_finished_runs():
    csv_path = Path("out/sweep.csv")
    ours = ["seed=0", "seed=1"]
    assert replaced_table_note(csv_path, {"seed=0": "done", "seed=1": "kept"}, ours) == ""
    wider = {"seed=0": "done", "seed=2": "kept", "seed=3": "done"}
    note = replaced_table_note(csv_path, wider, ours)
    assert note == (
        "note: out/sweep.csv and sweep.png held another sweep's table (seed=2, seed=3, not in "
        "this one); those runs' records are kept in the folder, and that sweep's command "
        "writes its table again without running them"
    )
    # Runs that had not finished (Ctrl-C, errors) left no record to keep: they were said kept.
    cut = {"seed=2": "interrupted", "seed=3": "not_run", "seed=4": "error"}
    assert replaced_table_note(csv_path, cut, ours).endswith(
        "(seed=2, seed=3, seed=4, not in this one); those runs had not finished: that "
        "sweep's command runs them"
    )
    mixed = {"seed=2": "done", "seed=3": "not_run", "seed=4": "error", "seed=5": "x", "s=6": ""}
    assert replaced_table_note(csv_path, mixed, ours).endswith(
        "(s=6, seed=2, seed=3 and 2 more, not in this one); 1 run of them finished and is "
        "kept in the folder, and that sweep's command runs only the 4 that had not"
    )


@pytest.mark.slow
def test_the_command_line_resumes_a_sweep_of_finished_runs_without_running_any(
    swept, tmp_path, capsys
):
    out = tmp_path / "out"
    shutil.copytree(swept.result.out, out)
    (out / "sweep.png").unlink()
    mission = str(swept.result.plan.mission)
    args = ["sweep", mission, "--set", "wait_s=0.1,0.3", "--set", "tag=a", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "sweep: 2/2 runs finished (2 SUCCESS); 2 kept from before" in printed
    # The folder's table was the wider sweep's: replaced, and said so (it was silent).
    assert (
        f"note: {out / 'sweep.csv'} and sweep.png held another sweep's table "
        "(wait_s=0.1,tag=boom, wait_s=0.3,tag=boom, not in this one); those runs had not "
        "finished: that sweep's command runs them" in printed
    )  # (they could not start: there was no record to keep)
    rows = read_csv(out / "sweep.csv")
    assert [(r["run"], r["status"]) for r in rows.values()] == [
        ("wait_s=0.1,tag=a", "kept"), ("wait_s=0.3,tag=a", "kept"),
    ]  # fmt: skip
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    # A figure no run has: the table is printed, then the figures there are.
    assert main([*args, "--metric", "grip.peak_n"]) == 1
    err = capsys.readouterr().err
    assert "--metric grip.peak_n: no run has that figure; the numeric columns: sim_time_s" in err
    # The same sweep with its --set flags the other way round keeps the same runs: folders
    # are named in the mission's order of its parameters, not the command line's.
    swapped = ["sweep", mission, "--set", "tag=a", "--set", "wait_s=0.1,0.3", "--out", str(out)]
    assert main(swapped) == 0
    printed = capsys.readouterr().out
    assert "2 kept from before" in printed and "note:" not in printed  # (the same runs)
    assert not [p.name for p in out.iterdir() if p.name.startswith("tag=")]  # no new folders


@pytest.mark.slow
def test_a_run_with_other_settings_in_its_folder_is_not_kept(swept):
    plan = swept.result.plan
    run = plan.runs[0]
    folder = swept.result.out / run.name
    assert kept_result(plan, run, folder) is not None
    other_seed = PlannedRun(run.name, run.settings, 7)
    assert kept_result(plan, other_seed, folder) is None
    other_clock = SweepPlan(plan.mission, plan.settings, plan.seeds, "real", plan.runs)
    assert kept_result(other_clock, run, folder) is None
    assert kept_result(plan, plan.runs[1], swept.result.out / plan.runs[1].name) is None  # error


# Interruption, a real unreachable agent, Ray ---------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_long_sweep(mission: Path, out: Path, seeds: str) -> subprocess.Popen[bytes]:
    """``limbtree sweep`` of endless waits at --jobs 2, once its first two runs tick."""
    command = [sys.executable, "-m", "limbtree", "sweep", str(mission), "--set",
               "wait_s=100000", "--seed", seeds, "--jobs", "2", "--out", str(out)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    logs = [out / f"wait_s=100000,seed={seed}" / "log.msgpack" for seed in (0, 1)]
    deadline = time.monotonic() + 90
    while not all(log.exists() and log.stat().st_size > 1000 for log in logs):
        if time.monotonic() > deadline:
            process.kill()
            process.wait()
            raise AssertionError("the runs did not start ticking")
        time.sleep(0.2)
    return process


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ctrl_c_aborts_the_runs_in_progress_and_marks_their_rows(tmp_path):
    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    sweep_process = start_long_sweep(mission, out, "0..2")
    try:
        sweep_process.send_signal(signal.SIGINT)
        output, _ = sweep_process.communicate(timeout=60)
    finally:
        if sweep_process.poll() is None:
            sweep_process.kill()
            sweep_process.wait()
    assert sweep_process.returncode == 130, output.decode()
    rows = read_csv(out / "sweep.csv")
    for seed in (0, 1):
        row = rows[f"wait_s=100000,seed={seed}"]
        assert (row["status"], row["outcome"]) == ("interrupted", "ABORTED")
        assert row["failure"] == "interrupted (Ctrl-C)"
        summary = json.loads((out / row["run"] / "summary.json").read_text())
        assert summary["outcome"] == "ABORTED"
    assert rows["wait_s=100000,seed=2"]["status"] == "not_run"
    assert "the same command resumes it" in output.decode()
    # An interrupted run is run again by the next sweep.
    plan = plan_sweep(mission, parse_settings(["wait_s=100000"]), (0, 1, 2))
    assert kept_result(plan, plan.runs[0], out / plan.runs[0].name) is None


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_runs_of_a_killed_sweep_abort_by_themselves(tmp_path):
    out = tmp_path / "out"
    sweep_process = start_long_sweep(write_mission(tmp_path), out, "0..1")
    summaries = [out / f"wait_s=100000,seed={seed}" / "summary.json" for seed in (0, 1)]
    try:
        sweep_process.kill()  # SIGKILL: the sweep cannot stop its runs
        sweep_process.wait()
        deadline = time.monotonic() + 30
        while not all(summary.exists() for summary in summaries):
            assert time.monotonic() < deadline, "the runs of the killed sweep went on"
            time.sleep(0.2)
    finally:
        if sweep_process.poll() is None:
            sweep_process.kill()
            sweep_process.wait()
    for summary in summaries:
        ended = json.loads(summary.read_text())
        assert (ended["outcome"], ended["failure"]) == (
            "ABORTED",
            "interrupted (its sweep ended)",
        )


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_run_whose_agent_cannot_be_reached_is_an_error_row(tmp_path):
    unreachable = f"tcp://127.0.0.1:{free_port()}"
    request = SweepRequest(
        mission=write_mission(tmp_path),
        settings=[f"where=sim,{unreachable}"],
        jobs=2,
        out=tmp_path / "out",
    )
    report = sweep(request, io.StringIO())
    ok, failed = report.result.results
    assert (ok.status, ok.outcome) == (RunStatus.DONE, "SUCCESS")
    assert failed.status is RunStatus.ERROR and failed.exit_code == 1
    assert f"cannot use its agent at {unreachable}" in (failed.message or "")
    assert report.result.exit_code == 1


def test_a_ray_address_where_nothing_listens_is_refused_at_once(tmp_path, capsys):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{free_port()}"
    out = tmp_path / "out"
    assert main(["sweep", str(write_mission(tmp_path)), "--ray", address, "--out", str(out)]) == 1
    assert f"--ray {address}: no Ray cluster answers there" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_sweep_on_a_local_ray_instance_gathers_each_runs_record(tmp_path):
    ray = pytest.importorskip("ray")
    mission = write_mission(tmp_path / "missions")
    out = tmp_path / "out"
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        address = ray.get_runtime_context().gcs_address
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "sweep", str(mission), "--set",
             "wait_s=0.1,0.2", "--ray", address, "--out", str(out)],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    finally:
        ray.shutdown()
        for sig, handler in handlers.items():  # ray.init's handler must not outlive it
            signal.signal(sig, handler)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on the Ray cluster at" in done.stdout
    rows = read_csv(out / "sweep.csv")
    for wait_s in (0.1, 0.2):
        row = rows[f"wait_s={wait_s}"]
        assert (row["status"], row["outcome"]) == ("done", "SUCCESS")
        assert int(row["ticks"]) == ticks_of(wait_s)
        # The record came back from the worker: the header holds the run's settings.
        header = read_header(out / row["run"] / "log.msgpack")
        assert header["parameters"]["wait_s"] == wait_s
        assert (out / row["run"] / "run.log").read_text().strip()


class FakeRay:
    """Just enough of ``ray`` for RayBackend, whose ``init`` takes SIGTERM as Ray's does."""

    def __init__(self) -> None:
        self.connected = False

    def is_initialized(self) -> bool:
        return self.connected

    def init(self, **_kwargs) -> None:
        self.connected = True
        signal.signal(signal.SIGTERM, lambda *_: None)

    def remote(self, **_kwargs):
        return lambda function: function

    def put(self, value):
        return value

    def cluster_resources(self) -> dict[str, float]:
        return {"CPU": 2.0}

    def shutdown(self) -> None:
        self.connected = False


def test_the_ray_backend_gives_back_the_signal_handlers_ray_init_took(tmp_path, monkeypatch):
    from limbtree.trees.app import load
    from limbtree.trees.sweep import RayBackend

    monkeypatch.setitem(sys.modules, "ray", FakeRay())
    before = signal.getsignal(signal.SIGTERM)
    backend = RayBackend("auto", load(write_mission(tmp_path)))
    assert signal.getsignal(signal.SIGTERM) is not before  # (as after a real ray.init)
    backend.close()
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize(
    ("cores", "jobs", "each"), [(2, 2, "1"), (8, 2, "4"), (2, 1, "2"), (4, 8, "1")]
)
def test_local_runs_share_the_cores_among_their_agents(tmp_path, monkeypatch, cores, jobs, each):
    import limbtree.trees.launcher as launcher
    import limbtree.trees.sweep as sweep

    seen = []

    class Recorded:
        def __init__(self, command, **kwargs):
            seen.append(kwargs["env"])

    monkeypatch.delenv(launcher.PROCESSES_ENV, raising=False)
    monkeypatch.setattr(launcher.os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(sweep.subprocess, "Popen", Recorded)
    backend = sweep.LocalBackend(tmp_path / "m.yaml")
    assert backend.capacity(jobs) == jobs
    backend.submit(sweep.Job(0, tmp_path, ()))
    assert seen[0][launcher.PROCESSES_ENV] == each
    # Each run aborts by itself once the sweep is gone.
    assert seen[0][STOP_WITH_ENV] == str(os.getpid())
    # A count the user set stands.
    monkeypatch.setenv(launcher.PROCESSES_ENV, "3")
    backend.submit(sweep.Job(1, tmp_path, ()))
    assert seen[1][launcher.PROCESSES_ENV] == "3"


class Immediate:
    """A backend whose runs end at once (exit 0, no record): it notes what it was given."""

    description = "nowhere"

    def __init__(self) -> None:
        self.submitted: list[int] = []
        self._done: list[Finished] = []

    def capacity(self, jobs):
        return 1

    def submit(self, job):
        self.submitted.append(job.index)
        self._done.append(Finished(job.index, 0, ""))

    def wait(self, timeout_s):
        done, self._done = self._done, []
        return done

    def stop(self, grace_s, signum=signal.SIGINT):
        return []

    def close(self):
        pass


class StoppedAtOnce(Immediate):
    """A backend whose runs never end by themselves: the sweep gets SIGTERM as it waits."""

    def submit(self, job):
        self.submitted.append(job.index)

    def wait(self, timeout_s):
        os.kill(os.getpid(), signal.SIGTERM)  # (the sweep's handler takes it)
        return []

    def stop(self, grace_s, signum=signal.SIGINT):
        return [Finished(i, -signum, "", interrupted=True) for i in self.submitted]


def test_one_run_stopped_is_one_run_in_the_sweeps_messages(tmp_path):
    from limbtree.trees.sweep import _closing

    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1,0.3"]), (0,))
    stream = io.StringIO()
    result = run_sweep(plan, tmp_path / "out", backend=StoppedAtOnce(), stream=stream)
    assert result.interrupted == "SIGTERM"
    assert "SIGTERM: stopping the 1 run in progress" in stream.getvalue()
    assert "(SIGTERM): 1 run aborted, 1 not started;" in _closing(result)


def test_a_run_folder_another_run_is_writing_is_left_alone_and_is_an_error_row(tmp_path):
    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1,0.3"]), (0,))
    out = tmp_path / "out"
    busy = out / plan.runs[0].name
    busy.mkdir(parents=True)
    (busy / "log.msgpack").write_bytes(b"a run still going")
    backend = Immediate()
    with held_by_a_run(busy):  # (a run a killed sweep left going)
        result = run_sweep(plan, out, backend=backend, stream=io.StringIO())
    assert backend.submitted == [1]
    first = result.results[0]
    assert first.status is RunStatus.ERROR
    assert "a run is still writing its record there" in (first.message or "")
    from limbtree.trees.sweep import _run_text

    assert _run_text(first).startswith("could not run: ")  # (no process ran: no exit status)
    assert (busy / "log.msgpack").read_bytes() == b"a run still going"


@pytest.mark.parametrize(
    ("outcome", "status"),
    [("SUCCESS", RunStatus.DONE), ("FAILURE", RunStatus.DONE),
     ("ABORTED", RunStatus.INTERRUPTED), (None, RunStatus.INTERRUPTED)],
)  # fmt: skip
def test_a_run_that_ended_before_the_sweep_was_stopped_is_done_and_kept(tmp_path, outcome, status):
    """Reaped while the sweep stopped, a run that had finished its mission is not lost."""
    from limbtree.trees.sweep import _result

    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1"]), (0,))
    out = tmp_path / "out"
    directory = out / plan.runs[0].name
    directory.mkdir(parents=True)
    if outcome is not None:
        (directory / "summary.json").write_text(json.dumps({"outcome": outcome, "failure": None}))
    result = _result(plan, out, Finished(0, 0 if outcome else -2, "", interrupted=True), True)
    assert result.status is status
    assert (kept_result(plan, plan.runs[0], directory) is not None) == (status is RunStatus.DONE)


def test_a_run_done_by_a_wider_sweep_is_kept_from_the_folder_that_sweep_named(tmp_path):
    from limbtree.trees.sweep import _write_marker

    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    wide = plan_sweep(mission, (), (0, 1, 2, 3))
    done = wide.runs[1]
    assert done.name == "seed=1"
    (out / done.name).mkdir(parents=True)
    (out / done.name / "summary.json").write_text(json.dumps({"outcome": "SUCCESS"}))
    _write_marker(wide, done, out / done.name, "done", 0, None)
    narrow = plan_sweep(mission, (), (1,))
    assert narrow.runs[0].name == "run"  # (one seed: nothing to name the folder by)
    backend = Immediate()
    result = run_sweep(narrow, out, backend=backend, stream=io.StringIO())
    assert backend.submitted == []
    (kept,) = result.results
    assert kept.status is RunStatus.KEPT and kept.run.name == "seed=1"
    assert not (out / "run").exists()


def finished_run(plan: SweepPlan, run: PlannedRun, out: Path, outcome: str = "SUCCESS") -> Path:
    """``run``'s folder as a sweep of ``plan`` leaves it once the run finished."""
    from limbtree.trees.sweep import _write_marker

    folder = out / run.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"outcome": outcome, "failure": None}))
    (folder / "log.msgpack").write_bytes(b"the run's log")
    _write_marker(plan, run, folder, "done", 0, None)
    return folder


def read_plan(mission: Path, settings: list[str], clock: str | None = None) -> SweepPlan:
    """A plan as ``limbtree sweep`` makes it once it has read the mission."""
    from limbtree.trees.sweep import check_plan

    plan = plan_sweep(mission, parse_settings(settings), (0,), clock)
    return check_plan(plan)[0]


def test_an_out_that_is_a_file_is_refused_as_such(tmp_path):
    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1"]), (0,))
    (tmp_path / "afile").write_text("notes")
    with pytest.raises(SweepError, match=r"--out .*afile is a file, not a folder"):
        run_sweep(plan, tmp_path / "afile", backend=Immediate(), stream=io.StringIO())
    assert (tmp_path / "afile").read_text() == "notes"


def test_an_out_that_is_a_run_record_is_refused(tmp_path):
    """``--out runs/sq``, a ``limbtree run --record`` folder: the sweep wrote its table and
    run folders in among the run's own files."""
    plan = plan_sweep(write_mission(tmp_path), parse_settings(["wait_s=0.1"]), (0,))
    record = tmp_path / "sq"
    record.mkdir()
    (record / "summary.json").write_text('{"outcome": "SUCCESS"}')
    with pytest.raises(SweepError, match=r"--out .*sq is a run's record \(it holds summary.json\)"):
        run_sweep(plan, record, backend=Immediate(), stream=io.StringIO())
    assert sorted(p.name for p in record.iterdir()) == ["summary.json"]


def test_a_sweep_never_clears_another_finished_run_in_its_folders(tmp_path):
    mission = write_mission(tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(mission.read_text())
    out = tmp_path / "out"
    theirs = read_plan(other, ["wait_s=0.1"])
    folder = finished_run(theirs, theirs.runs[0], out)
    (folder / "grip_forces.png").write_bytes(b"their report")
    ours = read_plan(mission, ["wait_s=0.1"])
    backend = Immediate()
    with pytest.raises(
        SweepError, match=r"1 of this sweep's run folders holds another finished"
    ) as info:
        run_sweep(ours, out, backend=backend, stream=io.StringIO())
    assert "remove that folder to run it here" in str(info.value)
    assert backend.submitted == []
    assert (folder / "log.msgpack").read_bytes() == b"the run's log"  # nothing lost
    assert (folder / "grip_forces.png").exists()
    from limbtree.trees.sweep import other_run

    assert "a run of another mission" in (other_run(ours, ours.runs[0], folder) or "")
    # a finished record the sweep did not make is left alone too
    (folder / "sweep_run.json").unlink()
    assert "did not make" in (other_run(ours, ours.runs[0], folder) or "")


def test_a_run_of_the_missions_files_before_they_changed_is_not_kept(tmp_path):
    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    before = read_plan(mission, ["wait_s=0.1"])
    finished_run(before, before.runs[0], out)
    assert kept_result(before, before.runs[0], out / before.runs[0].name) is not None
    mission.write_text(mission.read_text() + "# edited\n")
    after = read_plan(mission, ["wait_s=0.1"])
    assert kept_result(after, after.runs[0], out / after.runs[0].name) is None
    with pytest.raises(SweepError, match=r"as they were before they changed.*remove that folder"):
        run_sweep(after, out, backend=Immediate(), stream=io.StringIO())


def test_runs_are_the_same_run_by_their_values_not_by_how_the_flags_wrote_them(tmp_path):
    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    first = read_plan(mission, ["tag=x,y"])  # wait_s at its default, 0.2
    for run in first.runs:
        finished_run(first, run, out)
    # the default written out, in another spelling, and the settings in another order
    again = read_plan(mission, ["wait_s=0.20", "tag=x,y"])
    assert [r.name for r in again.runs] == ["wait_s=0.20,tag=x", "wait_s=0.20,tag=y"]
    backend = Immediate()
    result = run_sweep(again, out, backend=backend, stream=io.StringIO())
    assert backend.submitted == []  # nothing run again
    assert [(r.status, r.run.name) for r in result.results] == [
        (RunStatus.KEPT, "tag=x"),
        (RunStatus.KEPT, "tag=y"),
    ]
    # another value is another run, and the message names the parameter that differs
    other = read_plan(mission, ["tag=x", "wait_s=0.3"])
    from limbtree.trees.sweep import other_run

    why = other_run(other, dataclasses.replace(other.runs[0], name="tag=x"), out / "tag=x")
    assert why == "a run of other settings (wait_s=0.2)"
    # text stays text: a text parameter given 1e2 (YAML's text) is not the one given 100
    words, number = (read_plan(mission, [f"tag={v}"]) for v in ("1e2", "100"))
    assert words.runs[0].identity(words)["parameters"]["tag"] == "1e2"
    assert number.runs[0].identity(number)["parameters"]["tag"] == 100.0


def test_a_run_of_a_sweep_that_kept_only_the_settings_as_written_is_still_kept(tmp_path):
    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    plan = read_plan(mission, ["tag=x"])
    folder = finished_run(plan, plan.runs[0], out)
    marker = json.loads((folder / "sweep_run.json").read_text())
    assert marker["parameters"] == {"wait_s": 0.2, "tag": "x", "where": "sim"}
    del marker["parameters"]  # (as sweeps wrote them before they kept the values)
    (folder / "sweep_run.json").write_text(json.dumps(marker))
    assert kept_result(plan, plan.runs[0], folder) is not None
    other = read_plan(mission, ["tag=y"])
    assert kept_result(other, dataclasses.replace(other.runs[0], name="tag=x"), folder) is None


def test_naming_the_missions_own_clock_finds_the_runs_made_without_naming_it(tmp_path):
    mission = write_mission(tmp_path)
    out = tmp_path / "out"
    unnamed = read_plan(mission, ["wait_s=0.1"])
    finished_run(unnamed, unnamed.runs[0], out)
    named = read_plan(mission, ["wait_s=0.1"], clock="sim")
    assert kept_result(named, named.runs[0], out / named.runs[0].name) is not None
    # an unfinished attempt is cleared, the report images of it too
    folder = out / named.runs[0].name
    (folder / "summary.json").unlink()
    (folder / "skills.png").write_bytes(b"a report of the attempt")
    backend = Immediate()
    run_sweep(named, out, backend=backend, stream=io.StringIO())
    assert backend.submitted == [0] and not (folder / "skills.png").exists()
