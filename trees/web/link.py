"""The live run's side of its web view: the page's server runs in a process of its own.

``limbtree run --view web`` starts the server (:mod:`.child`) as a child process and talks
to it over two pipes, so that the run's interpreter does nothing for the page but append
each tick's packed map (the record's, when the run records) to a buffer that goes down the
pipe 10 times a second (at each tick while the pipe is full), never waiting: the server's
work (indexing the ticks, making frames, JSON, WebSockets) takes neither the run's lock
(Python's GIL) nor its heap.

Down the data pipe (runner -> server), msgpack arrays ``[kind, payload]``: ``config``
(where to listen, the token: never on the command line, where ``ps`` shows it), ``prepare``
(the robots, to make the 3D skeletons before the run ticks), ``start`` (the record's
header map), ``tick`` (a record map, packed), ``controls`` (the control state the page
shows, when it changed), ``reply`` (to a control request) and ``end``. Up the control pipe
(server -> runner): ``ready`` or ``error`` once, ``prepared``, and ``control`` (the page's
pause, resume, abort, step, breakpoint and gate answers). The runner reads them at its safe
point between two ticks (:meth:`LinkedControl.take`), as it reads keys.

A server that falls behind by :data:`MAX_BACKLOG_BYTES` or dies is dropped with a message;
the run goes on. A run that dies closes the pipe, and the server exits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import msgpack

from limbtree.trees.control import ControlError, ControlOp, RunControl, SharedOperator
from limbtree.trees.errors import RunError
from limbtree.trees.recorder import Recorder, header_map, plain_summary, tick_map
from limbtree.trees.stream import RunEnd, RunHeader, TickSnapshot

#: How often the runner writes what it buffered and reads the page's requests [s]: each
#: write wakes the server, and a woken process takes a core from the run for a while. (A
#: write the pipe did not take whole is tried again at the next tick: see ``tick``.)
PUMP_S: Final = 0.1
#: A server this far behind is dropped (the run never waits for it) [bytes].
MAX_BACKLOG_BYTES: Final = 64 << 20
#: The pipe's capacity asked of Linux (it keeps its default, 64 KiB, if refused) [bytes].
PIPE_BYTES: Final = 1 << 20
#: How long the server may take to listen, and to make the skeletons [s].
START_TIMEOUT_S: Final = 30.0
PREPARE_TIMEOUT_S: Final = 60.0
#: How long the end of the run may take to reach the server [s].
DRAIN_TIMEOUT_S: Final = 5.0
_F_SETPIPE_SZ: Final = getattr(fcntl, "F_SETPIPE_SZ", 1031)


class ServerProcess(Protocol):
    """What the link needs of the server it started (a :class:`subprocess.Popen`)."""

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


#: Starts the server on the two pipe ends it reads and writes (tests start it in a thread).
Launcher = Callable[[int, int], ServerProcess]


def launch_process(data_fd: int, control_fd: int) -> ServerProcess:
    """The server as a child process (``python -m limbtree.trees.web.child``).

    In a session of its own: a Ctrl-C in the terminal is the run's to handle; the server
    ends when the run closes the pipe.
    """
    return subprocess.Popen(
        [sys.executable, "-m", "limbtree.trees.web.child", str(data_fd), str(control_fd)],
        pass_fds=(data_fd, control_fd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )


def controls_state(control: RunControl, operator: SharedOperator | None) -> dict[str, Any]:
    """What the page shows of the live controls (``docs/visualization.md``, the API)."""
    hit = control.hit
    question = operator.question if operator is not None else None
    return {
        "control": not control.ended,
        "paused": control.paused,
        "breakpoints": [{"node": b.node, "on": b.on.value} for b in control.breakpoints],
        "hit": None if hit is None else dataclasses.asdict(hit) | {"on": hit.on.value},
        "gate": None if question is None else {"node": question[0], "prompt": question[1]},
    }


def apply_control(
    control: RunControl, operator: SharedOperator | None, body: Mapping[str, Any]
) -> None:
    """One control request of the page (its shape checked by the server).

    Raises:
        ControlError: naming what the run cannot take.
    """
    op = body.get("op")
    if op in ("break", "unbreak"):
        node, on = body.get("node"), body.get("on", "start")
        if not isinstance(node, str):
            raise ControlError("a breakpoint needs 'node', a node id such as \"0.1\"")
        control.set_breakpoint(node, str(on), enabled=op == "break")
    elif op == "answer":
        if operator is None:
            raise ControlError("this run's gates are answered by --auto-confirm")
        node, answer = body.get("node"), body.get("answer")
        if not isinstance(node, str) or not isinstance(answer, bool):
            raise ControlError("an answer needs 'node' (the gate's id) and 'answer' (true/false)")
        operator.answer(node, answer)
    elif op in _RUN_OPS:
        control.request(str(op))
    else:
        raise ControlError(f"unknown operation {op!r}; use one of {', '.join(PAGE_OPS)}")


_RUN_OPS: Final = tuple(o.value for o in ControlOp)
#: Every ``op`` a control request of the page may carry.
PAGE_OPS: Final = (*_RUN_OPS, "break", "unbreak", "answer")


class WebLink:
    """A live run's web view, served by another process; its sink and its control.

    Args:
        node_ids: the tree's node ids (breakpoints on others are refused).
        operator: the operator the page may answer gates for, or None (``--auto-confirm``).
        host: the address to serve on.
        port: the port (0 picks a free one).
        token: the token every request needs, or None (one is drawn, for control).
        say: prints a message to the operator (the view dropped, ...).
        launch: starts the server on the pipe ends (default: a child process).
        clock: a monotonic clock [s] (when to pump).
        recovering: the nodes whose skill recovers (see ``RunControl``), or None when not
            known.

    Raises:
        RunError: when the server cannot listen (a taken port, ...) or does not start.
    """

    def __init__(
        self,
        node_ids: list[str],
        operator: SharedOperator | None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        say: Callable[[str], None] = print,
        launch: Launcher = launch_process,
        clock: Callable[[], float] = time.monotonic,
        recovering: list[str] | None = None,
    ) -> None:
        self.operator = operator
        self.control = LinkedControl(node_ids, self, recovering)
        self.sink = LinkSink(self)
        self._say = say
        self._clock = clock
        self._due = 0.0
        self._write_due = 0.0
        self._out = bytearray()
        self._packer = msgpack.Packer(use_bin_type=True)
        self._unpacker = msgpack.Unpacker(raw=False, max_buffer_size=1 << 20)
        self._sent_controls: dict[str, Any] | None = None
        self._lost = False
        data_read, self._data = os.pipe()
        self._replies, control_write = os.pipe()
        with contextlib.suppress(OSError):  # (Linux only; the default size also works)
            fcntl.fcntl(self._data, _F_SETPIPE_SZ, PIPE_BYTES)
        try:
            self._server = launch(data_read, control_write)
        finally:
            os.close(data_read)
            os.close(control_write)
        self._put("config", {"host": host, "port": port, "token": token})
        self._write_all(START_TIMEOUT_S)
        os.set_blocking(self._data, False)
        os.set_blocking(self._replies, False)
        ready = self._wait_for("ready", START_TIMEOUT_S)
        self.url: str = str(ready["url"])
        self.token: str = str(ready["token"])
        self.port: int = int(ready["port"])

    # -- the run's side -------------------------------------------------------------------------

    def prepare(self, header: RunHeader) -> None:
        """Have the server make the limbs' skeletons now, before the run ticks.

        They take a CPU-second that the run would otherwise share; the page's requests are
        taken meanwhile.
        """
        self._put("prepare", {name: robot.as_map() for name, robot in header.robots.items()})
        self._wait_for("prepared", PREPARE_TIMEOUT_S, required=False)

    def pump(self, force: bool = False) -> None:
        """Take the page's requests, send the controls if changed, write what is buffered.

        Every :data:`PUMP_S` (or now, with ``force``), at the runner's safe point between
        two ticks, where the controls say what the run does.
        """
        now = self._clock()
        if not force and now < self._due:
            return
        self._due = now + PUMP_S
        if self._lost:
            return
        # A dead server is seen here even when its pipes stay open (another process holding
        # an end: a write then fails with no EPIPE, and a read sees no end of file).
        code = self._server.poll()
        if code is not None:
            self._lose(f"its server exited (code {code})")
            return
        self._read_requests()
        controls = controls_state(self.control, self.operator)
        if controls != self._sent_controls:
            self._sent_controls = controls
            self._put("controls", controls)
        self._write()

    def tick(self, raw: bytes) -> None:
        """One tick's packed record map."""
        if self._lost:
            return
        self._out += self._packer.pack(["tick", raw])
        now = self._clock()
        if now >= self._write_due:  # (the controls go at the safe point: :meth:`pump`)
            self._write()
            # A pipe that was full (a busy server, or Linux kept its 64 KiB) is tried again
            # at the next tick, so a fast run never outgrows a pipe the server keeps up with.
            self._write_due = now + PUMP_S if not self._out else now

    def send(self, kind: str, payload: Any) -> None:
        """One message to the server, written at the next pump."""
        if not self._lost:
            self._put(kind, payload)

    def linger(self) -> None:
        """Write everything now (the run is over; the page stays up)."""
        self.pump(force=True)
        if not self._lost:
            self._write_all(DRAIN_TIMEOUT_S)

    def close(self) -> None:
        """Write what is left and close the pipes; wait for the server to exit.

        What is left is written within :data:`DRAIN_TIMEOUT_S`; the server sends the pages
        the end and exits (it is killed if it does not within as long).
        """
        with contextlib.suppress(OSError):
            self.linger()
        for fd in (self._data, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self._server.wait(DRAIN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._server.kill()
            self._server.wait()

    # -- the pipes ------------------------------------------------------------------------------

    def _put(self, kind: str, payload: Any) -> None:
        self._out += self._packer.pack([kind, payload])

    def _write(self) -> None:
        """Write what the pipe takes now; drop the server if it is gone or too far behind."""
        out = self._out
        if not out:
            return
        try:
            written = os.write(self._data, out)
        except BlockingIOError:
            written = 0
        except OSError as exc:  # EPIPE: the server exited
            self._lose(f"its server stopped ({exc.strerror or exc})")
            return
        del out[:written]
        if len(out) > MAX_BACKLOG_BYTES:
            self._lose(f"it fell {MAX_BACKLOG_BYTES >> 20} MiB behind the run")

    def _write_all(self, timeout_s: float) -> None:
        """Write everything buffered, waiting up to ``timeout_s`` [s] for the pipe."""
        deadline = time.monotonic() + timeout_s
        while self._out and not self._lost:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._lose(f"it did not take the run's last {len(self._out)} bytes in time")
                return
            select.select([], [self._data], [], remaining)
            self._write()

    def _lose(self, why: str) -> None:
        if self._lost:
            return
        self._lost = True
        self._out.clear()
        self._say(f"web view: {why}; the run goes on without it")

    def _read_requests(self) -> list[tuple[str, Any]]:
        """Take the server's messages; answer its control requests (returns the others)."""
        others: list[tuple[str, Any]] = []
        try:
            data = os.read(self._replies, 1 << 16)
        except BlockingIOError:
            return others
        except OSError:
            data = b""
        if not data:
            code = self._server.poll()
            if code is not None:
                self._lose(f"its server exited (code {code})")
            return others
        self._unpacker.feed(data)
        for message in self._unpacker:
            if not (isinstance(message, list) and len(message) == 2):
                continue
            kind, payload = message
            if kind == "control" and isinstance(payload, dict):
                self._put("reply", self._answer(payload))
            else:
                others.append((kind, payload))
        return others

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = {"id": request.get("id")}
        if self.control.ended:
            return {**reply, "status": 409, "error": "nothing to control: the run is over"}
        try:
            apply_control(self.control, self.operator, request)
        except ControlError as exc:
            return {**reply, "status": 400, "error": str(exc)}
        return {**reply, "controls": controls_state(self.control, self.operator)}

    def _wait_for(self, kind: str, timeout_s: float, *, required: bool = True) -> Any:
        """Wait for the server's ``kind`` message, answering its requests meanwhile.

        Raises:
            RunError: (when ``required``) the server said what is wrong, exited or did not
                answer in time.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            self._write()
            for got, payload in self._read_requests():
                if got == kind:
                    return payload
                if got == "error":
                    self.close()
                    raise RunError(str(payload))
            code = self._server.poll()
            remaining = deadline - time.monotonic()
            if code is not None or remaining <= 0 or self._lost:
                why = (
                    f"exited (code {code})" if code is not None
                    else f"did not answer within {timeout_s:g} s"
                )  # fmt: skip
                if not required:
                    self._say(f"web view: its server {why} ({kind}); the run goes on")
                    return None
                self.close()
                raise RunError(f"the web view's server {why}; see the messages above")
            select.select([self._replies], [], [], min(remaining, 0.1))


class LinkedControl(RunControl):
    """The run's control, with the page's requests taken from the link at each safe point."""

    def __init__(
        self, node_ids: list[str], link: WebLink, recovering: list[str] | None = None
    ) -> None:
        super().__init__(node_ids, recovering)
        self._link = link

    def take(self) -> list[Any]:
        """The page's requests since the last call (read from the server first)."""
        self._link.pump()
        return super().take()


class LinkSink:
    """The tick stream, down the pipe: the record's packed maps when the run records.

    Attributes:
        recorder: the run's recorder, when it records (its packed map of each tick is sent
            as it is, a sink after it), or None (the map is made and packed here).
    """

    def __init__(self, link: WebLink) -> None:
        self._link = link
        self.recorder: Recorder | None = None

    def on_start(self, header: RunHeader) -> None:
        """The header, for the page's tree."""
        self._link.send("start", header_map(header))
        self._link.pump(force=True)

    def on_tick(self, snapshot: TickSnapshot) -> None:
        """One tick, packed once (by the recorder, when there is one)."""
        last = self.recorder.last if self.recorder is not None else None
        if last is not None and last[0] is snapshot:
            raw = last[2]
        else:
            raw = msgpack.packb(tick_map(snapshot), use_bin_type=True)
        self._link.tick(raw)

    def on_message(self, text: str) -> None:
        """Messages are not shown in the page (the events are)."""

    def on_pause(self, paused: bool, t: float) -> None:
        """Pauses reach the page through the control's state and the events."""

    def on_end(self, end: RunEnd) -> None:
        """The run is over: the final control state, then the end."""
        link = self._link
        link.control.set_state(paused=False, ended=True)
        link.pump(force=True)
        link.send(
            "end",
            {
                "outcome": end.outcome.value,
                "failure": end.failure,
                "summary": plain_summary(end.summary),
                # (limbtree run stops serving the page soon: the record is where to look on)
                "record": None if self.recorder is None else str(self.recorder.directory),
            },
        )
        link.pump(force=True)


__all__ = [
    "MAX_BACKLOG_BYTES",
    "PUMP_S",
    "LinkSink",
    "LinkedControl",
    "WebLink",
    "apply_control",
    "controls_state",
    "launch_process",
]
