"""``joint_sync_move`` and ``joint_move``: limbs through joint postures, clamped per joint.

The joint-space variant of the synchronized move: the trajectory is a LERP between joint
vectors and the hypersphere uses eq. 3's weighted metric with ``q_e`` per joint, so a joint
never leads its sensed value by more than ``q_e``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import py_trees

from limbtree.skills import JointSpace, Mode, StepTimer, SyncConfig, SyncMove, SyncObservation
from limbtree.trees.behaviours.base import STATUS, CannotStart, SkillBehaviour
from limbtree.trees.context import MissionContext

FloatArray = npt.NDArray[np.float64]


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

    def start(self) -> None:
        """The core is built at the first tick with fresh joint states."""
        self.core = None
        self._waiting_since = None
        self._timer = StepTimer()

    def step(self) -> py_trees.common.Status:
        """Clamp the joint trajectory around the sensed joints and send joint targets."""
        now = self.context.clock()
        states = [limb.joints() for limb in self.limbs]
        if self.core is None:
            if any(s is None for s in states):
                self._waiting_since = (
                    self._waiting_since if self._waiting_since is not None else now
                )
                if now - self._waiting_since > float(self.params.get("stale_timeout", 5.0)):
                    self.feedback_message = "no joint state from the limbs: are their agents up?"
                    return py_trees.common.Status.FAILURE
                self.feedback_message = "waiting for joint states"
                return py_trees.common.Status.RUNNING
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
            config = SyncConfig(stale_timeout=float(self.params.get("stale_timeout", 5.0)))
            self.core = SyncMove(space, waypoints, config, self.limb_names)
        result = self.core.step(SyncObservation(now, tuple(states)), self._timer.dt(now))
        if result.command is not None:
            for limb, q in zip(self.limbs, result.command, strict=True):
                limb.command_joints(q)
        if result.mode is Mode.NOMINAL:
            self.context.telemetry.nominal_limbs.update(self.limb_names)
        self.report(result.telemetry)
        self.feedback_message = (
            result.message or f"posture {result.segment + 1}, t = {result.t:.2f}"
        )
        return STATUS[result.outcome]

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
