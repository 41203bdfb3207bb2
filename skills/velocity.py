"""Velocity-driven clamped move (seed 000 Sec. III-A, eq. 11).

``U_{k+1} = HyperSphereClamp(Y_k, U_k, U_k + (t_{k+1} - t_k) Pdot)``: the command integrates
an input speed, and each increment is clamped around the sensed state. When the limb cannot
follow (out of reach), the command stops at the edge and waits, and when the input turns back
the command comes back along the same path. No recovery strategy, as in the paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from limbtree.kinematics import Pose, SE3Metric, hypersphere_clamp
from limbtree.skills.outcome import Outcome
from limbtree.skills.sync import MissingStates, Mode, SyncObservation, SyncStep

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SpeedSegment:
    """Constant input speed for a while.

    Attributes:
        duration: how long [s].
        velocity: ``(3,)`` linear velocity [m/s], in the move's frame.
    """

    duration: float
    velocity: tuple[float, float, float]


class VelocityMove:
    """One or more end-effectors driven by a piecewise-constant input speed, clamped.

    Args:
        metrics: one per limb.
        profile: the input speed over time.
        limb_names: for messages.
        stale_timeout: how long [s] a limb may be stale before the move fails.
    """

    def __init__(
        self,
        metrics: Sequence[SE3Metric],
        profile: Sequence[SpeedSegment],
        limb_names: Sequence[str],
        stale_timeout: float = 5.0,
    ) -> None:
        if not profile:
            raise ValueError("a velocity move needs at least one speed segment")
        self.metrics = tuple(metrics)
        self.profile = tuple(profile)
        self.limb_names = tuple(limb_names)
        self.stale_timeout = stale_timeout
        self.duration = sum(s.duration for s in self.profile)
        self._t0: float | None = None
        self._command: tuple[Pose, ...] | None = None
        #: Where the input speed alone would have taken each end-effector [m].
        self._unclamped: list[FloatArray] | None = None
        self.missing = MissingStates(self.limb_names, stale_timeout)

    def velocity(self, elapsed: float) -> FloatArray:
        """The input speed [m/s] at ``elapsed`` seconds into the move."""
        for segment in self.profile:
            if elapsed < segment.duration:
                return np.array(segment.velocity, dtype=np.float64)
            elapsed -= segment.duration
        return np.zeros(3)

    def _done(self, states: tuple[Pose, ...]) -> str:
        """The SUCCESS message: the profile is done; which limbs ended short, by how much.

        A limb that could not follow (blocked, out of reach) held its command at the edge
        of its hypersphere: the move still ends with its profile, as in the paper, but says
        so when a limb ended farther than its ``p_e`` from where the input alone would
        have taken it.
        """
        if self._unclamped is None:
            return "profile done"
        short = []
        for name, metric, state, point in zip(
            self.limb_names, self.metrics, states, self._unclamped, strict=True
        ):
            gap = float(np.linalg.norm(state.position - point))
            if gap > metric.p_e:
                short.append(f"{name} {gap * 1e3:.0f} mm")
        if not short:
            return "profile done"
        return (
            f"profile done; short of where the input speed alone leads (clamped: a limb "
            f"blocked or out of reach): {', '.join(short)}"
        )

    def step(self, observation: SyncObservation[Pose], dt: float) -> SyncStep[Pose]:
        """Advance one tick (see :class:`~limbtree.skills.sync.SyncMove.step`).

        Args:
            observation: the tick time and each limb's sensed pose (None: stale, or the
                limb powered off or disassembled).
            dt: the time since the previous step [s] (0 at the first): the command
                integrates the input speed over it (eq. 11).

        Returns:
            The step's :class:`~limbtree.skills.sync.SyncStep`.

        Raises:
            ValueError: if the observation has not one state per limb.
        """
        observation.check(self.limb_names)
        time, states = observation.time, observation.states
        if self._t0 is None:
            self._t0 = time
        elapsed = time - self._t0
        progress = min(1.0, elapsed / self.duration)
        held = self.missing.check(observation)
        if held is not None:  # (no SUCCESS without every limb's reading)
            return SyncStep(held[0], None, None, Mode.STALE, 0, progress, None, held[1])
        current = tuple(s for s in states if s is not None)
        if self._command is None:
            self._command = current
            self._unclamped = [pose.position.copy() for pose in current]
        if elapsed >= self.duration:
            return SyncStep(
                Outcome.SUCCESS, None, None, Mode.DONE, 0, 1.0, None, self._done(current)
            )
        step = self.velocity(elapsed) * dt
        if self._unclamped is not None:
            self._unclamped = [point + step for point in self._unclamped]
        target = tuple(Pose(u.position + step, u.quaternion) for u in self._command)
        result = hypersphere_clamp(current, self._command, target, self.metrics)
        if result.poses is None:
            return SyncStep(
                Outcome.RUNNING, None, None, Mode.WAITING, 0, progress, None,
                "waiting: the command is out of the limb's reach",
            )  # fmt: skip
        self._command = result.poses
        message = "" if result.t == 1.0 else "clamped: the limb lags the input speed"
        return SyncStep(
            Outcome.RUNNING, result.poses, current, Mode.NOMINAL, 0, progress,
            result.distance, message,
        )  # fmt: skip
