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
- what the faults of seed 000 Table II leave of the limb's actuation
  (:class:`~limbtree.transport.plant.Actuation`: blocked or slowed joints, power cut, limb
  detached, IK failing). The faults themselves (kinds, parameters, durations, schedules) are
  the fault decorator's, :class:`limbtree.robots.faulty.FaultyPlant`, which wraps any plant;
  it sets the actuation through :meth:`SimulatedLimb.actuate` and fires its events at their
  exact times through :meth:`SimulatedLimb.set_fault_clock`.

Gravity acts in the world frame: :attr:`SimConfig.gravity` is its direction in the world, and
the limb turns it into its own base frame from its ``base`` pose in the world, so a tilted or
upside-down limb sags the right way.

Time passes only through :meth:`SimulatedLimb.advance`; randomness comes only from
``numpy.random.default_rng`` seeded by the constructor's ``seed``. The same seed, config and
calls give the same states, bit for bit.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
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
from limbtree.transport.driver import DriverError, GripperAction
from limbtree.transport.faults import ScheduledFault
from limbtree.transport.plant import HEALTHY, Actuation, FaultClock

if TYPE_CHECKING:
    from limbtree.kinematics.chain import IKResult

#: Posture the joints fall towards when the power is cut (``robot.yaml`` postures).
SLUMPED_POSTURE: Final = "slumped"
#: A fault ending this close after an event [s] is taken to end at it (float round-off).
TIME_EPS: Final = 1e-12


class SimConfigError(RobotsError, ValueError):
    """A :class:`SimConfig` or a simulator option was given a value it cannot use.

    Attributes:
        option: the offending field's name.
    """

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


@dataclass(frozen=True)
class OptionLimit:
    """The values a numeric simulator option accepts: ``low`` (<= or <) value (< ``high``).

    Attributes:
        low: the lowest value.
        low_open: whether ``low`` itself is refused.
        high: a value it must stay below (exclusive), or None.
        why: why ``high`` (for the message).
    """

    low: float = 0.0
    low_open: bool = False
    high: float | None = None
    why: str = ""

    def check(self, name: str, value: object) -> None:
        """Refuse a value outside the limits.

        Raises:
            SimConfigError: naming the option, the limit and the value.
        """
        _check_number(name, value, low=self.low, strict=self.low_open)
        if self.high is not None and value >= self.high:  # type: ignore[operator]
            reason = f" ({self.why})" if self.why else ""
            raise SimConfigError(name, f"must be < {self.high:g}{reason}, got {value!r}")


#: The limits of :class:`SimConfig`'s numeric options: the one definition, which a mission
#: checker reads to accept exactly what the simulator accepts.
SIM_OPTION_LIMITS: Final[Mapping[str, OptionLimit]] = MappingProxyType(
    {
        "latency_s": OptionLimit(),
        "joint_noise_rad": OptionLimit(),
        "backlash_rad": OptionLimit(),
        "flex": OptionLimit(),
        "payload_kg": OptionLimit(),
        "vibration_hz": OptionLimit(),
        "vibration_damping": OptionLimit(low_open=True, high=1.0, why="an underdamped mode"),
        "mocap_noise_m": OptionLimit(),
        "mocap_rot_noise_rad": OptionLimit(),
        "fall_time_s": OptionLimit(low_open=True),
    }
)


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
        gravity: direction of gravity in the WORLD frame (normalised; for ``flex``). A limb
            turns it into its base frame from its base pose in the world.
        initial_posture: the posture the limb starts in (``robot.yaml`` postures).
        fall_time_s: time constant [s] of the fall towards the ``slumped`` posture when
            the power is cut.
        ik_searches: IK searches per ``ee_pose`` path substep (``docs/robots.md``).
        faults: faults that start by themselves; the fault decorator
            (:class:`~limbtree.robots.faulty.FaultyPlant`) that
            :func:`~limbtree.robots.factory.make_plant` puts around the simulator runs them.
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
            SIM_OPTION_LIMITS[name].check(name, getattr(self, name))
        SIM_OPTION_LIMITS["vibration_damping"].check("vibration_damping", self.vibration_damping)
        for name in ("mocap_noise_m", "mocap_rot_noise_rad"):
            if getattr(self, name) is not None:
                SIM_OPTION_LIMITS[name].check(name, getattr(self, name))
                object.__setattr__(self, name, float(getattr(self, name)))
        SIM_OPTION_LIMITS["fall_time_s"].check("fall_time_s", self.fall_time_s)
        backlash = self.backlash_rad
        if isinstance(backlash, int | float):
            SIM_OPTION_LIMITS["backlash_rad"].check("backlash_rad", backlash)
            object.__setattr__(self, "backlash_rad", float(backlash))
        else:
            values = tuple(backlash)
            for value in values:
                SIM_OPTION_LIMITS["backlash_rad"].check("backlash_rad", value)
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


def gravity_in_base(gravity_world: Sequence[float], base: Pose | None) -> FloatArray:
    """The direction of gravity in a limb's base frame.

    Args:
        gravity_world: ``(3,)`` unit vector of gravity in the world frame.
        base: the limb base in the world; None (or no rotation) for the world's axes.

    Returns:
        ``(3,)`` ``R_wb^T g_w``: the same physical direction, seen from the limb's base.
    """
    g = np.array(gravity_world, dtype=np.float64)
    if base is None or abs(float(base.quaternion[3])) == 1.0:
        return g
    rotated_g: FloatArray = base.rotation.T @ g
    return rotated_g / float(np.linalg.norm(rotated_g))


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


class SimulatedLimb(HardwareDriver):
    """A limb of the registry, simulated; deterministic for a seed.

    Args:
        robot: the robot, or its name in the registry.
        limb: the limb's name; None for a robot with a single limb.
        seed: seed of the sensor noise and the IK restarts.
        config: the non-idealities (default: ideal); its ``faults`` must be empty (they are
            the fault decorator's).
        base: the limb's base in the world frame, for the direction of gravity; None for the
            world origin.

    Raises:
        limbtree.robots.errors.UnknownRobotError: for an unknown robot name.
        limbtree.robots.errors.UnknownLimbError: if the robot has no such limb.
        limbtree.robots.errors.UnknownPostureError: for an unknown ``initial_posture``.
        SimConfigError: for a negative seed, a ``backlash_rad`` of the wrong length, or
            scheduled faults in ``config``.
    """

    driver_name = "sim"
    max_setpoint_step_s = None  # (the simulated servos keep to the speed limits themselves)

    def __init__(
        self,
        robot: RobotSpec | str,
        limb: str | None = None,
        *,
        seed: int = 0,
        config: SimConfig | None = None,
        base: Pose | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise SimConfigError("seed", f"must be an int >= 0, got {seed!r}")
        config = SimConfig() if config is None else config
        if config.faults:
            raise SimConfigError(
                "faults",
                "scheduled faults are run by the fault decorator around the plant, not by the "
                "simulated limb: build it with limbtree.robots.make_plant (or wrap the plant in "
                "FaultyPlant(plant, schedule=...))",
            )
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
        self._gravity = gravity_in_base(config.gravity, base)
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
        self._actuation = HEALTHY
        self._fault_clock: FaultClock | None = None
        self._free, self._speed = self._servo_limits()
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

    def solve_ik(self, target: Pose, q0: FloatArray) -> IKResult:
        """Seeded IK, unless the actuation says IK fails (an ``ik_error`` fault)."""
        if self._actuation.ik_error:
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

    # ------------------------------------------------------------------ faults' effects

    @property
    def actuation(self) -> Actuation:
        """What faults leave of the limb's actuation now (healthy by default)."""
        return self._actuation

    def actuate(self, actuation: Actuation) -> None:
        """Set what faults leave of the limb's actuation, from now on.

        When the power is cut or the limb detaches, the servos lose their queued setpoints;
        when it comes back, they hold where the limb now is.

        Args:
            actuation: the new actuation (:class:`~limbtree.transport.plant.Actuation`).

        Raises:
            SimConfigError: for a joint mask or speed factors of the wrong length.
        """
        n = self.tracker.n
        for name in ("free", "speed_scale"):
            values = getattr(actuation, name)
            if values is not None and len(values) != n:
                raise SimConfigError(name, f"needs {n} values (one per joint), got {values!r}")
        cut = (not actuation.powered and self._powered) or (
            not actuation.attached and not self._disassembled
        )
        restored = (actuation.powered and not self._powered) or (
            actuation.attached and self._disassembled
        )
        self._actuation = actuation
        self._free, self._speed = self._servo_limits()
        self._disassembled = not actuation.attached
        self._powered = actuation.powered
        if cut:
            self._pending.clear()
        if restored:
            self._setpoint = self._motor.copy()

    def set_fault_clock(self, clock: FaultClock | None) -> None:
        """Fire ``clock``'s fault events at their exact times while the limb integrates."""
        self._fault_clock = clock

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
        times = []
        clock = self._fault_clock
        if clock is not None:
            fault_s = clock.next_event_s()
            if fault_s is not None:
                times.append(fault_s)
        if self._pending:
            times.append(self._pending[0][0])
        return min(times) if times else None

    def _fire(self, now_s: float) -> None:
        clock = self._fault_clock
        if clock is not None:
            clock.fire(now_s)
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
        actuation = self._actuation
        free = np.ones(self.tracker.n) if actuation.free is None else np.array(actuation.free)
        speed = self._max_speed * free
        if actuation.speed_scale is not None:
            speed = speed * np.array(actuation.speed_scale)
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
