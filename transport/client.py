"""The limb client: the runner's side of one limb agent.

A :class:`LimbClient` holds the latest state of one limb without ever blocking: the runner
calls :meth:`LimbClient.poll` once per tick, reads :attr:`LimbClient.state` and
:attr:`LimbClient.is_stale`, and sends commands with :meth:`LimbClient.send_command`, which
drops (and counts) rather than waits. The request/reply helpers (:meth:`~LimbClient.describe`,
:meth:`~LimbClient.ping`, :meth:`~LimbClient.step`, ...) wait for their reply up to a timeout
and are meant for setup and for sim-clock lockstep.

Requests go through a DEALER socket and are matched to replies by ``seq``; a reply that comes
after its request timed out is discarded. ZeroMQ reconnects by itself when an agent comes back
(after a crash, on the same endpoint); commands are never queued for a disconnected agent.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Final, cast

import msgpack
import zmq

from limbtree.transport.clock import ClockMode
from limbtree.transport.driver import CommandMode, GripperAction, LimbDescription, LimbState
from limbtree.transport.endpoint import split_endpoint
from limbtree.transport.errors import (
    AgentUnreachableError,
    ConfigError,
    LimbUnavailableError,
    ProtocolError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
)
from limbtree.transport.schema import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    REPLY_TYPES,
    ErrorCode,
    MessageType,
    StateSample,
    check_header,
    decode,
    description_from_map,
    make_packer,
    packed_header,
    request,
    state_from_map,
    unpack,
    validate_request,
)
from limbtree.transport.security import load_client_keys, make_curve_client

_Socket = zmq.Socket[bytes]

MAX_PENDING_COMMANDS: Final = 4096
"""Most unanswered commands whose replies the client still waits for (older ones are forgotten)."""
_ARRAY_FIELDS: Final = frozenset({"q", "pose", "twist", "tau"})
_EXPECTED_REPLY: Final = {request: str(reply) for request, reply in REPLY_TYPES.items()}

_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_NOBLOCK: Final = int(zmq.NOBLOCK)


@dataclass(frozen=True)
class AgentDescription:
    """An agent's answer to ``describe``.

    Attributes:
        limb: what the limb is.
        clock: the agent's clock mode.
        stream_rate_hz: its state stream rate in the real clock [Hz].
        curve: whether it requires CURVE authentication.
        max_message_bytes: the largest request it accepts [bytes].
        errors_received: per error code, how many bad requests it has rejected.
        agent_time: its clock when it answered [s].
        state_seq: the sequence number of its latest state.
        session: the agent run's random id (it changes when the agent restarts).
    """

    limb: LimbDescription
    clock: ClockMode
    stream_rate_hz: float
    curve: bool
    max_message_bytes: int
    errors_received: Mapping[str, int]
    agent_time: float
    state_seq: int
    session: int


class LimbClient:
    """Talks to one limb agent.

    Args:
        endpoint: the agent's request endpoint ``tcp://HOST:N`` (the stream is on N+1).
        keys_dir: a keys folder with ``client.key_secret`` and ``agent.key`` to talk CURVE,
            or None for plain TCP.
        stale_after_s: the state is stale when no update came for this long [s].
        clock: time source for staleness [s], e.g. ``time.monotonic`` or ``SimClock.now``.
        context: a ZeroMQ context to share between many clients; by default the client
            makes (and terminates) its own.
        send_hwm: most outgoing messages queued per connection before sends are dropped.
        subscribe: whether to subscribe to the state stream (``ping_endpoint`` does not).

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
    ) -> None:
        host, port = split_endpoint(endpoint)
        if not stale_after_s > 0.0:
            raise ConfigError(f"stale_after_s must be > 0 s, not {stale_after_s}")
        self._endpoint = f"tcp://{host}:{port}"
        self._state_endpoint = f"tcp://{host}:{port + 1}"
        self._stale_after_s = float(stale_after_s)
        self._clock = clock
        curve = load_client_keys(keys_dir) if keys_dir is not None else None
        self._curve = curve is not None

        self._owns_context = context is None
        self._context: zmq.Context[_Socket] = zmq.Context() if context is None else context
        self._closed = False
        self._sub: _Socket | None = None
        try:
            dealer = self._context.socket(zmq.DEALER)
            self._dealer = dealer
            _common_options(dealer)
            dealer.setsockopt(zmq.IMMEDIATE, 1)
            dealer.sndhwm = send_hwm
            if curve is not None:
                make_curve_client(dealer, curve)
            dealer.connect(self._endpoint)
            if subscribe:
                sub = self._context.socket(zmq.SUB)
                self._sub = sub
                _common_options(sub)
                sub.setsockopt(zmq.CONFLATE, 1)
                if curve is not None:
                    make_curve_client(sub, curve)
                sub.setsockopt(zmq.SUBSCRIBE, b"")
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
        self._pending_commands: dict[int, str] = {}
        self._step_in_flight: tuple[int, float, float] | None = None

        self._sample: StateSample | None = None
        self._received_at: float | None = None

        self._commands_sent = 0
        self._last_command_seq = 0
        self._commands_dropped = 0
        self._command_errors = 0
        self._last_error: RemoteError | None = None
        self._stale_replies = 0
        self._bad_messages = 0
        self._restarts = 0

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
    def state(self) -> LimbState | None:
        """The latest state received, or None before the first one."""
        return None if self._sample is None else self._sample.state

    @property
    def sample(self) -> StateSample | None:
        """The latest state with its agent sequence number and agent time, or None."""
        return self._sample

    @property
    def received_at(self) -> float | None:
        """When (by the client's clock) the latest state arrived [s], or None."""
        return self._received_at

    @property
    def is_stale(self) -> bool:
        """True when no state has arrived for ``stale_after_s`` (or none ever has)."""
        received = self._received_at
        return received is None or self._clock() - received > self._stale_after_s

    @property
    def stale_after_s(self) -> float:
        """The staleness threshold [s]."""
        return self._stale_after_s

    @property
    def commands_sent(self) -> int:
        """How many commands went out."""
        return self._commands_sent

    @property
    def last_command_seq(self) -> int:
        """The ``seq`` of the latest command that went out (0 before any)."""
        return self._last_command_seq

    @property
    def commands_dropped(self) -> int:
        """How many commands were dropped: no connection to the agent, or the queue was full."""
        return self._commands_dropped

    @property
    def command_errors(self) -> int:
        """How many commands the agent refused (see :attr:`last_error`)."""
        return self._command_errors

    @property
    def last_error(self) -> RemoteError | None:
        """The latest error reply to a command sent with :meth:`send_command`, or None."""
        return self._last_error

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

    def clear_error(self) -> None:
        """Forget :attr:`last_error`."""
        self._last_error = None

    # ----------------------------------------------------------------------------------------
    # Non-blocking side

    def poll(self) -> bool:
        """Take in whatever has arrived, without blocking (call once per tick).

        Returns:
            True when a newer state arrived.
        """
        # Plain ints: pyzmq's flag enums cost microseconds per operation on this hot path.
        dealer = self._dealer
        while cast(int, dealer.getsockopt(_EVENTS)) & _POLLIN:
            self._on_reply(dealer.recv(_NOBLOCK))
        sub = self._sub
        new = False
        if sub is not None:
            while cast(int, sub.getsockopt(_EVENTS)) & _POLLIN:
                new = self._on_stream(sub.recv(_NOBLOCK)) or new
        return new

    def send_command(self, mode: CommandMode | str, **fields: Any) -> bool:
        """Send a command without waiting.

        Arrays (``q``, ``pose``, ``twist``, ``tau``) may be any sequence of numbers, numpy
        arrays included. The agent's reply is taken in by :meth:`poll`; a refusal shows in
        :attr:`last_error` and :attr:`command_errors`.

        Args:
            mode: the command mode.
            **fields: the mode's fields (see :class:`CommandMode`).

        Returns:
            True when it went out; False when it was dropped (no connection to the agent, or
            its queue is full), counted in :attr:`commands_dropped`.

        Raises:
            ProtocolError: when the command itself is malformed (a bug in the caller).
        """
        message: dict[str, Any] = {"mode": str(mode)}
        for name, value in fields.items():
            message[name] = _plain_array(value) if name in _ARRAY_FIELDS else value
        seq = self._next_seq()
        msg = request(MessageType.COMMAND, seq, **message)
        validate_request(msg)
        return self._send_async(msg, seq, message["mode"])

    def send_gripper(self, action: GripperAction | str) -> bool:
        """Ask for the gripper to open or close, without waiting.

        Args:
            action: ``"open"`` or ``"close"``.

        Returns:
            True when it went out; False when it was dropped.

        Raises:
            ProtocolError: for an unknown action.
        """
        seq = self._next_seq()
        msg = request(MessageType.GRIPPER, seq, action=str(action))
        validate_request(msg)
        return self._send_async(msg, seq, MessageType.GRIPPER.value)

    # ----------------------------------------------------------------------------------------
    # Request/reply helpers (blocking up to a timeout)

    def describe(self, timeout_s: float = 1.0) -> AgentDescription:
        """Ask the agent what it serves.

        Args:
            timeout_s: how long to wait for the reply [s].

        Returns:
            The description.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent answered with an error.
            ProtocolError: when the reply is malformed.
        """
        reply = self._call(MessageType.DESCRIBE, timeout_s, {})
        seq: int = reply["seq"]
        errors = reply.get("errors_received")
        if type(errors) is not dict or any(type(n) is not int for n in errors.values()):
            raise ProtocolError(
                ErrorCode.BAD_FIELD, "errors_received must be a map of ints", seq=seq
            )
        try:
            clock = ClockMode(str(reply.get("clock")))
            return AgentDescription(
                limb=description_from_map(reply, seq),
                clock=clock,
                stream_rate_hz=float(reply["stream_rate_hz"]),
                curve=bool(reply["curve"]),
                max_message_bytes=int(reply["max_message_bytes"]),
                errors_received=errors,
                agent_time=float(reply["agent_time"]),
                state_seq=int(reply["state_seq"]),
                session=int(reply["session"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(
                ErrorCode.BAD_FIELD, f"malformed describe_reply: {exc!r}", seq=seq
            ) from None

    def ping(self, timeout_s: float = 1.0) -> float:
        """Measure the round trip to the agent.

        Args:
            timeout_s: how long to wait for the reply [s].

        Returns:
            The round-trip time [s], measured with ``time.perf_counter``.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent answered with an error.
        """
        start = time.perf_counter()
        self._call(MessageType.PING, timeout_s, {})
        return time.perf_counter() - start

    def step(self, t: float, timeout_s: float = 1.0) -> LimbState:
        """Advance a sim-clock agent to time ``t`` and return its state (lockstep).

        Args:
            t: the time to step to [s]; never earlier than the previous step.
            timeout_s: how long to wait for the reply [s].

        Returns:
            The limb state at ``t`` (also kept as :attr:`state`).

        Raises:
            RequestTimeoutError: when no reply came in time.
            LimbUnavailableError: when the limb is disassembled.
            RemoteError: for other refusals (``wrong_clock``, ``bad_value``, ...).
        """
        self.send_step(t, timeout_s)
        return self.finish_step()

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Send ``step(t)`` without waiting for the reply; :meth:`finish_step` collects it.

        Lets a runner step many agents at once: send to all, then collect from all (see
        :func:`step_all`).

        Args:
            t: the time to step to [s].
            timeout_s: the time allowed from now until the reply is in [s].

        Raises:
            TransportError: when a step is already in flight on this client.
            RequestTimeoutError: when no connection came up in time.
        """
        if self._step_in_flight is not None:
            raise TransportError(f"{self._endpoint}: a step is already in flight")
        seq = self._next_seq()
        frame = self._step_prefix + self._packb(seq) + self._t_key + self._packb(float(t))
        start = self._begin(MessageType.STEP, frame, timeout_s)
        self._step_in_flight = (seq, start, timeout_s)

    def finish_step(self) -> LimbState:
        """Wait for the reply to the step sent with :meth:`send_step` and return the state.

        Raises:
            TransportError: when no step is in flight.
            RequestTimeoutError: when the reply did not come in time.
            LimbUnavailableError: when the limb is disassembled.
            RemoteError: for other refusals.
        """
        in_flight = self._step_in_flight
        if in_flight is None:
            raise TransportError(f"{self._endpoint}: no step in flight")
        self._step_in_flight = None
        seq, start, timeout_s = in_flight
        reply = self._finish(MessageType.STEP, seq, start, timeout_s)
        sample = state_from_map(reply.get("state"), seq)
        self._accept(sample)
        return sample.state

    def fault(self, kind: str, timeout_s: float = 1.0, **params: Any) -> None:
        """Inject a fault into a simulated limb.

        Args:
            kind: the fault kind (see :class:`~limbtree.transport.schema.FaultKind`).
            timeout_s: how long to wait for the reply [s].
            **params: the fault's parameters (the driver documents them).

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``not_simulated``, ``unknown_fault``, ``bad_value``, ...
        """
        self._call(MessageType.FAULT, timeout_s, {"kind": str(kind), "params": params})

    def gripper(self, action: GripperAction | str, timeout_s: float = 1.0) -> None:
        """Open or close the gripper and wait for the agent to accept it.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``unsupported_mode`` when the limb has no gripper.
        """
        self._call(MessageType.GRIPPER, timeout_s, {"action": str(action)})

    def command(self, mode: CommandMode | str, timeout_s: float = 1.0, **fields: Any) -> None:
        """Send a command and wait for the agent to accept it (setup and tests).

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent refused it (``ik_failed``, ``bad_value``, ...).
        """
        message: dict[str, Any] = {"mode": str(mode)}
        for name, value in fields.items():
            message[name] = _plain_array(value) if name in _ARRAY_FIELDS else value
        self._call(MessageType.COMMAND, timeout_s, message)

    def shutdown(self, timeout_s: float = 1.0) -> None:
        """Ask the agent process to stop serving.

        Raises:
            RequestTimeoutError: when no reply came in time.
        """
        self._call(MessageType.SHUTDOWN, timeout_s, {})

    # ----------------------------------------------------------------------------------------
    # Life cycle

    def close(self) -> None:
        """Close the sockets (and the context, when the client made it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for socket in (getattr(self, "_dealer", None), self._sub):
            if socket is not None:
                socket.close(linger=0)
        if self._owns_context:
            self._context.term()

    def __enter__(self) -> LimbClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Internals

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _send(self, frame: bytes) -> bool:
        try:
            self._dealer.send(frame, _NOBLOCK)
        except zmq.Again:
            return False
        return True

    def _send_async(self, msg: dict[str, Any], seq: int, what: str) -> bool:
        if self._closed:
            raise TransportError(f"{self._endpoint}: this client is closed")
        if not self._send(self._packb(msg)):
            self._commands_dropped += 1
            return False
        self._commands_sent += 1
        self._last_command_seq = seq
        pending = self._pending_commands
        pending[seq] = what
        if len(pending) > MAX_PENDING_COMMANDS:
            del pending[next(iter(pending))]
        return True

    def _call(self, mtype: MessageType, timeout_s: float, fields: dict[str, Any]) -> dict[str, Any]:
        seq = self._next_seq()
        msg = request(mtype, seq, **fields)
        validate_request(msg)
        return self._exchange(mtype, seq, self._packb(msg), timeout_s)

    def _exchange(
        self, mtype: MessageType, seq: int, frame: bytes, timeout_s: float
    ) -> dict[str, Any]:
        start = self._begin(mtype, frame, timeout_s)
        return self._finish(mtype, seq, start, timeout_s)

    def _begin(self, mtype: MessageType, frame: bytes, timeout_s: float) -> float:
        """Send a request (waiting up to ``timeout_s`` for a connection); returns the start."""
        if self._closed:
            raise TransportError(f"{self._endpoint}: this client is closed")
        start = time.perf_counter()
        if not self._send(frame):
            self._send_when_connected(frame, mtype, start, timeout_s)
        return start

    def _finish(
        self, mtype: MessageType, seq: int, start: float, timeout_s: float
    ) -> dict[str, Any]:
        """Wait for the reply to ``seq`` until ``start + timeout_s``; raise error replies."""
        dealer = self._dealer
        timeout_ms = max(1, math.ceil((start + timeout_s - time.perf_counter()) * 1000.0))
        if timeout_ms != self._rcvtimeo_ms:
            dealer.rcvtimeo = self._rcvtimeo_ms = timeout_ms
        try:
            raw = dealer.recv()
        except zmq.Again:
            raise RequestTimeoutError(self._endpoint, mtype.value, timeout_s) from None
        # Fast path: the next message is the reply (the usual case in lockstep).
        reply = _reply_to(raw, seq)
        if reply is None:
            reply = self._wait_reply(raw, mtype, seq, start, timeout_s)
        rtype = reply["type"]
        if rtype == _EXPECTED_REPLY[mtype]:
            return reply
        if rtype == MessageType.ERROR:
            raise _remote_error(reply, self._endpoint)
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"{self._endpoint} answered {mtype.value} with {rtype!r}, "
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
                raise RequestTimeoutError(self._endpoint, mtype.value, timeout_s)
            self._out_poller.poll(min(math.ceil(remaining_ms), 10))

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
                remaining_ms = math.ceil((start + timeout_s - time.perf_counter()) * 1000.0)
                if remaining_ms <= 0:
                    raise RequestTimeoutError(self._endpoint, mtype.value, timeout_s)
                if remaining_ms != self._rcvtimeo_ms:
                    dealer.rcvtimeo = self._rcvtimeo_ms = remaining_ms
                try:
                    raw = dealer.recv()
                except zmq.Again:
                    raise RequestTimeoutError(self._endpoint, mtype.value, timeout_s) from None
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
        if self._pending_commands.pop(seq, None) is not None:
            if mtype == MessageType.ERROR:
                self._command_errors += 1
                self._last_error = _remote_error(obj, self._endpoint)
            return
        self._stale_replies += 1

    def _on_stream(self, frame: bytes) -> bool:
        try:
            obj = decode(frame, max_bytes=MAX_FRAME_BYTES)
            mtype, seq = check_header(obj)
            if mtype != MessageType.STATE:
                raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"{mtype!r} on the state stream")
            sample = state_from_map(obj.get("state"), seq)
        except ProtocolError:
            self._bad_messages += 1
            return False
        return self._accept(sample)

    def _accept(self, sample: StateSample) -> bool:
        """Keep a sample if it is newer; a new agent session (a restart) always wins."""
        self._received_at = self._clock()
        current = self._sample
        if current is None or sample.seq > current.seq or sample.session != current.session:
            if current is not None and sample.session != current.session:
                self._restarts += 1
            self._sample = sample
            return True
        return False


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


def _remote_error(reply: Mapping[str, Any], endpoint: str) -> RemoteError:
    code = reply.get("code")
    message = reply.get("message")
    field = reply.get("field")
    code_text = code if type(code) is str else "unknown"
    message_text = message if type(message) is str else "(no message)"
    field_text = field if type(field) is str else None
    cls = LimbUnavailableError if code_text == ErrorCode.UNAVAILABLE else RemoteError
    return cls(code_text, message_text, endpoint=endpoint, field=field_text)


def step_all(clients: Sequence[LimbClient], t: float, timeout_s: float = 1.0) -> list[LimbState]:
    """Step several sim-clock agents to ``t`` in parallel (send to all, then collect).

    Args:
        clients: one client per agent.
        t: the time to step to [s].
        timeout_s: the time allowed for each reply, from when its step was sent [s].

    Returns:
        The states, in the order of ``clients``.

    Raises:
        RequestTimeoutError: when an agent did not answer in time (the other steps are
            still collected, so every client is ready for the next step).
        RemoteError: when an agent refused; the first failure is raised after all replies
            were collected.
    """
    failure: TransportError | None = None
    sent: list[LimbClient] = []
    for client in clients:
        try:
            client.send_step(t, timeout_s)
        except TransportError as exc:
            failure = failure or exc
        else:
            sent.append(client)
    states: list[LimbState] = []
    for client in sent:
        try:
            states.append(client.finish_step())
        except TransportError as exc:
            failure = failure or exc
    if failure is not None:
        raise failure
    return states


def ping_endpoint(
    endpoint: str,
    timeout_s: float = 3.0,
    keys_dir: str | os.PathLike[str] | None = None,
) -> tuple[float, AgentDescription]:
    """Ping an agent and ask what it serves (``limbtree ping ENDPOINT``).

    Args:
        endpoint: ``tcp://HOST:N``.
        timeout_s: how long to wait in all [s].
        keys_dir: a keys folder, for agents that require CURVE.

    Returns:
        ``(round-trip time [s], description)``.

    Raises:
        AgentUnreachableError: when nobody answered within ``timeout_s``.
        RemoteError: when the agent answered with an error (e.g. its limb is disassembled).
        ConfigError: for a malformed endpoint.
        KeysError: when ``keys_dir`` lacks the client's keys.
    """
    start = time.perf_counter()
    with LimbClient(endpoint, keys_dir=keys_dir, subscribe=False) as client:
        try:
            client.ping(timeout_s)
            rtt = client.ping(max(timeout_s - (time.perf_counter() - start), 0.1))
            description = client.describe(max(timeout_s - (time.perf_counter() - start), 0.1))
        except RequestTimeoutError:
            raise AgentUnreachableError(
                client.endpoint, timeout_s, curve=keys_dir is not None
            ) from None
    return rtt, description
