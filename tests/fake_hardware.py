"""A hardware driver as a user would ship one: loaded by ``limbtree agent --driver``.

``limbtree agent --driver fake_hardware:LoopbackArm --driver-option power=off`` (with this
folder on PYTHONPATH) serves it: servos that reach each setpoint at once.
"""

from __future__ import annotations

import numpy as np

from limbtree.robots.driver import HardwareDriver, JointReading


class LoopbackArm(HardwareDriver):
    """Any registry limb whose servos reach each setpoint at once.

    Args:
        robot: the robot's name.
        limb: the limb's name, or None.
        power: ``"on"`` or ``"off"`` (text, as ``--driver-option`` gives it).
    """

    driver_name = "loopback_arm"

    def __init__(self, robot: str, limb: str | None = None, *, power: str = "on") -> None:
        super().__init__(robot, limb)
        if power not in ("on", "off"):
            raise ValueError(f"power must be on or off, got {power!r}")
        self.powered = power == "on"
        self.q = np.array(self.tracker.limb.postures["home"], dtype=np.float64)

    def read_joints(self) -> JointReading:
        return JointReading(self.q.copy(), np.zeros_like(self.q))

    def write_joint_targets(self, q: np.ndarray) -> None:
        self.q = np.array(q, dtype=np.float64)

    def power_state(self) -> bool:
        return self.powered


class ForgetsSuper(HardwareDriver):
    """A driver whose constructor forgets ``super().__init__(robot, limb)``."""

    driver_name = "forgets_super"

    def __init__(self, robot: str, limb: str | None = None) -> None:
        self.robot_name = robot

    def read_joints(self) -> JointReading:  # pragma: no cover - never built
        raise OSError("no bus")

    def write_joint_targets(self, q: np.ndarray) -> None:  # pragma: no cover - never built
        raise OSError("no bus")

    def power_state(self) -> bool:  # pragma: no cover - never built
        return False


class TakesNoRobot(LoopbackArm):
    """A driver whose constructor takes its device only, not the robot and limb names."""

    def __init__(self, device: str) -> None:  # pragma: no cover - never built
        super().__init__("light_limb")
        self.device = device
