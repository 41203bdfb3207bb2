"""``wait``: succeed after a while, by the mission clock."""

from __future__ import annotations

import py_trees

from limbtree.trees.behaviours.base import SkillBehaviour, time_left_text


class WaitBehaviour(SkillBehaviour):
    """RUNNING for ``duration`` [s] of mission time, then SUCCESS."""

    node_type = "wait"

    def start(self) -> None:
        """Note when the wait began."""
        self._since = self.context.clock()

    def step(self) -> py_trees.common.Status:
        """SUCCESS once the duration has passed."""
        left = float(self.params["duration"]) - (self.context.clock() - self._since)
        if left <= 0.0:
            self.feedback_message = "done"
            return py_trees.common.Status.SUCCESS
        self.feedback_message = time_left_text(left)
        return py_trees.common.Status.RUNNING
