"""One agent, one connection: the runner's non-blocking side of an agent (wire v2).

An :class:`AgentClient` talks to one agent (one plant, one or several limbs) over one DEALER
socket for requests and one SUB socket for the state stream (one topic per limb). It holds
every limb's latest state without ever blocking: the runner calls :meth:`AgentClient.poll`
once per tick. In ``sim`` it steps the agent once per tick (:meth:`~AgentClient.send_step`
then :meth:`~AgentClient.finish_step`), and the reply brings every limb's state at once
(an :class:`AgentStep`); ``describe`` answers with an :class:`AgentDescription`.
:meth:`AgentClient.link` gives the links of the agent's limbs
(:class:`~limbtree.transport.limb_client.LimbClient`) over this single connection.

Requests are matched to replies by ``seq``; a reply that comes after its request timed out is
discarded. ZeroMQ reconnects by itself when an agent comes back (after a crash, on the same
endpoint); commands are never queued for a disconnected agent.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

import msgpack
import zmq

from limbtree.transport.clock import ClockMode
from limbtree.transport.driver import (
    CommandMode,
    GripperAction,
    Health,
    LimbDescription,
    LimbState,
)
from limbtree.transport.endpoint import agent_endpoints, wants_ipv6
from limbtree.transport.errors import (
    ConfigError,
    LimbUnavailableError,
    ProtocolError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
)
from limbtree.transport.plant import BaseState, PlantDescription
from limbtree.transport.schema import (
    COMMAND_ERRORS_FIELD,
    COMMANDS_FIELD,
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    QUATERNION_TOLERANCE,
    REPLY_TYPES,
    ErrorCode,
    MessageType,
    StateSample,
    base_from_map,
    check_header,
    decode,
    make_packer,
    packed_header,
    plant_description_from_map,
    request,
    state_from_map,
    unpack,
    validate_request,
)
from limbtree.transport.security import load_client_keys, make_curve_client

if TYPE_CHECKING:
    # limb_client imports this module; AgentClient.link imports LimbClient when first called.
    from limbtree.transport.limb_client import LimbClient

_Socket = zmq.Socket[bytes]

MAX_PENDING_COMMANDS: Final = 4096
"""Most unanswered commands whose replies the client still waits for (older ones are forgotten)."""
_ARRAY_FIELDS: Final = frozenset({"q", "pose", "twist", "tau", "goal"})
_POWER_OFF: Final = int(Health.POWER_OFF)
_EE_POSE: Final = CommandMode.EE_POSE.value
_COMMAND: Final = MessageType.COMMAND.value
_EXPECTED_REPLY: Final = {request: str(reply) for request, reply in REPLY_TYPES.items()}

_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_NOBLOCK: Final = int(zmq.NOBLOCK)
_RCVTIMEO: Final = int(zmq.RCVTIMEO)
_MAX_RCVTIMEO_MS: Final = 2**31 - 1
"""The longest receive timeout ZeroMQ takes (a C int) [ms]: a longer wait is several."""


@dataclass(frozen=True)
class AgentDescription:
    """An agent's answer to ``describe``.

    Attributes:
        plant: what the agent serves: its limbs, their joints and limits, the base, whether
            it floats.
        clock: the agent's clock mode.
        stream_rate_hz: its state stream rate in the real clock [Hz].
        curve: whether it requires CURVE authentication.
        max_message_bytes: the largest request it accepts [bytes].
        errors_received: per error code, how many bad requests it has rejected.
        agent_time: its clock when it answered [s].
        state_seq: the sequence number of its latest state.
        session: the agent run's random id (it changes when the agent restarts).
        versions: the protocol versions it speaks.
        limb_name: the limb this description was asked for (a :class:`LimbClient`'s), or None.
    """

    plant: PlantDescription
    clock: ClockMode
    stream_rate_hz: float
    curve: bool
    max_message_bytes: int
    errors_received: Mapping[str, int]
    agent_time: float
    state_seq: int
    session: int
    versions: tuple[int, ...] = (PROTOCOL_VERSION,)
    limb_name: str | None = None

    @property
    def limb(self) -> LimbDescription:
        """The description of :attr:`limb_name`'s limb (the plant's first when None)."""
        name = self.limb_name if self.limb_name is not None else self.plant.limbs[0].name
        return self.plant.limb(name).description


class AgentStep(NamedTuple):
    """The reply to one ``step``.

    Attributes:
        t: the time the agent stepped to [s].
        base: the plant's base in the world.
        states: limb name -> its state at ``t`` (the available limbs).
        unavailable: the limbs that are disassembled (no state).
    """

    t: float
    base: BaseState
    states: Mapping[str, LimbState]
    unavailable: tuple[str, ...]


class AgentClient:
    """Talks to one agent: every limb of its plant over one connection.

    Args:
        endpoint: the agent's request endpoint ``tcp://HOST:N`` (the stream is on N+1).
        keys_dir: a keys folder with ``client.key_secret`` and ``agent.key`` to talk CURVE,
            or None for plain TCP.
        stale_after_s: a limb's state is stale when no update came for this long [s].
        clock: time source for staleness [s], e.g. ``time.monotonic`` or ``SimClock.now``.
        context: a ZeroMQ context to share between many clients; by default the client
            makes (and terminates) its own.
        send_hwm: most outgoing messages queued per connection before sends are dropped.
        subscribe: whether to subscribe to the state stream (``ping_endpoint`` does not).
        limbs: the limbs to follow (stream topics), when known; None: every limb the agent
            serves (learnt from ``describe`` and from the stream).
        commands_ride_on_steps: hold each command until the next :meth:`send_step` and send
            it inside that step (a sim-clock runner: one message each way per agent per
            tick); any other request first sends the held commands on their own, in order.

    Raises:
        ConfigError: for a malformed endpoint or a non-positive ``stale_after_s``.
        KeysError: when ``keys_dir`` lacks the client's keys.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        keys_dir: str | os.PathLike[str] | None = None,
        stale_after_s: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        context: zmq.Context[_Socket] | None = None,
        send_hwm: int = 1000,
        subscribe: bool = True,
        limbs: Sequence[str] | None = None,
        commands_ride_on_steps: bool = False,
    ) -> None:
        self._endpoint, self._state_endpoint = agent_endpoints(endpoint)
        if not stale_after_s > 0.0:
            raise ConfigError(f"stale_after_s must be > 0 s, not {stale_after_s}")
        self._stale_after_s = float(stale_after_s)
        self._clock = clock
        curve = load_client_keys(keys_dir) if keys_dir is not None else None
        self._curve = curve is not None
        self._limbs: tuple[str, ...] = () if limbs is None else tuple(limbs)

        self._owns_context = context is None
        self._context: zmq.Context[_Socket] = zmq.Context() if context is None else context
        self._closed = False
        self._sub: _Socket | None = None
        try:
            dealer = self._context.socket(zmq.DEALER)
            self._dealer = dealer
            _common_options(dealer)
            dealer.setsockopt(zmq.IMMEDIATE, 1)
            # One routing id for the client's life (not one per connection): the agent knows
            # it as the same commander after a dropped connection (docs/protocol.md).
            dealer.setsockopt(zmq.ROUTING_ID, b"lt" + os.urandom(8))
            dealer.sndhwm = send_hwm
            ipv6 = wants_ipv6(self._endpoint)  # tcp://[::1]:N
            if ipv6:
                dealer.setsockopt(zmq.IPV6, 1)
            if curve is not None:
                make_curve_client(dealer, curve)
            dealer.connect(self._endpoint)
            if subscribe:
                sub = self._context.socket(zmq.SUB)
                self._sub = sub
                _common_options(sub)
                if ipv6:
                    sub.setsockopt(zmq.IPV6, 1)
                if curve is not None:
                    make_curve_client(sub, curve)
                for topic in [name.encode() for name in self._limbs] or [b""]:
                    sub.setsockopt(zmq.SUBSCRIBE, topic)
                sub.connect(self._state_endpoint)
        except BaseException:
            self.close()
            raise

        self._rcvtimeo_ms = -1
        self._out_poller = zmq.Poller()
        self._out_poller.register(self._dealer, zmq.POLLOUT)
        self._packer = make_packer()
        self._packb: Callable[[object], bytes] = self._packer.pack
        self._step_prefix = packed_header(MessageType.STEP, 4)
        self._t_key = self._packb("t")
        self._seq = 0
        self._awaiting = -1
        self._reply: dict[str, Any] | None = None
        self._pending_commands: dict[int, LimbClient | None] = {}
        self._pending_claims: dict[int, LimbClient | None] = {}
        self._step_in_flight: tuple[int, float, float] | None = None
        # A step that found no connection when sent: :meth:`finish_step` sends it when the
        # connection comes up, within the step's own time, so a runner that steps many
        # agents waits once for all the absent ones, not once each in turn.
        # The frame, and the links of the commands riding on it.
        self._unsent_step: tuple[bytes, list[LimbClient]] | None = None
        # Sim lockstep: commands wait for the next step and go out inside it (protocol.md 5.4).
        self._ride = commands_ride_on_steps
        self._riding: list[tuple[dict[str, Any], int, LimbClient | None]] = []
        self._carried: dict[int, LimbClient | None] = {}
        self._step_commands_prefix = packed_header(MessageType.STEP, 5)
        self._commands_key = self._packb(COMMANDS_FIELD)

        self._samples: dict[str, StateSample] = {}
        self._received_at: dict[str, float] = {}
        self._base: BaseState | None = None
        self._base_raw: object = None
        self._links: dict[str, LimbClient] = {}

        self._stale_replies = 0
        self._bad_messages = 0
        self._restarts = 0
        self._unavailable: frozenset[str] = frozenset()

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def endpoint(self) -> str:
        """The agent's request endpoint."""
        return self._endpoint

    @property
    def state_endpoint(self) -> str:
        """The agent's state stream endpoint."""
        return self._state_endpoint

    @property
    def limbs(self) -> tuple[str, ...]:
        """The limbs this client follows (given, or learnt from ``describe``)."""
        return self._limbs

    @property
    def stale_after_s(self) -> float:
        """The staleness threshold [s]."""
        return self._stale_after_s

    @property
    def base(self) -> BaseState | None:
        """The latest base state received, or None."""
        return self._base

    def sample(self, limb: str) -> StateSample | None:
        """The latest state of ``limb`` with its agent sequence number and time, or None."""
        return self._samples.get(limb)

    def state(self, limb: str) -> LimbState | None:
        """The latest state of ``limb``, or None before the first one."""
        sample = self._samples.get(limb)
        return None if sample is None else sample.state

    def received_at(self, limb: str) -> float | None:
        """When (by the client's clock) ``limb``'s latest state arrived [s], or None."""
        return self._received_at.get(limb)

    def is_stale(self, limb: str) -> bool:
        """True when no state of ``limb`` has arrived for ``stale_after_s`` (or none ever)."""
        received = self._received_at.get(limb)
        return received is None or self._clock() - received > self._stale_after_s

    def is_disassembled(self, limb: str) -> bool:
        """Whether the last step's reply said ``limb`` is disassembled.

        Sim clock only: in the real clock an agent says nothing about a disassembled limb,
        which goes stale.
        """
        return limb in self._unavailable

    @property
    def stale_replies(self) -> int:
        """Replies discarded because their request had timed out or was unknown."""
        return self._stale_replies

    @property
    def bad_messages(self) -> int:
        """Messages from the agent that could not be decoded (and were ignored)."""
        return self._bad_messages

    @property
    def restarts(self) -> int:
        """How many times the agent was seen restarting (its state ``session`` changed)."""
        return self._restarts

    def link(self, limb: str) -> LimbClient:
        """The link to one limb of this agent, over this client's connection.

        Args:
            limb: the limb's name in the agent's plant.
        """
        link = self._links.get(limb)
        if link is None:
            from limbtree.transport.limb_client import LimbClient

            link = LimbClient(agent=self, limb=limb)
            self._links[limb] = link
            if limb not in self._limbs:
                self._limbs = (*self._limbs, limb)
        return link

    # ----------------------------------------------------------------------------------------
    # Non-blocking side

    def poll(self) -> bool:
        """Take in whatever has arrived, without blocking (call once per tick).

        Returns:
            True when a newer state of some limb arrived.
        """
        # Plain ints: pyzmq's flag enums cost microseconds per operation on this hot path.
        dealer = self._dealer
        while cast(int, dealer.getsockopt(_EVENTS)) & _POLLIN:
            self._on_reply(dealer.recv(_NOBLOCK))
        sub = self._sub
        new = False
        if sub is not None:
            # Only each limb's newest state counts: a runner that fell behind decodes one
            # message per limb, not the whole backlog (which would make it fall further).
            newest: dict[bytes, list[bytes]] = {}
            while cast(int, sub.getsockopt(_EVENTS)) & _POLLIN:
                frames = sub.recv_multipart(_NOBLOCK)
                newest[frames[0]] = frames
            for frames in newest.values():
                new = self._on_stream(frames) or new
        return new

    def send_command(
        self,
        limb: str | None,
        mode: CommandMode | str,
        *,
        _link: LimbClient | None = None,
        **fields: Any,
    ) -> bool:
        """Send a command to one limb without waiting.

        Arrays (``q``, ``pose``, ``twist``, ``tau``) may be any sequence of numbers, numpy
        arrays included. The agent's reply is taken in by :meth:`poll`; a refusal shows in
        the limb link's ``last_error``.

        Args:
            limb: the limb's name; None for the agent's only limb.
            mode: the command mode.
            **fields: the mode's fields (see :class:`CommandMode`).

        Returns:
            True when it went out; False when it was dropped (no connection to the agent, or
            its queue is full).

        Raises:
            ProtocolError: when the command itself is malformed (a bug in the caller).
        """
        seq = self._next_seq()
        msg = _pose_command(seq, limb, mode, fields)
        if msg is None:  # any other command: built and checked field by field
            message: dict[str, Any] = {"mode": str(mode)}
            if limb is not None:
                message["limb"] = limb
            for name, value in fields.items():
                message[name] = _plain_array(value) if name in _ARRAY_FIELDS else value
            msg = request(MessageType.COMMAND, seq, **message)
            validate_request(msg)
        if self._ride:
            if self._closed:
                raise TransportError(f"{self._where()}: this client is closed")
            self._riding.append((msg, seq, _link or self._link_for(limb)))
            return True
        return self._send_async(msg, seq, _link or self._link_for(limb))

    def send_gripper(
        self, limb: str | None, action: GripperAction | str, *, _link: LimbClient | None = None
    ) -> bool:
        """Ask for one limb's gripper to open or close, without waiting.

        Returns:
            True when it went out; False when it was dropped.

        Raises:
            ProtocolError: for an unknown action.
        """
        seq = self._next_seq()
        fields: dict[str, Any] = {"action": str(action)}
        if limb is not None:
            fields["limb"] = limb
        msg = request(MessageType.GRIPPER, seq, **fields)
        validate_request(msg)
        self._send_riding()
        return self._send_async(msg, seq, _link or self._link_for(limb))

    def send_claim(self, limb: str | None, *, _link: LimbClient | None = None) -> bool:
        """Claim one limb without waiting: renew this client's lease of it, moving nothing.

        The agent makes this client the limb's commander as a command would (section 5.9 of
        the protocol), and the limb goes on with its current command. The reply is taken in
        by :meth:`poll`; a refusal (``commanded_elsewhere``: another client commands the
        limb) shows in the limb link's ``last_error``, as a command's does.

        Args:
            limb: the limb's name; None for the agent's only limb.

        Returns:
            True when it went out; False when it was dropped (no connection to the agent, or
            its queue is full).
        """
        seq = self._next_seq()
        msg = request(MessageType.CLAIM, seq, **({} if limb is None else {"limb": limb}))
        validate_request(msg)
        self._send_riding()
        return self._send_async(msg, seq, _link or self._link_for(limb), command=False)

    # ----------------------------------------------------------------------------------------
    # Request/reply helpers (blocking up to a timeout)

    def describe(self, timeout_s: float = 1.0) -> AgentDescription:
        """Ask the agent what it serves (and learn its limbs' names).

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent answered with an error.
            ProtocolError: when the reply is malformed.
        """
        reply = self._call(MessageType.DESCRIBE, timeout_s, {})
        seq: int = reply["seq"]
        errors = reply.get("errors_received")
        if type(errors) is not dict or any(type(n) is not int for n in errors.values()):
            raise self._malformed_describe("errors_received is not a map of ints", seq)
        clock_name = reply.get("clock")
        if clock_name not in {mode.value for mode in ClockMode}:
            raise self._malformed_describe(
                f"clock is {clock_name!r}, not one of "
                f"{', '.join(repr(mode.value) for mode in ClockMode)}",
                seq,
            )
        try:
            clock = ClockMode(clock_name)
            description = AgentDescription(
                plant=plant_description_from_map(reply, seq),
                clock=clock,
                stream_rate_hz=float(reply["stream_rate_hz"]),
                curve=bool(reply["curve"]),
                max_message_bytes=int(reply["max_message_bytes"]),
                errors_received=errors,
                agent_time=float(reply["agent_time"]),
                state_seq=int(reply["state_seq"]),
                session=int(reply["session"]),
                versions=tuple(int(v) for v in reply.get("versions", (PROTOCOL_VERSION,))),
            )
        except KeyError as exc:
            raise self._malformed_describe(f"it has no field {exc}", seq) from None
        except (TypeError, ValueError) as exc:
            raise self._malformed_describe(str(exc), seq) from None
        if not self._limbs:
            self._limbs = description.plant.limb_names
        return description

    def _malformed_describe(self, what: str, seq: int) -> ProtocolError:
        """The error of a ``describe_reply`` that is not the protocol's, naming the endpoint."""
        return ProtocolError(
            ErrorCode.BAD_FIELD,
            f"{self._where()} answered describe with a malformed describe_reply: {what}; is it "
            f"a limbtree agent speaking protocol version {PROTOCOL_VERSION} (docs/protocol.md, "
            "section 5.1)?",
            seq=seq,
        )

    def ping(self, timeout_s: float = 1.0) -> float:
        """Measure the round trip to the agent.

        Returns:
            The round-trip time [s], measured with ``time.perf_counter``.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent answered with an error.
        """
        start = time.perf_counter()
        self._call(MessageType.PING, timeout_s, {})
        return time.perf_counter() - start

    def step(self, t: float, timeout_s: float = 1.0) -> AgentStep:
        """Advance a sim-clock agent to time ``t`` and return every limb's state (lockstep).

        Raises:
            RequestTimeoutError: when no reply came in time.
            LimbUnavailableError: when every limb of the agent is disassembled.
            RemoteError: for other refusals (``wrong_clock``, ``bad_value``, ...).
        """
        self.send_step(t, timeout_s)
        return self.finish_step()

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Send ``step(t)`` without waiting for the reply; :meth:`finish_step` collects it.

        Lets a runner step many agents at once: send to all, then collect from all.

        Never waits: when the agent is not connected (not started yet, or dead), the step
        is sent by :meth:`finish_step` as soon as a connection comes up within ``timeout_s``
        of now. A runner stepping many agents thus waits once for all the absent ones.

        Args:
            t: the time to step to [s].
            timeout_s: the time allowed from now until the reply is in [s].

        Raises:
            TransportError: when a step is already in flight on this client, or the client
                is closed.
        """
        if self._step_in_flight is not None:
            raise TransportError(f"{self._where()}: a step is already in flight")
        if self._closed:
            raise TransportError(f"{self._where()}: this client is closed")
        seq = self._next_seq()
        body = self._packb(seq) + self._t_key + self._packb(float(t))
        riding = self._riding
        start = time.perf_counter()
        if not riding:
            frame = self._step_prefix + body
            if not self._send(frame):
                self._unsent_step = (frame, [])
            self._step_in_flight = (seq, start, timeout_s)
            return
        self._riding = []
        commands = self._packb([msg for msg, _, _ in riding])
        frame = self._step_commands_prefix + body + self._commands_key + commands
        if not self._send(frame):
            self._unsent_step = (frame, [link for _, _, link in riding if link is not None])
        carried = self._carried
        carried.clear()  # (refusals of an earlier step's commands came with its reply)
        for _, command_seq, link in riding:
            carried[command_seq] = link
            if link is not None:
                link._commands_sent += 1
                link._last_command_seq = command_seq
        self._step_in_flight = (seq, start, timeout_s)

    def finish_step(self) -> AgentStep:
        """Wait for the reply to the step sent with :meth:`send_step`; take every limb's state.

        Raises:
            TransportError: when no step is in flight.
            RequestTimeoutError: when no connection came up or the reply did not come in
                time (naming the limbs); the commands riding on an unsent step are dropped.
            LimbUnavailableError: when every limb of the agent is disassembled.
            RemoteError: for other refusals.
        """
        in_flight = self._step_in_flight
        if in_flight is None:
            raise TransportError(f"{self._where()}: no step in flight")
        self._step_in_flight = None
        seq, start, timeout_s = in_flight
        if self._unsent_step is not None:
            self._send_unsent_step(start, timeout_s)
        try:
            reply = self._finish(MessageType.STEP, seq, start, timeout_s)
        except LimbUnavailableError:
            self._unavailable = frozenset(self._limbs or self._samples)  # every limb is gone
            raise
        limbs_raw = reply.get("limbs")
        if type(limbs_raw) is not dict:
            raise ProtocolError(
                ErrorCode.BAD_FIELD, f"{self._where()}: step_reply without a limbs map", seq=seq
            )
        self._take_base(reply.get("base"), seq)
        refused = reply.get(COMMAND_ERRORS_FIELD)
        if refused:
            self._take_refusals(refused)
        states: dict[str, LimbState] = {}
        for name, raw in limbs_raw.items():
            sample = state_from_map(raw, seq)
            self._accept(name, sample)
            states[name] = sample.state
        unavailable_raw = reply.get("unavailable")
        unavailable: tuple[str, ...] = (
            tuple(u for u in unavailable_raw if type(u) is str) if unavailable_raw else ()
        )
        self._unavailable = frozenset(unavailable)
        base = self._base if self._base is not None else BaseState()
        return AgentStep(float(reply.get("t", 0.0)), base, states, unavailable)

    def fault(self, limb: str | None, kind: str, timeout_s: float = 1.0, **params: Any) -> None:
        """Inject a fault into one simulated limb.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``not_simulated``, ``unknown_fault``, ``unknown_limb``, ...
        """
        fields: dict[str, Any] = {"kind": str(kind), "params": params}
        if limb is not None:
            fields["limb"] = limb
        self._call(MessageType.FAULT, timeout_s, fields)

    def gripper(
        self, limb: str | None, action: GripperAction | str, timeout_s: float = 1.0
    ) -> None:
        """Open or close one limb's gripper and wait for the agent to accept it.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``unsupported_mode`` when the limb has no gripper.
        """
        fields: dict[str, Any] = {"action": str(action)}
        if limb is not None:
            fields["limb"] = limb
        self._call(MessageType.GRIPPER, timeout_s, fields)

    def command(
        self, limb: str | None, mode: CommandMode | str, timeout_s: float = 1.0, **fields: Any
    ) -> None:
        """Send a command to one limb and wait for the agent to accept it (setup and tests).

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent refused it (``ik_failed``, ``bad_value``, ...).
        """
        message: dict[str, Any] = {"mode": str(mode)}
        if limb is not None:
            message["limb"] = limb
        for name, value in fields.items():
            message[name] = _plain_array(value) if name in _ARRAY_FIELDS else value
        self._call(MessageType.COMMAND, timeout_s, message)

    def release(self, limb: str | None = None, timeout_s: float = 1.0) -> list[str]:
        """Give up this client's command of ``limb`` (None: of every limb it commands).

        Another client may command the released limbs at once, instead of after this
        client's lease (section 5.3 of the protocol). Commands not yet sent (riding on the
        next step) go out first.

        Returns:
            The limbs released.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``commanded_elsewhere`` when another client commands ``limb``.
        """
        reply = self._call(MessageType.RELEASE, timeout_s, {} if limb is None else {"limb": limb})
        released = reply.get("released")
        return [str(name) for name in released] if isinstance(released, list | tuple) else []

    def claim(self, limb: str | None = None, timeout_s: float = 1.0) -> list[str]:
        """Become the commander of ``limb`` (None: of every limb the agent serves), moving nothing.

        It renews this client's lease as a command would (section 5.9 of the protocol); the
        limbs go on with their current commands. Commands not yet sent (riding on the next
        step) go out first.

        Returns:
            The limbs claimed.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``commanded_elsewhere`` when another client commands ``limb`` (or,
                without ``limb``, any limb of the agent): nothing was claimed;
                ``unknown_limb`` for a limb the agent does not serve.
        """
        reply = self._call(MessageType.CLAIM, timeout_s, {} if limb is None else {"limb": limb})
        claimed = reply.get("claimed")
        return [str(name) for name in claimed] if isinstance(claimed, list | tuple) else []

    def shutdown(self, timeout_s: float = 1.0, token: str | None = None) -> None:
        """Ask the agent process to stop serving.

        Args:
            timeout_s: how long to wait for the reply [s].
            token: the agent's owner token (given by the runner that started it); without
                it only an agent started with ``--allow-remote-shutdown`` stops.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``shutdown_refused`` when the agent does not stop for this client.
        """
        self._call(MessageType.SHUTDOWN, timeout_s, {} if token is None else {"token": token})

    # ----------------------------------------------------------------------------------------
    # Life cycle

    def close(self) -> None:
        """Close the sockets (and the context, when the client made it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._unsent_step = None
        for socket in (getattr(self, "_dealer", None), self._sub):
            if socket is not None:
                socket.close(linger=0)
        if self._owns_context:
            self._context.term()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Internals

    def _where(self) -> str:
        """The endpoint and the limbs, for messages."""
        if not self._limbs:
            return self._endpoint
        return f"{self._endpoint} (limb {', '.join(self._limbs)})"

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _send(self, frame: bytes) -> bool:
        try:
            self._dealer.send(frame, _NOBLOCK)
        except zmq.Again:
            return False
        return True

    def _send_async(
        self, msg: dict[str, Any], seq: int, link: LimbClient | None, command: bool = True
    ) -> bool:
        """Send a request whose reply :meth:`poll` takes in (a refusal goes to ``link``).

        Args:
            msg: the request map.
            seq: its ``seq``.
            link: the limb link its refusal goes to, or None.
            command: whether it is a command or gripper action (counted in the link's
                commands) or a claim (not counted; its refusal says so).

        Returns:
            True when it went out; False when it was dropped.
        """
        if self._closed:
            raise TransportError(f"{self._where()}: this client is closed")
        unsent = self._unsent_step
        if unsent is not None and self._send(unsent[0]):  # the step in flight goes first
            self._unsent_step = None
        if self._unsent_step is not None or not self._send(self._packb(msg)):
            if link is not None and command:
                link._commands_dropped += 1
            return False
        if link is not None and command:
            link._commands_sent += 1
            link._last_command_seq = seq
        pending = self._pending_commands if command else self._pending_claims
        pending[seq] = link
        if len(pending) > MAX_PENDING_COMMANDS:
            del pending[next(iter(pending))]
        return True

    def _send_riding(self) -> None:
        """Send the commands waiting for a step on their own, in order (another request is due)."""
        riding, self._riding = self._riding, []
        for msg, seq, link in riding:
            self._send_async(msg, seq, link)

    def _take_refusals(self, refused: object) -> None:
        """Count a step reply's refusals of the commands it carried against their limbs."""
        if type(refused) is not tuple:
            self._bad_messages += 1
            return
        for error in refused:
            seq = error.get("seq") if type(error) is dict else None
            if type(seq) is not int or seq not in self._carried:
                self._bad_messages += 1
                continue
            link = self._carried.pop(seq)
            if link is not None:
                link._command_errors += 1
                link._last_error = _remote_error(error, self._where())

    def _link_for(self, limb: str | None) -> LimbClient | None:
        if limb is None:
            return next(iter(self._links.values()), None) if len(self._links) == 1 else None
        return self._links.get(limb)

    def _call(self, mtype: MessageType, timeout_s: float, fields: dict[str, Any]) -> dict[str, Any]:
        self._send_riding()
        seq = self._next_seq()
        msg = request(mtype, seq, **fields)
        validate_request(msg)
        return self._exchange(mtype, seq, self._packb(msg), timeout_s)

    def _exchange(
        self, mtype: MessageType, seq: int, frame: bytes, timeout_s: float
    ) -> dict[str, Any]:
        start = self._begin(mtype, frame, timeout_s)
        return self._finish(mtype, seq, start, timeout_s)

    def _send_unsent_step(
        self, start: float, timeout_s: float, mtype: MessageType = MessageType.STEP
    ) -> None:
        """Send the step that found no connection, waiting for one until ``start + timeout_s``.

        Args:
            start: when the waiting began [s, ``time.perf_counter``].
            timeout_s: how long it may wait [s].
            mtype: the request that waits (named in the error).

        Raises:
            RequestTimeoutError: when no connection came up in time (the commands riding on
                the step count as dropped, as when a send fails at once).
        """
        unsent, self._unsent_step = self._unsent_step, None
        if unsent is None:
            return
        frame, links = unsent
        try:
            self._send_when_connected(frame, mtype, start, timeout_s)
        except RequestTimeoutError:
            for link in links:
                link._commands_sent -= 1
                link._commands_dropped += 1
            raise

    def _begin(self, mtype: MessageType, frame: bytes, timeout_s: float) -> float:
        """Send a request (waiting up to ``timeout_s`` for a connection); returns the start."""
        if self._closed:
            raise TransportError(f"{self._where()}: this client is closed")
        start = time.perf_counter()
        if self._unsent_step is not None:  # the step in flight goes first, as it was asked
            self._send_unsent_step(start, timeout_s, mtype)
        if not self._send(frame):
            self._send_when_connected(frame, mtype, start, timeout_s)
        return start

    def _finish(
        self, mtype: MessageType, seq: int, start: float, timeout_s: float
    ) -> dict[str, Any]:
        """Wait for the reply to ``seq`` until ``start + timeout_s``; raise error replies."""
        dealer = self._dealer
        while True:
            remaining_ms = (start + timeout_s - time.perf_counter()) * 1000.0
            if remaining_ms >= _MAX_RCVTIMEO_MS:
                timeout_ms = _MAX_RCVTIMEO_MS
            else:
                timeout_ms = max(1, math.ceil(remaining_ms))
            if timeout_ms != self._rcvtimeo_ms:
                self._rcvtimeo_ms = timeout_ms
                dealer.setsockopt(_RCVTIMEO, timeout_ms)
            try:
                raw = dealer.recv()
                break
            except zmq.Again:
                if timeout_ms < _MAX_RCVTIMEO_MS:
                    raise RequestTimeoutError(self._where(), mtype.value, timeout_s) from None
        # Fast path: the next message is the reply (the usual case in lockstep).
        reply = _reply_to(raw, seq)
        if reply is None:
            reply = self._wait_reply(raw, mtype, seq, start, timeout_s)
        rtype = reply["type"]
        if rtype == _EXPECTED_REPLY[mtype]:
            return reply
        if rtype == MessageType.ERROR:
            raise _remote_error(reply, self._where(), mtype)
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"{self._where()} answered {mtype.value} with {rtype!r}, "
            f"expected {_EXPECTED_REPLY[mtype]!r}",
            seq=seq,
        )

    def _send_when_connected(
        self, frame: bytes, mtype: MessageType, start: float, timeout_s: float
    ) -> None:
        """Retry a send until a connection is up (nothing is queued for absent agents)."""
        while not self._send(frame):
            remaining_ms = (start + timeout_s - time.perf_counter()) * 1000.0
            if remaining_ms <= 0.0:
                raise RequestTimeoutError(self._where(), mtype.value, timeout_s)
            self._out_poller.poll(10 if remaining_ms >= 10.0 else math.ceil(remaining_ms))

    def _wait_reply(
        self, raw: bytes, mtype: MessageType, seq: int, start: float, timeout_s: float
    ) -> dict[str, Any]:
        """Take in other messages (command replies, late replies) until ``seq``'s reply."""
        dealer = self._dealer
        self._awaiting = seq
        self._reply = None
        try:
            while True:
                self._on_reply(raw)
                reply = self._reply
                if reply is not None:
                    return reply
                while True:
                    left_ms = (start + timeout_s - time.perf_counter()) * 1000.0
                    if left_ms >= _MAX_RCVTIMEO_MS:
                        remaining_ms = _MAX_RCVTIMEO_MS
                    else:
                        remaining_ms = math.ceil(left_ms)
                    if remaining_ms <= 0:
                        raise RequestTimeoutError(self._where(), mtype.value, timeout_s)
                    if remaining_ms != self._rcvtimeo_ms:
                        self._rcvtimeo_ms = remaining_ms
                        dealer.setsockopt(_RCVTIMEO, remaining_ms)
                    try:
                        raw = dealer.recv()
                        break
                    except zmq.Again:
                        if remaining_ms < _MAX_RCVTIMEO_MS:
                            raise RequestTimeoutError(
                                self._where(), mtype.value, timeout_s
                            ) from None
        finally:
            self._awaiting = -1
            self._reply = None

    def _on_reply(self, frame: bytes) -> None:
        try:
            obj = decode(frame, max_bytes=MAX_FRAME_BYTES)
            mtype, seq = check_header(obj)
        except ProtocolError:
            self._bad_messages += 1
            return
        if seq == self._awaiting:
            self._reply = obj
            return
        pending = self._pending_commands
        if seq in pending:
            link = pending.pop(seq)
            if mtype == MessageType.ERROR and link is not None:
                link._command_errors += 1
                link._last_error = _remote_error(obj, self._where())
            return
        claims = self._pending_claims
        if seq in claims:
            link = claims.pop(seq)
            if mtype == MessageType.ERROR and link is not None:
                link._command_errors += 1
                link._last_error = _remote_error(obj, self._where(), MessageType.CLAIM)
            return
        self._stale_replies += 1

    def _on_stream(self, frames: list[bytes]) -> bool:
        try:
            if len(frames) != 2:
                raise ProtocolError(ErrorCode.UNDECODABLE, "a state message is [topic, message]")
            topic, frame = frames
            obj = decode(frame, max_bytes=MAX_FRAME_BYTES)
            mtype, seq = check_header(obj)
            if mtype != MessageType.STATE:
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"{mtype!r} on the state stream")
            limb = obj.get("limb")
            if type(limb) is not str or limb.encode() != topic:
                raise ProtocolError(ErrorCode.BAD_FIELD, "limb does not match the topic")
            if self._limbs and limb not in self._limbs:
                return False
            sample = state_from_map(obj.get("state"), seq)
            self._take_base(obj.get("base"), seq)
        except ProtocolError:
            self._bad_messages += 1
            return False
        return self._accept(limb, sample)

    def _take_base(self, raw: object, seq: int) -> None:
        if raw is None or raw == self._base_raw:
            return
        self._base = base_from_map(raw, seq)
        self._base_raw = raw

    def _accept(self, limb: str, sample: StateSample) -> bool:
        """Keep a sample if it is newer; a new agent session (a restart) always wins."""
        current = self._samples.get(limb)
        if _is_news(current, sample):
            self._received_at[limb] = self._clock()
        if current is None or sample.seq > current.seq or sample.session != current.session:
            if current is not None and sample.session != current.session:
                self._restarts += 1
            self._samples[limb] = sample
            return True
        return False


def _is_news(current: StateSample | None, sample: StateSample) -> bool:
    """Whether ``sample`` is a state that really updates the limb (it refreshes staleness).

    A powered-off limb's state stops updating (protocol.md sec. 7): the first state saying
    ``POWER_OFF`` is news, the same limb's next ones are not, whether the agent stays quiet
    (real clock) or repeats the frozen state in every ``step`` reply (sim clock). So in both
    clocks the limb goes stale ``stale_after_s`` after the state that said why.
    """
    if current is None or sample.session != current.session:
        return True
    # On plain ints: & on the flags builds a new flag each time.
    return not (int(sample.state.health) & int(current.state.health) & _POWER_OFF)


def _reply_to(raw: bytes, seq: int) -> dict[str, Any] | None:
    """The decoded reply if ``raw`` is a well-formed reply to ``seq``, else None."""
    if len(raw) > MAX_FRAME_BYTES:
        return None
    try:
        obj = unpack(raw)
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
    if (
        type(obj) is dict
        and obj.get("seq") == seq
        and type(obj["seq"]) is int
        and obj.get("v") == PROTOCOL_VERSION
        and type(obj.get("type")) is str
    ):
        return obj
    return None


def _common_options(socket: _Socket) -> None:
    socket.linger = 0
    socket.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    socket.setsockopt(zmq.RECONNECT_IVL, 100)
    socket.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
    socket.setsockopt(zmq.HEARTBEAT_IVL, 1000)
    socket.setsockopt(zmq.HEARTBEAT_TIMEOUT, 3000)


def _pose_command(
    seq: int, limb: str | None, mode: CommandMode | str, fields: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The message of a plain ``ee_pose`` command, checked in a few steps, or None.

    Plain: the pose is 7 finite floats with a unit quaternion and ``ee`` is given, what
    skills send every tick. Anything else (None) is built and checked field by field by
    :func:`validate_request`, which names what is wrong.
    """
    if mode != _EE_POSE or len(fields) != 2:
        return None
    pose = fields.get("pose")
    ee = fields.get("ee")
    if type(ee) is not str or not isinstance(pose, list | tuple) or len(pose) != 7:
        return None
    x, y, z, qx, qy, qz, qw = pose
    if not (type(x) is type(y) is type(z) is type(qx) is type(qy) is type(qz) is type(qw) is float):
        return None
    norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    if not (math.isfinite(x + y + z) and abs(norm - 1.0) <= QUATERNION_TOLERANCE):
        return None
    message = {"v": PROTOCOL_VERSION, "type": _COMMAND, "seq": seq, "mode": _EE_POSE}
    if limb is not None:
        if type(limb) is not str:
            return None
        message["limb"] = limb
    message["ee"] = ee
    message["pose"] = (x, y, z, qx, qy, qz, qw)
    return message


def _plain_array(value: Any) -> Any:
    """A sequence or numpy array as a tuple (of floats when all are numbers); else as it is."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        value = tolist()
    if not isinstance(value, list | tuple):
        return value  # let validation name the wrong type
    if all(type(x) is float for x in value):  # the common case, without the ABC checks
        return tuple(value)
    if all(isinstance(x, Real) and not isinstance(x, bool) for x in value):
        return tuple(float(x) for x in value)
    return tuple(value)


def _remote_error(
    reply: Mapping[str, Any], endpoint: str, request: MessageType | None = None
) -> RemoteError:
    code = reply.get("code")
    message = reply.get("message")
    field = reply.get("field")
    code_text = code if type(code) is str else "unknown"
    message_text = message if type(message) is str else "(no message)"
    field_text = field if type(field) is str else None
    cls = LimbUnavailableError if code_text == ErrorCode.UNAVAILABLE else RemoteError
    return cls(
        code_text,
        message_text,
        endpoint=endpoint,
        field=field_text,
        request=None if request is None else request.value,
    )
