"""ZeroMQ CURVE keys: who may talk to a limb agent.

A keys folder (``limbtree keys generate DIR``) holds::

    DIR/agent.key             agent public key       (clients need it)
    DIR/agent.key_secret      agent key pair         (the agent needs it; keep it private)
    DIR/client.key            client public key
    DIR/client.key_secret     client key pair        (clients need it; keep it private)
    DIR/authorized/client.key public keys of the clients the agent lets in

All files are ZeroMQ certificate files (``zmq.auth``). An agent started with ``--keys DIR``
needs ``agent.key_secret`` and ``authorized/``; it accepts only CURVE connections whose client
public key is a ``*.key`` file in ``authorized/`` (read when the agent starts). A client given
``keys_dir=DIR`` needs ``client.key_secret`` and ``agent.key``. To let another client in, copy
its ``.key`` (public) file into the agent's ``authorized/`` and restart the agent.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85

from limbtree.transport.errors import KeysError

AGENT_KEY_NAME = "agent"
"""Base name of the agent's certificate files."""
CLIENT_KEY_NAME = "client"
"""Base name of the client's certificate files."""
AUTHORIZED_DIR = "authorized"
"""Folder (inside the keys folder) of the client public keys an agent accepts."""

_GENERATE_HINT = "make keys with `limbtree keys generate DIR`"
#: A client's keys come from the folder the agent's keys were made in: keys made anew on
#: the client's side would not be the ones the agent knows.
_COPY_HINT = (
    "copy it from the folder `limbtree keys generate` made for the agent (the agent's "
    "--keys DIR): keys generated anew here would not match the agent's"
)
_Z85_KEY_CHARS = 40
"""Length of a CURVE key (32 bytes) in Z85 text."""


@dataclass(frozen=True)
class KeyFiles:
    """Where :func:`generate_keys` put the keys.

    Attributes:
        directory: the keys folder.
        agent_public: the agent public key file.
        agent_secret: the agent key pair file.
        client_public: the client public key file.
        client_secret: the client key pair file.
        authorized: the folder of authorised client public keys.
    """

    directory: Path
    agent_public: Path
    agent_secret: Path
    client_public: Path
    client_secret: Path
    authorized: Path


@dataclass(frozen=True, repr=False)
class CurveKeys:
    """The keys one side of a connection uses (Z85 bytes).

    Attributes:
        public: this side's public key.
        secret: this side's secret key.
        server_public: the agent's public key (clients only; None on the agent).
    """

    public: bytes
    secret: bytes
    server_public: bytes | None = None

    def __repr__(self) -> str:
        return f"CurveKeys(public={self.public!r}, secret=<hidden>)"


def _require_curve() -> None:
    if not zmq.has("curve"):
        raise KeysError("libzmq", "this libzmq was built without CURVE support")


def generate_keys(directory: str | os.PathLike[str], *, overwrite: bool = False) -> KeyFiles:
    """Write an agent key pair, a client key pair, and authorise the client.

    Args:
        directory: the keys folder; created if needed.
        overwrite: replace existing key files instead of refusing.

    Returns:
        Where the files are.

    Raises:
        KeysError: when key files already exist and ``overwrite`` is False, the folder cannot
            be made or written (naming the path and why), or CURVE is not available.
    """
    _require_curve()
    root = Path(directory)
    names = [
        f"{n}{ext}" for n in (AGENT_KEY_NAME, CLIENT_KEY_NAME) for ext in (".key", ".key_secret")
    ]
    existing = [root / n for n in names if (root / n).exists()]
    if existing and not overwrite:
        raise KeysError(
            str(existing[0]),
            "key file exists; limbtree keys generate --overwrite replaces "
            "every key here, and the agents and clients then need the new ones",
        )
    authorized = root / AUTHORIZED_DIR
    try:
        root.mkdir(parents=True, exist_ok=True)
        authorized.mkdir(exist_ok=True)
        agent_public, agent_secret = _create_certificates(root, AGENT_KEY_NAME)
        client_public, client_secret = _create_certificates(root, CLIENT_KEY_NAME)
        shutil.copyfile(client_public, authorized / client_public.name)
    except OSError as exc:
        where = exc.filename if exc.filename is not None else root
        raise KeysError(
            str(where),
            f"cannot write the keys there ({exc.strerror or exc}); give a folder this user "
            "may create or write, not a file",
        ) from None
    return KeyFiles(
        directory=root,
        agent_public=agent_public,
        agent_secret=agent_secret,
        client_public=client_public,
        client_secret=client_secret,
        authorized=authorized,
    )


def _create_certificates(root: Path, name: str) -> tuple[Path, Path]:
    """Write a new key pair as ``root/NAME.key`` (public) and ``root/NAME.key_secret``.

    The files are ZeroMQ certificate files, as ``zmq.auth.create_certificates`` writes them,
    but the secret one is private (mode 0600) from its creation: ``zmq.auth`` writes it with
    the default mode (0644 under the usual umask) and a chmod after it left the secret key
    readable by every user for a moment, and for good when the chmod never came.

    Returns:
        The public and the secret file.
    """
    public, secret = zmq.curve_keypair()
    public_file = root / f"{name}.key"
    secret_file = root / f"{name}.key_secret"
    _write_certificate(public_file, public, None)
    _write_certificate(secret_file, public, secret)
    return public_file, secret_file


def _write_certificate(path: Path, public: bytes, secret: bytes | None) -> None:
    """Write one certificate file; one with a secret key is never open to other users."""
    kind = "Public" if secret is None else "**Secret**"
    lines = [
        "#   ****  Generated by limbtree keys generate  ****",
        f"#   ZeroMQ CURVE {kind} Certificate",
        "#   Exchange securely, or use a secure mechanism to verify the contents of this file "
        "after exchange."
        if secret is None
        else "#   DO NOT PROVIDE THIS FILE TO OTHER USERS nor change its permissions.",
        "",
        "metadata",
        "curve",
        f'    public-key = "{public.decode("ascii")}"',
    ]
    if secret is not None:
        lines.append(f'    secret-key = "{secret.decode("ascii")}"')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        if secret is not None and os.name == "posix":
            # (an existing file keeps its mode: close it to others before the key goes in)
            os.fchmod(out.fileno(), 0o600)
        out.write("\n".join(lines) + "\n")


def _load_public(path: Path, hint: str = _GENERATE_HINT) -> tuple[bytes, bytes | None]:
    if not path.is_file():
        raise KeysError(str(path), f"no such key file; {hint}")
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeysError(str(path), f"not a ZeroMQ certificate file: {exc}") from None
    return public, secret


def _load_pair(path: Path, hint: str = _GENERATE_HINT) -> tuple[bytes, bytes]:
    public, secret = _load_public(path, hint)
    if secret is None:
        raise KeysError(str(path), "holds no secret key")
    _check_private(path)
    return public, secret


def _check_private(path: Path) -> None:
    """Refuse a secret key file that other users may read or change (as ssh does).

    Raises:
        KeysError: naming the file's mode and the ``chmod`` that fixes it.
    """
    if os.name != "posix":
        return
    mode = path.stat().st_mode & 0o777
    if mode & 0o077:
        raise KeysError(
            str(path),
            f"is open to other users (mode {mode:04o}): anyone who reads a secret key can pose "
            f"as its owner; make it private with chmod 600 {path}",
        )


def load_agent_keys(directory: str | os.PathLike[str]) -> tuple[CurveKeys, Path]:
    """Load what an agent needs from a keys folder.

    Args:
        directory: the keys folder.

    Returns:
        The agent's keys and the folder of authorised client public keys.

    Raises:
        KeysError: when a file or the ``authorized`` folder is missing or unreadable, holds
            no ``*.key`` file, or a ``*.key`` file in it is not a client public key.
    """
    _require_curve()
    root = Path(directory)
    public, secret = _load_pair(root / f"{AGENT_KEY_NAME}.key_secret")
    authorized = root / AUTHORIZED_DIR
    if not authorized.is_dir():
        raise KeysError(str(authorized), f"no folder of authorised client keys; {_GENERATE_HINT}")
    keys = sorted(authorized.glob("*.key"))
    if not keys:
        raise KeysError(
            str(authorized),
            "holds no client public key (no *.key file): the agent would let no client in; "
            "copy a client's public key file there (`limbtree keys generate DIR` puts "
            "client.key in DIR/authorized), named NAME.key",
        )
    for path in keys:
        _check_authorized(path)
    return CurveKeys(public=public, secret=secret), authorized


def _check_authorized(path: Path) -> None:
    """Refuse a ``*.key`` file of ``authorized/`` that holds no client public key.

    The ZAP handler reads the folder with ``zmq.auth.load_certificates``, which gives up on
    the whole folder at the first file it cannot read: one stray ``*.key`` file (notes, a
    directory, a truncated copy) would lock every client out, the agent answering nobody.

    Raises:
        KeysError: naming the file, what is wrong with it and how to fix it.
    """
    fix = (
        f"every *.key file in {path.parent} must be a client's public key file (client.key "
        "of `limbtree keys generate`): replace it with one, or move it out of the folder"
    )
    if not path.is_file():
        raise KeysError(str(path), f"is not a file; {fix}")
    try:
        public, _ = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as exc:
        raise KeysError(str(path), f"not a ZeroMQ certificate file ({exc}); {fix}") from None
    if len(public) != _Z85_KEY_CHARS or not _is_z85(public):
        raise KeysError(
            str(path),
            f"its public-key is not a CURVE key (40 Z85 characters, got {len(public)}); {fix}",
        )


def _is_z85(text: bytes) -> bool:
    try:
        z85.decode(text)
    except (KeyError, ValueError, TypeError):
        return False
    return True


def load_client_keys(directory: str | os.PathLike[str]) -> CurveKeys:
    """Load what a client needs from a keys folder.

    Args:
        directory: the keys folder.

    Returns:
        The client's keys, with the agent's public key.

    Raises:
        KeysError: when a file is missing or unreadable.
    """
    _require_curve()
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise KeysError(
            str(root),
            "is not a folder; give the keys folder (the one that holds client.key_secret "
            "and agent.key), not a file in it",
        )
    public, secret = _load_pair(root / f"{CLIENT_KEY_NAME}.key_secret", _COPY_HINT)
    server_public, _ = _load_public(root / f"{AGENT_KEY_NAME}.key", _COPY_HINT)
    return CurveKeys(public=public, secret=secret, server_public=server_public)


def authorized_key_count(authorized: Path) -> int:
    """How many client public keys (``*.key`` files) a folder holds."""
    return sum(1 for _ in authorized.glob("*.key"))


def make_curve_server(socket: zmq.Socket[bytes], keys: CurveKeys) -> None:
    """Make a socket a CURVE server with the agent's keys (before it binds)."""
    socket.curve_secretkey = keys.secret
    socket.curve_publickey = keys.public
    socket.curve_server = True


def make_curve_client(socket: zmq.Socket[bytes], keys: CurveKeys) -> None:
    """Make a socket a CURVE client of the agent (before it connects)."""
    socket.curve_secretkey = keys.secret
    socket.curve_publickey = keys.public
    socket.curve_serverkey = keys.server_public


def start_authenticator(
    context: zmq.Context[zmq.Socket[bytes]], authorized: Path
) -> ThreadAuthenticator:
    """Start a ZAP handler on ``context`` that admits only the client keys in ``authorized``.

    Args:
        context: the agent's own context.
        authorized: the folder of authorised client public keys.

    Returns:
        The running authenticator; call ``stop()`` before terminating the context.
    """
    auth = ThreadAuthenticator(context)
    auth.start()
    auth.configure_curve(domain="*", location=str(authorized))
    return auth
