"""Reading a run record's log into per-limb and per-skill series (``limbtree report``)."""

from __future__ import annotations

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
#: Skill kinds whose telemetry carries seed 003's controller figures (``docs/record.md``).
DYNAMICS_SKILLS: Final = ("walk_step", "impedance_move")
#: Numeric figures of seed 003's leaves kept per tick: the controlled frame's error [mm],
#: [deg], the Lyapunov function W [J], its largest relative rise since the last switch, the
#: largest joint torque [N m], the via point being approached, the largest error since the
#: move settled [mm], [deg].
DYNAMICS_SCALARS: Final = (
    "err_mm",
    "err_deg",
    "lyapunov_j",
    "max_rise_rel",
    "tau_max_nm",
    "via_index",
    "steady_max_mm",
    "steady_max_deg",
)
#: A base that moves less than this over the run is fixed, and gets no plot [m].
BASE_STILL_M: Final = 1e-4

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
        joint_ticks: ticks with a joint-space command (``q_command``).
        max_joint_error: largest joint difference between such a command and the joints
            logged with it [rad].
    """

    t: list[float] = field(default_factory=list)
    state: list[tuple[float, float, float]] = field(default_factory=list)
    command: list[tuple[float, float, float]] = field(default_factory=list)
    stale_ticks: int = 0
    max_error: float = 0.0
    joint_ticks: int = 0
    max_joint_error: float = 0.0

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
        key: the node's key in the log: its id (layout 2) or its name (layout 1).
        kind: the telemetry's ``skill`` (``walk_step``, ``sync``, ...), empty when unknown.
        frame: the frame a seed-003 leaf controls (``mar.arm_1.E2``, ``mar.E0``), last
            reported, or empty.
        phase: per tick the phase of a seed-003 leaf (``via``, ``engage``, ``holding``, ...),
            empty when not reported.
        tau: per tick the joint torques it reported (``tau_nm``) [N m], empty when none.
        latched: per tick the latched interfaces it reported (``latched``), or None.
    """

    t: list[float] = field(default_factory=list)
    distance: list[float] = field(default_factory=list)
    progress: list[float] = field(default_factory=list)
    mode: list[str] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)
    points: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    recoveries: int = 0
    key: str = ""
    kind: str = ""
    frame: str = ""
    phase: list[str] = field(default_factory=list)
    tau: list[tuple[float, ...]] = field(default_factory=list)
    latched: list[tuple[str, ...] | None] = field(default_factory=list)

    def has(self, key: str) -> bool:
        """Whether the skill reported ``key`` at least once."""
        return any(not math.isnan(v) for v in self.extra.get(key, ()))

    @property
    def is_dynamics(self) -> bool:
        """Whether this is one of seed 003's leaves (it reports its frame's error)."""
        return self.kind in DYNAMICS_SKILLS or self.has("err_mm")

    def first(self, *phases: str) -> int | None:
        """The index of the first tick in one of ``phases``, or None."""
        return next((i for i, p in enumerate(self.phase) if p in phases), None)

    def engaged(self) -> tuple[float, str] | None:
        """When the leaf engaged its target, and how: ``(t [s], "engaged" | "settled")``.

        A walk step engages when it enters its ``engage`` phase (its end is within the
        tolerances and it latches: ``engaged_at_s`` of ``metrics.walk.steps``); an impedance
        move settles when it enters ``holding``. None when it never did.
        """
        index = self.first("engage")
        if index is not None:
            return self.t[index], "engaged"
        index = self.first("holding")
        if index is not None:
            return self.t[index], "settled"
        return None


@dataclass
class BaseSeries:
    """One robot's base (its floating torso, for a ``mujoco`` plant) over the run.

    Attributes:
        t: tick times [s].
        position: the base's position in the world [m], one per tick.
        quaternion: its orientation ``(qx, qy, qz, qw)``, one per tick (NaN when unknown).
    """

    t: list[float] = field(default_factory=list)
    position: list[tuple[float, float, float]] = field(default_factory=list)
    quaternion: list[tuple[float, float, float, float]] = field(default_factory=list)

    def turned_deg(self) -> list[float]:
        """Per tick, the angle the base has turned from its first known orientation [deg].

        The angle of the relative rotation, ``2 acos |<q0, q>|`` for unit quaternions
        (either sign of a quaternion is the same orientation); NaN where unknown.
        """
        known = [q for q in self.quaternion if not math.isnan(q[0])]
        if not known:
            return [_NAN] * len(self.quaternion)
        first = _unit(known[0])
        out = []
        for q in self.quaternion:
            dot = abs(sum(a * b for a, b in zip(first, _unit(q), strict=True)))
            out.append(_NAN if math.isnan(dot) else math.degrees(2.0 * math.acos(min(dot, 1.0))))
        return out

    @property
    def moved(self) -> bool:
        """Whether the base moved more than :data:`BASE_STILL_M` from where it started."""
        known = [p for p in self.position if not math.isnan(p[0])]
        return any(math.dist(p, known[0]) > BASE_STILL_M for p in known)


@dataclass
class LatchSeries:
    """Which standard interfaces were latched, per tick, as seed 003's leaves reported it.

    Interfaces are named ``ROBOT.INTERFACE`` (``mar.arm_1.E2``), like the frames the leaves
    control, when the robot is known.

    Attributes:
        t: tick times [s].
        reports: per tick, robot -> its latched interfaces, for the robots whose leaves
            reported this tick (robot ``""`` when unknown).
    """

    t: list[float] = field(default_factory=list)
    reports: list[dict[str, frozenset[str]]] = field(default_factory=list)

    def owners(self) -> dict[str, str]:
        """Every interface ever latched -> its robot, sorted by interface."""
        found = {i: robot for report in self.reports for robot, s in report.items() for i in s}
        return dict(sorted(found.items()))

    def states(self) -> dict[str, list[float]]:
        """Interface -> per tick 1.0 (latched), 0.0 (free) or NaN (no report of its robot)."""
        out: dict[str, list[float]] = {}
        for interface, robot in self.owners().items():
            out[interface] = [
                (1.0 if interface in report[robot] else 0.0) if robot in report else _NAN
                for report in self.reports
            ]
        return out

    def switches(self) -> list[tuple[float, str, bool]]:
        """``(t [s], interface, latched)`` for every change of an interface's latch."""
        out: list[tuple[float, str, bool]] = []
        for interface, values in self.states().items():
            last = _NAN
            for t, value in zip(self.t, values, strict=True):
                if math.isnan(value):
                    continue
                if not math.isnan(last) and value != last:
                    out.append((t, interface, value == 1.0))
                last = value
        return sorted(out)


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
        node_busy: per node label, the wall time of its ticks [s] (the ticks' ``busy``;
            records before that field have none).
        damage: why reading stopped early, or None when the log was read to its end.
        header: the log's header map (record layout 2), or None (layout 1).
        labels: node id -> its label (layout 2): its name, with its id added when another
            node has the same name. Layout 1 keys nodes by name, and names are their labels.
        bases: per robot, its base's series (ticks' ``bases``; layout 1 has none).
        latches: the latched interfaces over the run, from seed 003's leaves.
        nodes: node id -> the header's ``NODE`` map (layout 2; empty for layout 1).
    """

    ticks: int = 0
    t_first: float = 0.0
    t_last: float = 0.0
    limbs: dict[str, LimbSeries] = field(default_factory=dict)
    skills: dict[str, SkillSeries] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    node_ticks: Counter[str] = field(default_factory=Counter)
    node_status: dict[str, str] = field(default_factory=dict)
    node_busy: dict[str, float] = field(default_factory=dict)
    damage: str | None = None
    header: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)
    bases: dict[str, BaseSeries] = field(default_factory=dict)
    latches: LatchSeries = field(default_factory=LatchSeries)
    nodes: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def label(self, key: str) -> str:
        """A node's label from its key in the log (an id in layout 2, a name in layout 1)."""
        return self.labels.get(key, key)

    def params(self, key: str) -> Mapping[str, Any]:
        """A node's parameters from the header (SI units), by its key; empty when unknown."""
        params = self.nodes.get(key, {}).get("params")
        return params if isinstance(params, Mapping) else {}

    def robot_names(self) -> list[str]:
        """The header's robots (empty for layout 1)."""
        robots = (self.header or {}).get("robots")
        return [str(r) for r in robots] if isinstance(robots, Mapping) else []

    def joints(self, limb: str) -> list[str]:
        """A limb's joint names from the header, or an empty list when it does not say."""
        robots = (self.header or {}).get("robots")
        for robot in robots.values() if isinstance(robots, Mapping) else ():
            limbs = robot.get("limbs") if isinstance(robot, Mapping) else None
            entry = limbs.get(limb) if isinstance(limbs, Mapping) else None
            if isinstance(entry, Mapping) and isinstance(entry.get("joints"), list):
                return [str(j) for j in entry["joints"]]
        return []

    def robot_of(self, frame: str) -> str:
        """The robot a frame (``ROBOT.LIMB.END``, ``ROBOT.E0``) belongs to, or ``""``."""
        robots = self.robot_names()
        head = frame.split(".", 1)[0]
        if head in robots:
            return head
        return robots[0] if len(robots) == 1 else ""

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


def _quaternion(value: Any) -> tuple[float, float, float, float]:
    """The quaternion ``(qx, qy, qz, qw)`` of a pose ``[x, y, z, qx, qy, qz, qw]``."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes) and len(value) >= 7:
        return (_float(value[3]), _float(value[4]), _float(value[5]), _float(value[6]))
    return (_NAN, _NAN, _NAN, _NAN)


def _unit(q: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    norm = math.sqrt(sum(v * v for v in q))
    if not norm > 0.0:
        return (_NAN, _NAN, _NAN, _NAN)
    return (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)


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
        run.nodes = {str(n.get("id")): n for n in _tree_nodes(header.get("tree"))}
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
        q_command, q = limb.get("q_command"), limb.get("q")
        if isinstance(q_command, list) and q_command:
            series.joint_ticks += 1
            if isinstance(q, list) and len(q) == len(q_command):
                gaps = [abs(_float(a) - _float(b)) for a, b in zip(q_command, q, strict=True)]
                gap = max(gaps)
                if not math.isnan(gap):
                    series.max_joint_error = max(series.max_joint_error, gap)
    nodes = entry.get("nodes") or {}
    for key, status in nodes.items() if isinstance(nodes, Mapping) else ():
        label = run.label(str(key))
        run.node_ticks[label] += 1
        run.node_status[label] = str(status)
    busy = entry.get("busy") or {}
    for key, seconds in busy.items() if isinstance(busy, Mapping) else ():
        if isinstance(seconds, int | float) and math.isfinite(seconds):
            label = run.label(str(key))
            run.node_busy[label] = run.node_busy.get(label, 0.0) + float(seconds)
    bases = entry.get("bases") or {}
    for robot, pose in bases.items() if isinstance(bases, Mapping) else ():
        base = run.bases.setdefault(str(robot), BaseSeries())
        base.t.append(t)
        base.position.append(_position(pose))
        base.quaternion.append(_quaternion(pose))
    latched: dict[str, frozenset[str]] = {}
    skills = entry.get("skills") or {}
    for key, internals in skills.items() if isinstance(skills, Mapping) else ():
        if isinstance(internals, Mapping):
            label = run.label(str(key))
            if label not in run.skills:
                run.skills[label] = SkillSeries(key=str(key))
            skill = run.skills[label]
            _add_skill(skill, t, internals)
            interfaces = skill.latched[-1]
            if interfaces is not None:
                robot = run.robot_of(skill.frame)
                named = frozenset(f"{robot}.{i}" if robot else i for i in interfaces)
                latched[robot] = latched.get(robot, frozenset()) | named
    run.latches.t.append(t)
    run.latches.reports.append(latched)
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
    kind = internals.get("skill")
    if isinstance(kind, str):
        series.kind = kind
    frame = internals.get("frame")
    if isinstance(frame, str):
        series.frame = frame
    for key in DYNAMICS_SCALARS:
        if key in internals or key in series.extra:
            series.extra.setdefault(key, [_NAN] * index).append(_float(internals.get(key)))
    series.phase.append(str(internals.get("phase") or ""))
    tau = internals.get("tau_nm")
    series.tau.append(tuple(_float(v) for v in tau) if isinstance(tau, list) else ())
    latched = internals.get("latched")
    series.latched.append(
        tuple(str(i) for i in latched) if isinstance(latched, list | tuple) else None
    )
