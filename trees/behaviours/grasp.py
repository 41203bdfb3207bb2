"""``grasp`` and ``release``: close or open a gripper, and check what it holds."""

from __future__ import annotations

import py_trees

from limbtree.transport.driver import GripperAction
from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.clocks import elapsed_reached


class GraspBehaviour(SkillBehaviour):
    """Close the gripper; SUCCESS once the module is attached, FAILURE if it is not.

    The limb's state says what the gripper holds: ``gripper`` is ``"closed"`` and
    ``detail["attached"]`` names the module. A gripper that closes on nothing means the
    end-effector was not within the grasp tolerance of a grasp point.
    """

    node_type = "grasp"

    def start(self) -> None:
        """Send the close request."""
        self.limb = self.context.limb(str(self.params["limb"]))
        self._since = self.context.clock()
        self.limb.gripper(GripperAction.CLOSE)

    def step(self) -> py_trees.common.Status:
        """Wait for the gripper to report, then check the attachment."""
        state = self.limb.state if self.limb.fresh else None
        now = self.context.clock()
        timeout = float(self.params.get("timeout", 2.0))
        wanted = self.params.get("module")
        if state is not None and state.gripper == "closed":
            attached = state.detail.get("attached") if state.detail else None
            if attached and (wanted is None or attached == wanted):
                self.feedback_message = f"holding {attached}"
                return py_trees.common.Status.SUCCESS
            if elapsed_reached(now, self._since, 0.2):  # it had time to close and report
                if attached:
                    self.feedback_message = (
                        f"{self.limb.name}: gripper holds {attached}, not {wanted}: it "
                        f"closed on another module; align to {wanted}'s grasp point (the "
                        "align node's target), then retry"
                    )
                else:
                    self.feedback_message = (
                        f"{self.limb.name}: gripper closed on nothing: the end-effector was "
                        "not within the grasp tolerance; align again without the offset, "
                        "then retry"
                    )
                return py_trees.common.Status.FAILURE
        if elapsed_reached(now, self._since, timeout):
            self.feedback_message = f"{self.limb.name}: gripper did not close within {timeout:g} s"
            return py_trees.common.Status.FAILURE
        self.feedback_message = "closing the gripper"
        return py_trees.common.Status.RUNNING


class ReleaseBehaviour(SkillBehaviour):
    """Open the gripper; SUCCESS once it reports open."""

    node_type = "release"

    def start(self) -> None:
        """Send the open request."""
        self.limb = self.context.limb(str(self.params["limb"]))
        self._since = self.context.clock()
        self.limb.gripper(GripperAction.OPEN)

    def step(self) -> py_trees.common.Status:
        """Wait for the gripper to report open."""
        state = self.limb.state if self.limb.fresh else None
        if state is not None and state.gripper == "open":
            self.feedback_message = "open"
            return py_trees.common.Status.SUCCESS
        timeout = float(self.params.get("timeout", 2.0))
        if elapsed_reached(self.context.clock(), self._since, timeout):
            self.feedback_message = f"{self.limb.name}: gripper did not open within {timeout:g} s"
            return py_trees.common.Status.FAILURE
        self.feedback_message = "opening the gripper"
        return py_trees.common.Status.RUNNING
