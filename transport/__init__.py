"""Limb agents and clients over ZeroMQ: the wire schema, the agent, the client, clocks, keys.

``docs/protocol.md`` is the wire reference. The pieces:

- :class:`LimbDriver` (``driver.py``): the contract between an agent and what moves the limb.
- :class:`LimbAgent`: serves one driver on ``tcp://HOST:N`` (requests) and ``N+1`` (state).
- :class:`LimbClient`: the runner's non-blocking side of one agent; :func:`ping_endpoint`.
- :class:`MonotonicClock`, :class:`SimClock`: the ``real`` and ``sim`` clocks.
- :func:`generate_keys`: CURVE key pairs for ``--keys DIR``.
"""

from limbtree.transport.agent import LimbAgent, serve_forever
from limbtree.transport.client import AgentDescription, LimbClient, ping_endpoint, step_all
from limbtree.transport.clock import Clock, ClockMode, MonotonicClock, SimClock
from limbtree.transport.driver import (
    CommandMode,
    DriverError,
    GripperAction,
    Health,
    JointInfo,
    LimbDescription,
    LimbDriver,
    LimbState,
)
from limbtree.transport.endpoint import split_endpoint, state_endpoint
from limbtree.transport.errors import (
    AgentUnreachableError,
    ConfigError,
    KeysError,
    LimbUnavailableError,
    ProtocolError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
)
from limbtree.transport.schema import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    ErrorCode,
    FaultKind,
    MessageType,
    StateSample,
)
from limbtree.transport.security import KeyFiles, generate_keys

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PROTOCOL_VERSION",
    "AgentDescription",
    "AgentUnreachableError",
    "Clock",
    "ClockMode",
    "CommandMode",
    "ConfigError",
    "DriverError",
    "ErrorCode",
    "FaultKind",
    "GripperAction",
    "Health",
    "JointInfo",
    "KeyFiles",
    "KeysError",
    "LimbAgent",
    "LimbClient",
    "LimbDescription",
    "LimbDriver",
    "LimbState",
    "LimbUnavailableError",
    "MessageType",
    "MonotonicClock",
    "ProtocolError",
    "RemoteError",
    "RequestTimeoutError",
    "SimClock",
    "StateSample",
    "TransportError",
    "generate_keys",
    "ping_endpoint",
    "serve_forever",
    "split_endpoint",
    "state_endpoint",
    "step_all",
]
