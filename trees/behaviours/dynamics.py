"""Seed 003's leaves: ``walk_step``, ``impedance_move``, ``latch`` and ``unlatch``.

They run at the tree's rate and only set goals, gains and latches: the eq.-8 torque loop
runs at 1 kHz inside the limbs' ``mujoco`` plant (as a real MIRROR robot runs it on its own
computer), through the ``impedance`` and ``latch`` commands. Their cores
(:class:`~limbtree.skills.dynamics.WalkStep`, :class:`~limbtree.skills.dynamics.ImpedanceMove`)
decide from world poses: an end's pose comes from the limb's state and its robot's floating
base, a target from the mission's world map (``MODULE/GRASP_POINT``).

Each also reports what the plant measured of the controller (W, its largest rise between
switches, the largest joint torque): ``summary.json``'s ``metrics.passivity`` keeps the
largest rise of the run (seed 003 eq. 13 says W never rises).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import py_trees

from limbtree.errors import LimbtreeError
from limbtree.kinematics import Pose
from limbtree.skills import Outcome, StepTimer
from limbtree.skills.dynamics import (
    ImpedanceMove,
    MoveObservation,
    MoveParams,
    MoveTelemetry,
    ViaMode,
    WalkObservation,
    WalkParams,
    WalkStep,
    WalkTelemetry,
)
from limbtree.trees.behaviours.base import STATUS, CannotStart, SkillBehaviour
from limbtree.trees.clocks import elapsed_reached
from limbtree.trees.context import MissionContext
from limbtree.trees.limbs import LimbHandle
from limbtree.trees.reach import interface_reach

Status = py_trees.common.Status


@dataclass(frozen=True)
class PlantFigures:
    """What the plant measured of its torque loop, as a leaf reports it each tick.

    Attributes:
        lyapunov_j: W = KE + Φ̂ (seed 003 eq. 9) [J], or None while nothing is latched.
        max_rise_j: the largest rise of W in one 1 ms substep since the last switch of the
            latched set or of the goals [J].
        max_rise_rel: that rise over W at the switch.
        tau_max_nm: the largest joint torque of the limbs this tick [N m].
        tau_nm: the limbs' joint torques this tick, limb after limb [N m].
        latched: the plant's latched interfaces.
    """

    lyapunov_j: float | None
    max_rise_j: float
    max_rise_rel: float
    tau_max_nm: float
    tau_nm: tuple[float, ...]
    latched: tuple[str, ...]


def plant_figures(limbs: Sequence[LimbHandle]) -> PlantFigures | None:
    """The plant's torque-loop figures from the limbs' latest states (None without a state).

    The limbs are of one plant; W and the latched set are the plant's (read from the first),
    the torques those of all the limbs given, in their order.
    """
    states = [limb.state for limb in limbs]
    first = states[0] if states else None
    if first is None or not first.detail or "max_rise_rel" not in first.detail:
        return None
    detail = first.detail
    effort = tuple(float(v) for state in states if state is not None for v in state.effort or ())
    w = detail.get("lyapunov_j")
    return PlantFigures(
        lyapunov_j=None if w is None else float(w),
        max_rise_j=float(detail.get("max_rise_j", 0.0)),
        max_rise_rel=float(detail.get("max_rise_rel", 0.0)),
        tau_max_nm=max((abs(v) for v in effort), default=0.0),
        tau_nm=effort,
        latched=tuple(sorted(detail.get("latched") or ())),
    )


@dataclass(frozen=True)
class PlantFields:
    """The plant's figures a seed-003 leaf adds to its core's telemetry."""

    lyapunov_j: float | None = None
    max_rise_rel: float = 0.0
    tau_max_nm: float = 0.0
    tau_nm: tuple[float, ...] = ()
    latched: tuple[str, ...] = ()


@dataclass(frozen=True)
class WalkStepTelemetry(PlantFields, WalkTelemetry):
    """A walk step's figures and the plant's (:class:`PlantFigures`)."""

    skill: ClassVar[str] = "walk_step"


@dataclass(frozen=True)
class ImpedanceMoveTelemetry(PlantFields, MoveTelemetry):
    """An impedance move's figures and the plant's."""

    skill: ClassVar[str] = "impedance_move"


def _with_plant(telemetry: Any, cls: type, figures: PlantFigures | None) -> Any:
    values = {f.name: getattr(telemetry, f.name) for f in dataclasses.fields(telemetry)}
    if figures is not None:
        values.update(
            lyapunov_j=figures.lyapunov_j,
            max_rise_rel=figures.max_rise_rel,
            tau_max_nm=figures.tau_max_nm,
            tau_nm=figures.tau_nm,
            latched=figures.latched,
        )
    return cls(**values)


def note_passivity(context: MissionContext, figures: PlantFigures | None) -> None:
    """Keep the run's largest rise of W (``metrics.passivity``) and largest torque."""
    if figures is None:
        return
    metrics = context.telemetry.metrics.setdefault(
        "passivity", {"max_rise_rel": 0.0, "max_rise_j": 0.0, "max_tau_nm": 0.0}
    )
    metrics["max_rise_rel"] = max(metrics["max_rise_rel"], figures.max_rise_rel)
    metrics["max_rise_j"] = max(metrics["max_rise_j"], figures.max_rise_j)
    metrics["max_tau_nm"] = max(metrics["max_tau_nm"], figures.tau_max_nm)


def _gains(params: Mapping[str, Any]) -> dict[str, float] | None:
    gains = params.get("gains")
    return dict(gains) if gains else None


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return bool(np.array_equal(a, b))


class LatchBehaviour(SkillBehaviour):
    """Engage a standard interface (``latch``); SUCCESS once the plant reports it latched."""

    node_type = "latch"
    engage: ClassVar[bool] = True

    def start(self) -> None:
        """Send the latch request."""
        self.limb = self.context.limb(str(self.params["limb"]))
        self.end = str(self.params["end"])
        self._since = self.context.clock()
        clear = getattr(self.limb.link, "clear_error", None)
        if callable(clear):
            clear()  # a refusal seen from now on is this request's
        self.limb.latch(self.end, self.engage)

    def step(self) -> Status:
        """Wait for the plant's state to show the interface (un)latched."""
        verb = "latched" if self.engage else "released"
        if self.limb.fresh and (self.end in self.limb.latched_ends()) == self.engage:
            self.feedback_message = f"{self.limb.name} {self.end} {verb}"
            return Status.SUCCESS
        waited = self.context.clock() - self._since
        timeout = float(self.params.get("timeout", 1.0))
        if waited > timeout:
            error = getattr(self.limb.link, "last_error", None)
            why = f": the plant said: {error}" if error is not None else ""
            self.feedback_message = (
                f"{self.limb.name} {self.end} not {verb} within {timeout:g} s{why}"
            )
            return Status.FAILURE
        self.feedback_message = f"{'latching' if self.engage else 'releasing'} {self.end}"
        return Status.RUNNING


class UnlatchBehaviour(LatchBehaviour):
    """Release a standard interface (``unlatch``); SUCCESS once the plant reports it free."""

    node_type = "unlatch"
    engage: ClassVar[bool] = False


class WalkStepBehaviour(SkillBehaviour):
    """One SI-to-SI step of a limb's end (``walk_step``, seed 003 Sec. 5-A and 5-C)."""

    node_type = "walk_step"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limb = context.limb(str(params["limb"]))
        self.core: WalkStep | None = None

    def start(self) -> None:
        """Plan nothing yet: the core plans from the first fresh state."""
        params = self.params
        self.end = str(params["end"])
        ends = [e for e in self.limb.description.end_effectors if e != self.end]
        anchor = params.get("anchor")
        self.anchor = str(anchor) if anchor else (ends[0] if len(ends) == 1 else self.end)
        release = params.get("release")
        self.release = str(release) if release else None
        target = str(params["target"])
        if target not in self.context.grasp_points:
            known = ", ".join(sorted(self.context.grasp_points)) or "none (no world)"
            raise CannotStart(f"target {target!r} is no grasp point of the world; known: {known}")
        self.target = self.context.grasp_points[target].as_matrix()
        self.core = WalkStep(
            f"{self.limb.name}.{self.end}",
            WalkParams(
                via=ViaMode(str(params.get("via", "arc"))),
                lift_m=float(params.get("lift", 0.1)),
                settle_m=float(params.get("settle", 0.002)),
                settle_rad=float(params.get("settle_angle", math.radians(1.0))),
                settle_speed_rad_s=float(params.get("settle_speed", 0.01)),
                release_after_s=float(params.get("release_after", 0.1)),
                timeout_s=None if params.get("timeout") is None else float(params["timeout"]),
                reach_m=self._reach(),
            ),
            release=None if self.release is None else f"{self.limb.name}.{self.release}",
        )
        self._timer = StepTimer()
        self._sent: np.ndarray | None = None
        self._stale_since: float | None = None

    def _reach(self) -> float | None:
        """How far apart [m] the moving end and the anchor can be; None when not known."""
        if self.anchor == self.end:
            return None
        description = self.limb.description
        joints = tuple(joint.name for joint in description.joints)
        try:
            reach = interface_reach(description.robot, joints, self.end, self.anchor)
        except (LimbtreeError, OSError):  # (a robot this machine does not describe)
            return None
        return reach if reach is not None and math.isfinite(reach) else None

    def step(self) -> Status:
        """Read the ends' world poses, step the core, send goal and latches on change."""
        assert self.core is not None
        now = self.context.clock()
        limb = self.limb
        moving = limb.interface_pose(self.end)
        anchor = limb.interface_pose(self.anchor)
        state = limb.state
        if moving is None or anchor is None or state is None:
            return self._waiting(now)
        self._stale_since = None
        latched = limb.latched_ends()
        result = self.core.step(
            WalkObservation(
                t=now,
                moving_pose=moving.as_matrix(),
                anchor_pose=anchor.as_matrix(),
                target_pose=self.target,
                qdot_norm=float(np.linalg.norm(state.dq)),
                moving_latched=self.end in latched,
                release_latched=self.release is not None and self.release in latched,
                anchor_latched=self.anchor in latched,
            ),
            self._timer.dt(now),
        )
        if result.unlatch_moving:
            limb.latch(self.end, False)
        if not _same(result.goal, self._sent):
            limb.impedance(
                self.end,
                None if result.goal is None else Pose.from_matrix(result.goal),
                _gains(self.params),
            )
            self._sent = None if result.goal is None else np.array(result.goal)
        if self.core.goal is not None and self.end == limb.end_effector:
            # The target frame the record keeps: the step's goal (the target interface, z
            # into its module; not the via points on the way), when the moving end is the
            # one the limb's state describes (the record has no pose of the other end).
            self.set_target(limb.name, Pose.from_matrix(self.core.goal))
        if result.latch_moving:
            limb.latch(self.end, True)
        if result.release is not None and self.release is not None:
            limb.latch(self.release, False)
        figures = plant_figures([limb])
        note_passivity(self.context, figures)
        self.report(_with_plant(result.telemetry, WalkStepTelemetry, figures))
        if result.metrics is not None:
            key = str(self.params.get("metrics", "walk"))
            steps = self.context.telemetry.metrics.setdefault(key, {"steps": []})
            steps["steps"].append({"node": self.name, **dict(result.metrics)})
        self.feedback_message = result.message
        return STATUS[result.outcome]

    def _waiting(self, now: float) -> Status:
        if self._stale_since is None:
            self._stale_since = now
        stale_timeout = float(self.params.get("stale_timeout", 5.0))
        if elapsed_reached(now, self._stale_since, stale_timeout):
            self.feedback_message = (
                f"{self.limb.name}: no fresh state with interfaces {self.end} and "
                f"{self.anchor} for {stale_timeout:g} s (is its agent up, is it a mujoco plant?)"
            )
            return Status.FAILURE
        self.feedback_message = "waiting for the limb's state"
        return Status.RUNNING

    def terminate(self, new_status: Status) -> None:
        """Interrupted mid-step: the moving end holds where it is."""
        if new_status is Status.INVALID and self.core is not None and self._sent is not None:
            self.limb.hold()


class ImpedanceMoveBehaviour(SkillBehaviour):
    """An interface to a goal, settled and held (``impedance_move``, seed 003 Sec. 5-B).

    The interface is the torso's ``E0`` (set through the first limb), or each limb's end.
    """

    node_type = "impedance_move"

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.limbs = [context.limb(n) for n in params["limbs"]]

    def start(self) -> None:
        """The goal is fixed at the first fresh state (it may be relative to the pose then)."""
        self.frame = str(self.params["frame"])
        self.cores: list[tuple[LimbHandle, ImpedanceMove]] = []
        self.goals: list[np.ndarray] = []
        self._timer = StepTimer()
        self._stale_since: float | None = None

    def _targets(self) -> list[LimbHandle]:
        # The base's interface is one frame, set through the first limb; an end is one per limb.
        return self.limbs[:1] if self.frame == "E0" else self.limbs

    def _plan(self, poses: list[Pose]) -> None:
        goal = self.params["goal"]
        offset = Pose.from_array(goal)
        params = MoveParams(
            settle_m=float(self.params.get("settle", 0.002)),
            settle_rad=float(self.params.get("settle_angle", math.radians(1.0))),
            hold_s=float(self.params.get("hold", 20.0)),
            hold_tol_m=self.params.get("hold_tol"),
            hold_tol_rad=self.params.get("hold_tol_angle"),
            timeout_s=None if self.params.get("timeout") is None else float(self.params["timeout"]),
        )
        for limb, pose in zip(self._targets(), poses, strict=True):
            if self.params.get("relative", True):
                target = Pose(
                    position=pose.position + offset.position,
                    quaternion=(offset @ Pose(quaternion=pose.quaternion)).quaternion,
                )
            else:
                target = offset
            self.goals.append(target.as_matrix())
            owner = limb.name.rsplit(".", 1)[0] if self.frame == "E0" else limb.name
            self.cores.append((limb, ImpedanceMove(f"{owner}.{self.frame}", params)))
            limb.impedance(self.frame, target, _gains(self.params))

    def step(self) -> Status:
        """Step each controlled frame's core; SUCCESS once all have held."""
        now = self.context.clock()
        poses = [limb.interface_pose(self.frame) for limb in self._targets()]
        if any(p is None for p in poses):
            if self._stale_since is None:
                self._stale_since = now
            stale_timeout = float(self.params.get("stale_timeout", 5.0))
            if elapsed_reached(now, self._stale_since, stale_timeout):
                self.feedback_message = f"no fresh pose of interface {self.frame}"
                return Status.FAILURE
            return Status.RUNNING
        self._stale_since = None
        if not self.cores:
            self._plan([p for p in poses if p is not None])
        dt = self._timer.dt(now)
        outcomes = []
        messages = []
        for (limb, core), goal, pose in zip(self.cores, self.goals, poses, strict=True):
            assert pose is not None
            result = core.step(MoveObservation(now, pose.as_matrix(), goal), dt)
            if self.frame == limb.end_effector:
                # The target frame the record keeps: for the frame the limb's state describes.
                self.set_target(limb.name, Pose.from_matrix(result.goal))
            outcomes.append(result.outcome)
            messages.append(result.message)
            figures = plant_figures(self.limbs if self.frame == "E0" else [limb])
            note_passivity(self.context, figures)
            self.report(_with_plant(result.telemetry, ImpedanceMoveTelemetry, figures))
            if result.metrics is not None:
                key = str(self.params.get("metrics", "impedance_move"))
                self.context.telemetry.metrics[key] = dict(result.metrics)
        self.feedback_message = "; ".join(messages)
        if Outcome.FAILURE in outcomes:
            return Status.FAILURE
        if all(o is Outcome.SUCCESS for o in outcomes):
            return Status.SUCCESS
        return Status.RUNNING

    def terminate(self, new_status: Status) -> None:
        """Interrupted: the frames hold where they are."""
        if new_status is Status.INVALID and getattr(self, "cores", None):
            for limb, _ in self.cores:
                limb.hold()
