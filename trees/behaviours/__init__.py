"""limbtree's py_trees behaviours: one per skill, each a thin adapter over its core.

Which node type builds which behaviour is declared once, in :mod:`limbtree.trees.nodes`.
"""

from limbtree.trees.behaviours.align import AlignBehaviour
from limbtree.trees.behaviours.base import CannotStart, SkillBehaviour
from limbtree.trees.behaviours.grasp import GraspBehaviour, ReleaseBehaviour
from limbtree.trees.behaviours.joint_move import JointMoveBehaviour, JointSyncMoveBehaviour
from limbtree.trees.behaviours.operator_gate import OperatorGateBehaviour
from limbtree.trees.behaviours.recover import RecoverToLastValidBehaviour
from limbtree.trees.behaviours.sync_move import SyncMoveBehaviour
from limbtree.trees.behaviours.timeout import ClockTimeout
from limbtree.trees.behaviours.velocity_move import VelocityMoveBehaviour
from limbtree.trees.behaviours.wait import WaitBehaviour

__all__ = [
    "AlignBehaviour",
    "CannotStart",
    "ClockTimeout",
    "GraspBehaviour",
    "JointMoveBehaviour",
    "JointSyncMoveBehaviour",
    "OperatorGateBehaviour",
    "RecoverToLastValidBehaviour",
    "ReleaseBehaviour",
    "SkillBehaviour",
    "SyncMoveBehaviour",
    "VelocityMoveBehaviour",
    "WaitBehaviour",
]
