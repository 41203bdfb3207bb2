"""``velocity_move``: the command integrates an input speed, clamped (seed 000 eq. 11)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import py_trees

from limbtree.kinematics import Pose
from limbtree.skills import SpeedSegment, VelocityMove
from limbtree.trees.behaviours.base import STATUS, CannotStart, observe
from limbtree.trees.behaviours.sync_move import PoseMoveBehaviour
from limbtree.trees.context import MissionContext


class VelocityMoveBehaviour(PoseMoveBehaviour):
    """Drive end-effectors by a piecewise-constant speed profile through the clamp."""

    node_type = "velocity_move"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.velocity_core: VelocityMove | None = None

    def start(self) -> None:
        """A fresh profile each time the node starts."""
        super().start()  # a fresh step timer too
        profile = [
            SpeedSegment(float(s["duration"]), tuple(s["velocity"]))  # type: ignore[arg-type]
            for s in self.params["profile"]
        ]
        self.velocity_core = VelocityMove(
            self.metrics(),
            profile,
            self.limb_names,
            float(self.params.get("stale_timeout", 5.0)),
        )

    def step(self) -> py_trees.common.Status:
        """One clamped increment of the input speed."""
        core = self.velocity_core
        if core is None:
            raise CannotStart(f"{self.name} was ticked before it was initialised")
        now = self.context.clock()
        states: tuple[Pose | None, ...] = tuple(limb.pose() for limb in self.limbs)
        result = core.step(observe(now, self.limbs, states), self._timer.dt(now))
        self._send(result)
        self.feedback_message = self.with_ik_failures(
            result.message or f"profile {100 * result.t:.0f}% done"
        )
        return STATUS[result.outcome]
