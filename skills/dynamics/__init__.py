"""Seed 003's dynamics cores: the unified passivity-based controller and the skills over it.

* :class:`UnifiedImpedance`: eq. 8 in its generic form, the 1 kHz torque law a plant runs
  (``unified.py``).
* :class:`WalkStep`: one SI-to-SI step of an arm end, at the tree's rate (``walk.py``).
* :class:`ImpedanceMove`: a frame (the torso, an arm tip) to a goal and held (``move.py``).

None of them imports MuJoCo or a plant: the controller reads a floating tree's poses and
Jacobians (:class:`FloatingTreeModel`), the skills read poses and latch states.
"""

from limbtree.skills.dynamics.errors import (
    ConstraintRankError,
    DynamicsError,
    DynamicsInputError,
    UnknownFrameError,
)
from limbtree.skills.dynamics.move import (
    ImpedanceMove,
    MoveObservation,
    MoveParams,
    MovePhase,
    MoveResult,
    MoveTelemetry,
)
from limbtree.skills.dynamics.unified import (
    NULL_SPACE_DAMPING,
    FloatingTreeModel,
    ImpedanceGains,
    ImpedanceInput,
    ImpedanceStep,
    TaskFrame,
    UnifiedImpedance,
    checked_transform,
    nearest_symmetric_goal,
    pose_error,
    task_potential_and_wrench,
    trusted_input,
)
from limbtree.skills.dynamics.walk import (
    ARC_FRACTIONS,
    ViaMode,
    WalkObservation,
    WalkParams,
    WalkPhase,
    WalkResult,
    WalkStep,
    WalkTelemetry,
    arc_points,
    lift_over_down_points,
)

__all__ = [
    "ARC_FRACTIONS",
    "NULL_SPACE_DAMPING",
    "ConstraintRankError",
    "DynamicsError",
    "DynamicsInputError",
    "FloatingTreeModel",
    "ImpedanceGains",
    "ImpedanceInput",
    "ImpedanceMove",
    "ImpedanceStep",
    "MoveObservation",
    "MoveParams",
    "MovePhase",
    "MoveResult",
    "MoveTelemetry",
    "TaskFrame",
    "UnifiedImpedance",
    "UnknownFrameError",
    "ViaMode",
    "WalkObservation",
    "WalkParams",
    "WalkPhase",
    "WalkResult",
    "WalkStep",
    "WalkTelemetry",
    "arc_points",
    "checked_transform",
    "lift_over_down_points",
    "nearest_symmetric_goal",
    "pose_error",
    "task_potential_and_wrench",
    "trusted_input",
]
