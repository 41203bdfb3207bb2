"""The base of limbtree's behaviours: a py_trees leaf bound to the mission context."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

import py_trees

from limbtree.skills import Outcome
from limbtree.skills.telemetry import Figures, SkillTelemetry
from limbtree.trees.context import MissionContext

STATUS = {
    Outcome.RUNNING: py_trees.common.Status.RUNNING,
    Outcome.SUCCESS: py_trees.common.Status.SUCCESS,
    Outcome.FAILURE: py_trees.common.Status.FAILURE,
}


class CannotStart(Exception):  # noqa: N818 - reads as a sentence at the raise site
    """A skill cannot start for a reason a person can act on; the node ends in FAILURE."""


class SkillBehaviour(py_trees.behaviour.Behaviour):
    """A leaf of a mission tree: reads limb states, steps a core, sends commands.

    Subclasses implement :meth:`start` (the py_trees ``initialise``) and :meth:`step` (the
    ``update``); this class keeps the node's parameters for export and times its updates.
    ``update`` never blocks: limb states come from the clients' latest values.

    Attributes:
        node_type: the mission-file name of the node (``sync_move``, ...).
        params: the node's validated parameters, SI units.
        ticks: how many times the node was ticked.
        busy_s: wall time [s] spent in its updates (a diagnostic, not logic).
    """

    node_type: ClassVar[str] = ""

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name=name)
        self.context = context
        self.params = dict(params)
        self.ticks = 0
        self.busy_s = 0.0

    def initialise(self) -> None:
        """Start the skill (py_trees lifecycle)."""
        self.feedback_message = ""
        self.start()

    def update(self) -> py_trees.common.Status:
        """Step the skill once; timed for the summary's per-node figures."""
        began = time.perf_counter()
        try:
            return self.step()
        except CannotStart as exc:
            self.feedback_message = str(exc)
            return py_trees.common.Status.FAILURE
        finally:
            self.ticks += 1
            self.busy_s += time.perf_counter() - began

    def start(self) -> None:
        """Called when the node starts running."""

    def step(self) -> py_trees.common.Status:
        """One tick of the skill."""
        raise NotImplementedError

    def report(self, telemetry: SkillTelemetry | None = None, /, **figures: Any) -> None:
        """Publish this tick's figures to the tick stream, under this node's id.

        Args:
            telemetry: the skill's typed figures (the core's :class:`SkillTelemetry`).
            **figures: untyped figures instead, for skills that have no telemetry class yet;
                they are wrapped in :class:`~limbtree.skills.telemetry.Figures`.

        Raises:
            TypeError: when given both, or neither.
        """
        if (telemetry is None) == (not figures):
            raise TypeError("report() takes one SkillTelemetry, or keyword figures, not both")
        if telemetry is None:
            telemetry = Figures(tuple(figures.items()))
        # A behaviour ticked outside a runner (a test, a tool) has no id: its name stands in.
        key = getattr(self, "node_id", None) or self.name
        self.context.telemetry.tick[key] = telemetry
