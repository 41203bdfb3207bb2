"""``align``: drive an end-effector onto a motion-captured target (seed 002).

Version 1 (step-and-settle) issues pose targets; each is reached through the synchronizer's
LERP, clamped around the sensed end-effector every tick (seed 000), so no command leaves the
hypersphere. Version 2 (adaptive hypersphere clamp) issues a twist each tick, which the limb
integrates. Both read the end-effector and the target from the motion capture; Version 1
also gives its core the limb's own kinematics, so steps move the limb by the right amount
even where the capture sees a flexed arm.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import py_trees

from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
from limbtree.skills import Outcome
from limbtree.skills.align_v1 import AlignV1, AlignV1Params
from limbtree.skills.align_v2 import AlignV2, AlignV2Params
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
        self.core: AlignV1 | AlignV2 | None = None
        self.metric = SE3Metric(
            float(self.params.get("p_e", 0.02)), float(self.params.get("r_e", math.radians(10)))
        )
        self._segment: tuple[Pose, Pose] | None = None
        self._t0 = 0.0
        self._path = 0.0
        self._last_ee: Pose | None = None

    def start(self) -> None:
        """A fresh controller each time the node starts."""
        offset = self.params.get("offset")
        common: dict[str, Any] = {
            "dd_tol_m": float(self.params.get("dd", 0.010)),
            "dtheta_tol_rad": float(self.params.get("dtheta", math.radians(2.0))),
        }
        if offset is not None:
            common["offset"] = Pose.from_array(offset)
        timeout = self.params.get("stale_timeout")
        if timeout is not None:
            common["target_timeout_s"] = float(timeout)
        self.core = (
            AlignV1(AlignV1Params(**common))
            if self.version == 1
            else AlignV2(AlignV2Params(**common))
        )
        self._segment = None
        self._t0 = self.context.clock()
        self._path = 0.0
        self._last_ee = None

    def step(self) -> py_trees.common.Status:
        """Observe, step the core, command the limb."""
        core = self.core
        if core is None:
            raise CannotStart(f"{self.name} was ticked before it was initialised")
        now = self.context.clock()
        limit = self.params.get("timeout")
        if limit is not None and now - self._t0 > float(limit):
            self.limb.hold()
            self.feedback_message = f"not aligned after {float(limit):g} s"
            return py_trees.common.Status.FAILURE
        ee = self.limb.mocap("ee")
        target = self.limb.mocap(str(self.params["target"]))
        limb_pose = self.limb.pose()
        if ee is not None:
            if self._last_ee is not None:
                self._path += ee.distance_to(self._last_ee)
            self._last_ee = ee
        if isinstance(core, AlignV1):
            v1 = core.step(
                AlignObservation(now, ee, target, limb_pose, self._segment_done(limb_pose))
            )
            if v1.outcome is Outcome.RUNNING:
                self._follow(v1.command, v1.stepped, limb_pose)
            outcome, message, figures = v1.outcome, v1.message, v1.record()
        else:
            v2 = core.step(AlignObservation(now, ee, target, limb_pose))
            if v2.outcome is Outcome.RUNNING:
                twist = np.asarray(v2.twist_world, dtype=np.float64)
                self.limb.command_twist(twist[:3].tolist(), twist[3:].tolist())
            outcome, message, figures = v2.outcome, v2.message, v2.record()
        self.report(**figures, version=self.version)
        self.feedback_message = message or (
            f"V{self.version}: Δd = {figures.get('dd_mm') or 0:.1f} mm, "
            f"Δθ = {figures.get('dtheta_deg') or 0:.2f} deg"
        )
        if outcome is Outcome.SUCCESS:
            self._record_metrics(now, figures)
        if outcome is not Outcome.RUNNING:
            self.limb.hold()
        return STATUS[outcome]

    def _segment_done(self, limb_pose: Pose | None) -> bool | None:
        if self._segment is None or limb_pose is None:
            return None if limb_pose is None else True
        _, end = self._segment
        return limb_pose.distance_to(end) < 1e-3 and limb_pose.angle_to(end) < math.radians(0.2)

    def _follow(self, goal: Pose | None, stepped: bool, limb_pose: Pose | None) -> None:
        """Version 1: move towards the step target along a LERP, clamped around the limb."""
        if goal is None or limb_pose is None:
            return
        if stepped or self._segment is None:
            self._segment = (limb_pose, goal)
        start, end = self._segment
        result = hypersphere_clamp(limb_pose, start, end, self.metric)
        if result.poses is None:
            # Pushed off the segment: start a new one from where the limb is.
            self._segment = (limb_pose, end)
            result = hypersphere_clamp(limb_pose, limb_pose, end, self.metric)
        if result.poses is not None:
            self.limb.command_pose(result.poses[0], limb_pose)
            telemetry = self.context.telemetry
            if result.distance is not None:
                telemetry.max_command_state_distance = max(
                    telemetry.max_command_state_distance, result.distance
                )

    def _record_metrics(self, now: float, figures: Mapping[str, Any]) -> None:
        key = str(self.params.get("metrics", "align"))
        self.context.telemetry.metrics[key] = {
            "version": self.version,
            "duration_s": now - self._t0,
            "final_dd_mm": figures.get("dd_mm"),
            "final_dtheta_deg": figures.get("dtheta_deg"),
            "path_length_mm": self._path * 1e3,
        }

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Interrupted: the limb holds."""
        if new_status is py_trees.common.Status.INVALID and self.core is not None:
            self.limb.hold()
