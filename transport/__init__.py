"""Limb agents and clients over ZeroMQ: the wire schema, the agent, the client, clocks, keys.

``docs/protocol.md`` is the wire reference. The pieces:

- :class:`Plant` (``plant.py``): the contract between an agent and what moves (one
  mechanically coupled group of limbs); :class:`LimbDriver` (``driver.py``) for one limb,
  served as a one-limb plant (:class:`DriverPlant`).
- :mod:`~limbtree.transport.faults`: the one definition of fault kinds, limits and schedules.
- :class:`PlantAgent`: serves one plant on ``tcp://HOST:N`` (requests) and ``N+1`` (state).
- :class:`AgentClient`: the runner's non-blocking side of one agent; :class:`LimbClient`, one
  limb of it; :func:`ping_endpoint`.
- :class:`MonotonicClock`, :class:`SimClock`: the ``real`` and ``sim`` clocks.
- :func:`generate_keys`: CURVE key pairs for ``--keys DIR``.
"""

from limbtree.transport.agent import LimbAgent, PlantAgent, serve_forever
from limbtree.transport.client import (
    AgentClient,
    AgentDescription,
    AgentStep,
    LimbClient,
    ping_endpoint,
    step_all,
)
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
from limbtree.transport.endpoint import agent_endpoints, split_endpoint, state_endpoint
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
from limbtree.transport.faults import FaultKind, ScheduledFault
from limbtree.transport.plant import (
    BaseState,
    DriverPlant,
    Plant,
    PlantDescription,
    PlantLimb,
    PlantState,
)
from limbtree.transport.schema import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    SUPPORTED_VERSIONS,
    ErrorCode,
    MessageType,
    StateSample,
)
from limbtree.transport.security import KeyFiles, generate_keys

__all__ = [
    "MAX_MESSAGE_BYTES",
    "PROTOCOL_VERSION",
    "SUPPORTED_VERSIONS",
    "AgentClient",
    "AgentDescription",
    "AgentStep",
    "AgentUnreachableError",
    "BaseState",
    "Clock",
    "ClockMode",
    "CommandMode",
    "ConfigError",
    "DriverError",
    "DriverPlant",
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
    "Plant",
    "PlantAgent",
    "PlantDescription",
    "PlantLimb",
    "PlantState",
    "ProtocolError",
    "RemoteError",
    "RequestTimeoutError",
    "ScheduledFault",
    "SimClock",
    "StateSample",
    "TransportError",
    "agent_endpoints",
    "generate_keys",
    "ping_endpoint",
    "serve_forever",
    "split_endpoint",
    "state_endpoint",
    "step_all",
]
