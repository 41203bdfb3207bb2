"""limbtree's py_trees behaviours: one per skill, each a thin adapter over its core."""

from limbtree.trees.behaviours.base import CannotStart, SkillBehaviour
from limbtree.trees.behaviours.joint_move import JointMoveBehaviour, JointSyncMoveBehaviour
from limbtree.trees.behaviours.operator_gate import OperatorGateBehaviour
from limbtree.trees.behaviours.recover import RecoverToLastValidBehaviour
from limbtree.trees.behaviours.sync_move import SyncMoveBehaviour
from limbtree.trees.behaviours.timeout import ClockTimeout
from limbtree.trees.behaviours.velocity_move import VelocityMoveBehaviour
from limbtree.trees.behaviours.wait import WaitBehaviour

#: Leaf node type -> behaviour class.
LEAVES: dict[str, type[SkillBehaviour]] = {
    cls.node_type: cls
    for cls in (
        SyncMoveBehaviour,
        VelocityMoveBehaviour,
        JointSyncMoveBehaviour,
        JointMoveBehaviour,
        RecoverToLastValidBehaviour,
        WaitBehaviour,
        OperatorGateBehaviour,
    )
}

__all__ = [
    "LEAVES",
    "CannotStart",
    "ClockTimeout",
    "JointMoveBehaviour",
    "JointSyncMoveBehaviour",
    "OperatorGateBehaviour",
    "RecoverToLastValidBehaviour",
    "SkillBehaviour",
    "SyncMoveBehaviour",
    "VelocityMoveBehaviour",
    "WaitBehaviour",
]
