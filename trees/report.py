"""``limbtree report DIR``: plots and a text summary from a run record (``docs/record.md``).

:func:`make_report` reads ``DIR/summary.json`` and streams ``DIR/log.msgpack`` once into
per-limb and per-skill series (:func:`read_run`), then draws PNGs into ``DIR``:

* ``limb_NAME_time.png``: per limb, command and state x, y, z over time (seed 000 Figs. 4
  and 6b), faults shaded from ``fault_injected`` to ``fault_ended`` and recoveries marked.
* ``limb_NAME_path.png``: per limb, the state and command paths in x-y and x-z (Fig. 6a;
  seed 002 Fig. 4 for an alignment).
* ``skills.png``: each skill's clamp distance (``<= 1``) over time and its modes.
* ``alignment.png`` and ``alignment_speed.png``, when skills report the alignment internals
  of seed 002 (``dd_mm``, ``dtheta_deg``; ``v_raw``, ``v_clamped``): Δd(t) and Δθ(t), and raw
  against clamped speed (seed 002 Fig. 5).
* ``alignment_path.png``, when they also report ``ee_mm`` and ``goal_mm``: each alignment's
  end-effector path as the motion capture saw it, from its start to its goal, in x-y and
  x-z, and unrolled along the straight line to the goal, its sideways deviation magnified
  (seed 002 Fig. 4: how direct the path is and how much it wobbles).

A run that was killed has no ``summary.json``: the report is then made from the log alone,
and says so. matplotlib is imported inside the drawing code (Agg canvas, no pyplot state),
so importing this module stays cheap.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from limbtree.trees.errors import RunError
from limbtree.trees.recorder import read_record

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Skill internals of the alignment controllers (seed 002) that add the alignment plots.
ALIGNMENT_ERRORS: Final = ("dd_mm", "dtheta_deg")
ALIGNMENT_SPEEDS: Final = ("v_raw", "v_clamped")
#: Positions [mm] the alignment leaf reports each tick (measured end-effector, goal).
ALIGNMENT_PATH: Final = ("ee_mm", "goal_mm")

#: Most points drawn per line; longer series are thinned by a stride (the text uses all).
MAX_POINTS: Final = 20_000

_MODE_COLOURS: Final = {
    "nominal": "#4caf50",
    "recovering": "#e53935",
    "waiting": "#fb8c00",
    "stale": "#9e9e9e",
    "done": "#1e88e5",
}
_AXES: Final = ("x", "y", "z")
_NAN: Final = math.nan


@dataclass(frozen=True)
class ReportResult:
    """What ``limbtree report`` prints.

    Attributes:
        text: the text summary.
        images: the PNG files written into the record's directory.
    """

    text: str
    images: list[Path]


@dataclass
class LimbSeries:
    """One limb over the run; positions [m], NaN where there was none.

    Attributes:
        t: tick times [s].
        state: end-effector positions (the state each command was clamped around).
        command: end-effector position commands.
        stale_ticks: ticks in which the limb's state was stale.
        max_error: largest position distance between a command and its state [m].
    """

    t: list[float] = field(default_factory=list)
    state: list[tuple[float, float, float]] = field(default_factory=list)
    command: list[tuple[float, float, float]] = field(default_factory=list)
    stale_ticks: int = 0
    max_error: float = 0.0

    @property
    def commanded_ticks(self) -> int:
        """Ticks with an end-effector command."""
        return sum(1 for c in self.command if not math.isnan(c[0]))

    @property
    def has_poses(self) -> bool:
        """Whether any state or command position was logged."""
        return any(not math.isnan(p[0]) for p in (*self.state, *self.command))


@dataclass
class SkillSeries:
    """One skill node's internals over the ticks it reported.

    Attributes:
        t: the ticks' times [s].
        distance: clamp distance (``<= 1``), NaN when not reported.
        mode: the mode (``nominal``, ``recovering``, ...), empty when not reported.
        extra: other numeric internals by key (``dd_mm``, ``v_raw``, ...), NaN-padded.
        points: reported positions by key (``ee_mm``, ``goal_mm``) [mm], NaN-padded.
        recoveries: how many times the mode turned to ``recovering``.
    """

    t: list[float] = field(default_factory=list)
    distance: list[float] = field(default_factory=list)
    mode: list[str] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)
    points: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    recoveries: int = 0

    def has(self, key: str) -> bool:
        """Whether the skill reported ``key`` at least once."""
        return any(not math.isnan(v) for v in self.extra.get(key, ()))


@dataclass(frozen=True)
class Disruption:
    """A fault on a limb, from the log's events.

    Attributes:
        limb: the limb.
        fault: the fault's kind.
        start: when it was injected [s].
        end: when it ended [s], or None if the log has no end.
        recovered: when the limb was back on its trajectory [s], or None.
    """

    limb: str
    fault: str
    start: float
    end: float | None
    recovered: float | None


@dataclass
class RunLog:
    """A ``log.msgpack`` read once into series.

    Attributes:
        ticks: ticks read.
        t_first: time of the first tick [s].
        t_last: time of the last tick [s].
        limbs: per limb, its series.
        skills: per skill node, its series.
        events: every event, each with its tick's ``t`` filled in.
        node_ticks: per node label, how many ticks it was ticked in.
        node_status: per node label, its status the last time it was ticked.
        damage: why reading stopped early, or None when the log was read to its end.
        header: the log's header map (record layout 2), or None (layout 1).
        labels: node id -> its label (layout 2): its name, with its id added when another
            node has the same name. Layout 1 keys nodes by name, and names are their labels.
    """

    ticks: int = 0
    t_first: float = 0.0
    t_last: float = 0.0
    limbs: dict[str, LimbSeries] = field(default_factory=dict)
    skills: dict[str, SkillSeries] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    node_ticks: Counter[str] = field(default_factory=Counter)
    node_status: dict[str, str] = field(default_factory=dict)
    damage: str | None = None
    header: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, key: str) -> str:
        """A node's label from its key in the log (an id in layout 2, a name in layout 1)."""
        return self.labels.get(key, key)

    def disruptions(self) -> list[Disruption]:
        """The faults of the run, paired from their injected, ended and recovered events."""
        found: list[dict[str, Any]] = []
        for event in self.events:
            kind, limb = event.get("kind"), str(event.get("limb", ""))
            t = _float(event.get("t"))
            if kind == "fault_injected":
                found.append({"limb": limb, "fault": str(event.get("fault", "?")), "start": t})
                continue
            if kind not in ("fault_ended", "fault_recovered"):
                continue
            slot = "end" if kind == "fault_ended" else "recovered"
            fault = str(event.get("fault", "?"))
            for item in found:
                if item["limb"] == limb and item["fault"] == fault and slot not in item:
                    item[slot] = t
                    break
        return [
            Disruption(d["limb"], d["fault"], d["start"], d.get("end"), d.get("recovered"))
            for d in found
        ]


# Reading ---------------------------------------------------------------------------------


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return _NAN


def _position(value: Any) -> tuple[float, float, float]:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes) and len(value) >= 3:
        return (_float(value[0]), _float(value[1]), _float(value[2]))
    return (_NAN, _NAN, _NAN)


def _speed(value: Any) -> float:
    """A speed from a scalar, or the norm of a vector's linear part (its first three)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        parts = [_float(v) for v in list(value)[:3]]
        return math.sqrt(sum(v * v for v in parts)) if parts else _NAN
    return _float(value)


def read_run(path: Path) -> RunLog:
    """Stream a ``log.msgpack`` into a :class:`RunLog`.

    A truncated last tick is skipped (the log of a killed run); a log damaged further in is
    read up to the damage, which :attr:`RunLog.damage` describes.

    Raises:
        RunError: if the file cannot be read, or is not a limbtree log from its first tick.
    """
    run = RunLog()
    header, ticks = read_record(path)
    if header is not None:
        run.header = header
        run.labels = node_labels(header.get("tree"))
    try:
        for entry in ticks:
            _add_tick(run, entry)
    except RunError as exc:
        if run.ticks == 0:
            raise
        run.damage = str(exc)
    return run


def _tree_nodes(tree: Any) -> list[Mapping[str, Any]]:
    """The nodes of a header's ``tree`` (``NODE`` maps), parents first."""
    out: list[Mapping[str, Any]] = []
    stack = [tree] if isinstance(tree, Mapping) else []
    while stack:
        node = stack.pop()
        out.append(node)
        children = node.get("children")
        if isinstance(children, list):
            stack.extend(reversed([c for c in children if isinstance(c, Mapping)]))
    return out


def unique_labels(nodes: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Node id -> label, from (id, name) pairs: the name, ``name [id]`` where names repeat."""
    pairs = list(nodes)
    counts = Counter(name for _, name in pairs)
    return {i: name if counts[name] == 1 else f"{name} [{i}]" for i, name in pairs}


def node_labels(tree: Any) -> dict[str, str]:
    """Node id -> label for a header's tree (see :attr:`RunLog.labels`)."""
    return unique_labels((str(n.get("id")), str(n.get("name", "?"))) for n in _tree_nodes(tree))


def _add_tick(run: RunLog, entry: Mapping[str, Any]) -> None:
    t = _float(entry.get("t"))
    if run.ticks == 0:
        run.t_first = t
    run.t_last = t
    run.ticks += 1
    limbs = entry.get("limbs") or {}
    for name, limb in limbs.items() if isinstance(limbs, Mapping) else ():
        series = run.limbs.setdefault(str(name), LimbSeries())
        limb = limb if isinstance(limb, Mapping) else {}
        state, command = _position(limb.get("state")), _position(limb.get("command"))
        series.t.append(t)
        series.state.append(state)
        series.command.append(command)
        series.stale_ticks += bool(limb.get("stale"))
        error = math.dist(state, command)
        if not math.isnan(error):
            series.max_error = max(series.max_error, error)
    nodes = entry.get("nodes") or {}
    for key, status in nodes.items() if isinstance(nodes, Mapping) else ():
        label = run.label(str(key))
        run.node_ticks[label] += 1
        run.node_status[label] = str(status)
    skills = entry.get("skills") or {}
    for key, internals in skills.items() if isinstance(skills, Mapping) else ():
        if isinstance(internals, Mapping):
            _add_skill(run.skills.setdefault(run.label(str(key)), SkillSeries()), t, internals)
    events = entry.get("events") or []
    for event in events if isinstance(events, list) else ():
        if isinstance(event, Mapping):
            run.events.append({"t": t, **event})


def _add_skill(series: SkillSeries, t: float, internals: Mapping[str, Any]) -> None:
    index = len(series.t)
    series.t.append(t)
    series.distance.append(_float(internals.get("distance")))
    mode = str(internals.get("mode") or "")
    if mode == "recovering" and (not series.mode or series.mode[-1] != "recovering"):
        series.recoveries += 1
    series.mode.append(mode)
    for key in (*ALIGNMENT_ERRORS, *ALIGNMENT_SPEEDS):
        if key in internals or key in series.extra:
            values = series.extra.setdefault(key, [_NAN] * index)
            raw = internals.get(key)
            values.append(_speed(raw) if key in ALIGNMENT_SPEEDS else _float(raw))
    for key in ALIGNMENT_PATH:
        if key in internals or key in series.points:
            points = series.points.setdefault(key, [(_NAN, _NAN, _NAN)] * index)
            points.append(_position(internals.get(key)))


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"{path} cannot be read as a run summary: {exc}") from None
    if not isinstance(summary, dict):
        raise RunError(f"{path} is not a run summary (a JSON object with outcome, ticks, ...)")
    return summary


# The report ------------------------------------------------------------------------------


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
        raise RunError(
            f"{directory} {what}; give the directory of a run record "
            "(limbtree run MISSION --record DIR)"
        )
    summary_path, log_path = directory / "summary.json", directory / "log.msgpack"
    if not summary_path.exists() and not log_path.exists():
        raise RunError(
            f"{directory} is not a run record: it has neither summary.json nor log.msgpack "
            "(limbtree run MISSION --record DIR writes them)"
        )
    summary = _read_summary(summary_path) if summary_path.exists() else None
    notes: list[str] = []
    if summary is None:
        notes.append(
            "No summary.json: the run did not finish (killed?). This report is from the log alone."
        )
    run = RunLog()
    if log_path.exists():
        run = read_run(log_path)
        if run.damage is not None:
            notes.append(f"The log is damaged after tick {run.ticks}: {run.damage}")
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
    return ReportResult(summary_text(directory, summary, run, images, notes), images)


# Text ------------------------------------------------------------------------------------


def _num(value: Any, fmt: str = ".2f", unit: str = "") -> str:
    if value is None:
        return "-"
    try:
        return f"{float(value):{fmt}}{unit}"
    except (TypeError, ValueError):
        return str(value)


def _flatten(prefix: str, value: Any) -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(f"{prefix}.{key}" if prefix else str(key), item)
    else:
        yield prefix, value


def _table(rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """Rows as left-aligned columns."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def summary_text(
    directory: Path,
    summary: Mapping[str, Any] | None,
    run: RunLog,
    images: Sequence[Path],
    notes: Sequence[str] = (),
) -> str:
    """The text half of the report: the run's figures, its faults, limbs, skills and nodes."""
    s: Mapping[str, Any] = summary or {}
    lines = [f"Run record {directory}"]
    lines += [f"  ! {note}" for note in notes]
    disruptions = run.disruptions()
    mission = s.get("mission", "?")
    if s.get("mission_file"):
        mission = f"{mission} ({s['mission_file']})"
    sim_time = s.get("sim_time_s", run.t_last if run.ticks else None)
    wall = s.get("wall_time_s")
    timing = _num(sim_time, ".2f", " s")
    if wall is not None:
        timing += f" mission time, {_num(wall, '.2f', ' s')} wall"
        if sim_time and float(wall) > 0:
            timing += f" ({float(sim_time) / float(wall):.1f}x real time)"
    ticks = f"{s['ticks']}" if "ticks" in s else "-"
    if run.ticks:
        ticks += f" (log: {run.ticks} ticks, t = {run.t_first:.2f} .. {run.t_last:.2f} s)"
    injected = s.get("faults_injected", len(disruptions))
    recovered = s.get("faults_recovered", sum(d.recovered is not None for d in disruptions))
    recoveries = s.get("recoveries", sum(k.recoveries for k in run.skills.values()))
    distance = s.get("max_command_state_distance")
    if distance is None:
        logged = [d for k in run.skills.values() for d in k.distance if not math.isnan(d)]
        distance = max(logged) if logged else None
    rows: list[tuple[str, ...]] = [
        ("mission", str(mission)),
        ("outcome", str(s.get("outcome", "unknown (no summary)"))),
        ("seed, clock", f"{s.get('seed', '-')}, {s.get('clock', '-')}"),
        ("time", timing),
        ("ticks", ticks),
        ("faults", f"{injected} injected, {recovered} recovered"),
        ("recoveries", str(recoveries)),
        ("max command-state distance", _num(distance, ".4f") + " (<= 1 by construction)"),
    ]
    if s.get("failure"):
        rows.append(("failure", str(s["failure"])))
    rows += [(f"metrics.{k}", _num(v, ".4g")) for k, v in _flatten("", s.get("metrics") or {})]
    lines += _table(rows)

    faults = s.get("faults") or []
    if faults or disruptions:
        lines += ["", "Faults"]
        rows = [("at [s]", "limb", "kind", "lasted [s]", "recovered at [s]")]
        if faults:
            rows += [
                (
                    _num(f.get("at_s")),
                    str(f.get("limb", "?")),
                    str(f.get("kind", "?")),
                    _num(f.get("duration_s")),
                    _num(f.get("recovered_at_s")) if f.get("recovered_at_s") is not None else "NOT",
                )
                for f in faults
                if isinstance(f, Mapping)
            ]
        else:
            rows += [
                (
                    _num(d.start),
                    d.limb,
                    d.fault,
                    _num(None if d.end is None else d.end - d.start),
                    _num(d.recovered) if d.recovered is not None else "NOT",
                )
                for d in disruptions
            ]
        lines += _table(rows)

    if run.limbs:
        lines += ["", "Limbs (from the log)"]
        rows = [("limb", "commanded ticks", "max |command - state| [mm]", "stale ticks")]
        rows += [
            (
                name,
                str(series.commanded_ticks),
                f"{series.max_error * 1e3:.2f}",
                str(series.stale_ticks),
            )
            for name, series in run.limbs.items()
        ]
        lines += _table(rows)

    if run.skills:
        lines += ["", "Skills (from the log)"]
        rows = [("node", "ticks", "max distance", "recoveries", "modes [ticks]")]
        for name, skill in run.skills.items():
            logged = [d for d in skill.distance if not math.isnan(d)]
            modes = Counter(m for m in skill.mode if m)
            rows.append(
                (
                    name,
                    str(len(skill.t)),
                    f"{max(logged):.4f}" if logged else "-",
                    str(skill.recoveries),
                    ", ".join(f"{m} {n}" for m, n in modes.most_common()) or "-",
                )
            )
        lines += _table(rows)

    node_rows = _node_rows(s.get("nodes"), run)
    if node_rows:
        lines += ["", "Nodes"]
        with_ids = any(node_id for node_id, *_ in node_rows)
        rows = [("id", "node", "type", "ticks", "busy [ms]", "last status")]
        for node_id, label, info in node_rows:
            count = info.get("ticks")
            if count is None:
                count = run.node_ticks.get(label, 0)
            busy = info.get("busy_s")
            status = run.node_status.get(label) or info.get("last_status") or "-"
            rows.append(
                (
                    node_id,
                    label,
                    str(info.get("type", "-")),
                    str(count),
                    "-" if busy is None else f"{float(busy) * 1e3:.1f}",
                    str(status),
                )
            )
        lines += _table(rows if with_ids else [row[1:] for row in rows])

    if images:
        lines += ["", f"Images ({len(images)} PNG files in {directory})"]
    return "\n".join(lines)


def _node_rows(nodes: Any, run: RunLog) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(id or "", label, summary entry) per node.

    The summary's ``nodes`` is a list with ids (layout 2) or a map by name (layout 1); the
    nodes only the log knows come after.
    """
    rows: list[tuple[str, str, Mapping[str, Any]]] = []
    if isinstance(nodes, list):
        entries = [n for n in nodes if isinstance(n, Mapping)]
        labels = run.labels or unique_labels(
            (str(n.get("id")), str(n.get("name", "?"))) for n in entries
        )
        for entry in entries:
            node_id = str(entry.get("id", ""))
            rows.append((node_id, labels.get(node_id, str(entry.get("name", "?"))), entry))
    elif isinstance(nodes, Mapping):
        for name, entry in nodes.items():
            rows.append(("", str(name), entry if isinstance(entry, Mapping) else {}))
    known = {label for _, label, _ in rows}
    by_label = {label: node_id for node_id, label in run.labels.items()}
    for label in run.node_ticks:
        if label not in known:
            rows.append((by_label.get(label, ""), label, {}))
    return rows


# Figures ---------------------------------------------------------------------------------


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "limb"


def _stride(count: int) -> int:
    return max(1, math.ceil(count / MAX_POINTS))


def _mm(points: Sequence[tuple[float, float, float]], axis: int, step: int) -> list[float]:
    return [p[axis] * 1e3 for p in points[::step]]


def _mark_disruptions(axes: Axes, disruptions: Sequence[Disruption], t_end: float) -> None:
    """Shade each fault from injection to its end; a dotted line where it was recovered."""
    labelled: set[str] = set()
    drawn: set[tuple[str, float, float]] = set()
    for d in disruptions:
        end = d.end if d.end is not None else (d.recovered if d.recovered is not None else t_end)
        span = ("span", d.start, max(end, d.start))
        if span not in drawn:
            drawn.add(span)
            label = None if d.fault in labelled else f"fault: {d.fault}"
            labelled.add(d.fault)
            axes.axvspan(span[1], span[2], color="#e53935", alpha=0.12, lw=0, label=label)
        line = ("line", d.recovered or 0.0, 0.0)
        if d.recovered is not None and line not in drawn:
            drawn.add(line)
            label = None if "recovered" in labelled else "recovered"
            labelled.add("recovered")
            axes.axvline(d.recovered, color="#2e7d32", ls=":", lw=1.2, label=label)


def _save(figure: Any, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)
    return path


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
            images.append(_skills(Figure, skills, disruptions, run.t_last, directory))
        aligned = {n: k for n, k in skills.items() if any(k.has(x) for x in ALIGNMENT_ERRORS)}
        if aligned:
            images.append(_alignment(Figure, aligned, directory))
        moving = {n: k for n, k in skills.items() if any(k.has(x) for x in ALIGNMENT_SPEEDS)}
        if moving:
            images.append(_alignment_speed(Figure, moving, directory))
        paths = {n: p for n, k in skills.items() if (p := approach_path(k)) is not None}
        if paths:
            images.append(_alignment_path(Figure, paths, directory))
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
    for axis, axes in enumerate(axes_list):
        _mark_disruptions(axes, disruptions, t_end)
        axes.plot(t, _mm(limb.state, axis, step), color="#1565c0", lw=1.2, label="state")
        axes.plot(
            t, _mm(limb.command, axis, step), color="#ef6c00", lw=1.0, ls="--", label="command"
        )
        axes.set_ylabel(f"{_AXES[axis]} [mm]")
        axes.grid(True, alpha=0.3)
    axes_list[0].legend(loc="upper right", fontsize="small", ncols=2)
    axes_list[-1].set_xlabel("t [s]")
    figure.suptitle(f"{name}: end-effector command and state over time")
    return _save(figure, directory / f"limb_{_file_part(name)}_time.png")


def _limb_path(Figure: Any, name: str, limb: LimbSeries, directory: Path) -> Path:
    figure = Figure(figsize=(11, 5), layout="constrained")
    axes_list = figure.subplots(1, 2)
    step = _stride(len(limb.t))
    for axes, (first, second) in zip(axes_list, ((0, 1), (0, 2)), strict=True):
        for points, style in (
            (limb.state, {"color": "#1565c0", "lw": 1.2, "label": "state"}),
            (limb.command, {"color": "#ef6c00", "lw": 1.0, "ls": "--", "label": "command"}),
        ):
            xs, ys = _mm(points, first, step), _mm(points, second, step)
            axes.plot(xs, ys, **style)
        known = [(p[first] * 1e3, p[second] * 1e3) for p in limb.state if not math.isnan(p[0])]
        if known:
            axes.plot(*known[0], "o", color="#1565c0", ms=6, label="start")
            axes.plot(*known[-1], "s", color="#1565c0", ms=6, mfc="none", label="end")
        axes.set_xlabel(f"{_AXES[first]} [mm]")
        axes.set_ylabel(f"{_AXES[second]} [mm]")
        axes.set_aspect("equal", adjustable="datalim")
        axes.grid(True, alpha=0.3)
    axes_list[0].legend(loc="best", fontsize="small")
    figure.suptitle(f"{name}: end-effector path (x-y and x-z)")
    return _save(figure, directory / f"limb_{_file_part(name)}_path.png")


def _skills(
    Figure: Any,
    skills: Mapping[str, SkillSeries],
    disruptions: Sequence[Disruption],
    t_end: float,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(10, 3.5 + 0.45 * len(skills)), layout="constrained")
    distance_axes, mode_axes = figure.subplots(
        2, 1, sharex=True, height_ratios=(3, max(1.0, 0.5 * len(skills)))
    )
    _mark_disruptions(distance_axes, disruptions, t_end)
    for name, skill in skills.items():
        step = _stride(len(skill.t))
        distance_axes.plot(skill.t[::step], skill.distance[::step], lw=1.0, label=name)
    distance_axes.axhline(1.0, color="black", lw=0.8, ls="--", label="hypersphere (1)")
    distance_axes.set_ylim(0.0, 1.1)
    distance_axes.set_ylabel("clamp distance")
    distance_axes.grid(True, alpha=0.3)
    distance_axes.legend(loc="lower left", fontsize="small")
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
    figure.suptitle("Skills: clamp distance between command and state, and modes")
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
