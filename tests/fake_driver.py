"""A tiny LimbDriver for transport tests: a point that moves toward its joint target.

Joint i moves toward its target at ``max_speed`` [units/s]; the end-effector "pose" is the
first three joints as a position with the identity rotation. Deterministic: the state at t
depends only on the commands and the times it was advanced to.

Run as a script to serve it from its own process::

    python tests/fake_driver.py --bind tcp://127.0.0.1:PORT [--clock sim] [--keys DIR]
"""

from __future__ import annotations

import argparse
import logging
import math
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from limbtree.transport import (
    CommandMode,
    DriverError,
    GripperAction,
    Health,
    JointInfo,
    LimbDescription,
    LimbDriver,
    LimbState,
    serve_forever,
)
from limbtree.transport.exposure import ShutdownPolicy


class FakeDriver(LimbDriver):
    """A point limb with ``n_joints`` prismatic joints, speed-limited toward its target."""

    def __init__(self, n_joints: int = 3, max_speed: float = 1.0, reach: float = 10.0) -> None:
        self.n_joints = n_joints
        self.max_speed = max_speed
        self.reach = reach
        self.t = 0.0
        self.q = [0.0] * n_joints
        self.dq = [0.0] * n_joints
        self.target = [0.0] * n_joints
        self.gripper_state = "open"
        self.power = True
        self.assembled = True
        self.commands: list[tuple[CommandMode, dict[str, Any]]] = []
        self.faults: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    def describe(self) -> LimbDescription:
        return LimbDescription(
            robot="fake_point",
            driver="fake",
            joints=tuple(
                JointInfo(f"j{i}", -self.reach, self.reach, self.max_speed)
                for i in range(self.n_joints)
            ),
            end_effectors=("tip", "tool"),
            command_modes=(CommandMode.JOINT_POSITION, CommandMode.EE_POSE, CommandMode.HOLD),
            has_gripper=True,
        )

    def advance(self, t: float) -> None:
        dt = t - self.t
        if dt <= 0.0:
            return
        self.t = t
        if not self.power:
            self.dq = [0.0] * self.n_joints
            return
        step = self.max_speed * dt
        for i, (q, goal) in enumerate(zip(self.q, self.target, strict=True)):
            delta = max(-step, min(step, goal - q))
            self.q[i] = q + delta
            self.dq[i] = delta / dt

    def state(self) -> LimbState:
        position = [*self.q[:3], *[0.0] * max(0, 3 - self.n_joints)]
        pose = (*position, 0.0, 0.0, 0.0, 1.0)
        health = Health.OK
        if not self.power:
            health |= Health.POWER_OFF
        if not self.assembled:
            health |= Health.DISASSEMBLED
        return LimbState(
            t=self.t,
            q=tuple(self.q),
            dq=tuple(self.dq),
            ee_poses={"tip": pose, "tool": pose},
            effort=None,
            gripper="closed" if self.gripper_state == "closed" else "open",
            health=health,
            detail={"target": list(self.target)},
        )

    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        self.commands.append((mode, dict(payload)))
        if mode is CommandMode.JOINT_POSITION:
            self.target = list(payload["q"])
        elif mode is CommandMode.EE_POSE:
            position: Sequence[float] = payload["pose"][:3]
            if math.dist(position, (0.0, 0.0, 0.0)) > self.reach:
                raise DriverError("ik_failed", f"{list(position)} is out of reach")
            self.target = [*position[: self.n_joints], *self.q[3:]]
        elif mode is CommandMode.HOLD:
            self.target = list(self.q)
        else:
            raise DriverError("unsupported_mode", f"fake driver cannot do {mode}")

    def gripper(self, action: GripperAction) -> None:
        self.gripper_state = "closed" if action is GripperAction.CLOSE else "open"

    def fault(self, kind: str, params: Mapping[str, Any]) -> None:
        self.faults.append((kind, dict(params)))
        if kind == "disassembly":
            self.assembled = False
        elif kind == "reassemble":
            self.assembled = True
        elif kind == "power_off":
            self.power = False
        elif kind == "power_on":
            self.power = True
        elif kind == "sleep":
            time.sleep(float(params.get("s", 0.1)))
        elif kind == "boom":
            raise RuntimeError("the fake driver blew up on purpose")
        else:
            raise DriverError("unknown_fault", f"fake driver has no fault {kind!r}", "kind")

    @property
    def available(self) -> bool:
        return self.assembled

    def close(self) -> None:
        self.closed = True


def free_port_pair() -> int:
    """A port N such that N and N+1 were both free a moment ago (an agent needs both)."""
    for _ in range(200):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            if port >= 65534:
                continue
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no two consecutive free ports on 127.0.0.1")


def wait_until(condition: Callable[[], object], timeout_s: float, step_s: float = 0.005) -> bool:
    """Call ``condition`` until it is truthy or ``timeout_s`` [s] passes; True if it became so."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step_s)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bind", required=True)
    parser.add_argument("--clock", default="real")
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--keys", default=None)
    parser.add_argument("--speed", type=float, default=1.0)
    parser.add_argument("--allow-remote-shutdown", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    serve_forever(
        FakeDriver(max_speed=args.speed),
        args.bind,
        clock=args.clock,
        stream_rate_hz=args.rate,
        keys_dir=args.keys,
        shutdown=ShutdownPolicy(allow_remote=args.allow_remote_shutdown),
    )


if __name__ == "__main__":
    main()
