"""Exceptions of ``limbtree.kinematics``."""

from __future__ import annotations

from limbtree.errors import LimbtreeError


class KinematicsError(LimbtreeError):
    """Base of the errors raised by ``limbtree.kinematics``."""


class InvalidPoseError(KinematicsError, ValueError):
    """A pose was built from values that are not a rigid transform.

    Attributes:
        field: which input was wrong (``"position"``, ``"quaternion"`` or ``"matrix"``).
        value: the offending value, as given.
    """

    def __init__(self, field: str, value: object, reason: str) -> None:
        super().__init__(f"invalid pose {field} {value!r}: {reason}")
        self.field = field
        self.value = value


class InvalidMetricError(KinematicsError, ValueError):
    """A metric was given scales it cannot use (zero, negative or NaN)."""


class ShapeMismatchError(KinematicsError, ValueError):
    """Sequences that must have one entry per limb have different lengths."""


class ChainError(KinematicsError, ValueError):
    """A kinematic chain cannot be built or was given values it cannot use.

    Raised for unreadable URDF files, chains without joints, joints the numerical solver
    cannot handle, and bad IK settings (mask, tolerance, limits).
    """


class UnknownLinkError(ChainError):
    """A chain was asked for a link its robot description does not have.

    Attributes:
        link: the link name that was asked for.
        valid_links: every link name of the description, in file order.
        source: the description file the links come from, as a string.
    """

    def __init__(self, link: str, valid_links: tuple[str, ...], source: str) -> None:
        super().__init__(f"{source}: no link named {link!r}; valid links: {', '.join(valid_links)}")
        self.link = link
        self.valid_links = valid_links
        self.source = source


class JointCountError(ChainError):
    """A joint vector does not have one value per joint of the chain.

    Attributes:
        name: which argument was wrong (``"q"``, ``"q0"``, ...).
        expected: the number of joints of the chain.
        got: the shape that was given.
    """

    def __init__(self, name: str, expected: int, got: tuple[int, ...]) -> None:
        super().__init__(
            f"{name} must have {expected} values, one per joint of the chain; got shape {got}"
        )
        self.name = name
        self.expected = expected
        self.got = got
