"""Who may reach and stop an agent: exposed binds and the ``shutdown`` policy (issue 12, item 2).

- An agent bound to an address other than loopback without CURVE keys lets anyone on the
  network command its limbs: it needs ``insecure=True`` (``limbtree agent --insecure``) and
  logs a warning; otherwise it refuses to start, naming ``--keys`` and ``--insecure``.
- ``shutdown`` is refused (error ``shutdown_refused``) unless the agent allows it from anyone
  (``--allow-remote-shutdown``) or the request carries the agent's owner token. A runner that
  starts agents gives each a fresh random token in the environment variable
  :data:`SHUTDOWN_TOKEN_ENV`; its ``shutdown`` requests carry it in the ``token`` field.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from typing import Final

from limbtree.transport.endpoint import endpoint_host
from limbtree.transport.errors import ConfigError

SHUTDOWN_TOKEN_ENV: Final = "LIMBTREE_AGENT_TOKEN"
"""The environment variable through which a launcher gives an agent its owner token."""

_LOOPBACK_NAMES: Final = frozenset({"localhost"})


def is_loopback_host(host: str) -> bool:
    """Whether a bind host reaches only this computer.

    Args:
        host: the HOST of ``tcp://HOST:PORT``: an IPv4 address, a bracketed IPv6 address,
            ``*`` (every interface) or a name. Only ``localhost`` counts among names: any
            other name may resolve to a network interface.

    Returns:
        True for 127.0.0.0/8, ``[::1]`` and ``localhost``.
    """
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(endpoint: str, *, curve: bool, insecure: bool) -> str | None:
    """Refuse an exposed bind without CURVE unless the operator said ``insecure``.

    An ``ipc://`` endpoint serves this computer only, as a loopback address does.

    Args:
        endpoint: the request endpoint (``tcp://HOST:PORT`` or ``ipc://PATH``).
        curve: whether the agent requires CURVE keys.
        insecure: whether the operator accepts an unauthenticated network bind.

    Returns:
        A warning to log when the agent serves the network without keys (``insecure``),
        else None.

    Raises:
        ConfigError: for a non-loopback bind without keys and without ``insecure``, or a
            malformed endpoint.
    """
    host = endpoint_host(endpoint)
    if curve or host is None or is_loopback_host(host):
        return None
    where = "every network interface" if host in ("*", "0.0.0.0", "[::]") else f"{host}"
    if not insecure:
        raise ConfigError(
            f"{endpoint} binds {where} without CURVE keys: anyone who reaches it could move "
            "the limbs. Give --keys DIR (limbtree keys generate DIR), bind tcp://127.0.0.1 or "
            "ipc://PATH, or pass --insecure to serve the network unauthenticated anyway"
        )
    return (
        f"WARNING: {endpoint} serves {where} WITHOUT authentication (--insecure): anyone who "
        "reaches it can command the limbs; use --keys DIR on any shared network"
    )


def new_shutdown_token() -> str:
    """A fresh random owner token (128 bits, hex) for an agent a runner starts."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class ShutdownPolicy:
    """Who may stop an agent over the wire.

    Attributes:
        allow_remote: any client may (``--allow-remote-shutdown``).
        token: the owner token a ``shutdown`` request must carry otherwise; None: nobody's
            request is accepted (only signals stop the agent).
    """

    allow_remote: bool = False
    token: str | None = None

    def allows(self, token: str | None) -> bool:
        """Whether a ``shutdown`` request carrying ``token`` (None: no token) may stop it."""
        if self.allow_remote:
            return True
        if self.token is None or token is None:
            return False
        return hmac.compare_digest(self.token.encode(), token.encode())

    def why_refused(self, token: str | None) -> str:
        """Why a ``shutdown`` request carrying ``token`` was refused, for the agent's log."""
        if token is None:
            given = "the request carried no token"
        elif self.token is None:
            given = "the request carried a token, but this agent has no owner token"
        else:
            given = "the request's token is not the owner's"
        return f"{given}; not started with --allow-remote-shutdown"

    def refusal(self) -> str:
        """The ``shutdown_refused`` error message."""
        return (
            "shutdown refused: this agent stops only for the runner that started it (its "
            "request carries the owner token) or, when started with --allow-remote-shutdown, "
            "for anyone; stop it with a signal (Ctrl-C, SIGTERM) on its computer"
        )


OWNER_ONLY: Final = ShutdownPolicy()
"""The default policy: no ``shutdown`` request stops the agent (it has no owner token)."""
