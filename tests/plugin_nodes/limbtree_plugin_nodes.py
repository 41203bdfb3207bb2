"""``hold_still``: a node type a package adds to limbtree (entry-point group limbtree.nodes).

The limb is asked to stop where it is, each tick, for ``duration_s`` of mission time; then
the node succeeds. It commands the limb named by its ``limb`` parameter.
"""

from __future__ import annotations

import py_trees

from limbtree.trees.nodes import (
    REQUIRED,
    LimbName,
    NodeKind,
    NodeSpec,
    ParamSpec,
    Quantity,
    S,
    SkillBehaviour,
    leaf,
)


class HoldStillBehaviour(SkillBehaviour):
    """RUNNING while the limb holds still for ``duration`` [s], then SUCCESS."""

    node_type = "hold_still"

    def start(self) -> None:
        """Find the limb and note when the hold began."""
        self._limb = self.context.limb(str(self.params["limb"]))
        self._since = self.context.clock()

    def step(self) -> py_trees.common.Status:
        """Ask the limb to hold; SUCCESS once the duration has passed."""
        self._limb.hold()
        left = float(self.params["duration"]) - (self.context.clock() - self._since)
        if left <= 0.0:
            self.feedback_message = f"{self._limb.name} held still"
            return py_trees.common.Status.SUCCESS
        self.feedback_message = f"holding {self._limb.name}: {left:.1f} s left"
        return py_trees.common.Status.RUNNING


HOLD_STILL = NodeSpec(
    "hold_still",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb to hold"),
        ParamSpec("duration", Quantity(S, low=0, low_open=True), 1.0, "how long to hold it"),
    ),
    (0, 0),
    "hold a limb where it is for a while",
    build=leaf(HoldStillBehaviour),
    commands=("limb",),
)
