"""In-process fake limbs for the trees tests: a point that tracks its command at a speed."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from limbtree.kinematics import Pose
from limbtree.transport.driver import (
    CommandMode,
    Health,
    JointInfo,
    LimbDescription,
    LimbState,
)
from limbtree.trees.limbs import LimbHandle


class FakeLink:
    """Implements what LimbHandle and the Runner use of a LimbClient, without sockets.

    The end-effector tracks its pose target at ``speed`` [m/s]; joints are three fake
    values equal to the position. ``step(t)`` advances it; faults: ``power_off`` freezes the
    state, ``disassembly`` makes it stale, both for ``duration_s``.
    """

    def __init__(self, start=(0.0, 0.0, 0.0), speed=0.1, stale_after_s=0.25, clock=None):
        self.position = np.array(start, dtype=float)
        self.target = self.position.copy()
        self.speed = speed
        self.t = 0.0
        self.clock = clock
        self.stale_after_s = stale_after_s
        self.received_at = 0.0
        self.health = Health.OK
        self.stuck = Health.OK  # flags every state keeps (BUS_FAULT: a bus that fails)
        self.faults: list[tuple[str, float]] = []
        self.commands: list[tuple[CommandMode, dict[str, Any]]] = []
        self.restarts = 0  # how many times "its agent" restarted (a test may count one up)
        self.drives = "fake"  # the robot "its agent" describes (a restarted one may differ)
        self._state = self._sample()

    def _sample(self) -> LimbState:
        p = self.position.tolist()
        return LimbState(
            t=self.t, q=tuple(p), dq=(0.0, 0.0, 0.0), ee_poses={"ee": [*p, 0.0, 0.0, 0.0, 1.0]},
            health=self.health,
        )  # fmt: skip

    @property
    def state(self) -> LimbState:
        return self._state

    @property
    def disassembled(self) -> bool:
        return any(kind == "disassembly" and self.t < until for kind, until in self.faults)

    @property
    def is_stale(self) -> bool:
        now = self.clock() if self.clock else self.t
        return now - self.received_at > self.stale_after_s

    def send_command(self, mode, **fields) -> bool:
        self.commands.append((CommandMode(mode), fields))
        if mode == CommandMode.EE_POSE and self.health == Health.OK:
            self.target = np.array(fields["pose"][:3])
        elif mode == CommandMode.JOINT_POSITION and self.health == Health.OK:
            self.target = np.array(fields["q"])
        elif mode == CommandMode.HOLD:
            self.target = self.position.copy()
        return True

    def send_gripper(self, action) -> bool:
        return True

    def poll(self) -> bool:
        return False

    def step(self, t: float, timeout_s: float = 1.0) -> LimbState:
        dt = t - self.t
        self.t = t
        active = [(k, end) for k, end in self.faults if end > t]
        ended = [(k, end) for k, end in self.faults if end <= t]
        self.faults = active
        kinds = {k for k, _ in active}
        if "power_off" in {k for k, _ in ended} and "power_off" not in kinds:
            self.position = self.position + [0.0, 0.0, -0.1]  # it fell
            self.target = self.position.copy()
        self.health = (Health.POWER_OFF if "power_off" in kinds else Health.OK) | self.stuck
        if "disassembly" in kinds:
            return self._state
        if self.health == Health.OK:
            d = self.target - self.position
            n = float(np.linalg.norm(d))
            limit = self.speed * dt
            self.position = self.position + (d if n <= limit else d / n * limit)
            self._state = self._sample()
        else:
            self._state = LimbState(**{**self._state.__dict__, "health": self.health})
        self.received_at = t
        return self._state

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        self._pending_t = t

    def finish_step(self) -> LimbState:
        return self.step(self._pending_t)

    def fault(self, kind: str, timeout_s: float = 1.0, **params) -> None:
        self.faults.append((kind, self.t + float(params.get("duration_s", 1e9))))

    def describe(self, timeout_s: float = 1.0) -> SimpleNamespace:
        """What "its agent" says it drives (``limb``: its description)."""
        return SimpleNamespace(limb=description(self.drives))


def description(name: str = "fake") -> LimbDescription:
    return LimbDescription(
        robot=name, driver="fake",
        joints=tuple(JointInfo(f"j{i}", -10.0, 10.0, 1.0) for i in range(3)),
        end_effectors=("ee",), command_modes=(CommandMode.EE_POSE, CommandMode.JOINT_POSITION),
    )  # fmt: skip


def handles(links: dict[str, FakeLink], postures=None) -> dict[str, LimbHandle]:
    return {
        name: LimbHandle(name, description(), link, Pose(), (postures or {}).get(name, {}))
        for name, link in links.items()
    }
