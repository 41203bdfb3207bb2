"""Command deadlines: a limb driven by velocity or torque comes to rest when its client goes quiet.

An ``ee_twist`` or ``joint_torque`` command is held until the next command. If the client
that sent it dies, the limb would go on moving forever; so each such command has a deadline
(the command's optional ``deadline_s`` field, else :data:`DEFAULT_COMMAND_DEADLINE_S`), in the
plant's own time, counted from the plant's time when the command arrived (the agent's last
update). When no new command for that limb arrives before it, the agent's plant advances to
the deadline, commands ``hold`` there, and goes on: the limb stops where it is. Until the next
command, the limb's state ``detail`` says so under :data:`DEADLINE_DETAIL_KEY`.

:class:`DeadlinePlant` does this around any plant; :class:`~limbtree.transport.agent.PlantAgent`
wraps the plant it serves in one. Nothing here reads a clock: time is the plant's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from limbtree.transport.driver import CommandMode, DriverError, GripperAction, LimbState
from limbtree.transport.plant import (
    Actuation,
    BaseState,
    FaultClock,
    Plant,
    PlantDescription,
    PlantState,
)

_log = logging.getLogger(__name__)

DEFAULT_COMMAND_DEADLINE_S: Final = 0.25
"""How long an ``ee_twist`` or ``joint_torque`` command lasts without a newer one [s].

Ten periods of a 40 Hz mission, six of the slowest built-in mission (25 Hz): a runner that
sends one command per tick renews it long before it runs out.
"""
MAX_COMMAND_DEADLINE_S: Final = 10.0
"""The largest ``deadline_s`` a command may ask for [s]."""
DEADLINE_FIELD: Final = "deadline_s"
"""The optional command field giving the deadline [s]."""
DEADLINE_DETAIL_KEY: Final = "command_deadline"
"""The state ``detail`` key present while a limb rests because its command ran out.

Its value is a map: ``mode`` (the command that ran out) and ``expired_at`` (the plant time
it ran out at [s]).
"""
DEADLINE_MODES: Final = frozenset({CommandMode.EE_TWIST, CommandMode.JOINT_TORQUE})
"""The command modes that have a deadline (those that keep the limb moving on their own)."""


class DeadlinePlant(Plant):
    """Any plant, with deadlines on its limbs' ``ee_twist`` and ``joint_torque`` commands.

    Args:
        plant: the plant to wrap; every call is passed on.
        default_deadline_s: a command's deadline when it gives none [s], > 0.

    Raises:
        ValueError: for a deadline that is not > 0.
    """

    def __init__(
        self, plant: Plant, default_deadline_s: float = DEFAULT_COMMAND_DEADLINE_S
    ) -> None:
        if not default_deadline_s > 0.0:
            raise ValueError(f"default_deadline_s must be > 0 s, got {default_deadline_s!r}")
        self._plant = plant
        self._default = float(default_deadline_s)
        self._due: dict[str, tuple[float, CommandMode]] = {}
        self._expired: dict[str, dict[str, Any]] = {}

    @property
    def inner(self) -> Plant:
        """The wrapped plant."""
        return self._plant

    def deadline(self, limb: str) -> float | None:
        """The plant time [s] at which ``limb``'s current command runs out, or None."""
        due = self._due.get(limb)
        return None if due is None else due[0]

    # ---------------------------------------------------------------------------------- Plant

    def describe(self) -> PlantDescription:
        """The wrapped plant's description."""
        return self._plant.describe()

    @property
    def time(self) -> float:
        """The wrapped plant's time [s]."""
        return self._plant.time

    def advance(self, t: float) -> None:
        """Advance to ``t`` [s], stopping each limb whose command runs out on the way."""
        plant = self._plant
        while self._due:
            limb, (at_s, mode) = min(self._due.items(), key=lambda item: item[1][0])
            if at_s > t:
                break
            del self._due[limb]
            if at_s > plant.time:
                plant.advance(at_s)
            self._expire(limb, at_s, mode)
        plant.advance(t)

    def _expire(self, limb: str, at_s: float, mode: CommandMode) -> None:
        self._expired[limb] = {"mode": mode.value, "expired_at": at_s}
        _log.warning(
            "limb %s: no new command within the %s command's deadline (t=%.3f s); holding",
            limb,
            mode.value,
            at_s,
        )
        try:
            self._plant.command(limb, CommandMode.HOLD, {})
        except DriverError as exc:
            _log.error("limb %s could not be brought to rest: %s", limb, exc)

    def limb_state(self, limb: str) -> LimbState:
        """The wrapped plant's state of ``limb``, saying so when its command ran out."""
        state = self._plant.limb_state(limb)
        expired = self._expired.get(limb)
        if expired is None:
            return state
        return replace(state, detail={**state.detail, DEADLINE_DETAIL_KEY: expired})

    def base_state(self) -> BaseState:
        """The wrapped plant's base."""
        return self._plant.base_state()

    def state(self) -> PlantState:
        """The wrapped plant's state, with each limb as :meth:`limb_state` gives it."""
        names = self.describe().limb_names
        return PlantState(self.time, self.base_state(), {n: self.limb_state(n) for n in names})

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Pass the command on; an ``ee_twist`` or ``joint_torque`` one starts a deadline.

        ``payload``'s ``deadline_s`` [s] (validated by the schema) is taken out first.
        """
        deadline_s = payload.get(DEADLINE_FIELD)
        if deadline_s is not None:
            payload = {k: v for k, v in payload.items() if k != DEADLINE_FIELD}
        self._plant.command(limb, mode, payload)
        self._expired.pop(limb, None)
        if mode in DEADLINE_MODES:
            wait_s = self._default if deadline_s is None else float(deadline_s)
            self._due[limb] = (self._plant.time + wait_s, mode)
        else:
            self._due.pop(limb, None)

    def gripper(self, limb: str, action: GripperAction) -> None:
        """The wrapped plant's gripper."""
        self._plant.gripper(limb, action)

    def fault(self, limb: str, kind: str, params: Mapping[str, Any]) -> None:
        """The wrapped plant's faults."""
        self._plant.fault(limb, kind, params)

    def available(self, limb: str) -> bool:
        """The wrapped plant's availability."""
        return self._plant.available(limb)

    def actuate(self, limb: str, actuation: Actuation) -> None:
        """The wrapped plant's actuation."""
        self._plant.actuate(limb, actuation)

    def set_fault_clock(self, limb: str, clock: FaultClock | None) -> bool:
        """The wrapped plant's fault clock."""
        return self._plant.set_fault_clock(limb, clock)

    def close(self) -> None:
        """Close the wrapped plant."""
        self._plant.close()
