"""The skills' numerical cores, as plain stepping objects: no I/O, no py_trees, no sockets."""

from limbtree.skills.align_v1 import AlignV1, AlignV1Params, AlignV1Step
from limbtree.skills.align_v2 import AlignV2, AlignV2Params, AlignV2Step
from limbtree.skills.alignment import (
    AlignmentParameterError,
    AlignObservation,
    AlignParams,
    AlignPhase,
    PoseError,
    pose_error,
)
from limbtree.skills.outcome import Outcome
from limbtree.skills.spaces import JointSpace, PoseSpace, Space, nearest_parameter
from limbtree.skills.sync import Mode, Recovery, SyncConfig, SyncMove, SyncStep
from limbtree.skills.velocity import SpeedSegment, VelocityMove

__all__ = [
    "AlignObservation",
    "AlignParams",
    "AlignPhase",
    "AlignV1",
    "AlignV1Params",
    "AlignV1Step",
    "AlignV2",
    "AlignV2Params",
    "AlignV2Step",
    "AlignmentParameterError",
    "JointSpace",
    "Mode",
    "Outcome",
    "PoseError",
    "PoseSpace",
    "Recovery",
    "Space",
    "SpeedSegment",
    "SyncConfig",
    "SyncMove",
    "SyncStep",
    "VelocityMove",
    "nearest_parameter",
    "pose_error",
]
