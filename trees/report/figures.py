"""The figures of ``limbtree report``: PNGs drawn on an Agg canvas (no pyplot state).

matplotlib is imported inside the drawing code, so importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from limbtree.trees.errors import RunError
from limbtree.trees.report.canvas import MAX_POINTS as MAX_POINTS
from limbtree.trees.report.canvas import file_part as _file_part
from limbtree.trees.report.canvas import plain_axis as _plain_axis
from limbtree.trees.report.canvas import save as _save
from limbtree.trees.report.canvas import stride as _stride
from limbtree.trees.report.dynamics import draw_dynamics
from limbtree.trees.report.reading import (
    ALIGNMENT_ERRORS,
    ALIGNMENT_SPEEDS,
    Disruption,
    LimbSeries,
    RunLog,
    SkillSeries,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: A skill's modes in skills.png; the page's telemetry bands use the same (web/static/js/
#: nodepanel.js MODE_COLOURS; a test keeps the two equal).
_MODE_COLOURS: Final = {
    "nominal": "#4e79a7",
    "recovering": "#b07aa1",
    "waiting": "#76b7b2",
    "stale": "#9c755f",
    "done": "#595959",
}
_AXES: Final = ("x", "y", "z")


def _mm(points: Sequence[tuple[float, float, float]], axis: int, step: int) -> list[float]:
    return [p[axis] * 1e3 for p in points[::step]]


#: One colour per fault kind (seed 000 Table II), so overlapping faults stay apart.
FAULT_COLOURS: Final = {
    "blockage": "#e53935",
    "slowdown": "#fbc02d",
    "disassembly": "#8e24aa",
    "power_off": "#424242",
    "ik_error": "#6d4c41",
}
_OTHER_FAULT: Final = "#00897b"


#: The least distance between two "power off" labels, as a fraction of the run [-]: about
#: one label's width on the report's figures.
LABEL_GAP: Final = 0.1
#: The last part of a run (a fraction of it) where a label written from its start would
#: run past the plot's right edge: there it is written ending at the edge.
LATE_LABEL: Final = 0.2


def fault_colour(kind: str) -> str:
    """The colour a fault kind is shaded with in every plot of the report."""
    return FAULT_COLOURS.get(kind, _OTHER_FAULT)


def _mark_disruptions(axes: Axes, disruptions: Sequence[Disruption], t_end: float) -> None:
    """Shade each fault from injection to its end, one colour per kind.

    Each kind appears once in the legend; a power-off (the limb's state stops updating) is
    hatched and labelled on the plot, unless another label is nearer than
    :data:`LABEL_GAP` of the run (they would print over each other). A dotted line marks
    where the limb was recovered.
    """
    labelled: set[str] = set()
    drawn: set[tuple[str, float, float]] = set()
    labels: list[float] = []  # where "power off" labels are
    for d in disruptions:
        end = d.end if d.end is not None else (d.recovered if d.recovered is not None else t_end)
        span = (d.fault, d.start, max(end, d.start))
        if span not in drawn:
            drawn.add(span)
            label = None if d.fault in labelled else f"fault: {d.fault}"
            labelled.add(d.fault)
            colour = fault_colour(d.fault)
            if d.fault == "power_off":
                axes.axvspan(span[1], span[2], facecolor=colour, alpha=0.15, hatch="//",
                             edgecolor=colour, lw=0, label=label)  # fmt: skip
                if all(abs(span[1] - x) >= LABEL_GAP * max(t_end, 1e-9) for x in labels):
                    labels.append(span[1])
                    # One that starts late in the run (the run ended during it) would run
                    # past the plot's right edge: it ends at the edge instead.
                    late = span[1] > (1.0 - LATE_LABEL) * t_end
                    axes.annotate(
                        "power off: no state",
                        xy=(1.0, 1.0) if late else (span[1], 1.0),
                        xycoords="axes fraction" if late else ("data", "axes fraction"),
                        xytext=(-2, -2) if late else (2, -2), ha="right" if late else "left",
                        textcoords="offset points", va="top", fontsize="x-small", color=colour,
                    )  # fmt: skip
            else:
                axes.axvspan(span[1], span[2], color=colour, alpha=0.15, lw=0, label=label)
        line = ("recovered", d.recovered or 0.0, 0.0)
        if d.recovered is not None and line not in drawn:
            drawn.add(line)
            label = None if "recovered" in labelled else "recovered"
            labelled.add("recovered")
            axes.axvline(d.recovered, color="#2e7d32", ls=":", lw=1.2, label=label)


def draw_figures(run: RunLog, directory: Path) -> list[Path]:
    """Draw the report's PNGs into ``directory``; returns their paths.

    Raises:
        RunError: when an image cannot be written.
    """
    from matplotlib.figure import Figure

    images: list[Path] = []
    disruptions = run.disruptions()
    try:
        for name, limb in run.limbs.items():
            if not limb.has_poses:
                continue
            mine = [d for d in disruptions if d.limb == name]
            images.append(_limb_time(Figure, name, limb, mine, run.t_last, directory))
            images.append(_limb_path(Figure, name, limb, directory))
        skills = {n: k for n, k in run.skills.items() if k.t}
        if any(any(not math.isnan(d) for d in k.distance) or any(k.mode) for k in skills.values()):
            images.append(_skills(Figure, skills, run.limbs, disruptions, run.t_last, directory))
        aligned = {n: k for n, k in skills.items() if any(k.has(x) for x in ALIGNMENT_ERRORS)}
        if aligned:
            images.append(_alignment(Figure, aligned, directory))
        moving = {n: k for n, k in skills.items() if any(k.has(x) for x in ALIGNMENT_SPEEDS)}
        if moving:
            images.append(_alignment_speed(Figure, moving, directory))
        paths = {n: p for n, k in skills.items() if (p := approach_path(k)) is not None}
        if paths:
            images.append(_alignment_path(Figure, paths, directory))
        images += draw_dynamics(Figure, run, directory)
    except OSError as exc:
        raise RunError(f"cannot write the report's images into {directory}: {exc}") from None
    return images


def _limb_time(
    Figure: Any,
    name: str,
    limb: LimbSeries,
    disruptions: Sequence[Disruption],
    t_end: float,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(10, 7), layout="constrained")
    axes_list = figure.subplots(3, 1, sharex=True)
    step = _stride(len(limb.t))
    t = limb.t[::step]
    commanded = limb.commanded_ticks > 0  # seed 003's leaves command no end-effector pose
    for axis, axes in enumerate(axes_list):
        _mark_disruptions(axes, disruptions, t_end)
        axes.plot(t, _mm(limb.state, axis, step), color="#1565c0", lw=1.2, label="state")
        if commanded:
            axes.plot(t, _mm(limb.command, axis, step), color="#ef6c00", lw=1.0, ls="--",
                      label="command")  # fmt: skip
        axes.set_ylabel(f"{_AXES[axis]} [mm]")
        _plain_axis(axes)
        axes.grid(True, alpha=0.3)
    # below the plots, not over them: a long run's faults fill the whole width
    handles, labels = axes_list[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", fontsize="small", ncols=6)
    axes_list[-1].set_xlabel("t [s]")
    what = "command and state" if commanded else "state (no end-effector command)"
    figure.suptitle(f"{name}: end-effector {what} over time")
    return _save(figure, directory / f"limb_{_file_part(name)}_time.png")


def _limb_path(Figure: Any, name: str, limb: LimbSeries, directory: Path) -> Path:
    figure = Figure(figsize=(11, 5), layout="constrained")
    axes_list = figure.subplots(1, 2)
    step = _stride(len(limb.t))
    lines: list[tuple[Sequence[tuple[float, float, float]], dict[str, Any]]] = [
        (limb.state, {"color": "#1565c0", "lw": 1.2, "label": "state"})
    ]
    if limb.commanded_ticks:
        lines.append(
            (limb.command, {"color": "#ef6c00", "lw": 1.0, "ls": "--", "label": "command"})
        )
    for axes, (first, second) in zip(axes_list, ((0, 1), (0, 2)), strict=True):
        drawn: tuple[list[float], list[float]] = ([], [])
        for points, style in lines:
            xs, ys = _mm(points, first, step), _mm(points, second, step)
            axes.plot(xs, ys, **style)
            drawn[0].extend(xs)
            drawn[1].extend(ys)
        _at_least_a_span(axes, *drawn)
        known = [(p[first] * 1e3, p[second] * 1e3) for p in limb.state if not math.isnan(p[0])]
        if known:
            axes.plot(*known[0], "o", color="#1565c0", ms=6, label="start")
            axes.plot(*known[-1], "s", color="#1565c0", ms=6, mfc="none", label="end")
        axes.set_xlabel(f"{_AXES[first]} [mm]")
        axes.set_ylabel(f"{_AXES[second]} [mm]")
        axes.set_aspect("equal", adjustable="datalim")
        axes.ticklabel_format(style="plain", useOffset=False)
        axes.grid(True, alpha=0.3)
    axes_list[0].legend(loc="best", fontsize="small")
    figure.suptitle(f"{name}: end-effector path (x-y and x-z)")
    return _save(figure, directory / f"limb_{_file_part(name)}_path.png")


#: The least span of a path plot's axis [mm]: a limb still along an axis to a micrometre
#: draws a line, not its noise blown up under tick labels written over each other.
MIN_PATH_SPAN_MM: Final = 1.0


def _at_least_a_span(axes: Any, xs: Sequence[float], ys: Sequence[float]) -> None:
    """Widen ``axes``'s data limits to :data:`MIN_PATH_SPAN_MM` around data spanning less.

    The data limits, not the view's: the axes keep their equal aspect (fixed limits would
    be overridden by it, with a warning).

    Args:
        axes: the path plot's axes.
        xs: the x values drawn in it [mm] (NaN for ticks without a pose).
        ys: the y values drawn in it [mm].
    """
    corners: list[tuple[float, float]] = []
    for values in (xs, ys):
        known = [v for v in values if not math.isnan(v)]
        if not known:
            return
        low, high = min(known), max(known)
        middle, half = (low + high) / 2, max(high - low, MIN_PATH_SPAN_MM) / 2
        corners.append((middle - half, middle + half))
    (x0, x1), (y0, y1) = corners
    axes.update_datalim([(x0, y0), (x1, y1)])
    axes.autoscale_view()


def _tracking_mm(limb: LimbSeries) -> list[float]:
    """Per tick, the distance from the limb's command to its sensed position [mm]."""
    return [
        math.dist(state, command) * 1e3
        for state, command in zip(limb.state, limb.command, strict=True)
    ]


def _skills(
    Figure: Any,
    skills: Mapping[str, SkillSeries],
    limbs: Mapping[str, LimbSeries],
    disruptions: Sequence[Disruption],
    t_end: float,
    directory: Path,
) -> Path:
    """Draw ``skills.png``: tracking per limb, progress per move, modes per skill.

    Per limb, the command's distance from the sensed state [mm]; per move, its progress along
    its waypoints; per skill, its modes. The clamp distance itself is 1 whenever the target
    lies outside the hypersphere, which is most of a move; the text summary gives its maximum.
    """
    moving = {n: k for n, k in skills.items() if any(not math.isnan(p) for p in k.progress)}
    tracked = {n: s for n, s in limbs.items() if s.commanded_ticks}
    rows = [("tracking", 3.0)] if tracked else []
    rows += [("progress", 2.0)] if moving else []
    rows += [("modes", max(1.0, 0.5 * len(skills)))]
    figure = Figure(figsize=(10, 2.0 + sum(h for _, h in rows)), layout="constrained")
    axes_list = figure.subplots(len(rows), 1, sharex=True, height_ratios=[h for _, h in rows],
                                squeeze=False)[:, 0]  # fmt: skip
    panels = dict(zip((name for name, _ in rows), axes_list, strict=True))
    if tracked:
        axes = panels["tracking"]
        _mark_disruptions(axes, disruptions, t_end)
        for name, limb in tracked.items():
            step = _stride(len(limb.t))
            axes.plot(limb.t[::step], _tracking_mm(limb)[::step], lw=1.0, label=name)
        axes.set_ylabel("|command - state| [mm]")
        _plain_axis(axes)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    if moving:
        axes = panels["progress"]
        for name, skill in moving.items():
            step = _stride(len(skill.t))
            axes.plot(skill.t[::step], skill.progress[::step], lw=1.2, label=name)
        axes.set_ylabel("waypoint reached")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    mode_axes = panels["modes"]
    seen: set[str] = set()
    for row, (_, skill) in enumerate(skills.items()):
        for start, end, mode in _mode_spans(skill):
            colour = _MODE_COLOURS.get(mode, "#7e57c2")
            label = None if mode in seen else mode
            seen.add(mode)
            mode_axes.broken_barh(
                [(start, max(end - start, 1e-9))], (row - 0.4, 0.8), color=colour, label=label
            )
    mode_axes.set_yticks(range(len(skills)), list(skills))
    mode_axes.set_ylim(-0.6, len(skills) - 0.4)
    mode_axes.invert_yaxis()
    mode_axes.set_xlabel("t [s]")
    if seen:
        mode_axes.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    figure.suptitle("Skills: how far each command leads its limb, progress, and modes")
    return _save(figure, directory / "skills.png")


def _mode_spans(skill: SkillSeries) -> list[tuple[float, float, str]]:
    """Runs of one mode as (start, end, mode); each tick lasts until the next."""
    spans: list[tuple[float, float, str]] = []
    times = skill.t
    for index, mode in enumerate(skill.mode):
        if not mode:
            continue
        end = times[index + 1] if index + 1 < len(times) else times[index]
        if spans and spans[-1][2] == mode and math.isclose(spans[-1][1], times[index]):
            spans[-1] = (spans[-1][0], end, mode)
        else:
            spans.append((times[index], end, mode))
    return spans


def _alignment(Figure: Any, skills: Mapping[str, SkillSeries], directory: Path) -> Path:
    figure = Figure(figsize=(10, 6), layout="constrained")
    axes_list = figure.subplots(2, 1, sharex=True)
    for axes, key, label in zip(axes_list, ALIGNMENT_ERRORS, ("Δd [mm]", "Δθ [deg]"), strict=True):
        for name, skill in skills.items():
            if skill.has(key):
                step = _stride(len(skill.t))
                axes.plot(skill.t[::step], skill.extra[key][::step], lw=1.2, label=name)
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
    axes_list[0].legend(loc="upper right", fontsize="small")
    axes_list[-1].set_xlabel("t [s]")
    figure.suptitle("Alignment error over time")
    return _save(figure, directory / "alignment.png")


@dataclass(frozen=True)
class ApproachPath:
    """One alignment's end-effector path as the capture saw it, and its last goal.

    Attributes:
        path: the measured end-effector positions [mm], world frame, one per tick.
        goal: the last goal position the alignment reported [mm].
    """

    path: list[tuple[float, float, float]]
    goal: tuple[float, float, float]

    def unrolled(self) -> tuple[list[float], list[float]]:
        """Distance along the start-to-goal line and distance from it [mm], per sample."""
        start, goal = self.path[0], self.goal
        axis = [g - s for g, s in zip(goal, start, strict=True)]
        norm = math.sqrt(sum(a * a for a in axis)) or 1.0
        unit = [a / norm for a in axis]
        along, across = [], []
        for point in self.path:
            rel = [p - s for p, s in zip(point, start, strict=True)]
            a = sum(r * u for r, u in zip(rel, unit, strict=True))
            side = [r - a * u for r, u in zip(rel, unit, strict=True)]
            along.append(a)
            across.append(math.sqrt(sum(c * c for c in side)))
        return along, across


def approach_path(skill: SkillSeries) -> ApproachPath | None:
    """An alignment skill's path and last goal (its ``ee_mm`` and ``goal_mm``), if it has them.

    Args:
        skill: the skill's series from :func:`read_run`.

    Returns:
        The path, or None when the skill reported fewer than two positions or no goal.
    """
    path = [p for p in skill.points.get("ee_mm", ()) if not math.isnan(p[0])]
    goals = [p for p in skill.points.get("goal_mm", ()) if not math.isnan(p[0])]
    if len(path) < 2 or not goals:
        return None
    return ApproachPath(path, goals[-1])


def _alignment_path(Figure: Any, paths: Mapping[str, ApproachPath], directory: Path) -> Path:
    figure = Figure(figsize=(12, 8), layout="constrained")
    grid = figure.add_gridspec(2, 2, height_ratios=(3, 2))
    planes = [figure.add_subplot(grid[0, k]) for k in range(2)]
    unrolled = figure.add_subplot(grid[1, :])
    colours = ("#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f")
    for index, (name, approach) in enumerate(paths.items()):
        colour = colours[index % len(colours)]
        step = _stride(len(approach.path))
        points = approach.path[::step]
        for axes, (first, second) in zip(planes, ((0, 1), (0, 2)), strict=True):
            axes.plot([p[first] for p in points], [p[second] for p in points], color=colour,
                      lw=1.2, label=name)  # fmt: skip
            axes.plot(approach.path[0][first], approach.path[0][second], "o", color=colour, ms=5)
            axes.plot(approach.goal[first], approach.goal[second], "*", color=colour, ms=12)
        along, across = approach.unrolled()
        unrolled.plot(along[::step], across[::step], color=colour, lw=1.2, label=name)
    for axes, (first, second) in zip(planes, ((0, 1), (0, 2)), strict=True):
        axes.set_xlabel(f"{_AXES[first]} [mm]")
        axes.set_ylabel(f"{_AXES[second]} [mm]")
        axes.set_aspect("equal", adjustable="datalim")
        axes.grid(True, alpha=0.3)
    planes[0].legend(loc="best", fontsize="small")
    planes[0].set_title("measured path: start (o), goal (*)", fontsize="medium")
    unrolled.set_xlabel("along the straight line from start to goal [mm]")
    unrolled.set_ylabel("off the line [mm]")
    unrolled.grid(True, alpha=0.3)
    figure.suptitle("Alignment: end-effector path (seed 002 Fig. 4)")
    return _save(figure, directory / "alignment_path.png")


def _alignment_speed(Figure: Any, skills: Mapping[str, SkillSeries], directory: Path) -> Path:
    figure = Figure(figsize=(10, 4.5), layout="constrained")
    axes = figure.subplots(1, 1)
    for name, skill in skills.items():
        step = _stride(len(skill.t))
        t = skill.t[::step]
        if skill.has("v_raw"):
            raw = [v * 1e3 for v in skill.extra["v_raw"][::step]]
            axes.plot(t, raw, lw=1.0, ls="--", alpha=0.8, label=f"{name}: raw")
        if skill.has("v_clamped"):
            clamped = [v * 1e3 for v in skill.extra["v_clamped"][::step]]
            axes.plot(t, clamped, lw=1.4, label=f"{name}: clamped")
    axes.set_xlabel("t [s]")
    axes.set_ylabel("speed [mm/s]")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="upper right", fontsize="small")
    figure.suptitle("Alignment: raw against clamped speed")
    return _save(figure, directory / "alignment_speed.png")
