"""Simulated agents forked from the runner (trees/forked.py): how, when, and their handles."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from limbtree.trees.forked import START_ENV, ForkedProcess, can_fork, fork_agent
from limbtree.trees.launcher import SimAgents, SimAgentSpec

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks (Linux)")


def test_exec_in_the_environment_turns_forking_off():
    assert not can_fork({START_ENV: "exec"})
    assert not can_fork({START_ENV: " EXEC "})


def test_a_process_with_another_thread_does_not_fork():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not can_fork({})
    finally:
        stop.set()
        other.join()


def test_a_forked_command_line_writes_to_its_log_and_exits_with_its_status(tmp_path: Path):
    log_path = tmp_path / "out.log"
    with log_path.open("wb") as log:
        # An unknown robot: the agent's command line fails with its message and status 1,
        # even though this test's sys.stderr is pytest's capture, not file descriptor 2.
        child = fork_agent(
            ["agent", "--robot", "no_such_robot", "--bind", "tcp://127.0.0.1:1"], log, {}
        )
        assert child.wait(60.0) == 1
    assert "no_such_robot" in log_path.read_text()
    assert child.poll() == 1 and child.args[:2] == ["limbtree", "agent"]


def test_a_forked_process_can_be_terminated_and_waited_for():
    pid = os.fork()
    if pid == 0:  # a child that waits to be told to stop
        try:
            time.sleep(60)
        finally:
            os._exit(0)
    child = ForkedProcess(pid, ["sleeper"])
    assert child.poll() is None
    with pytest.raises(TimeoutError):
        child.wait(0.05)
    child.terminate()
    assert child.wait(10.0) == -15  # SIGTERM
    child.kill()  # already gone: nothing happens


def test_the_launcher_forks_unless_told_to_exec(tmp_path: Path, monkeypatch):
    spec = SimAgentSpec("arm", "light_limb", None, seed=1, clock="sim")
    monkeypatch.setenv(START_ENV, "exec")
    with SimAgents([spec], tmp_path / "exec") as agents:
        agents.start(lambda endpoint, timeout: True)
        assert agents.forked is False
        assert type(agents._processes["arm"]).__name__ == "Popen"
    monkeypatch.delenv(START_ENV)
    with SimAgents([spec], tmp_path / "fork") as agents:
        agents.start(lambda endpoint, timeout: True)
        assert agents.forked is can_fork()
