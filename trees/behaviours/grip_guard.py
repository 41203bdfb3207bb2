"""``grip_guard``: FAILURE as soon as a gripper of a climbing robot stops holding.

A robot standing gripped to a terrain in microgravity (seed 004's HubRobo) floats away with
its last gripper: a mission that needs every gripper latched says so with this guard. It
commands nothing; each tick it reads the legs' states (their ``detail["grip"]``, as the
``mujoco`` plant reports it) and the plant's list of torn-off grippers, and:

* FAILS when a gripper of ``legs`` is torn off (the plant's detachment: a supporting
  gripper pulled past its holding force), or no longer holds for another reason (it was
  opened, or it holds nothing), the message naming the leg, the time, the force (a tear)
  and the faults in force on the legs, if any;
* SUCCEEDS after ``duration`` [s] of mission time when one is given (a ``wait`` that
  requires the grippers), else runs until its parent halts it (a guard beside other nodes
  in a ``parallel``).

It reports the climbing leaves' plant figures (:class:`~.climbing.PlantGrip`: every leg's
gripper force and whether it holds, the GIA margin, the momentum) each tick, and keeps the
run's in ``summary.json``'s ``metrics.<metrics>`` block (default ``climb``) with them
(:class:`~.climbing.GripBehaviour`), so the record has every gripper's state and ``limbtree
report`` says whether any detached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import py_trees

from limbtree.robots.grippers import GripperState
from limbtree.skills.telemetry import SkillTelemetry
from limbtree.trees.behaviours.base import CannotStart, time_left_text
from limbtree.trees.behaviours.climbing import (
    DEFAULT_HOLD_N,
    GripBehaviour,
    PlantGrip,
)
from limbtree.trees.clocks import elapsed_reached

Status = py_trees.common.Status


@dataclass(frozen=True)
class GripGuardTelemetry(PlantGrip, SkillTelemetry):
    """A guard's tick: the plant's grip figures (:class:`PlantGrip`) and how long it guarded.

    Attributes:
        elapsed_s: mission time since the guard started [s].
        holding: how many of its legs' grippers hold.
    """

    skill: ClassVar[str] = "grip_guard"
    elapsed_s: float = 0.0
    holding: int = 0


@dataclass(frozen=True)
class GripLost:
    """A guarded gripper that no longer holds.

    Attributes:
        leg: the leg (mission limb name).
        t_s: when [s]: the plant's time of a tear (the mission time in the ``sim`` clock),
            else the mission time of the tick that saw it.
        why: what happened, completing "gripper of LEG ..." (``detached at t = ... s:
            pulled with ... N, past its 0.9 N holding force``).
    """

    leg: str
    t_s: float
    why: str


def faults_text(faults: Mapping[str, Sequence[str]]) -> str:
    """The faults in force on the legs, for a message.

    Args:
        faults: leg -> the names of the faults in force on it (empty: none).

    Returns:
        ``fault in force: power_off on hub.leg_0``, ``faults in force: ...`` for several,
        or ``no fault in force``.
    """
    named = [f"{fault} on {leg}" for leg, names in faults.items() for fault in names]
    if not named:
        return "no fault in force"
    return f"fault{'s' * (len(named) > 1)} in force: {', '.join(named)}"


class GripGuardBehaviour(GripBehaviour):
    """FAILURE when a gripper of ``legs`` stops holding; SUCCESS after ``duration`` if given."""

    node_type = "grip_guard"

    def start(self) -> None:
        """Note when the guard began; the plant's tears from then on count."""
        self._began = self.context.clock()
        self._since: float | None = None  # the plant's time at the first reading [s]
        self._stale_since = None

    def step(self) -> Status:
        """Check every gripper, report the plant's figures, and end when one lets go.

        While a leg cannot be read (powered off, stale), the others' grippers and the
        plant's tears (every leg's state lists them) are still checked; the plant's figures
        are reported on the ticks every leg is read.
        """
        now = self.context.clock()
        legs = self._read_legs()
        if legs is not None:
            grips = dict(zip(self.handles, legs.grips, strict=True))
            detail, t_s = legs.detail, min(float(s.t) for s in legs.states.values())
        elif (seen := self._fresh_grips()) is not None:
            grips, detail, t_s = seen
        else:
            return self._waiting(now)
        self._stale_since = None
        if self._since is None:
            self._since = t_s
        self._note_run(detail)
        elapsed = now - self._began
        if legs is not None:
            figures = self._plant(legs.footholds, legs.grips, detail)
            self._note_tick(figures)
            self.report(
                GripGuardTelemetry(
                    **{f.name: getattr(figures, f.name) for f in dataclasses.fields(figures)},
                    elapsed_s=elapsed,
                    holding=sum(figures.supporting),
                )
            )
        lost = self._lost(grips, detail, now)
        if lost:
            first = lost[0]
            faults = {leg: handle.faults for leg, handle in self.handles.items()}
            others = "".join(f"; and {other.leg} at {other.t_s:.3f} s" for other in lost[1:])
            self.feedback_message = (
                f"gripper of {first.leg} {first.why}{others}; {faults_text(faults)}"
            )
            return Status.FAILURE
        duration = self.params.get("duration")
        if duration is not None and elapsed_reached(now, self._began, float(duration)):
            self.feedback_message = f"all {len(grips)} grippers held for {float(duration):g} s"
            return Status.SUCCESS
        unread = [leg for leg in self.handles if leg not in grips]
        holding = f"all {len(grips)} grippers holding"
        if unread:
            holding = (
                f"{len(grips)} grippers holding, {', '.join(unread)} not read (stale or "
                "powered off: only the plant's tears are seen)"
            )
        left = "" if duration is None else f"; {time_left_text(float(duration) - elapsed)}"
        self.feedback_message = holding + left
        return Status.RUNNING

    def _fresh_grips(self) -> tuple[dict[str, Mapping[str, Any]], Mapping[str, Any], float] | None:
        """The grips of the legs read fresh, the plant's detail and the earliest state's time.

        None when no leg's state is fresh.
        """
        grips: dict[str, Mapping[str, Any]] = {}
        detail: Mapping[str, Any] = {}
        times: list[float] = []
        for leg, handle in self.handles.items():
            state = handle.state
            if state is None or not handle.fresh:
                continue
            detail = state.detail or {}
            grip = detail.get("grip")
            grips[leg] = grip if isinstance(grip, Mapping) else {}
            times.append(float(state.t))
        return (grips, detail, min(times)) if grips else None

    def _lost(
        self, grips: Mapping[str, Mapping[str, Any]], detail: Mapping[str, Any], now: float
    ) -> list[GripLost]:
        """The guarded grippers that no longer hold, in time order.

        Args:
            grips: leg -> its ``detail["grip"]``, for the legs read this tick.
            detail: the plant's shared detail (its ``detachments``: every tear so far).
            now: the mission time [s].

        Raises:
            CannotStart: for a leg whose state reports no gripper.
        """
        hold = float(
            (self.context.physics.get("contact") or {}).get("grip_force_n", DEFAULT_HOLD_N)
        )
        since = self._since if self._since is not None else 0.0
        lost: dict[str, GripLost] = {}
        for d in detail.get("detachments") or ():
            leg = self._leg_name(str(d["leg"]))
            if leg in self.handles and leg not in lost and float(d["t_s"]) >= since:
                lost[leg] = GripLost(
                    leg,
                    float(d["t_s"]),
                    f"detached at t = {float(d['t_s']):.3f} s: pulled with "
                    f"{float(d['force_n']):.3f} N, past its {hold:g} N holding force",
                )
        for leg, grip in grips.items():
            if not grip:
                raise CannotStart(
                    f"{self.node_type}: limb {leg} reports no gripper: guard the legs of a "
                    "robot with grippers on a mujoco plant whose world has a terrain"
                )
            if leg in lost or grip.get("supporting"):
                continue
            if grip.get("state") == GripperState.DETACHED.value:
                why = "was torn off (before this guard started)"
            elif not grip.get("closed"):
                why = "was opened (a gripper command)"
            else:
                why = "holds nothing (closed, but not anchored to the terrain)"
            lost[leg] = GripLost(leg, now, f"let go at t = {now:.3f} s: it {why}")
        return sorted(lost.values(), key=lambda loss: loss.t_s)


__all__ = ["GripGuardBehaviour", "GripGuardTelemetry", "GripLost", "faults_text"]
