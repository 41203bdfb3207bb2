"""The figures of seed 003's leaves (``walk_step``, ``impedance_move``) in ``limbtree report``.

Drawn only when a run's skills report that telemetry (``docs/record.md``), or a base moved:

* ``dynamics_error.png``: the controlled frame's position [mm] and angle [deg] error from
  its target over time, log scales, one line per walk step or impedance move, each
  engagement (a walk step latching) or settling (an impedance move) marked and the
  tolerances dashed (seed 003 Figs. 3 and 5 in shape).
* ``lyapunov.png``: the Lyapunov function W = KE + Φ̂ (eq. 9) over time, log scale, the
  latch switches and new goals marked: between two switches W must fall (eq. 13).
* ``joint_torques.png``: the joint torques of the limbs the leaves command, one panel per
  limb, one line per joint (Figs. 4 and 6 in shape).
* ``latches.png``: each standard interface latched (1) or free (0) over time (Fig. 8 in
  shape).
* ``base_position.png``: each moving base's (the floating torso's) x, y, z [mm] over time,
  and how far it has turned from its starting orientation [deg].

matplotlib is imported by the caller (:func:`draw_dynamics` takes its ``Figure`` class).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from limbtree.trees.report.canvas import PALETTE, plain_axis, save, stride
from limbtree.trees.report.reading import BaseSeries, RunLog, SkillSeries

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Phases in which a seed-003 leaf sends its controlled frame a new goal: W restarts there.
GOAL_PHASES: Final = frozenset({"via", "approach", "moving"})
_AXES: Final = ("x", "y", "z")
_LATCHED: Final = "#2e7d32"
_RELEASED: Final = "#c62828"
_GOAL: Final = "#9e9e9e"
_MARK: Final = "#616161"
#: Log axes show this many decades below their largest value; less is numerical noise.
LOG_DECADES: Final = 6
_JOINTS: Final = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)  # fmt: skip


def dynamics_leaves(run: RunLog) -> dict[str, SkillSeries]:
    """The run's seed-003 leaves (label -> series) that reported at least one tick."""
    return {name: k for name, k in run.skills.items() if k.t and k.is_dynamics}


def goal_switches(skill: SkillSeries) -> list[float]:
    """When a leaf sent its frame a new goal [s]: it entered a goal phase or a new via point.

    The first tick does not count (the leaf's start is not a switch within it).
    """
    via = skill.extra.get("via_index", [])
    out: list[float] = []
    previous: tuple[str, float] | None = None
    for index, (t, phase) in enumerate(zip(skill.t, skill.phase, strict=True)):
        point = via[index] if index < len(via) else math.nan
        current = (phase, -1.0 if math.isnan(point) else point)
        if previous is not None and phase in GOAL_PHASES and current != previous:
            out.append(t)
        previous = current
    return out


@dataclass(frozen=True)
class LimbTorques:
    """One limb's joint torques as the leaves commanding it reported them.

    Attributes:
        joints: its joint names (``joint 1``, ... when the header does not name them).
        t: the reports' times [s], in order; a NaN between two reports further apart than
            1.5 tick periods, so lines break where no leaf commanded the limb.
        tau: per joint, its torque at each time [N m] (NaN at the breaks).
    """

    joints: tuple[str, ...]
    t: tuple[float, ...]
    tau: tuple[tuple[float, ...], ...]

    @property
    def peak_nm(self) -> float:
        """The largest torque magnitude of any joint [N m] (0 without a number)."""
        return max((abs(v) for row in self.tau for v in row if not math.isnan(v)), default=0.0)


def _tick_period(run: RunLog) -> float:
    rate = (run.header or {}).get("rate_hz")
    if isinstance(rate, int | float) and rate > 0:
        return 1.0 / float(rate)
    steps = [b - a for a, b in zip(run.latches.t, run.latches.t[1:], strict=False) if b > a]
    return statistics.median(steps) if steps else 1.0


def _split(run: RunLog, skill: SkillSeries, width: int) -> list[tuple[str, list[str], int]]:
    """How a leaf's ``tau_nm`` of ``width`` values splits into limbs: (limb, joints, offset)."""
    params = run.params(skill.key)
    limbs = params.get("limbs")
    names = [str(n) for n in limbs] if isinstance(limbs, list) else []
    if not names and params.get("limb"):
        names = [str(params["limb"])]
    joints = [run.joints(n) for n in names]
    if names and all(joints) and sum(len(j) for j in joints) == width:
        out, offset = [], 0
        for name, limb_joints in zip(names, joints, strict=True):
            out.append((name, limb_joints, offset))
            offset += len(limb_joints)
        return out
    owner = " + ".join(names) or skill.frame.rsplit(".", 1)[0] or skill.key
    return [(owner, [f"joint {j + 1}" for j in range(width)], 0)]


def joint_torques(run: RunLog) -> dict[str, LimbTorques]:
    """Per limb the joint torques (``tau_nm``) the run's seed-003 leaves reported.

    A leaf's torques are its limbs' in the order of its ``limbs`` (or ``limb``) parameter,
    split by the header's joint lists; without those, one group named after its frame.
    Two leaves reporting one limb in the same tick (one ending, the next starting) give the
    same plant state: the later one is kept.
    """
    samples: dict[str, dict[float, tuple[float, ...]]] = {}
    joints: dict[str, list[str]] = {}
    for skill in dynamics_leaves(run).values():
        for t, tau in zip(skill.t, skill.tau, strict=True):
            if not tau:
                continue
            for limb, names, offset in _split(run, skill, len(tau)):
                if len(joints.setdefault(limb, names)) != len(names):
                    continue  # a leaf that disagrees on the limb's joints: not drawn
                samples.setdefault(limb, {})[t] = tau[offset : offset + len(names)]
    period = _tick_period(run)
    out: dict[str, LimbTorques] = {}
    for limb, by_time in samples.items():
        times: list[float] = []
        rows: list[tuple[float, ...]] = []
        gap = tuple(math.nan for _ in joints[limb])
        for t in sorted(by_time):
            if times and t - times[-1] > 1.5 * period:
                times.append(math.nan)
                rows.append(gap)
            times.append(t)
            rows.append(by_time[t])
        columns = tuple(tuple(column) for column in zip(*rows, strict=True))
        out[limb] = LimbTorques(tuple(joints[limb]), tuple(times), columns)
    return out


def draw_dynamics(Figure: Any, run: RunLog, directory: Path) -> list[Path]:
    """Draw the seed-003 PNGs the run's telemetry allows into ``directory``.

    Args:
        Figure: matplotlib's ``Figure`` class.
        run: the run's log.
        directory: where to write them.

    Returns:
        The paths written (none for a run without seed 003's telemetry or a moving base).

    Raises:
        OSError: when an image cannot be written.
    """
    leaves = dynamics_leaves(run)
    colours = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(leaves)}
    marks = [(*e, colours[n]) for n, k in leaves.items() if (e := k.engaged()) is not None]
    images: list[Path] = []
    errors = {n: k for n, k in leaves.items() if k.has("err_mm") or k.has("err_deg")}
    if errors:
        images.append(_errors(Figure, errors, colours, run, directory))
    energy = {n: k for n, k in leaves.items() if k.has("lyapunov_j")}
    if energy:
        images.append(_lyapunov(Figure, energy, colours, run, directory))
    torques = joint_torques(run)
    if torques:
        images.append(_torques(Figure, torques, marks, run, directory))
    latches = run.latches.states()
    if latches:
        images.append(_latches(Figure, latches, marks, run, directory))
    bases = {robot: b for robot, b in run.bases.items() if b.moved}
    if bases:
        images.append(_bases(Figure, bases, marks, directory))
    return images


def _positive(values: Sequence[float]) -> list[float]:
    """Values for a log axis: NaN where not > 0."""
    return [v if v > 0 else math.nan for v in values]


def _legend_right(axes: Axes, **kwargs: Any) -> None:
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", **kwargs)


#: An engagement or settling instant: (t [s], "engaged" or "settled", the leaf's colour).
Mark = tuple[float, str, str]


def _mark_times(axes: Axes, marks: Sequence[Mark], *, legend: bool) -> None:
    """Faint vertical lines at the leaves' engagements, in each leaf's colour.

    With ``legend``, one grey entry per kind (``engaged (latched)``, ``settled``).
    """
    for t, _, colour in marks:
        axes.axvline(t, color=colour, ls=":", lw=1.0, alpha=0.7)
    if legend:
        for kind in sorted({kind for _, kind, _ in marks}):
            text = "engaged (latched)" if kind == "engaged" else kind
            axes.plot([], [], color=_MARK, ls=":", lw=1.0, label=text)


def _log_floor(axes: Axes, values: Sequence[float]) -> None:
    """Keep a log axis to :data:`LOG_DECADES` decades below its largest value."""
    finite = [v for v in values if v > 0 and math.isfinite(v)]
    if finite:
        top, bottom = max(finite), min(finite)
        axes.set_ylim(bottom=max(bottom, top * 10.0**-LOG_DECADES) / 1.5)


def _tolerances(run: RunLog, skills: Mapping[str, SkillSeries]) -> tuple[set[float], set[float]]:
    """The leaves' engagement tolerances: position [mm] and angle [deg]."""
    mm: set[float] = set()
    deg: set[float] = set()
    for skill in skills.values():
        params = run.params(skill.key)
        if isinstance(params.get("settle"), int | float):
            mm.add(round(float(params["settle"]) * 1e3, 6))
        if isinstance(params.get("settle_angle"), int | float):
            deg.add(round(math.degrees(float(params["settle_angle"])), 6))
    return mm, deg


def _errors(
    Figure: Any,
    skills: Mapping[str, SkillSeries],
    colours: Mapping[str, str],
    run: RunLog,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 7), layout="constrained")
    mm_axes, deg_axes = figure.subplots(2, 1, sharex=True)
    tolerance_mm, tolerance_deg = _tolerances(run, skills)
    kinds: set[str] = set()
    drawn: dict[str, list[float]] = {"err_mm": [], "err_deg": []}
    for name, skill in skills.items():
        step = stride(len(skill.t))
        colour = colours[name]
        label = f"{name} ({skill.frame})" if skill.frame else name
        engaged = skill.engaged()
        for axes, key in ((mm_axes, "err_mm"), (deg_axes, "err_deg")):
            values = skill.extra.get(key)
            if values is None:
                continue
            drawn[key] += values
            axes.plot(skill.t[::step], _positive(values[::step]), color=colour, lw=1.2,
                      label=label)  # fmt: skip
            if engaged is not None:
                index = skill.t.index(engaged[0])
                marker = "o" if engaged[1] == "engaged" else "D"
                axes.axvline(engaged[0], color=colour, ls=":", lw=1.0, alpha=0.7)
                if values[index] > 0:
                    axes.plot(engaged[0], values[index], marker, color=colour, ms=7,
                              mfc="white", mew=1.6)  # fmt: skip
        if engaged is not None:
            kinds.add(engaged[1])
    named = [f"{v:g} mm" for v in sorted(tolerance_mm)] + [
        f"{v:g} deg" for v in sorted(tolerance_deg)
    ]
    if named:
        mm_axes.plot(
            [], [], color="#424242", ls="--", lw=1.0, label=f"tolerance {', '.join(named)}"
        )
    for axes, tolerances, key in (
        (mm_axes, tolerance_mm, "err_mm"),
        (deg_axes, tolerance_deg, "err_deg"),
    ):
        for value in tolerances:
            axes.axhline(value, color="#424242", ls="--", lw=1.0)
        axes.set_yscale("log")
        _log_floor(axes, [*drawn[key], *tolerances])
        axes.grid(True, which="major", alpha=0.3)
        axes.grid(True, which="minor", alpha=0.1)
    for kind, marker in (("engaged", "o"), ("settled", "D")):
        if kind in kinds:
            mm_axes.plot([], [], marker, color="#424242", mfc="white", mew=1.6, ls="none",
                         label="engaged (latched)" if kind == "engaged" else "settled")  # fmt: skip
    mm_axes.set_ylabel("position error [mm]")
    deg_axes.set_ylabel("angle error [deg]")
    deg_axes.set_xlabel("t [s]")
    _legend_right(mm_axes)
    figure.suptitle("Error of the controlled frame from its target (seed 003 Figs. 3 and 5)")
    return save(figure, directory / "dynamics_error.png")


def _lyapunov(
    Figure: Any,
    skills: Mapping[str, SkillSeries],
    colours: Mapping[str, str],
    run: RunLog,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 5), layout="constrained")
    axes = figure.subplots(1, 1)
    goals = sorted({t for skill in skills.values() for t in goal_switches(skill)})
    for index, t in enumerate(goals):
        axes.axvline(t, color=_GOAL, ls=":", lw=0.9,
                     label="new goal" if index == 0 else None)  # fmt: skip
    labelled: set[bool] = set()
    for t, _, engaged in run.latches.switches():
        style = {"color": _LATCHED, "ls": "-"} if engaged else {"color": _RELEASED, "ls": "--"}
        label = None if engaged in labelled else ("latched" if engaged else "released")
        labelled.add(engaged)
        axes.axvline(t, lw=1.1, alpha=0.8, label=label, **style)
    rise = 0.0
    drawn: list[float] = []
    for name, skill in skills.items():
        step = stride(len(skill.t))
        drawn += skill.extra["lyapunov_j"]
        axes.plot(skill.t[::step], _positive(skill.extra["lyapunov_j"][::step]),
                  color=colours[name], lw=1.3, label=name)  # fmt: skip
        rises = [r for r in skill.extra.get("max_rise_rel", ()) if not math.isnan(r)]
        rise = max(rise, *rises) if rises else rise
    axes.set_yscale("log")
    _log_floor(axes, drawn)
    axes.set_xlabel("t [s]")
    axes.set_ylabel("W [J]")
    axes.grid(True, which="major", alpha=0.3)
    axes.grid(True, which="minor", alpha=0.1)
    _legend_right(axes)
    verdict = "W never rose" if rise == 0.0 else f"{rise:.3g} of W at the switch"
    axes.set_title(
        f"the plant's check at 1 kHz: largest rise of W between switches: {verdict}",
        fontsize="medium",
    )
    figure.suptitle(
        r"Lyapunov function $W = \mathrm{KE} + \hat{\Phi}$ (seed 003 eqs. 9 and 13: "
        "it falls between switches)"
    )
    return save(figure, directory / "lyapunov.png")


def _torques(
    Figure: Any,
    torques: Mapping[str, LimbTorques],
    marks: Sequence[Mark],
    run: RunLog,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 1.5 + 2.8 * len(torques)), layout="constrained")
    axes_list = figure.subplots(len(torques), 1, sharex=True, squeeze=False)[:, 0]
    for axes, (limb, series) in zip(axes_list, torques.items(), strict=True):
        _mark_times(axes, marks, legend=True)
        step = stride(len(series.t))
        for index, (joint, values) in enumerate(zip(series.joints, series.tau, strict=True)):
            axes.plot(series.t[::step], values[::step], lw=1.0,
                      color=_JOINTS[index % len(_JOINTS)], label=joint)  # fmt: skip
        axes.set_ylabel(f"{limb}\nτ [N m]")
        axes.set_title(f"{limb}: largest |τ| {series.peak_nm:.3g} N m", fontsize="medium",
                       loc="left")  # fmt: skip
        plain_axis(axes)
        axes.grid(True, alpha=0.3)
        _legend_right(axes)
    axes_list[0].set_xlim(run.t_first, run.t_last)
    axes_list[-1].set_xlabel("t [s]")
    figure.suptitle("Joint torques of the commanded limbs (seed 003 Figs. 4 and 6)")
    return save(figure, directory / "joint_torques.png")


def _latches(
    Figure: Any,
    states: Mapping[str, Sequence[float]],
    marks: Sequence[Mark],
    run: RunLog,
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 1.6 + 1.0 * len(states)), layout="constrained")
    axes_list = figure.subplots(len(states), 1, sharex=True, squeeze=False)[:, 0]
    t = run.latches.t
    for axes, (interface, values) in zip(axes_list, states.items(), strict=True):
        _mark_times(axes, marks, legend=False)
        axes.fill_between(t, values, step="post", color=_LATCHED, alpha=0.25, lw=0)
        axes.step(t, values, where="post", color=_LATCHED, lw=1.4)
        axes.set_ylim(-0.15, 1.15)
        axes.set_yticks([0, 1], ["free", "latched"], fontsize="small")
        axes.set_ylabel(interface, rotation=0, ha="right", va="center")
        axes.grid(True, axis="x", alpha=0.3)
    axes_list[0].set_xlim(run.t_first, run.t_last)
    axes_list[-1].set_xlabel("t [s]")
    kinds = " and ".join(sorted({kind for _, kind, _ in marks}))
    dotted = f"; dotted: the leaves {kinds}" if marks else ""
    figure.suptitle(f"Standard interfaces latched over time (seed 003 Fig. 8){dotted}")
    return save(figure, directory / "latches.png")


def _bases(
    Figure: Any,
    bases: Mapping[str, BaseSeries],
    marks: Sequence[Mark],
    directory: Path,
) -> Path:
    figure = Figure(figsize=(11, 8.5), layout="constrained")
    axes_list = figure.subplots(4, 1, sharex=True, height_ratios=(1, 1, 1, 0.8))
    for row, axes in enumerate(axes_list):
        _mark_times(axes, marks, legend=row == 0)
        for index, (robot, base) in enumerate(bases.items()):
            step = stride(len(base.t))
            if row < 3:
                values = [p[row] * 1e3 for p in base.position[::step]]
            else:
                values = base.turned_deg()[::step]
            axes.plot(base.t[::step], values, color=PALETTE[index % len(PALETTE)], lw=1.3,
                      label=robot if row == 0 and len(bases) > 1 else None)  # fmt: skip
        axes.set_ylabel(f"{_AXES[row]} [mm]" if row < 3 else "turned from\nthe start [deg]")
        plain_axis(axes)
        axes.grid(True, alpha=0.3)
    if marks or len(bases) > 1:
        _legend_right(axes_list[0])
    axes_list[-1].set_xlabel("t [s]")
    who = next(iter(bases)) if len(bases) == 1 else "bases"
    figure.suptitle(f"{who}: base (torso) position in the world, and its turn, over time")
    return save(figure, directory / "base_position.png")
