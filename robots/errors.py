"""Exceptions of ``limbtree.robots``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from limbtree.errors import LimbtreeError


class RobotsError(LimbtreeError):
    """Base of the errors raised by ``limbtree.robots``."""


class UnknownRobotError(RobotsError, LookupError):
    """No robot of that name is shipped or on the robot search path.

    Attributes:
        name: the robot name that was asked for.
        valid_names: every robot name that can be loaded, sorted.
        search_path: the directories that were searched, in order.
    """

    def __init__(self, name: str, valid_names: Sequence[str], search_path: Sequence[Path]) -> None:
        self.name = name
        self.valid_names = tuple(valid_names)
        self.search_path = tuple(search_path)
        where = ", ".join(str(p) for p in self.search_path) or "no directories"
        super().__init__(
            f"unknown robot {name!r}; valid robots: {', '.join(self.valid_names) or '(none)'} "
            f"(searched {where}; add directories with LIMBTREE_ROBOT_PATH)"
        )


class UnknownLimbError(RobotsError, LookupError):
    """A robot has no limb of that name, or a limb was not named on a robot with several.

    Attributes:
        robot: the robot's name.
        limb: the limb name that was asked for, or None when none was given.
        valid_limbs: the robot's limb names, in file order.
    """

    def __init__(self, robot: str, limb: str | None, valid_limbs: Sequence[str]) -> None:
        self.robot = robot
        self.limb = limb
        self.valid_limbs = tuple(valid_limbs)
        valid = ", ".join(self.valid_limbs)
        if limb is None:
            message = f"robot {robot!r} has {len(self.valid_limbs)} limbs; name one of: {valid}"
        else:
            message = f"robot {robot!r} has no limb {limb!r}; valid limbs: {valid}"
        super().__init__(message)


class UnknownPostureError(RobotsError, LookupError):
    """A limb has no posture of that name.

    Attributes:
        limb: the limb's name.
        posture: the posture name that was asked for.
        valid_postures: the limb's posture names.
    """

    def __init__(self, limb: str, posture: str, valid_postures: Sequence[str]) -> None:
        self.limb = limb
        self.posture = posture
        self.valid_postures = tuple(valid_postures)
        super().__init__(
            f"limb {limb!r} has no posture {posture!r}; "
            f"valid postures: {', '.join(self.valid_postures)}"
        )


class RobotDescriptionError(RobotsError, ValueError):
    """A robot description file (``robot.yaml`` or its URDF) is wrong.

    The message reads ``FILE[:LINE[:COLUMN]]: KEY: REASON``, e.g.
    ``robots/arm/robot.yaml:12: limbs.arm.ee_link: no link named 'tool0' in arm.urdf; ...``.

    Attributes:
        path: the file that is wrong.
        key: the dotted key that is wrong (``"limbs.leg_0.max_joint_speed"``), or a
            placeholder in angle brackets (``"<yaml>"``, ``"<urdf>"``) for the whole file.
        reason: what is wrong and, where it helps, the valid choices.
        line: 1-based line of the key in the file, or None when unknown.
        column: 1-based column of the value, when the error is about one value (a number
            YAML 1.1 reads in another base), else None.
    """

    def __init__(
        self, path: Path, key: str, reason: str, line: int | None = None, column: int | None = None
    ) -> None:
        self.path = path
        self.key = key
        self.reason = reason
        self.line = line
        self.column = column
        where = f"{path}:{line}" if line is not None else f"{path}"
        if line is not None and column is not None:
            where += f":{column}"
        super().__init__(f"{where}: {key}: {reason}")
