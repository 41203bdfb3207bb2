"""The skills' numerical cores, as plain stepping objects: no I/O, no py_trees, no sockets."""

from limbtree.skills.align import Align, AlignResult, AlignTelemetry
from limbtree.skills.align_v1 import AlignV1, AlignV1Params, AlignV1Step, AlignV1Telemetry
from limbtree.skills.align_v2 import AlignV2, AlignV2Params, AlignV2Step, AlignV2Telemetry
from limbtree.skills.alignment import (
    AlignmentParameterError,
    AlignObservation,
    AlignParams,
    AlignPhase,
    PoseError,
    pose_error,
)
from limbtree.skills.core import Core, CoreResult, StepTimer
from limbtree.skills.outcome import Outcome
from limbtree.skills.spaces import JointSpace, PoseSpace, Space, nearest_parameter
from limbtree.skills.sync import (
    LimbDown,
    MissingStates,
    Mode,
    Recovery,
    SyncConfig,
    SyncMove,
    SyncObservation,
    SyncStep,
    SyncTelemetry,
    offset_pose,
)
from limbtree.skills.telemetry import Figures, SkillTelemetry
from limbtree.skills.velocity import SpeedSegment, VelocityMove

__all__ = [
    "Align",
    "AlignObservation",
    "AlignParams",
    "AlignPhase",
    "AlignResult",
    "AlignTelemetry",
    "AlignV1",
    "AlignV1Params",
    "AlignV1Step",
    "AlignV1Telemetry",
    "AlignV2",
    "AlignV2Params",
    "AlignV2Step",
    "AlignV2Telemetry",
    "AlignmentParameterError",
    "Core",
    "CoreResult",
    "Figures",
    "JointSpace",
    "LimbDown",
    "MissingStates",
    "Mode",
    "Outcome",
    "PoseError",
    "PoseSpace",
    "Recovery",
    "SkillTelemetry",
    "Space",
    "SpeedSegment",
    "StepTimer",
    "SyncConfig",
    "SyncMove",
    "SyncObservation",
    "SyncStep",
    "SyncTelemetry",
    "VelocityMove",
    "nearest_parameter",
    "offset_pose",
    "pose_error",
]
