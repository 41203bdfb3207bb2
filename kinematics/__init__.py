"""Poses, trajectories, metrics, the hypersphere clamp and kinematic chains.

``KinematicChain`` and its companions load roboticstoolbox, so they are imported on first
use. The public contract of DESIGN.md::

    from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
"""

from typing import TYPE_CHECKING, Any

from limbtree.kinematics.clamp import ClampProblem, ClampResult, build_problem, hypersphere_clamp
from limbtree.kinematics.errors import (
    ChainError,
    InvalidMetricError,
    InvalidPoseError,
    JointCountError,
    KinematicsError,
    ShapeMismatchError,
    UnknownLinkError,
)
from limbtree.kinematics.metrics import SE3Metric, stacked_distance, weighted_euclidean
from limbtree.kinematics.pose import Pose
from limbtree.kinematics.trajectory import PiecewiseTrajectory, Trajectory

if TYPE_CHECKING:
    from limbtree.kinematics.chain import POSITION_MASK, IKResult, KinematicChain

#: Names whose module imports roboticstoolbox (about 2 s): loaded on first use only.
_LAZY = {"POSITION_MASK", "IKResult", "KinematicChain"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from limbtree.kinematics import chain

        return getattr(chain, name)
    raise AttributeError(f"module 'limbtree.kinematics' has no attribute {name!r}")


__all__ = [
    "POSITION_MASK",
    "ChainError",
    "ClampProblem",
    "ClampResult",
    "IKResult",
    "InvalidMetricError",
    "InvalidPoseError",
    "JointCountError",
    "KinematicChain",
    "KinematicsError",
    "PiecewiseTrajectory",
    "Pose",
    "SE3Metric",
    "ShapeMismatchError",
    "Trajectory",
    "UnknownLinkError",
    "build_problem",
    "hypersphere_clamp",
    "stacked_distance",
    "weighted_euclidean",
]
