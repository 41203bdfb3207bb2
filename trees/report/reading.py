"""Reading a run record's log into per-limb and per-skill series (``limbtree report``)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from limbtree.trees.errors import RunError
from limbtree.trees.recorder import read_record

#: Skill internals of the alignment controllers (seed 002) that add the alignment plots.
ALIGNMENT_ERRORS: Final = ("dd_mm", "dtheta_deg")
ALIGNMENT_SPEEDS: Final = ("v_raw", "v_clamped")
#: Positions [mm] the alignment leaf reports each tick (measured end-effector, goal).
ALIGNMENT_PATH: Final = ("ee_mm", "goal_mm")

_NAN: Final = math.nan


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
        progress: where a move is along its waypoints: the segment's index plus the
            clamp's parameter ``t`` on it (2.5 = half way from waypoint 2 to 3), NaN when
            not reported.
        mode: the mode (``nominal``, ``recovering``, ...), empty when not reported.
        extra: other numeric internals by key (``dd_mm``, ``v_raw``, ...), NaN-padded.
        points: reported positions by key (``ee_mm``, ``goal_mm``) [mm], NaN-padded.
        recoveries: how many times the mode turned to ``recovering``.
    """

    t: list[float] = field(default_factory=list)
    distance: list[float] = field(default_factory=list)
    progress: list[float] = field(default_factory=list)
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
    series.progress.append(_float(internals.get("segment")) + _float(internals.get("t")))
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


def read_summary(path: Path) -> dict[str, Any]:
    """A record's ``summary.json`` as a map.

    Raises:
        RunError: when it cannot be read or is not a JSON object.
    """
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"{path} cannot be read as a run summary: {exc}") from None
    if not isinstance(summary, dict):
        raise RunError(f"{path} is not a run summary (a JSON object with outcome, ticks, ...)")
    return summary
