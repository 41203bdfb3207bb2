"""Exceptions of ``limbtree.transport``.

The wire has its own error replies (see ``docs/protocol.md``); these exceptions are what the
Python side raises. :class:`ProtocolError` carries the wire code of a malformed message, and
:class:`RemoteError` is an error reply an agent sent back.
"""

from __future__ import annotations

import os

from limbtree.errors import LimbtreeError


class TransportError(LimbtreeError):
    """Base of the errors raised by ``limbtree.transport``."""


class ConfigError(TransportError, ValueError):
    """An agent or client was given settings it cannot use (endpoint, rate, clock, ...)."""


class ProtocolError(TransportError, ValueError):
    """A message breaks the protocol; the agent answers it with an ``error`` reply.

    Attributes:
        code: the wire error code (an :class:`~limbtree.transport.schema.ErrorCode` value).
        seq: the sequence number of the offending message, or 0 when it could not be read.
        field: the name of the offending field, or None when the problem is not one field.
    """

    def __init__(self, code: str, message: str, *, seq: int = 0, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.seq = seq
        self.field = field


class RemoteError(TransportError):
    """An agent answered a request with an ``error`` reply.

    Attributes:
        code: the wire error code, e.g. ``"ik_failed"`` or ``"bad_field"``.
        endpoint: the agent's request endpoint.
        field: the offending field the agent named, or None.
        request: the type of the request refused (``"command"``, ``"claim"``, ...), or None
            when not known.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        endpoint: str,
        field: str | None = None,
        request: str | None = None,
    ) -> None:
        super().__init__(f"{endpoint}: {code}: {message}")
        self.code = code
        self.endpoint = endpoint
        self.field = field
        self.request = request


class LimbUnavailableError(RemoteError):
    """The agent answered ``unavailable``: its limb is disassembled (sim clock)."""


class RequestTimeoutError(TransportError, TimeoutError):
    """No reply to a request came back in time.

    Attributes:
        endpoint: the agent's request endpoint.
        request: the request type that got no answer.
        timeout_s: how long the client waited [s].
    """

    def __init__(self, endpoint: str, request: str, timeout_s: float) -> None:
        super().__init__(f"{endpoint}: no reply to {request} within {timeout_s:g} s")
        self.endpoint = endpoint
        self.request = request
        self.timeout_s = timeout_s


class AgentUnreachableError(TransportError):
    """Nobody answered a ping at an endpoint.

    Attributes:
        endpoint: the endpoint that was tried.
        timeout_s: how long the ping waited [s].
    """

    def __init__(
        self, endpoint: str, timeout_s: float, *, curve: bool, socket_file: str | None = None
    ) -> None:
        if socket_file is not None:  # (an ipc:// endpoint's path)
            found = "it exists" if os.path.exists(socket_file) else "there is no such file"
            checks = [
                f"that `limbtree agent` runs there: it makes the socket files {socket_file} "
                f"({found}) and {socket_file}.state",
                "that this user may open them",
            ]
        elif endpoint.startswith("ipc://"):  # (Linux's abstract namespace: no file)
            checks = ["that `limbtree agent` runs there, on this computer"]
        else:
            checks = [
                "that `limbtree agent` runs there (requests on port N, state stream on N+1)",
                "the host and port",
                "that no firewall blocks both ports",
            ]
        if curve:
            checks.append(
                "that the agent was started with --keys at all (one without answers no CURVE "
                "client: then leave --keys out), that its authorized/ folder holds your "
                "client.key and that your agent.key is that agent's public key"
            )
        else:
            checks.append("whether the agent was started with --keys (then pass --keys DIR too)")
        super().__init__(
            f"no limb agent answered at {endpoint} within {timeout_s:g} s; check "
            + "; ".join(checks)
        )
        self.endpoint = endpoint
        self.timeout_s = timeout_s


class KeysError(TransportError):
    """A CURVE key file is missing, unreadable, or would be overwritten.

    Attributes:
        path: the file or folder that was expected, as a string.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
