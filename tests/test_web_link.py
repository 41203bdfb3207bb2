"""The live run's web server in a process of its own (:mod:`limbtree.trees.web.link`).

The server is the child process ``limbtree run --view web`` starts, unless a test needs to
stand in for it. What is held: the page sees the run through it; the token never shows in
a process listing; a taken port is refused naming the port; a server that dies or falls
behind is dropped with a message and the run goes on; a killed run leaves no server behind;
a request the run does not take in time gets a clear 504.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import msgpack
import pytest
from test_run_control import make_runner
from test_web_control import SEQUENCE
from test_web_server import RealWall, ServerThread, base, wait_for

from limbtree.trees.errors import RunError
from limbtree.trees.web import link as link_module
from limbtree.trees.web import server as server_module
from limbtree.trees.web.link import WebLink
from limbtree.trees.web.server import TOKEN_HEADER

ROOT = Path(__file__).resolve().parent.parent


def child_of(pid: int) -> int | None:
    """The web server among ``pid``'s children, or None."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in children:
        with open(f"/proc/{child}/cmdline", "rb") as f:
            if b"limbtree.trees.web.child" in f.read():
                return int(child)
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_run_is_served_by_a_child_process_that_keeps_its_token_off_the_command_line(tmp_path):
    runner, _ = make_runner(tmp_path, SEQUENCE)
    link = WebLink(list(runner.nodes), None, port=0, token=None, say=print)
    try:
        link.sink.recorder = runner.recorder
        runner.sinks.sinks.append(link.sink)
        runner.control = link.control
        server = child_of(os.getpid())
        assert server is not None, "no web server among this process's children"
        with open(f"/proc/{server}/cmdline", "rb") as f:
            assert link.token.encode() not in f.read()
        assert runner.run().value == "SUCCESS"
        link.linger()
        run = wait_for(
            lambda: (r := httpx.get(base(link) + "/api/run", timeout=5).json()).get("end") and r,
            what="the run's end in the server",
        )
        assert run["mode"] == "live" and run["end"]["outcome"] == "SUCCESS"
        assert run["ticks"] == runner.ticks and run["control"] is False
        last = httpx.get(f"{base(link)}/api/frame/{run['ticks'] - 1}", timeout=5).json()
        assert last["nodes"]["0"]["status"] == "SUCCESS"
    finally:
        link.close()
    assert not alive(server)


def test_a_taken_port_is_refused_naming_it(tmp_path):
    runner, _ = make_runner(tmp_path, SEQUENCE)
    first = WebLink(list(runner.nodes), None, port=0, say=print)
    try:
        with pytest.raises(RunError, match=rf"cannot listen on 127.0.0.1:{first.port}.*--port"):
            WebLink(list(runner.nodes), None, port=first.port, say=print)
    finally:
        first.close()


def test_a_server_that_dies_is_dropped_with_a_message_and_the_run_goes_on(tmp_path):
    runner, _ = make_runner(tmp_path, SEQUENCE)
    said: list[str] = []
    link = WebLink(list(runner.nodes), None, port=0, say=said.append)
    server = link._server.pid  # (its own: another test's server may still be exiting)
    assert b"limbtree.trees.web.child" in Path(f"/proc/{server}/cmdline").read_bytes()
    os.kill(server, signal.SIGKILL)
    # Dead once it can be reaped: its first thread shows "Z" in /proc while its others are
    # still exiting, and a run that ended by then had no dead server to notice.
    wait_for(lambda: link._server.poll() is not None, timeout_s=10, what="the server to die")
    link.sink.recorder = runner.recorder
    runner.sinks.sinks.append(link.sink)
    runner.control = link.control
    try:
        assert runner.run().value == "SUCCESS"
    finally:
        link.close()
    assert len(said) == 1 and "web view: its server" in said[0]
    assert said[0].endswith("the run goes on without it")


class Deaf:
    """A server that says it is ready and then reads nothing (a hung one)."""

    def __init__(self) -> None:
        self.ends: tuple[int, int] | None = None

    def __call__(self, data_fd: int, control_fd: int) -> Deaf:
        self.ends = (os.dup(data_fd), os.dup(control_fd))
        ready = {"url": "http://127.0.0.1:1/", "token": "t", "port": 1}
        os.write(self.ends[1], msgpack.packb(["ready", ready]))
        return self

    def poll(self) -> int | None:
        return None

    def wait(self, timeout: float | None = None) -> int:
        assert self.ends is not None
        for fd in self.ends:
            os.close(fd)
        return 0

    def kill(self) -> None:
        pass


class Dead(Deaf):
    """A server that said it was ready and then died, its pipes still held open (by another
    process that inherited them): no EPIPE, no end of file, only its exit code tells."""

    def __init__(self) -> None:
        super().__init__()
        self.code: int | None = None

    def poll(self) -> int | None:
        return self.code


def test_a_server_that_dies_with_its_pipes_held_open_is_dropped_with_a_message():
    # (CI met it under load: the dying-server test below saw no message at all.)
    now = [0.0]
    dead = Dead()
    said: list[str] = []
    link = WebLink(["0"], None, launch=dead, say=said.append, clock=lambda: now[0])
    link.pump(force=True)
    assert said == []
    dead.code = -9
    link.tick(bytes(100))  # (written into the open pipe: nothing to see there)
    now[0] = 1.0
    link.pump()
    assert said == ["web view: its server exited (code -9); the run goes on without it"]
    link.close()
    assert len(said) == 1


def test_a_server_that_falls_behind_is_dropped_and_never_holds_the_run(monkeypatch):
    monkeypatch.setattr(link_module, "MAX_BACKLOG_BYTES", 4 << 20)
    monkeypatch.setattr(link_module, "PUMP_S", 0.0)
    monkeypatch.setattr(link_module, "DRAIN_TIMEOUT_S", 0.2)
    said: list[str] = []
    link = WebLink(["0"], None, launch=Deaf(), say=said.append)
    raw = bytes(20_000)
    for _ in range(400):  # 8 MB into a pipe nobody reads (a waiting write would never end)
        link.tick(raw)
    assert said == ["web view: it fell 4 MiB behind the run; the run goes on without it"]
    link.tick(raw)  # (dropped: nothing more is buffered)
    link.close()
    assert len(said) == 1


def test_a_pipe_left_full_is_written_again_at_the_next_tick_not_a_pump_later():
    """Ticks go down the pipe every PUMP_S; when the pipe did not take them all (a fast run,
    or Linux kept the pipe's default 64 KiB), the rest goes at the next tick."""
    now = [0.0]
    deaf = Deaf()
    said: list[str] = []
    link = WebLink(["0"], None, launch=deaf, say=said.append, clock=lambda: now[0])
    assert deaf.ends is not None
    read_end = deaf.ends[0]
    os.set_blocking(read_end, False)

    def drain() -> int:
        taken = 0
        while True:
            try:
                data = os.read(read_end, 1 << 20)
            except BlockingIOError:
                return taken
            taken += len(data)

    drain()  # (the config)
    now[0] = 1.0
    link.tick(bytes(100))
    assert drain() > 0  # due: written
    link.tick(bytes(100))
    assert drain() == 0  # the clock stands: buffered until the next pump
    now[0] = 2.0
    link.tick(bytes(3 << 20))  # more than the pipe holds
    assert 0 < drain() < 3 << 20
    for _ in range(8):  # the clock stands, yet each tick writes what the pipe takes
        link.tick(bytes(100))
        drain()
    link.tick(bytes(100))
    assert drain() == 0  # all written: back to every PUMP_S
    link.close()
    assert said == []


def test_a_request_the_run_does_not_take_in_time_gets_a_504(tmp_path, monkeypatch):
    monkeypatch.setattr(server_module, "CONTROL_TIMEOUT_S", 0.3)
    runner, _ = make_runner(tmp_path, SEQUENCE, wall=RealWall())
    link = WebLink(list(runner.nodes), None, port=0, launch=ServerThread(), say=print)
    try:  # (the run has not started: nothing takes the request)
        reply = httpx.post(base(link) + "/api/control", headers={TOKEN_HEADER: link.token},
                           json={"op": "pause"}, timeout=5)  # fmt: skip
        assert reply.status_code == 504
        assert "did not take the request within 0.3 s" in reply.json()["error"]
    finally:
        link.close()


def test_a_killed_run_leaves_no_web_server_behind(tmp_path):
    mission = ROOT / "missions" / "square_sync.yaml"
    limbtree = str(Path(sys.executable).parent / "limbtree")
    tmp = tmp_path / "tmp"  # (a killed run cannot remove its agents' folders: the test's own)
    tmp.mkdir()
    run = subprocess.Popen(
        [limbtree, "run", str(mission), "--view", "web", "--port", "0", "--headless",
         "--speed", "0.5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        env=dict(os.environ, TMPDIR=str(tmp)),
    )  # fmt: skip
    server = None
    try:
        assert run.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=lambda: [lines.append(x) for x in run.stdout], daemon=True)
        reader.start()
        url = wait_for(
            lambda: next((m.group(1) for x in lines if (m := re.search(r"(http://\S+)", x))), None),
            timeout_s=60, what="the page's URL",
        )  # fmt: skip
        assert httpx.get(url, timeout=5).status_code == 200
        server = child_of(run.pid)
        assert server is not None
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        wait_for(lambda: not alive(server), timeout_s=10, what="the web server to exit")
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if server is not None and alive(server):
            os.kill(server, signal.SIGKILL)
