"""Seed 004's leaves: ``climb_step`` (one leg's swing) and ``base_adjust`` (the support phase).

They wrap the stepping cores :class:`~limbtree.skills.climbing.step.SwingStep` and
:class:`~limbtree.skills.climbing.step.SupportStep` over the four legs of one robot on a
``mujoco`` plant with grippers (HubRobo). Each tick a leaf:

1. builds a :class:`~limbtree.skills.climbing.step.ClimbObservation` from the legs' states:
   the joints (in the floating tree's order), the base pose the plant reports
   (:meth:`LimbHandle.base_pose`), the footholds (each leg's ``palm`` interface in the
   world), the terrain's height function (the mission's world, :attr:`MissionContext.terrain`)
   and the grippers the plant reports detached since the node started;
2. steps the core, sends every leg its joint targets (``joint_position``) and the gripper
   open/close requests the core asks for;
3. reports typed telemetry: the core's figures plus the plant's (every leg's gripper force,
   the largest, the GIA margin of :func:`~limbtree.skills.climbing.stability.gia_margin`
   from the plant's centre of mass and its acceleration, the robot's momentum, the base's
   contacts with the terrain);
4. accumulates the run's figures in ``summary.json``'s ``metrics.<metrics>`` (default
   ``climb``): ``max_grip_force_n`` (on holding grippers, the force the 0.9 N limit is
   for), ``max_pull_force_n`` (of those, the ones pulling the gripper out: what the
   detachment rule compares), ``max_contact_force_n`` (a landing palm's too), ``min_gia_margin``,
   ``detachments``, ``collisions`` (tree ticks with the base touching the terrain) and each
   step's own figures.

A detachment the plant reports (a supporting gripper pulled past its holding force) fails
the leaf, the message naming the leg, the force and the time.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import py_trees

from limbtree.kinematics import Pose
from limbtree.kinematics.floating import FloatingTree
from limbtree.robots import load_robot
from limbtree.robots.floating import floating_tree
from limbtree.robots.grippers import PALM
from limbtree.robots.terrain import Terrain, TerrainSpec
from limbtree.skills.climbing import AlphaLimits, LrstWeights, PlanarLeg
from limbtree.skills.climbing.errors import ClimbingInputError
from limbtree.skills.climbing.plane import HEADING, RegressionPlane
from limbtree.skills.climbing.stability import gia_margin
from limbtree.skills.climbing.step import (
    SETTLE_SPEED_M_S,
    SETTLE_TIMEOUT_S,
    ClimbObservation,
    Foothold,
    GripLoss,
    StepResult,
    SupportParams,
    SupportStep,
    SupportTelemetry,
    SwingParams,
    SwingStep,
    SwingTelemetry,
)
from limbtree.skills.outcome import Outcome
from limbtree.transport.driver import GripperAction, LimbState
from limbtree.trees.behaviours.base import STATUS, CannotStart, SkillBehaviour
from limbtree.trees.clocks import elapsed_reached
from limbtree.trees.context import MissionContext
from limbtree.trees.limbs import LimbHandle

Status = py_trees.common.Status

#: The grippers' holding force when the plant's settings do not say [N] (seed 004: 0.9 N).
DEFAULT_HOLD_N = 0.9


def terrain_from_physics(physics: Mapping[str, Any]) -> Terrain | None:
    """The terrain of a ``mujoco`` plant's settings (``limbtree agent --physics``), or None.

    Args:
        physics: the settings' JSON object; its ``terrain`` is ``{size_m, cell_m, sigma_m,
            hurst, seed, rocks: [{at_m, height_m, radius_m}]}`` or absent/None.

    Raises:
        ValueError: naming the terrain's bad key (:meth:`TerrainSpec.from_mapping`).
    """
    raw = physics.get("terrain")
    if raw is None:
        return None
    return TerrainSpec.from_mapping(raw, "the plant's terrain").terrain


def physics_of(text: str) -> dict[str, Any]:
    """A plant's ``--physics`` JSON text as a map (empty for empty text)."""
    value = json.loads(text) if text else {}
    return dict(value) if isinstance(value, dict) else {}


@dataclass(frozen=True, eq=False)
class ClimbRobot:
    """The climbing model of the robot whose legs a leaf drives.

    Attributes:
        tree: the robot's floating tree (joints in its limbs' order).
        legs: mission limb name -> its closed-form leg (foot: the ``palm`` interface).
        limb_of: robot limb name (the plant's, ``leg_1``) -> mission limb name.
        mass_kg: the robot's mass [kg].
    """

    tree: FloatingTree
    legs: Mapping[str, PlanarLeg]
    limb_of: Mapping[str, str]
    mass_kg: float


def climb_robot(handles: Mapping[str, LimbHandle]) -> ClimbRobot:
    """The climbing model of the legs ``handles`` (mission limb name -> handle).

    The mission's limbs are matched to the robot's by their joint names.

    Raises:
        CannotStart: when the legs are not of one robot, a leg is not one of its limbs, or
            a leg has no gripper palm (``palm`` interface).
    """
    robots = {handle.description.robot for handle in handles.values()}
    if len(robots) != 1:
        raise CannotStart(
            f"the legs {', '.join(handles)} must be limbs of one robot, not of "
            f"{', '.join(sorted(robots))}"
        )
    spec = load_robot(robots.pop())
    tree = floating_tree(spec)
    by_joints = {limb.joint_names: limb for limb in spec.limbs}
    legs: dict[str, PlanarLeg] = {}
    limb_of: dict[str, str] = {}
    for name, handle in handles.items():
        joints = tuple(j.name for j in handle.description.joints)
        limb = by_joints.get(joints)
        if limb is None:
            raise CannotStart(f"limb {name} is no limb of robot {spec.name}")
        if PALM not in limb.interfaces:
            raise CannotStart(
                f"limb {name} ({spec.name} {limb.name}) has no gripper palm (interface "
                f"{PALM}): climb_step and base_adjust need legs with grippers"
            )
        legs[name] = PlanarLeg(
            tree,
            limb.name,
            f"{limb.name}.{PALM}",
            lower=limb.lower,
            upper=limb.upper,
            reference=np.array(limb.postures["home"], dtype=np.float64),
        )
        limb_of[limb.name] = name
    return ClimbRobot(tree, legs, limb_of, tree.total_mass)


@dataclass(frozen=True)
class PlantGrip:
    """The plant's climbing figures at one tick, as a leaf reports them.

    Attributes:
        grip_force_n: every leg's palm force magnitude [N], in the node's leg order (a
            holding gripper's, or a touching palm's as it lands).
        max_grip_force_n: the largest force on a holding gripper [N]: what the holding
            force limits and what tears a gripper off (seed 004's "gripper force").
        max_contact_force_n: the largest of all of them [N], a landing palm's included.
        supporting: which legs hold (gripper closed and anchored).
        gia_margin_m_s2: the GIA stability margin [m/s^2] (0 out of equilibrium; NaN when
            the plant reports no centre of mass).
        momentum_lin_kg_m_s: ``|L_lin|``, the robot's linear momentum [kg m/s].
        momentum_ang_kg_m2_s: ``|L_ang|`` about the base origin [kg m^2/s].
        base_contacts: the base's contacts with the terrain now.
    """

    grip_force_n: tuple[float, ...] = ()
    max_grip_force_n: float = 0.0
    max_contact_force_n: float = 0.0
    max_pull_force_n: float = 0.0
    supporting: tuple[bool, ...] = ()
    gia_margin_m_s2: float = math.nan
    momentum_lin_kg_m_s: float = math.nan
    momentum_ang_kg_m2_s: float = math.nan
    base_contacts: int = 0


@dataclass(frozen=True)
class ClimbStepTelemetry(PlantGrip, SwingTelemetry):
    """A swing's figures (:class:`SwingTelemetry`) and the plant's (:class:`PlantGrip`)."""

    skill: ClassVar[str] = "climb_step"


@dataclass(frozen=True)
class BaseAdjustTelemetry(PlantGrip, SupportTelemetry):
    """A support phase's figures (:class:`SupportTelemetry`) and the plant's."""

    skill: ClassVar[str] = "base_adjust"


def foothold_pose(foothold: Foothold, palm: Pose | None = None) -> Pose:
    """A foothold as a frame: at its position [m], z into the ground.

    z is against the footholds' plane normal, as a palm comes down. A swing places the palm,
    not its turn about that axis: x is only the palm's (``palm``, its pose at the swing's
    start) laid onto the plane; without a palm, the world's x (y when the normal lies
    along x).
    """
    ground = RegressionPlane(foothold.position, -foothold.normal)
    heading = palm.rotation[:, 0] if palm is not None else HEADING
    try:
        rotation = ground.frame(heading)
    except ClimbingInputError:  # the heading along the normal: any other will do
        rotation = ground.frame((0.0, 1.0, 0.0))
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = foothold.position
    return Pose.from_matrix(m)


def _with_plant(telemetry: Any, cls: type, figures: PlantGrip) -> Any:
    values = {f.name: getattr(telemetry, f.name) for f in dataclasses.fields(telemetry)}
    # (not dataclasses.asdict: it deep-copies every tuple, at every tick; these are frozen)
    values.update({f.name: getattr(figures, f.name) for f in dataclasses.fields(figures)})
    return cls(**values)


@dataclass(frozen=True, eq=False)
class LegReadings:
    """The legs' latest states, as the grippers' figures are made from them.

    Attributes:
        states: every leg's state, by mission limb name (in the node's ``legs`` order).
        footholds: every leg's palm position in the world [m].
        grips: every leg's ``detail["grip"]`` (empty for a leg that reports none), in order.
        detail: the plant's shared detail (the last leg's): ``detachments``, ``com``, ...
    """

    states: Mapping[str, LimbState]
    footholds: Mapping[str, np.ndarray]
    grips: tuple[Mapping[str, Any], ...]
    detail: Mapping[str, Any]


class GripBehaviour(SkillBehaviour):
    """What every leaf over a climbing robot's grippers shares.

    The legs (``legs``: every leg of one robot with grippers, on a ``mujoco`` plant), their
    climbing model, the plant's grip figures each tick (:class:`PlantGrip`) and the run's
    figures in ``summary.json``'s ``metrics.<metrics>`` (default ``climb``): ``climb_step``,
    ``base_adjust`` and ``grip_guard`` keep one block, written by this class only.
    """

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.handles = {str(n): context.limb(str(n)) for n in params["legs"]}
        self._robot: ClimbRobot | None = None
        self._stale_since: float | None = None

    @property
    def robot(self) -> ClimbRobot:
        """The legs' climbing model (built once per run for these legs, at the first start)."""
        if self._robot is None:
            key = ("climb_robot", tuple(self.handles))
            models = self.context.models
            if key not in models:
                models[key] = climb_robot(self.handles)
            self._robot = models[key]
        return self._robot

    def _read_legs(self) -> LegReadings | None:
        """Every leg's fresh state and palm, or None while one has none (stale, powered off)."""
        states: dict[str, LimbState] = {}
        footholds: dict[str, np.ndarray] = {}
        detail: Mapping[str, Any] = {}
        grips: list[Mapping[str, Any]] = []
        for name, handle in self.handles.items():
            state = handle.state
            palm = handle.interface_pose(PALM)
            if state is None or palm is None:
                return None
            states[name] = state
            footholds[name] = palm.position
            detail = state.detail or {}
            grip = detail.get("grip")
            grips.append(grip if isinstance(grip, Mapping) else {})
        return LegReadings(states, footholds, tuple(grips), detail)

    def _leg_name(self, leg: str) -> str:
        """The mission's name of the plant's leg ``leg`` (``leg_1`` -> ``hub.leg_1``)."""
        return self.robot.limb_of.get(leg, leg)

    # ---- the plant's grip figures and the run's
    def _plant(
        self,
        footholds: Mapping[str, np.ndarray],
        grips: Sequence[Mapping[str, Any]],
        detail: Mapping[str, Any],
    ) -> PlantGrip:
        forces = tuple(float(np.linalg.norm(g.get("force_n") or (0.0, 0.0, 0.0))) for g in grips)
        holding = tuple(bool(g.get("supporting", False)) for g in grips)
        pull = max(
            (f for f, h, g in zip(forces, holding, grips, strict=True) if h and self._pulls(g)),
            default=0.0,
        )
        margin = math.nan
        com = detail.get("com")
        if com is not None:
            physics = self.context.physics
            gravity = physics.get("gravity") or (0.0, 0.0, 0.0)
            contact = physics.get("contact") or {}
            margin = gia_margin(
                np.array(list(footholds.values())),
                holding,
                com,
                self.robot.mass_kg,
                hold_force_n=float(contact.get("grip_force_n", DEFAULT_HOLD_N)),
                gravity=gravity,
                com_acceleration=detail.get("com_acceleration") or (0.0, 0.0, 0.0),
            ).margin_m_s2
        momentum = detail.get("momentum")
        lin = ang = math.nan
        if momentum is not None:
            lin = float(np.linalg.norm(momentum[:3]))
            ang = float(np.linalg.norm(momentum[3:6]))
        contacts = detail.get("contacts") or {}
        return PlantGrip(
            grip_force_n=forces,
            max_grip_force_n=max(
                (f for f, h in zip(forces, holding, strict=True) if h), default=0.0
            ),
            max_contact_force_n=max(forces, default=0.0),
            max_pull_force_n=pull,
            supporting=holding,
            gia_margin_m_s2=margin,
            momentum_lin_kg_m_s=lin,
            momentum_ang_kg_m2_s=ang,
            base_contacts=int(contacts.get("count", 0)),
        )

    def _pulls(self, grip: Mapping[str, Any]) -> bool:
        """Whether a gripper's force pulls it out of the terrain (the plant's rule, grippers.py)."""
        terrain, anchor, force = self.context.terrain, grip.get("anchor"), grip.get("force_n")
        if terrain is None or anchor is None or force is None:
            return False
        normal = terrain.normal(anchor[0], anchor[1])
        return float(np.dot(force, normal)) < 0.0

    # ---- the run's figures
    def _metrics(self) -> dict[str, Any]:
        key = str(self.params.get("metrics", "climb"))
        return self.context.telemetry.metrics.setdefault(
            key,
            {
                "max_grip_force_n": 0.0,
                "max_contact_force_n": 0.0,
                "max_pull_force_n": 0.0,
                "min_gia_margin": math.inf,
                "detachments": 0,
                "detached": [],
                "collisions": 0,
                "collision_substeps": 0,
                "steps": [],
            },
        )

    def _note_run(self, detail: Mapping[str, Any]) -> None:
        metrics = self._metrics()
        detachments = detail.get("detachments") or ()
        if len(detachments) > metrics["detachments"]:
            metrics["detachments"] = len(detachments)
            metrics["detached"] = [
                {
                    "leg": self._leg_name(str(d["leg"])),
                    "t_s": float(d["t_s"]),
                    "force_n": float(d["force_n"]),
                }
                for d in detachments
            ]
            # the force that tore a gripper off (the plant checks every 1 ms substep) is the
            # largest a holding gripper saw, though no tick's sample caught it
            torn = max(float(d["force_n"]) for d in detachments)
            for key in ("max_grip_force_n", "max_pull_force_n", "max_contact_force_n"):
                metrics[key] = max(metrics[key], torn)
        contacts = detail.get("contacts") or {}
        metrics["collision_substeps"] = max(
            metrics["collision_substeps"], int(contacts.get("ticks", 0))
        )

    def _note_tick(self, figures: PlantGrip) -> None:
        metrics = self._metrics()
        metrics["max_grip_force_n"] = max(metrics["max_grip_force_n"], figures.max_grip_force_n)
        metrics["max_contact_force_n"] = max(
            metrics["max_contact_force_n"], figures.max_contact_force_n
        )
        metrics["max_pull_force_n"] = max(metrics["max_pull_force_n"], figures.max_pull_force_n)
        if math.isfinite(figures.gia_margin_m_s2):
            metrics["min_gia_margin"] = min(metrics["min_gia_margin"], figures.gia_margin_m_s2)
        if figures.base_contacts:
            metrics["collisions"] += 1

    def _waiting(self, now: float) -> Status:
        if self._stale_since is None:
            self._stale_since = now
        stale_timeout = float(self.params.get("stale_timeout", 5.0))
        if elapsed_reached(now, self._stale_since, stale_timeout):
            self.feedback_message = (
                f"no fresh state with a {PALM} interface from every leg of "
                f"{', '.join(self.handles)} for {stale_timeout:g} s (a mujoco plant with "
                "grippers?)"
            )
            return Status.FAILURE
        self.feedback_message = "waiting for the legs' states"
        return Status.RUNNING


class ClimbBehaviour(GripBehaviour):
    """What ``climb_step`` and ``base_adjust`` share: observing, commanding, reporting."""

    telemetry_class: ClassVar[type] = ClimbStepTelemetry

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name, context, params)
        self.core: SwingStep | SupportStep | None = None
        #: The swing's foothold and its target frame (made once per swing, from the palm).
        self._foothold: tuple[Foothold, Pose] | None = None

    def make_core(self) -> SwingStep | SupportStep:
        """The stepping core of this node (a subclass's)."""
        raise NotImplementedError

    def start(self) -> None:
        """A new core; it plans at the first tick with fresh states."""
        self.core = self.make_core()
        self._since: float | None = None
        self._stale_since = None

    # ---- observing
    def _observe(self, now: float) -> tuple[ClimbObservation, PlantGrip] | None:
        robot = self.robot
        legs = self._read_legs()
        if legs is None:
            return None
        q = np.zeros(robot.tree.n)
        for name, state in legs.states.items():
            q[robot.legs[name].columns] = state.q
        first = next(iter(self.handles.values()))
        base = first.base_pose().as_matrix()
        if self._since is None:
            self._since = float(next(iter(legs.states.values())).t)
        detail = legs.detail
        lost = tuple(
            GripLoss(self._leg_name(str(d["leg"])), float(d["force_n"]), float(d["t_s"]))
            for d in detail.get("detachments") or ()
            if float(d["t_s"]) >= self._since
        )
        self._note_run(detail)
        observation = ClimbObservation(
            now, q, base, legs.footholds, terrain=self._terrain_function(), detached=lost
        )
        return observation, self._plant(legs.footholds, legs.grips, detail)

    def _terrain_function(self) -> Any:
        terrain = self.context.terrain
        return None if terrain is None else terrain.height

    # ---- ticking
    def step(self) -> Status:
        """Observe, step the core, command the legs and grippers, report."""
        core = self.core
        assert core is not None
        now = self.context.clock()
        seen = self._observe(now)
        if seen is None:
            return self._waiting(now)
        self._stale_since = None
        observation, figures = seen
        try:
            result = core.step(observation, 0.0)
        except ClimbingInputError as exc:
            raise CannotStart(f"{self.node_type}: {exc}") from None
        if result.foothold is not None:
            # The target frame the record keeps: the palm on its foothold.
            leg = self.handles[result.foothold.leg]
            if self._foothold is None or self._foothold[0] is not result.foothold:
                if (off := self._off_terrain(result.foothold)) is not None:
                    for handle in self.handles.values():
                        handle.hold()
                    self.feedback_message = off
                    return Status.FAILURE
                self._foothold = (result.foothold, foothold_pose(result.foothold, leg.pose()))
            self.set_target(leg.name, self._foothold[1])
        self._command(result)
        self._note_tick(figures)
        self.report(_with_plant(result.telemetry, self.telemetry_class, figures))
        if result.metrics is not None:
            self._metrics()["steps"].append(
                {"node": self.name, "t_s": now, **_plain(dict(result.metrics))}
            )
        self.feedback_message = result.message
        return STATUS[result.outcome]

    def _off_terrain(self, foothold: Foothold) -> str | None:
        """Why a swing's foothold cannot be gripped (it is past the terrain's edge), or None.

        The terrain's height goes on flat past its grid, so a plan reaches there as well, but
        the plant's ground and its grippers end at the grid: a leg put down there holds
        nothing, and the run failed later, at another leg, for a foot "out of reach".
        """
        terrain = self.context.terrain
        x, y = (float(v) for v in foothold.position[:2])
        if terrain is None or terrain.covers(x, y):
            return None
        return (
            f"swing of {self.robot.limb_of.get(foothold.leg, foothold.leg)}: its next foothold "
            f"({x * 1e3:.0f}, {y * 1e3:.0f}) mm is past the terrain's edge "
            f"({terrain.extent_text()}): there is no ground there to grip; make the terrain "
            "larger (world.terrain.size_mm) or the climb shorter"
        )

    def _command(self, result: StepResult) -> None:
        for name in result.open_grippers:
            self.handles[name].gripper(GripperAction.OPEN)
        if result.outcome is Outcome.FAILURE:
            for handle in self.handles.values():
                handle.hold()
            return
        for name, targets in result.joint_targets.items():
            self.handles[name].command_joints(targets)
        for name in result.close_grippers:
            self.handles[name].gripper(GripperAction.CLOSE)

    def terminate(self, new_status: Status) -> None:
        """Interrupted mid-step: every leg holds where it is."""
        if new_status is Status.INVALID and self.core is not None and self.core.phase is not None:
            for handle in self.handles.values():
                handle.hold()


def _plain(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            value = None
        out[key] = value
    return out


class ClimbStepBehaviour(ClimbBehaviour):
    """One leg's swing to its next foothold (``climb_step``, seed 004)."""

    node_type = "climb_step"
    telemetry_class = ClimbStepTelemetry

    def make_core(self) -> SwingStep:
        """A :class:`SwingStep` with the node's parameters."""
        p = self.params
        swing = str(p["swing"])
        if swing not in self.handles:
            raise CannotStart(f"swing leg {swing} is not one of legs {', '.join(self.handles)}")
        alpha = p.get("alpha")
        try:
            params = SwingParams(
                planner=str(p.get("planner", "ramp")),  # type: ignore[arg-type]
                swing_s=float(p.get("duration", 1.75)),
                stride_m=float(p.get("stride", 0.08)),
                step_height_m=float(p.get("step_height", 0.04)),
                weights=LrstWeights(
                    float(p.get("c1", 7.0)), float(p.get("c2", 1.75)), float(p.get("c3", 30.0))
                ),
                alpha=None if alpha is None else float(alpha),
                alpha_limits=AlphaLimits(
                    float(p.get("w_min_m3", 1.2e-3)), float(p.get("w_max_m3", 2.5e-3))
                ),
                settle_speed_m_s=float(p.get("settle_speed", SETTLE_SPEED_M_S)),
                settle_timeout_s=float(p.get("settle_timeout", SETTLE_TIMEOUT_S)),
                normal_ends=str(p.get("swing_ends", "normal")) == "normal",
            )
            return SwingStep(
                self.robot.tree, self.robot.legs, swing, params, clock=time.perf_counter
            )
        except ClimbingInputError as exc:
            raise CannotStart(f"climb_step: {exc}") from None


class BaseAdjustBehaviour(ClimbBehaviour):
    """The support phase: the base to its support pose, every leg holding (``base_adjust``)."""

    node_type = "base_adjust"
    telemetry_class = BaseAdjustTelemetry

    def make_core(self) -> SupportStep:
        """A :class:`SupportStep` with the node's parameters."""
        p = self.params
        try:
            params = SupportParams(
                planner=str(p.get("planner", "ramp")),  # type: ignore[arg-type]
                support_s=float(p.get("duration", 1.75)),
                h_n_m=float(p.get("h_n", 0.11)),
                h_add_m=float(p.get("h_add", 0.02)),
            )
            return SupportStep(self.robot.tree, self.robot.legs, params, clock=time.perf_counter)
        except ClimbingInputError as exc:
            raise CannotStart(f"base_adjust: {exc}") from None


__all__ = [
    "PALM",
    "BaseAdjustBehaviour",
    "BaseAdjustTelemetry",
    "ClimbBehaviour",
    "ClimbRobot",
    "ClimbStepBehaviour",
    "ClimbStepTelemetry",
    "GripBehaviour",
    "LegReadings",
    "PlantGrip",
    "climb_robot",
    "physics_of",
    "terrain_from_physics",
]
