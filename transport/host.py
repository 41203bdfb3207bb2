"""Several sim-clock agents served from one loop in one process.

In the ``sim`` clock an agent only answers: the runner sends each agent ``step(t)`` (and the
tick's commands) and waits for every reply. Six one-limb agents in six processes then take
six wake-ups per tick, each in its own process with its own ZeroMQ I/O thread, and on a
machine with fewer cores than processes they queue for the cores they share with the
runner. An :class:`AgentHost` serves them from one ``zmq.Poller`` loop over their request
sockets, with one shared ZeroMQ context: one process wake-up answers every step that has
arrived. Each agent stays what it is on the wire (its own ports, plant, seed and errors);
only the process is shared. ``limbtree agents`` runs a host; ``limbtree run`` starts its
simulated agents in as many hosts as the machine has cores
(:mod:`limbtree.trees.launcher`).

A ``shutdown`` request ends its own agent; the host goes on serving the others and ends
when none is left, or when :meth:`AgentHost.request_stop` is called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import zmq

from limbtree.transport.agent import STOP_CHECK_S, PlantAgent, run_until_signalled
from limbtree.transport.errors import ConfigError

_POLL_MS: Final = round(STOP_CHECK_S * 1000.0)

_Socket = zmq.Socket[bytes]


class AgentHost:
    """Serves sim-clock agents from one loop; closes each when it is done.

    Args:
        make_agents: builds the agents on the context it is given (so that they share it);
            called once, by the constructor.

    Raises:
        ConfigError: when no agent was made, or one is not a sim-clock agent; the agents
            made so far are closed.
    """

    def __init__(self, make_agents: Callable[[zmq.Context[_Socket]], Sequence[PlantAgent]]):
        self._context: zmq.Context[_Socket] = zmq.Context()
        self._agents: list[PlantAgent] = []
        self._stop_requested = False
        try:
            self._agents = list(make_agents(self._context))
            if not self._agents:
                raise ConfigError("an agent host needs at least one agent")
            for agent in self._agents:
                agent.begin_hosted()
        except BaseException:
            self.close()
            raise

    @property
    def agents(self) -> tuple[PlantAgent, ...]:
        """The agents it serves (closed ones included)."""
        return tuple(self._agents)

    def request_stop(self) -> None:
        """Ask the loop to stop soon (safe from signal handlers and other threads)."""
        self._stop_requested = True

    def run(self) -> None:
        """Serve until every agent is done or :meth:`request_stop`; then close them all."""
        poller = zmq.Poller()
        owner: dict[Any, PlantAgent] = {}
        for agent in self._agents:
            poller.register(agent.request_socket, zmq.POLLIN)
            owner[agent.request_socket] = agent
        try:
            while owner and not self._stop_requested:
                for socket, _ in poller.poll(_POLL_MS):
                    owner[socket].serve_waiting()
                for socket, agent in list(owner.items()):
                    if agent.done:  # its shutdown's grace is over (or it was stopped)
                        poller.unregister(socket)
                        del owner[socket]
                        agent.close()
        finally:
            self.close()

    def close(self) -> None:
        """Close every agent and the shared context (idempotent)."""
        for agent in self._agents:
            agent.close()
        if not self._context.closed:
            self._context.term()


def serve_hosted_forever(
    make_agents: Callable[[zmq.Context[_Socket]], Sequence[PlantAgent]],
    *,
    parent_pid: int | None = None,
) -> None:
    """Run an :class:`AgentHost` until a signal, its runner's end, or its agents' shutdown.

    The ``limbtree agents`` entry point: SIGINT and SIGTERM stop every agent; a
    ``shutdown`` request stops its own.

    Args:
        make_agents: builds the agents on the shared context.
        parent_pid: the runner that started the host: stop when it dies; None runs until
            told to stop.

    Raises:
        ConfigError: for bad settings of an agent (ports in use, a real-clock agent).
    """
    host = AgentHost(make_agents)
    run_until_signalled(host.run, host.request_stop, parent_pid)


__all__ = ["AgentHost", "serve_hosted_forever"]
