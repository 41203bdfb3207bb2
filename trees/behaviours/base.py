"""The base of limbtree's behaviours: a py_trees leaf bound to the mission context."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import py_trees

from limbtree.skills import Outcome, SkillTelemetry, SyncObservation
from limbtree.trees.clocks import elapsed_reached
from limbtree.trees.context import MissionContext
from limbtree.trees.errors import TreesError

if TYPE_CHECKING:
    from limbtree.kinematics import Pose
    from limbtree.trees.limbs import LimbHandle

P = TypeVar("P")

STATUS = {
    Outcome.RUNNING: py_trees.common.Status.RUNNING,
    Outcome.SUCCESS: py_trees.common.Status.SUCCESS,
    Outcome.FAILURE: py_trees.common.Status.FAILURE,
}


class CannotStart(TreesError):  # noqa: N818 - reads as a sentence at the raise site
    """A skill cannot start for a reason a person can act on; the node ends in FAILURE.

    A :class:`~limbtree.errors.LimbtreeError` (through ``TreesError``), so a caller that
    catches limbtree's errors catches it too.
    """


class SkillBehaviour(py_trees.behaviour.Behaviour):
    """A leaf of a mission tree: reads limb states, steps a core, sends commands.

    Subclasses implement :meth:`start` (the py_trees ``initialise``) and :meth:`step` (the
    ``update``); this class keeps the node's parameters for export and times its updates.
    ``update`` never blocks: limb states come from the clients' latest values.

    Attributes:
        node_type: the mission-file name of the node (``sync_move``, ...).
        recovers: whether the skill reports a ``mode`` that turns to ``recovering`` when it
            brings its limbs back after a fault (what a recovery breakpoint waits for).
        params: the node's validated parameters, SI units.
        ticks: how many times the node was ticked.
        busy_s: wall time [s] spent in its updates (a diagnostic, not logic).
    """

    node_type: ClassVar[str] = ""
    recovers: ClassVar[bool] = False

    def __init__(self, name: str, context: MissionContext, params: Mapping[str, Any]) -> None:
        super().__init__(name=name)
        self.context = context
        self.params = dict(params)
        self.ticks = 0
        self.busy_s = 0.0

    def initialise(self) -> None:
        """Start the skill (py_trees lifecycle)."""
        self.feedback_message = ""
        with self.context.claims.acting(self):
            self.start()

    def update(self) -> py_trees.common.Status:
        """Step the skill once; timed for the summary's per-node figures.

        FAILURE when another node owns a limb this one commanded (one commander per limb,
        :mod:`limbtree.trees.claims`): the command was not sent, and the message names the
        limb and the owner's id.
        """
        began = time.perf_counter()
        claims = self.context.claims
        status = py_trees.common.Status.FAILURE
        try:
            if claims.refusal(self) is None:
                with claims.acting(self):
                    status = self.step()
            refusal = claims.refusal(self)
            if refusal is not None:
                self.feedback_message = refusal
                status = py_trees.common.Status.FAILURE
            return status
        except CannotStart as exc:
            self.feedback_message = str(exc)
            status = py_trees.common.Status.FAILURE
            return status
        finally:
            if status is py_trees.common.Status.FAILURE:
                # (a refused node's targets are not where its limbs go: the owner's are)
                self.context.telemetry.drop_targets(self._node_key)
            self.ticks += 1
            self.busy_s += time.perf_counter() - began

    def stop(self, new_status: py_trees.common.Status) -> None:
        """The node ends or is halted (py_trees): after ``terminate``, its limbs are free.

        Commands ``terminate`` sends (a halted move holding its limbs) go to the limbs this
        node owns or nobody does; those another node owns are left alone.
        """
        claims = self.context.claims
        if new_status is py_trees.common.Status.INVALID:
            self.context.telemetry.drop_targets(self._node_key)  # halted: its limbs hold
        try:
            with claims.acting(self, stopping=True):
                super().stop(new_status)
        finally:
            claims.release(self)

    def start(self) -> None:
        """Called when the node starts running."""

    def step(self) -> py_trees.common.Status:
        """One tick of the skill."""
        raise NotImplementedError

    def out_of_time(
        self, running: bool, now: float, started_at: float | None, limbs: Sequence[LimbHandle]
    ) -> bool:
        """Whether a running move has used up its ``timeout`` [s]; if so, ``limbs`` hold.

        Args:
            running: whether the core's step left the move running.
            now: the mission time [s].
            started_at: the time of this attempt's first tick [s] (each run of the node,
                each retry, counts its own ``timeout`` from its own first tick).
            limbs: the limbs the move commands.
        """
        timeout = self.params.get("timeout")
        if timeout is None or not running or started_at is None:
            return False
        if not elapsed_reached(now, started_at, float(timeout)):
            return False
        for limb in limbs:
            limb.hold()
        return True

    @property
    def _node_key(self) -> str:
        """This node's id (its name for a behaviour ticked outside a runner: a test, a tool)."""
        return str(getattr(self, "node_id", None) or self.name)

    def report(self, telemetry: SkillTelemetry) -> None:
        """Publish this tick's figures (the core's typed telemetry) under this node's id."""
        self.context.telemetry.tick[self._node_key] = telemetry

    def set_target(self, limb: str, pose: Pose) -> None:
        """``limb`` is driven toward ``pose`` (world) this tick: the record's target frame.

        Not for a limb another node owns (this node's commands to it are refused: the
        owner's target stands); dropped again if this tick ends in FAILURE (or the node is
        refused or halted).
        """
        owner = self.context.claims.owner(limb)
        if owner is None or owner is self:
            self.context.telemetry.set_target(self._node_key, limb, pose)


def time_left_text(seconds: float) -> str:
    """``12.3 s left`` (``1e+300 s left`` for a time too long to write out) [s]."""
    return f"{seconds:.1f} s left" if seconds < 1e6 else f"{seconds:.3g} s left"


def observe(
    now: float, limbs: Sequence[LimbHandle], states: Sequence[P | None]
) -> SyncObservation[P]:
    """A synchronized move's observation of its limbs.

    Args:
        now: the tick time [s].
        limbs: the move's limbs.
        states: what each limb's handle read (None where its state is unusable: stale, or
            the limb powered off or disassembled, :attr:`LimbHandle.fresh`).

    Returns:
        The states, with why each limb whose health says so is down, for the core's
        messages (a move holds, never succeeds, while a limb is down).
    """
    down = tuple(
        None if state is not None else limb.down()
        for limb, state in zip(limbs, states, strict=True)
    )  # (a limb with a usable state is not down: its health is read only for the others)
    return SyncObservation(now, tuple(states), down)


def waiting_for_states(
    names: Sequence[str],
    limbs: Sequence[LimbHandle],
    states: Sequence[object | None],
    waited: bool,
    timeout: float,
    what: str = "state",
) -> tuple[py_trees.common.Status, str]:
    """A move waiting for its limbs' first usable states: RUNNING, or FAILURE once timed out.

    The message names the limbs without one and, for those whose state says why (powered
    off, disassembled, a bus that fails), why: not "is its agent running?" for a limb whose
    agent answers but cannot read it.

    Args:
        names: the move's limbs' mission names.
        limbs: their handles.
        states: each limb's usable state, None where it has none.
        waited: whether the move has waited ``timeout`` already.
        timeout: the move's ``stale_timeout`` [s], for the message.
        what: what it waits for (``state``, ``joint state``).

    Returns:
        The status and the feedback message.
    """
    missing = [n for n, s in zip(names, states, strict=True) if s is None]
    down = [
        f"{name} is {why.condition}" + (f", {why.cause}" if why.cause else "")
        for name, limb in zip(names, limbs, strict=True)
        if (why := limb.down()) is not None
    ]
    why_not = f" ({'; '.join(down)})" if down else ""
    if waited:
        return py_trees.common.Status.FAILURE, (
            f"no {what} from {', '.join(missing)} after {timeout:g} s{why_not}: "
            + ("the move cannot start without it" if down else "is its agent running?")
        )
    first = "the first state" if what == "state" else f"the {what}"
    return py_trees.common.Status.RUNNING, f"waiting for {first} of {', '.join(missing)}{why_not}"


def stall_timeout(params: Mapping[str, Any]) -> float:
    """A move's ``stall_timeout`` [s] (inf: never), for :class:`SyncConfig`."""
    value = params.get("stall_timeout")
    return math.inf if value is None else float(value)


def stalled_text(
    message: str, gaps: Sequence[str], names: Sequence[str], limbs: Sequence[LimbHandle]
) -> str:
    """A stalled move's FAILURE message: the core's, each limb's gap, the faults, what to do.

    Args:
        message: the core's message (where the limbs head).
        gaps: each limb's distance from there, in words (``"heavy 246 mm"``).
        names: the move's limbs' mission names.
        limbs: their handles (the faults their states report).
    """
    faults = [
        f"{name}: {', '.join(sorted(limb.faults))}"
        for name, limb in zip(names, limbs, strict=True)
        if limb.faults
    ]
    found = f"; faults in force: {'; '.join(faults)}" if faults else ""
    return (
        f"{message} (from it: {', '.join(gaps)}){found}; check that each limb can move "
        "(faults, joint limits, speed limits, a goal out of reach), or give stall_timeout_s "
        "more time (inf: never)"
    )
