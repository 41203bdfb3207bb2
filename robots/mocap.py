"""A simulated external motion capture: true end-effector and target poses, with noise.

Seed 002 (Sec. III-A) tracks the end-effector and the wheel target with an OptiTrack system at
180 Hz with sub-millimetre accuracy; its alignment controller closes the loop on those poses,
not on the limb's own forward kinematics, which misses backlash and flex. This module plays
that part for simulated limbs: it samples each tracked body's *true* pose
(:meth:`~limbtree.robots.sim.SimulatedLimb.true_ee_pose`) and each static target at its own
frame rate, holds a frame until the next one, and adds Gaussian noise.

It is a plain object with no I/O and no clock of its own: time comes in with
:meth:`MotionCapture.observe`. Noise is drawn from ``numpy.random.default_rng((seed, k))``
for frame ``k``, so a frame's noise depends only on the seed and the frame number, not on how
often the capture is asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

import numpy as np

from limbtree.kinematics.pose import Pose
from limbtree.robots.errors import RobotsError
from limbtree.robots.tracking import FloatArray, rotated

#: Frame rate of seed 002's OptiTrack system [Hz].
DEFAULT_RATE_HZ: Final = 180.0
#: Position noise per axis [m] (standard deviation): sub-millimetre (seed 002 Sec. III-A).
DEFAULT_NOISE_M: Final = 0.0003
#: Rotation noise per axis [rad] (standard deviation), about 0.06 degrees.
DEFAULT_NOISE_RAD: Final = 0.001
#: Slack on ``t * rate_hz`` when finding a frame number, so ``t = k / rate_hz`` is frame k.
_FRAME_SLACK: Final = 1e-9


class MotionCaptureError(RobotsError, ValueError):
    """A motion capture was set up or asked wrongly (a rate, a name, a time)."""


@dataclass(frozen=True)
class MocapFrame:
    """One motion-capture frame.

    Attributes:
        index: frame number ``k``, counting from t = 0 s.
        t: the frame's time ``k / rate_hz`` [s].
        poses: body or target name -> read-only ``(7,)`` pose ``[x, y, z, qx, qy, qz, qw]``
            in the capture's world frame, noise included.
    """

    index: int
    t: float
    poses: Mapping[str, FloatArray]


def _as_pose(pose: Pose | Sequence[float] | FloatArray, what: str) -> Pose:
    if isinstance(pose, Pose):
        return pose
    try:
        return Pose.from_array(pose)
    except ValueError as exc:
        raise MotionCaptureError(f"{what}: {exc}") from None


class MotionCapture:
    """An external motion-capture system over simulated limbs and static targets.

    Args:
        rate_hz: frame rate [Hz], > 0.
        noise_m: standard deviation of the position noise on each axis [m], >= 0.
        noise_rad: standard deviation of the rotation noise about each axis [rad], >= 0.
        seed: seed of the noise, >= 0.

    Raises:
        MotionCaptureError: for a rate, noise or seed out of range.

    Example:
        >>> capture = MotionCapture(seed=3)
        >>> capture.track("ee", limb.true_ee_pose)
        >>> capture.add_target("wheel", [0.871, -0.459, 0.221, 0, 0, 0, 1])
        >>> poses = capture.observe(t)  # {"ee": array(7), "wheel": array(7)}
    """

    def __init__(
        self,
        *,
        rate_hz: float = DEFAULT_RATE_HZ,
        noise_m: float = DEFAULT_NOISE_M,
        noise_rad: float = DEFAULT_NOISE_RAD,
        seed: int = 0,
    ) -> None:
        if not (math.isfinite(rate_hz) and rate_hz > 0.0):
            raise MotionCaptureError(f"rate_hz must be a positive frame rate [Hz], got {rate_hz!r}")
        for name, value in (("noise_m", noise_m), ("noise_rad", noise_rad)):
            if not (math.isfinite(value) and value >= 0.0):
                raise MotionCaptureError(f"{name} must be >= 0, got {value!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise MotionCaptureError(f"seed must be an int >= 0, got {seed!r}")
        self.rate_hz: Final = float(rate_hz)
        self.noise_m: Final = float(noise_m)
        self.noise_rad: Final = float(noise_rad)
        self.seed: Final = seed
        self._bodies: dict[str, tuple[Callable[[], Pose], Pose | None]] = {}
        self._targets: dict[str, Pose] = {}
        self._frame: MocapFrame | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """Tracked bodies, then targets, in the order they were added."""
        return (*self._bodies, *self._targets)

    def track(
        self,
        name: str,
        source: Callable[[], Pose],
        *,
        base_pose: Pose | Sequence[float] | FloatArray | None = None,
    ) -> None:
        """Track a moving body, e.g. a simulated limb's end-effector.

        Args:
            name: the body's name in the frames.
            source: returns the body's true pose now, e.g. ``limb.true_ee_pose``.
            base_pose: the pose of the source's frame in the capture's world frame (a limb's
                base); None when it already is the world frame.

        Raises:
            MotionCaptureError: if the name is taken or ``base_pose`` is not a pose.
        """
        self._check_new(name)
        base = None if base_pose is None else _as_pose(base_pose, f"base_pose of {name!r}")
        self._bodies[name] = (source, base)

    def add_target(self, name: str, pose: Pose | Sequence[float] | FloatArray) -> None:
        """Add a static object at ``pose`` (world frame), e.g. the wheel to grasp.

        Raises:
            MotionCaptureError: if the name is taken or ``pose`` is not a pose.
        """
        self._check_new(name)
        self._targets[name] = _as_pose(pose, f"pose of {name!r}")

    def frame_index(self, t: float) -> int:
        """The number of the frame in force at time ``t`` [s]."""
        return math.floor(t * self.rate_hz + _FRAME_SLACK)

    def frame(self, t: float) -> MocapFrame:
        """The frame in force at ``t`` [s]: a new one is taken at each frame time.

        Between frame times the last frame is held (sample and hold). A new frame samples
        every source as it is now, so advance the limbs to ``t`` first.

        Raises:
            MotionCaptureError: if ``t`` is negative, not finite, or in an earlier frame
                than the last one returned.
        """
        if not (math.isfinite(t) and t >= 0.0):
            raise MotionCaptureError(f"t must be a time >= 0 [s], got {t!r}")
        index = self.frame_index(t)
        held = self._frame
        if held is not None:
            if index == held.index:
                return held
            if index < held.index:
                raise MotionCaptureError(
                    f"t = {t!r} s is before the last frame, taken at {held.t!r} s"
                )
        self._frame = self._take(index)
        return self._frame

    def observe(self, t: float) -> Mapping[str, FloatArray]:
        """The poses of the frame in force at ``t`` [s]: name -> ``[x, y, z, qx, qy, qz, qw]``.

        Raises:
            MotionCaptureError: as :meth:`frame`.
        """
        return self.frame(t).poses

    def _take(self, index: int) -> MocapFrame:
        rng = np.random.default_rng((self.seed, index))
        poses: dict[str, FloatArray] = {}
        truths = [
            (name, pose if base is None else base @ pose)
            for name, (source, base) in self._bodies.items()
            for pose in (source(),)
        ]
        truths += list(self._targets.items())
        for name, pose in truths:
            noise = rng.normal(0.0, 1.0, 6)
            position = pose.position + noise[:3] * self.noise_m
            array = np.concatenate([position, rotated(pose, noise[3:] * self.noise_rad)])
            array.setflags(write=False)
            poses[name] = array
        return MocapFrame(index, index / self.rate_hz, MappingProxyType(poses))

    def _check_new(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise MotionCaptureError(f"a body or target needs a non-empty name, got {name!r}")
        if name in self._bodies or name in self._targets:
            raise MotionCaptureError(f"{name!r} is already tracked; names: {', '.join(self.names)}")
