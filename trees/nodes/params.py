"""Parameters several node types share, declared once (units and defaults included)."""

from __future__ import annotations

from typing import Final

from limbtree.trees.mission.units import DEG, MM, S
from limbtree.trees.mission.values import REQUIRED, Flag, LimbList, ParamSpec, PerLimb, Quantity

#: A duration [s] that must be positive.
POSITIVE_S: Final = Quantity(S, low=0, low_open=True)

#: A tolerance on a rotation error [rad; written in degrees]: the angle between two
#: orientations is at most 180 degrees, so a larger tolerance would accept any orientation.
ANGLE_TOLERANCE: Final = Quantity(
    DEG,
    low=0,
    low_open=True,
    high=180,
    why=(
        "the angle between two orientations is at most 180 deg, so a larger tolerance "
        "would accept every orientation; give the largest rotation error to accept "
        "(a few degrees)"
    ),
)

#: The limbs a multi-limb skill moves.
LIMBS: Final = ParamSpec("limbs", LimbList(), REQUIRED, "the limbs the node moves")

#: How long a limb's state may be stale before the skill fails [s].
STALE_TIMEOUT: Final = ParamSpec(
    "stale_timeout", POSITIVE_S, 5.0, "FAILURE when a limb's state is stale this long"
)

#: How long a move may make no progress before it fails [s]; inf: never.
STALL_TIMEOUT: Final = ParamSpec(
    "stall_timeout",
    Quantity(S, low=0, low_open=True, allow_inf=True),
    30.0,
    "FAILURE when the limbs pass no waypoint and come no closer to where they head (by half "
    "the settle tolerance) for this long: a limb blocked for good, a goal it cannot settle "
    "on; inf: never",
)

#: The per-joint radius of the joint-space clamp [rad; written in degrees].
Q_E: Final = ParamSpec(
    "q_e",
    Quantity(DEG, low=0, low_open=True),
    5.0,
    "per-joint radius of the joint-space clamp",
)

#: Whether a composite resumes from its running child.
MEMORY: Final = ParamSpec(
    "memory", Flag(), True, "resume from the running child (true) or restart each tick"
)


def p_e(default_mm: float, doc: str = "") -> ParamSpec:
    """The hypersphere radius on position [m; written in mm] (seed 000 eq. 7).

    Args:
        default_mm: the default [mm].
        doc: the reference's text, when not the moves' own.
    """
    return ParamSpec(
        "p_e",
        PerLimb(Quantity(MM, low=0, low_open=True, allow_inf=True)),
        default_mm,
        doc or "hypersphere radius on position, one number or per limb (seed 000 eq. 7)",
    )


def r_e(default_deg: float, doc: str = "") -> ParamSpec:
    """The hypersphere radius on rotation [rad; written in degrees]; inf ignores rotation.

    Args:
        default_deg: the default [deg].
        doc: the reference's text, when not the moves' own.
    """
    return ParamSpec(
        "r_e",
        PerLimb(Quantity(DEG, low=0, low_open=True, allow_inf=True)),
        default_deg,
        doc or "hypersphere radius on rotation, one number or per limb; inf ignores rotation",
    )


def settle_mm(default_mm: float) -> ParamSpec:
    """The distance [m; written in mm] to the last waypoint at which a move succeeds."""
    return ParamSpec(
        "settle",
        Quantity(MM, low=0, low_open=True),
        default_mm,
        "success once every limb is this close to the last waypoint",
    )


def settle_deg(default_deg: float) -> ParamSpec:
    """The joint distance [rad; written in degrees] to the last posture at which it succeeds."""
    return ParamSpec(
        "settle",
        Quantity(
            DEG,
            low=0,
            low_open=True,
            high=180,
            why=(
                "a tolerance of half a turn or more accepts the posture from almost anywhere, "
                "so the move would succeed without moving; give the largest joint error to "
                "accept (a degree or so)"
            ),
        ),
        default_deg,
        "success once every joint is this close to the last posture",
    )
