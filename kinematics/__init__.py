"""Poses, trajectories, metrics, the hypersphere clamp and kinematic chains."""

from limbtree.kinematics.pose import Pose

__all__ = ["Pose"]
