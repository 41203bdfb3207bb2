"""``operator_gate``: the operator confirms before the mission goes on."""

from __future__ import annotations

import py_trees

from limbtree.trees.behaviours.base import SkillBehaviour


class OperatorGateBehaviour(SkillBehaviour):
    """RUNNING until the operator answers; SUCCESS if confirmed, FAILURE if refused.

    With ``--auto-confirm`` the gate passes at once. Limbs are not commanded meanwhile, so
    they hold where the previous skill left them.
    """

    node_type = "operator_gate"

    def step(self) -> py_trees.common.Status:
        """Ask (once) and look for the answer without blocking."""
        answer = self.context.operator.confirm(self._key, str(self.params["prompt"]))
        if answer is None:
            self.feedback_message = f"waiting for the operator: {self.params['prompt']}"
            return py_trees.common.Status.RUNNING
        if answer:
            self.feedback_message = "confirmed"
            return py_trees.common.Status.SUCCESS
        self.feedback_message = "refused by the operator"
        return py_trees.common.Status.FAILURE

    def terminate(self, new_status: py_trees.common.Status) -> None:
        """Withdraw the question if the gate was interrupted or answered."""
        self.context.operator.withdraw(self._key)

    @property
    def _key(self) -> str:
        """The question's key: the node's id (the web page answers by it), once assigned."""
        return str(getattr(self, "node_id", None) or self.id)
