"""The base class a real limb implements: four small methods, the rest is done here.

A :class:`HardwareDriver` is a :class:`~limbtree.transport.driver.LimbDriver` for a
position-controlled limb. A subclass talks to the limb's bus and implements only:

- :meth:`HardwareDriver.read_joints`: the measured joint positions, velocities and efforts;
- :meth:`HardwareDriver.write_joint_targets`: send joint position setpoints;
- :meth:`HardwareDriver.power_state`: whether the joints have power;
- optionally :meth:`HardwareDriver.write_gripper`.

This class does everything else, the same way for every limb: the description from the
robot registry, command checking, seeded IK for ``ee_pose`` (with the failure reported rather
than sent to the joints), twist tracking, ``hold``, speed-limited setpoints (seed 000
Table I), the health flags and the state. The simulated limb
(:class:`~limbtree.robots.sim.SimulatedLimb`) is itself a ``HardwareDriver`` over a simulated
bus, so simulation runs exactly the code a real limb runs. ``docs/drivers.md`` has a complete
example.
"""

from __future__ import annotations

import dataclasses
import logging
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple

from limbtree.kinematics.pose import Pose
from limbtree.robots.registry import RobotSpec, load_robot
from limbtree.robots.tracking import (
    DEFAULT_IK_SEARCHES,
    CommandTracker,
    FloatArray,
    finite_time,
    joint_vector,
)
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    GripperAction,
    Health,
    LimbDescription,
    LimbDriver,
    LimbState,
)
from limbtree.transport.outage import Outage, OutageLog

if TYPE_CHECKING:
    from limbtree.kinematics.chain import IKResult

_log = logging.getLogger(__name__)

BUS_FAULT_DETAIL_KEY: Final = "bus_fault"
"""The state ``detail`` key present while the bus fails.

Its value is a map: ``call`` (:data:`READ` or :data:`WRITE`), ``error`` (``"OSError: ..."``),
``since`` (the driver time of the first failure [s]) and ``failed_ticks``.
"""
READ: Final = "read_joints"
"""``detail["bus_fault"]["call"]`` while :meth:`HardwareDriver.read_joints` fails."""
WRITE: Final = "write_joint_targets"
"""``detail["bus_fault"]["call"]`` while :meth:`HardwareDriver.write_joint_targets` fails."""
POWER: Final = "power_state"
"""The failing call when :meth:`HardwareDriver.power_state` raises.

The wire knows two calls (docs/protocol.md, ``BUS_FAULT``): a failing power read is a failing
read of the limb, so ``detail["bus_fault"]["call"]`` is then :data:`READ`; the refusals and
the log say "its power reads".
"""
_WHAT: Final = {READ: "its joint reads", WRITE: "its setpoint writes", POWER: "its power reads"}
_CALL: Final = {what: (READ if call == POWER else call) for call, what in _WHAT.items()}


class JointReading(NamedTuple):
    """One reading of a limb's joint sensors.

    Attributes:
        q: joint positions [rad or m], one per joint in the limb's order.
        dq: joint velocities [rad/s or m/s].
        effort: joint efforts [N m or N], or None where the limb does not sense them.
    """

    q: Sequence[float] | FloatArray
    dq: Sequence[float] | FloatArray
    effort: Sequence[float] | FloatArray | None = None


class HardwareDriver(LimbDriver):
    """A position-controlled limb: subclasses implement the bus, this class the rest.

    Each :meth:`advance` reads the joints, moves the joint reference towards the current goal
    by at most each joint's speed limit times the elapsed time, and writes it with
    :meth:`write_joint_targets`. While :meth:`power_state` is False the state stops updating
    (it keeps the last one, flagged ``POWER_OFF``), commands are ignored and nothing is
    written; when power returns the limb holds wherever it now is.

    A bus that fails (:meth:`read_joints`, :meth:`write_joint_targets` or :meth:`power_state`
    raises, or a reading is malformed) stops the limb: a limb must never be driven towards a
    goal without feedback. The goal is dropped and no setpoint towards it is written again.
    While the reads fail nothing at all is written, not even a hold: the servos keep the last
    setpoint that went through, at most one speed-limited step from the last sensed joints, so
    the limb stops there; a hold setpoint would be computed from a reading that may be seconds
    old and sent over a bus that is failing. While only the writes fail, each advance tries a
    hold at the joints it has just measured. The state stops updating while the reads fail (it
    keeps the last one); every state has ``BUS_FAULT`` and ``detail["bus_fault"]``
    (:data:`BUS_FAULT_DETAIL_KEY`); commands and gripper actions are refused with ``internal``
    saying what fails. The outage ends at the first :meth:`advance` whose read and hold setpoint
    (the measured joints) both succeed: the limb then holds where it is, and does not resume its
    old goal until commanded again. The first failure, a summary every 5 s and the recovery are
    logged; a new outage is logged again (:class:`~limbtree.transport.outage.OutageLog`).

    Args:
        robot: the robot, or its name in the registry.
        limb: the limb's name; None for a robot with a single limb.
        ik_searches: IK searches per ``ee_pose`` command (small: a command must not block).
        ik_seed: seed of the IK restarts (see :class:`~limbtree.robots.tracking.CommandTracker`).

    Raises:
        limbtree.robots.errors.UnknownRobotError: for an unknown robot name.
        limbtree.robots.errors.UnknownLimbError: if the robot has no such limb.
        ValueError: if ``ik_searches < 1`` or ``ik_seed < 0``.
    """

    #: The driver's name in ``describe`` (``LimbDescription.driver``).
    driver_name: ClassVar[str] = "hardware"
    #: The most time one setpoint may cover [s]: after a late :meth:`advance` (a read that
    #: blocked, a loop that stalled) the next setpoint is at most this much motion at the
    #: speed limits from the last, 1/20 s (the slowest ``--rate`` a hardware agent takes),
    #: not the whole gap, which a position servo would cover at its own speed. The limb then
    #: moves slower than its limits, never faster. None: no bound (the simulated limb, whose
    #: servos keep to the speed limits themselves and which lockstep steps may move far).
    max_setpoint_step_s: ClassVar[float | None] = 0.05

    def __init__(
        self,
        robot: RobotSpec | str,
        limb: str | None = None,
        *,
        ik_searches: int = DEFAULT_IK_SEARCHES,
        ik_seed: int = 0,
    ) -> None:
        spec = load_robot(robot) if isinstance(robot, str) else robot
        self._tracker = CommandTracker(spec, limb, ik_searches=ik_searches, ik_seed=ik_seed)
        self._t: float | None = None
        self._state: LimbState | None = None
        self._q: FloatArray | None = None
        self._gripper = "open" if self._tracker.limb.grippers else "none"
        self._interrupted = False
        self._ignored_commands = 0
        self._bus = OutageLog(
            _log,
            self._limb_text(),
            "it holds and commands are refused until they succeed",
            "it holds where it is until commanded",
        )

    # ------------------------------------------------------------------ the bus (subclasses)

    @abstractmethod
    def read_joints(self) -> JointReading:
        """Read the joint sensors now.

        Returns:
            The positions [rad or m], velocities [rad/s or m/s] and efforts [N m or N] (or
            None), one per joint in the limb's joint order.

        Raises:
            Exception: any, when the bus fails; it starts a bus outage (see the class): no
                setpoint is written and commands are refused until a read succeeds.
        """

    @abstractmethod
    def write_joint_targets(self, q: FloatArray) -> None:
        """Send joint position setpoints; the limb's own servos track them.

        Called once per :meth:`advance` while powered. The setpoints are inside the joint
        limits and never further from the previous ones than the speed limits allow.

        Args:
            q: ``(n,)`` setpoints [rad or m], in the limb's joint order.

        Raises:
            Exception: any, when the bus fails; it starts a bus outage (see the class): no
                new setpoint is computed from the goal and commands are refused until a hold
                setpoint at the measured joints goes through.
        """

    @abstractmethod
    def power_state(self) -> bool:
        """Whether the joints have power now (False: the limb is limp or switched off).

        Raises:
            Exception: any, when the bus fails; it starts a bus outage (see the class), as a
                failed :meth:`read_joints` does.
        """

    def write_gripper(self, action: GripperAction) -> None:
        """Open or close the gripper; override when the limb has one.

        Raises:
            DriverError: ``unsupported_mode``, by default.
        """
        raise DriverError(
            "unsupported_mode", f"{type(self).__name__} does not implement write_gripper"
        )

    # ------------------------------------------------------------------ hooks (optional)

    def sync(self, t: float) -> None:
        """Called first in every :meth:`advance`: bring the bus to time ``t`` [s].

        Hardware has nothing to do (the limb lives in real time); the simulated bus
        integrates its physics here.
        """

    def solve_ik(self, target: Pose, q0: FloatArray) -> IKResult:
        """The IK of an ``ee_pose`` command, seeded from ``q0`` (see :meth:`command`).

        Override only to change how IK fails or succeeds (the simulated limb injects IK
        errors here). An override may raise ``DriverError("ik_failed", message)`` to fail
        with its own message; the command is then flagged ``IK_FAILED`` like any failure.

        Args:
            target: the wanted end-effector pose, base frame.
            q0: ``(n,)`` the joint setpoint the servos are tracking now [rad or m] (the
                measured joints before the first setpoint).

        Returns:
            The IK result; ``success=False`` makes the command fail with ``ik_failed``.
        """
        return self._tracker.solve_ik(target, q0)

    def extra_health(self) -> Health:
        """Health flags the driver adds to every state (the simulated limb's faults)."""
        return Health.OK

    def extra_detail(self) -> Mapping[str, Any]:
        """Figures the driver adds to every state's ``detail``."""
        return {}

    # ------------------------------------------------------------------ LimbDriver

    @property
    def tracker(self) -> CommandTracker:
        """The command tracker: the limb, its chain and the joint reference."""
        return self._tracker

    @property
    def time(self) -> float:
        """The driver time of the last :meth:`advance` [s] (0 before the first)."""
        return 0.0 if self._t is None else self._t

    def describe(self) -> LimbDescription:
        """What this limb is, from the robot registry."""
        return self._tracker.describe(self.driver_name)

    def advance(self, t: float) -> None:
        """Read the limb at time ``t`` [s] and send it the next setpoint.

        A failing read or write does not raise: it starts or prolongs a bus outage (see the
        class), during which nothing is written.

        Raises:
            DriverError: ``bad_value`` if ``t`` is not finite or goes back in time.
        """
        t = finite_time(t, self._t)
        if t == self._t and self._state is not None and not self._back():
            return
        dt = 0.0 if self._t is None else t - self._t
        bound = self.max_setpoint_step_s
        if bound is not None:
            dt = min(dt, bound)  # (a late advance: no setpoint jumps by the whole gap)
        tracker = self._tracker
        failing = self._bus.outage is not None
        # The setpoint for t goes out before the bus moves to t, so a command given before
        # this advance moves the joints over the interval it closes, not one update later.
        # Not while the bus fails: nothing moves the limb until a reading says where it is.
        # (wrote: a bus call failed already in this advance, counted once, not tried again)
        wrote = False
        ahead = self._q is not None and not failing and not self._interrupted
        if ahead:
            try:
                ahead = bool(self.power_state()) and self.available
            except Exception as exc:
                self._bus_failed(POWER, t, exc)
                ahead = False
                wrote = True
        if ahead and self._q is not None:
            try:
                self.write_joint_targets(tracker.step(self._q, dt))
            except Exception as exc:
                self._bus_failed(WRITE, t, exc)
                wrote = True  # (no second try in this advance)
        self.sync(t)
        self._t = t
        try:
            powered = bool(self.power_state())
        except Exception as exc:
            # Not knowing whether the joints have power is a failing bus, like a failed read.
            if not wrote:
                self._bus_failed(POWER, t, exc)
            last = self._state
            self._freeze(last is None or not last.health & Health.POWER_OFF)
            return
        live = powered and self.available
        if not live:
            self._interrupted = True
            if self._state is not None:
                # The state stops updating: only its flags follow the faults.
                self._freeze(powered)
                return
        n = tracker.n
        try:
            reading = self.read_joints()
            q = joint_vector(reading[0], n, "read_joints q")
            dq = joint_vector(reading[1], n, "read_joints dq")
            raw_effort = reading[2] if len(reading) > 2 else None
            effort = (
                None if raw_effort is None else joint_vector(raw_effort, n, "read_joints effort")
            )
        except Exception as exc:
            if not wrote:
                self._bus_failed(READ, t, exc)
            self._freeze(powered)
            return
        self._q = q
        if live:
            if self._interrupted or self._bus.outage is not None:
                # Back from a power loss, a disassembly or a bus fault: stay where the limb
                # now is.
                tracker.hold(q)
                self._interrupted = False
            if not ahead and not wrote:
                try:
                    self.write_joint_targets(tracker.step(q, dt))
                except Exception as exc:
                    self._bus_failed(WRITE, t, exc)
                else:
                    self._bus_recovered(t)
            elif not wrote:
                self._bus_recovered(t)  # (nothing to end; short outages not yet logged)
        self._state = LimbState(
            t=t,
            q=tuple(q.tolist()),
            dq=tuple(dq.tolist()),
            ee_poses=tracker.ee_poses(q),
            effort=None if effort is None else tuple(effort.tolist()),
            gripper=self._gripper,
            health=self._health(powered),
            detail=self._detail(None),
        )

    @property
    def bus_fault(self) -> Outage | None:
        """The bus outage in progress, or None while the bus works."""
        return self._bus.outage

    def _bus_failed(self, call: str, t: float, exc: Exception) -> None:
        """Start or prolong a bus outage: ``call`` raised ``exc`` in the advance to ``t`` [s]."""
        self._bus.failed(t, _WHAT[call], exc)

    def _bus_recovered(self, t: float) -> None:
        """A read and a write succeeded at ``t`` [s]: end the bus outage, if any."""
        self._bus.succeeded(t)

    def _bus_refusal(self) -> DriverError | None:
        """The ``internal`` refusal of a command while the bus fails, or None."""
        outage = self._bus.outage
        if outage is None:
            return None
        what = outage.what
        return DriverError(
            "internal",
            f"{self._limb_text()}: {what} fail since t={outage.since_s:.2f} s "
            f"({outage.error}; {outage.failed_ticks} failed ticks); it holds; commands are "
            f"refused until {what.removeprefix('its ')} succeed",
        )

    def _limb_text(self) -> str:
        limb = self._tracker.limb
        return f"limb {limb.name!r} ({self._tracker.robot.name})"

    def _freeze(self, powered: bool) -> None:
        """Keep the last state, if any, with the flags and detail of now."""
        if self._state is not None:
            self._state = dataclasses.replace(
                self._state, health=self._health(powered), detail=self._detail(self._state)
            )

    def _back(self) -> bool:
        """Whether the limb is live again since its state stopped updating (power, reassembly).

        Then an :meth:`advance` to the same time reads it again: its state would otherwise
        stay the one from before the interruption.
        """
        if not self._interrupted:
            return False
        try:
            return bool(self.power_state()) and self.available
        except Exception:
            return False  # (the advance reads it again, and starts a bus outage)

    def state(self) -> LimbState:
        """The latest state; before the first :meth:`advance`, the limb read at t = 0 s.

        Raises:
            DriverError: ``internal`` when the bus has failed since the first reading (there
                is no state yet); the read is not tried again here: the next advance does.
        """
        if self._state is None and self._bus.outage is None:
            self.advance(self.time)
        if self._state is None:
            refusal = self._bus_refusal()
            if refusal is not None:
                raise refusal
            raise DriverError(  # pragma: no cover - advance() leaves a state or a fault
                "unavailable", "the limb has no state yet: it was never powered and available"
            )
        return self._state

    def command(self, mode: CommandMode, payload: Mapping[str, Any]) -> None:
        """Accept a command; the joints start moving at the next :meth:`advance`.

        ``ee_pose`` runs seeded IK now, from the joint setpoint the servos are tracking (the
        measured joints before the first): a redundant limb streamed pose targets then stays
        on one branch of its null space. Seeded from the measured joints, which lag the
        setpoint by a tick, the answers alternated between two null-space solutions and the
        motors chattered at half the command rate. Without a solution the goal
        does not change, ``IK_FAILED`` is set and ``ik_failed`` raised. A joint target
        outside the limits is clipped onto them and flagged ``JOINT_LIMIT``. While the power
        is off commands are ignored (counted in the state's ``detail``).

        Raises:
            DriverError: ``unsupported_mode`` (``joint_torque``), ``bad_value``,
                ``ik_failed``, ``unavailable`` while the limb is disassembled, or
                ``internal`` while its bus fails (see the class).
        """
        mode = self._mode(mode)
        if not self.available:
            raise DriverError("unavailable", "the limb is disassembled")
        refusal = self._bus_refusal()
        if refusal is not None:
            raise refusal
        if mode is CommandMode.JOINT_TORQUE:
            raise DriverError(
                "unsupported_mode",
                f"{self.driver_name} limbs are position-controlled and refuse joint_torque; "
                f"valid modes: {', '.join(m.value for m in self.describe().command_modes)}",
            )
        tracker = self._tracker
        if mode is CommandMode.JOINT_POSITION:
            target = tracker.joint_target(payload)
        elif mode is CommandMode.EE_POSE:
            pose = tracker.ee_target(payload)
        elif mode is CommandMode.EE_TWIST:
            twist = tracker.twist(payload)
        if not self._power_or_refuse():
            self._ignored_commands += 1
            return
        q_now = self._measured()
        if mode is CommandMode.JOINT_POSITION:
            tracker.track_joints(target, mode, None)
        elif mode is CommandMode.EE_POSE:
            try:
                seed = tracker.reference
                plan = tracker.plan_path(pose, q_now if seed is None else seed, self.solve_ik)
            except DriverError as exc:
                if exc.code == "ik_failed":
                    tracker.ik_failed(float("inf"), str(exc))
                raise
            if not plan.success:
                tracker.ik_failed(plan.residual, plan.reason)
                raise DriverError(
                    "ik_failed",
                    "no IK solution on the limb's branch for the end-effector pose "
                    f"{_pose_text(pose)}: "
                    f"{plan.reason} (residual {plan.residual:.3g} after {plan.searches} "
                    "searches); the limb did not move",
                )
            tracker.track_path(plan, mode)
        elif mode is CommandMode.EE_TWIST:
            tracker.track_twist(twist)
        else:
            tracker.hold(q_now)

    def gripper(self, action: GripperAction) -> None:
        """Open or close the gripper (ignored while the power is off).

        Raises:
            DriverError: ``unsupported_mode`` when the limb has no gripper, ``bad_value``
                for an unknown action, ``unavailable`` while disassembled, ``internal``
                while the bus fails.
        """
        if not self._tracker.limb.grippers:
            name = self._tracker.limb.name
            raise DriverError("unsupported_mode", f"limb {name!r} has no gripper")
        try:
            action = GripperAction(action)
        except ValueError:
            valid = ", ".join(a.value for a in GripperAction)
            raise DriverError(
                "bad_value", f"unknown gripper action {action!r}; valid: {valid}"
            ) from None
        if not self.available:
            raise DriverError("unavailable", "the limb is disassembled")
        refusal = self._bus_refusal()
        if refusal is not None:
            raise refusal
        if not self._power_or_refuse():
            self._ignored_commands += 1
            return
        self.write_gripper(action)
        self._gripper = "open" if action is GripperAction.OPEN else "closed"

    # ------------------------------------------------------------------ helpers

    def _power_or_refuse(self) -> bool:
        """:meth:`power_state` for a command; when it raises, a bus outage and the refusal.

        Raises:
            DriverError: ``internal``: the power read failed (a bus outage starts).
        """
        try:
            return bool(self.power_state())
        except Exception as exc:
            self._bus_failed(POWER, self.time, exc)
            refusal = self._bus_refusal()
            if refusal is None:  # pragma: no cover - _bus_failed just started an outage
                raise
            raise refusal from None

    def _measured(self) -> FloatArray:
        if self._q is None:
            self.state()
        if self._q is None:  # pragma: no cover - state() read the joints or raised
            raise DriverError("unavailable", "the joints were never read")
        return self._q

    def _detail(self, frozen: LimbState | None) -> dict[str, Any]:
        base = self._tracker.detail() if frozen is None else frozen.detail
        detail = {**base, **self.extra_detail()}
        if self._ignored_commands:
            detail["ignored_commands"] = self._ignored_commands
        outage = self._bus.outage
        if outage is not None:
            detail[BUS_FAULT_DETAIL_KEY] = {"call": _CALL[outage.what], **outage.detail()}
        else:
            detail.pop(BUS_FAULT_DETAIL_KEY, None)
        return detail

    def _health(self, powered: bool) -> Health:
        health = self._tracker.health() | self.extra_health()
        if self._bus.outage is not None:
            health |= Health.BUS_FAULT
        return health if powered else health | Health.POWER_OFF

    @staticmethod
    def _mode(mode: CommandMode | str) -> CommandMode:
        try:
            return CommandMode(mode)
        except ValueError:
            valid = ", ".join(m.value for m in CommandMode)
            message = f"unknown command mode {mode!r}; valid: {valid}"
            raise DriverError("bad_value", message) from None


def _pose_text(pose: Pose) -> str:
    """A pose for a person: ``at (199.8, 0.0, 249.4) mm, quaternion (x, y, z, w) (...)``.

    A coordinate of a kilometre or more is written in powers of ten (``1e+303``), not in
    hundreds of digits.
    """
    x, y, z = (_millimetres(1000.0 * v) for v in pose.position.tolist())
    quaternion = ", ".join(f"{v:.3f}" for v in pose.quaternion.tolist())
    return f"at ({x}, {y}, {z}) mm, quaternion (x, y, z, w) ({quaternion})"


def _millimetres(value: float) -> str:
    """``value`` [mm] to 0.1 mm, or to 4 digits from a kilometre on."""
    return f"{value:.1f}" if abs(value) < 1e6 else f"{value:.4g}"
