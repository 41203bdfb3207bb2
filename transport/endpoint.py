"""Agent endpoints: requests on ``tcp://HOST:N``, the state stream on ``tcp://HOST:N+1``.

An agent on the same computer as its runner may use ``ipc://PATH`` instead: requests there,
the stream on ``ipc://PATH.state`` (Unix domain sockets: no network, access by the files'
permissions).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat
from enum import Enum
from typing import Final

from limbtree.transport.errors import ConfigError

#: What an ``ipc://PATH`` agent's state stream adds to its path.
IPC_STATE_SUFFIX: Final = ".state"
#: What the lock file of an ``ipc://`` path adds to it (:func:`hold_ipc_path`).
IPC_LOCK_SUFFIX: Final = ".lock"
_FORMS: Final = "tcp://HOST:PORT (another computer, or this one) or ipc://PATH (this computer)"


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """Split ``tcp://HOST:PORT`` into host and port.

    Args:
        endpoint: a ZeroMQ TCP endpoint; HOST may be a name, an address, ``*`` (bind on all
            interfaces) or a bracketed IPv6 address.

    Returns:
        ``(host, port)``.

    Raises:
        ConfigError: when the endpoint is not TCP, or the port is not in 1..65534 (the
            state stream needs port + 1).
    """
    scheme = "tcp://"
    if not endpoint.startswith(scheme):
        raise ConfigError(f"endpoint {endpoint!r} must look like tcp://HOST:PORT")
    host, sep, port_text = endpoint[len(scheme) :].rpartition(":")
    if not sep or not host:
        raise ConfigError(f"endpoint {endpoint!r} must look like tcp://HOST:PORT")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"endpoint {endpoint!r}: port {port_text!r} is not a number") from None
    if not 1 <= port <= 65534:
        raise ConfigError(
            f"endpoint {endpoint!r}: port must be in 1..65534, since the state stream uses port + 1"
        )
    return host, port


def agent_endpoints(endpoint: str) -> tuple[str, str]:
    """An agent's request and state stream endpoints.

    Args:
        endpoint: ``tcp://HOST:N`` or ``ipc://PATH``.

    Returns:
        ``(tcp://HOST:N, tcp://HOST:N+1)`` or ``(ipc://PATH, ipc://PATH.state)``.

    Raises:
        ConfigError: when the endpoint is malformed or of another transport.
    """
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://") :]
        if not path or path != path.strip() or "\0" in path:
            raise ConfigError(f"endpoint {endpoint!r} must look like ipc://PATH (a file path)")
        return endpoint, endpoint + IPC_STATE_SUFFIX
    if not endpoint.startswith("tcp://"):
        raise ConfigError(f"endpoint {endpoint!r} must look like {_FORMS}")
    host, port = split_endpoint(endpoint)
    return f"tcp://{host}:{port}", f"tcp://{host}:{port + 1}"


def endpoint_host(endpoint: str) -> str | None:
    """The HOST of a ``tcp://HOST:PORT`` endpoint; None for ``ipc://`` (this computer only).

    Raises:
        ConfigError: when the endpoint is malformed.
    """
    request, _ = agent_endpoints(endpoint)  # (validates it, naming both forms)
    return None if request.startswith("ipc://") else split_endpoint(request)[0]


def state_endpoint(endpoint: str) -> str:
    """The state stream endpoint of an agent (see :func:`agent_endpoints`).

    Args:
        endpoint: the agent's request endpoint ``tcp://HOST:N`` or ``ipc://PATH``.

    Returns:
        ``tcp://HOST:N+1`` or ``ipc://PATH.state``.

    Raises:
        ConfigError: when the endpoint is malformed.
    """
    return agent_endpoints(endpoint)[1]


def wants_ipv6(endpoint: str) -> bool:
    """Whether a socket for ``endpoint`` needs ZeroMQ's ``IPV6`` option on.

    ZeroMQ sockets are IPv4-only unless ``IPV6`` is set: ``tcp://[::1]:N`` then fails with
    "No such device". It is set for a bracketed IPv6 address and for ``*`` (the socket
    then listens on IPv6 and IPv4 alike), never for a name: with ``IPV6`` a name resolves
    to its IPv6 address first (``localhost`` to ``::1`` on most computers), and would no longer
    meet a peer on its IPv4 one (an agent bound on ``tcp://127.0.0.1:N``, a client of
    ``tcp://localhost:N`` that does not set ``IPV6``).

    Args:
        endpoint: any endpoint; ``ipc://`` ones never need it.
    """
    if not endpoint.startswith("tcp://"):
        return False
    host = endpoint[len("tcp://") :].rpartition(":")[0]
    return host == "*" or ":" in host


def ipc_file(endpoint: str) -> str | None:
    """The socket file's path of an ``ipc://PATH`` endpoint, or None.

    None for other endpoints, and for Linux's abstract namespace (``ipc://@NAME``: no file,
    and the bind itself refuses a name in use).
    """
    if not endpoint.startswith("ipc://"):
        return None
    path = endpoint[len("ipc://") :]
    return None if path.startswith("@") else path


#: How long :func:`ipc_in_use` waits for a Unix socket to accept a connection [s].
_IPC_PROBE_TIMEOUT_S: Final = 1.0


class SocketFile(Enum):
    """What is at an ``ipc://`` path, as a plain connection finds it (:func:`probe_socket_file`)."""

    MISSING = "missing"
    """Nothing is there."""
    NOT_SOCKET = "not_socket"
    """A file of another kind."""
    STALE = "stale"
    """A socket file nothing listens on (left by an agent that ended)."""
    LISTENING = "listening"
    """A socket something listens on."""
    UNKNOWN = "unknown"
    """It could not be checked (the reason comes with it)."""


def probe_socket_file(path: str, timeout_s: float) -> tuple[SocketFile, str]:
    """What is at the Unix socket path ``path``, and the OS's reason when UNKNOWN.

    Args:
        path: the file path of an ``ipc://PATH`` endpoint.
        timeout_s: how long a connection may take to be accepted [s].
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return SocketFile.MISSING, ""
    except OSError as exc:
        return SocketFile.UNKNOWN, exc.strerror or str(exc)
    if not stat.S_ISSOCK(mode):
        return SocketFile.NOT_SOCKET, ""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.settimeout(timeout_s)
        try:
            unix.connect(path)
        except ConnectionRefusedError:
            return SocketFile.STALE, ""
        except FileNotFoundError:  # (gone meanwhile)
            return SocketFile.MISSING, ""
        except TimeoutError:
            return SocketFile.UNKNOWN, "it did not accept a connection in time"
        except OSError as exc:
            return SocketFile.UNKNOWN, exc.strerror or str(exc)
    return SocketFile.LISTENING, ""


def ipc_in_use(endpoint: str) -> str | None:
    """Why an ``ipc://PATH`` endpoint must not be bound, or None when it may be.

    ZeroMQ removes whatever file is at PATH before it binds there, so a second agent on the
    path of a live one would silently take it over (the first would go on, unreachable).
    A plain connection to the path tells a live listener (it connects) from a socket file
    left by an agent that was killed (refused: binding replaces it).

    Args:
        endpoint: any endpoint; only ``ipc://PATH`` is checked (a TCP port in use is refused
            by the bind itself).

    Returns:
        A sentence naming the path and what to do, or None (not ``ipc://``, nothing at PATH,
        or a stale socket file).
    """
    path = ipc_file(endpoint)
    if path is None:
        return None
    found, reason = probe_socket_file(path, _IPC_PROBE_TIMEOUT_S)
    if found is SocketFile.MISSING or found is SocketFile.STALE:
        return None  # (binding replaces a stale file)
    if found is SocketFile.NOT_SOCKET:
        return (
            f"{path} is a file but not a socket (binding would delete it); "
            "remove it or pick another path"
        )
    if found is SocketFile.LISTENING:
        return (
            f"Address already in use (another process, another agent?, listens on {path}); "
            "stop it, or pick another path"
        )
    return (
        f"{path} is a socket that cannot be checked ({reason}): another process may listen "
        "there; stop it, or pick another path"
    )


class IpcHold:
    """A process's hold on an ``ipc://`` path: an exclusive lock on ``PATH.lock``.

    Attributes:
        lock_path: the lock file (left in place: removing it could let two agents hold one
            path, each with its own file).
    """

    def __init__(self, fd: int, lock_path: str) -> None:
        self._fd: int | None = fd
        self.lock_path = lock_path

    def release(self) -> None:
        """Let the path go (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # (closing the file releases its lock)


def hold_ipc_path(endpoint: str) -> IpcHold | None:
    """Take ``ipc://PATH`` for this process until :meth:`IpcHold.release`, or refuse.

    :func:`ipc_in_use` sees an agent that listens on PATH; two agents started in the same
    instant could both see nothing and both bind, the later one silently replacing the
    earlier's socket file. An agent holds an exclusive lock on ``PATH.lock`` from before
    that check until it closes (the system drops it when the process dies), so the second
    one is refused however close together they start.

    Args:
        endpoint: any endpoint; only ``ipc://PATH`` with a file path is held.

    Returns:
        The hold, or None for other endpoints (nothing to hold).

    Raises:
        ConfigError: when another process holds the path (naming its lock file and the
            process id written in it), or the lock file cannot be opened.
    """
    path = ipc_file(endpoint)
    if path is None:
        return None
    lock_path = path + IPC_LOCK_SUFFIX
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ConfigError(
            f"cannot bind {endpoint}: cannot open its lock file {lock_path} "
            f"({exc.strerror}); the directory must be writable, as for the socket itself"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            holder = f" (process {int(os.pread(fd, 32, 0).decode().strip())})"
        os.close(fd)
        raise ConfigError(
            f"cannot bind {endpoint}: another agent holds it{holder}: it serves this path "
            f"or is starting on it (its lock {lock_path} is held); stop it, or pick another "
            "path"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return IpcHold(fd, lock_path)
