"""The web debugger's server over real HTTP on loopback: records, a live run, its control.

The live run is in-process (fake limbs, ``test_run_control``'s helpers) in a thread of its
own, linked to its server (:mod:`limbtree.trees.web.link`) over the same pipes as
``limbtree run --view web``; the server runs in a thread here (so that a test can give it
fake skeletons) on a free port of 127.0.0.1. The page's part is played with httpx and a
WebSocket client. ``test_web_link`` runs the server as the child process it is.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time

import httpx
import msgpack
import pytest
from test_run_control import make_runner
from test_web_control import SEQUENCE
from test_web_store import LineSkeletons
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from limbtree.trees.errors import RunError
from limbtree.trees.web import server as server_module
from limbtree.trees.web.child import serve_run
from limbtree.trees.web.link import WebLink
from limbtree.trees.web.server import (
    PROGRESS_PER_S,
    TOKEN_HEADER,
    PageState,
    WebServer,
    check_binding,
    dumps,
    page_hosts,
)
from limbtree.trees.web.store import load_record


class RealWall:
    """The real monotonic clock, as the fake wall's interface."""

    def __call__(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


def wait_for(condition, timeout_s=10.0, what="the condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def record(tmp_path):
    """A finished in-process run's record directory."""
    runner, _ = make_runner(tmp_path, SEQUENCE)
    assert runner.run().value == "SUCCESS"
    return tmp_path / "rec"


@pytest.fixture
def served_record(record):
    server = WebServer(PageState(store=load_record(record)), port=0)
    server.start()
    yield server
    server.stop()


def base(server: WebServer | WebLink) -> str:
    return f"http://127.0.0.1:{server.port}"


class ServerThread:
    """A launcher for :class:`WebLink`: the live run's server in a thread of this process.

    Args:
        build: makes the skeletons (a fake, a slow one), or None for the real ones.
    """

    def __init__(self, build=None) -> None:
        self.build = build
        self.code: int | None = None
        self.thread: threading.Thread | None = None

    def __call__(self, data_fd: int, control_fd: int) -> ServerThread:
        # (the link closes its copies of these ends, as it does for a child process)
        fds = (os.dup(data_fd), os.dup(control_fd))
        self.thread = threading.Thread(target=self._serve, args=fds, daemon=True)
        self.thread.start()
        return self

    def _serve(self, data_fd: int, control_fd: int) -> None:
        try:
            self.code = serve_run(data_fd, control_fd, build=self.build)
        finally:
            for fd in (data_fd, control_fd):
                os.close(fd)

    def poll(self) -> int | None:
        assert self.thread is not None
        return None if self.thread.is_alive() else (self.code or 0)

    def wait(self, timeout: float | None = None) -> int:
        assert self.thread is not None
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise subprocess.TimeoutExpired("the web server's thread", timeout or 0.0)
        return self.code or 0

    def kill(self) -> None:
        """(A thread cannot be killed; the test fails on the timeout instead.)"""


def serve_live(runner, build=None) -> WebLink:
    """Serve ``runner``'s live run (not started: the caller runs the runner and closes it)."""
    link = WebLink(list(runner.nodes), None, port=0, launch=ServerThread(build), say=print)
    link.sink.recorder = runner.recorder
    runner.sinks.sinks.append(link.sink)
    runner.control = link.control
    return link


def test_a_record_is_served_page_run_frames_and_nodes(served_record):
    url = base(served_record)
    page = httpx.get(url + "/", timeout=5)
    assert page.status_code == 200 and "<html" in page.text.lower()
    run = httpx.get(url + "/api/run", timeout=5).json()
    assert run["mode"] == "replay" and run["control"] is False
    assert run["end"]["outcome"] == "SUCCESS" and run["summary"]["outcome"] == "SUCCESS"
    assert run["header"]["tree"]["children"][1]["name"] == "square"
    last = run["ticks"] - 1
    frame = httpx.get(f"{url}/api/frame/{last}", timeout=5).json()
    assert frame["nodes"]["0"]["status"] == "SUCCESS"
    assert set(frame["limbs"]) == {"a", "b"}
    node = httpx.get(url + "/api/node/0.1", timeout=5).json()
    assert node["name"] == "square" and node["busy"]["total_s"] > 0
    assert node["telemetry"]["skill"] == "sync"
    missing = httpx.get(f"{url}/api/frame/{last + 1}", timeout=5)
    assert missing.status_code == 404 and f"ticks 0 to {last}" in missing.json()["error"]
    assert httpx.get(url + "/api/frame/x", timeout=5).status_code == 400
    assert httpx.get(url + "/api/node/0.9", timeout=5).status_code == 404
    assert httpx.get(url + "/static/app.js", timeout=5).status_code == 200


def test_control_needs_the_token_and_a_live_run(served_record):
    url = base(served_record) + "/api/control"
    refused = httpx.post(url, json={"op": "pause"}, timeout=5)
    assert refused.status_code == 403 and TOKEN_HEADER in refused.json()["error"]
    headers = {TOKEN_HEADER: served_record.token}
    record = httpx.post(url, json={"op": "pause"}, headers=headers, timeout=5)
    assert record.status_code == 409 and "a record, not a live run" in record.json()["error"]
    # /api/run tells a page whether it may control (it has the token).
    run = base(served_record) + "/api/run"
    assert httpx.get(run, timeout=5).json()["allowed"] is False
    assert httpx.get(run, headers=headers, timeout=5).json()["allowed"] is True
    assert httpx.get(f"{run}?token={served_record.token}", timeout=5).json()["allowed"] is True


def test_a_loopback_server_answers_only_its_own_names_and_pages(served_record):
    # Another name pointing at 127.0.0.1 (DNS rebinding), or another site's page opening
    # the socket from the user's browser, must not read the run.
    url = base(served_record) + "/api/run"
    port = served_record.port
    assert httpx.get(url, headers={"Host": f"evil.example:{port}"}, timeout=5).status_code == 400
    assert httpx.get(url, headers={"Host": f"localhost:{port}"}, timeout=5).status_code == 200
    ws = f"ws://127.0.0.1:{port}/ws"
    with connect(ws, origin=f"http://127.0.0.1:{port}", open_timeout=5) as socket:
        assert json.loads(socket.recv(timeout=5))["type"] == "end"  # the page's own origin
    with pytest.raises(InvalidStatus, match=r"HTTP 403"):
        connect(ws, origin="http://evil.example", open_timeout=5)
    assert page_hosts("127.0.0.1") == ("127.0.0.1", "localhost", "[::1]")
    assert page_hosts("::1") == ("[::1]", "127.0.0.1", "localhost")
    assert page_hosts("0.0.0.0") is None  # (any name: the token guards reading there)


def test_a_token_for_reads_guards_everything(record):
    server = WebServer(PageState(store=load_record(record)), port=0, token="s3cret",
                       token_for_reads=True)  # fmt: skip
    server.start()
    try:
        assert httpx.get(base(server) + "/api/run", timeout=5).status_code == 403
        ok = httpx.get(base(server) + "/api/run?token=s3cret", timeout=5)
        assert ok.status_code == 200
        assert server.url.endswith("/?token=s3cret")
    finally:
        server.stop()


def test_a_page_served_on_every_address_is_named_by_the_computers_name(record):
    server = WebServer(PageState(store=load_record(record)), host="0.0.0.0", port=0, token="t")
    try:
        assert server.url == f"http://{socket.gethostname()}:{server.port}/?token=t"
    finally:
        server.stop()


@pytest.mark.parametrize("host", ["192.0.2.1"])
def test_a_host_that_is_not_this_machines_is_refused_naming_host_not_port(host):
    # (192.0.2.1 is TEST-NET-1: no machine's; binding to it fails here, nothing is sent;
    # a name that does not resolve gets the same words, untested: resolving asks the DNS)
    with pytest.raises(RunError, match=rf"cannot listen on {host}:0: .*give --host") as error:
        WebServer(PageState(), host=host, port=0, token="t")
    assert "--port" not in str(error.value)


def test_a_taken_port_and_an_open_address_are_refused_clearly(served_record):
    with pytest.raises(RunError, match=f"cannot listen on 127.0.0.1:{served_record.port}.*--port"):
        WebServer(PageState(), port=served_record.port)
    with pytest.raises(RunError, match=r"reachable from other machines on 0.0.0.0.*--token"):
        check_binding("0.0.0.0", None, False)
    check_binding("0.0.0.0", "t", False)
    check_binding("0.0.0.0", None, True)
    check_binding("::1", None, False)
    check_binding("localhost", None, False)


def test_json_for_the_page_has_no_nan():
    assert json.loads(dumps({"a": float("nan"), "b": [1.0, float("inf")]})) == {
        "a": None,
        "b": [1.0, None],
    }


def test_a_live_run_breakpoint_step_and_abort_over_http_and_the_socket(tmp_path):
    runner, _ = make_runner(tmp_path, SEQUENCE, wall=RealWall(), speed=4.0)
    server = serve_live(runner)
    url = base(server)
    headers = {TOKEN_HEADER: server.token}
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(runner.run().value), daemon=True)
    try:
        # (the run takes the page's requests once it runs: between ticks, or while paused)
        runner.control.set_breakpoint("0.1", "start")
        thread.start()
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            run = wait_for(
                lambda: (r := httpx.get(url + "/api/run", timeout=5).json())["hit"] and r,
                what="the breakpoint",
            )
            hit = run["hit"]
            assert run["paused"] and hit["node"] == "0.1" and hit["on"] == "start"
            assert run["breakpoints"] == [{"node": "0.1", "on": "start"}]
            another = httpx.post(url + "/api/control", headers=headers, timeout=5,
                                 json={"op": "break", "node": "0.0", "on": "failure"})  # fmt: skip
            assert another.json()["breakpoints"] == [
                {"node": "0.0", "on": "failure"},
                {"node": "0.1", "on": "start"},
            ]
            frame = httpx.get(f"{url}/api/frame/{hit['tick']}", timeout=5).json()
            assert frame["nodes"]["0.1"]["status"] == "RUNNING" and frame["nodes"]["0.1"]["ticked"]
            assert frame["nodes"]["0.0"]["status"] == "SUCCESS"
            update = json.loads(socket.recv(timeout=5))
            assert update["type"] == "update" and "frame" not in update  # (it did not ask)
            socket.send(json.dumps({"want": "frame"}))
            while "frame" not in update:
                update = json.loads(socket.recv(timeout=5))
            assert update["type"] == "update" and update["frame"]["tick"] == update["ticks"] - 1

            ticks = wait_for(lambda: httpx.get(url + "/api/run", timeout=5).json()["ticks"])
            stepped = httpx.post(url + "/api/control", headers=headers, json={"op": "step"},
                                 timeout=5)  # fmt: skip
            assert stepped.status_code == 200
            after = wait_for(
                lambda: (
                    (r := httpx.get(url + "/api/run", timeout=5).json())["paused"]
                    and r["ticks"] > ticks
                    and r
                ),
                what="the step",
            )
            time.sleep(0.3)  # a step that ran on would show more ticks by now
            assert httpx.get(url + "/api/run", timeout=5).json()["ticks"] == ticks + 1
            # (a pause's event goes into the next tick's map: the run is paused before it)
            assert after["events"][-1]["kind"] == "resumed"
            assert after["events"][-1]["why"] == "one step from the web page"

            bad = httpx.post(url + "/api/control", headers=headers, json={"op": "fly"}, timeout=5)
            assert bad.status_code == 400 and "unknown operation 'fly'" in bad.json()["error"]
            assert "break, unbreak, answer" in bad.json()["error"]  # (the page's ops too)
            no_node = httpx.post(url + "/api/control", headers=headers, timeout=5,
                                 json={"op": "break", "node": "7"})  # fmt: skip
            assert no_node.status_code == 400 and "no node '7'" in no_node.json()["error"]

            httpx.post(url + "/api/control", headers=headers, json={"op": "abort"}, timeout=5)
            thread.join(10)
            assert outcome == ["ABORTED"]
            end = None
            while end is None:
                message = json.loads(socket.recv(timeout=5))
                if message["type"] == "end":
                    end = message
            assert end["end"] == {
                "outcome": "ABORTED",
                "failure": "aborted from the web page",
                "record": str(tmp_path / "rec"),  # (where to look on once the page is gone)
            }
        late = httpx.post(url + "/api/control", headers=headers, json={"op": "pause"}, timeout=5)
        assert late.status_code == 409 and "the run is over" in late.json()["error"]
    finally:
        if thread.is_alive():
            runner.control.request("abort")
            thread.join(10)
        server.close()


LONG_WAIT = """
tree:
  sequence:
    children:
      - wait: {name: long, duration_s: 60}
"""


def test_a_live_page_gets_frames_only_when_it_asks_and_progress_a_few_times_a_second(tmp_path):
    # Frames are the costly part of watching a run, for the run's process and for a
    # software-rendered page alike: a page that does not follow the run asks for none.
    runner, _ = make_runner(tmp_path, LONG_WAIT, wall=RealWall(), speed=1.0)
    server = serve_live(runner)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()

    def read_for(socket, seconds):
        messages, began = [], time.monotonic()
        while time.monotonic() - began < seconds:
            messages.append(json.loads(socket.recv(timeout=5)))
        return messages

    try:
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            quiet = read_for(socket, 1.5)
            assert all(m["type"] == "update" and "frame" not in m for m in quiet)
            # The run ticks 50 times a second; a page hears of it a few times a second.
            assert 3 <= len(quiet) <= 1.5 * PROGRESS_PER_S + 2
            assert quiet[-1]["ticks"] > quiet[0]["ticks"]
            socket.send(json.dumps({"want": "frame"}))
            asked = read_for(socket, 1.0)
            frames = [m["frame"] for m in asked if "frame" in m]
            assert len(frames) == 1  # one frame per request
            assert frames[0]["nodes"]["0.0"]["status"] == "RUNNING"
            socket.send("fly")
            error = next(
                m for m in (json.loads(socket.recv(timeout=5)) for _ in range(20))
                if m["type"] == "error"
            )  # fmt: skip
            assert (
                "unknown request 'fly'" in error["message"]
                and '{"want": "frame"}' in error["message"]
            )
            socket.send(b"\x00\x01")
            error = next(
                m for m in (json.loads(socket.recv(timeout=5)) for _ in range(20))
                if m["type"] == "error"
            )  # fmt: skip
            assert error["message"].startswith("a binary message")
            socket.send(json.dumps({"want": "frame"}))  # and the page is still served
            assert any("frame" in m for m in read_for(socket, 1.0))
    finally:
        runner.control.request("abort")
        thread.join(10)
        server.close()


def test_a_live_page_gets_the_node_it_watches_with_each_frame(tmp_path):
    # One message, drawn in one screen update, instead of a fetch of its own each second.
    runner, _ = make_runner(tmp_path, LONG_WAIT, wall=RealWall(), speed=1.0)
    server = serve_live(runner)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()

    def next_frame(socket):
        socket.send(json.dumps({"want": "frame"}))
        while True:
            message = json.loads(socket.recv(timeout=10))
            if "frame" in message:
                return message

    try:
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            assert "node" not in next_frame(socket)  # (watching nothing)
            socket.send(json.dumps({"watch": "0.0"}))
            ticks = []
            for _ in range(2):
                message = next_frame(socket)
                node = message["node"]
                assert node["id"] == "0.0" and node["type"] == "wait"
                assert node["tick"] == message["frame"]["tick"]
                ticks.append(node["tick"])
            assert ticks[1] > ticks[0]
            socket.send(json.dumps({"watch": None}))
            assert "node" not in next_frame(socket)
    finally:
        runner.control.request("abort")
        thread.join(10)
        server.close()


def test_a_paused_live_runs_page_gets_the_skeletons_once_they_are_made(tmp_path):
    gate = threading.Event()

    def slow(robots):
        gate.wait(20)
        return LineSkeletons()

    runner, _ = make_runner(tmp_path, SEQUENCE, wall=RealWall(), speed=4.0)
    server = serve_live(runner, slow)
    url = base(server)
    thread = threading.Thread(target=runner.run, daemon=True)

    def next_frame(socket):
        socket.send(json.dumps({"want": "frame"}))
        while True:
            message = json.loads(socket.recv(timeout=10))
            if message["type"] == "update" and "frame" in message:
                return message["frame"]

    try:
        runner.control.set_breakpoint("0.1", "start")
        thread.start()
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            hit = wait_for(lambda: httpx.get(url + "/api/run", timeout=5).json()["hit"])
            ticks = httpx.get(url + "/api/run", timeout=5).json()["ticks"]
            frame = next_frame(socket)
            while frame["tick"] < ticks - 1:
                frame = next_frame(socket)
            assert frame["skeletons"] == "loading"
            assert frame["limbs"]["a"]["skeleton"] is None
            gate.set()
            frame = next_frame(socket)  # the paused run's last tick again, with skeletons
            assert frame["tick"] == ticks - 1 and hit["tick"] <= frame["tick"]
            assert frame["skeletons"] == "ready"
            q = frame["limbs"]["a"]["q"]
            assert frame["limbs"]["a"]["skeleton"] == [[0.0, 0.0, 0.0], [sum(q), 0.0, 0.0]]
            assert httpx.get(url + "/api/run", timeout=5).json()["ticks"] == ticks  # paused
    finally:
        gate.set()
        runner.control.request("abort")
        thread.join(10)
        server.close()


def test_the_runs_controls_reach_the_page_in_order_with_the_ticks_before_them(record):
    """A pause at a breakpoint comes after the tick it paused after: a page that sees the
    pause (``/api/run``'s ``hit``) finds that tick in the store, however late the server
    takes the ticks in."""
    from limbtree.trees.web.child import _Feed
    from limbtree.trees.web.server import RemoteControl, _drain

    header, *ticks = msgpack.Unpacker(open(record / "log.msgpack", "rb"), raw=False)  # noqa: SIM115
    state = PageState(live=True, remote=RemoteControl(lambda kind, payload: None))
    unpacker = msgpack.Unpacker(raw=False)
    feed = _Feed(-1, state, writer=None, unpacker=unpacker)  # type: ignore[arg-type]
    hit = {**state.remote.controls, "paused": True, "hit": {"node": "0.1", "tick": 1}}
    for message in (["start", header], ["tick", msgpack.packb(ticks[0])],
                    ["tick", msgpack.packb(ticks[1])], ["controls", hit]):  # fmt: skip
        unpacker.feed(msgpack.packb(message, use_bin_type=True))
    feed._take()
    assert state.remote.controls["hit"] is None  # not before the ticks are in the store
    _drain(state)
    assert state.store is not None and state.store.ticks == 2
    assert state.remote.controls["hit"] == {"node": "0.1", "tick": 1}


def test_a_page_asking_for_a_frame_wakes_the_server_at_once(tmp_path, monkeypatch):
    """The server looks at the run a few times a second, and at once for a page's request:
    here it would look every 1000 s, so only the request can bring the frame."""
    monkeypatch.setattr(server_module, "UPDATES_PER_S", 0.001)
    runner, _ = make_runner(tmp_path, SEQUENCE, wall=RealWall(), speed=1.0)
    server = serve_live(runner, lambda robots: LineSkeletons())
    runner.control.set_breakpoint("0.1", "start")  # then the run stands, its controls too
    url = base(server)
    thread = threading.Thread(target=runner.run, daemon=True)
    try:
        thread.start()
        hit = wait_for(lambda: httpx.get(url + "/api/run", timeout=5).json()["hit"])
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            socket.send(json.dumps({"want": "frame"}))
            while "frame" not in (message := json.loads(socket.recv(timeout=10))):
                assert message["type"] == "update"
            assert message["frame"]["tick"] >= hit["tick"]
    finally:
        runner.control.request("abort")
        thread.join(10)
        server.close()


def test_the_command_line_names_what_is_wrong(tmp_path, capsys):
    from limbtree.trees.cli import main

    assert main(["view", str(tmp_path)]) == 1
    assert "no log.msgpack here (give the directory --record wrote)" in capsys.readouterr().err
    log = tmp_path / "log.msgpack"
    log.write_bytes(b"")
    assert main(["view", str(log)]) == 1  # the log itself: its directory is named
    assert (
        f"{log} is not a directory; give the directory of a run record (limbtree run MISSION "
        f"--record DIR): {tmp_path}"
    ) in capsys.readouterr().err
    assert main(["view", str(tmp_path), "--host", "0.0.0.0"]) == 1
    assert "--insecure" in capsys.readouterr().err
    assert main(["run", "missions/square_sync.yaml", "--port", "9000"]) == 1
    assert "--port is for the web view: add --view web" in capsys.readouterr().err
    # A taken port is refused before any agent starts (not after six have started).
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        args = ["run", "missions/square_sync.yaml", "--view", "web", "--port", port, "--headless"]
        assert main(args) == 1
    printed = capsys.readouterr()
    assert f"the web view cannot listen on 127.0.0.1:{port}" in printed.err
    assert "starting" not in printed.out


def test_a_page_still_taking_a_message_when_the_run_ends_gets_its_last_update(
    tmp_path, monkeypatch
):
    """The run's last update (its last tick's frame, its events, the watched node as it
    ended) goes to every page, then the end: a page still being sent a message then (a slow
    page, a loaded machine, or an update just sent: a gate whose answer ends the run) gets
    it after that one, not nothing. Its server stops right after: what it missed, it never
    gets (the page asked the stopped server, and said it had stopped, not how the run
    ended)."""
    send = server_module._send

    async def slow(state, client, text):  # each message takes 0.6 s to go out
        state.sending.add(client)
        await asyncio.sleep(0.6)
        await send(state, client, text)

    monkeypatch.setattr(server_module, "_send", slow)
    runner, _ = make_runner(tmp_path, SEQUENCE, wall=RealWall(), speed=1.0)
    server = serve_live(runner)
    thread = threading.Thread(target=runner.run, daemon=True)
    messages = []
    try:
        with connect(f"ws://127.0.0.1:{server.port}/ws", open_timeout=5) as socket:
            socket.send(json.dumps({"watch": "0.1"}))
            thread.start()
            while not messages or messages[-1]["type"] != "end":
                messages.append(json.loads(socket.recv(timeout=10)))
                if "frame" in messages[-1]:
                    socket.send(json.dumps({"want": "frame"}))
        thread.join(10)
    finally:
        runner.control.request("abort")
        thread.join(10)
        server.close()
    last = messages[-2]
    assert last["type"] == "update" and last["ticks"] == runner.ticks
    assert last["frame"]["tick"] == runner.ticks - 1
    assert last["node"]["id"] == "0.1" and last["node"]["tick"] == runner.ticks - 1
    assert last["frame"]["nodes"]["0"]["status"] == "SUCCESS"
