"""Agent endpoints: requests on ``tcp://HOST:N``, the state stream on ``tcp://HOST:N+1``."""

from __future__ import annotations

from limbtree.transport.errors import ConfigError


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
        raise ConfigError(
            f"endpoint {endpoint!r} must look like tcp://HOST:PORT (only TCP is supported)"
        )
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


def state_endpoint(endpoint: str) -> str:
    """The state stream endpoint of an agent: the same host, port + 1.

    Args:
        endpoint: the agent's request endpoint ``tcp://HOST:N``.

    Returns:
        ``tcp://HOST:N+1``.

    Raises:
        ConfigError: when the endpoint is malformed.
    """
    host, port = split_endpoint(endpoint)
    return f"tcp://{host}:{port + 1}"
