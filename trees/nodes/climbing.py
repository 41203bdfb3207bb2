"""Seed 004's leaf node types: ``climb_step``, ``base_adjust`` and ``grip_guard``.

They work on the four legs of a climbing robot with grippers (HubRobo) on a ``mujoco`` plant
whose world holds a terrain (``world: {terrain: ...}``): ``climb_step`` swings one leg to
its next foothold (baseline: ClimbLab's cubic; ramp: LRST and the momentum distribution),
``base_adjust`` moves the base to the support pose with every leg holding
(docs/climbing.md); ``grip_guard`` commands nothing and fails as soon as a gripper of its
legs stops holding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from limbtree.skills.climbing.step import SETTLE_SPEED_M_S, SETTLE_TIMEOUT_S
from limbtree.trees.behaviours.climbing import BaseAdjustBehaviour, ClimbStepBehaviour
from limbtree.trees.behaviours.grip_guard import GripGuardBehaviour
from limbtree.trees.mission.model import NodeModel, PlantKind
from limbtree.trees.mission.nodes import NodeKind, NodeSpec
from limbtree.trees.mission.units import MM, MM_S, S
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    LimbList,
    LimbName,
    ParamSpec,
    Quantity,
    Text,
)
from limbtree.trees.nodes.params import POSITIVE_S, STALE_TIMEOUT
from limbtree.trees.nodes.skills import leaf

#: The planners of seed 004.
PLANNERS: Final = ("baseline", "ramp")
#: How RAMP's swing leaves and reaches its footholds (``swing_ends``).
SWING_ENDS: Final = ("normal", "free")

_LEGS = ParamSpec(
    "legs", LimbList(), REQUIRED, "every leg of the climbing robot (all are commanded)"
)
_PLANNER = ParamSpec(
    "planner",
    Choice(PLANNERS),
    "ramp",
    "baseline (ClimbLab's fixed swing, base held, level base) or ramp (LRST, momentum "
    "distribution, the footholds' plane raised by eq. 1)",
)
_METRICS = ParamSpec(
    "metrics", Text(), "climb", "summary.json metrics key of the run's grip and margin figures"
)


def _check_climb_step(
    params: Mapping[str, Any], children: tuple[NodeModel, ...], report: Callable[[str, str], None]
) -> Mapping[str, Any]:
    legs = list(params.get("legs") or ())
    swing = params.get("swing")
    if swing is not None and legs and swing not in legs:
        report("swing", f"swing leg {swing} is not one of legs ({', '.join(legs)})")
    low, high = params.get("w_min_m3"), params.get("w_max_m3")
    if low is not None and high is not None and not low < high:
        report("w_max_m3", f"w_max_m3 ({high:g}) must exceed w_min_m3 ({low:g}): eq. 6 divides")
    return params


#: What the climbing nodes need of a plant (:attr:`NodeSpec.plants_why`).
_CLIMBS: Final = "plans on the contact forces of legs whose grippers hold a terrain (seed 004)"


CLIMB_STEP: Final = NodeSpec(
    "climb_step",
    NodeKind.LEAF,
    (
        _LEGS,
        ParamSpec("swing", LimbName(), REQUIRED, "the leg that swings (one of legs)"),
        _PLANNER,
        ParamSpec(
            "stride",
            Quantity(MM, low=0, low_open=True),
            80.0,
            "how far the foot moves along the footholds' plane, in world x (the paper: 80 mm)",
        ),
        ParamSpec(
            "step_height",
            Quantity(MM, low=0),
            40.0,
            "h_sw: the swing's apex above the higher foothold (the paper: 40 mm)",
        ),
        ParamSpec("duration", POSITIVE_S, 1.75, "T_sw, the swing's duration (T = 14 s / 8)"),
        ParamSpec("c1", Quantity(low=0), 7.0, "eq. 2's weight on max |dL_lin/dt| [1/N] (ramp)"),
        ParamSpec(
            "c2", Quantity(low=0), 1.75, "eq. 2's weight on max |dL_ang/dt| [1/(N m)] (ramp)"
        ),
        ParamSpec("c3", Quantity(low=0), 30.0, "eq. 2's weight on the apex error [1/m] (ramp)"),
        ParamSpec(
            "swing_ends",
            Choice(SWING_ENDS),
            "normal",
            "normal: LRST's free points over the footholds, so the foot lifts off and touches "
            "down along the footholds' plane normal (not in the paper; lower peaks, "
            "docs/climbing.md); free: the paper's eq. 2, its two free points anywhere (ramp)",
        ),
        ParamSpec(
            "alpha",
            Quantity(low=0, high=1),
            None,
            "a fixed share of the swing's momentum the base takes up (Sec. 4: 0.3); none: "
            "eq. 6's manipulability weight (ramp)",
        ),
        ParamSpec(
            "w_min_m3",
            Quantity(low=0),
            1.2e-3,
            "eq. 6's w_min [m^3]: alpha is 0 at or below it",
        ),
        ParamSpec(
            "w_max_m3",
            Quantity(low=0, low_open=True),
            2.5e-3,
            "eq. 6's w_max [m^3]: alpha is 1 at or above it",
        ),
        ParamSpec(
            "settle_speed",
            Quantity(MM_S, low=0),
            SETTLE_SPEED_M_S * 1000.0,
            "after the plan, the gripper closes once the palm is this slow (not in the paper, "
            "both planners; 5 mm/s lowers both planners' peaks; 0: when the plan ends)",
        ),
        ParamSpec(
            "settle_timeout",
            Quantity(S, low=0),
            SETTLE_TIMEOUT_S,
            "the gripper closes after this long past the plan's end, whatever the palm does",
        ),
        _METRICS,
        STALE_TIMEOUT,
    ),
    (0, 0),
    "swing one leg of a climbing robot to its next foothold, the others holding (seed 004)",
    check=_check_climb_step,
    build=leaf(ClimbStepBehaviour),
    commands=("legs",),
    plants=(PlantKind.MUJOCO,),
    plants_why=_CLIMBS,
)

BASE_ADJUST: Final = NodeSpec(
    "base_adjust",
    NodeKind.LEAF,
    (
        _LEGS,
        _PLANNER,
        ParamSpec("duration", POSITIVE_S, 1.75, "the support phase's duration"),
        ParamSpec(
            "h_n",
            Quantity(MM, low=0),
            110.0,
            "the base origin's height above the footholds (HubRobo: 110 mm)",
        ),
        ParamSpec(
            "h_add",
            Quantity(MM, low=0),
            20.0,
            "eq. 1's clearance of the base's lower face over the terrain (ramp)",
        ),
        _METRICS,
        STALE_TIMEOUT,
    ),
    (0, 0),
    "move a climbing robot's base to its support pose, every leg holding (seed 004)",
    build=leaf(BaseAdjustBehaviour),
    commands=("legs",),
    plants=(PlantKind.MUJOCO,),
    plants_why=_CLIMBS,
)

GRIP_GUARD: Final = NodeSpec(
    "grip_guard",
    NodeKind.LEAF,
    (
        ParamSpec(
            "legs",
            LimbList(),
            REQUIRED,
            "the legs whose grippers must hold (legs of one robot with grippers); read, "
            "not commanded",
        ),
        ParamSpec(
            "duration",
            POSITIVE_S,
            None,
            "SUCCESS after this long, every gripper holding; none: RUNNING until halted (a "
            "guard beside the nodes it guards, in a parallel)",
        ),
        _METRICS,
        STALE_TIMEOUT,
    ),
    (0, 0),
    "FAILURE as soon as a gripper of legs stops holding: torn off or let go (seed 004)",
    build=leaf(GripGuardBehaviour),
    plants=(PlantKind.MUJOCO,),
    plants_why="reads the grippers that hold its legs to a terrain (seed 004's contact law)",
)

#: Seed 004's leaf node types.
CLIMBING: Final = (CLIMB_STEP, BASE_ADJUST, GRIP_GUARD)
