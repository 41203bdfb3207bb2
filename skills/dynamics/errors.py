"""Exceptions of ``limbtree.skills.dynamics``: misconfiguration and bad input, never a failed skill.

A step that cannot reach its goal is not an exception: :class:`~limbtree.skills.dynamics.WalkStep`
and :class:`~limbtree.skills.dynamics.ImpedanceMove` return FAILURE with a message. These
are for inputs the controller cannot use at all (no latched frame, a frame the robot does
not have, a NaN), each with its details as attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from limbtree.errors import LimbtreeError
from limbtree.skills.errors import InputValueError


class DynamicsError(LimbtreeError):
    """Base of the errors raised by ``limbtree.skills.dynamics``."""


class DynamicsInputError(DynamicsError, InputValueError):
    """A value the controller or a core cannot use (wrong shape, not finite, out of range).

    Attributes:
        name: which input was wrong (``"q"``, ``"latched['arm.E1']"``, ``"k_n_per_m"``, ...).
        value: the offending value, as given.
    """


class UnknownFrameError(DynamicsError, ValueError):
    """A latched or task frame the floating tree does not know.

    Attributes:
        frame: the frame that was asked for.
        valid_frames: every interface frame the tree knows.
    """

    def __init__(self, frame: str, valid_frames: Sequence[str], role: str) -> None:
        super().__init__(
            f"{role} frame {frame!r} is not an interface of this robot; its interface frames "
            f"are: {', '.join(valid_frames)}"
        )
        self.frame = frame
        self.valid_frames = tuple(valid_frames)


class ConstraintRankError(DynamicsError, ValueError):
    """The latched frames do not fix the floating base: Ψ_b (seed 003 eq. 3) lacks full rank.

    Eq. 3 solves ``Ψ_b V_b = −Ψ_q q̇`` for the base twist; that needs ``rank Ψ_b = 6``, so at
    least one latched frame.

    Attributes:
        rank: the numerical rank of Ψ_b (0 when nothing is latched).
        latched: the latched frames.
    """

    def __init__(self, rank: int, latched: Sequence[str]) -> None:
        if not latched:
            detail = (
                "no frame is latched, so nothing fixes the floating base (Ψ_b has rank 0 of 6): "
                "latch at least one interface before running the impedance controller "
                "(a free-floating robot can only be damped)"
            )
        else:
            how = f"rank {rank} of 6" if rank < 6 else "rank 6 of 6 but nearly singular"
            detail = (
                f"the latched frames {', '.join(latched)} give Ψ_b {how}: the base twist of "
                "eq. 3 is not determined; check the tree's frame Jacobians"
            )
        super().__init__(detail)
        self.rank = rank
        self.latched = tuple(latched)


__all__ = ["ConstraintRankError", "DynamicsError", "DynamicsInputError", "UnknownFrameError"]
