"""A live run's web server, in a process of its own (started by :mod:`.link`).

``python -m limbtree.trees.web.child DATA_FD CONTROL_FD``: reads the run's messages from
``DATA_FD`` (the first says where to listen, and the token) and writes its own to
``CONTROL_FD`` (``docs/visualization.md`` describes both directions; :mod:`.link` is the
run's side). It serves until the run closes the pipe, and then exits once the pages have
the run's end. It never writes to the terminal but for errors (stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Final

import msgpack

from limbtree.trees.errors import RunError
from limbtree.trees.web.server import PageState, RemoteControl, WebServer
from limbtree.trees.web.skeleton import SkeletonLoader, Skeletons

#: How much of the run's pipe is read at once [bytes].
READ_BYTES: Final = 1 << 20
#: How long the run may take to say where to listen [s].
CONFIG_TIMEOUT_S: Final = 30.0
#: The server's niceness: below the run's processes, so that on a busy machine the run's
#: ticks go first and the page waits (it takes idle time, of which a lockstep run leaves
#: plenty); a user can still renice it.
NICENESS: Final = 10


class _Writer:
    """Messages to the run, never blocking the server's loop.

    A run busy in a long tick reads them later: they wait here, and go when the pipe takes
    them.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._out = bytearray()
        self._packer = msgpack.Packer(use_bin_type=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        os.set_blocking(fd, False)

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def send(self, kind: str, payload: Any) -> None:
        if self._closed:
            return
        waiting = bool(self._out)
        self._out += self._packer.pack([kind, payload])
        if not waiting:
            self._flush()

    def send_now(self, kind: str, payload: Any) -> None:
        """Before the loop runs: write at once, waiting for the pipe if need be."""
        self._out += self._packer.pack([kind, payload])
        while self._out and not self._closed:
            select.select([], [self.fd], [], 5.0)
            self._write()

    def _write(self) -> None:
        try:
            written = os.write(self.fd, self._out)
        except BlockingIOError:
            return
        except OSError:  # the run is gone
            self._closed = True
            self._out.clear()
            return
        del self._out[:written]

    def _flush(self) -> None:
        self._write()
        loop = self._loop
        if loop is None:
            return
        if self._out:
            loop.add_writer(self.fd, self._flush)
        else:
            loop.remove_writer(self.fd)


class _Feed:
    """The run's messages, read as they come, into the page's state."""

    def __init__(
        self,
        fd: int,
        state: PageState,
        writer: _Writer,
        unpacker: msgpack.Unpacker,
    ) -> None:
        self.fd = fd
        self.state = state
        self.writer = writer
        self.closed = asyncio.Event()
        self._unpacker = unpacker
        self._tasks: set[asyncio.Future[None]] = set()
        #: Awaited once the run closed the pipe (the server stops after the pages' end).
        self.on_closed: Callable[[], Awaitable[None]] | None = None

    def start(self) -> None:
        """Read the pipe from the running loop (and take what came with the config)."""
        loop = asyncio.get_running_loop()
        self.writer.attach(loop)
        os.set_blocking(self.fd, False)
        loop.add_reader(self.fd, self.on_readable)
        self._take()
        self.spawn(self._finish_when_closed())

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _finish_when_closed(self) -> None:
        await self.closed.wait()
        if self.on_closed is not None:
            await self.on_closed()

    def on_readable(self) -> None:
        try:
            data = os.read(self.fd, READ_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.fd)
            self.state.queue.append(("closed", None))
            self.state.wake()
            self.closed.set()
            return
        self._unpacker.feed(data)
        self._take()

    def _take(self) -> None:
        queue = self.state.queue
        for message in self._unpacker:
            if not (isinstance(message, list) and len(message) == 2):
                continue
            kind, payload = message
            if kind == "tick":
                queue.append((kind, payload))
            elif kind == "start" or kind == "end" or kind == "controls":
                # Taken in order with the ticks before them (see _drain: a page that sees a
                # pause at a breakpoint finds the tick it paused after in the store), at once.
                queue.append((kind, payload))
                self.state.wake()
            elif kind == "reply" and self.state.remote is not None:
                self.state.remote.on_reply(payload)
            elif kind == "prepare":
                self._prepare(payload)

    def _prepare(self, robots: Mapping[str, Any]) -> None:
        loader = SkeletonLoader(robots, build=self.state.build)
        self.state.skeletons = loader
        loader.start()

        async def prepared() -> None:
            await asyncio.to_thread(loader.wait)
            self.writer.send("prepared", loader.error)

        self.spawn(prepared())


def _read_config(fd: int, unpacker: msgpack.Unpacker) -> dict[str, Any]:
    """The run's first message: where to listen and the token.

    Raises:
        RunError: when it does not come in time or is not a config.
    """
    ready, _, _ = select.select([fd], [], [], CONFIG_TIMEOUT_S)
    while ready:
        data = os.read(fd, 1 << 16)
        if not data:
            break
        unpacker.feed(data)
        for message in unpacker:
            if isinstance(message, list) and len(message) == 2 and message[0] == "config":
                return dict(message[1])
            raise RunError(f"the run's first message is not its config: {message!r:.80}")
        ready, _, _ = select.select([fd], [], [], CONFIG_TIMEOUT_S)
    raise RunError("the run did not say where to serve its page")


def serve_run(
    data_fd: int,
    control_fd: int,
    *,
    build: Callable[[Mapping[str, Any]], Skeletons] | None = None,
) -> int:
    """Serve the live run that writes to ``data_fd`` until it closes it.

    Args:
        data_fd: the pipe the run writes to (read here).
        control_fd: the pipe the run reads (written here).
        build: makes the skeletons from the run's robots (tests pass a slow or fake one).

    Returns:
        The exit code: 0, or 2 when the server could not listen (the run was told why).
    """
    writer = _Writer(control_fd)
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=256 << 20)
    state = PageState(live=True, remote=RemoteControl(writer.send), build=build)
    feed = _Feed(data_fd, state, writer, unpacker)

    async def on_start() -> None:
        feed.start()

    try:
        config = _read_config(data_fd, unpacker)
        server = WebServer(
            state,
            str(config["host"]),
            int(config["port"]),
            config.get("token"),
            token_for_reads=bool(config.get("token")),
            on_start=on_start,
        )
    except RunError as exc:
        with contextlib.suppress(OSError):
            writer.send_now("error", str(exc))
        return 2
    feed.on_closed = server.finish
    writer.send_now("ready", {"url": server.url, "token": server.token, "port": server.port})
    server.serve_forever()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m limbtree.trees.web.child DATA_FD CONTROL_FD``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or not all(a.isdigit() for a in args):
        print(
            "usage: python -m limbtree.trees.web.child DATA_FD CONTROL_FD (limbtree run "
            "--view web starts it; it is not for direct use)",
            file=sys.stderr,
        )
        return 2
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    return serve_run(int(args[0]), int(args[1]))


if __name__ == "__main__":
    sys.exit(main())
