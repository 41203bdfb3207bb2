"""The text half of ``limbtree report``: the run's figures, faults, limbs, skills and nodes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from limbtree.trees.report.reading import RunLog, unique_labels


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
