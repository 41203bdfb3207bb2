"""The web debugger's server: the page, its JSON API and the live stream (Starlette, uvicorn).

``limbtree view DIR`` serves a record; ``limbtree run MISSION --view web`` a live run. Both
serve the page of ``static/`` (vendored JavaScript, no CDN, no build step) and the API that
``docs/visualization.md`` documents: ``/api/run``, ``/api/frame/{tick}``,
``/api/node/{id}``, ``/api/terrain``, the ``/ws`` WebSocket, and ``POST /api/control``.

A record's page is answered as soon as the record is indexed: the limbs' skeletons (which
import roboticstoolbox, seconds) are made in the background from the server's start, and
frames carry them once they are there.

The run never waits for the page. A live run's server is a process of its own
(:mod:`.child`), fed the run's packed ticks through a pipe (:mod:`.link`, the run's side):
it takes them in about 10 times a second, writes them into the :class:`RunStore` and tells
each connected page what changed. The controls stay in the run's process: a control request
goes to the run and is answered from there (:class:`RemoteControl`). Frames (the costly
part, for the server and the page alike) go only to a page that asked for one,
``{"want": "frame"}``, which it does when it has drawn the last one: a page that cannot keep
up, or is not following the run, gets fewer frames or none, never a slower run.

Security: the server binds 127.0.0.1 unless told otherwise; another address needs a token
(``--token``, then every request needs it) or ``--insecure``. Control (pause, resume,
abort, step, breakpoints, gate answers) always needs the token printed in the page's URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import json
import math
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from limbtree.trees.errors import RunError
from limbtree.trees.web.skeleton import SkeletonLoader, Skeletons
from limbtree.trees.web.store import RunStore, index_map
from limbtree.trees.web.terrain import GroundError

#: The server looks at the run this many times a second, and at once when a page asks for a
#: frame or the run starts, ends or changes its controls (each look wakes a process on the
#: run's cores).
UPDATES_PER_S = 10.0
#: Frames of a live run are made at most this many times a second (a page asks for one when
#: it drew the last; the page of ``static/`` asks at most 10 times a second itself).
FRAMES_PER_S = 10.0
#: Updates that only say the run moved on (ticks, events) go at most this often [1/s];
#: a change of the controls goes at once. (The page's timeline takes new ticks once a
#: second; each update is a repaint, on the run's cores when the page shares its machine.)
PROGRESS_PER_S = 2.0
#: The bind addresses that mean every address of this computer.
_EVERY_ADDRESS: Final = frozenset({"0.0.0.0", "::", ""})
#: The header a request carries its token in (or the query's ``token``).
TOKEN_HEADER = "X-Limbtree-Token"
#: Default port of ``--view web`` and ``limbtree view``.
DEFAULT_PORT = 8765
#: How long ``GET /api/run`` waits for a live run's header [s].
HEADER_WAIT_S = 30.0
#: The share of one core that making frames for live pages may take (see :func:`pump`).
FRAME_CPU_SHARE = 0.02
#: An unchanged update is sent again this often [s].
RESEND_S = 1.0
#: A page whose frame is not sent within this long is dropped [s].
SEND_TIMEOUT_S = 5.0
#: How long a control request waits for the run to take it [s] (a tick waiting for a dead
#: agent takes up to its step's time).
CONTROL_TIMEOUT_S = 10.0
#: The controls of a record: nothing to control.
NO_CONTROLS: dict[str, Any] = {
    "control": False, "paused": False, "breakpoints": [], "hit": None, "gate": None,
}  # fmt: skip


def static_dir() -> Path:
    """The page's files (``index.html``, ``app.js``, the vendored libraries)."""
    return Path(str(resources.files("limbtree.trees.web") / "static"))


@dataclass
class Page:
    """What one connected page of a live run was sent, and whether it wants a frame.

    Attributes:
        wants_frame: the page asked for the next new frame (``{"want": "frame"}``).
        events: how many of the run's events it was sent.
        ticks: the run's tick count in its last update (-1: none sent yet).
        controls: the controls' JSON in its last update.
        framed: ``(tick, skeletons made)`` of the last frame it was sent.
        sent_at: when its last update went [s, the server loop's clock].
        watch: the node its panel shows (``{"watch": ID}``), or None: each update with a
            frame, and the run's last update, carry that node's ``/api/node`` answer.
    """

    wants_frame: bool = False
    events: int = 0
    ticks: int = -1
    controls: str = ""
    framed: tuple[int, bool] = (-1, False)
    sent_at: float = -math.inf
    watch: str | None = None


class RemoteControl:
    """A live run's controls, kept in the run's process: what it last said, and requests.

    Args:
        send: sends a message ``(kind, payload)`` to the run.

    Attributes:
        controls: the control state the run last sent (``/api/run``'s control fields).
    """

    def __init__(self, send: Callable[[str, Any], None]) -> None:
        self.controls: dict[str, Any] = {**NO_CONTROLS, "control": True}
        self._send = send
        self._ids = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}

    async def request(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one control request to the run and wait for its answer.

        Returns:
            The run's reply: ``controls`` (the state after it), or ``error`` and ``status``.

        Raises:
            TimeoutError: when the run did not take it within :data:`CONTROL_TIMEOUT_S`.
        """
        self._ids += 1
        key = self._ids
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        self._send("control", {**body, "id": key})
        try:
            return await asyncio.wait_for(future, CONTROL_TIMEOUT_S)
        finally:
            self._waiting.pop(key, None)

    def on_reply(self, reply: object) -> None:
        """The run's answer to a request."""
        if not isinstance(reply, dict):
            return
        if isinstance(reply.get("controls"), dict):
            self.controls = reply["controls"]
        future = self._waiting.get(reply.get("id"))  # type: ignore[arg-type]
        if future is not None and not future.done():
            future.set_result(reply)


@dataclass
class PageState:
    """What the server serves, and for a live run its feed and control.

    A record's store is there from the start; a live run's once its header came.

    Attributes:
        store: the run, or None until a live run's header arrives.
        live: whether a run is going on behind the page (False for a record).
        remote: the live run's controls (in the run's process), or None.
        queue: what the run sent and the server has not taken yet: ``("start", header)``,
            ``("tick", packed map)``, ``("controls", map)`` (applied in order with the
            ticks), ``("end", {outcome, failure, summary})``, and
            ``("closed", None)`` when the run's pipe closed.
        skeletons: the limbs' skeletons (or their loader), made from the run's robots
            before it ticks, or None (a loader of the header's robots, started at the first
            frame).
        build: makes skeletons from robots (None: :class:`Skeletons`; tests pass others).
        pages: each connected page's socket and what it was sent.
    """

    store: RunStore | None = None
    live: bool = False
    remote: RemoteControl | None = None
    queue: deque[tuple[str, Any]] = field(default_factory=deque)
    skeletons: Skeletons | SkeletonLoader | None = None
    build: Callable[[Mapping[str, Any]], Skeletons] | None = None
    header_seen: asyncio.Event | None = None
    ended: threading.Event = field(default_factory=threading.Event)
    pages: dict[WebSocket, Page] = field(default_factory=dict)
    sending: set[WebSocket] = field(default_factory=set)
    tasks: set[asyncio.Future[None]] = field(default_factory=set)
    looked_for: asyncio.Event | None = None

    def wake(self) -> None:
        """Have :func:`pump` look now (a page's frame; the run's start, end or controls)."""
        if self.looked_for is not None:
            self.looked_for.set()

    def can_control(self) -> bool:
        """Whether the run still takes control requests."""
        return (
            self.live
            and self.remote is not None
            and bool(self.remote.controls.get("control"))
            and not self.ended.is_set()
        )

    def controls(self) -> dict[str, Any]:
        """The live controls' state, for ``/api/run``, updates and control replies."""
        if self.remote is None:
            return NO_CONTROLS
        return {**self.remote.controls, "control": self.can_control()}


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(content: Any) -> str:
    """JSON for the page (NaN and infinities, which JSON has not, as null)."""
    try:
        return json.dumps(content, allow_nan=False, separators=(",", ":"), default=str)
    except ValueError:
        return json.dumps(_finite(content), separators=(",", ":"), default=str)


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dumps(content).encode()


def _error(status: int, message: str) -> Response:
    return _Json({"error": message}, status_code=status)


def make_app(
    state: PageState,
    token: str,
    *,
    token_for_reads: bool = False,
    on_start: Callable[[], Awaitable[None]] | None = None,
    hosts: Sequence[str] | None = None,
) -> Starlette:
    """The Starlette app of the page and its API.

    Args:
        state: what to serve.
        token: the control token (and the read token when ``token_for_reads``).
        token_for_reads: whether reading needs the token too (a non-loopback address).
        on_start: awaited in the server's event loop before the first request.
        hosts: the only names requests may give as their host (``Host``, and a browser's
            ``Origin`` for the socket), or None for any. A server on a loopback address
            takes :func:`page_hosts`: another name pointing there is a web site's trick
            (DNS rebinding) to read the run from the user's browser.
    """

    def authorised(request: Request | WebSocket) -> bool:
        given = request.headers.get(TOKEN_HEADER) or request.query_params.get("token") or ""
        return hmac.compare_digest(given.encode(), token.encode())

    def same_origin(websocket: WebSocket) -> bool:
        """Whether a socket comes from the page itself, or from no browser at all.

        A browser says which page opened it: a web site's page must not read the run
        through the user's browser.
        """
        origin = websocket.headers.get("origin")
        if origin is None:  # not a browser: the token and the address decide
            return True
        return urlsplit(origin).netloc.lower() == websocket.headers.get("host", "").lower()

    def reads(handler: Callable[[Request], Awaitable[Response]]) -> Any:
        async def guarded(request: Request) -> Response:
            if token_for_reads and not authorised(request):
                return _error(403, "this server needs its token: open the URL it printed")
            return await handler(request)

        return guarded

    async def store_or_wait() -> RunStore | None:
        if state.store is None and state.header_seen is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.header_seen.wait(), HEADER_WAIT_S)
        return state.store

    async def index(request: Request) -> Response:
        return FileResponse(static_dir() / "index.html", headers={"Cache-Control": "no-store"})

    async def run(request: Request) -> Response:
        store = await store_or_wait()
        if store is None:
            return _error(503, "the run has not started yet (its agents are starting); retry")
        return _Json(
            {
                "mode": "live" if state.live else "replay",
                **store.state(),
                **state.controls(),
                "allowed": authorised(request),  # (whether this page may control the run)
            }
        )

    async def frame(request: Request) -> Response:
        store = await store_or_wait()
        if store is None:
            return _error(503, "the run has not started yet; retry")
        try:
            tick = int(request.path_params["tick"])
            return _Json(store.frame(tick))
        except ValueError:
            return _error(400, f"a tick is a whole number, not {request.path_params['tick']!r}")
        except IndexError as exc:
            return _error(404, str(exc))

    async def node(request: Request) -> Response:
        store = await store_or_wait()
        if store is None:
            return _error(503, "the run has not started yet; retry")
        try:
            return _Json(store.node(request.path_params["node"]))
        except KeyError as exc:
            return _error(404, str(exc.args[0]))

    async def terrain(request: Request) -> Response:
        store = await store_or_wait()
        if store is None:
            return _error(503, "the run has not started yet; retry")
        try:
            text = await asyncio.to_thread(store.ground.patch_json)  # (built once, cached)
        except GroundError as exc:
            return _error(422, str(exc))
        if text is None:
            return _error(404, "this run has no terrain (its mission has no world.terrain)")
        return Response(text, media_type="application/json")

    async def control(request: Request) -> Response:
        if not authorised(request):
            return _error(
                403, f"control needs the token printed with the page's URL ({TOKEN_HEADER})"
            )
        if not state.can_control():
            why = "this is a record, not a live run" if not state.live else "the run is over"
            return _error(409, f"nothing to control: {why}")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, 'the body must be JSON, e.g. {"op": "pause"}')
        if not isinstance(body, dict) or not isinstance(body.get("op"), str):
            return _error(400, "the body must be a JSON object with an 'op'")
        assert state.remote is not None
        try:
            reply = await state.remote.request(body)
        except TimeoutError:
            return _error(
                504,
                f"the run did not take the request within {CONTROL_TIMEOUT_S:g} s (a tick "
                "may be waiting for an agent); try again",
            )
        if "error" in reply:
            return _error(int(reply.get("status") or 400), str(reply["error"]))
        return _Json(state.controls())

    async def stream(websocket: WebSocket) -> None:
        if (token_for_reads and not authorised(websocket)) or not same_origin(websocket):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        page = state.pages[websocket] = Page()
        try:
            if not state.live and state.store is not None:
                await websocket.send_text(_end_message(state.store))
            while True:  # what the page asks for; this also notices when it goes away
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                request = _page_request(message.get("text"))
                if isinstance(request, str):
                    await websocket.send_text(dumps({"type": "error", "message": request}))
                elif "watch" in request:
                    page.watch = request["watch"]
                else:
                    page.wants_frame = True
                    state.wake()
        except WebSocketDisconnect:
            pass
        finally:
            state.pages.pop(websocket, None)

    routes = [
        Route("/", reads(index)),
        Route("/api/run", reads(run)),
        Route("/api/frame/{tick}", reads(frame)),
        Route("/api/node/{node:path}", reads(node)),
        Route("/api/terrain", reads(terrain)),
        Route("/api/control", control, methods=["POST"]),
        WebSocketRoute("/ws", stream),
        Mount("/static", StaticFiles(directory=static_dir()), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if on_start is not None:
            await on_start()
        yield

    middleware = [] if hosts is None else [Middleware(TrustedHostMiddleware, allowed_hosts=hosts)]
    return Starlette(routes=routes, lifespan=lifespan, middleware=middleware)


def _end_message(store: RunStore) -> str:
    return dumps({"type": "end", "end": store.end, "summary": store.summary})


def _page_request(text: str | None) -> dict[str, Any] | str:
    """A page's request, or what is wrong with its message (a text).

    The requests are ``{"want": "frame"}`` (the next new frame) and ``{"watch": ID}`` (the
    node its panel shows, or null for none).
    """
    if text is None:
        return 'a binary message: a page sends {"want": "frame"}, as text, for the next frame'
    try:
        request = json.loads(text)
    except ValueError:
        request = None
    if request == {"want": "frame"}:
        return {"want": "frame"}
    if (
        isinstance(request, dict)
        and list(request) == ["watch"]
        and (request["watch"] is None or isinstance(request["watch"], str))
    ):
        return {"watch": request["watch"]}
    return (
        f'unknown request {text[:80]!r}: a page sends {{"want": "frame"}} for the next '
        'frame, or {"watch": ID} for the node it shows'
    )


async def pump(state: PageState) -> None:
    """The live run's stream into the store and out to the pages.

    It looks :data:`UPDATES_PER_S` times a second, at once when woken (:meth:`PageState.wake`:
    a page asks for a frame; the run starts, ends or changes its controls), and when a frame
    asked for comes due.

    Each page gets an update when the controls changed (at once), when the run moved on (at
    most :data:`PROGRESS_PER_S` times a second: ticks and new events), again each
    :data:`RESEND_S` (a page that missed one catches up), and with the newest frame when it
    asked for one and there is a new one. Frames (the limbs' skeletons by forward
    kinematics, and their JSON) are the costly part, on cores the run may be using: they are
    made only as often as keeps them under :data:`FRAME_CPU_SHARE` of a core, at most
    :data:`FRAMES_PER_S` times a second, once for every page that wants it.
    """
    frame: tuple[tuple[int, bool], str] = ((-1, False), "")  # the newest frame made, as JSON
    frame_due = 0.0  # when the next frame may be made [s, the loop's clock]
    period = 1.0 / UPDATES_PER_S
    loop = asyncio.get_running_loop()
    state.looked_for = woken = asyncio.Event()
    while True:
        woken.clear()
        wait = period
        ended = _drain(state)
        if ended and state.tasks:
            # A page still taking a message would skip the run's last update below (its
            # last tick's frame and events, the watched node as it ended), and the server
            # stops right after: those messages go out first (each within SEND_TIMEOUT_S).
            await asyncio.gather(*list(state.tasks), return_exceptions=True)
        store = state.store
        if store is not None and store.ticks and state.pages:
            now = loop.time()
            controls = state.controls()
            controls_text = dumps(controls)
            latest = (store.ticks - 1, store.skeletons is not None)
            # At the end every page gets the last tick's frame, asked for or not: the server
            # stops right after.
            wanted = any(
                (page.wants_frame or ended) and page.framed != latest
                for page in state.pages.values()
            )
            if wanted and frame[0] != latest:
                if now >= frame_due or ended:
                    began = time.thread_time()
                    frame = (latest, dumps(store.frame(latest[0])))
                    cost = time.thread_time() - began
                    frame_due = now + max(1.0 / FRAMES_PER_S, cost / FRAME_CPU_SHARE)
                else:
                    wait = min(wait, frame_due - now)
            for client, page in list(state.pages.items()):
                if client in state.sending:  # a page still taking the last one skips this
                    continue
                framed = (
                    (page.wants_frame or ended) and page.framed != frame[0] and frame[0][0] >= 0
                )
                if not (
                    framed
                    or ended
                    or page.controls != controls_text
                    or now - page.sent_at >= RESEND_S
                    or (page.ticks != store.ticks and now - page.sent_at >= 1 / PROGRESS_PER_S)
                ):
                    continue
                message = {
                    "type": "update",
                    "ticks": store.ticks,
                    "t_last": store.t_last,
                    "events": store.events_since(page.events),
                    **controls,
                }
                if (framed or ended) and page.watch is not None:
                    # The node the page shows comes with its frame: one message, drawn in
                    # one screen update, instead of a fetch of its own each second. At the
                    # end (the server stops right after): the node as it ended.
                    with contextlib.suppress(KeyError):
                        message["node"] = store.node(page.watch)
                text = dumps(message)
                if framed:
                    text = f'{text[:-1]},"frame":{frame[1]}}}'
                    page.framed, page.wants_frame = frame[0], False
                page.events, page.ticks = len(store.events), store.ticks
                page.controls, page.sent_at = controls_text, now
                task = asyncio.ensure_future(_send(state, client, text))
                state.tasks.add(task)
                task.add_done_callback(state.tasks.discard)
        if ended:
            if store is not None:
                message_end = _end_message(store)
                await asyncio.gather(
                    *(_send(state, client, message_end) for client in list(state.pages))
                )
            state.ended.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), wait)


def _drain(state: PageState) -> bool:
    """Take what the run sent; True once its end was taken (or its pipe closed)."""
    ended = False
    queue = state.queue
    while queue:
        kind, item = queue.popleft()
        if kind == "tick":
            if state.store is not None:
                state.store.add(index_map(item), item)
        elif kind == "start":
            skeletons = state.skeletons
            if skeletons is None:
                skeletons = SkeletonLoader(item.get("robots") or {}, build=state.build)
            state.store = RunStore(item, skeletons=skeletons)
            if state.header_seen is not None:
                state.header_seen.set()
        elif kind == "controls":
            if state.remote is not None:
                state.remote.controls = item
        elif kind == "end":
            if state.store is not None:
                state.store.finish(
                    str(item["outcome"]),
                    item.get("failure"),
                    item.get("summary"),
                    item.get("record"),
                )
            ended = True
        elif kind == "closed":  # the run's process is gone: if it said no end, it was killed
            if state.store is not None and state.store.end is None:
                state.store.finish(
                    "ABORTED", "the run's process ended without closing its run (killed?)", None
                )
            ended = True
    return ended


async def _send(state: PageState, client: WebSocket, text: str) -> None:
    state.sending.add(client)
    try:
        await asyncio.wait_for(client.send_text(text), SEND_TIMEOUT_S)
    except Exception:  # a page gone or too slow: drop it, never the run
        state.pages.pop(client, None)
        with contextlib.suppress(Exception):
            await client.close()
    finally:
        state.sending.discard(client)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bound(host: str, port: int) -> socket.socket:
    """A TCP socket bound on ``host:port``.

    Raises:
        RunError: naming the address and what to do: another ``--port`` for a port taken
            or not allowed, another ``--host`` for a host that is no address of this
            machine (a name that does not resolve, another machine's address).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bound = socket.socket(family, socket.SOCK_STREAM)
    bound.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        bound.bind((host, port))
    except OSError as exc:
        bound.close()
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            advice = (
                f"{host} is no address of this machine: give --host one of its addresses, "
                "or leave it out to serve on 127.0.0.1 (this machine only)"
            )
        else:
            advice = "pick another port with --port (0 picks a free one)"
        raise RunError(
            f"the web view cannot listen on {host}:{port}: {exc.strerror or exc}; {advice}"
        ) from None
    return bound


def check_port(host: str, port: int) -> None:
    """Refuse a page address that cannot be served, before a run starts its agents.

    Port 0 is tried too (a free port, let go at once): the host may be no address of this
    machine.

    Raises:
        RunError: as the server itself would (the port is only tried, not kept).
    """
    _bound(host, port).close()


def page_hosts(host: str) -> tuple[str, ...] | None:
    """The host names a page served on ``host`` may be reached by, or None for any.

    On a loopback address: the loopback names only (a web site cannot make the user's
    browser read the run by pointing a name of its own at 127.0.0.1). Elsewhere any name
    (the machine's own names are many; the token guards reading there).
    """
    if not is_loopback(host):
        return None
    name = f"[{host.lower()}]" if ":" in host else host.lower()  # (as a Host header has it)
    return tuple(dict.fromkeys((name, "127.0.0.1", "localhost", "[::1]")))


def check_binding(host: str, token: str | None, insecure: bool) -> None:
    """Refuse a non-loopback address without a token or ``--insecure``.

    Raises:
        RunError: naming the address and both ways to go on.
    """
    if is_loopback(host) or token or insecure:
        return
    raise RunError(
        f"the web view would be reachable from other machines on {host}: give it a token "
        "(--token SECRET, then every request needs it) or pass --insecure (anyone who "
        "reaches it sees the run; control still needs the printed token); or leave out "
        "--host to serve on 127.0.0.1 only"
    )


class WebServer:
    """The page's server in a thread of its own (uvicorn), for a live run or a record.

    Args:
        state: what to serve.
        host: the address to bind.
        port: the port (0 picks a free one).
        token: the token; None draws one.
        token_for_reads: whether reading needs the token too.
        on_start: awaited in the server's loop once it serves (a live run's feed).

    Raises:
        RunError: when the address cannot be bound (the port is taken, ...).
    """

    def __init__(
        self,
        state: PageState,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        token: str | None = None,
        *,
        token_for_reads: bool = False,
        on_start: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.state = state
        self._on_start = on_start
        self.host = host
        self.token = token or secrets.token_urlsafe(16)
        self.token_for_reads = token_for_reads
        self._socket = _bound(host, port)
        # Accepted connections inherit it: without, each keep-alive reply waited ~40 ms for
        # the client's delayed ACK (Nagle), which asyncio does not switch off on a socket
        # handed to it.
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.listen(64)
        self._socket.setblocking(False)
        self.port: int = self._socket.getsockname()[1]
        app = make_app(
            state,
            self.token,
            token_for_reads=token_for_reads,
            on_start=self._started,
            hosts=page_hosts(host),
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            ws="websockets-sansio",
            # Frames go to a page on this machine or a LAN 10 times a second: compressing each
            # cost the run more CPU (in its own process) than everything else the view does.
            ws_per_message_deflate=False,
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self._pump: asyncio.Future[None] | None = None  # (asyncio keeps tasks weakly)

    @property
    def url(self) -> str:
        """The page's address, with its token.

        Served on every address (``0.0.0.0``, ``::``): by this computer's name, which
        another computer can open (``http://0.0.0.0:...`` opens nothing there).
        """
        host = self.host
        if host in _EVERY_ADDRESS:
            host = socket.gethostname()
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/?token={self.token}"

    async def _started(self) -> None:
        if self.state.store is not None:
            self.state.store.load_skeletons()  # (in the background: the page is served now)
        if self.state.live:
            self.state.header_seen = asyncio.Event()
            if self.state.store is not None:
                self.state.header_seen.set()
            self._pump = asyncio.ensure_future(pump(self.state))
        if self._on_start is not None:
            await self._on_start()

    async def finish(self) -> None:
        """Stop serving once a live run's end went to the pages (at once for a record)."""
        if self._pump is not None:
            with contextlib.suppress(Exception):
                await self._pump
        self._server.should_exit = True

    def start(self) -> str:
        """Serve in a background thread; returns the URL once it answers."""
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True,
            name="limbtree-web",
        )  # fmt: skip
        self._thread.start()
        for _ in range(500):
            if self._server.started or not self._thread.is_alive():
                break
            threading.Event().wait(0.01)
        if not self._server.started:
            raise RunError(f"the web view did not start on {self.host}:{self.port}")
        return self.url

    def serve_forever(self) -> None:
        """Serve in this thread until Ctrl-C (``limbtree view``)."""
        self._server.run(sockets=[self._socket])

    def stop(self, timeout_s: float = 3.0) -> None:
        """Stop serving (a live run's server stops itself: :meth:`finish`)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
        with contextlib.suppress(OSError):
            self._socket.close()


__all__ = [
    "DEFAULT_PORT",
    "PageState",
    "RemoteControl",
    "WebServer",
    "check_binding",
    "check_port",
    "is_loopback",
    "make_app",
    "page_hosts",
    "static_dir",
]
