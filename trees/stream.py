"""The tick stream: one typed, immutable snapshot per tick, a header before, an end after.

The runner is the only producer (DESIGN.md, "One tick"). Everything that shows or keeps a
run (the recorder, the terminal live view, the ``--headless`` progress, the web viewer) is a
:class:`TickSink` and sees the run through these values only: none of them reaches into the
runner, the tree or the limb handles.

* :class:`RunHeader` once, before the first tick: the mission, its parameters, the clock,
  the tree (:class:`TreeNode`, ids from :mod:`limbtree.trees.identity`) and the robots.
* :class:`TickSnapshot` once per tick: time, tick index, per node id its status, feedback
  message and time spent in its tick, per limb its state and commands, the bases, the
  tick's :class:`RunEvent` s and each ticked skill's
  :class:`~limbtree.skills.telemetry.SkillTelemetry`.
* :class:`RunEnd` once, when the run is over: the outcome and the summary.

A sink that raises is detached and the run goes on (see :class:`~limbtree.trees.runner.Runner`);
``docs/record.md`` says how the record survives it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

from limbtree.kinematics import Pose
from limbtree.skills.telemetry import SkillTelemetry

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class RunOutcome(StrEnum):
    """How a run ended (``summary.json``'s ``outcome``)."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ABORTED = "ABORTED"


class NodeStatus(StrEnum):
    """A node's status after its tick (the py_trees statuses, by value)."""

    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    RUNNING = "RUNNING"
    INVALID = "INVALID"


class EventKind(StrEnum):
    """What can happen in a tick besides the tree's own progress."""

    FAULT_INJECTED = "fault_injected"
    FAULT_REFUSED = "fault_refused"
    FAULT_ENDED = "fault_ended"
    FAULT_RECOVERED = "fault_recovered"
    LINK = "link"
    LINK_RESTORED = "link_restored"
    AGENT_RESTARTED = "agent_restarted"
    AGENT_ERROR = "agent_error"
    PAUSED = "paused"
    RESUMED = "resumed"
    ABORTED = "aborted"
    TIME_LIMIT = "time_limit"
    SINK_FAILED = "sink_failed"
    LIMB_CLAIMED = "limb_claimed"
    LIMB_RELEASED = "limb_released"
    LIMB_REFUSED = "limb_refused"
    FAULT_DEFERRED = "fault_deferred"
    FAULT_SKIPPED = "fault_skipped"
    GATE = "gate"
    GATE_ANSWERED = "gate_answered"


#: The key an event's ``detail`` takes in the record, per kind (record v1 names kept).
_DETAIL_KEY: Mapping[EventKind, str] = MappingProxyType(
    {
        EventKind.ABORTED: "why",
        EventKind.SINK_FAILED: "error",
        EventKind.LIMB_REFUSED: "message",
        EventKind.FAULT_ENDED: "reason",
        EventKind.FAULT_SKIPPED: "reason",
        EventKind.LINK_RESTORED: "detail",
        EventKind.AGENT_RESTARTED: "detail",
        EventKind.PAUSED: "why",
        EventKind.RESUMED: "why",
        EventKind.GATE: "prompt",
        EventKind.GATE_ANSWERED: "answer",
    }
)


@dataclass(frozen=True, slots=True)
class RunEvent:
    """Something that happened in a tick: a fault injected, a link lost, a pause, ...

    Attributes:
        kind: what happened.
        t: when [s, mission time].
        limb: the limb concerned, or None.
        fault: the fault kind concerned (``power_off``, ...), or None.
        detail: a person's explanation (an error, why the run was aborted), or None.
        node: the id of the node concerned (which claimed, released or was refused a
            limb), or None.
        owner: the id of the node that owns the limb another was refused, or None.
    """

    kind: EventKind
    t: float
    limb: str | None = None
    fault: str | None = None
    detail: str | None = None
    node: str | None = None
    owner: str | None = None

    def as_map(self) -> dict[str, Any]:
        """The record's map: ``kind``, ``t`` and whichever of the others are set."""
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.limb is not None:
            out["limb"] = self.limb
        if self.fault is not None:
            out["fault"] = self.fault
        if self.node is not None:
            out["node"] = self.node
        if self.owner is not None:
            out["owner"] = self.owner
        out["t"] = self.t
        if self.detail is not None:
            out[_DETAIL_KEY.get(self.kind, "error")] = self.detail
        return out


class NodeTick(NamedTuple):
    """One node's tick (a NamedTuple: built for every ticked node of every tick, cheaply).

    Attributes:
        status: its status after the tick.
        message: its feedback message ("" when it has none).
        busy_s: wall time from the start of its tick to its end [s], children included for
            composites and decorators (a diagnostic, never logic).
    """

    status: NodeStatus
    message: str
    busy_s: float


class LimbTick(NamedTuple):
    """One limb in a tick, in the world frame (a NamedTuple, like :class:`NodeTick`).

    Attributes:
        state: the end-effector pose; for a limb an end-effector skill commanded this tick,
            the state the command was clamped around; None when stale or never seen.
        command: the end-effector command sent this tick, or None.
        q: the latest joint positions [rad or m], or None before any state.
        q_command: the joint-space command sent this tick [rad or m], or None.
        health: the latest health flags (``limbtree.transport.Health`` as an int).
        stale: whether the limb's state was stale.
        target: the world pose a skill drove the end-effector toward this tick (a
            synchronized move's segment end, an alignment's goal), or None.
    """

    state: Pose | None
    command: Pose | None
    q: tuple[float, ...] | None
    q_command: tuple[float, ...] | None
    health: int
    stale: bool
    target: Pose | None = None


@dataclass(frozen=True, slots=True)
class TickSnapshot:
    """Everything about one tick, immutable.

    Attributes:
        t: the tick time [s, mission time].
        tick: the tick index, from 0.
        nodes: node id -> :class:`NodeTick`, for the nodes ticked this tick.
        limbs: limb name -> :class:`LimbTick`, every limb.
        bases: robot name -> its base pose in the world.
        events: what happened this tick.
        skills: node id -> the telemetry a skill published this tick.
    """

    t: float
    tick: int
    nodes: Mapping[str, NodeTick]
    limbs: Mapping[str, LimbTick]
    bases: Mapping[str, Pose]
    events: tuple[RunEvent, ...]
    skills: Mapping[str, SkillTelemetry]


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One node of the run's tree, as the header describes it.

    Attributes:
        id: the node's id (:mod:`limbtree.trees.identity`).
        name: its display name.
        type: its mission-file type name (``sync_move``, ``sequence``, ...).
        params: its validated parameters as plain data.
        children: its children, in order.
    """

    id: str
    name: str
    type: str
    params: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    children: tuple[TreeNode, ...] = ()

    def walk(self) -> tuple[TreeNode, ...]:
        """This node and every node under it, parents first, children in order."""
        out: list[TreeNode] = []
        stack = [self]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(reversed(node.children))
        return tuple(out)

    def as_map(self) -> dict[str, Any]:
        """The record's ``NODE`` map: ``id``, ``name``, ``type``, ``params``, ``children``."""
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "params": plain(self.params),
            "children": [child.as_map() for child in self.children],
        }


@dataclass(frozen=True, slots=True)
class LimbInfo:
    """A limb as its agent described it.

    Attributes:
        joints: joint names.
        max_joint_speed: per joint, its speed limit [rad/s or m/s].
        lower: per joint, its lower limit [rad or m].
        upper: per joint, its upper limit [rad or m].
        end_effectors: end-effector names.
        has_gripper: whether it has a gripper.
        chain: the limb's name in its robot description (``leg_0`` of ``moonbot_zero``),
            or "" when unknown; the web debugger draws the limb from it.
    """

    joints: tuple[str, ...]
    max_joint_speed: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    end_effectors: tuple[str, ...] = ()
    has_gripper: bool = False
    chain: str = ""

    def as_map(self) -> dict[str, Any]:
        """The record's limb map."""
        return {
            "joints": list(self.joints),
            "max_joint_speed": plain(self.max_joint_speed),
            "lower": plain(self.lower),
            "upper": plain(self.upper),
            "end_effectors": list(self.end_effectors),
            "has_gripper": self.has_gripper,
            **({"chain": self.chain} if self.chain else {}),
        }


@dataclass(frozen=True, slots=True)
class RobotInfo:
    """One robot (one plant) of the run.

    Attributes:
        robot: the robot description's name (``heavy_limb``, ``moonbot_zero``, ...).
        plant: the plant kind or driver behind it (``kinematic``, a driver's name, ...).
        agent: where its agent is (``sim`` or an endpoint).
        limbs: limb name (as the mission names it) -> :class:`LimbInfo`.
        base: the base pose in the world at the start.
    """

    robot: str
    plant: str
    agent: str
    limbs: Mapping[str, LimbInfo]
    base: Pose | None = None

    def as_map(self) -> dict[str, Any]:
        """The record's robot map."""
        out: dict[str, Any] = {
            "robot": self.robot,
            "plant": self.plant,
            "agent": self.agent,
            "limbs": {name: limb.as_map() for name, limb in self.limbs.items()},
        }
        if self.base is not None:
            out["base"] = self.base.as_list()
        return out


@dataclass(frozen=True, slots=True)
class RunHeader:
    """What a run is, before its first tick.

    Attributes:
        mission: the mission's name.
        mission_file: its path, or "" for a tree built in code.
        parameters: parameter name -> value (after ``--set``), plain data.
        seed: the run's seed.
        clock: ``sim`` or ``real``.
        rate_hz: the tick rate [Hz].
        tree: the tree, ids assigned.
        robots: robot name -> :class:`RobotInfo`.
        world: the mission's physical world, plain data in SI (``{"terrain": {...}}``,
            ``docs/record.md``); empty when the mission has none.
    """

    mission: str
    mission_file: str
    parameters: Mapping[str, Any]
    seed: int
    clock: str
    rate_hz: float
    tree: TreeNode
    robots: Mapping[str, RobotInfo]
    world: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def node(self, node_id: str) -> TreeNode:
        """The tree node with id ``node_id``.

        Raises:
            KeyError: when the tree has no such node.
        """
        for node in self.tree.walk():
            if node.id == node_id:
                return node
        raise KeyError(f"the run's tree has no node {node_id!r}")


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run ended.

    Attributes:
        outcome: SUCCESS, FAILURE or ABORTED.
        t: the last tick's time [s, mission time].
        ticks: how many ticks ran.
        failure: the deepest failed node's message, or the error that ended the run, or None.
        summary: the ``summary.json`` content (plain data, ``docs/record.md``).
    """

    outcome: RunOutcome
    t: float
    ticks: int
    failure: str | None
    summary: Mapping[str, Any]


class TickSink(Protocol):
    """Consumes the tick stream (the recorder, the live view, ``--headless`` progress, ...).

    A sink must not block: the tick waits for it.
    """

    def on_start(self, header: RunHeader) -> None:
        """The run starts; nothing has ticked yet."""

    def on_tick(self, snapshot: TickSnapshot) -> None:
        """One tick happened."""

    def on_message(self, text: str) -> None:
        """A line for a person (fault injected, paused, could not inject, ...)."""

    def on_pause(self, paused: bool, t: float) -> None:
        """The operator paused (True) or resumed (False) the run at ``t`` [s]."""

    def on_end(self, end: RunEnd) -> None:
        """The run is over; no call follows."""


def plain(value: Any) -> Any:
    """``value`` as msgpack/JSON-friendly data.

    Enums by value, tuples and arrays as lists, poses as ``[x, y, z, qx, qy, qz, qw]``,
    non-finite floats as None, mappings with string keys; anything else by its ``str``.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, Pose):
        return value.as_list()
    if isinstance(value, SkillTelemetry):
        return value.as_map()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list | set | frozenset):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    return str(value)


def reset_without_tick(
    was: str, now: str, below: Iterable[str], ticked: Container[str], running: Callable[[str], bool]
) -> Iterator[str]:
    """The nodes under a composite that py_trees resets (to INVALID) without ticking them.

    A tick's map holds only the nodes ticked in it; a viewer that shows each node's last
    status (Groot2's way: green until reset) replays the resets that the map does not
    carry. A composite (or decorator) that starts again (it was not RUNNING) resets its whole
    subtree; one that ends (not RUNNING after its tick) halts what under it was still RUNNING.

    Args:
        was: the composite's status before this tick (``INVALID`` or ``IDLE``: never ticked).
        now: its status after this tick.
        below: the ids of every node under it.
        ticked: the ids of the nodes ticked this tick (they have their own status).
        running: whether a node under it was RUNNING before this tick.

    Yields:
        The ids of the nodes reset (some may have been reset already).
    """
    running_status = NodeStatus.RUNNING.value
    if was == running_status and now == running_status:
        return
    starting = was != running_status
    for node_id in below:
        if node_id not in ticked and (starting or running(node_id)):
            yield node_id


def frozen_map(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only view of a fresh copy of ``values``."""
    return MappingProxyType(dict(values))


__all__ = [
    "EventKind",
    "LimbInfo",
    "LimbTick",
    "NodeStatus",
    "NodeTick",
    "RobotInfo",
    "RunEnd",
    "RunEvent",
    "RunHeader",
    "RunOutcome",
    "TickSink",
    "TickSnapshot",
    "TreeNode",
    "frozen_map",
    "plain",
    "reset_without_tick",
]
