"""A run, indexed for the web debugger: any tick's frame, any node's history, the events.

One :class:`RunStore` per page server, fed the record's maps (``docs/record.md``): from a
``log.msgpack`` (``limbtree view``) or from the live tick stream (``limbtree run --view
web``). It keeps every tick's map packed (msgpack bytes, about 2 kB for six limbs) and an
index built as ticks arrive:

* per node, its status transitions (a row when its status or message changes), with the
  resets py_trees does without ticking: a composite that starts again resets its subtree
  to IDLE, and one that ends halts (resets) whatever under it was still RUNNING;
* per node, its tick count and time spent in its ticks (total, max);
* per skill node, its telemetry over time;
* the events, each with its tick, and the faults' windows.

A frame (:meth:`RunStore.frame`) is everything the page draws at one tick: every node's
status, the limbs with their skeletons (:mod:`.skeleton`), the tick's events and telemetry,
the faults in force. The skeletons are made in a thread of their own (importing
roboticstoolbox takes seconds): frames made before they are there carry none, and say so
(``"skeletons": "loading"``). The run's terrain, if any, is :attr:`RunStore.ground`
(:mod:`.terrain`). The store is not thread-safe: the server's event loop owns it.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgpack

from limbtree.transport.driver import Health
from limbtree.trees.errors import RunError
from limbtree.trees.mission.nodes import NodeRegistry
from limbtree.trees.recorder import (
    READABLE_VERSIONS,
    being_written,
    damage_text,
    not_a_record_hint,
    read_so_far,
    read_summary,
)
from limbtree.trees.stream import reset_without_tick
from limbtree.trees.web.skeleton import SkeletonLoader, Skeletons
from limbtree.trees.web.terrain import Ground

#: A node never ticked, or reset by its parent (py_trees' INVALID).
IDLE = "IDLE"
#: Telemetry series are thinned to at most this many points for the page.
MAX_POINTS = 2000
#: The events that open and close a fault's window.
_FAULT_OPEN = "fault_injected"
_FAULT_CLOSE = "fault_ended"
_HEALTH_NAMES: tuple[tuple[int, str], ...] = tuple(
    (int(flag), str(flag.name)) for flag in Health if flag.value and flag.name
)


def health_flags(health: int) -> list[str]:
    """The names of the flags set in ``health`` (``[]`` when healthy)."""
    return [name for value, name in _HEALTH_NAMES if health & value]


@dataclass
class _Node:
    """One node's index."""

    id: str
    name: str
    type: str
    params: Mapping[str, Any]
    descendants: tuple[str, ...] = ()
    file_params: dict[str, Any] | None = None
    composite: bool = False
    ticks_at: list[int] = field(default_factory=list)
    history: list[tuple[int, str, str]] = field(default_factory=list)
    status: str = IDLE
    message: str = ""
    ticks: int = 0
    busy_total: float = 0.0
    busy_max: float = 0.0
    busy_count: int = 0
    telemetry_t: list[float] = field(default_factory=list)
    telemetry: list[Mapping[str, Any]] = field(default_factory=list)
    skill: str = ""

    def note(self, tick: int, status: str, message: str) -> None:
        if status != self.status or message != self.message:
            self.status = status
            self.message = message
            self.ticks_at.append(tick)
            self.history.append((tick, status, message))

    def at(self, tick: int) -> tuple[str, str]:
        i = bisect.bisect_right(self.ticks_at, tick)
        if i == 0:
            return IDLE, ""
        _, status, message = self.history[i - 1]
        return status, message


@dataclass
class _Fault:
    limb: str
    fault: str
    start_tick: int
    start_t: float
    end_tick: int | None = None


def v1_tree(mission: str, nodes: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A layout 1 record's stand-in tree: one root over its nodes, ids being their names.

    Args:
        mission: the mission's name.
        nodes: (name, type) of each node the record or its summary names.
    """
    return {
        "id": "run",
        "name": mission or "run",
        "type": "record v1",
        "params": {},
        "children": [
            {"id": name, "name": name, "type": kind, "params": {}, "children": []}
            for name, kind in nodes
        ],
    }


class RunStore:
    """The run's ticks and their index.

    Args:
        header: the log's header map (``docs/record.md``); a layout 1 record has none:
            pass :func:`v1_tree`'s tree in a header-like map.
        skeletons: how to draw the limbs: made already, or a loader (started by
            :meth:`load_skeletons` or the first :meth:`frame`), or None for a loader of the
            header's robots.

    Attributes:
        ground: the run's terrain for the page (none without ``world.terrain``).
    """

    def __init__(
        self,
        header: Mapping[str, Any],
        skeletons: Skeletons | SkeletonLoader | None = None,
    ) -> None:
        self.header: dict[str, Any] = dict(header)
        if skeletons is None:
            skeletons = SkeletonLoader(self.header.get("robots") or {})
        self._loader = skeletons if isinstance(skeletons, SkeletonLoader) else None
        self._skeletons = None if isinstance(skeletons, SkeletonLoader) else skeletons
        self.ground = Ground(self.header)
        self._raw: list[bytes | memoryview] = []
        self._t: list[float] = []
        self.events: list[dict[str, Any]] = []
        self._faults: list[_Fault] = []
        self._open_faults: dict[tuple[str, str], _Fault] = {}
        self.nodes: dict[str, _Node] = {}
        self._node_types: NodeRegistry | None = None
        self._index_tree(self.header.get("tree") or v1_tree(str(header.get("mission", "")), []))
        self.end: dict[str, Any] | None = None
        self.summary: dict[str, Any] | None = None
        #: Why a recorded log stops early (damaged part way): the ticks before it are here.
        self.damage: str | None = None
        #: A record a run is still writing (it holds the directory's lock): the ticks so far.
        self.writing = False

    # -- building -----------------------------------------------------------------------------

    def _index_tree(self, tree: Mapping[str, Any]) -> None:
        def visit(node: Mapping[str, Any]) -> list[str]:
            below: list[str] = []
            for child in node.get("children") or []:
                below.append(str(child.get("id")))
                below.extend(visit(child))
            node_id = str(node.get("id"))
            self.nodes[node_id] = _Node(
                id=node_id,
                name=str(node.get("name", node_id)),
                type=str(node.get("type", "")),
                params=node.get("params") or {},
                descendants=tuple(below),
                composite=bool(node.get("children")),
            )
            return below

        visit(tree)

    @property
    def ticks(self) -> int:
        """How many ticks the store holds (frames ``0 .. ticks - 1``)."""
        return len(self._raw)

    @property
    def t_last(self) -> float:
        """The last tick's time [s] (0 before any)."""
        return self._t[-1] if self._t else 0.0

    def add(self, entry: Mapping[str, Any], raw: bytes | memoryview | None = None) -> None:
        """Take one tick map (the record's), packed as ``raw`` when already packed.

        Its index is its position (an aborted run's last map, at its last tick's time, is
        one more: the page shows it, though the nodes were not ticked again).
        """
        index = len(self._raw)
        self._raw.append(raw if raw is not None else msgpack.packb(entry, use_bin_type=True))
        t = float(entry.get("t", 0.0))
        self._t.append(t)
        # An aborted run's last map is at its last tick's time (docs/record.md): shown, but
        # not a tick of the nodes' (their counts and timing are the summary's).
        events = entry.get("events") or ()
        repeat = (
            index > 0
            and t == self._t[-2]
            and any(isinstance(e, Mapping) and e.get("kind") == "aborted" for e in events)
        )
        self._index_nodes(index, entry, counted=not repeat)
        skills = entry.get("skills")
        if skills:
            nodes = self.nodes
            for key, telemetry in skills.items():
                node = nodes.get(key) or self._node(str(key))
                node.telemetry_t.append(t)
                node.telemetry.append(telemetry)
                node.skill = telemetry.get("skill", node.skill)
        events = entry.get("events")
        if events:
            for event in events:
                self._add_event(index, t, event)

    def _node(self, node_id: str) -> _Node:
        node = self.nodes.get(node_id)
        if node is None:  # a layout 1 record names nodes the stand-in tree did not list
            node = self.nodes[node_id] = _Node(node_id, node_id, "", {})
            self.header["tree"]["children"].append(
                {"id": node_id, "name": node_id, "type": "", "params": {}, "children": []}
            )
        return node

    def _index_nodes(self, index: int, entry: Mapping[str, Any], *, counted: bool = True) -> None:
        statuses: Mapping[str, Any] = entry.get("nodes") or {}
        messages: Mapping[str, Any] = entry.get("messages") or {}
        busy: Mapping[str, Any] = entry.get("busy") or {}
        nodes = self.nodes
        for node_id, value in statuses.items():
            node = nodes.get(node_id) or self._node(str(node_id))
            status = "IDLE" if value == "INVALID" else value
            if node.composite:
                for below_id in reset_without_tick(
                    node.status, status, node.descendants, statuses, self._running
                ):
                    below = nodes[below_id]
                    if below.status != IDLE:
                        below.note(index, IDLE, "")
            message = messages.get(node_id, "")
            if status != node.status or message != node.message:
                node.note(index, status, str(message))
            if not counted:
                continue
            node.ticks += 1
            took = busy.get(node_id)
            if took is not None and took == took and took != math.inf:  # (not NaN, not inf)
                node.busy_total += took
                node.busy_count += 1
                if took > node.busy_max:
                    node.busy_max = took

    def _running(self, node_id: str) -> bool:
        return self.nodes[node_id].status == "RUNNING"

    def _add_event(self, index: int, t: float, event: Mapping[str, Any]) -> None:
        out = {"tick": index, **event}
        out.setdefault("t", t)
        self.events.append(out)
        kind = out.get("kind")
        key = (str(out.get("limb")), str(out.get("fault")))
        if kind == _FAULT_OPEN:
            fault = _Fault(key[0], key[1], index, float(out["t"]))
            self._faults.append(fault)
            self._open_faults[key] = fault
        elif kind == _FAULT_CLOSE and key in self._open_faults:
            self._open_faults.pop(key).end_tick = index

    def timing_from_summary(self, summary: Mapping[str, Any]) -> None:
        """Per-node timing from ``summary.json``, for records whose ticks have no ``busy``.

        The summary gives each node's total (layout 2: a list of nodes by id; layout 1: a
        map by name); the longest tick is then unknown.
        """
        nodes = summary.get("nodes")
        rows: list[tuple[str, Any]] = []
        if isinstance(nodes, list):
            rows = [(str(n.get("id")), n) for n in nodes if isinstance(n, Mapping)]
        elif isinstance(nodes, Mapping):
            rows = [(str(name), n) for name, n in nodes.items() if isinstance(n, Mapping)]
        for node_id, row in rows:
            node = self.nodes.get(node_id)
            total, ticks = row.get("busy_s"), row.get("ticks")
            if node is None or node.busy_count or not isinstance(total, int | float):
                continue
            if isinstance(ticks, int) and ticks > 0:
                node.busy_total = float(total)
                node.busy_count = ticks
                node.busy_max = math.nan

    def finish(
        self,
        outcome: str,
        failure: str | None,
        summary: Mapping[str, Any] | None,
        record: str | None = None,
    ) -> None:
        """The run is over (``record``: a live run's record directory, if it recorded)."""
        self.end = {"outcome": outcome, "failure": failure}
        if record is not None:
            self.end["record"] = record
        self.summary = dict(summary) if summary is not None else None

    # -- the skeletons --------------------------------------------------------------------------

    def load_skeletons(self) -> None:
        """Start making the skeletons in the background, if they are not there yet."""
        if self._loader is not None:
            self._loader.start()

    @property
    def skeletons(self) -> Skeletons | None:
        """The limbs' skeletons, or None while they are being made."""
        if self._skeletons is None and self._loader is not None:
            self._skeletons = self._loader.result()
            if self._skeletons is not None:
                self._loader = None
        return self._skeletons

    # -- reading ------------------------------------------------------------------------------

    def entry(self, tick: int) -> dict[str, Any]:
        """The record's map of tick ``tick`` (its position in the store).

        Raises:
            IndexError: when there is no such tick.
        """
        if not 0 <= tick < len(self._raw):
            raise IndexError(f"no tick {tick}: the run has ticks 0 to {len(self._raw) - 1}")
        out: dict[str, Any] = msgpack.unpackb(self._raw[tick], raw=False, strict_map_key=False)
        return out

    def frame(self, tick: int) -> dict[str, Any]:
        """Everything the page draws at ``tick`` (``docs/visualization.md``, the API).

        Raises:
            IndexError: when there is no such tick.
        """
        entry = self.entry(tick)
        self.load_skeletons()
        skeletons = self.skeletons
        ticked = entry.get("nodes") or {}
        nodes = {}
        for node_id, node in self.nodes.items():
            status, message = node.at(tick)
            nodes[node_id] = {"status": status, "message": message, "ticked": node_id in ticked}
        bases = entry.get("bases") or {}
        limbs = {
            name: self._limb(name, limb, bases, skeletons)
            for name, limb in (entry.get("limbs") or {}).items()
        }
        faults = [
            {"limb": f.limb, "fault": f.fault, "since_t": f.start_t}
            for f in self._faults
            if f.start_tick <= tick and (f.end_tick is None or tick < f.end_tick)
        ]
        return {
            "tick": tick,
            "t": entry.get("t", 0.0),
            "nodes": nodes,
            "limbs": limbs,
            "bases": bases,
            "events": [{"tick": tick, **event} for event in entry.get("events") or ()],
            "skills": entry.get("skills") or {},
            "faults": faults,
            "skeletons": "loading" if skeletons is None else "ready",
        }

    def _limb(
        self,
        name: str,
        limb: Mapping[str, Any],
        bases: Mapping[str, Any],
        skeletons: Skeletons | None,
    ) -> dict[str, Any]:
        state, command = limb.get("state"), limb.get("command")
        distance = None
        if state and command:
            distance = 1000.0 * math.dist(state[:3], command[:3])
        target = limb.get("target")
        to_target = None
        if state and target:
            to_target = 1000.0 * math.dist(state[:3], target[:3])
        health = int(limb.get("health") or 0)
        q, q_command = limb.get("q"), limb.get("q_command")
        return {
            "state": state,
            "command": command,
            "q": q,
            "q_command": q_command,
            "health": health,
            "health_flags": health_flags(health),
            "stale": bool(limb.get("stale")),
            "distance_mm": distance,
            "target": target,
            "target_mm": to_target,
            "skeleton": None if skeletons is None else skeletons.points(name, q, bases),
            "skeleton_command": (
                None if skeletons is None else skeletons.points(name, q_command, bases)
            ),
        }

    def node(self, node_id: str, max_points: int = MAX_POINTS) -> dict[str, Any]:
        """A node's details: parameters, status history, timing, telemetry over time.

        The parameters are as the mission file writes them (:func:`~limbtree.trees.nodes.
        reference.file_params`: ``p_e_mm: 20``, ``inf``), not the record's SI.

        Raises:
            KeyError: when the tree has no such node.
        """
        node = self.nodes.get(node_id)
        if node is None:
            raise KeyError(f"the run's tree has no node {node_id!r}")
        busy = None
        if node.busy_count:
            busy = {
                "total_s": node.busy_total,
                "mean_s": node.busy_total / node.busy_count,
                "max_s": node.busy_max if math.isfinite(node.busy_max) else None,
            }
        return {
            "id": node.id,
            "name": node.name,
            "type": node.type,
            "params": self._file_params(node),
            "history": _history(node.history, max_points),
            "history_rows": len(node.history),
            "tick": self.ticks - 1,
            "ticks": node.ticks,
            "busy": busy,
            "last_message": node.message,
            "telemetry": _series(node, max_points),
        }

    def _file_params(self, node: _Node) -> dict[str, Any]:
        if node.file_params is None:
            from limbtree.trees.nodes import NodeRegistryError, builtin_registry, default_registry
            from limbtree.trees.nodes.reference import file_params

            if self._node_types is None:
                try:  # (imports the skills: made when a node is first asked for, once)
                    self._node_types = default_registry()
                except NodeRegistryError:  # a broken plug-in: limbtree's own types still show
                    self._node_types = builtin_registry()
            node.file_params = file_params(self._node_types.resolve(node.type), node.params)
        return node.file_params

    def state(self) -> dict[str, Any]:
        """The run as ``GET /api/run`` gives it (without the live controls)."""
        return {
            "header": self.header,
            "ticks": self.ticks,
            "t_last": self.t_last,
            "events": self.events,
            "end": self.end,
            "summary": self.summary,
            "damage": self.damage,
            "writing": self.writing,
        }

    def events_since(self, count: int) -> list[dict[str, Any]]:
        """The events after the first ``count``."""
        return self.events[count:]


#: A thinned history keeps its last rows whole (the panel lists the latest changes).
RECENT_ROWS = 200


#: The keys of a tick map that only frames read (:meth:`RunStore.frame` decodes the tick
#: again): :func:`index_map` skips them.
FRAME_ONLY_KEYS: Final = frozenset({"limbs", "bases"})


def index_map(raw: bytes) -> dict[str, Any]:
    """A packed tick map decoded for :meth:`RunStore.add`: without its limbs and bases.

    They are most of a tick's bytes (six limbs: about 1.6 of 2.4 kB), and only a frame
    reads them, decoding the tick again: a live server that indexes every tick skips
    them (half the decoding time). Anything but a map is decoded whole.
    """
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(raw)
    try:
        size = unpacker.read_map_header()
    except ValueError:  # (not a map)
        out: dict[str, Any] = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        return out
    entry: dict[str, Any] = {}
    for _ in range(size):
        key = unpacker.unpack()
        if key in FRAME_ONLY_KEYS:
            unpacker.skip()
        else:
            entry[key] = unpacker.unpack()
    return entry


def _history(rows: Sequence[tuple[int, str, str]], max_points: int) -> list[list[Any]]:
    """A node's transitions for the page.

    A long history (a message that changes every tick) keeps every change of status and
    the last :data:`RECENT_ROWS` rows.
    """
    if len(rows) <= max_points:
        return [list(row) for row in rows]
    recent = len(rows) - RECENT_ROWS
    out = [
        list(row) for i, row in enumerate(rows) if i >= recent or i == 0 or row[1] != rows[i - 1][1]
    ]
    return out


def _series(node: _Node, max_points: int) -> dict[str, Any] | None:
    """A node's telemetry as series over time, thinned to ``max_points``.

    Both ticks around a change of the mode are always kept.
    """
    rows = node.telemetry
    if not rows:
        return None
    keep = _thin(rows, max_points)
    keys: dict[str, bool] = {}  # key -> numeric, in first-seen order
    for i in keep:
        for key, value in rows[i].items():
            if key == "skill":
                continue
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            if key not in keys or (value is not None and not numeric):
                keys[key] = keys.get(key, True) and (numeric or value is None)
    series: dict[str, list[Any]] = {}
    labels: dict[str, list[str]] = {}
    for key, numeric in keys.items():
        values = [rows[i].get(key) for i in keep]
        if numeric:
            series[key] = [
                v if isinstance(v, int | float) and math.isfinite(v) else None for v in values
            ]
        elif all(v is None or isinstance(v, str) for v in values) and any(values):
            labels[key] = ["" if v is None else v for v in values]
    return {
        "skill": node.skill,
        "t": [node.telemetry_t[i] for i in keep],
        "series": series,
        "labels": labels,
    }


def _thin(rows: Sequence[Mapping[str, Any]], max_points: int) -> list[int]:
    n = len(rows)
    if n <= max_points:
        return list(range(n))
    stride = math.ceil(n / max_points)
    keep = set(range(0, n, stride))
    keep.add(n - 1)
    mode_key = "mode"
    previous = None
    for i, row in enumerate(rows):
        mode = row.get(mode_key)
        if mode != previous:
            keep.update((i - 1, i) if i else (i,))  # the last of one mode, the first of the next
            previous = mode
    return sorted(keep)


def load_record(directory: Path, skeletons: Skeletons | SkeletonLoader | None = None) -> RunStore:
    """A record directory (``--record DIR``) read into a store, layouts 1 and 2.

    Args:
        directory: the record's directory.
        skeletons: the limbs' skeletons or their loader (:class:`RunStore`), or None for a
            loader of the header's robots, started when the server starts or at the first
            frame (not while the record is indexed: both would share one interpreter).

    A log damaged part way is read up to the damage (``damage`` says where and why), as
    ``limbtree report`` does. A record a run is still writing is read as far as it goes
    (``writing``).

    Raises:
        RunError: naming the directory and what is wrong (no log, one damaged before its
            first tick, an empty one without a summary, a layout this limbtree cannot read,
            a summary.json that is damaged or not a run summary).
    """
    log = directory / "log.msgpack"
    if not directory.exists():
        raise RunError(f"{directory}: no such directory (give the directory --record wrote)")
    if not directory.is_dir():  # (the log itself, say: its directory is named)
        hint = f": {directory.parent}" if directory.name == log.name else ""
        raise RunError(
            f"{directory} is not a directory; give the directory of a run record "
            f"(limbtree run MISSION --record DIR){hint}"
        )
    if not log.is_file():
        raise RunError(
            f"{directory}: no log.msgpack here (give the directory --record wrote)"
            f"{not_a_record_hint(directory)}"
        )
    summary_path = directory / "summary.json"
    summary = read_summary(summary_path) if summary_path.is_file() else None
    writing = summary is None and being_written(directory)
    data = log.read_bytes()
    view = memoryview(data)  # each tick's bytes are a slice of it, not a copy
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=0)
    unpacker.feed(data)
    store: RunStore | None = None
    pending: list[tuple[dict[str, Any], memoryview]] = []
    start = 0
    damage: str | None = None
    try:
        for entry in unpacker:
            end = unpacker.tell()
            raw = view[start:end]
            start = end
            first = store is None and not pending
            if first and isinstance(entry, dict) and entry.get("kind") == "header":
                if entry.get("v") not in READABLE_VERSIONS:
                    raise RunError(
                        f"{log} is a record of layout {entry.get('v')!r}; this limbtree "
                        f"reads layouts {', '.join(map(str, READABLE_VERSIONS))}"
                    )
                store = RunStore(entry, skeletons)
                continue
            if not isinstance(entry, dict) or "t" not in entry:
                raise RunError(f"{log} is not a limbtree run log (an entry has no 't')")
            if store is None:
                pending.append((entry, raw))
            else:
                store.add(entry, raw)
    except (msgpack.exceptions.ExtraData, ValueError) as exc:
        damage = f"{log} is damaged: {damage_text(exc)}"
    # A truncated last tick (the log of a killed run) is not yielded: its bytes are left.
    cut = damage is None and start < len(data)
    if cut and store is None and not pending:
        raise RunError(
            f"{log} is damaged before its first tick: it ends {len(data)} bytes in, inside "
            f"its {'header' if data[:1] in _MAP_BYTES else 'first entry'}"
        )
    if not (pending or (store is not None and store.ticks)):  # not one tick to show
        if damage is not None:
            raise RunError(damage)
        if writing:
            raise RunError(
                f"{directory}: the run writing this record has not recorded a tick yet; try "
                "again in a moment"
            )
        if summary is None:  # (as limbtree report)
            raise RunError(
                f"{log} has no complete tick and there is no summary.json: the run recorded "
                "nothing to show"
            )
    if store is None:  # layout 1: no header
        store = _v1_store(summary, pending)  # (no robots: no skeletons)
    recorded = (summary or {}).get("ticks")
    if damage is None and summary is not None and (cut or _more(recorded, store.ticks)):
        # A finished run's log must hold every tick: this one was cut short (copied while
        # written, a full disk), which a killed run's log may be, not a finished one's.
        damage = f"{log} stops early: the run had {recorded} ticks (summary.json)"
    if damage is not None:  # (worded as limbtree report words it)
        store.damage = f"the log is read up to {read_so_far(store.ticks)}: {damage}"
    store.writing = writing
    if summary is not None:
        store.finish(str(summary.get("outcome", "")), summary.get("failure"), summary)
        store.timing_from_summary(summary)
    return store


#: The first byte of a msgpack map (fixmap, map 16, map 32): how a header starts.
_MAP_BYTES: Final = (*(bytes((b,)) for b in range(0x80, 0x90)), b"\xde", b"\xdf")


def _more(recorded: object, read: int) -> bool:
    """Whether a summary's tick count says the run had more ticks than were read."""
    return isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > read


def _v1_store(
    summary: Mapping[str, Any] | None, ticks: Sequence[tuple[dict[str, Any], memoryview]]
) -> RunStore:
    summary = summary or {}
    names: dict[str, str] = {}
    nodes = summary.get("nodes")
    if isinstance(nodes, Mapping):
        names = {str(name): str((info or {}).get("type", "")) for name, info in nodes.items()}
    for entry, _ in ticks:
        for name in entry.get("nodes") or {}:
            names.setdefault(str(name), "")
    mission = str(summary.get("mission", ""))
    header = {
        "kind": "header",
        "v": 1,
        "mission": mission,
        "mission_file": "",
        "parameters": {},
        "seed": summary.get("seed"),
        "clock": summary.get("clock", ""),
        "rate_hz": summary.get("rate_hz"),
        "tree": v1_tree(mission, names.items()),
        "robots": {},
    }
    store = RunStore(header)
    for entry, raw in ticks:
        store.add(entry, raw)
    return store


__all__ = ["IDLE", "MAX_POINTS", "RunStore", "health_flags", "load_record", "v1_tree"]
