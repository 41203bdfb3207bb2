"""Poses, trajectories, metrics, the hypersphere clamp and kinematic chains.

The public contract of DESIGN.md::

    from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
"""

from limbtree.kinematics.clamp import ClampProblem, ClampResult, build_problem, hypersphere_clamp
from limbtree.kinematics.errors import (
    InvalidMetricError,
    InvalidPoseError,
    KinematicsError,
    ShapeMismatchError,
)
from limbtree.kinematics.metrics import SE3Metric, stacked_distance, weighted_euclidean
from limbtree.kinematics.pose import Pose
from limbtree.kinematics.trajectory import PiecewiseTrajectory, Trajectory

__all__ = [
    "ClampProblem",
    "ClampResult",
    "InvalidMetricError",
    "InvalidPoseError",
    "KinematicsError",
    "PiecewiseTrajectory",
    "Pose",
    "SE3Metric",
    "ShapeMismatchError",
    "Trajectory",
    "build_problem",
    "hypersphere_clamp",
    "stacked_distance",
    "weighted_euclidean",
]
