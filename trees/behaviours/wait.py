"""``wait``: succeed after a while, by the mission clock."""

from __future__ import annotations

import py_trees

from limbtree.trees.behaviours.base import SkillBehaviour, time_left_text
from limbtree.trees.clocks import elapsed_reached


class WaitBehaviour(SkillBehaviour):
    """RUNNING for ``duration`` [s] of mission time, then SUCCESS."""

    node_type = "wait"

    def start(self) -> None:
        """Note when the wait began."""
        self._since = self.context.clock()

    def step(self) -> py_trees.common.Status:
        """SUCCESS once the duration has passed."""
        now = self.context.clock()
        duration = float(self.params["duration"])
        if elapsed_reached(now, self._since, duration):
            self.feedback_message = "done"
            return py_trees.common.Status.SUCCESS
        self.feedback_message = time_left_text(duration - (now - self._since))
        return py_trees.common.Status.RUNNING
