"""The figures of seed 004's leaves in ``limbtree report``: the climb's steps, ``grip_guard``.

Drawn only when a run's skills include those leaves (``docs/climbing.md``). Their telemetry
carries the plant's figures every tick: each leg's palm force, which grippers hold, the GIA
stability margin, the robot's momentum, the base's contacts with the terrain, and a swing's
``alpha`` (eq. 6); ``grip_guard`` reports the same plant figures for a robot that stands.
From them:

* ``grip_forces.png``: every leg's gripper force over time, bold while its gripper holds and
  faint while the palm swings or lands, the holding force (0.9 N) as a red line, each
  detachment marked, each swing shaded in its leg's colour and the ticks with the base on
  the terrain marked along the time axis (seed 004 Fig. 4 in shape: "maximum contact
  force").
* ``momentum.png``: the robot's linear ``|L_lin|`` [kg m/s] and angular ``|L_ang|``
  [kg m^2/s] momentum over time and, for RAMP's swings, ``alpha``.
* ``gia_margin.png``: the GIA stability margin [m/s^2] over time, 0 marked and its minimum
  annotated (Fig. 5 in shape).

The report's reader (:mod:`.reading`) keeps only the generic figures of a skill, so
:func:`read_climb` reads the climbing figures in a second pass over the log, made only for
a climbing run. matplotlib is imported by the caller (:func:`draw_climbing` takes its
``Figure`` class).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from limbtree.trees.report.canvas import PALETTE, plain_axis, save, stride
from limbtree.trees.report.reading import RunLog

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: The telemetry kinds of seed 004's stepping leaves (the steps of a climb).
CLIMB_SKILLS: Final = ("climb_step", "base_adjust")
#: The telemetry kinds that carry the plant's grip figures: the steps' and ``grip_guard``'s.
GRIP_SKILLS: Final = (*CLIMB_SKILLS, "grip_guard")
#: Seed 004's holding force [N]: the pull that tears a supporting gripper off, the mission's
#: ``world.contact.grip_force_n`` (missions/asteroid_climb.yaml). The record's header does
#: not carry the mission's world, so the report uses the seed's 0.9 N unless the header has
#: ``world.contact.grip_force_n``.
HOLD_FORCE_N: Final = 0.9
#: The keys that mark a ``summary.json`` metrics block as the climbing leaves' (``climb``).
CLIMB_METRICS: Final = ("max_grip_force_n", "min_gia_margin")

_NAN: Final = math.nan
_LIMIT: Final = "#c62828"
_DETACHED: Final = "#b71c1c"
_BASE_HIT: Final = "#424242"
#: The robot's own figures (momentum, margin, α): dark, apart from the legs' colours.
_ROBOT: Final = "#263238"
#: The legs' colours: the report's palette without its red (the holding force's).
_LEG_COLOURS: Final = tuple(c for c in PALETTE if c != _LIMIT)


@dataclass(frozen=True)
class ClimbStep:
    """One run of a ``climb_step`` or ``base_adjust`` node (a node repeated runs again).

    Attributes:
        node: the node's label.
        kind: ``climb_step`` or ``base_adjust``.
        leg: the swinging leg (``climb_step``), or ``""``.
        planner: ``baseline`` or ``ramp`` (``""`` when not reported).
        start_s: its first tick [s].
        end_s: its last tick [s].
        phase: its phase at its last tick (``done``, ``failed``, ``moving`` when cut off).
    """

    node: str
    kind: str
    leg: str
    planner: str
    start_s: float
    end_s: float
    phase: str

    @property
    def is_swing(self) -> bool:
        """Whether this is a leg's swing (``climb_step``)."""
        return self.kind == "climb_step"


@dataclass(frozen=True)
class Detachment:
    """A supporting gripper torn off, or (from the log) one that stopped holding.

    Attributes:
        leg: the leg.
        t_s: when [s].
        force_n: the pull that tore it off [N].
        from_log: True when inferred from the log (a leg stopped holding outside its own
            swing): then ``t_s`` is the first tick without it and ``force_n`` the last force
            logged before, which can be below the plant's (it checks every physics step).
        torn: for one inferred from the log, False when the plant's list of tears
            (``metrics.climb.detached``) has no tear of it: it was let go (opened, or holds
            nothing); None when unknown (no list: a killed run).
    """

    leg: str
    t_s: float
    force_n: float
    from_log: bool = False
    torn: bool | None = None


@dataclass(frozen=True)
class Peak:
    """An extreme of a series.

    Attributes:
        value: the value.
        t_s: when [s].
        leg: on which leg, or ``""`` for the robot's figures.
    """

    value: float
    t_s: float
    leg: str = ""


@dataclass
class ClimbSeries:
    """The climbing leaves' plant figures over the run, one row per tick they reported.

    Two leaves reporting in one tick (one ending, the next starting) saw one plant state:
    the later one's figures are kept (``alpha`` is the swing's). A NaN row separates ticks
    further apart than 1.5 tick periods, so lines break where no climbing leaf ran.

    Attributes:
        legs: the legs, in the leaves' ``legs`` order.
        t: the rows' times [s].
        force_n: per leg its palm's force magnitude [N] (NaN where not reported).
        holding: per leg whether its gripper held.
        momentum_lin: the robot's ``|L_lin|`` [kg m/s].
        momentum_ang: its ``|L_ang|`` about the base origin [kg m^2/s].
        gia_margin: the GIA stability margin [m/s^2].
        alpha: eq. 6's ``alpha`` of a RAMP swing (NaN elsewhere: support phases, baseline).
        base_contacts: the base's contacts with the terrain.
        steps: every run of a climbing node, in order.
        detached: detachments inferred from the log (see :class:`Detachment`).
        hold_force_n: the grippers' holding force [N] (:func:`hold_force`).
    """

    legs: list[str] = field(default_factory=list)
    t: list[float] = field(default_factory=list)
    force_n: dict[str, list[float]] = field(default_factory=dict)
    holding: dict[str, list[bool]] = field(default_factory=dict)
    momentum_lin: list[float] = field(default_factory=list)
    momentum_ang: list[float] = field(default_factory=list)
    gia_margin: list[float] = field(default_factory=list)
    alpha: list[float] = field(default_factory=list)
    base_contacts: list[int] = field(default_factory=list)
    steps: list[ClimbStep] = field(default_factory=list)
    detached: list[Detachment] = field(default_factory=list)
    hold_force_n: float = HOLD_FORCE_N

    @property
    def swings(self) -> list[ClimbStep]:
        """The legs' swings, in order."""
        return [s for s in self.steps if s.is_swing]

    @property
    def planners(self) -> list[str]:
        """The planners the steps reported, in order of first use."""
        return list(dict.fromkeys(s.planner for s in self.steps if s.planner))

    def peak_holding(self) -> Peak | None:
        """The largest force on a holding gripper: what the holding force limits."""
        return self._peak(holding_only=True)

    def peak_contact(self) -> Peak | None:
        """The largest palm force, a swinging or landing palm's included."""
        return self._peak(holding_only=False)

    def _peak(self, *, holding_only: bool) -> Peak | None:
        best: Peak | None = None
        for leg in self.legs:
            for t, force, held in zip(self.t, self.force_n[leg], self.holding[leg], strict=True):
                if (held or not holding_only) and force > (best.value if best else -math.inf):
                    best = Peak(force, t, leg)
        return best

    def min_margin(self) -> Peak | None:
        """The smallest GIA margin, or None when none was reported."""
        return _extreme(self.t, self.gia_margin, min)

    def peak_momentum(self) -> tuple[Peak | None, Peak | None]:
        """The largest ``|L_lin|`` and ``|L_ang|``."""
        return _extreme(self.t, self.momentum_lin, max), _extreme(self.t, self.momentum_ang, max)

    def held(self, leg: str, t: float) -> bool:
        """Whether ``leg``'s gripper held at the row of time ``t`` [s] (False when unknown)."""
        rows = [i for i, ti in enumerate(self.t) if ti == t]
        return bool(rows) and leg in self.holding and self.holding[leg][rows[-1]]

    def collision_ticks(self) -> list[float]:
        """The ticks in which the base touched the terrain [s]."""
        return [t for t, n in zip(self.t, self.base_contacts, strict=True) if n > 0]


def _extreme(t: Sequence[float], values: Sequence[float], pick: Any) -> Peak | None:
    known = [(v, ti) for ti, v in zip(t, values, strict=True) if math.isfinite(v)]
    if not known:
        return None
    value, when = pick(known, key=lambda item: item[0])
    return Peak(value, when)


# Reading ---------------------------------------------------------------------------------


def is_climbing(run: RunLog) -> bool:
    """Whether the run's skills include seed 004's leaves (a ``grip_guard`` too)."""
    return any(skill.kind in GRIP_SKILLS for skill in run.skills.values())


def hold_force(header: Mapping[str, Any] | None) -> float:
    """The grippers' holding force [N].

    The header's ``world.contact.grip_force_n`` when it has one, else :data:`HOLD_FORCE_N`.
    """
    world = (header or {}).get("world")
    contact = world.get("contact") if isinstance(world, Mapping) else None
    value = contact.get("grip_force_n") if isinstance(contact, Mapping) else None
    if isinstance(value, int | float) and value > 0:
        return float(value)
    return HOLD_FORCE_N


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return _NAN


def _floats(value: Any) -> list[float]:
    return [_float(v) for v in value] if isinstance(value, list | tuple) else []


def _swing_leg(entry: Mapping[str, Any]) -> str:
    """The leg a ``climb_step`` swings (``leg``; ``swing`` accepted too)."""
    return str(entry.get("leg") or entry.get("swing") or "")


@dataclass
class _Open:
    """A climbing node's run being read: its fields and the row it last reported in."""

    node: str
    kind: str
    leg: str
    planner: str
    start_s: float
    end_s: float
    phase: str
    row: int
    elapsed_s: float

    def closed(self) -> ClimbStep:
        return ClimbStep(
            self.node, self.kind, self.leg, self.planner, self.start_s, self.end_s, self.phase
        )


class _Reader:
    """Builds a :class:`ClimbSeries` tick by tick."""

    def __init__(self, run: RunLog) -> None:
        self.run = run
        self.series = ClimbSeries(hold_force_n=hold_force(run.header))
        rate = (run.header or {}).get("rate_hz")
        self.gap_s = 1.5 / float(rate) if isinstance(rate, int | float) and rate > 0 else _NAN
        self.open: dict[str, _Open] = {}
        self.last_force: dict[str, float] = {}

    def legs_of(self, key: str, count: int) -> list[str]:
        """A node's legs in its telemetry's order: its ``legs`` parameter, or known legs."""
        legs = self.run.params(key).get("legs")
        if isinstance(legs, list) and len(legs) == count:
            return [str(leg) for leg in legs]
        known = self.series.legs
        return known if len(known) == count else [f"leg {i + 1}" for i in range(count)]

    def add_leg(self, leg: str) -> None:
        s = self.series
        if leg not in s.force_n:
            s.legs.append(leg)
            s.force_n[leg] = [_NAN] * len(s.t)
            s.holding[leg] = [False] * len(s.t)

    def add_row(self, t: float, entries: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """One tick's climbing telemetry: ``(node id, telemetry)`` in the tick's order."""
        s = self.series
        if s.t and t - s.t[-1] > self.gap_s:
            self.append(_NAN, {}, {}, {}, _NAN)
        # (the one that reports the most legs: a guard may watch only some)
        key, plant = max(reversed(entries), key=lambda e: len(e[1].get("grip_force_n") or ()))
        forces = _floats(plant.get("grip_force_n"))
        legs = self.legs_of(key, len(forces))
        for leg in legs:
            self.add_leg(leg)
        force = dict(zip(legs, forces, strict=True))
        supporting = plant.get("supporting")
        held = supporting if isinstance(supporting, list | tuple) else ()
        holding = {leg: bool(h) for leg, h in zip(legs, held, strict=False)}
        swings = [entry for _, entry in entries if entry.get("skill") == "climb_step"]
        swinging = {_swing_leg(entry) for entry in swings}
        alphas = [_float(e.get("alpha")) for e in swings if e.get("planner") != "baseline"]
        row = len(s.t)
        for leg in s.legs if row else ():
            if s.holding[leg][-1] and not holding.get(leg, True) and leg not in swinging:
                s.detached.append(Detachment(leg, t, self.last_force.get(leg, _NAN), True))
        self.append(t, force, holding, plant, alphas[-1] if alphas else _NAN)
        for leg, value in force.items():
            if holding.get(leg) and math.isfinite(value):
                self.last_force[leg] = value
        for node, entry in entries:
            if entry.get("skill") in CLIMB_SKILLS:
                self.note_step(node, entry, t, row)

    def append(
        self,
        t: float,
        force: Mapping[str, float],
        holding: Mapping[str, bool],
        entry: Mapping[str, Any],
        alpha: float,
    ) -> None:
        s = self.series
        s.t.append(t)
        for leg in s.legs:
            s.force_n[leg].append(force.get(leg, _NAN))
            s.holding[leg].append(holding.get(leg, False))
        s.momentum_lin.append(_float(entry.get("momentum_lin_kg_m_s")))
        s.momentum_ang.append(_float(entry.get("momentum_ang_kg_m2_s")))
        s.gia_margin.append(_float(entry.get("gia_margin_m_s2")))
        s.alpha.append(alpha)
        contacts = _float(entry.get("base_contacts"))
        s.base_contacts.append(int(contacts) if math.isfinite(contacts) else 0)

    def note_step(self, key: str, entry: Mapping[str, Any], t: float, row: int) -> None:
        elapsed = _float(entry.get("elapsed_s"))
        phase = str(entry.get("phase") or "")
        step = self.open.get(key)
        if step is not None and step.row == row - 1 and not elapsed < step.elapsed_s:
            step.end_s, step.phase, step.row, step.elapsed_s = t, phase, row, elapsed
            return
        if step is not None:
            self.series.steps.append(step.closed())
        self.open[key] = _Open(
            node=self.run.label(key),
            kind=str(entry.get("skill")),
            leg=_swing_leg(entry) if entry.get("skill") == "climb_step" else "",
            planner=str(entry.get("planner") or ""),
            start_s=t,
            end_s=t,
            phase=phase,
            row=row,
            elapsed_s=elapsed,
        )

    def finish(self) -> ClimbSeries:
        self.series.steps += [step.closed() for step in self.open.values()]
        self.series.steps.sort(key=lambda step: (step.start_s, step.end_s))
        return self.series


def read_climb(run: RunLog, ticks: Iterable[Mapping[str, Any]]) -> ClimbSeries:
    """The climbing leaves' figures from a log's ticks.

    Args:
        run: the log as :func:`~.reading.read_run` read it (for the nodes' labels and
            parameters and the header).
        ticks: the log's tick maps (:func:`~limbtree.trees.recorder.read_record`).

    Returns:
        The series; empty when no tick has a climbing leaf's telemetry.
    """
    reader = _Reader(run)
    for tick in ticks:
        skills = tick.get("skills")
        if not isinstance(skills, Mapping):
            continue
        entries = [
            (str(key), entry)
            for key, entry in skills.items()
            if isinstance(entry, Mapping) and entry.get("skill") in GRIP_SKILLS
        ]
        if entries:
            reader.add_row(_float(tick.get("t")), entries)
    return reader.finish()


def climb_metrics(metrics: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The summary's climbing blocks: key (``climb``) -> it (it has :data:`CLIMB_METRICS`)."""
    return {
        str(key): value
        for key, value in metrics.items()
        if isinstance(value, Mapping) and all(k in value for k in CLIMB_METRICS)
    }


#: How long after a tear the plant lists [s] the log may first show its leg not holding:
#: the tick after it, at most a few ticks (the tree's rate) later.
_TEAR_SEEN_S: Final = 0.5


def detachments(block: Mapping[str, Any] | None, climb: ClimbSeries | None) -> list[Detachment]:
    """The run's grippers that stopped holding: the plant's tears, and the log's others.

    The plant's (``metrics.climb.detached``) when the summary lists them, plus every leg the
    log shows stop holding outside its own swing that no listed tear explains (a gripper
    opened, or closed on nothing: ``torn`` False); without the list, the log's alone.

    Args:
        block: the summary's climbing block, or None (a killed run).
        climb: the log's climbing series, or None.
    """
    listed = (block or {}).get("detached")
    seen = list(climb.detached) if climb is not None else []
    if not isinstance(listed, list):
        return seen
    torn = [
        Detachment(str(d.get("leg", "?")), _float(d.get("t_s")), _float(d.get("force_n")))
        for d in listed
        if isinstance(d, Mapping)
    ]
    let_go = [
        dataclasses.replace(d, torn=False)
        for d in seen
        if not any(tear.leg == d.leg and 0.0 <= d.t_s - tear.t_s <= _TEAR_SEEN_S for tear in torn)
    ]
    return sorted(torn + let_go, key=lambda d: d.t_s)


# Drawing ---------------------------------------------------------------------------------


def draw_climbing(
    Figure: Any, climb: ClimbSeries, detached: Sequence[Detachment], directory: Path
) -> list[Path]:
    """Draw ``grip_forces.png``, ``momentum.png`` and ``gia_margin.png`` into ``directory``.

    Args:
        Figure: matplotlib's ``Figure`` class.
        climb: the run's climbing series.
        detached: the run's detachments (:func:`detachments`).
        directory: where to write them.

    Returns:
        The paths written (none when ``climb`` has no row).

    Raises:
        OSError: when an image cannot be written.
    """
    if not climb.t:
        return []
    colours = {leg: _LEG_COLOURS[i % len(_LEG_COLOURS)] for i, leg in enumerate(climb.legs)}
    short = _short_names(climb.legs)
    return [
        _grip_forces(Figure, climb, detached, colours, short, directory),
        _momentum(Figure, climb, detached, colours, short, directory),
        _gia_margin(Figure, climb, detached, colours, short, directory),
    ]


def _short_names(legs: Sequence[str]) -> dict[str, str]:
    """Leg -> its name without the robot (``hub.leg_0`` -> ``leg_0``) when that is unique."""
    tails = {leg: leg.rsplit(".", 1)[-1] for leg in legs}
    return tails if len(set(tails.values())) == len(tails) else {leg: leg for leg in legs}


def _robot(legs: Sequence[str]) -> str:
    """The robot the legs belong to (``hub`` for ``hub.leg_0``, ...), or ``""``."""
    heads = {leg.rsplit(".", 1)[0] if "." in leg else "" for leg in legs}
    return heads.pop() if len(heads) == 1 else ""


def _shade_swings(
    axes: Axes,
    climb: ClimbSeries,
    colours: Mapping[str, str],
    short: Mapping[str, str],
    *,
    names: bool,
) -> None:
    """Each swing shaded in its leg's colour; with ``names``, the leg named at the top."""
    for swing in climb.swings:
        colour = colours.get(swing.leg, "#9e9e9e")
        axes.axvspan(swing.start_s, swing.end_s, color=colour, alpha=0.12, lw=0)
        if names:
            axes.annotate(
                short.get(swing.leg, swing.leg), xy=((swing.start_s + swing.end_s) / 2, 1.0),
                xycoords=("data", "axes fraction"), xytext=(0, -3), textcoords="offset points",
                ha="center", va="top", fontsize="x-small", color=colour, fontweight="bold",
            )  # fmt: skip


def _mark_detachments(axes: Axes, detached: Sequence[Detachment], *, legend: bool) -> None:
    for index, d in enumerate(detached):
        if math.isfinite(d.t_s):
            label = "detachment" if legend and index == 0 else None
            axes.axvline(d.t_s, color=_DETACHED, ls=":", lw=1.4, label=label)


def _legend_right(axes: Axes) -> None:
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")


def _swing_legend(axes: Axes, climb: ClimbSeries) -> None:
    if climb.swings:
        axes.fill_between([], [], color="#9e9e9e", alpha=0.25, lw=0,
                          label="a leg swinging (its colour)")  # fmt: skip


def _grip_forces(
    Figure: Any,
    climb: ClimbSeries,
    detached: Sequence[Detachment],
    colours: Mapping[str, str],
    short: Mapping[str, str],
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 5.5), layout="constrained")
    axes = figure.subplots(1, 1)
    _shade_swings(axes, climb, colours, short, names=True)
    step = stride(len(climb.t))
    t = climb.t[::step]
    for leg in climb.legs:
        forces = climb.force_n[leg][::step]
        held = climb.holding[leg][::step]
        colour = colours[leg]
        axes.plot(t, forces, color=colour, lw=0.8, alpha=0.35)
        axes.plot(t, [f if h else _NAN for f, h in zip(forces, held, strict=True)],
                  color=colour, lw=1.4, label=leg)  # fmt: skip
        # A sample held alone (a gripper closing, then torn off at once) draws no line.
        alone = [
            i
            for i, h in enumerate(held)
            if h and not (i > 0 and held[i - 1]) and not (i + 1 < len(held) and held[i + 1])
        ]
        if alone:
            axes.plot([t[i] for i in alone], [forces[i] for i in alone], "o", color=colour,
                      ms=4)  # fmt: skip
    axes.plot([], [], color="#757575", lw=0.8, alpha=0.5, label="faint: palm not holding\n"
              "(swinging, landing)")  # fmt: skip
    limit = climb.hold_force_n
    axes.axhline(limit, color=_LIMIT, lw=1.6, label=f"holding force {limit:g} N")
    for index, (start, end) in enumerate(_collision_spans(climb)):
        axes.axvspan(start, end, ymin=0.0, ymax=0.04, color=_BASE_HIT, lw=0,
                     label="base touching the terrain" if index == 0 else None)  # fmt: skip
    top = limit
    for index, d in enumerate(detached):
        if not (math.isfinite(d.t_s) and math.isfinite(d.force_n)):
            continue
        top = max(top, d.force_n)
        axes.plot(d.t_s, d.force_n, "x", color=_DETACHED, ms=11, mew=2.4,
                  label="detachment" if index == 0 else None)  # fmt: skip
        # (several at about one time, one after the other: their labels stack upwards)
        span = (climb.t[-1] - climb.t[0]) if climb.t else 0.0
        near = sum(1 for e in detached[:index] if abs(e.t_s - d.t_s) < 0.05 * span)
        axes.annotate(
            f"{short.get(d.leg, d.leg)} torn off\n{d.force_n:.3f} N at {d.t_s:.2f} s",
            xy=(d.t_s, d.force_n), xytext=(-8, 8 + 28 * near), textcoords="offset points",
            ha="right", va="bottom", fontsize="small", color=_DETACHED,
            arrowprops={"arrowstyle": "-", "color": _DETACHED, "lw": 0.6} if near else None,
        )  # fmt: skip
    _swing_legend(axes, climb)
    contact = climb.peak_contact()
    top = max(top, contact.value if contact else 0.0)
    axes.set_ylim(0.0, top * 1.18)
    _time_axis(axes, climb, detached)
    axes.set_xlabel("t [s]")
    axes.set_ylabel("palm force |F| [N]")
    plain_axis(axes)
    axes.grid(True, alpha=0.3)
    _legend_right(axes)
    peak = climb.peak_holding()
    parts = []
    if peak is not None:
        parts.append(
            f"peak on a holding gripper {peak.value:.3f} N ({short.get(peak.leg, peak.leg)} "
            f"at {peak.t_s:.2f} s; the limit is on a pull, this may be a push)"
        )
    if contact is not None:
        landing = "" if climb.held(contact.leg, contact.t_s) else " landing"
        parts.append(f"peak of any palm {contact.value:.3f} N ({short.get(contact.leg)}{landing}"
                     f" at {contact.t_s:.2f} s)")  # fmt: skip
    axes.set_title("; ".join(parts), fontsize="medium", loc="left")
    robot = _robot(climb.legs)
    whose = f"{robot}'s" if robot else "the"
    figure.suptitle(f"Gripper forces of {whose} legs against the holding force (seed 004 Fig. 4)")
    return save(figure, directory / "grip_forces.png")


def _collision_spans(climb: ClimbSeries) -> list[tuple[float, float]]:
    """The runs of ticks with the base on the terrain, each ``(start, end)`` [s].

    Each is at least one tick period wide, so that a lone tick shows.
    """
    spans: list[list[float]] = []
    previous = False
    for t, hits in zip(climb.t, climb.base_contacts, strict=True):
        if hits > 0 and previous:
            spans[-1][1] = t
        elif hits > 0:
            spans.append([t, t])
        previous = hits > 0
    period = _period(climb.t)
    return [(a, max(b, a + period)) for a, b in spans]


def _period(t: Sequence[float]) -> float:
    steps = sorted(b - a for a, b in itertools.pairwise(t) if b > a)
    return steps[len(steps) // 2] if steps else 0.01


def _time_axis(axes: Axes, climb: ClimbSeries, detached: Sequence[Detachment]) -> None:
    """The run's time span, a little wider at the end so the last marks show."""
    known = [t for t in climb.t if math.isfinite(t)]
    end = max([known[-1], *(d.t_s for d in detached if math.isfinite(d.t_s))])
    axes.set_xlim(known[0], end + 0.015 * (end - known[0] or 1.0))


def _momentum(
    Figure: Any,
    climb: ClimbSeries,
    detached: Sequence[Detachment],
    colours: Mapping[str, str],
    short: Mapping[str, str],
    directory: Path,
) -> Path:
    with_alpha = any(math.isfinite(a) for a in climb.alpha)
    rows = 3 if with_alpha else 2
    figure = Figure(figsize=(11, 2.0 + 2.3 * rows), layout="constrained")
    axes_list = figure.subplots(rows, 1, sharex=True)
    step = stride(len(climb.t))
    t = climb.t[::step]
    peak_lin, peak_ang = climb.peak_momentum()
    panels = [
        (climb.momentum_lin, peak_lin, r"$|L_\mathrm{lin}|$ [kg m/s]", "linear momentum",
         "kg m/s"),
        (climb.momentum_ang, peak_ang, r"$|L_\mathrm{ang}|$ [kg m²/s]",
         "angular momentum about the base origin", "kg m²/s"),
    ]  # fmt: skip
    for index, (axes, (values, peak, label, what, unit)) in enumerate(
        zip(axes_list, panels, strict=False)
    ):
        _shade_swings(axes, climb, colours, short, names=index == 0)
        _mark_detachments(axes, detached, legend=index == 0)
        axes.plot(t, values[::step], color=_ROBOT, lw=1.3)
        if peak is not None:
            axes.plot(peak.t_s, peak.value, "o", color=_ROBOT, mfc="white", mew=1.5, ms=6)
            axes.set_title(f"{what}: peak {peak.value:.3g} {unit} at {peak.t_s:.2f} s",
                           fontsize="medium", loc="left")  # fmt: skip
        axes.set_ylabel(label)
        axes.set_ylim(bottom=0.0)
        plain_axis(axes)
        axes.grid(True, alpha=0.3)
    if with_alpha:
        axes = axes_list[2]
        _shade_swings(axes, climb, colours, short, names=False)
        _mark_detachments(axes, detached, legend=False)
        axes.plot(t, climb.alpha[::step], color=_ROBOT, lw=1.3)
        axes.set_ylim(-0.05, 1.05)
        axes.set_ylabel("α [-]")
        axes.set_title("RAMP's momentum distribution factor α (eq. 6) during the swings",
                       fontsize="medium", loc="left")  # fmt: skip
        axes.grid(True, alpha=0.3)
    _swing_legend(axes_list[0], climb)
    if climb.swings or detached:
        _legend_right(axes_list[0])
    _time_axis(axes_list[0], climb, detached)
    axes_list[-1].set_xlabel("t [s]")
    planners = " and ".join(climb.planners) or "?"
    figure.suptitle(f"Momentum of {_robot(climb.legs) or 'the robot'} over time ({planners})")
    return save(figure, directory / "momentum.png")


def _gia_margin(
    Figure: Any,
    climb: ClimbSeries,
    detached: Sequence[Detachment],
    colours: Mapping[str, str],
    short: Mapping[str, str],
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 4.8), layout="constrained")
    axes = figure.subplots(1, 1)
    _shade_swings(axes, climb, colours, short, names=True)
    _mark_detachments(axes, detached, legend=True)
    step = stride(len(climb.t))
    axes.plot(climb.t[::step], climb.gia_margin[::step], color=_ROBOT, lw=1.3,
              label="GIA margin")  # fmt: skip
    axes.axhline(0.0, color=_LIMIT, lw=1.4, label="0: out of equilibrium")
    low = climb.min_margin()
    title = "no margin reported"
    if low is not None:
        axes.plot(low.t_s, low.value, "v", color=_ROBOT, ms=9, mfc="white", mew=1.8,
                  label="minimum")  # fmt: skip
        axes.annotate(
            f"min {low.value:.3f} m/s² at {low.t_s:.2f} s", xy=(low.t_s, low.value),
            xytext=(0, -14), textcoords="offset points", ha="center", va="top",
            fontsize="small", color=_ROBOT,
        )  # fmt: skip
        title = f"minimum {low.value:.3f} m/s² at {low.t_s:.2f} s"
    known = [v for v in climb.gia_margin if math.isfinite(v)]
    top = max(known, default=1.0)
    bottom = min(0.0, *known) if known else 0.0
    pad = 0.12 * (top - bottom or 1.0)
    axes.set_ylim(bottom - 2 * pad, top + 1.5 * pad)
    _swing_legend(axes, climb)
    _time_axis(axes, climb, detached)
    axes.set_xlabel("t [s]")
    axes.set_ylabel("GIA margin [m/s²]")
    plain_axis(axes)
    axes.grid(True, alpha=0.3)
    _legend_right(axes)
    axes.set_title(title, fontsize="medium", loc="left")
    figure.suptitle("GIA stability margin over time (seed 004 Fig. 5)")
    return save(figure, directory / "gia_margin.png")
