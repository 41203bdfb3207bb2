"""A client written from docs/protocol.md alone: a bare pyzmq DEALER and SUB on an agent."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import zmq


@contextmanager
def raw_sockets(
    agent: Any, topic: bytes = b"", rcvhwm: int | None = None
) -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    """(DEALER on the agent's requests, SUB on its state stream for ``topic``), 5 s timeouts."""
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    sub = context.socket(zmq.SUB)
    for sock in (dealer, sub):
        sock.linger = 0
        sock.rcvtimeo = 5000
    if rcvhwm is not None:
        sub.rcvhwm = rcvhwm
    dealer.connect(agent.request_endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, topic)
    sub.connect(agent.state_endpoint)
    try:
        yield dealer, sub
    finally:
        dealer.close()
        sub.close()
        context.term()
