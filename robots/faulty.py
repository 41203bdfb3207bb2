"""The fault decorator: seed 000 Table II's faults around any plant.

:class:`FaultyPlant` wraps a plant and owns everything about faults: their kinds and
parameters (:mod:`limbtree.transport.faults`, the one definition), their checking, their
durations and schedules, the health flags and the ``faults`` detail they add to a limb's
state. What a fault does to the physics it expresses as an
:class:`~limbtree.transport.plant.Actuation` (blocked or slowed joints, power cut, limb
detached, IK failing) that it sets on the wrapped plant; the simulator branches on nothing
else. A plant that can fire fault events at their exact times while it integrates (the
kinematic plant) gets a :class:`~limbtree.transport.plant.FaultClock` per limb; other plants
have them fired at each ``advance``.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from limbtree.transport.driver import CommandMode, DriverError, GripperAction, Health, LimbState
from limbtree.transport.faults import (
    DEFAULT_SLOWDOWN_FACTOR,
    FAULT_PARAMS,
    SLOWDOWN_FACTOR_HIGH,
    SLOWDOWN_FACTOR_LOW,
    FaultKind,
    ScheduledFault,
)
from limbtree.transport.plant import (
    HEALTHY,
    Actuation,
    BaseState,
    Plant,
    PlantDescription,
)

__all__ = ["TIME_EPS", "FaultyPlant"]

FloatArray = npt.NDArray[np.float64]

#: A fault ending this close after an event [s] is taken to end at it (float round-off).
TIME_EPS: Final = 1e-12


@dataclass
class _Fault:
    kind: FaultKind
    end_s: float | None = None
    joints: FloatArray | None = None  # bool mask as 0/1, or None for every joint
    factor: float = 1.0
    count: int | None = None


class _LimbFaults:
    """The faults of one limb: parsed, started, ended, scheduled; a ``FaultClock``."""

    def __init__(self, owner: FaultyPlant, limb: str, joint_names: tuple[str, ...]) -> None:
        self.owner = owner
        self.limb = limb
        self.joint_names = joint_names
        self.faults: dict[FaultKind, _Fault] = {}
        self.schedule: deque[ScheduledFault] = deque()
        self.version = 0

    # -------------------------------------------------------------- FaultClock

    def next_event_s(self) -> float | None:
        times = [f.end_s for f in self.faults.values() if f.end_s is not None]
        if self.schedule:
            times.append(self.schedule[0].at_s)
        return min(times) if times else None

    def fire(self, now_s: float) -> None:
        for kind, fault in list(self.faults.items()):
            if fault.end_s is not None and fault.end_s <= now_s + TIME_EPS:
                self.end(kind)
        while self.schedule and self.schedule[0].at_s <= now_s:
            scheduled = self.schedule.popleft()
            self.start(self.parse(scheduled.kind, scheduled.params, start_s=scheduled.at_s))

    # -------------------------------------------------------------- faults

    def parse(self, kind: str, params: Mapping[str, Any], *, start_s: float) -> _Fault:
        try:
            fault_kind = FaultKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in FaultKind)
            raise DriverError(
                "unknown_fault", f"unknown fault {kind!r}; valid: {valid}", "kind"
            ) from None
        if not isinstance(params, Mapping):
            raise DriverError(
                "bad_value", f"fault {kind!r}: params must be a map, got {params!r}", "params"
            )
        allowed = FAULT_PARAMS[fault_kind]
        for name in params:
            if name not in allowed:
                raise DriverError(
                    "bad_value",
                    f"fault {kind!r} has no parameter {name!r}; "
                    f"valid: {', '.join(allowed) or '(none)'}",
                    "params",
                )
        fault = _Fault(fault_kind)
        if "duration_s" in params:
            duration = params["duration_s"]
            if not _is_number(duration) or not duration > 0.0:
                raise DriverError(
                    "bad_value",
                    f"fault {kind!r}: duration_s must be > 0 [s], got {duration!r}",
                    "params",
                )
            fault.end_s = start_s + float(duration)
        if "joints" in params:
            fault.joints = self._joint_mask(kind, params["joints"])
        if "factor" in params:
            factor = params["factor"]
            if not _is_number(factor) or not SLOWDOWN_FACTOR_LOW < factor < SLOWDOWN_FACTOR_HIGH:
                raise DriverError(
                    "bad_value",
                    f"fault {kind!r}: factor must be in ({SLOWDOWN_FACTOR_LOW:g}, "
                    f"{SLOWDOWN_FACTOR_HIGH:g}), got {factor!r}",
                    "params",
                )
            fault.factor = float(factor)
        elif fault_kind is FaultKind.SLOWDOWN:
            fault.factor = DEFAULT_SLOWDOWN_FACTOR
        if "count" in params:
            count = params["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise DriverError(
                    "bad_value",
                    f"fault {kind!r}: count must be an int >= 1, got {count!r}",
                    "params",
                )
            fault.count = count
        return fault

    def _joint_mask(self, kind: str, joints: Any) -> FloatArray:
        names = self.joint_names
        valid = f"indices 0..{len(names) - 1} or names {', '.join(names)}"
        if isinstance(joints, str | int) and not isinstance(joints, bool):
            joints = [joints]
        if not isinstance(joints, Sequence) or isinstance(joints, str) or not joints:
            raise DriverError(
                "bad_value", f"fault {kind!r}: joints must be a non-empty list of {valid}", "params"
            )
        mask = np.zeros(len(names))
        for joint in joints:
            if isinstance(joint, int) and not isinstance(joint, bool) and 0 <= joint < len(names):
                mask[joint] = 1.0
            elif isinstance(joint, str) and joint in names:
                mask[names.index(joint)] = 1.0
            else:
                raise DriverError(
                    "bad_value", f"fault {kind!r}: joints has {joint!r}; valid: {valid}", "params"
                )
        return mask

    def start(self, fault: _Fault) -> None:
        kind = fault.kind
        if kind is FaultKind.CLEAR:
            for active in list(self.faults):
                self.end(active)
            return
        if kind is FaultKind.REASSEMBLE:
            self.end(FaultKind.DISASSEMBLY)
            return
        if kind is FaultKind.POWER_ON:
            self.end(FaultKind.POWER_OFF)
            return
        self.faults[kind] = fault
        self._changed()

    def end(self, kind: FaultKind) -> None:
        if self.faults.pop(kind, None) is not None:
            self._changed()

    def _changed(self) -> None:
        self.version += 1
        self.owner.inner.actuate(self.limb, self.actuation())

    def actuation(self) -> Actuation:
        """What the faults in force leave of the limb's actuation."""
        faults = self.faults
        if not faults:
            return HEALTHY
        n = len(self.joint_names)
        free: FloatArray = np.ones(n)
        blockage = faults.get(FaultKind.BLOCKAGE)
        if blockage is not None:
            free = free - (1.0 if blockage.joints is None else blockage.joints)
        scale: tuple[float, ...] | None = None
        slowdown = faults.get(FaultKind.SLOWDOWN)
        if slowdown is not None:
            slowed = np.ones(n) if slowdown.joints is None else slowdown.joints
            scale = tuple((1.0 - slowed * (1.0 - slowdown.factor)).tolist())
        return Actuation(
            free=None if blockage is None else tuple(free.tolist()),
            speed_scale=scale,
            powered=FaultKind.POWER_OFF not in faults,
            attached=FaultKind.DISASSEMBLY not in faults,
            ik_error=FaultKind.IK_ERROR in faults,
        )

    def health(self) -> Health:
        flags = Health.OK
        if FaultKind.BLOCKAGE in self.faults:
            flags |= Health.BLOCKED
        if FaultKind.SLOWDOWN in self.faults:
            flags |= Health.SLOWED
        if FaultKind.DISASSEMBLY in self.faults:
            flags |= Health.DISASSEMBLED
        return flags

    def names(self) -> list[str]:
        return sorted(kind.value for kind in self.faults)

    def ik_failed(self) -> None:
        """An ``ee_pose`` command failed under an ``ik_error`` fault: count it down."""
        fault = self.faults.get(FaultKind.IK_ERROR)
        if fault is not None and fault.count is not None:
            fault.count -= 1
            if fault.count <= 0:
                self.end(FaultKind.IK_ERROR)


class FaultyPlant(Plant):
    """Seed 000 Table II's faults, injected live or scheduled, around any plant.

    Kinds and parameters (:data:`~limbtree.transport.faults.FAULT_PARAMS`; all take
    ``duration_s`` [s] > 0 except the three that end faults):

    - ``blockage``: ``joints`` (indices or names; default all) stop moving. ``BLOCKED``.
    - ``slowdown``: ``factor`` in (0, 1) (default 0.5) scales the speed of ``joints``
      (default all). ``SLOWED``.
    - ``disassembly``: the limb detaches: it stops moving, its state freezes and it is not
      :meth:`available`. ``DISASSEMBLED``. Ended by ``reassemble``.
    - ``power_off``: the state stops updating (``POWER_OFF``), commands are ignored and the
      joints fall towards the ``slumped`` posture. Ended by ``power_on``, after which the state
      shows the fallen joints and the limb holds there.
    - ``ik_error``: every ``ee_pose`` command fails with ``ik_failed`` (``IK_FAILED``), or only
      the next ``count`` ones.
    - ``clear``: ends every fault.

    A fault of a kind already in force replaces it. Every limb state gains ``detail["faults"]``,
    the names of the faults in force.

    Args:
        plant: the plant to wrap; it must take :meth:`~limbtree.transport.plant.Plant.actuate`
            (simulated plants do); the decorator closes it.
        schedule: faults that start by themselves (a ``limb`` of None hits every limb).

    Raises:
        DriverError: ``unknown_fault`` or ``bad_value`` for a wrong scheduled fault (naming
            it), or a scheduled fault on a limb the plant does not have.
    """

    def __init__(self, plant: Plant, schedule: Sequence[ScheduledFault] = ()) -> None:
        self.inner = plant
        self._description = plant.describe()
        self._limbs: dict[str, _LimbFaults] = {}
        self._exact: dict[str, bool] = {}
        for limb in self._description.limbs:
            faults = _LimbFaults(self, limb.name, tuple(j.name for j in limb.description.joints))
            self._limbs[limb.name] = faults
            self._exact[limb.name] = plant.set_fault_clock(limb.name, faults)
        for scheduled in sorted(schedule, key=lambda f: f.at_s):
            targets = self._description.limb_names if scheduled.limb is None else (scheduled.limb,)
            for name in targets:
                faults = self._faults(name)
                faults.parse(scheduled.kind, scheduled.params, start_s=scheduled.at_s)
                faults.schedule.append(scheduled)
        self._decorated: dict[str, tuple[LimbState, int, LimbState]] = {}

    def _faults(self, limb: str) -> _LimbFaults:
        faults = self._limbs.get(limb)
        if faults is None:
            self._description.limb(limb)  # raises, naming the plant's limbs
            raise AssertionError("unreachable")  # pragma: no cover
        return faults

    # -------------------------------------------------------------- Plant

    def describe(self) -> PlantDescription:
        """The wrapped plant's description."""
        return self._description

    @property
    def time(self) -> float:
        """The wrapped plant's time [s]."""
        return self.inner.time

    def advance(self, t: float) -> None:
        """Advance the plant; faults start and end at their times on the way."""
        for name, faults in self._limbs.items():
            if self._exact[name]:
                continue
            while True:
                event_s = faults.next_event_s()
                if event_s is None or event_s > t:
                    break
                faults.fire(event_s)
        self.inner.advance(t)

    def limb_state(self, limb: str) -> LimbState:
        """The plant's limb state with the faults' health flags and ``detail["faults"]``."""
        faults = self._faults(limb)
        state = self.inner.limb_state(limb)
        cached = self._decorated.get(limb)
        if cached is not None and cached[0] is state and cached[1] == faults.version:
            return cached[2]
        decorated = dataclasses.replace(
            state,
            health=state.health | faults.health(),
            detail={**state.detail, "faults": faults.names()},
        )
        self._decorated[limb] = (state, faults.version, decorated)
        return decorated

    def base_state(self) -> BaseState:
        """The wrapped plant's base."""
        return self.inner.base_state()

    def command(self, limb: str, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Command the limb; an ``ee_pose`` failing under ``ik_error`` counts the fault down."""
        faults = self._faults(limb)
        try:
            self.inner.command(limb, mode, payload)
        except DriverError as exc:
            if exc.code == "ik_failed" and FaultKind.IK_ERROR in faults.faults:
                faults.ik_failed()
            raise

    def gripper(self, limb: str, action: GripperAction) -> None:
        """The limb's gripper."""
        self.inner.gripper(limb, action)

    def fault(self, limb: str, kind: str, params: Mapping[str, Any]) -> None:
        """Inject a fault into ``limb`` now; it lasts ``duration_s`` or until ended.

        Raises:
            DriverError: ``unknown_fault`` (listing the valid kinds) or ``bad_value`` (naming
                the parameter, or the plant's limbs for an unknown limb).
        """
        faults = self._faults(limb)
        faults.start(faults.parse(kind, params, start_s=self.time))

    def available(self, limb: str) -> bool:
        """False while the limb is disassembled."""
        return self.inner.available(limb)

    def close(self) -> None:
        """Close the wrapped plant."""
        self.inner.close()


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
