"""``limbtree report DIR``: plots and a text summary from a run record (``docs/record.md``).

:func:`make_report` reads ``DIR/summary.json`` and streams ``DIR/log.msgpack`` once into
per-limb and per-skill series (:func:`read_run`), then draws PNGs into ``DIR``:

* ``limb_NAME_time.png``: per limb, command and state x, y, z over time (seed 000 Figs. 4
  and 6b), faults shaded from ``fault_injected`` to ``fault_ended``, one colour per kind, and
  recoveries marked.
* ``limb_NAME_path.png``: per limb, the state and command paths in x-y and x-z (Fig. 6a;
  seed 002 Fig. 4 for an alignment).
* ``skills.png``: per limb how far its command leads its state [mm], each move's progress
  along its waypoints, and each skill's modes.
* ``alignment.png`` and ``alignment_speed.png``, when skills report the alignment internals
  of seed 002 (``dd_mm``, ``dtheta_deg``; ``v_raw``, ``v_clamped``): Δd(t) and Δθ(t), and raw
  against clamped speed (seed 002 Fig. 5).
* ``alignment_path.png``, when they also report ``ee_mm`` and ``goal_mm``: each alignment's
  end-effector path as the motion capture saw it, from its start to its goal, in x-y and
  x-z, and unrolled along the straight line to the goal, its sideways deviation magnified
  (seed 002 Fig. 4: how direct the path is and how much it wobbles).
* When seed 003's leaves (``walk_step``, ``impedance_move``) report their telemetry
  (:mod:`.dynamics`): ``dynamics_error.png`` (the controlled frame's error, engagements
  marked; Figs. 3 and 5), ``lyapunov.png`` (W with the latch switches and new goals: it must
  fall between them), ``joint_torques.png`` (Figs. 4 and 6), ``latches.png`` (Fig. 8) and,
  for a base that moved, ``base_position.png``. The text then has the walk table, the
  impedance moves' steady-state error and the passivity line.
* When seed 004's leaves (``climb_step``, ``base_adjust``) ran (:mod:`.climbing`):
  ``grip_forces.png`` (every leg's gripper force against the 0.9 N holding force,
  detachments and swings marked; Fig. 4), ``momentum.png`` (the robot's linear and angular
  momentum, RAMP's α) and ``gia_margin.png`` (the GIA stability margin, its minimum; Fig. 5).
  The text then has the climb block: planner, steps, peak forces, the margin, detachments
  and base collisions.

A run that was killed has no ``summary.json``: the report is then made from the log alone,
and says so. matplotlib is imported inside the drawing code (Agg canvas, no pyplot state),
so importing this package stays cheap. The package reads (:mod:`.reading`), writes the text
(:mod:`.text`) and draws (:mod:`.figures`, :mod:`.dynamics`, :mod:`.climbing`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from limbtree.trees.errors import RunError
from limbtree.trees.recorder import (
    RECORD_FILES,
    being_written,
    not_a_record_hint,
    read_record,
    read_so_far,
    read_summary,
)
from limbtree.trees.report.climbing import (
    ClimbSeries,
    ClimbStep,
    Detachment,
    Peak,
    climb_metrics,
    detachments,
    draw_climbing,
    is_climbing,
    read_climb,
)
from limbtree.trees.report.dynamics import LimbTorques, goal_switches, joint_torques
from limbtree.trees.report.figures import ApproachPath, approach_path, draw_figures
from limbtree.trees.report.reading import (
    BaseSeries,
    Disruption,
    LatchSeries,
    LimbSeries,
    RunLog,
    SkillSeries,
    node_labels,
    read_run,
    unique_labels,
)
from limbtree.trees.report.text import summary_text

__all__ = [
    "ApproachPath",
    "BaseSeries",
    "ClimbSeries",
    "ClimbStep",
    "Detachment",
    "Disruption",
    "LatchSeries",
    "LimbSeries",
    "LimbTorques",
    "Peak",
    "ReportResult",
    "RunLog",
    "SkillSeries",
    "approach_path",
    "climb_metrics",
    "detachments",
    "draw_climbing",
    "draw_figures",
    "goal_switches",
    "is_climbing",
    "joint_torques",
    "make_report",
    "node_labels",
    "read_climb",
    "read_run",
    "summary_text",
    "unique_labels",
]


@dataclass(frozen=True)
class ReportResult:
    """What ``limbtree report`` prints.

    Attributes:
        text: the text summary.
        images: the PNG files written into the record's directory.
    """

    text: str
    images: list[Path]


def _counted_ticks(summary: dict[str, Any]) -> int:
    """The ticks a summary says the run ran (0 when it does not say)."""
    ticks = summary.get("ticks")
    return ticks if isinstance(ticks, int) and not isinstance(ticks, bool) else 0


def make_report(directory: Path) -> ReportResult:
    """Plots (PNG, written into ``directory``) and a text summary of a run record.

    Args:
        directory: the ``--record DIR`` of a run.

    Returns:
        The text summary and the images written.

    Raises:
        RunError: when ``directory`` is not a run record, its summary is damaged, or the
            record holds nothing to report (no summary and no tick in the log).
    """
    directory = Path(directory)
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        # (a record's own file: its directory is named, as limbtree view names it)
        hint = f": {directory.parent}" if directory.name in RECORD_FILES else ""
        raise RunError(
            f"{directory} {what}; give the directory of a run record "
            f"(limbtree run MISSION --record DIR){hint}"
        )
    summary_path, log_path = directory / "summary.json", directory / "log.msgpack"
    if not summary_path.exists() and not log_path.exists():
        raise RunError(
            f"{directory} is not a run record: it has neither summary.json nor log.msgpack "
            f"(limbtree run MISSION --record DIR writes them){not_a_record_hint(directory)}"
        )
    summary = read_summary(summary_path) if summary_path.exists() else None
    notes: list[str] = []
    if summary is None and being_written(directory):
        notes.append(
            "A run is still writing this record: the report covers its ticks so far, from the "
            "log alone."
        )
    elif summary is None:
        notes.append(
            "No summary.json: the run did not finish (killed?). This report is from the log alone."
        )
    run = RunLog()
    if log_path.exists():
        run = read_run(log_path)
        if run.damage is not None:
            notes.append(f"The log is read up to {read_so_far(run.ticks)}: {run.damage}")
        elif run.ticks and run.ticks < (counted := _counted_ticks(summary or {})):
            # (an aborted run's log has one map more than the summary counts, never fewer)
            notes.append(
                f"The log ends at {read_so_far(run.ticks)} (t = {run.t_last:.2f} s) of the "
                f"{counted} the summary counts: it was cut short after the run "
                "(a copy made while the run wrote it? a full disk?); what comes from the log "
                "stops there"
            )
    else:
        notes.append("No log.msgpack: the summary alone, no plots.")
    if run.ticks == 0:
        if summary is None:
            raise RunError(
                f"{log_path} has no complete tick and there is no summary.json: "
                "the run recorded nothing to report"
            )
        if log_path.exists():
            notes.append("The log has no complete tick: no plots.")
    images = draw_figures(run, directory) if run.ticks else []
    climb = _climb(log_path, run)
    if climb is not None:
        metrics = (summary or {}).get("metrics")
        blocks = climb_metrics(metrics) if isinstance(metrics, dict) else {}
        lost = detachments(next(iter(blocks.values()), None), climb)
        images += _draw_climbing(climb, lost, directory)
    text = summary_text(directory, summary, run, images, notes, climb=climb)
    return ReportResult(text, images)


def _climb(log_path: Path, run: RunLog) -> ClimbSeries | None:
    """The climbing leaves' series (a second pass over the log), or None for another run."""
    if not (run.ticks and is_climbing(run)):
        return None
    _, ticks = read_record(log_path)
    return read_climb(run, _until_damage(ticks))


def _until_damage(ticks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The ticks up to damage in the log (the notes say where already)."""
    try:
        yield from ticks
    except RunError:
        return


def _draw_climbing(climb: ClimbSeries, lost: list[Detachment], directory: Path) -> list[Path]:
    from matplotlib.figure import Figure

    try:
        return draw_climbing(Figure, climb, lost, directory)
    except OSError as exc:
        raise RunError(f"cannot write the report's images into {directory}: {exc}") from None
