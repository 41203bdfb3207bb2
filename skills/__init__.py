"""The skills' numerical cores, as plain stepping objects: no I/O, no py_trees, no sockets."""

from limbtree.skills.outcome import Outcome
from limbtree.skills.spaces import JointSpace, PoseSpace, Space, nearest_parameter
from limbtree.skills.sync import Mode, Recovery, SyncConfig, SyncMove, SyncStep
from limbtree.skills.velocity import SpeedSegment, VelocityMove

__all__ = [
    "JointSpace",
    "Mode",
    "Outcome",
    "PoseSpace",
    "Recovery",
    "Space",
    "SpeedSegment",
    "SyncConfig",
    "SyncMove",
    "SyncStep",
    "VelocityMove",
    "nearest_parameter",
]
