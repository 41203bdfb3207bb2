"""The plant agent: serves one :class:`~limbtree.transport.plant.Plant` over ZeroMQ (wire v2).

An agent serves all the limbs of one plant (a lone limb, a quadruped's four legs). It binds
a ROUTER socket on ``tcp://HOST:N`` for requests and a PUB socket on ``tcp://HOST:N+1`` for
its state stream, and serves both from one loop (``zmq.Poller``) in one
thread. ``docs/protocol.md`` describes the wire.

- ``real`` clock: the agent calls ``plant.advance`` with its own time (from the injected time
  source, seconds since :meth:`PlantAgent.run` started) and publishes each limb's state at
  ``stream_rate_hz``, one ZeroMQ topic per limb (the limb's name).
- ``sim`` clock: the plant moves only on ``step(t)`` requests; the reply carries every limb's
  state and the base state, which are also published.

A malformed request gets an ``error`` reply, is counted (``errors_received`` in the
``describe`` reply, :attr:`Health.BAD_INPUT` in the state) and the agent goes on serving.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final, cast

import msgpack
import zmq
from zmq.auth.thread import ThreadAuthenticator

from limbtree.transport.clock import ClockMode
from limbtree.transport.deadline import DeadlinePlant
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    Health,
    LimbDescription,
    LimbDriver,
    LimbState,
)
from limbtree.transport.endpoint import (
    IpcHold,
    agent_endpoints,
    hold_ipc_path,
    ipc_in_use,
    wants_ipv6,
)
from limbtree.transport.errors import ConfigError, ProtocolError, TransportError
from limbtree.transport.exposure import OWNER_ONLY, ShutdownPolicy, check_exposure
from limbtree.transport.faults import FaultKind
from limbtree.transport.orphan import watch_parent
from limbtree.transport.outage import OutageLog
from limbtree.transport.plant import BaseState, DriverPlant, Plant
from limbtree.transport.schema import (
    BASE_KEY,
    COMMAND_ERRORS_KEY,
    COMMANDER_LEASE_MAX_S,
    COMMANDER_LEASE_S,
    COMMANDS_FIELD,
    COUNTED_ERRORS,
    LIMB_KEY,
    LIMBS_KEY,
    MAX_ENVELOPE_FRAMES,
    MAX_FRAME_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_STEP_SPAN_S,
    PROTOCOL_VERSION,
    STATE_KEY,
    SUPPORTED_VERSIONS,
    T_KEY,
    UNAVAILABLE_KEY,
    ErrorCode,
    MessageType,
    Request,
    base_to_map,
    error_reply,
    make_packer,
    packed_header,
    parse_request,
    plant_description_to_map,
    state_to_map,
)
from limbtree.transport.security import (
    authorized_key_count,
    load_agent_keys,
    make_curve_server,
    start_authenticator,
)

_log = logging.getLogger(__name__)

STOP_CHECK_S: Final = 0.02
"""Longest the loop sleeps before it looks at the stop flag again [s]."""
SHUTDOWN_GRACE_S: Final = 0.25
"""How long an agent goes on serving after a ``shutdown`` request [s].

Closing at once could make a client lose the ``shutdown_reply``: a ZeroMQ client that queues
nothing for absent peers (``ZMQ_IMMEDIATE``) drops unread messages when the connection closes.
"""
SHUTDOWN_LINGER_S: Final = 1.0
"""Longest the agent then waits for unsent replies to leave before it closes [s]."""
SLOW_LOG_S: Final = 10.0
"""Least agent time between two logs of plant updates slower than the stream period [s]."""
MAX_BATCH: Final = 256
"""Most requests handled in one go before the real-clock loop checks its stream deadline."""
WATCHER_JOIN_S: Final = 1.0
"""How long a stopped agent waits for its parent's watcher to end [s] (it ends at once)."""
# Plain ints: pyzmq's flag enums cost microseconds per operation on the request path.
_SNDMORE: Final = int(zmq.SNDMORE | zmq.NOBLOCK)
_NOBLOCK: Final = int(zmq.NOBLOCK)
_EVENTS: Final = int(zmq.EVENTS)
_POLLIN: Final = int(zmq.POLLIN)
_RCVMORE: Final = int(zmq.RCVMORE)
_POWER_OFF: Final = int(Health.POWER_OFF)

_Socket = zmq.Socket[bytes]


@dataclass
class _Limb:
    """What the agent knows of one limb of its plant, computed once."""

    name: str
    description: LimbDescription
    topic: bytes = b""
    packed_name: bytes = b""
    modes: frozenset[CommandMode] = frozenset()
    modes_text: str = ""
    n_joints: int = 0
    ees: frozenset[str] = frozenset()
    default_ee: str = ""
    published_power_off: bool = False

    def __post_init__(self) -> None:
        desc = self.description
        self.topic = self.name.encode()
        self.packed_name = msgpack.packb(self.name)
        self.modes = frozenset(desc.command_modes)
        self.modes_text = ", ".join(m.value for m in desc.command_modes) or "none"
        self.n_joints = len(desc.joints)
        self.ees = frozenset(desc.end_effectors)
        self.default_ee = desc.end_effectors[0] if desc.end_effectors else ""


class PlantAgent:
    """Serves one plant (all its limbs) on a request port and a state-stream port.

    Args:
        plant: what moves; the agent calls it from its loop thread only, and closes it when
            the agent closes. A bare :class:`~limbtree.transport.driver.LimbDriver` is served
            as a one-limb plant whose limb is named after its robot.
        bind: ``tcp://HOST:N``; requests on port N, state stream on N+1 (both must be free).
        clock: ``"real"`` (free-running, streaming) or ``"sim"`` (lockstep ``step`` requests).
        stream_rate_hz: state stream rate in the real clock [Hz]; above about 1000 Hz the loop
            polls without sleeping.
        keys_dir: a keys folder (see :mod:`limbtree.transport.security`) to require CURVE
            authentication, or None for plain TCP.
        time_source: the real clock's time source [s]; the agent reads no other clock.
        publish_on_step: whether ``step`` replies are also published on the stream.
        insecure: allow binding a non-loopback address without ``keys_dir`` (a warning is
            logged); without it such a bind raises ``ConfigError``.
        shutdown: who may stop the agent with a ``shutdown`` request (default: nobody; see
            :mod:`limbtree.transport.exposure`).
        name: a label for its log lines (the mission's name of the robot or limb), or None.
        context: a ZeroMQ context to share with other agents of one process (an
            :class:`~limbtree.transport.host.AgentHost`), which its owner terminates; None:
            the agent makes its own and terminates it when it closes.

    Raises:
        ConfigError: for a malformed endpoint, a bad clock or rate, a port in use, or a
            non-loopback bind without keys and without ``insecure``.
        KeysError: when ``keys_dir`` lacks the agent's keys.
    """

    def __init__(
        self,
        plant: Plant | LimbDriver,
        bind: str = "tcp://127.0.0.1:5555",
        clock: ClockMode | str = ClockMode.REAL,
        stream_rate_hz: float = 100.0,
        keys_dir: str | os.PathLike[str] | None = None,
        *,
        time_source: Callable[[], float] = time.monotonic,
        publish_on_step: bool = True,
        insecure: bool = False,
        shutdown: ShutdownPolicy = OWNER_ONLY,
        name: str | None = None,
        context: zmq.Context[_Socket] | None = None,
    ) -> None:
        try:
            self._clock = ClockMode(clock)
        except ValueError:
            raise ConfigError(
                f"clock {clock!r} is not one of {', '.join(m.value for m in ClockMode)}"
            ) from None
        if not (math.isfinite(stream_rate_hz) and stream_rate_hz > 0.0):
            raise ConfigError(f"stream_rate_hz must be a finite rate > 0 Hz, not {stream_rate_hz}")
        if context is not None and keys_dir is not None:
            raise ConfigError(
                "an agent that requires CURVE keys needs its own ZeroMQ context (its "
                "authenticator serves the whole context): serve it in its own process"
            )
        self._request_endpoint, self._state_endpoint = agent_endpoints(bind)
        # ZeroMQ would replace the socket file of a live ipc agent (which would go on,
        # unreachable): hold both paths (against an agent starting in the same instant),
        # then check that nobody listens on either before binding either.
        self._holds: list[IpcHold] = []
        try:
            for endpoint in (self._request_endpoint, self._state_endpoint):
                hold = hold_ipc_path(endpoint)
                if hold is not None:
                    self._holds.append(hold)
                in_use = ipc_in_use(endpoint)
                if in_use is not None:
                    raise ConfigError(f"cannot bind {endpoint}: {in_use}")
        except BaseException:
            self._release_holds()
            raise
        exposed = check_exposure(bind, curve=keys_dir is not None, insecure=insecure)
        if exposed is not None:
            _log.warning(exposed)
        self._shutdown_policy = shutdown
        self._name = name
        if isinstance(plant, LimbDriver):
            plant = DriverPlant(plant, plant.describe().robot)
        self._plant = DeadlinePlant(plant)
        self._real = self._clock is ClockMode.REAL
        self._description = plant.describe()
        self._stream_rate_hz = float(stream_rate_hz)
        self._time = time_source
        self._publish_on_step = publish_on_step

        # Limb facts used to check commands, computed once.
        self._limbs = {
            limb.name: _Limb(limb.name, limb.description) for limb in self._description.limbs
        }
        self._only = next(iter(self._limbs.values())) if len(self._limbs) == 1 else None
        self._limb_names_text = ", ".join(self._limbs)
        self._description_map = plant_description_to_map(self._description)

        # Run state.
        self._start: float | None = None
        self._sim_time = 0.0
        self._last_step_t: float | None = None
        self._state_seq = 0
        self._session = int.from_bytes(os.urandom(4), "little")
        self._errors: dict[str, int] = {}
        #: A fault request came since the last step (the next step reads the limbs again).
        self._faulted = False
        #: Each limb's commander: the routing id of the client that last commanded it, when
        #: [s, time_source], and its lease [s]; another client's commands are refused within
        #: the lease.
        self._commanders: dict[str, tuple[bytes, float, float]] = {}
        # The client that steps this sim-clock agent, and when it last stepped [s].
        self._stepper: tuple[bytes, float] | None = None
        #: The routing id of the client whose request is being answered.
        self._peer = b""
        self._extra_health = 0
        #: The real clock's failing plant updates (:meth:`_tick`), logged once per outage.
        self._outages = OutageLog(
            _log,
            f"plant agent {name}" if name else "plant agent",
            "its state is not published and commands are refused until they succeed",
            "commands are taken again",
        )
        #: Requests that raise inside the agent (a driver's command() that raises), logged
        #: by outage: the first traceback, then a summary every 5 s while they go on failing.
        self._request_failures = OutageLog(
            _log,
            f"plant agent {name}" if name else "plant agent",
            "each is answered with an internal error",
            "they are answered again",
        )
        #: Updates slower than the stream period (real clock), logged at most every 10 s.
        self._slow = _SlowUpdates(
            f"plant agent {name}" if name else "plant agent", self._stream_rate_hz
        )
        self._stop_requested = False
        self._shutdown = False
        self._shutdown_deadline: float | None = None
        self._closing = False
        self._closed = False
        self._thread: threading.Thread | None = None

        # Pre-packed reply headers.
        self._packer = make_packer()
        self._packb: Callable[[object], bytes] = self._packer.pack
        self._stream_prefix = packed_header(MessageType.STATE, 6)
        self._step_prefix = packed_header(MessageType.STEP_REPLY, 7)
        self._step_prefix_errors = packed_header(MessageType.STEP_REPLY, 8)
        self._no_unavailable = UNAVAILABLE_KEY + self._packb([])
        self._base_state: BaseState | None = None
        self._base_bytes = b""
        self._ack_prefix = {
            mtype: packed_header(MessageType(f"{mtype}_reply"), 3)
            for mtype in (
                MessageType.COMMAND,
                MessageType.FAULT,
                MessageType.GRIPPER,
                MessageType.SHUTDOWN,
            )
        }
        self._handlers: dict[MessageType, Callable[[Request], bytes | None]] = {
            MessageType.DESCRIBE: self._on_describe,
            MessageType.PING: self._on_ping,
            MessageType.COMMAND: self._on_command,
            MessageType.STEP: self._on_step,
            MessageType.FAULT: self._on_fault,
            MessageType.GRIPPER: self._on_gripper,
            MessageType.SHUTDOWN: self._on_shutdown,
            MessageType.RELEASE: self._on_release,
            MessageType.CLAIM: self._on_claim,
        }

        # Sockets, in the agent's own context unless it was given one.
        self._own_context = context is None
        self._context: zmq.Context[_Socket] = zmq.Context() if context is None else context
        self._auth: ThreadAuthenticator | None = None
        self._authorized_keys = 0
        try:
            curve = None
            if keys_dir is not None:
                curve, authorized = load_agent_keys(keys_dir)
                self._authorized_keys = authorized_key_count(authorized)
                self._auth = start_authenticator(self._context, authorized)
            self._router = self._make_socket(zmq.ROUTER, curve)
            # A client reconnecting with its routing id (AgentClient sets one) keeps it: its
            # commander lease goes on across a dropped connection.
            self._router.setsockopt(zmq.ROUTER_HANDOVER, 1)
            self._pub = self._make_socket(zmq.PUB, curve)
            self._pub.sndhwm = 1000
            self._bind(self._router, self._request_endpoint)
            self._bind(self._pub, self._state_endpoint)
        except BaseException:
            self._close_sockets()
            self._release_holds()
            raise
        self._curve = curve is not None
        self._poller = zmq.Poller()
        self._poller.register(self._router, zmq.POLLIN)

    # ----------------------------------------------------------------------------------------
    # Properties

    @property
    def request_endpoint(self) -> str:
        """The endpoint requests are served on (``tcp://HOST:N``)."""
        return self._request_endpoint

    @property
    def state_endpoint(self) -> str:
        """The endpoint the state stream is published on (``tcp://HOST:N+1``)."""
        return self._state_endpoint

    @property
    def clock(self) -> ClockMode:
        """The agent's clock mode."""
        return self._clock

    @property
    def curve(self) -> bool:
        """Whether CURVE authentication is required."""
        return self._curve

    @property
    def plant(self) -> Plant:
        """The plant served (without the command deadlines the agent adds around it)."""
        return self._plant.inner

    @property
    def errors_received(self) -> dict[str, int]:
        """A copy of the per-code counts of requests the agent rejected."""
        return dict(self._errors)

    @property
    def closed(self) -> bool:
        """Whether the agent has closed its sockets (after :meth:`run` returned)."""
        return self._closed

    def summary(self) -> str:
        """One line saying what this agent serves."""
        desc = self._description
        if self._clock is ClockMode.REAL:
            clock = f"clock real, state at {self._stream_rate_hz:g} Hz"
        else:
            clock = "clock sim (lockstep step requests)"
        curve = (
            f"CURVE on ({self._authorized_keys} authorised client "
            f"key{'' if self._authorized_keys == 1 else 's'})"
            if self._curve
            else "CURVE off"
        )
        limbs = ", ".join(f"{n} ({limb.n_joints} joints)" for n, limb in self._limbs.items())
        label = f"plant agent {self._name}" if self._name else "plant agent"
        return (
            f"{label}: robot {desc.robot!r} ({desc.kind} plant, limbs {limbs}), "
            f"requests on {self._request_endpoint}, state on {self._state_endpoint}, "
            f"{clock}, {curve}"
        )

    # ----------------------------------------------------------------------------------------
    # Life cycle

    def run(self) -> None:
        """Serve until :meth:`stop` or a ``shutdown`` request, then close everything.

        Raises:
            TransportError: when the agent was already closed.
        """
        if self._closing:
            raise TransportError("this agent is closed; make a new one")
        _log.info(self.summary())
        self._start = self._time()
        try:
            if self._clock is ClockMode.REAL:
                self._run_real()
            else:
                self._run_sim()
        finally:
            self.close()

    def begin_hosted(self) -> None:
        """Start serving from another loop instead of :meth:`run`.

        The loop (an :class:`~limbtree.transport.host.AgentHost`'s) polls
        :attr:`request_socket`, calls :meth:`serve_waiting`, and closes the agent when
        :attr:`done`.

        Raises:
            TransportError: when the agent was already closed.
            ConfigError: for a real-clock agent (its loop keeps its own time).
        """
        if self._closing:
            raise TransportError("this agent is closed; make a new one")
        if self._real:
            raise ConfigError("only a sim-clock agent can be served from a shared loop")
        _log.info(self.summary())
        self._start = self._time()

    @property
    def request_socket(self) -> _Socket:
        """The ROUTER socket requests arrive on (for a host's poller)."""
        return self._router

    @property
    def done(self) -> bool:
        """Whether the agent has been asked to stop, or its ``shutdown`` grace is over."""
        if self._shutdown_deadline is not None:
            self._check_shutdown()
        return self._stop_requested or self._shutdown

    def serve_waiting(self) -> None:
        """Answer the requests waiting on the request socket, without blocking."""
        self._drain_until(math.inf)

    def start_in_thread(self) -> threading.Thread:
        """Run :meth:`run` in a daemon thread (for tests and embedding).

        Returns:
            The started thread.
        """
        thread = threading.Thread(
            target=self.run, name=f"plant-agent {self._request_endpoint}", daemon=True
        )
        self._thread = thread
        thread.start()
        return thread

    def request_stop(self) -> None:
        """Ask the loop to stop soon (safe from signal handlers and other threads)."""
        self._stop_requested = True

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the loop, wait for it [up to ``timeout_s`` s], and close.

        Args:
            timeout_s: how long to wait for the loop thread [s].
        """
        self._stop_requested = True
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
        elif thread is None:
            self.close()

    def close(self) -> None:
        """Close the sockets, the authenticator, the context and the plant (idempotent).

        Call from the loop's thread, or after the loop has ended.
        """
        if self._closing:
            return
        self._closing = True
        self._close_sockets()
        self._release_holds()
        try:
            self._plant.close()
        except Exception:
            _log.exception("plant.close() failed")
        self._closed = True

    def __enter__(self) -> PlantAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------------------------------
    # Loops

    def _run_sim(self) -> None:
        # Lockstep latency matters most here, and there is nothing to do between requests:
        # a blocking receive with a timeout (to see the stop flag) is the cheapest wait.
        router = self._router
        router.rcvtimeo = round(STOP_CHECK_S * 1000.0)
        recv = router.recv
        serve = self._serve
        while not (self._stop_requested or self._shutdown):
            try:
                identity = recv()
            except zmq.Again:
                self._check_shutdown()
                continue
            serve(identity)
            if self._shutdown_deadline is not None:
                self._check_shutdown()

    def _run_real(self) -> None:
        poll = self._poller.poll
        clock = self._time
        start = self._start if self._start is not None else clock()
        period = 1.0 / self._stream_rate_hz
        cap_ms = round(STOP_CHECK_S * 1000.0)
        next_tick = 0.0
        tick_s = 0.0  # how long the last update took [s]
        while not (self._stop_requested or self._shutdown):
            wait_s = next_tick - (clock() - start)
            timeout_ms = 0 if wait_s <= 0.0 else min(math.ceil(wait_s * 1000.0), cap_ms)
            if poll(timeout_ms):
                # Behind (an update slower than the period), requests still get as long as
                # an update takes: with the tick's deadline alone, long past, one request
                # was served per update and the queue of commands grew without end.
                deadline = start + next_tick
                self._drain_until(max(deadline, clock() + tick_s))
            if self._shutdown_deadline is not None:
                self._check_shutdown()
            now = clock() - start
            if now >= next_tick:
                self._tick(now)
                tick_s = clock() - start - now
                if tick_s > period:
                    self._slow.late(now, tick_s)
                next_tick += period
                if next_tick <= now:  # fell behind: skip ticks rather than burst
                    next_tick = now + period

    def _check_shutdown(self) -> None:
        deadline = self._shutdown_deadline
        if deadline is not None and self._time() >= deadline:
            self._shutdown = True

    def _tick(self, now: float) -> None:
        plant = self._plant
        try:
            plant.advance(now)
            states = [
                (limb, plant.limb_state(name))
                for name, limb in self._limbs.items()
                if plant.available(name)
            ]
            base = self._pack_base()
        except Exception as exc:
            self._outages.failed(now, "its plant's updates", exc)
            return
        self._outages.succeeded(now)
        self._state_seq += 1
        for limb, state in states:
            self._stream(limb, state, now, base)

    def _check_plant(self) -> None:
        """Refuse a command while the plant's updates fail (real clock).

        Raises:
            DriverError: ``internal``, saying since when and why.
        """
        outage = self._outages.outage
        if outage is not None:
            raise DriverError(
                ErrorCode.INTERNAL,
                f"the plant fails to update since t={outage.since_s:.2f} s ({outage.error}; "
                f"{outage.failed_ticks} failed ticks); commands are refused until it updates "
                "again",
            )

    def _pack_base(self) -> bytes:
        """The packed base state, re-packed only when it changed (a fixed base: never)."""
        if self._base_state is not None and not self._description.floating_base:
            return self._base_bytes
        base = self._plant.base_state()
        if base != self._base_state:
            self._base_state = base
            self._base_bytes = self._packb(base_to_map(base))
        return self._base_bytes

    def _stream(self, limb: _Limb, state: LimbState, agent_time: float, base: bytes) -> bytes:
        """Encode and publish one limb's state (topic: the limb's name); returns the state map.

        While the limb reports power off, the stream publishes that state once and then stays
        quiet about it, so clients see the reason and then mark the limb stale.
        """
        powered_off = int(state.health) & _POWER_OFF
        body = self._pack_state(state, agent_time)
        if powered_off:
            if limb.published_power_off:
                return body
            limb.published_power_off = True
        else:
            limb.published_power_off = False
        message = (
            self._stream_prefix
            + self._packb(self._state_seq)
            + LIMB_KEY
            + limb.packed_name
            + BASE_KEY
            + base
            + STATE_KEY
            + body
        )
        try:
            self._pub.send(limb.topic, _SNDMORE)
            self._pub.send(message, _NOBLOCK)
        except zmq.Again:  # PUB drops rather than blocks; this is only a safety net
            pass
        return body

    def _pack_state(self, state: LimbState, agent_time: float) -> bytes:
        smap = state_to_map(
            state,
            seq=self._state_seq,
            agent_time=agent_time,
            session=self._session,
            extra_health=self._extra_health,
        )
        try:
            body = self._packb(smap)
        except (TypeError, ValueError, OverflowError) as exc:
            _log.error("state detail cannot be encoded (%r); sending it without detail", exc)
            smap["detail"] = {"encode_error": str(exc)}
            body = self._packb(smap)
        return body

    # ----------------------------------------------------------------------------------------
    # Requests

    def _drain_until(self, deadline: float) -> None:
        """Serve waiting requests until none is left, ``deadline``, or :data:`MAX_BATCH` of them.

        The real clock's loop passes its next stream tick: a client flooding the agent with
        requests (each ``ee_pose`` runs IK) then cannot hold back the plant's updates and its
        state stream, which go on at their rate in the agent's own time.

        Args:
            deadline: the time source's value at which to stop serving [s].
        """
        router = self._router
        events = router.getsockopt
        clock = self._time
        for _ in range(MAX_BATCH):
            try:
                identity = router.recv(_NOBLOCK)
            except zmq.Again:
                return
            self._serve(identity)
            if self._shutdown or not cast(int, events(_EVENTS)) & _POLLIN or clock() >= deadline:
                return

    def _serve(self, identity: bytes) -> None:
        """Read the rest of one request after its routing identity, and answer it.

        The reply goes back with the request's envelope: nothing from a DEALER, the empty
        delimiter from a REQ.
        """
        router = self._router
        recv = router.recv
        self._peer = identity
        payload = recv()
        envelope: list[bytes] = []
        extra = 0
        while router.getsockopt(_RCVMORE):
            if len(envelope) < MAX_ENVELOPE_FRAMES:
                envelope.append(payload)
            else:
                extra += 1
            payload = recv()
        reply = self._handle(payload, extra)
        if reply is None:
            return
        send = router.send
        try:
            send(identity, _SNDMORE)
            for frame in envelope:
                send(frame, _SNDMORE)
            send(reply, _NOBLOCK)
        except zmq.Again:  # ROUTER drops rather than blocks; this is only a safety net
            pass

    def _all_gone(self) -> bool:
        """Whether every limb is disassembled (the agent then answers only to bring one back)."""
        available = self._plant.available
        return not any(available(name) for name in self._limbs)

    def _handle(self, payload: bytes, extra_frames: int = 0) -> bytes | None:
        """Answer one request; None means stay silent (disassembled limbs, real clock)."""
        seq = 0
        requests = "its requests"
        try:
            if extra_frames:
                raise ProtocolError(
                    ErrorCode.UNDECODABLE,
                    f"{MAX_ENVELOPE_FRAMES + extra_frames + 1} frames after the identity: a "
                    f"request is one message frame after at most {MAX_ENVELOPE_FRAMES} "
                    "envelope frames",
                )
            request = parse_request(payload)
            seq = request.seq
            requests = f"its {request.type.value} requests"
            answer = self._handlers[request.type](request)
        except ProtocolError as exc:
            reply = self._bad_request(exc)
            if self._real and self._all_gone():
                return None
            return self._pack(reply)
        except DriverError as exc:
            return self._pack(error_reply(seq, exc.code, str(exc), exc.field))
        except Exception as exc:
            # (a driver whose command() raises fails every command: logged by outage, with
            # the first traceback, not one traceback per request)
            self._request_failures.failed(self._agent_time(), requests, exc)
            return self._pack(error_reply(seq, ErrorCode.INTERNAL, f"agent error: {exc!r}"))
        if self._request_failures.outage is not None:
            self._request_failures.succeeded(self._agent_time())
        return answer

    def _limb(self, request: Request) -> _Limb:
        """The limb a request is about (its ``limb`` field, or the agent's only limb)."""
        name: str | None = request.fields.pop("limb", None)
        if name is None:
            if self._only is not None:
                return self._only
            raise ProtocolError(
                ErrorCode.UNKNOWN_LIMB,
                f"{request.type.value} needs field 'limb': this agent serves limbs "
                f"{self._limb_names_text}",
                seq=request.seq,
                field="limb",
            )
        limb = self._limbs.get(name)
        if limb is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_LIMB,
                f"no limb {name!r} here: this agent serves limbs {self._limb_names_text}",
                seq=request.seq,
                field="limb",
            )
        return limb

    def _pack(self, message: dict[str, Any]) -> bytes:
        return self._packb(message)

    def _agent_time(self) -> float:
        if self._clock is ClockMode.SIM:
            return self._sim_time
        return 0.0 if self._start is None else self._time() - self._start

    def _ack(self, request: Request) -> bytes:
        return self._ack_prefix[request.type] + self._packb(request.seq)

    def _unavailable(self, request: Request, limb: str | None = None) -> bytes | None:
        """The ``unavailable`` error reply (sim clock); silence in the real clock."""
        if self._real:
            return None
        return self._pack(self._unavailable_map(request, limb))

    def _unavailable_map(self, request: Request, limb: str | None = None) -> dict[str, Any]:
        """The ``unavailable`` error map of ``request``."""
        what = f"limb {limb!r} is" if limb is not None else "every limb of this agent is"
        reply = error_reply(
            request.seq,
            ErrorCode.UNAVAILABLE,
            f"{what} disassembled; send fault {FaultKind.REASSEMBLE.value!r} to bring it back",
        )
        if limb is not None:
            reply["limb"] = limb
        return reply

    def _on_describe(self, request: Request) -> bytes | None:
        if self._all_gone():
            return self._unavailable(request)
        reply: dict[str, Any] = {
            "v": PROTOCOL_VERSION,
            "type": MessageType.DESCRIBE_REPLY.value,
            "seq": request.seq,
        }
        reply.update(self._description_map)
        reply.update(
            versions=list(SUPPORTED_VERSIONS),
            clock=self._clock.value,
            stream_rate_hz=self._stream_rate_hz,
            curve=self._curve,
            max_message_bytes=MAX_MESSAGE_BYTES,
            errors_received=dict(self._errors),
            agent_time=self._agent_time(),
            state_seq=self._state_seq,
            session=self._session,
        )
        return self._pack(reply)

    def _on_ping(self, request: Request) -> bytes | None:
        if self._all_gone():
            return self._unavailable(request)
        return self._pack(
            {
                "v": PROTOCOL_VERSION,
                "type": MessageType.PING_REPLY.value,
                "seq": request.seq,
                "agent_time": self._agent_time(),
            }
        )

    def _on_command(self, request: Request) -> bytes | None:
        gone = self._apply_command(request)
        if gone is not None:
            return self._unavailable(request, gone)
        return self._ack(request)

    def _apply_command(self, request: Request) -> str | None:
        """Give a command to the plant; the limb's name when it is disassembled, else None.

        Raises:
            ProtocolError: for a limb, mode, joint count or end-effector the plant lacks.
            DriverError: when the plant refused it (``ik_failed``, ...), or ``internal``
                while the plant's updates fail.
        """
        limb = self._limb(request)
        if not self._plant.available(limb.name):
            return limb.name
        fields = request.fields
        mode: CommandMode = fields.pop("mode")
        seq = request.seq
        if mode not in limb.modes:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_MODE,
                f"limb {limb.name!r} ({limb.description.robot}) does not accept "
                f"{mode.value!r}; it accepts {limb.modes_text}",
                seq=seq,
                field="mode",
            )
        for name in ("q", "tau"):
            values = fields.get(name)
            if values is not None and len(values) != limb.n_joints:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE,
                    f"field {name!r} has {len(values)} values; limb "
                    f"{limb.name!r} ({limb.description.robot}) has {limb.n_joints} joints",
                    seq=seq,
                    field=name,
                )
        if mode is CommandMode.EE_POSE or mode is CommandMode.EE_TWIST:
            ee = fields.setdefault("ee", limb.default_ee)
            if ee not in limb.ees:
                raise ProtocolError(
                    ErrorCode.BAD_VALUE,
                    f"no end-effector {ee!r}; valid end-effectors of limb {limb.name!r} are "
                    f"{', '.join(limb.description.end_effectors) or 'none'}",
                    seq=seq,
                    field="ee",
                )
        self._check_plant()
        self._claim(limb.name, seq)
        self._plant.command(limb.name, mode, fields)
        return None

    def _claim(self, limb: str, seq: int) -> None:
        """Make the requesting client ``limb``'s commander, unless another one is.

        In the sim clock, the client that steps the agent (:meth:`_claim_steps`) is the only
        one whose commands it takes, without a lease.

        Raises:
            ProtocolError: ``commanded_elsewhere`` while another client's lease runs, or
                while another client steps this (sim-clock) agent.
        """
        now = self._time()
        self._refuse_other_commander(limb, seq, now)
        self._take_lease(limb, now)

    def _refuse_other_commander(self, limb: str, seq: int, now: float) -> None:
        """Refuse the requesting client a limb another client commands (:meth:`_claim`).

        Args:
            limb: the limb's name.
            seq: the request's ``seq``, for the error reply.
            now: the agent's time [s, time_source].

        Raises:
            ProtocolError: ``commanded_elsewhere`` while another client's lease runs, or
                while another client steps this (sim-clock) agent.
        """
        peer = self._peer
        stepper = self._stepper
        if stepper is not None and stepper[0] != peer:
            # A sim-clock agent follows one run: its limbs take that run's commands only,
            # also while the run waits (paused, at a gate) and its lease would have lapsed.
            raise ProtocolError(
                ErrorCode.COMMANDED_ELSEWHERE,
                f"limb {limb!r} belongs to the run that steps this agent (its last step "
                f"{now - stepper[1]:.2f} s ago): a sim-clock agent takes the commands of the "
                "client that steps it only; that client gives it up with release, or "
                "restart the agent for another run",
                seq=seq,
                field="limb",
            )
        held = self._commanders.get(limb)
        if held is not None and held[0] != peer and now - held[1] < held[2]:
            raise ProtocolError(
                ErrorCode.COMMANDED_ELSEWHERE,
                f"limb {limb!r} is commanded by another client (its last command or claim "
                f"{now - held[1]:.2f} s ago): one limb takes one commander; stop the other "
                f"(another runner?), or command it {held[2]:.1f} s after the other stops",
                seq=seq,
                field="limb",
            )

    def _take_lease(self, limb: str, now: float) -> None:
        """Make the requesting client ``limb``'s commander from ``now`` [s] (its lease)."""
        peer = self._peer
        held = self._commanders.get(limb)
        # The lease outlasts the commander's own pace: a runner ticking slower than once a
        # second keeps its limb between two commands.
        lease = COMMANDER_LEASE_S
        if held is not None and held[0] == peer:
            lease = min(COMMANDER_LEASE_MAX_S, max(lease, 2.5 * (now - held[1])))
        self._commanders[limb] = (peer, now, lease)

    def _claim_steps(self, seq: int) -> None:
        """Make the requesting client the one that steps this agent, unless another one is.

        A sim-clock agent follows one run's time, from t=0 (a runner refuses an agent
        stepped already): a step from another client (a second runner, a stray tool) would
        move every limb under the run that steps it. The claim has no lease: a run paused,
        at a breakpoint or at an operator gate sends no step for as long as it waits. It
        ends with ``release`` of every limb, or with the agent.

        Raises:
            ProtocolError: ``commanded_elsewhere`` when another client steps this agent.
        """
        now = self._time()
        peer = self._peer
        held = self._stepper
        if held is not None and held[0] != peer:
            raise ProtocolError(
                ErrorCode.COMMANDED_ELSEWHERE,
                f"this agent is stepped by another client (its last step {now - held[1]:.2f} "
                "s ago): a sim-clock agent follows one run's time, from t=0; that client "
                "gives it up with release, or restart the agent for another run",
                seq=seq,
            )
        self._stepper = (peer, now)

    def _step_commands(self, commands: list[Request | ProtocolError]) -> bytes | None:
        """Apply the commands a step carries, in order; their refusals, packed, or None."""
        errors: list[dict[str, Any]] = []
        for command in commands:
            if isinstance(command, ProtocolError):  # malformed: refused when the step was read
                errors.append(self._bad_request(command))
                continue
            try:
                gone = self._apply_command(command)
            except ProtocolError as exc:
                errors.append(self._bad_request(exc))
            except DriverError as exc:
                errors.append(error_reply(command.seq, exc.code, str(exc), exc.field))
            else:
                if gone is not None:
                    errors.append(self._unavailable_map(command, gone))
        return self._packb(errors) if errors else None

    def _bad_request(self, exc: ProtocolError) -> dict[str, Any]:
        """A refused request's error map; a malformed one is counted (``describe`` reports it).

        A ``bad_version`` one lists the versions the agent speaks (``versions``), alone or
        among a step's ``command_errors``.
        """
        if exc.code in COUNTED_ERRORS:
            self._errors[exc.code] = self._errors.get(exc.code, 0) + 1
            self._extra_health = Health.BAD_INPUT
        reply = error_reply(exc.seq, exc.code, str(exc), exc.field)
        if exc.code == ErrorCode.BAD_VERSION:
            reply["versions"] = list(SUPPORTED_VERSIONS)
        return reply

    def _on_step(self, request: Request) -> bytes | None:
        if self._clock is not ClockMode.SIM:
            raise ProtocolError(
                ErrorCode.WRONG_CLOCK,
                "step needs an agent running the sim clock; this agent runs the real clock",
                seq=request.seq,
            )
        t: float = request.fields["t"]
        last = self._last_step_t
        if last is not None and t < last:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"step to t={t!r} s goes back in time: the last step was to t={last!r} s",
                seq=request.seq,
                field="t",
            )
        if t - self._sim_time > MAX_STEP_SPAN_S:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"step to t={t!r} s advances the plant {t - self._sim_time:g} s from "
                f"t={self._sim_time!r} s: at most {MAX_STEP_SPAN_S:g} s per step; step in "
                "smaller increments",
                seq=request.seq,
                field="t",
            )
        self._claim_steps(request.seq)  # (a step refused above claims nothing)
        commands = request.fields.get(COMMANDS_FIELD)
        refused = self._step_commands(commands) if commands else None
        # the same t again: the same states, nothing new published (unless a fault request
        # changed them since: a reassembled limb is read again)
        repeat = last == t and not self._faulted
        self._faulted = False
        self._last_step_t = t
        self._sim_time = t
        plant = self._plant
        plant.advance(t)
        available = plant.available
        live = [limb for name, limb in self._limbs.items() if available(name)]
        if not live:
            return self._unavailable(request)
        if not repeat:
            self._state_seq += 1
        base = self._pack_base()
        packb = self._packb
        parts = [
            self._step_prefix if refused is None else self._step_prefix_errors,
            packb(request.seq),
            T_KEY,
            packb(t),
            BASE_KEY,
            base,
            LIMBS_KEY,
            _map_header(len(live)),
        ]
        limb_state = plant.limb_state
        publish = self._publish_on_step and not repeat
        for limb in live:
            state = limb_state(limb.name)
            parts.append(limb.packed_name)
            parts.append(
                self._stream(limb, state, t, base) if publish else self._pack_state(state, t)
            )
        if len(live) == len(self._limbs):
            parts.append(self._no_unavailable)
        else:
            gone = [name for name in self._limbs if not available(name)]
            parts.append(UNAVAILABLE_KEY + packb(gone))
        if refused is not None:
            parts.append(COMMAND_ERRORS_KEY)
            parts.append(refused)
        return b"".join(parts)

    def _on_fault(self, request: Request) -> bytes | None:
        limb = self._limb(request)
        kind: str = request.fields["kind"]
        if not self._plant.available(limb.name) and kind != FaultKind.REASSEMBLE:
            return self._unavailable(request, limb.name)
        self._plant.fault(limb.name, kind, request.fields["params"])
        self._faulted = True
        return self._ack(request)

    def _on_gripper(self, request: Request) -> bytes | None:
        limb = self._limb(request)
        if not self._plant.available(limb.name):
            return self._unavailable(request, limb.name)
        self._check_plant()
        self._claim(limb.name, request.seq)
        self._plant.gripper(limb.name, request.fields["action"])
        return self._ack(request)

    def _on_release(self, request: Request) -> bytes:
        """The requesting client gives up its command of a limb, or of every limb it has.

        A limb it does not command is left as it is: one another client commands within
        its lease is refused (``commanded_elsewhere``); one nobody commands is not listed.
        The reply's ``released`` lists the limbs now free for another commander.
        """
        peer = self._peer
        if "limb" in request.fields:
            names = [self._limb(request).name]
        else:
            names = [name for name, held in self._commanders.items() if held[0] == peer]
            if self._stepper is not None and self._stepper[0] == peer:
                self._stepper = None  # (and its steps: another run may step this agent now)
        now = self._time()
        released = []
        for name in names:
            held = self._commanders.get(name)
            if held is None:
                continue
            if held[0] != peer:
                if now - held[1] < held[2]:
                    raise ProtocolError(
                        ErrorCode.COMMANDED_ELSEWHERE,
                        f"limb {name!r} is commanded by another client (its last command or "
                        f"claim {now - held[1]:.2f} s ago): only its commander can release it",
                        seq=request.seq,
                        field="limb",
                    )
                continue
            del self._commanders[name]
            released.append(name)
        return self._pack(
            {
                "v": PROTOCOL_VERSION,
                "type": MessageType.RELEASE_REPLY.value,
                "seq": request.seq,
                "released": released,
            }
        )

    def _on_claim(self, request: Request) -> bytes:
        """The requesting client becomes a limb's commander (or every limb's) for a lease.

        It renews the client's lease exactly as a command would (:meth:`_claim`), without
        touching the plant: the limb goes on with its current command. A limb another
        client commands within its lease (or, in the sim clock, the limbs of an agent
        another client steps) refuses the whole claim with ``commanded_elsewhere``, and
        nothing is claimed. A disassembled limb is claimed like any other (as ``release``
        releases one): its commander keeps it while it is away. The reply's ``claimed``
        lists the limbs claimed.
        """
        names = [self._limb(request).name] if "limb" in request.fields else list(self._limbs)
        now = self._time()
        for name in names:  # (all refused before any is claimed)
            self._refuse_other_commander(name, request.seq, now)
        for name in names:
            self._take_lease(name, now)
        return self._pack(
            {
                "v": PROTOCOL_VERSION,
                "type": MessageType.CLAIM_REPLY.value,
                "seq": request.seq,
                "claimed": names,
            }
        )

    def _on_shutdown(self, request: Request) -> bytes:
        token = request.fields.get("token")
        if not self._shutdown_policy.allows(token):
            _log.warning("shutdown request refused (%s)", self._shutdown_policy.why_refused(token))
            return self._pack(
                error_reply(
                    request.seq, ErrorCode.SHUTDOWN_REFUSED, self._shutdown_policy.refusal()
                )
            )
        _log.info("shutdown requested over the wire")
        if self._shutdown_deadline is None:
            self._shutdown_deadline = self._time() + SHUTDOWN_GRACE_S
        return self._ack(request)

    # ----------------------------------------------------------------------------------------
    # Sockets

    def _make_socket(self, kind: int, curve: Any) -> _Socket:
        socket = self._context.socket(kind)
        socket.linger = 0
        socket.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
        if curve is not None:
            make_curve_server(socket, curve)
        return socket

    @staticmethod
    def _bind(socket: _Socket, endpoint: str) -> None:
        if wants_ipv6(endpoint):  # tcp://[::1]:N, tcp://*:N (then on IPv6 and IPv4)
            socket.setsockopt(zmq.IPV6, 1)
        try:
            socket.bind(endpoint)
        except zmq.ZMQError as exc:
            needs = (
                "an agent binds PATH and PATH.state"
                if endpoint.startswith("ipc://")
                else "an agent needs ports N and N+1 free"
            )
            raise ConfigError(f"cannot bind {endpoint}: {exc.strerror}; {needs}") from None

    def _release_holds(self) -> None:
        for hold in self._holds:
            hold.release()
        self._holds = []

    def _close_sockets(self) -> None:
        # After a shutdown request, give its reply a moment to leave; otherwise drop everything.
        linger_ms = round(SHUTDOWN_LINGER_S * 1000.0) if self._shutdown_deadline else 0
        for name in ("_router", "_pub"):
            socket: _Socket | None = getattr(self, name, None)
            if socket is not None:
                socket.close(linger=linger_ms if name == "_router" else 0)
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
        if self._own_context:
            self._context.term()


class _SlowUpdates:
    """Logs the real clock's plant updates that take longer than the stream period.

    A driver whose ``advance`` is slower than ``1 / --rate`` cannot be updated at that rate:
    the agent then updates it as fast as it can, so its setpoints come further apart than the
    operator asked. The first such update is logged at once (``WARNING``), later ones at most
    every :data:`SLOW_LOG_S` of agent time, with their count and the slowest.

    Args:
        who: the agent, for the log (``"plant agent"``).
        rate_hz: the stream rate the agent was asked for [Hz].
    """

    def __init__(self, who: str, rate_hz: float) -> None:
        self._who = who
        self._rate_hz = rate_hz
        self._logged_at: float | None = None
        self._count = 0
        self._slowest_s = 0.0

    def late(self, now: float, took_s: float) -> None:
        """Note an update at agent time ``now`` [s] that took ``took_s`` [s]."""
        self._count += 1
        self._slowest_s = max(self._slowest_s, took_s)
        if self._logged_at is not None and now - self._logged_at < SLOW_LOG_S:
            return
        count = "an update" if self._count == 1 else f"{self._count} updates"
        _log.warning(
            "%s: %s of the plant took up to %.1f ms, longer than the %.1f ms period of its "
            "%g Hz rate: the limbs are updated at about %.0f Hz, not %g Hz; make the driver's "
            "advance (read_joints, write_joint_targets, power_state) faster or lower --rate",
            self._who,
            count,
            1000.0 * self._slowest_s,
            1000.0 / self._rate_hz,
            self._rate_hz,
            1.0 / self._slowest_s,
            self._rate_hz,
        )
        self._logged_at = now
        self._count = 0
        self._slowest_s = 0.0


def _map_header(n: int) -> bytes:
    """The msgpack header of a map of ``n`` entries."""
    if n < 16:
        return bytes((0x80 | n,))
    return b"\xde" + n.to_bytes(2, "big")


LimbAgent = PlantAgent
"""The wave-1 name of :class:`PlantAgent` (an agent then served one limb)."""


def serve_forever(
    plant: Plant | LimbDriver,
    bind: str,
    *,
    clock: ClockMode | str = ClockMode.REAL,
    stream_rate_hz: float = 100.0,
    keys_dir: str | os.PathLike[str] | None = None,
    publish_on_step: bool = True,
    parent_pid: int | None = None,
    insecure: bool = False,
    shutdown: ShutdownPolicy = OWNER_ONLY,
    name: str | None = None,
) -> None:
    """Run an agent until SIGINT, SIGTERM or a ``shutdown`` request (the CLI's entry point).

    Signal handlers are installed only when called from the main thread.

    Args:
        plant: the plant to serve (a bare limb driver is served as a one-limb plant).
        bind: ``tcp://HOST:N``.
        clock: ``"real"`` or ``"sim"``.
        stream_rate_hz: state stream rate in the real clock [Hz].
        keys_dir: keys folder to require CURVE, or None.
        publish_on_step: sim clock: also publish each stepped state on the stream (off when
            the only listener is the runner, which has the state in the step's reply).
        parent_pid: the runner that started this agent: stop when it dies, however it
            died (:func:`~limbtree.transport.orphan.watch_parent`); None (an agent started
            by hand) runs until told to stop.
        insecure: allow a non-loopback bind without keys (logs a warning).
        shutdown: who may stop the agent with a ``shutdown`` request.
        name: a label for its log lines.

    Raises:
        ConfigError: for bad settings, ports in use, or an exposed bind without keys.
        KeysError: when ``keys_dir`` lacks the agent's keys.
    """
    agent = PlantAgent(
        plant,
        bind,
        clock=clock,
        stream_rate_hz=stream_rate_hz,
        keys_dir=keys_dir,
        publish_on_step=publish_on_step,
        insecure=insecure,
        shutdown=shutdown,
        name=name,
    )
    run_until_signalled(agent.run, agent.request_stop, parent_pid)


def run_until_signalled(
    run: Callable[[], None], request_stop: Callable[[], None], parent_pid: int | None
) -> None:
    """Call ``run``; SIGINT, SIGTERM and the death of ``parent_pid`` call ``request_stop``.

    Signal handlers are installed (and restored after) only in the main thread.

    Args:
        run: the serving loop; it returns once asked to stop.
        request_stop: asks it to stop (must be safe from signal handlers and threads).
        parent_pid: the process whose end stops the loop, or None.
    """
    received: list[str] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(signum).name)  # (said once the loop has stopped)
        request_stop()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    stopped = threading.Event()
    watcher = None
    if parent_pid is not None:
        watcher = watch_parent(parent_pid, request_stop, stopped=stopped)
    try:
        run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        stopped.set()
        if watcher is not None:
            watcher.join(WATCHER_JOIN_S)
    if received:
        _log.info("stopped by %s", received[0])
