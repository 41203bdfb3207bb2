"""``timeout``: fail a child that runs longer than a duration of mission time.

py_trees' own ``Timeout`` reads the wall clock; this one reads the mission clock, so it
behaves the same in the ``sim`` clock at any speed.
"""

from __future__ import annotations

from collections.abc import Callable

import py_trees

from limbtree.trees.behaviours.base import time_left_text
from limbtree.trees.clocks import elapsed_reached


class ClockTimeout(py_trees.decorators.Decorator):
    """FAILURE if the child is still RUNNING ``duration`` [s] after it started."""

    def __init__(
        self,
        name: str,
        child: py_trees.behaviour.Behaviour,
        duration: float,
        clock: Callable[[], float],
    ) -> None:
        super().__init__(name=name, child=child)
        self.duration = duration
        self.clock = clock
        self._since = 0.0

    def initialise(self) -> None:
        """Start counting."""
        self._since = self.clock()

    def update(self) -> py_trees.common.Status:
        """The child's status, or FAILURE once the time is up."""
        now = self.clock()
        running = self.decorated.status == py_trees.common.Status.RUNNING
        if running and elapsed_reached(now, self._since, self.duration):
            self.feedback_message = f"timed out after {self.duration:g} s"
            return py_trees.common.Status.FAILURE
        self.feedback_message = time_left_text(max(0.0, self.duration - (now - self._since)))
        return self.decorated.status
