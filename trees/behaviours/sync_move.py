"""``sync_move``: n end-effectors through waypoints in sync (seed 000 Sec. II-C, II-D)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import py_trees

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import (
    Mode,
    Outcome,
    PoseSpace,
    Recovery,
    StepTimer,
    SyncConfig,
    SyncMove,
    SyncStep,
    offset_pose,
)
from limbtree.transport.driver import Health
from limbtree.transport.faults import FaultKind
from limbtree.trees.behaviours.base import (
    STATUS,
    SkillBehaviour,
    observe,
    stall_timeout,
    stalled_text,
    waiting_for_states,
)
from limbtree.trees.clocks import elapsed_reached
from limbtree.trees.context import MissionContext


def per_limb(value: float | Mapping[str, float], limbs: Sequence[str]) -> list[float]:
    """A scalar for every limb, or the per-limb map's values in ``limbs`` order."""
    if isinstance(value, Mapping):
        return [float(value[name]) for name in limbs]
    return [float(value)] * len(limbs)


class PoseMoveBehaviour(SkillBehaviour):
    """Shared by the end-effector moves: run a :class:`SyncMove` over poses each tick."""

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limb_names: tuple[str, ...] = tuple(self.params["limbs"])
        self.limbs = [context.limb(n) for n in self.limb_names]
        self.core: SyncMove[Pose] | None = None
        self._waiting_since: float | None = None
        self._recovering = False
        self._timer = StepTimer()
        self._started_at: float | None = None
        #: Since when each limb's IK has failed on end [s, mission time], by limb index.
        self._ik_failing_since: dict[int, float] = {}
        #: The waypoints after the start, per limb (world frame), once the core is built.
        self.targets: list[tuple[Pose, ...]] = []

    def metrics(self) -> tuple[SE3Metric, ...]:
        """One metric per limb from ``p_e`` [m] and ``r_e`` [rad]."""
        p_e = per_limb(self.params.get("p_e", 0.02), self.limb_names)
        r_e = per_limb(self.params.get("r_e", math.inf), self.limb_names)
        return tuple(SE3Metric(p, r) for p, r in zip(p_e, r_e, strict=True))

    def make_core(self, start: tuple[Pose, ...]) -> SyncMove[Pose]:
        """Build the synchronizer once every limb has a fresh state."""
        raise NotImplementedError

    def start(self) -> None:
        """Forget any previous run; the core is built at the first tick with fresh states."""
        self.core = None
        self._waiting_since = None
        self._recovering = False
        self._timer = StepTimer()
        self._started_at = None
        self._ik_failing_since = {}
        self.targets = []

    def step(self) -> py_trees.common.Status:
        """Clamp around the sensed states and send the command."""
        now = self.context.clock()
        if self._started_at is None:
            self._started_at = now
        states = [limb.pose() for limb in self.limbs]
        if self.core is None:
            if any(s is None for s in states):
                return self._wait_for_states(now, states)
            self.core = self.make_core(tuple(s for s in states if s is not None))
        result = self.core.step(observe(now, self.limbs, states), self._timer.dt(now))
        if self.out_of_time(result.outcome is Outcome.RUNNING, now, self._started_at, self.limbs):
            timeout = float(self.params["timeout"])
            self.feedback_message = self._timed_out(timeout, result.segment, states)
            return py_trees.common.Status.FAILURE
        if result.mode is Mode.STALLED:
            for limb in self.limbs:
                limb.hold()
            gaps = [
                f"{name} {1000 * float(np.linalg.norm(y.position - goal.position)):.0f} mm"
                if y is not None
                else f"{name} has no state"
                for name, y, goal in zip(self.limb_names, states, self.core.heading, strict=True)
            ]
            self.feedback_message = stalled_text(result.message, gaps, self.limb_names, self.limbs)
            return py_trees.common.Status.FAILURE
        if result.outcome is Outcome.RUNNING and self._ik_failed_too_long(now):
            for limb in self.limbs:
                limb.hold()
            self.feedback_message = self._unreachable(result.segment, states)
            return py_trees.common.Status.FAILURE
        self._send(result)
        self.feedback_message = self.with_ik_failures(
            result.message
            or f"segment {result.segment + 1}/{self.core.segments}, t = {result.t:.3f}"
            + (f", lap {result.laps + 1}" if self.core.config.loop else "")
        )
        return STATUS[result.outcome]

    def _timed_out(self, timeout: float, segment: int, states: Sequence[Pose | None]) -> str:
        """How far the move got when its ``timeout`` [s] ran out: the waypoint, each limb's gap.

        A limb that stopped short of a waypoint beyond its reach waits at the edge forever;
        this says which waypoint and by how much. A limb powered off or disassembled comes
        first: the move could not succeed without it.
        """
        down = self.core.missing.cannot_succeed() if self.core is not None else None
        if down is not None:
            return f"timed out after {timeout:g} s: {down}"
        short = self._short_of(segment, states)
        if short is None:
            return f"timed out after {timeout:g} s"
        waypoint, gaps = short
        return (
            f"timed out after {timeout:g} s short of {waypoint} (from it: {gaps}); a limb that "
            "stopped far from it may be out of its reach there: check the waypoint, the "
            "limb's base and any --set value"
        )

    def _ik_failed_too_long(self, now: float) -> bool:
        """Whether a limb's IK has failed for ``ik_timeout`` [s] of mission time on end.

        A waypoint out of reach (a ``--set`` value, a moved base) leaves the limb waiting at
        the edge of its workspace with ``IK_FAILED`` for as long as the move lasts: without
        a ``timeout`` it would never end. Each limb is timed on its own; a failure under an
        injected ``ik_error`` is not counted (the fault ends by itself).
        """
        limit = self.params.get("ik_timeout")
        if limit is None or not math.isfinite(float(limit)):
            return False
        since = self._ik_failing_since
        for i, limb in enumerate(self.limbs):
            if not limb.health & Health.IK_FAILED or FaultKind.IK_ERROR.value in limb.faults:
                since.pop(i, None)  # (an injected ik_error ends by itself: not counted)
                continue
            since.setdefault(i, now)
        return bool(since) and elapsed_reached(now, min(since.values()), float(limit))

    def _unreachable(self, segment: int, states: Sequence[Pose | None]) -> str:
        """Why the move gave up on a waypoint its limbs' IK cannot reach, and how far off."""
        limit = float(self.params["ik_timeout"])
        why = self.with_ik_failures("")
        short = self._short_of(segment, states)
        if short is None:
            return f"IK failed for {limit:g} s on end: {why}"
        waypoint, gaps = short
        return (
            f"{waypoint} cannot be reached: IK failed for {limit:g} s on end ({why}; from it: "
            f"{gaps}); check the waypoint, the limb's base and any --set value"
        )

    def _short_of(self, segment: int, states: Sequence[Pose | None]) -> tuple[str, str] | None:
        """Where segment ``segment`` heads, and how far off each limb is.

        Returns:
            ``("waypoint 2/4", "heavy 12 mm, light 3 mm")``, or None before the waypoints
            are known.
        """
        if not self.targets:
            return None
        index = min(segment, len(self.targets) - 1)
        gaps = []
        for name, state, target in zip(self.limb_names, states, self.targets[index], strict=True):
            if state is None:
                gaps.append(f"{name} has no state")
                continue
            gap = float(np.linalg.norm(state.position - target.position))
            gaps.append(f"{name} {gap * 1000:.0f} mm")
        return f"waypoint {index + 1}/{len(self.targets)}", ", ".join(gaps)

    def with_ik_failures(self, message: str) -> str:
        """``message``, then ``limb: IK failed: why`` for each limb whose state says IK_FAILED.

        The why is the agent's (the state's ``detail["ik_failure"]``): which joint is at or
        near its limit, so a move that waits at a joint limit says which one.
        """
        notes = [message] if message else []
        for name, limb in zip(self.limb_names, self.limbs, strict=True):
            if not limb.health & Health.IK_FAILED:
                continue
            state = limb.state
            detail = state.detail if state is not None else None
            reason = detail.get("ik_failure") if isinstance(detail, Mapping) else None
            notes.append(f"{name}: IK failed: {reason}" if reason else f"{name}: IK failed")
        return "; ".join(notes)

    def _wait_for_states(self, now: float, states: Sequence[Pose | None]) -> py_trees.common.Status:
        if self._waiting_since is None:
            self._waiting_since = now
        timeout = float(self.params.get("stale_timeout", 5.0))
        status, self.feedback_message = waiting_for_states(
            self.limb_names,
            self.limbs,
            states,
            elapsed_reached(now, self._waiting_since, timeout),
            timeout,
        )
        return status

    def _send(self, result: SyncStep[Pose]) -> None:
        telemetry = self.context.telemetry
        if result.command is not None and result.center is not None:
            for limb, command, center in zip(
                self.limbs, result.command, result.center, strict=True
            ):
                limb.command_pose(command, center)
        if result.distance is not None:
            telemetry.note_clamp(result.distance)
        if result.mode is Mode.NOMINAL or result.outcome is Outcome.SUCCESS:
            telemetry.nominal_limbs.update(self.limb_names)
            if result.command is not None:
                for name, command in zip(self.limb_names, result.command, strict=True):
                    self.context.last_valid[name] = command
        if self.core is not None:
            # The target frames the record keeps: where the limbs are going now.
            for name, target in zip(self.limb_names, self.core.heading, strict=True):
                self.set_target(name, target)
        entering = result.mode is Mode.RECOVERING and not self._recovering
        if entering:
            telemetry.recoveries += 1
        self._recovering = result.mode is Mode.RECOVERING
        self.report(result.telemetry)

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Interrupted (not finished): the limbs hold where they are."""
        if new_status is py_trees.common.Status.INVALID and self.core is not None:
            for limb in self.limbs:
                limb.hold()


class SyncMoveBehaviour(PoseMoveBehaviour):
    """``sync_move``: clamp the stacked trajectory around the sensed states every tick."""

    node_type = "sync_move"
    recovers = True

    def make_core(self, start: tuple[Pose, ...]) -> SyncMove[Pose]:
        """Waypoints relative to where each limb starts, or absolute, after ``start``."""
        relative = self.params.get("frame", "relative") == "relative"
        waypoints: list[tuple[Pose, ...]] = [start]
        for waypoint in self.params["waypoints"]:
            points = []
            for name, origin in zip(self.limb_names, start, strict=True):
                values = waypoint[name]
                points.append(offset_pose(origin, values) if relative else Pose.from_array(values))
            waypoints.append(tuple(points))
        self.targets = waypoints[1:]
        metrics = self.metrics()
        p_min = min(m.p_e for m in metrics)
        max_speed = self.params.get("max_speed")
        config = SyncConfig(
            recovery=Recovery(self.params.get("recovery", "last_valid")),
            monotonic=bool(self.params.get("monotonic", False)),
            max_speed=None if max_speed is None else float(max_speed) / p_min,
            stale_timeout=float(self.params.get("stale_timeout", 5.0)),
            loop=bool(self.params.get("loop", False)),
            stall_timeout=stall_timeout(self.params),
        )
        space = PoseSpace(
            metrics,
            float(self.params.get("norm", math.inf)),
            float(self.params.get("settle", 0.002)),
        )
        return SyncMove(space, waypoints, config, self.limb_names)
