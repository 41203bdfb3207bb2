"""The text half of ``limbtree report``: the run's figures, faults, limbs, skills and nodes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from limbtree.trees.report.reading import RunLog, SkillSeries, unique_labels


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
    raw_metrics = s.get("metrics")
    metrics: Mapping[str, Any] = raw_metrics if isinstance(raw_metrics, Mapping) else {}
    dynamics = _dynamics_lines(metrics, run)
    shown = _dynamics_keys(metrics)
    rest = {k: v for k, v in metrics.items() if k not in shown}
    rows += [(f"metrics.{k}", _num(v, ".4g")) for k, v in _flatten("", rest)]
    lines += _table(rows)
    lines += dynamics

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


# Seed 003: walk steps, impedance moves, passivity ------------------------------------------


def _walk_metrics(metrics: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The summary's walk tables: key -> its steps (``metrics.walk.steps``)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for key, value in metrics.items():
        steps = value.get("steps") if isinstance(value, Mapping) else None
        if isinstance(steps, list) and all(isinstance(x, Mapping) for x in steps):
            out[str(key)] = steps
    return out


def _move_metrics(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The summary's impedance-move figures: key -> them (``metrics.torso``)."""
    return {
        str(key): value
        for key, value in metrics.items()
        if isinstance(value, Mapping) and "settle_s" in value and "steady_max_err_mm" in value
    }


def _dynamics_keys(metrics: Mapping[str, Any]) -> set[str]:
    """The metrics the seed-003 section shows (left out of the plain ``metrics.*`` rows)."""
    keys = set(_walk_metrics(metrics)) | set(_move_metrics(metrics))
    return keys | ({"passivity"} if isinstance(metrics.get("passivity"), Mapping) else set())


def _frames(run: RunLog) -> dict[str, str]:
    """Node label -> the frame its seed-003 leaf controlled."""
    return {name: k.frame for name, k in run.skills.items() if k.frame}


def _log_walk_steps(run: RunLog) -> list[Mapping[str, Any]]:
    """Walk steps from the log alone (a killed run): those that engaged."""
    steps: list[Mapping[str, Any]] = []
    for name, skill in run.skills.items():
        index = skill.first("engage") if skill.kind == "walk_step" else None
        if index is None:
            continue
        steps.append(
            {
                "node": name,
                "duration_s": skill.t[index] - skill.t[0],
                "engaged_at_s": skill.t[index],
                "final_err_mm": _at(skill, "err_mm", index),
                "final_err_deg": _at(skill, "err_deg", index),
            }
        )
    return steps


def _at(skill: SkillSeries, key: str, index: int) -> float | None:
    values = skill.extra.get(key, [])
    value = values[index] if index < len(values) else math.nan
    return None if math.isnan(value) else value


def _last(skill: SkillSeries, key: str) -> float | None:
    known = [v for v in skill.extra.get(key, ()) if not math.isnan(v)]
    return known[-1] if known else None


def _log_moves(run: RunLog) -> dict[str, dict[str, Any]]:
    """Impedance moves from the log alone: label -> figures like ``metrics.torso``'s."""
    out: dict[str, dict[str, Any]] = {}
    for name, skill in run.skills.items():
        if skill.kind != "impedance_move":
            continue
        index = skill.first("holding", "done")
        out[name] = {
            "settle_s": None if index is None else skill.t[index] - skill.t[0],
            "steady_max_err_mm": _last(skill, "steady_max_mm"),
            "steady_max_err_deg": _last(skill, "steady_max_deg"),
            "final_err_mm": _last(skill, "err_mm"),
            "final_err_deg": _last(skill, "err_deg"),
            "hold_s": None,
        }
    return out


def _dynamics_lines(metrics: Mapping[str, Any], run: RunLog) -> list[str]:
    """Seed 003's figures: the walk table, the impedance moves' steady state, passivity.

    From ``summary.json``'s metrics, or from the log's telemetry when the summary has none
    (a killed run).
    """
    frames = _frames(run)
    leaves = [k for k in run.skills.values() if k.is_dynamics]
    lines: list[str] = []
    walks = _walk_metrics(metrics)
    if not walks and (logged := _log_walk_steps(run)):
        walks = {"walk (from the log)": logged}
    for key, steps in walks.items():
        lines += ["", f"Walk (metrics.{key}.steps)" if "(" not in key else "Walk (from the log)"]
        rows = [("step", "end", "duration [s]", "engaged at [s]", "error at engagement [mm]",
                 "[deg]")]  # fmt: skip
        for step in steps:
            node = str(step.get("node", "?"))
            rows.append(
                (
                    node,
                    frames.get(node, "-"),
                    _num(step.get("duration_s")),
                    _num(step.get("engaged_at_s")),
                    _num(step.get("final_err_mm"), ".2f"),
                    _num(step.get("final_err_deg"), ".3f"),
                )
            )
        lines += _table(rows)
    moves: dict[str, Mapping[str, Any]] = dict(_move_metrics(metrics))
    from_log = not moves
    if from_log:
        moves = dict(_log_moves(run))
    for key, move in moves.items():
        frame = frames.get(key) or next(
            (k.frame for k in leaves if k.kind == "impedance_move" and k.frame), "?"
        )
        where = f"{key} (from the log)" if from_log else f"metrics.{key}"
        hold = (
            f" over the {_num(move.get('hold_s'), '.1f', ' s')} hold" if move.get("hold_s") else ""
        )
        lines += [
            "",
            f"Impedance move ({where}): {frame} settled in "
            f"{_num(move.get('settle_s'), '.2f', ' s')}",
            f"  steady-state error{hold}: at most "
            f"{_num(move.get('steady_max_err_mm'), '.2f', ' mm')} / "
            f"{_num(move.get('steady_max_err_deg'), '.3g', ' deg')}; at the end "
            f"{_num(move.get('final_err_mm'), '.3g', ' mm')} / "
            f"{_num(move.get('final_err_deg'), '.3g', ' deg')}",
        ]
    passivity = metrics.get("passivity")
    if isinstance(passivity, Mapping):
        rise_rel, rise_j = passivity.get("max_rise_rel"), passivity.get("max_rise_j")
        tau = passivity.get("max_tau_nm")
        source = "metrics.passivity"
    elif any(k.has("max_rise_rel") or k.has("tau_max_nm") for k in leaves):
        rises = [r for k in leaves for r in k.extra.get("max_rise_rel", ()) if not math.isnan(r)]
        taus = [v for k in leaves for v in k.extra.get("tau_max_nm", ()) if not math.isnan(v)]
        rise_rel, rise_j = (max(rises) if rises else None), None
        tau = max(taus) if taus else None
        source = "from the log"
    else:
        return lines
    verdict = ""
    if rise_rel is not None:
        verdict = " (W never rose)" if float(rise_rel) == 0.0 else ""
    lines += [
        "",
        f"Passivity ({source}; seed 003 eq. 13: W falls between switches)",
        f"  largest rise of W between switches: {_num(rise_rel, '.3g')} relative to W at the "
        f"switch, {_num(rise_j, '.3g', ' J')}{verdict}",
        f"  largest joint torque (at the tick rate): {_num(tau, '.2f', ' N m')}",
    ]
    return lines
