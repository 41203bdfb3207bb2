"""Synchronized move with recovery (seed 000 Sec. II-B to II-D).

n limbs follow one stacked trajectory through waypoints. Every step the command is the clamp
of eq. 4 around the sensed states, so the fastest limb waits for the slowest and no command
leaves the hypersphere around what the limbs sense. When no point of the trajectory is inside
(a limb was blocked, pushed, or fell), a recovery strategy of Sec. II-B takes over:

* ``last_valid`` (the paper's choice): a new segment from the sensed state to the last valid
  command, clamped the same way; on arrival the original trajectory continues.
* ``nearest``: the same, towards the trajectory point nearest to the sensed state.
* ``restart``: the current segment is replaced by one from the sensed state to its end.
* ``none``: hold and wait (seed 000 Sec. III-A).

With ``monotonic`` the trajectory parameter never decreases (the last paragraph of II-B).

A limb without a usable state (stale, or powered off or disassembled: its last state is
frozen where it was) holds the move: it never succeeds on a reading that is not one, and
fails after ``stale_timeout`` (:class:`MissingStates`). When the limb comes back, wherever
it fell, the recovery strategy brings it back to the path.
The core is pure: it is given the sensed states and the time, and returns the command.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from limbtree.kinematics import Pose
from limbtree.skills.outcome import Outcome
from limbtree.skills.spaces import Space, nearest_parameter
from limbtree.skills.telemetry import SkillTelemetry

P = TypeVar("P")


class Recovery(StrEnum):
    """The recovery strategies of seed 000 Sec. II-B."""

    LAST_VALID = "last_valid"
    NEAREST = "nearest"
    RESTART = "restart"
    NONE = "none"


class Mode(StrEnum):
    """What the synchronizer is doing."""

    NOMINAL = "nominal"
    RECOVERING = "recovering"
    WAITING = "waiting"
    """No point is inside and the strategy is ``none``: hold."""
    STALE = "stale"
    """A limb has no usable state (stale, powered off, disassembled): hold until it returns
    or the timeout passes."""
    STALLED = "stalled"
    """No limb has come closer to where it heads for ``stall_timeout``: the move failed."""
    DONE = "done"


@dataclass(frozen=True)
class SyncConfig:
    """How a synchronized move behaves.

    Attributes:
        recovery: what to do when no trajectory point is inside the hypersphere.
        monotonic: forbid the trajectory parameter from decreasing.
        max_speed: if set, how far [metric units per second] the command may advance along
            the trajectory each second: the move's pace when every limb keeps up.
        stale_timeout: how long [s] a limb may be without a usable state (stale, powered
            off, disassembled) before the move fails.
        loop: after the last waypoint, go on round the waypoints again, forever (the start,
            where the limbs were, is not revisited; with a single waypoint, go back and forth).
            One step passes each segment at most once, so it completes at most one lap
            (:attr:`SyncMove.laps` grows by at most one per step), however short the
            segments are against the hypersphere.
        stall_timeout: how long [s] the move may make no progress before it fails (inf:
            never): no waypoint passed, and the limbs' summed distance to where they head
            (:meth:`Space.settle_gaps`, in settle tolerances) not ``stall_progress`` below
            where it was at the last progress. A limb blocked for good, or a goal it cannot
            settle on, would otherwise hold the move for ever. Steps without every limb's
            state do not count (:class:`MissingStates` times those).
        stall_progress: how much closer [settle tolerances] counts as progress (0.5: 1 mm
            of a 2 mm ``settle``).
    """

    recovery: Recovery = Recovery.LAST_VALID
    monotonic: bool = False
    max_speed: float | None = None
    stale_timeout: float = 5.0
    loop: bool = False
    stall_timeout: float = math.inf
    stall_progress: float = 0.5

    def __post_init__(self) -> None:
        if not self.stall_timeout > 0:
            raise ValueError(f"stall_timeout must be > 0 s (inf: never), got {self.stall_timeout}")
        if not 0 < self.stall_progress < math.inf:
            raise ValueError(f"stall_progress must be > 0 and finite, got {self.stall_progress}")


@dataclass(frozen=True)
class LimbDown:
    """Why a limb's state is no reading of the limb, as the limb's health says.

    A limb that is powered off or disassembled still has a last state, frozen where the
    limb was: it says nothing of where the limb is now (a powered-off limb falls).

    Attributes:
        condition: what the limb is: ``"powered off"``, ``"disassembled"``, ``"without
            joint readings (its bus fails)"``.
        cause: the injected fault behind it (``"power_off fault"``), or empty when unknown.
    """

    condition: str
    cause: str = ""

    def text(self, limb: str, since: float) -> str:
        """``limb light is powered off since t=1.00 s (power_off fault)``.

        Args:
            limb: the limb's name.
            since: the mission time [s] the move first saw it so.
        """
        text = f"limb {limb} is {self.condition} since t={since:.2f} s"
        return f"{text} ({self.cause})" if self.cause else text


@dataclass(frozen=True)
class SyncObservation(Generic[P]):
    """What a synchronized move is given each step.

    Attributes:
        time: the tick time [s] from the runner's clock.
        states: each limb's sensed point, or None where the limb's state cannot be used: it
            is stale, or the limb's health says it is no reading of the limb (see ``down``).
        down: per limb, why its state is None when its health says so (powered off,
            disassembled), else None; empty when nothing is known (every None is stale).
    """

    time: float
    states: tuple[P | None, ...]
    down: tuple[LimbDown | None, ...] = ()

    def check(self, limb_names: tuple[str, ...]) -> None:
        """Refuse an observation that has not one state per limb of the move.

        Raises:
            ValueError: naming the move's limbs.
        """
        if len(self.states) != len(limb_names):
            raise ValueError(
                f"the observation has {len(self.states)} states; the move drives "
                f"{len(limb_names)} limbs ({', '.join(limb_names)})"
            )
        if self.down and len(self.down) != len(limb_names):
            raise ValueError(
                f"the observation says why {len(self.down)} limbs are down; the move drives "
                f"{len(limb_names)} limbs ({', '.join(limb_names)})"
            )


class MissingStates:
    """A move's watch over limbs without a usable state: it holds, then fails.

    The one rule of every synchronized move (pose, joint or velocity): while a limb's state
    is None (stale, or the limb powered off or disassembled) the move holds and never
    succeeds, since it cannot tell where that limb is; once some limb has been so for
    ``timeout`` [s] on end, it fails. The episode runs from the first step with a limb
    missing to the first step with none.

    Args:
        limb_names: the move's limbs, for messages.
        timeout: how long [s] the move waits (``stale_timeout_s``).
    """

    def __init__(self, limb_names: Sequence[str], timeout: float) -> None:
        self.limb_names = tuple(limb_names)
        self.timeout = timeout
        self._episode: float | None = None
        self._since: dict[int, float] = {}
        self._down: dict[int, LimbDown] = {}

    def check(self, observation: SyncObservation[Any]) -> tuple[Outcome, str] | None:
        """Note this step's missing states.

        Args:
            observation: the step's observation (checked against the limbs already).

        Returns:
            None when every limb has a state; else RUNNING (hold) or FAILURE (waited
            ``timeout``) with the message for a person.
        """
        time, states = observation.time, observation.states
        missing = [i for i, s in enumerate(states) if s is None]
        if not missing:
            self._episode = None
            self._since.clear()
            self._down.clear()
            return None
        if self._episode is None:
            self._episode = time
        for i in list(self._since):
            if states[i] is not None:
                del self._since[i]
                self._down.pop(i, None)
        down = observation.down
        for i in missing:
            self._since.setdefault(i, time)
            why = down[i] if down else None
            if why is not None:
                self._down[i] = why
            else:
                self._down.pop(i, None)
        waited = time - self._episode
        stale = [self.limb_names[i] for i in missing if i not in self._down]
        if waited > self.timeout:
            if self._down:
                return Outcome.FAILURE, (
                    f"{self.cannot_succeed()} (waited {waited:.1f} s; stale_timeout_s is "
                    f"{self.timeout:g})"
                )
            return Outcome.FAILURE, (
                f"limb {', '.join(stale)} sent no state for {waited:.1f} s "
                f"(stale_timeout_s is {self.timeout:g}); check its agent"
            )
        notes = []
        if self._down:
            notes.append(f"{self.down_text()}; waiting for it to come back")
        if stale:
            notes.append(f"no fresh state from {', '.join(stale)} for {waited:.1f} s")
        return Outcome.RUNNING, "holding: " + "; ".join(notes)

    def down_text(self) -> str | None:
        """Why each limb whose health says so is down, and since when; None if none is."""
        if not self._down:
            return None
        return "; ".join(
            why.text(self.limb_names[i], self._since[i]) for i, why in sorted(self._down.items())
        )

    def cannot_succeed(self) -> str | None:
        """Why the move cannot succeed now, or None when no limb's health says it is down.

        For example ``limb light is powered off since t=1.00 s (power_off fault): the move
        cannot succeed without it``.
        """
        down = self.down_text()
        if down is None:
            return None
        them = "it" if len(self._down) == 1 else "them"
        return f"{down}: the move cannot succeed without {them}"


@dataclass(frozen=True)
class SyncTelemetry(SkillTelemetry):
    """A synchronizer's figures for one tick.

    Attributes:
        mode: what the synchronizer is doing.
        segment: index of the trajectory segment.
        t: the parameter on that segment, in ``[0, 1]``.
        distance: the stacked distance from the command to the sensed state (``<= 1``;
            1 = the hypersphere's radius), or None with no command.
        message: for a person: why it holds, recovers or failed.
        laps: how many laps a looping move has completed (0 for a move that does not loop).
    """

    skill: ClassVar[str] = "sync"
    mode: Mode
    segment: int
    t: float
    distance: float | None
    message: str
    laps: int = 0


@dataclass(frozen=True)
class SyncStep(Generic[P]):
    """One step's result.

    Attributes:
        outcome: RUNNING, SUCCESS or FAILURE.
        command: one point per limb to send, or None to send nothing (limbs hold).
        center: the sensed states the command was clamped around (None with no command).
        mode: what the synchronizer is doing.
        segment: index of the trajectory segment (waypoint ``segment`` to ``segment + 1``).
        t: the parameter on that segment, in ``[0, 1]``.
        distance: the stacked distance from ``command`` to ``center`` (``<= 1``), or None.
        message: for a person: why it holds, recovers or failed.
        recovered: True on the step where a recovery ended and the trajectory resumed.
        laps: how many laps a looping move has completed (at most one more than at the
            previous step).
    """

    outcome: Outcome
    command: tuple[P, ...] | None
    center: tuple[P, ...] | None
    mode: Mode
    segment: int
    t: float
    distance: float | None
    message: str = ""
    recovered: bool = False
    laps: int = 0

    @property
    def telemetry(self) -> SyncTelemetry:
        """The step's figures for the tick stream."""
        return SyncTelemetry(
            self.mode, self.segment, self.t, self.distance, self.message, self.laps
        )


def offset_pose(start: Pose, offset: Sequence[float]) -> Pose:
    """``start`` moved by a world-frame offset ``[x, y, z, qx, qy, qz, qw]`` [m].

    The translation is added; the rotation is applied about the end-effector, in the world
    frame (``q_offset * q_start``).
    """
    off = Pose.from_array(offset)
    m = np.eye(4)
    m[:3, :3] = off.rotation @ start.rotation
    m[:3, 3] = start.position + off.position
    return Pose.from_matrix(m)


class SyncMove(Generic[P]):
    """The synchronizer: one per running synchronized move.

    Args:
        space: poses or joints, with the move's metric.
        waypoints: the points to pass through, the first being where the limbs start;
            each is one point per limb.
        config: behaviour options.
        limb_names: for messages.
        point: what messages call a waypoint (``"posture"`` for a move in joint space).

    Raises:
        ValueError: with fewer than two waypoints, or waypoints of different widths.
    """

    def __init__(
        self,
        space: Space[P],
        waypoints: Sequence[Sequence[P]],
        config: SyncConfig,
        limb_names: Sequence[str],
        *,
        point: str = "waypoint",
    ) -> None:
        self.space = space
        self.point = point
        self.config = config
        self.limb_names = tuple(limb_names)
        self.waypoints = tuple(tuple(w) for w in waypoints)
        if len(self.waypoints) < 2:
            raise ValueError("a synchronized move needs a start and at least one waypoint")
        if {len(w) for w in self.waypoints} != {len(self.limb_names)}:
            raise ValueError("every waypoint needs one point per limb")
        self._segment = 0
        self._t = 0.0
        self._last_valid: tuple[P, ...] = self.waypoints[0]
        self._recovery: tuple[tuple[P, ...], tuple[P, ...]] | None = None
        self._segment_start: tuple[P, ...] = self.waypoints[0]
        self.missing = MissingStates(self.limb_names, config.stale_timeout)
        self._laps = 0
        #: The stall watch at the last progress: where the limbs headed, the stage (laps and
        #: segment), their summed distance to it [settle tolerances], and when [s]; None:
        #: restart at the next step.
        self._progress: tuple[tuple[P, ...], int, float, float] | None = None
        # Segment k runs from waypoint pairs[k][0] to pairs[k][1].
        n = len(self.waypoints) - 1
        self._pairs = [(i, i + 1) for i in range(n)]
        if config.loop:
            self._pairs.append((n, 1) if n >= 2 else (1, 0))
        self._lengths = [
            max(space.distance(self.waypoints[a], self.waypoints[b]), 1e-12) for a, b in self._pairs
        ]

    @property
    def segments(self) -> int:
        """Number of segments: one more when looping (from the last waypoint to the first)."""
        return len(self._pairs)

    @property
    def laps(self) -> int:
        """How many laps a looping move has completed (0 for a move that does not loop).

        A lap ends each time the move passes from its closing segment back into the loop.
        """
        return self._laps

    @property
    def progress(self) -> float:
        """Progress along the whole trajectory, in ``[0, segments]``."""
        return self._segment + self._t

    @property
    def heading(self) -> tuple[P, ...]:
        """Where the limbs are driven now, one point per limb.

        The recovery's target while recovering, else the end of the current segment.
        """
        if self._recovery is not None:
            return self._recovery[1]
        return self.end_of(self._segment)

    def end_of(self, segment: int) -> tuple[P, ...]:
        """Where segment ``segment`` ends: one point per limb (its target while on it)."""
        return self.waypoints[self._pairs[segment][1]]

    def _next_segment(self, k: int) -> int | None:
        if k + 1 < self.segments:
            return k + 1
        if not self.config.loop:
            return None
        return 1 if self.segments > 2 else 0

    def _clamp_main(self, states: tuple[P, ...], dt: float) -> tuple[int, float, int] | None:
        """The furthest (segment, t) inside the sphere, advancing over reached waypoints.

        Each segment is passed at most once per step: a lap whose segments all lie inside
        the hypersphere (the clamp reaches their ends at once) advances by at most one lap
        per step instead of going round for ever within one tick.

        Returns:
            ``(segment, t, laps)``, ``laps`` being the laps completed this step (0 or 1),
            or None when no point of the current segment is inside.
        """
        k = self._segment
        t_min = self._t if self.config.monotonic else 0.0
        t = self.space.clamp(states, self._segment_start, self.end_of(k), t_min)
        if t is None:
            return None
        budget = math.inf  # how far [metric units] the command may still advance this step
        if self.config.max_speed is not None:
            budget = self.config.max_speed * dt
            t = min(t, self._t + budget / self._lengths[k])
            budget -= (t - self._t) * self._lengths[k]
        visited = {k}
        laps = 0
        while t >= 1.0:
            nxt = self._next_segment(k)
            if nxt is None or nxt in visited:
                break
            t_next = self.space.clamp(
                states, self.waypoints[self._pairs[nxt][0]], self.end_of(nxt), 0.0
            )
            if t_next is None:
                break
            if nxt <= k:  # from the closing segment back into the loop: a lap
                laps += 1
            visited.add(nxt)
            k, t = nxt, min(t_next, budget / self._lengths[nxt])
        return k, t, laps

    def step(self, observation: SyncObservation[P], dt: float) -> SyncStep[P]:
        """Advance one tick.

        Args:
            observation: the tick time and each limb's sensed point (None: stale, or the
                limb powered off or disassembled: the move holds, see :class:`MissingStates`).
            dt: the time since the previous step [s] (0 at the first): how far
                ``max_speed`` lets the command advance.

        Returns:
            The step's :class:`SyncStep`.

        Raises:
            ValueError: if the observation has not one state per limb.
        """
        observation.check(self.limb_names)
        states = observation.states
        held = self.missing.check(observation)
        if held is not None:  # (no SUCCESS without every limb's reading)
            self._progress = None
            return self._result(held[0], None, None, Mode.STALE, held[1])
        current: tuple[P, ...] = tuple(s for s in states if s is not None)
        result = self._advance(current, dt)
        if result.outcome is Outcome.RUNNING:
            stalled = self._stalled(observation.time, current)
            if stalled is not None:
                return self._result(Outcome.FAILURE, None, None, Mode.STALLED, stalled)
        return result

    def _stalled(self, time: float, states: tuple[P, ...]) -> str | None:
        """Note this step's progress; the FAILURE message once there was none for long enough.

        Args:
            time: the step's time [s].
            states: every limb's sensed point.
        """
        config = self.config
        if config.stall_timeout == math.inf:
            return None
        heading = self.heading
        stage = self._laps * self.segments + self._segment
        gap = math.fsum(self.space.settle_gaps(states, heading))
        mark = self._progress
        if (
            mark is None
            or mark[0] is not heading
            or mark[1] != stage
            or gap <= mark[2] - config.stall_progress
        ):
            self._progress = (heading, stage, gap, time)
            return None
        if time - mark[3] < config.stall_timeout:
            return None
        where = (
            f"the {config.recovery.value.replace('_', ' ')} point it recovers to"
            if self._recovery is not None
            else f"{self.point} {self._pairs[self._segment][1]}/{len(self.waypoints) - 1}"
        )
        return f"stalled: for {time - mark[3]:.1f} s the limbs came no closer to {where}"

    def _advance(self, current: tuple[P, ...], dt: float) -> SyncStep[P]:
        """One step with every limb's state: along the trajectory, or recovering."""
        recovering = self._recovery is not None
        found = self._clamp_main(current, dt)
        if found is None:
            return self._recover(current)
        segment, self._t, laps = found
        self._laps += laps
        if segment != self._segment:
            self._segment = segment
            self._segment_start = self.waypoints[self._pairs[segment][0]]
        self._recovery = None
        k, t = self._segment, self._t
        command = self.space.interpolate(self._segment_start, self.end_of(k), t)
        self._last_valid = command
        last = self._next_segment(k) is None
        if last and t >= 1.0 and self.space.settled(current, self.end_of(k)):
            return self._result(
                Outcome.SUCCESS, command, current, Mode.DONE, "arrived", recovered=recovering
            )
        message = "recovered: trajectory resumed" if recovering else ""
        return self._result(
            Outcome.RUNNING, command, current, Mode.NOMINAL, message, recovered=recovering
        )

    def _recover(self, states: tuple[P, ...]) -> SyncStep[P]:
        strategy = self.config.recovery
        worst = self._worst_limb(states)
        if strategy is Recovery.NONE:
            return self._result(
                Outcome.RUNNING,
                None,
                None,
                Mode.WAITING,
                f"waiting: no trajectory point within reach of the sensed state ({worst})",
            )
        if strategy is Recovery.RESTART:
            self._segment_start = states
            self._t = 0.0
            self._last_valid = states
            command = states
            return self._result(
                Outcome.RUNNING,
                command,
                states,
                Mode.RECOVERING,
                f"restarting segment {self._segment} from the sensed state ({worst})",
            )
        if self._recovery is None or self.space.clamp(states, *self._recovery, 0.0) is None:
            if strategy is Recovery.NEAREST:
                start, end = self._segment_start, self.end_of(self._segment)
                t_near = nearest_parameter(self.space, states, start, end)
                if self.config.monotonic:
                    t_near = max(t_near, self._t)
                self._t = t_near
                target = self.space.interpolate(start, end, t_near)
            else:
                target = self._last_valid
            self._recovery = (states, target)
        start, target = self._recovery
        t = self.space.clamp(states, start, target, 0.0)
        command = self.space.interpolate(start, target, 0.0 if t is None else t)
        return self._result(
            Outcome.RUNNING,
            command,
            states,
            Mode.RECOVERING,
            f"recovering towards the {strategy.value.replace('_', ' ')} point ({worst})",
        )

    def _worst_limb(self, states: tuple[P, ...]) -> str:
        goal = self.space.interpolate(self._segment_start, self.end_of(self._segment), self._t)
        distances = self.space.limb_distances(states, goal)
        i = max(range(len(distances)), key=distances.__getitem__)
        return f"{self.limb_names[i]} is {distances[i]:.2f} radii off"

    def _result(
        self,
        outcome: Outcome,
        command: tuple[P, ...] | None,
        center: tuple[P, ...] | None,
        mode: Mode,
        message: str,
        *,
        recovered: bool = False,
    ) -> SyncStep[P]:
        distance = None
        if command is not None and center is not None:
            distance = self.space.distance(command, center)
        return SyncStep(
            outcome,
            command,
            center,
            mode,
            self._segment,
            self._t,
            distance,
            message,
            recovered,
            self._laps,
        )
