"""Simulated limbs: any limb of the registry, with the papers' faults and non-idealities.

A :class:`SimulatedLimb` is a :class:`~limbtree.robots.driver.HardwareDriver` over a
simulated bus: the command handling, IK and speed limiting are exactly those a real limb
runs, and this module adds only the physics behind the bus:

- joint servos that track their setpoints at the limb's speed limit (seed 000 Table I:
  heavy limb 0.15 rad/s, quadruped legs 10 rad/s, light limb 3.1 rad/s);
- the non-idealities of seed 002 (Sec. III, V), all off by default so that the seed 000
  missions are exact: command latency, joint sensor noise, joint backlash (up to 10 degrees)
  and link flex (end-effector errors up to about 10 cm). The limb's own sensors sit on the
  motor side, so its joints and forward kinematics see neither backlash nor flex; only an
  external motion capture (:mod:`limbtree.robots.mocap`, via :meth:`SimulatedLimb.true_ee_pose`)
  does, which is the point of seed 002;
- the faults of seed 000 Table II, injected live with :meth:`SimulatedLimb.fault` or
  scheduled in :attr:`SimConfig.faults`: ``blockage``, ``slowdown``, ``disassembly``
  (ended by ``reassemble``), ``power_off`` (the limb falls; ended by ``power_on``),
  ``ik_error``, and ``clear`` to end them all. Each takes an optional ``duration_s``.

Time passes only through :meth:`SimulatedLimb.advance`; randomness comes only from
``numpy.random.default_rng`` seeded by the constructor's ``seed``. The same seed, config and
calls give the same states, bit for bit.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from limbtree.kinematics.pose import Pose
from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.robots.errors import RobotsError
from limbtree.robots.registry import RobotSpec
from limbtree.robots.tracking import (
    DEFAULT_IK_SEARCHES,
    FloatArray,
    rotated,
)
from limbtree.transport.driver import DriverError, GripperAction, Health
from limbtree.transport.schema import FaultKind

if TYPE_CHECKING:
    from limbtree.kinematics.chain import IKResult

#: Posture the joints fall towards when the power is cut (``robot.yaml`` postures).
SLUMPED_POSTURE: Final = "slumped"
#: Faults that only end others; they take no ``duration_s``.
_ENDING_FAULTS: Final = (FaultKind.REASSEMBLE, FaultKind.POWER_ON, FaultKind.CLEAR)
#: The parameters each fault kind accepts.
FAULT_PARAMS: Final[Mapping[FaultKind, tuple[str, ...]]] = MappingProxyType(
    {
        FaultKind.BLOCKAGE: ("joints", "duration_s"),
        FaultKind.SLOWDOWN: ("factor", "joints", "duration_s"),
        FaultKind.DISASSEMBLY: ("duration_s",),
        FaultKind.REASSEMBLE: (),
        FaultKind.POWER_OFF: ("duration_s",),
        FaultKind.POWER_ON: (),
        FaultKind.IK_ERROR: ("count", "duration_s"),
        FaultKind.CLEAR: (),
    }
)
#: Speed factor of a ``slowdown`` without ``factor``.
DEFAULT_SLOWDOWN_FACTOR: Final = 0.5
#: A ``slowdown`` factor must lie strictly above this [1] ...
SLOWDOWN_FACTOR_LOW: Final = 0.0
#: ... and strictly below this [1] (a factor of 1 would be no slowdown at all).
SLOWDOWN_FACTOR_HIGH: Final = 1.0
#: A fault ending this close after an event [s] is taken to end at it (float round-off).
_TIME_EPS: Final = 1e-12


class SimConfigError(RobotsError, ValueError):
    """A :class:`SimConfig` or a simulator option was given a value it cannot use.

    Attributes:
        option: the offending field's name.
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


@dataclass(frozen=True)
class ScheduledFault:
    """A fault that starts by itself at a driver time.

    Attributes:
        at_s: when it starts [s], driver time.
        kind: a :class:`~limbtree.transport.schema.FaultKind` value.
        params: its parameters, as for :meth:`SimulatedLimb.fault` (``duration_s`` included).
    """

    at_s: float
    kind: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not (isinstance(self.at_s, int | float) and math.isfinite(self.at_s)):
            raise SimConfigError("faults.at_s", f"must be a finite time [s], got {self.at_s!r}")
        object.__setattr__(self, "at_s", float(self.at_s))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


@dataclass(frozen=True)
class SimConfig:
    """How a simulated limb departs from the ideal one. The defaults are ideal.

    Attributes:
        latency_s: delay [s] between a setpoint being sent and the servos acting on it
            (network and bus latency; seed 000 Sec. III-B).
        joint_noise_rad: standard deviation of the noise on each reported joint position
            [rad or m]; the reported end-effector pose is FK of the noisy joints.
        backlash_rad: dead band [rad] between motor and joint output, one value for every
            joint or one per joint (seed 002 Sec. V: up to 10 degrees). After a reversal the
            motor turns this far before the output follows.
        flex: link compliance [1/m]: the true end-effector sags along gravity by
            ``flex * h**2 * load`` [m], where ``h`` [m] is its horizontal distance from the
            limb base and ``load = 1 + payload_kg / limb mass``; it also tilts by the slope
            of that sag. ``flex = 0.1`` gives 10 cm at 1 m (seed 002 Sec. V: errors on the
            order of 10 cm).
        payload_kg: mass carried at the end-effector [kg], for ``flex``.
        vibration_hz: natural frequency [Hz] of the limb's first bending mode; 0 for a rigid
            limb. The true end-effector is then a damped oscillator tied to where the rigid
            (sagged) arm puts it: each change of the arm's speed sets it swinging, and a
            limb that stops sharply wobbles for a while before it stands still (seed 002:
            "accumulated flex and wobble"; Version 1 waits for that to settle).
        vibration_damping: damping ratio of that mode, in (0, 1).
        mocap_noise_m: standard deviation [m] per axis of the position noise of the motion
            capture a simulated world publishes (:class:`~limbtree.robots.assembly.AssemblyLimb`);
            None for the capture's default (0.3 mm). Only a limb with a world has a capture.
        mocap_rot_noise_rad: the same for its rotation noise [rad]; None for 0.1 degree.
        gravity: direction of gravity in the limb base frame (normalised; for ``flex``).
        initial_posture: the posture the limb starts in (``robot.yaml`` postures).
        fall_time_s: time constant [s] of the fall towards the ``slumped`` posture when
            the power is cut.
        ik_searches: IK searches per ``ee_pose`` command.
        faults: faults that start by themselves.
    """

    latency_s: float = 0.0
    joint_noise_rad: float = 0.0
    backlash_rad: float | tuple[float, ...] = 0.0
    flex: float = 0.0
    payload_kg: float = 0.0
    vibration_hz: float = 0.0
    vibration_damping: float = 0.1
    mocap_noise_m: float | None = None
    mocap_rot_noise_rad: float | None = None
    gravity: tuple[float, float, float] = (0.0, 0.0, -1.0)
    initial_posture: str = "home"
    fall_time_s: float = 0.2
    ik_searches: int = DEFAULT_IK_SEARCHES
    faults: tuple[ScheduledFault, ...] = ()

    def __post_init__(self) -> None:
        for name in ("latency_s", "joint_noise_rad", "flex", "payload_kg", "vibration_hz"):
            _check_number(name, getattr(self, name), low=0.0)
        _check_number("vibration_damping", self.vibration_damping, low=0.0, strict=True)
        if self.vibration_damping >= 1.0:
            raise SimConfigError(
                "vibration_damping",
                f"must be < 1 (an underdamped mode), got {self.vibration_damping!r}",
            )
        for name in ("mocap_noise_m", "mocap_rot_noise_rad"):
            if getattr(self, name) is not None:
                _check_number(name, getattr(self, name), low=0.0)
                object.__setattr__(self, name, float(getattr(self, name)))
        _check_number("fall_time_s", self.fall_time_s, low=0.0, strict=True)
        backlash = self.backlash_rad
        if isinstance(backlash, int | float):
            _check_number("backlash_rad", backlash, low=0.0)
            object.__setattr__(self, "backlash_rad", float(backlash))
        else:
            values = tuple(backlash)
            for value in values:
                _check_number("backlash_rad", value, low=0.0)
            object.__setattr__(self, "backlash_rad", tuple(float(v) for v in values))
        gravity = tuple(self.gravity)
        norm = math.sqrt(sum(float(g) ** 2 for g in gravity)) if len(gravity) == 3 else 0.0
        if not (math.isfinite(norm) and norm > 0.0):
            raise SimConfigError("gravity", f"must be a non-zero 3-vector, got {self.gravity!r}")
        object.__setattr__(self, "gravity", tuple(float(g) / norm for g in gravity))
        posture = self.initial_posture
        if not isinstance(posture, str) or not posture:
            raise SimConfigError("initial_posture", f"must be a posture name, got {posture!r}")
        searches = self.ik_searches
        if isinstance(searches, bool) or not isinstance(searches, int) or searches < 1:
            raise SimConfigError("ik_searches", f"must be an int >= 1, got {searches!r}")
        faults = tuple(self.faults)
        for fault in faults:
            if not isinstance(fault, ScheduledFault):
                raise SimConfigError("faults", f"expected ScheduledFault values, got {fault!r}")
        object.__setattr__(self, "faults", faults)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SimConfig:
        """Build from ``KEY=VALUE`` text options (``limbtree agent --sim-option``).

        Numbers are parsed as floats (``ik_searches`` as an int); ``backlash_rad`` and
        ``gravity`` take comma-separated lists; ``faults`` cannot be given as text.

        Args:
            options: option name -> text value.

        Raises:
            SimConfigError: for an unknown option (it lists the valid ones) or a bad value.
        """
        valid = [f.name for f in fields(cls) if f.name != "faults"]
        values: dict[str, Any] = {}
        for key, text in options.items():
            if key not in valid:
                raise SimConfigError(key, f"unknown simulator option; valid: {', '.join(valid)}")
            try:
                if key == "initial_posture":
                    values[key] = text
                elif key == "ik_searches":
                    values[key] = int(text)
                elif key == "gravity" or (key == "backlash_rad" and "," in text):
                    values[key] = tuple(float(part) for part in text.split(","))
                else:
                    values[key] = float(text)
            except ValueError:
                raise SimConfigError(key, f"cannot read {text!r} as a value for it") from None
        return cls(**values)


def _check_number(name: str, value: object, *, low: float, strict: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SimConfigError(name, f"must be a finite number, got {value!r}")
    if value < low or (strict and value == low):
        raise SimConfigError(name, f"must be {'>' if strict else '>='} {low}, got {value!r}")


def sagged_pose(pose: Pose, flex: float, gravity: FloatArray, load: float = 1.0) -> Pose:
    """The pose of an end-effector after link flex: sunk along gravity and tilted down.

    The sag is ``d = flex * h**2 * load`` [m] along ``gravity``, ``h`` [m] being the
    horizontal distance of the end-effector from the base origin (a limb whose joints give
    a little under the torque of its own weight); the frame also turns downwards by the
    slope of that sag, ``atan(2 d / h)``, about the horizontal axis across the arm.

    Args:
        pose: the rigid (FK) pose, base frame.
        flex: compliance [1/m], >= 0.
        gravity: ``(3,)`` unit vector of gravity in the base frame.
        load: load factor, >= 0 (1 for the limb's own weight).

    Returns:
        The sagged pose.
    """
    if flex == 0.0 or load == 0.0:
        return pose
    p = pose.position
    radial = p - float(p @ gravity) * gravity
    h = float(np.linalg.norm(radial))
    if h == 0.0:
        return pose
    sag = flex * h * h * load
    axis = np.cross(radial / h, gravity)
    return Pose(p + sag * gravity, rotated(pose, axis * math.atan(2.0 * sag / h)))


@dataclass
class _Fault:
    kind: FaultKind
    end_s: float | None = None
    joints: FloatArray | None = None  # bool mask as 0/1, or None for every joint
    factor: float = 1.0
    count: int | None = None


class SimulatedLimb(HardwareDriver):
    """A limb of the registry, simulated; deterministic for a seed.

    Args:
        robot: the robot, or its name in the registry.
        limb: the limb's name; None for a robot with a single limb.
        seed: seed of the sensor noise and the IK restarts.
        config: the non-idealities and scheduled faults (default: ideal, no faults).

    Raises:
        limbtree.robots.errors.UnknownRobotError: for an unknown robot name.
        limbtree.robots.errors.UnknownLimbError: if the robot has no such limb.
        limbtree.robots.errors.UnknownPostureError: for an unknown ``initial_posture``.
        SimConfigError: for a negative seed, or a ``backlash_rad`` of the wrong length.
        DriverError: ``unknown_fault`` or ``bad_value`` for a wrong scheduled fault.
    """

    driver_name = "sim"

    def __init__(
        self,
        robot: RobotSpec | str,
        limb: str | None = None,
        *,
        seed: int = 0,
        config: SimConfig | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SimConfigError("seed", f"must be an int >= 0, got {seed!r}")
        config = SimConfig() if config is None else config
        super().__init__(robot, limb, ik_searches=config.ik_searches, ik_seed=seed)
        self.config: Final[SimConfig] = config
        spec = self.tracker.limb
        n = spec.n
        self._rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
        q0 = np.array(spec.posture(config.initial_posture), dtype=np.float64)
        backlash = config.backlash_rad
        if isinstance(backlash, tuple) and len(backlash) != n:
            raise SimConfigError(
                "backlash_rad",
                f"give one value or {n} (one per joint of limb {spec.name!r}), got {len(backlash)}",
            )
        half_backlash = np.asarray(backlash, dtype=np.float64) / 2.0
        self._half_backlash: list[float] = np.broadcast_to(half_backlash, (n,)).tolist()
        self._gravity = np.array(config.gravity, dtype=np.float64)
        self._load = 1.0 + (config.payload_kg / spec.mass_kg if spec.mass_kg > 0.0 else 0.0)
        slumped = spec.postures.get(SLUMPED_POSTURE)
        self._slumped = None if slumped is None else np.array(slumped, dtype=np.float64)
        self._max_speed = self.tracker.max_speed
        # The plant: motor side (what the joint sensors read), output side (after backlash).
        self._plant_t = 0.0
        self._motor = q0.copy()
        self._output = q0.copy()
        self._velocity = np.zeros(n)
        self._setpoint = q0.copy()
        self._pending: deque[tuple[float, FloatArray]] = deque()
        # With a bending mode, the rigid (sagged) pose is computed once per integration step
        # for the oscillator and kept for true_ee_pose.
        self._rigid = self._rigid_pose()
        self._wobble = (
            None
            if config.vibration_hz == 0.0
            else _Wobble(config.vibration_hz, config.vibration_damping, self._rigid.position)
        )
        self._powered = True
        self._disassembled = False
        self._faults: dict[FaultKind, _Fault] = {}
        self._free, self._speed = self._servo_limits()
        for scheduled in config.faults:
            self._parse(scheduled.kind, scheduled.params, start_s=scheduled.at_s)
        self._schedule = deque(sorted(config.faults, key=lambda f: f.at_s))
        # The servos start holding the initial posture (not a noisy reading of it).
        self.tracker.hold(q0)

    # ------------------------------------------------------------------ the simulated bus

    def read_joints(self) -> JointReading:
        """The motor-side joint positions (with sensor noise) and velocities; no efforts."""
        q = self._motor
        sigma = self.config.joint_noise_rad
        if sigma > 0.0:
            q = q + self._rng.normal(0.0, sigma, q.shape)
        return JointReading(q.copy(), self._velocity.copy(), None)

    def write_joint_targets(self, q: FloatArray) -> None:
        """Queue setpoints; the servos act on them ``latency_s`` later."""
        self._pending.append((self.time + self.config.latency_s, np.array(q, dtype=np.float64)))

    def power_state(self) -> bool:
        """False while a ``power_off`` fault lasts."""
        return self._powered

    def write_gripper(self, action: GripperAction) -> None:
        """The simulated gripper opens and closes at once."""

    @property
    def available(self) -> bool:
        """False while disassembled: the agent then stops answering and publishing."""
        return not self._disassembled

    def extra_health(self) -> Health:
        """``BLOCKED``, ``SLOWED`` and ``DISASSEMBLED`` while those faults last."""
        flags = Health.OK
        if FaultKind.BLOCKAGE in self._faults:
            flags |= Health.BLOCKED
        if FaultKind.SLOWDOWN in self._faults:
            flags |= Health.SLOWED
        if self._disassembled:
            flags |= Health.DISASSEMBLED
        return flags

    def extra_detail(self) -> Mapping[str, Any]:
        """``faults``: the names of the faults in force."""
        return {"faults": sorted(kind.value for kind in self._faults)}

    def solve_ik(self, target: Pose, q0: FloatArray) -> IKResult:
        """Seeded IK, unless an ``ik_error`` fault makes it fail."""
        fault = self._faults.get(FaultKind.IK_ERROR)
        if fault is not None:
            if fault.count is not None:
                fault.count -= 1
                if fault.count <= 0:
                    self._end(FaultKind.IK_ERROR)
            raise DriverError(
                "ik_failed",
                "IK computation error (injected fault 'ik_error'); the limb did not move",
            )
        return super().solve_ik(target, q0)

    # ------------------------------------------------------------------ ground truth

    def true_joint_positions(self) -> FloatArray:
        """``(n,)`` joint output positions [rad or m] after backlash, as of the last advance."""
        return self._output.copy()

    def true_ee_pose(self) -> Pose:
        """Where the end-effector really is (base frame), with backlash and flex.

        This is what an external motion capture sees; the limb's own FK does not.
        """
        if self._wobble is None:
            return self._rigid_pose()
        rigid = self._rigid
        return Pose._trusted(rigid.position + self._wobble.offset, rigid.quaternion)

    def _rigid_pose(self) -> Pose:
        """Where the arm puts the end-effector without vibration: FK of the output, sagged."""
        pose = self.tracker.chain.fk(self._output)
        return sagged_pose(pose, self.config.flex, self._gravity, self._load)

    # ------------------------------------------------------------------ faults

    def fault(self, kind: str, params: Mapping[str, Any]) -> None:
        """Inject a fault now (seed 000 Table II); it lasts ``duration_s`` or until ended.

        Kinds and parameters (all take ``duration_s`` [s] > 0 except the three that end
        faults):

        - ``blockage``: ``joints`` (indices or names; default all) stop moving. ``BLOCKED``.
        - ``slowdown``: ``factor`` in (0, 1) (default 0.5) scales the speed of ``joints``
          (default all). ``SLOWED``.
        - ``disassembly``: the limb detaches: it stops moving, its state freezes and
          :attr:`available` is False. ``DISASSEMBLED``. Ended by ``reassemble``.
        - ``power_off``: the state stops updating (``POWER_OFF``), commands are ignored and
          the joints fall towards the ``slumped`` posture. Ended by ``power_on``, after which
          the state shows the fallen joints and the limb holds there.
        - ``ik_error``: every ``ee_pose`` command fails with ``ik_failed`` (``IK_FAILED``),
          or only the next ``count`` ones.
        - ``clear``: ends every fault.

        A fault of a kind already in force replaces it.

        Raises:
            DriverError: ``unknown_fault`` (listing the valid kinds) or ``bad_value`` (naming
                the parameter).
        """
        self._start(self._parse(kind, params, start_s=self.time))

    def _parse(self, kind: str, params: Mapping[str, Any], *, start_s: float) -> _Fault:
        try:
            fault_kind = FaultKind(kind)
        except ValueError:
            valid = ", ".join(k.value for k in FaultKind)
            raise DriverError("unknown_fault", f"unknown fault {kind!r}; valid: {valid}") from None
        if not isinstance(params, Mapping):
            raise DriverError("bad_value", f"fault {kind!r}: params must be a map, got {params!r}")
        allowed = FAULT_PARAMS[fault_kind]
        for name in params:
            if name not in allowed:
                raise DriverError(
                    "bad_value",
                    f"fault {kind!r} has no parameter {name!r}; "
                    f"valid: {', '.join(allowed) or '(none)'}",
                )
        fault = _Fault(fault_kind)
        if "duration_s" in params:
            duration = params["duration_s"]
            if not _is_number(duration) or not duration > 0.0:
                raise DriverError(
                    "bad_value", f"fault {kind!r}: duration_s must be > 0 [s], got {duration!r}"
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
                )
            fault.factor = float(factor)
        elif fault_kind is FaultKind.SLOWDOWN:
            fault.factor = DEFAULT_SLOWDOWN_FACTOR
        if "count" in params:
            count = params["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise DriverError(
                    "bad_value", f"fault {kind!r}: count must be an int >= 1, got {count!r}"
                )
            fault.count = count
        return fault

    def _joint_mask(self, kind: str, joints: Any) -> FloatArray:
        names = self.tracker.limb.joint_names
        valid = f"indices 0..{len(names) - 1} or names {', '.join(names)}"
        if isinstance(joints, str | int) and not isinstance(joints, bool):
            joints = [joints]
        if not isinstance(joints, Sequence) or isinstance(joints, str) or not joints:
            raise DriverError(
                "bad_value", f"fault {kind!r}: joints must be a non-empty list of {valid}"
            )
        mask = np.zeros(len(names))
        for joint in joints:
            if isinstance(joint, int) and not isinstance(joint, bool) and 0 <= joint < len(names):
                mask[joint] = 1.0
            elif isinstance(joint, str) and joint in names:
                mask[names.index(joint)] = 1.0
            else:
                raise DriverError(
                    "bad_value", f"fault {kind!r}: joints has {joint!r}; valid: {valid}"
                )
        return mask

    def _start(self, fault: _Fault) -> None:
        kind = fault.kind
        if kind is FaultKind.CLEAR:
            for active in list(self._faults):
                self._end(active)
            return
        if kind is FaultKind.REASSEMBLE:
            self._end(FaultKind.DISASSEMBLY)
            return
        if kind is FaultKind.POWER_ON:
            self._end(FaultKind.POWER_OFF)
            return
        self._faults[kind] = fault
        self._free, self._speed = self._servo_limits()
        if kind is FaultKind.DISASSEMBLY:
            self._disassembled = True
        elif kind is FaultKind.POWER_OFF:
            self._powered = False
        if kind in (FaultKind.DISASSEMBLY, FaultKind.POWER_OFF):
            # The servos lose their setpoints: when back, they hold where the limb is.
            self._pending.clear()

    def _end(self, kind: FaultKind) -> None:
        if self._faults.pop(kind, None) is None:
            return
        self._free, self._speed = self._servo_limits()
        if kind is FaultKind.DISASSEMBLY:
            self._disassembled = False
        elif kind is FaultKind.POWER_OFF:
            self._powered = True
        if kind in (FaultKind.DISASSEMBLY, FaultKind.POWER_OFF):
            self._setpoint = self._motor.copy()

    # ------------------------------------------------------------------ physics

    def sync(self, t: float) -> None:
        """Integrate the simulated limb to ``t`` [s], firing faults and setpoints on time."""
        while True:
            event_s = self._next_event_s()
            if event_s is None or event_s > t:
                break
            self._integrate(event_s)
            self._fire(event_s)
        self._integrate(t)

    def _next_event_s(self) -> float | None:
        times = [f.end_s for f in self._faults.values() if f.end_s is not None]
        if self._schedule:
            times.append(self._schedule[0].at_s)
        if self._pending:
            times.append(self._pending[0][0])
        return min(times) if times else None

    def _fire(self, now_s: float) -> None:
        for kind, fault in list(self._faults.items()):
            if fault.end_s is not None and fault.end_s <= now_s + _TIME_EPS:
                self._end(kind)
        while self._schedule and self._schedule[0].at_s <= now_s:
            scheduled = self._schedule.popleft()
            self._start(self._parse(scheduled.kind, scheduled.params, start_s=scheduled.at_s))
        while self._pending and self._pending[0][0] <= now_s:
            self._setpoint = self._pending.popleft()[1]

    def _integrate(self, to_s: float) -> None:
        dt = to_s - self._plant_t
        if dt <= 0.0:
            return
        self._plant_t = to_s
        before = self._motor  # the plant's arrays are replaced, never changed in place
        if self._disassembled:
            pass
        elif not self._powered:
            self._fall(dt)
        else:
            self._servo(dt)
        self._velocity = (self._motor - before) / dt
        if self._wobble is not None:
            self._rigid = self._rigid_pose()
            self._wobble.advance(self._rigid.position, dt)

    def _servo(self, dt: float) -> None:
        # Each motor moves towards its setpoint by at most speed * dt; the output follows
        # once the motor pushes on one side of the backlash play. On Python floats: for a
        # few joints, twice as fast as the same arithmetic in numpy, with the same floats.
        motor: list[float] = []
        output: list[float] = []
        for motor_i, setpoint_i, speed_i, output_i, half_i in zip(
            self._motor.tolist(),
            self._setpoint.tolist(),
            self._speed,
            self._output.tolist(),
            self._half_backlash,
            strict=True,
        ):
            step = speed_i * dt
            motor_i += _clip(setpoint_i - motor_i, -step, step)
            motor.append(motor_i)
            output.append(_clip(output_i, motor_i - half_i, motor_i + half_i))
        self._motor = np.array(motor)
        self._output = np.array(output)

    def _fall(self, dt: float) -> None:
        # Unpowered: the joints that are free fall towards the slumped posture.
        if self._slumped is None:
            return
        free = self._free > 0.0
        decay = math.exp(-dt / self.config.fall_time_s)
        fallen = self._slumped + (self._motor - self._slumped) * decay
        self._motor = np.where(free, fallen, self._motor)
        fallen_output = self._slumped + (self._output - self._slumped) * decay
        self._output = np.where(free, fallen_output, self._output)

    def _servo_limits(self) -> tuple[FloatArray, list[float]]:
        """The joints free to move (0/1) and the servo speeds, under the faults in force.

        Computed when a fault starts or ends rather than every tick.
        """
        free = np.ones(self.tracker.n)
        blockage = self._faults.get(FaultKind.BLOCKAGE)
        if blockage is not None:
            free = free - (1.0 if blockage.joints is None else blockage.joints)
        speed = self._max_speed * free
        slowdown = self._faults.get(FaultKind.SLOWDOWN)
        if slowdown is not None:
            slowed = 1.0 if slowdown.joints is None else slowdown.joints
            speed = speed * (1.0 - slowed * (1.0 - slowdown.factor))
        return free, speed.tolist()


class _Wobble:
    """The end-effector's offset from the rigid arm: one damped mode per axis.

    The tip is a mass on a spring of natural frequency ``omega`` and damping ratio ``zeta``
    tied to the rigid point ``p``: ``e'' + 2 zeta omega e' + omega**2 e = -p''``. Between two
    integration times ``p`` is taken to move in a straight line, so ``p''`` is an impulse at
    each: the offset's rate jumps by minus the change of ``p``'s velocity, and the free
    oscillation in between is solved in closed form. Exact for any step length.
    """

    def __init__(self, hz: float, zeta: float, position: FloatArray) -> None:
        self.omega = 2.0 * math.pi * hz
        self.zeta = zeta
        self.omega_d = self.omega * math.sqrt(1.0 - zeta * zeta)
        self.offset = np.zeros(3)  # tip minus rigid point [m]
        self.rate = np.zeros(3)  # its derivative [m/s]
        self.position = np.array(position, dtype=np.float64)  # rigid point [m]
        self.velocity = np.zeros(3)  # rigid point's velocity over the last step [m/s]

    def advance(self, position: FloatArray, dt: float) -> None:
        """Move the rigid point to ``position`` [m] over ``dt`` [s] and let the tip respond."""
        velocity = (position - self.position) / dt
        self.position = np.array(position, dtype=np.float64)
        e0 = self.offset
        v0 = self.rate - (velocity - self.velocity)
        self.velocity = velocity
        w, wd, zw = self.omega, self.omega_d, self.zeta * self.omega
        decay = math.exp(-zw * dt)
        c, s = math.cos(wd * dt), math.sin(wd * dt)
        self.offset = decay * (e0 * c + (v0 + zw * e0) * (s / wd))
        self.rate = decay * (v0 * c - (zw * v0 + w * w * e0) * (s / wd))


def _clip(x: float, low: float, high: float) -> float:
    """``np.clip`` on one float, with its choice between equal values (0.0 and -0.0)."""
    x = x if x > low else low
    return x if x < high else high


def _is_number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
