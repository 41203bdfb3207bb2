"""Exceptions of ``limbtree.skills.climbing``: misconfiguration and bad input.

A plan that cannot be made (a foothold out of reach, a swing that leaves the joint limits)
is reported in the result where a caller can act on it (``LrstResult.within_limits``,
``LegSolution.reach``); these are for values no climbing core can use at all (a NaN, a
wrong shape, too few footholds for a plane, a leg that is not a yaw-pitch-pitch leg).
"""

from __future__ import annotations

from limbtree.errors import LimbtreeError
from limbtree.skills.errors import InputValueError


class ClimbingError(LimbtreeError):
    """Base of the errors raised by ``limbtree.skills.climbing``."""


class ClimbingInputError(ClimbingError, InputValueError):
    """A value a climbing core cannot use (wrong shape, not finite, out of range).

    Attributes:
        name: which input was wrong (``"footholds"``, ``"duration_s"``, ...).
        value: the offending value, as given.
    """


class LegGeometryError(ClimbingError, ValueError):
    """A leg whose geometry the closed-form solver of :mod:`.leg` does not cover.

    Attributes:
        leg: the limb name.
        reason: what was found instead of a yaw-pitch-pitch leg.
    """

    def __init__(self, leg: str, reason: str) -> None:
        super().__init__(
            f"leg {leg!r}: {reason}; the closed-form leg solver needs three revolute joints, "
            "the first (yaw) perpendicular to the two others, which are parallel, with the "
            "foot in the plane of the leg (HubRobo, moonbot_zero)"
        )
        self.leg = leg
        self.reason = reason


__all__ = ["ClimbingError", "ClimbingInputError", "LegGeometryError"]
