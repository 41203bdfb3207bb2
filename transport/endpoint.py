"""Agent endpoints: requests on ``tcp://HOST:N``, the state stream on ``tcp://HOST:N+1``.

An agent on the same computer as its runner may use ``ipc://PATH`` instead: requests there,
the stream on ``ipc://PATH.state`` (Unix domain sockets: no network, access by the files'
permissions).
"""

from __future__ import annotations

from typing import Final

from limbtree.transport.errors import ConfigError

#: What an ``ipc://PATH`` agent's state stream adds to its path.
IPC_STATE_SUFFIX: Final = ".state"
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
