"""``align``: drive an end-effector onto a motion-captured target (seed 002).

An adapter over :class:`limbtree.skills.align.Align`: each tick it reads the captured
end-effector and target and the limb's own end-effector pose, steps the core, and sends the
command (Version 1: a pose target, clamped around the limb; Version 2: a twist).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import py_trees

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import Outcome, StepTimer
from limbtree.skills.align import Align
from limbtree.skills.align_v1 import AlignV1Params
from limbtree.skills.align_v2 import AlignV2Params
from limbtree.skills.alignment import AlignObservation
from limbtree.trees.behaviours.base import STATUS, CannotStart, SkillBehaviour
from limbtree.trees.context import MissionContext


class AlignBehaviour(SkillBehaviour):
    """Align one limb's end-effector to a target (``align``)."""

    node_type = "align"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limb = context.limb(str(self.params["limb"]))
        self.version = int(self.params.get("version", 2))
        self.metric = SE3Metric(
            float(self.params.get("p_e", 0.02)), float(self.params.get("r_e", math.radians(10)))
        )
        self.core: Align | None = None
        self._timer = StepTimer()

    def start(self) -> None:
        """A fresh core each time the node starts."""
        offset = self.params.get("offset")
        common: dict[str, Any] = {
            "dd_tol_m": float(self.params.get("dd", 0.010)),
            "dtheta_tol_rad": float(self.params.get("dtheta", math.radians(2.0))),
        }
        if offset is not None:
            common["offset"] = Pose.from_array(offset)
        stall_timeout = self.params.get("stall_timeout")
        if stall_timeout is not None:
            common["stall_time_s"] = float(stall_timeout)
        stale_timeout = self.params.get("stale_timeout")
        if stale_timeout is not None:
            common["target_timeout_s"] = float(stale_timeout)
        tuned = dict(self.params.get(f"v{self.version}") or {})  # the mission's v1 / v2 map
        controller = (
            AlignV1Params(**common, **tuned)
            if self.version == 1
            else AlignV2Params(**common, **tuned)
        )
        max_speed, max_accel = self.params.get("max_speed"), self.params.get("max_accel")
        timeout = self.params.get("timeout")
        self.core = Align(
            controller,
            self.metric,
            max_speed=None if max_speed is None else float(max_speed),
            max_accel=None if max_accel is None else float(max_accel),
            timeout_s=None if timeout is None else float(timeout),
        )
        self._timer = StepTimer()

    def step(self) -> py_trees.common.Status:
        """Observe, step the core, command the limb."""
        core = self.core
        if core is None:
            raise CannotStart(f"{self.name} was ticked before it was initialised")
        now = self.context.clock()
        observation = AlignObservation(
            now,
            self.limb.mocap("ee"),
            self.limb.mocap(str(self.params["target"])),
            self.limb.pose(),
        )
        result = core.step(observation, self._timer.dt(now))
        if result.pose is not None:
            self.limb.command_pose(result.pose, result.center)
        if result.twist is not None:
            self.limb.command_twist(result.twist[:3], result.twist[3:])
        if result.distance is not None:
            self.context.telemetry.note_clamp(result.distance)
        if result.telemetry is not None:
            self.report(result.telemetry)
        if result.target is not None:
            self.set_target(self.limb.name, result.target)
        self.feedback_message = result.message
        if result.metrics is not None:
            key = str(self.params.get("metrics", "align"))
            self.context.telemetry.metrics[key] = dict(result.metrics)
        if result.outcome is not Outcome.RUNNING:
            self.limb.hold()
        return STATUS[result.outcome]

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Interrupted: the limb holds."""
        if new_status is py_trees.common.Status.INVALID and self.core is not None:
            self.limb.hold()
