"""Exceptions of ``limbtree.trees``."""

from __future__ import annotations

from limbtree.errors import LimbtreeError


class TreesError(LimbtreeError):
    """Base of the errors raised by ``limbtree.trees``."""


class TreeBuildError(TreesError):
    """A validated mission cannot be turned into a tree against the limbs it found.

    For example a named posture the robot does not have, or a limb whose agent describes a
    different robot than the mission declares.
    """


class RunError(TreesError):
    """A mission could not be started or run (an agent did not come up, a port was taken)."""


class AgentError(RunError):
    """An agent or its driver failed (an error reply to ``step``): the run cannot go on.

    Unlike a dead or disassembled limb (its state goes stale, the skills hold or recover),
    an error reply means the agent or the driver has a bug or was misconfigured.

    Attributes:
        limbs: the limbs that agent serves.
        gone: whether the agent is gone for good (its process ended): its limbs cannot
            answer again, and the run's last tick shows them stale.
    """

    def __init__(self, limbs: tuple[str, ...], message: str, *, gone: bool = False) -> None:
        super().__init__(message)
        self.limbs = limbs
        self.gone = gone
