"""The runner's side of the agents: one connection per agent, one link per limb (wire v2).

- :class:`AgentClient` (``agent_client.py``) talks to one agent (one plant, one or several
  limbs) over one connection and holds every limb's latest state without ever blocking;
  :class:`AgentDescription` and :class:`AgentStep` are its ``describe`` and ``step`` replies.
- :class:`LimbClient` (``limb_client.py``) is one limb of an agent with the wave-1 surface
  behaviours use; made from an endpoint it opens its own connection, and
  :meth:`AgentClient.link` gives the links of one agent's limbs over its single connection.
- :func:`step_all` steps several one-limb sim-clock agents in parallel; :func:`ping_endpoint`
  pings an agent and asks what it serves (``limbtree ping``).

This module re-exports the classes, so ``from limbtree.transport.client import ...`` keeps
working.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from limbtree.transport.agent_client import (
    MAX_PENDING_COMMANDS,
    AgentClient,
    AgentDescription,
    AgentStep,
)
from limbtree.transport.driver import LimbState
from limbtree.transport.endpoint import ipc_file
from limbtree.transport.errors import AgentUnreachableError, RequestTimeoutError, TransportError
from limbtree.transport.limb_client import LimbClient

__all__ = [
    "MAX_PENDING_COMMANDS",
    "AgentClient",
    "AgentDescription",
    "AgentStep",
    "LimbClient",
    "ping_endpoint",
    "step_all",
    "watch_states",
]


def step_all(clients: Sequence[LimbClient], t: float, timeout_s: float = 1.0) -> list[LimbState]:
    """Step several one-limb sim-clock agents to ``t`` in parallel (send to all, then collect).

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
    with AgentClient(endpoint, keys_dir=keys_dir, subscribe=False) as client:
        try:
            client.ping(timeout_s)
            rtt = client.ping(max(timeout_s - (time.perf_counter() - start), 0.1))
            description = client.describe(max(timeout_s - (time.perf_counter() - start), 0.1))
        except RequestTimeoutError:
            raise AgentUnreachableError(
                client.endpoint,
                timeout_s,
                curve=keys_dir is not None,
                socket_file=ipc_file(client.endpoint),
            ) from None
    return rtt, description


def watch_states(
    endpoint: str,
    limbs: Sequence[str],
    timeout_s: float = 1.0,
    keys_dir: str | os.PathLike[str] | None = None,
) -> dict[str, LimbState | None]:
    """Listen to a real-clock agent's state stream until each limb has published a state.

    ``limbtree ping`` uses it: an agent may answer requests while a limb publishes nothing
    (its plant's updates fail: a driver whose first joint read raises or returns the wrong
    number of joints; a disassembled limb).

    Args:
        endpoint: the agent's request endpoint (the stream is its neighbour).
        limbs: the limbs to wait for.
        timeout_s: how long to listen in all [s].
        keys_dir: a keys folder, for agents that require CURVE.

    Returns:
        Each limb's latest state, or None for a limb that published none within ``timeout_s``.

    Raises:
        ConfigError: for a malformed endpoint.
        KeysError: when ``keys_dir`` lacks the client's keys.
    """
    deadline = time.monotonic() + timeout_s
    with AgentClient(endpoint, keys_dir=keys_dir, limbs=limbs) as client:
        while True:
            client.poll()
            states = {limb: client.state(limb) for limb in limbs}
            if all(state is not None for state in states.values()):
                return states
            if time.monotonic() >= deadline:
                return states
            time.sleep(0.01)
