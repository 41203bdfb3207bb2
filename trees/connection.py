"""Why ``limbtree run`` could not reach an agent: which limb, which address, what was tried.

When an agent does not answer, the message a person needs names the robot and its limbs,
the address, what the runner tried (the request and how long it waited, with or without
CURVE keys), what a plain TCP probe of the address found (the host name does not resolve,
nothing listens on the port, nothing answers at all, or something listens but is not a
limbtree agent speaking to us), and what to check next.
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from limbtree.transport.endpoint import SocketFile, probe_socket_file

#: How long the TCP probe waits for a connection [s].
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class AgentTarget:
    """An agent the run needs.

    Attributes:
        robot: the mission's name of the robot (plant) it serves.
        robot_type: its robot description (``limbtree robots``).
        limbs: the mission's names of its limbs.
        endpoint: its request address, ``tcp://HOST:PORT``.
        keys: the CURVE keys directory the mission gives for it, or None.
    """

    robot: str
    robot_type: str
    limbs: tuple[str, ...]
    endpoint: str
    keys: Path | None = None

    @property
    def who(self) -> str:
        """``limb arm (light_limb)`` or ``robot quad (limbs quad.leg_0, ...; moonbot_zero)``."""
        if self.limbs == (self.robot,):
            return f"limb {self.robot} ({self.robot_type})"
        noun = "limb" if len(self.limbs) == 1 else "limbs"
        return f"robot {self.robot} ({noun} {', '.join(self.limbs)}; {self.robot_type})"


def probe(endpoint: str, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """What a plain TCP (or Unix socket) connection to ``endpoint`` finds, as a sentence."""
    if endpoint.startswith("ipc://"):
        return _probe_ipc(endpoint[len("ipc://") :], timeout_s)
    parts = urlsplit(endpoint)
    host, port = parts.hostname, parts.port
    if parts.scheme != "tcp" or not host or port is None:
        return f"{endpoint} is not a tcp://HOST:PORT address"
    not_found = unresolved(endpoint)
    if not_found is not None:
        return not_found
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except ConnectionRefusedError:
        return f"nothing listens on port {port} of {host} (connection refused)"
    except TimeoutError:
        return (
            f"{host}:{port} did not accept a TCP connection within {timeout_s:g} s "
            "(the computer is off or unreachable, or a firewall drops the port)"
        )
    except OSError as exc:
        return f"a TCP connection to {host}:{port} failed: {exc.strerror or exc}"
    return (
        f"{host}:{port} accepts TCP connections, but no limbtree agent answered there "
        "(another program on the port, or CURVE keys that do not match)"
    )


def unresolved(endpoint: str) -> str | None:
    """Why the host name of a ``tcp://`` ``endpoint`` does not resolve, or None.

    Asked before a client waits for an agent: ZeroMQ tries a name it cannot resolve again
    and again, silently, so the wait would run to its end before saying so.
    """
    parts = urlsplit(endpoint)
    host, port = parts.hostname, parts.port
    if parts.scheme != "tcp" or not host or port is None:
        return None
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return f"the host name {host} does not resolve ({exc.strerror})"
    return None


def _probe_ipc(path: str, timeout_s: float) -> str:
    """What a plain connection to the Unix socket at ``path`` finds, as a sentence."""
    found, reason = probe_socket_file(path, timeout_s)
    return {
        SocketFile.MISSING: f"there is no socket file {path}: no agent is bound there",
        SocketFile.NOT_SOCKET: f"{path} is not a socket but a file of another kind",
        SocketFile.STALE: (
            f"nothing listens on {path} (the socket file is left from an agent that ended)"
        ),
        SocketFile.UNKNOWN: f"a connection to {path} failed: {reason}",
        SocketFile.LISTENING: f"{path} accepts connections, but no limbtree agent answered there",
    }[found]


def unreachable_message(
    target: AgentTarget, tried: str, error: object, finding: str | None = None
) -> str:
    """The message of an agent the run could not use.

    Args:
        target: the agent.
        tried: what the runner tried (``asked it to describe its plant, waited 5 s``).
        error: what went wrong (the transport's error).
        finding: what :func:`probe` found, None to probe now, or ``-`` for nothing to say.
    """
    finding = probe(target.endpoint) if finding is None else finding
    curve = (
        f"with the CURVE client keys in {target.keys}"
        if target.keys is not None
        else "without CURVE keys"
    )
    if target.endpoint.startswith("ipc://"):
        where = (
            f"(limbtree agent --robot {target.robot_type} --bind {target.endpoint} on this "
            f"computer), that `limbtree ping {target.endpoint}` answers, that this user may "
            "open the socket files (PATH and PATH.state)"
        )
    else:
        port = urlsplit(target.endpoint).port
        where = (
            f"(limbtree agent --robot {target.robot_type} --bind tcp://ADDRESS:{port or 'PORT'} "
            f"on the limb's computer), that `limbtree ping {target.endpoint}` answers from "
            "here, that no firewall blocks the port and the next one (the state stream)"
        )
    lines: Sequence[str] = [
        f"{target.who}: cannot use its agent at {target.endpoint}",
        f"  error: {error}",
        f"  tried: {tried}, {curve}",
        *([f"  found: {finding}"] if finding != "-" else []),
        f"  check: that an agent runs there {where}, and that the agent's --keys and the "
        "mission's `keys:` agree (both set, with the same server key, or neither)",
    ]
    return "\n".join(lines)


__all__ = ["PROBE_TIMEOUT_S", "AgentTarget", "probe", "unreachable_message", "unresolved"]
