"""``joint_sync_move`` and ``joint_move``: limbs through joint postures, clamped per joint.

The joint-space variant of the synchronized move: the trajectory is a LERP between joint
vectors and the hypersphere uses eq. 3's weighted metric with ``q_e`` per joint, so a joint
never leads its sensed value by more than ``q_e``.

Each tick's target frames (the record's ``target``) are where the posture being moved to
puts each limb's end-effector, by the robot description's forward kinematics (none while the
end-effector is latched: the joints then move the limb's other end).

With a ``timeout`` [s of mission time] the node fails when it runs out, the limbs told to
hold, and its message says how far it got: the posture it was moving to, and the joint
furthest from that posture (by how much, against ``settle``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import py_trees

from limbtree.skills import (
    JointSpace,
    Mode,
    Outcome,
    StepTimer,
    SyncConfig,
    SyncMove,
)
from limbtree.trees.behaviours.base import (
    STATUS,
    CannotStart,
    SkillBehaviour,
    observe,
    stall_timeout,
    stalled_text,
    waiting_for_states,
)
from limbtree.trees.clocks import elapsed_reached
from limbtree.trees.context import MissionContext
from limbtree.trees.limbs import LimbHandle

FloatArray = npt.NDArray[np.float64]


def _farthest_joint(limb: LimbHandle, q: FloatArray, goal: FloatArray) -> tuple[float, str]:
    """How far [rad or m] the limb's farthest joint is from ``goal``, and its name."""
    errors = np.abs(q - goal)
    j = int(np.argmax(errors))
    return float(errors[j]), limb.description.joints[j].name


class JointSyncMoveBehaviour(SkillBehaviour):
    """Move limbs through joint postures together (``joint_sync_move``)."""

    node_type = "joint_sync_move"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limb_names: tuple[str, ...] = tuple(self._limb_list())
        self.limbs = [context.limb(n) for n in self.limb_names]
        self.core: SyncMove[FloatArray] | None = None
        self._waiting_since: float | None = None
        self._timer = StepTimer()
        self._started_at: float | None = None
        self._targets: list[tuple[FloatArray, ...]] = []
        for limb in self.limbs:
            limb.chain()  # (loaded now, not in a tick: for the target frames, pose_at)

    def _limb_list(self) -> Sequence[str]:
        return list(self.params["limbs"])

    def _postures(self) -> Sequence[Mapping[str, Any]]:
        return list(self.params["postures"])

    def _resolve(self, name: str, posture: Any) -> FloatArray:
        limb = self.context.limb(name)
        values = limb.posture(posture) if isinstance(posture, str) else posture
        q = np.asarray(values, dtype=np.float64)
        joints = len(limb.description.joints)
        if q.shape != (joints,):
            raise ValueError(f"posture for {name} has {q.size} values; the limb has {joints}")
        return q

    def _wait_for_states(
        self, now: float, states: Sequence[FloatArray | None]
    ) -> py_trees.common.Status:
        """RUNNING while a limb has no usable joint state yet, FAILURE after ``stale_timeout``."""
        if self._waiting_since is None:
            self._waiting_since = now
        timeout = float(self.params.get("stale_timeout", 5.0))
        status, self.feedback_message = waiting_for_states(
            self.limb_names,
            self.limbs,
            states,
            elapsed_reached(now, self._waiting_since, timeout),
            timeout,
            "joint state",
        )
        return status

    def start(self) -> None:
        """The core is built at the first tick with fresh joint states."""
        self.core = None
        self._waiting_since = None
        self._timer = StepTimer()
        self._started_at = None
        self._targets = []

    def step(self) -> py_trees.common.Status:
        """Clamp the joint trajectory around the sensed joints and send joint targets."""
        now = self.context.clock()
        if self._started_at is None:
            self._started_at = now
        states = [limb.joints() for limb in self.limbs]
        if self.core is None:
            if any(s is None for s in states):
                self._waiting_since = (
                    self._waiting_since if self._waiting_since is not None else now
                )
                return self._wait_for_states(now, states)
            try:
                waypoints = [tuple(s for s in states if s is not None)] + [
                    tuple(self._resolve(n, p[n]) for n in self.limb_names) for p in self._postures()
                ]
            except (KeyError, ValueError) as exc:
                raise CannotStart(str(exc.args[0] if exc.args else exc)) from None
            space = JointSpace(
                tuple(float(self.params["q_e"]) for _ in self.limb_names),
                settle=float(self.params["settle"]),
            )
            config = SyncConfig(
                stale_timeout=float(self.params.get("stale_timeout", 5.0)),
                stall_timeout=stall_timeout(self.params),
            )
            self.core = SyncMove(space, waypoints, config, self.limb_names, point="posture")
            self._targets = waypoints[1:]
        result = self.core.step(observe(now, self.limbs, states), self._timer.dt(now))
        if self.out_of_time(result.outcome is Outcome.RUNNING, now, self._started_at, self.limbs):
            timeout = float(self.params["timeout"])
            self.feedback_message = self._timed_out(timeout, result.segment, states)
            return py_trees.common.Status.FAILURE
        if result.mode is Mode.STALLED:
            for limb in self.limbs:
                limb.hold()
            gaps = []
            for name, limb, q, goal in zip(
                self.limb_names, self.limbs, states, self.core.heading, strict=True
            ):
                if q is None:
                    gaps.append(f"{name} has no state")
                    continue
                off, joint = _farthest_joint(limb, q, goal)
                gaps.append(f"{name} joint {joint} {math.degrees(off):.1f} deg")
            self.feedback_message = stalled_text(result.message, gaps, self.limb_names, self.limbs)
            return py_trees.common.Status.FAILURE
        if result.command is not None:
            for limb, q in zip(self.limbs, result.command, strict=True):
                limb.command_joints(q)
        if result.mode is Mode.NOMINAL:
            self.context.telemetry.nominal_limbs.update(self.limb_names)
        self.report(result.telemetry)
        # The target frames the record keeps: where the postures put the end-effectors;
        # none for a limb standing on its end-effector (latched: a MIRROR arm after a step,
        # a MAR arm on its foot), whose joints move its other end.
        for name, limb, q in zip(self.limb_names, self.limbs, self.core.heading, strict=True):
            if limb.end_effector in limb.latched_ends():
                continue
            pose = limb.pose_at(q)
            if pose is not None:
                self.set_target(name, pose)
        self.feedback_message = (
            result.message or f"posture {result.segment + 1}, t = {result.t:.2f}"
        )
        return STATUS[result.outcome]

    def _timed_out(self, timeout: float, segment: int, states: Sequence[FloatArray | None]) -> str:
        """How far the move got when its ``timeout`` [s] ran out (or which limb is down)."""
        down = self.core.missing.cannot_succeed() if self.core is not None else None
        if down is not None:
            return f"timed out after {timeout:g} s: {down}"
        index = min(segment, len(self._targets) - 1)
        worst: tuple[float, str, str] | None = None
        for name, limb, q, target in zip(
            self.limb_names, self.limbs, states, self._targets[index], strict=True
        ):
            if q is None:
                continue
            off, joint = _farthest_joint(limb, q, target)
            if worst is None or off > worst[0]:
                worst = (off, name, joint)
        where = f"posture {index + 1}/{len(self._targets)}"
        settle = math.degrees(float(self.params["settle"]))
        if worst is None:
            return f"timed out after {timeout:g} s moving to {where}: no joint state"
        off, limb_name, joint = worst
        return (
            f"timed out after {timeout:g} s moving to {where}: {limb_name} joint {joint} is "
            f"{math.degrees(off):.1f} deg from it (settle_deg {settle:g}); give it a longer "
            "timeout_s, or check that the limb can move (faults, limits, speed)"
        )

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Interrupted: the limbs hold."""
        if new_status is py_trees.common.Status.INVALID and self.core is not None:
            for limb in self.limbs:
                limb.hold()


class JointMoveBehaviour(JointSyncMoveBehaviour):
    """Move one limb into a posture (``joint_move``), e.g. a reconfiguration posture."""

    node_type = "joint_move"

    def _limb_list(self) -> Sequence[str]:
        return [self.params["limb"]]

    def _postures(self) -> Sequence[Mapping[str, Any]]:
        return [{self.params["limb"]: self.params["posture"]}]
