"""The text half of ``limbtree report``: the run's figures, faults, limbs, skills and nodes."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from limbtree.trees.report.climbing import (
    HOLD_FORCE_N,
    ClimbSeries,
    ClimbStep,
    Detachment,
    Peak,
    climb_metrics,
    detachments,
)
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
    """Rows as left-aligned columns; a cell with a newline is on two lines (a heading)."""
    cells = [[cell.split("\n") for cell in row] for row in rows]
    widths = [max(len(line) for row in cells for line in row[i]) for i in range(len(rows[0]))]
    out = []
    for row in cells:
        for k in range(max(len(cell) for cell in row)):
            texts = (cell[k] if k < len(cell) else "" for cell in row)
            out.append(
                indent + "  ".join(t.ljust(w) for t, w in zip(texts, widths, strict=True)).rstrip()
            )
    return out


def summary_text(
    directory: Path,
    summary: Mapping[str, Any] | None,
    run: RunLog,
    images: Sequence[Path],
    notes: Sequence[str] = (),
    *,
    climb: ClimbSeries | None = None,
) -> str:
    """The text half of the report: the run's figures, its faults, limbs, skills and nodes.

    Args:
        directory: the record's directory.
        summary: its ``summary.json``, or None (a killed run).
        run: its log.
        images: the PNGs drawn.
        notes: what the reader noticed (a damaged log, no summary), listed first.
        climb: seed 004's climbing series (:func:`~.climbing.read_climb`), for the climb
            block; None for another run (the block then comes from the summary alone, when
            it has a climbing block).
    """
    s: Mapping[str, Any] = summary or {}
    lines = [f"Run record {directory}"]
    lines += [f"  ! {note}" for note in notes]
    disruptions = run.disruptions()
    # A killed run has no summary: what the log's header says (layout 2) stands in.
    header: Mapping[str, Any] = run.header or {}

    def said(key: str, default: Any) -> Any:
        return s.get(key, header.get(key, default))

    mission = said("mission", "?")
    if said("mission_file", None):
        mission = f"{mission} ({said('mission_file', None)})"
    sim_time = s.get("sim_time_s", run.t_last if run.ticks else None)
    wall = s.get("wall_time_s")
    timing = _num(sim_time, ".2f", " s")
    if wall is not None:
        timing += f" mission time, {_num(wall, '.2f', ' s')} wall"
        if sim_time and float(wall) > 0:
            timing += f" ({float(sim_time) / float(wall):.1f}x real time)"
    ticks = f"{s['ticks']}" if "ticks" in s else "-"
    if run.ticks:
        # An aborted run's log ends with one map more, the abort's, at the last tick's time.
        abort = s.get("outcome") == "ABORTED" and run.ticks == s.get("ticks", -2) + 1
        last = ", the last one the abort's" if abort else ""
        ticks += f" (log: {run.ticks} ticks{last}, t = {run.t_first:.2f} .. {run.t_last:.2f} s)"
    injected = s.get("faults_injected", len(disruptions))
    recovered = s.get("faults_recovered", sum(d.recovered is not None for d in disruptions))
    recoveries = s.get("recoveries", sum(k.recoveries for k in run.skills.values()))
    distance = s.get("max_command_state_distance")
    logged = [d for k in run.skills.values() for d in k.distance if not math.isnan(d)]
    if distance is None:
        distance = max(logged) if logged else None
    rows: list[tuple[str, ...]] = [
        ("mission", str(mission)),
        ("outcome", str(s.get("outcome", "unknown (no summary)"))),
        ("seed, clock", f"{said('seed', '-')}, {said('clock', '-')}"),
        ("time", timing),
        ("ticks", ticks),
        ("faults", f"{injected} injected, {recovered} recovered"),
        ("recoveries", str(recoveries)),
    ]
    if distance or logged:  # (a skill clamped its commands: the hypersphere's distance)
        rows.append(
            ("max clamp distance", _num(distance, ".4f") + " (<= 1: each command in its sphere)")
        )
    if s.get("failure"):
        rows.append(("failure", str(s["failure"])))
    raw_metrics = s.get("metrics")
    metrics: Mapping[str, Any] = raw_metrics if isinstance(raw_metrics, Mapping) else {}
    dynamics = _dynamics_lines(metrics, run)
    climbing = _climb_lines(metrics, climb)
    shown = _dynamics_keys(metrics) | set(climb_metrics(metrics))
    rest = {k: v for k, v in metrics.items() if k not in shown}
    rows += [(f"metrics.{k}", _num(v, ".4g")) for k, v in _flatten("", rest)]
    lines += _table(rows)
    lines += dynamics
    lines += climbing

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
                    _lasted(f),
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
        joints = any(series.joint_ticks for series in run.limbs.values())
        # (headings on two lines: the table fits 80 columns)
        head: tuple[str, ...] = ("limb", "commanded\nticks", "max |command -\nstate| [mm]")
        if joints:  # (joint-space commands: a walk's, a climb's, a joint move's)
            head += ("joint-\ncommanded\nticks", "max |joint\ncommand -\nstate| [deg]")
        rows = [(*head, "stale\nticks")]
        for name, series in run.limbs.items():
            row: tuple[str, ...] = (
                name,
                str(series.commanded_ticks),
                f"{series.max_error * 1e3:.2f}",
            )
            if joints:
                row += (str(series.joint_ticks), f"{math.degrees(series.max_joint_error):.2f}")
            rows.append((*row, str(series.stale_ticks)))
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
            if busy is None:  # (a killed run: the ticks' own busy times)
                busy = run.node_busy.get(label)
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
        files = "1 PNG file" if len(images) == 1 else f"{len(images)} PNG files"
        lines += ["", f"Images ({files} in {directory})"]
    return "\n".join(lines)


def _lasted(fault: Mapping[str, Any]) -> str:
    """How long a summary's fault was in force [s], as the log-only table gives it.

    From its ``fault_injected`` tick to its ``fault_ended`` tick; ``-`` while it was still
    in force when the run ended (an aborted run's); its scheduled ``duration_s`` for a
    summary written before those ticks were kept.
    """
    if "ended_at_s" not in fault:
        return _num(fault.get("duration_s"))
    injected, ended = fault.get("injected_at_s"), fault.get("ended_at_s")
    if not (isinstance(injected, int | float) and isinstance(ended, int | float)):
        return "-"
    return _num(ended - injected)


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
            node_id = by_label.get(label, "")
            kind = run.nodes.get(node_id, {}).get("type")  # (the header's, layout 2)
            rows.append((node_id, label, {} if kind is None else {"type": kind}))
    return rows


# Seed 003: walk steps, impedance moves, passivity ------------------------------------------


def _walk_metrics(metrics: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The summary's walk tables: key -> its steps (``metrics.walk.steps``)."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    climbing = climb_metrics(metrics)
    for key, value in metrics.items():
        if key in climbing:
            continue  # seed 004's steps: the climb block shows them
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


# Seed 004: climbing with grippers ----------------------------------------------------------


def _when(peak: Peak | None, value: float | None, note: str = "") -> str:
    """`` on LEG at T s`` and ``note``, when the log's ``peak`` is the summary's ``value``.

    Empty when the log has no peak or another one (a summary from elsewhere).
    """
    if peak is None or (value is not None and not math.isclose(peak.value, value, rel_tol=1e-6)):
        return ""
    where = f" on {peak.leg}" if peak.leg else ""
    return f"{where} at {peak.t_s:.2f} s{note}"


def _first(*values: Any) -> float | None:
    """The first of ``values`` that is a finite number, or None."""
    for value in values:
        if isinstance(value, int | float) and math.isfinite(value):
            return float(value)
    return None


_STEP_COLUMNS = ("node", "leg", "planner", "ended at [s]", "took [s]", "planning [s]", "figures")


def _steps_done(block: Mapping[str, Any], climb: ClimbSeries | None) -> tuple[str, list[str]]:
    """The steps line and a table of the steps (from the summary, else the log)."""
    listed = block.get("steps")
    if isinstance(listed, list) and listed:
        return _summary_steps([x for x in listed if isinstance(x, Mapping)])
    if climb is not None and climb.steps:
        return _log_steps(climb.steps)
    return "-", []


def _done(steps: int, swings: int) -> str:
    """``5 (3 swings, 2 support phases)``."""
    supports = steps - swings
    return (
        f"{steps} ({swings} swing{'s' * (swings != 1)}, "
        f"{supports} support phase{'s' * (supports != 1)})"
    )


def _summary_steps(steps: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """The steps of ``metrics.climb.steps``: the line and the table."""
    rows: list[tuple[str, ...]] = [_STEP_COLUMNS]
    for step in steps:
        rows.append(
            (
                str(step.get("node", "?")),
                str(step.get("leg") or "-"),
                str(step.get("planner") or "-"),
                _num(step.get("t_s")),
                _num(step.get("duration_s")),
                _num(step.get("planning_s")),
                _step_figures(step),
            )
        )
    done = [step for step in steps if not step.get("failure")]
    line = _done(len(done), sum(1 for step in done if step.get("leg")))
    failed = [step for step in steps if step.get("failure")]
    if failed:
        line += f"; then {failed[-1].get('node', '?')} failed at {_num(failed[-1].get('t_s'))} s"
    return line, _table(rows, indent="    ")


def _log_steps(steps: Sequence[ClimbStep]) -> tuple[str, list[str]]:
    """The steps the log shows (a killed run): the line and the table."""
    rows: list[tuple[str, ...]] = [_STEP_COLUMNS]
    for step in steps:
        rows.append((step.node, step.leg or "-", step.planner or "-", _num(step.end_s),
                     _num(step.end_s - step.start_s), "-", step.phase))  # fmt: skip
    done = [step for step in steps if step.phase == "done"]
    line = _done(len(done), sum(1 for step in done if step.is_swing))
    cut = next((step for step in reversed(steps) if step.phase != "done"), None)
    if cut is not None:
        line += f"; then {cut.node} {cut.phase} at {cut.end_s:.2f} s"
    return line + " (from the log)", _table(rows, indent="    ")


def _step_figures(step: Mapping[str, Any]) -> str:
    """A step's own figures: a swing's α and peak momentum, a support phase's shift, raise."""
    if step.get("leg"):
        alpha = f"α {_num(step.get('alpha_min'))}-{_num(step.get('alpha_max'))}, "
        if step.get("planner") == "baseline":
            alpha = ""
        return (
            f"{alpha}peak |L_lin| {_num(step.get('peak_momentum_lin'), '.4f')} kg m/s, "
            f"apex {_num(_mm(step.get('apex_m')), '.1f')} mm"
        )
    return (
        f"shift {_num(_mm(step.get('shift_m')), '.1f')} mm, "
        f"raise {_num(_mm(step.get('raise_m')), '.1f')} mm"
    )


def _mm(value: Any) -> float | None:
    """Metres [m] as millimetres [mm]; None for no number."""
    return float(value) * 1e3 if isinstance(value, int | float) else None


def _climb_lines(metrics: Mapping[str, Any], climb: ClimbSeries | None) -> list[str]:
    """Seed 004's climb block, from ``summary.json``'s ``metrics.climb`` and the log.

    Planner, steps done, the peak force on a holding gripper and on any palm (when, which
    leg), the smallest GIA margin, the detachments (leg, force, time), base collisions. A
    run with no climbing step (a robot standing under a ``grip_guard``) gets the same block
    as ``Grippers``, without the planner and the steps.
    """
    blocks = climb_metrics(metrics)
    if not blocks and (climb is None or not climb.t):
        return []
    key, block = next(iter(blocks.items()), ("", {}))
    hold = climb.hold_force_n if climb is not None else HOLD_FORCE_N
    source = f"metrics.{key}" if key else "from the log"
    planners = climb.planners if climb is not None else []
    if not planners:
        steps = block.get("steps")
        planners = list(
            dict.fromkeys(
                str(x["planner"])
                for x in (steps if isinstance(steps, list) else ())
                if isinstance(x, Mapping) and x.get("planner")
            )
        )
    done, table = _steps_done(block, climb)
    climbed = bool(planners) or done != "-"
    title = "Climb" if climbed else "Grippers"
    lines = ["", f"{title} ({source}; seed 004, holding force {hold:g} N)"]
    peak = climb.peak_holding() if climb is not None else None
    peak_n = _first(block.get("max_grip_force_n"), peak.value if peak else None)
    held = _num(peak_n, ".3f", " N") + _when(peak, peak_n)
    pull_n = _first(block.get("max_pull_force_n"), None)
    pull = _num(pull_n, ".3f", " N")
    if pull_n is not None:  # (what the holding force limits: a push tears nothing off)
        pull += f" ({pull_n / hold:.2f} of the holding force)"
    contact = climb.peak_contact() if climb is not None else None
    contact_n = _first(block.get("max_contact_force_n"), contact.value if contact else None)
    landing = ""
    if climb is not None and contact is not None and not climb.held(contact.leg, contact.t_s):
        landing = " (its palm not holding: landing)"
    low = climb.min_margin() if climb is not None else None
    low_value = _first(block.get("min_gia_margin"), low.value if low else None)
    lost = detachments(block or None, climb)
    rows: list[tuple[str, ...]] = []
    if climbed:
        rows += [("planner", " and ".join(planners) or "-"), ("steps done", done)]
    rows += [
        ("peak holding-gripper force", held + " (pushed or pulled)"),
        ("peak pull on a gripper", pull),
        ("peak contact force", _num(contact_n, ".3f", " N") + _when(contact, contact_n, landing)),
        ("min GIA margin", _num(low_value, ".3f", " m/s^2") + _when(low, low_value)),
    ]
    lines_lost = [_detachment(d) for d in lost] or ["none"]
    rows.append(("detachments", lines_lost[0]))
    rows += [("", line) for line in lines_lost[1:]]
    rows.append(("base collisions", _collisions(block, climb)))
    lines += _table(rows)
    if table:
        lines += ["  steps", *table]
    return lines


def _detachment(d: Detachment) -> str:
    """One detachment: the plant's (leg, time, force) or the log's inference."""
    if d.from_log and d.torn is False:
        return (
            f"{d.leg} stopped holding at {d.t_s:.2f} s, not torn off: let go (opened, or "
            "holding nothing; from the log)"
        )
    if d.from_log:
        return (
            f"{d.leg} stopped holding at {d.t_s:.2f} s (from the log: last logged pull "
            f"{_num(d.force_n, '.3f', ' N')})"
        )
    return f"{d.leg} torn off at {d.t_s:.3f} s, pulled with {d.force_n:.3f} N"


def _collisions(block: Mapping[str, Any], climb: ClimbSeries | None) -> str:
    """The ticks (and physics steps) with the base on the terrain, and when."""
    ticks = block.get("collisions")
    if ticks is None and climb is not None:
        ticks = len(climb.collision_ticks())
    if ticks is None:
        return "-"
    if not ticks:
        return "none"
    text = f"{ticks} ticks with the base on the terrain"
    substeps = block.get("collision_substeps")
    if substeps is not None:
        text += f" ({substeps} physics steps)"
    if climb is not None and (hits := climb.collision_ticks()):
        text += f", {hits[0]:.2f} to {hits[-1]:.2f} s"
    return text
