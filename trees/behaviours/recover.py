"""``recover_to_last_valid``: bring limbs back to their last valid synchronized command.

Seed 000 Sec. II-B's first strategy as a leaf a mission can place where it wants (for
example in a fallback after a ``sync_move`` with ``recovery: none``).
"""

from __future__ import annotations

import math

from limbtree.kinematics import Pose
from limbtree.skills import PoseSpace, Recovery, SyncConfig, SyncMove
from limbtree.trees.behaviours.base import CannotStart, stall_timeout
from limbtree.trees.behaviours.sync_move import PoseMoveBehaviour


class RecoverToLastValidBehaviour(PoseMoveBehaviour):
    """Move each limb, clamped, to the last command a synchronized move sent it."""

    node_type = "recover_to_last_valid"

    def make_core(self, start: tuple[Pose, ...]) -> SyncMove[Pose]:
        """A one-segment move from the sensed states to the last valid commands."""
        missing = [n for n in self.limb_names if n not in self.context.last_valid]
        if missing:
            raise CannotStart(
                f"{self.name}: no last valid command for {', '.join(missing)}; "
                "place recover_to_last_valid after a sync_move over these limbs"
            )
        target = tuple(self.context.last_valid[n] for n in self.limb_names)
        space = PoseSpace(self.metrics(), math.inf, float(self.params.get("settle", 0.002)))
        config = SyncConfig(
            recovery=Recovery.RESTART,
            stale_timeout=float(self.params.get("stale_timeout", 5.0)),
            stall_timeout=stall_timeout(self.params),
        )
        return SyncMove(space, [start, target], config, self.limb_names)
