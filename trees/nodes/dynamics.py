"""Seed 003's leaf node types: ``walk_step``, ``impedance_move``, ``latch``, ``unlatch``.

They drive limbs of a ``mujoco`` plant (``robots: {..., plant: mujoco}``): the plant runs the
unified passivity-based controller (seed 003 eq. 8) at 1 kHz; these nodes set its goals,
gains and latches (docs/dynamics.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from limbtree.transport.schema import IMPEDANCE_GAINS
from limbtree.trees.behaviours.dynamics import (
    ImpedanceMoveBehaviour,
    LatchBehaviour,
    UnlatchBehaviour,
    WalkStepBehaviour,
)
from limbtree.trees.mission.model import NodeModel, PlantKind
from limbtree.trees.mission.nodes import NodeKind, NodeSpec
from limbtree.trees.mission.source import INVALID, Item
from limbtree.trees.mission.units import DEG_S, MM, S
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    Flag,
    LimbName,
    ParamSpec,
    PoseSpec,
    Quantity,
    Text,
    ValueContext,
    ValueType,
)
from limbtree.trees.nodes.params import ANGLE_TOLERANCE, LIMBS, POSITIVE_S, STALE_TIMEOUT
from limbtree.trees.nodes.skills import leaf

#: The interfaces a node may name: a limb's ends, or its robot base's.
INTERFACES: Final = ("E1", "E2", "E0")


@dataclass(frozen=True)
class Gains(ValueType):
    """The controller's gains for the frames a node drives.

    A map of ``k_n_per_m``, ``k_nm_per_rad`` (stiffness, > 0), ``d_ns_per_m``,
    ``d_nms_per_rad``, ``null_nms_per_rad`` (damping, >= 0); the ones not given keep the
    plant's defaults.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return f"a map of {', '.join(IMPEDANCE_GAINS)} to numbers"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        values: dict[str, float] = {}
        for entry in entries:
            child = ctx.reader.child(item, entry.node)
            if child is None:
                return INVALID
            if entry.key not in IMPEDANCE_GAINS:
                return ctx.reader.error(
                    child,
                    f"{key}: unknown gain {entry.key}; valid gains: {', '.join(IMPEDANCE_GAINS)}",
                )
            stiffness = entry.key.startswith("k_")
            number = Quantity(low=0.0, low_open=stiffness).read(ctx, child, f"{key}.{entry.key}")
            if number is INVALID:
                return INVALID
            values[entry.key] = float(number)
        return MappingProxyType(values)


def _settle_speed() -> ParamSpec:
    return ParamSpec(
        "settle_speed",
        Quantity(DEG_S, low=0, low_open=True),
        math.degrees(0.01),
        "engage only when the limb's joint speed (norm) is below this (the brief: 0.01 rad/s)",
    )


def _check_walk_step(
    params: Mapping[str, Any], children: tuple[NodeModel, ...], report: Callable[[str, str], None]
) -> Mapping[str, Any]:
    """A step's ``release`` (and an arc's ``anchor``) name an end other than the moving one."""
    end = params.get("end")
    if end is None:
        return params
    other = next((e for e in INTERFACES[:2] if e != end), end)
    if params.get("anchor") == end and params.get("via") == "arc":
        report(
            "anchor",
            f"anchor {end} is the end that moves (end: {end}): the arc turns about a latched "
            f"end, not the moving one; give anchor: {other}, or leave anchor out (the "
            "limb's other end)",
        )
    if params.get("release") == end:
        report(
            "release",
            f"release {end} is the end that moves (end: {end}): the step would let go of the "
            f"end it has just latched; give release: {other} (a 1-arm walk), or leave "
            "release out to keep both ends latched",
        )
    return params


WALK_STEP: Final = NodeSpec(
    "walk_step",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb whose end steps (a mujoco plant's)"),
        ParamSpec("end", Choice(INTERFACES[:2]), REQUIRED, "the end that moves, then latches"),
        ParamSpec("target", Text(), REQUIRED, "where it latches: MODULE/GRASP_POINT of the world"),
        ParamSpec(
            "anchor",
            Choice(INTERFACES[:2]),
            None,
            "the latched end the arc turns about; none: the limb's other end",
        ),
        ParamSpec(
            "release",
            Choice(INTERFACES[:2]),
            None,
            "the end released after the hold (a 1-arm walk: the other end); none: keep it",
        ),
        ParamSpec(
            "via",
            Choice(("arc", "lift_over_down", "none")),
            "arc",
            "via points: an arc about the anchor, lift-over-down, or none (the paper's plain "
            "step, which can stall in a local minimum)",
        ),
        ParamSpec("lift", Quantity(MM, low=0), 100.0, "how far the via points are raised"),
        ParamSpec(
            "settle",
            Quantity(MM, low=0, low_open=True),
            2.0,
            "engage within this of the target (the paper: 2 mm)",
        ),
        ParamSpec(
            "settle_angle",
            ANGLE_TOLERANCE,
            1.0,
            "... and within this angle (the paper: 1 deg)",
        ),
        _settle_speed(),
        ParamSpec(
            "release_after",
            Quantity(S, low=0),
            0.1,
            "both ends latched this long before the release (the paper: 27 s -> 27.1 s)",
        ),
        ParamSpec("gains", Gains(), None, "the moving end's gains; none: the plant's"),
        ParamSpec("timeout", POSITIVE_S, 60.0, "FAILURE when the step takes longer"),
        ParamSpec("metrics", Text(), "walk", "summary.json metrics key of the steps' figures"),
        STALE_TIMEOUT,
    ),
    (0, 0),
    "step a limb's end from one standard interface to another (seed 003 Sec. 5-A, 5-C)",
    check=_check_walk_step,
    build=leaf(WalkStepBehaviour),
    commands=("limb",),
    plants=(PlantKind.MUJOCO,),
    plants_why="latches standard interfaces and drives them to impedance goals (seed 003)",
)

IMPEDANCE_MOVE: Final = NodeSpec(
    "impedance_move",
    NodeKind.LEAF,
    (
        LIMBS,
        ParamSpec(
            "frame",
            Choice(INTERFACES),
            "E0",
            "E0: the robot base's interface (the torso), set through the first limb; E1/E2: "
            "each limb's end",
        ),
        ParamSpec("goal", PoseSpec(), REQUIRED, "the goal, or the offset from now (relative)"),
        ParamSpec(
            "relative",
            Flag(),
            True,
            "goal is an offset from the frame's pose at the start: translation added in the "
            "world, rotation applied in the world",
        ),
        ParamSpec(
            "settle",
            Quantity(MM, low=0, low_open=True),
            2.0,
            "settled within this (the paper's steady state: < 2 mm)",
        ),
        ParamSpec(
            "settle_angle",
            ANGLE_TOLERANCE,
            1.0,
            "... and this angle (the paper: < 1 deg)",
        ),
        ParamSpec(
            "hold",
            Quantity(S, low=0),
            20.0,
            "held this long once settled; the steady-state error is measured over it",
        ),
        ParamSpec("hold_tol", Quantity(MM, low=0, low_open=True), None, "FAILURE beyond this"),
        ParamSpec("hold_tol_angle", ANGLE_TOLERANCE, None, "... or this"),
        ParamSpec("gains", Gains(), None, "the frame's gains; none: the plant's"),
        ParamSpec("timeout", POSITIVE_S, 60.0, "FAILURE when it has not settled by then"),
        ParamSpec("metrics", Text(), "impedance_move", "summary.json metrics key"),
        STALE_TIMEOUT,
    ),
    (0, 0),
    "drive an interface (the torso, or arm ends) to a goal and hold it (seed 003 Sec. 5-B)",
    build=leaf(ImpedanceMoveBehaviour),
    commands=("limbs",),
    plants=(PlantKind.MUJOCO,),
    plants_why="drives standard interfaces to impedance goals (seed 003 eq. 8)",
)


def _latch_spec(name: str, doc: str, build: Any) -> NodeSpec:
    return NodeSpec(
        name,
        NodeKind.LEAF,
        (
            ParamSpec("limb", LimbName(), REQUIRED, "the limb (a mujoco plant's)"),
            ParamSpec("end", Choice(INTERFACES), REQUIRED, "the interface"),
            ParamSpec("timeout", POSITIVE_S, 1.0, "FAILURE when the plant has not done it by then"),
        ),
        (0, 0),
        doc,
        build=leaf(build),
        commands=("limb",),
        plants=(PlantKind.MUJOCO,),
        plants_why="latches and releases standard interfaces (seed 003)",
    )


LATCH: Final = _latch_spec(
    "latch",
    "latch a standard interface to the grasp point it is at (within 5 mm / 3 deg)",
    LatchBehaviour,
)
UNLATCH: Final = _latch_spec("unlatch", "release a standard interface", UnlatchBehaviour)

#: Seed 003's leaf node types.
DYNAMICS: Final = (WALK_STEP, IMPEDANCE_MOVE, LATCH, UNLATCH)
