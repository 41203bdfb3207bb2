"""Agents that a runner started end by themselves when it dies (issue 19 part 2).

The watcher is tested in-process with a fake parent id; then, end to end, a real
``limbtree run`` is killed with SIGKILL and none of its agents may be alive a few seconds
later, while an agent started by hand outlives the shell that started it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fake_driver import free_port_pair

from limbtree.transport import ping_endpoint
from limbtree.transport.agent import run_until_signalled
from limbtree.transport.errors import TransportError
from limbtree.transport.orphan import EXIT_ORPHANED, watch_parent
from limbtree.trees.launcher import agent_processes

# -- the watcher, in-process ------------------------------------------------------------------


def test_the_watcher_stops_the_agent_when_its_parent_changes() -> None:
    parents = iter([42, 42, 42, 1])
    stopped = threading.Event()
    exited: list[int] = []
    thread = watch_parent(
        42,
        stopped.set,
        interval_s=0.001,
        grace_s=None,
        getppid=lambda: next(parents, 1),
        exit_process=exited.append,
    )
    assert stopped.wait(10.0)
    thread.join(10.0)
    assert not thread.is_alive() and exited == []


def test_an_agent_that_does_not_stop_in_its_grace_period_is_ended() -> None:
    exited = threading.Event()
    codes: list[int] = []

    def exit_process(code: int) -> None:
        codes.append(code)
        exited.set()

    watch_parent(
        42, lambda: None, interval_s=0.001, grace_s=0.01, getppid=lambda: 1,
        exists=lambda pid: False, exit_process=exit_process,
    )  # fmt: skip
    assert exited.wait(10.0) and codes == [EXIT_ORPHANED]


def test_the_watcher_leaves_an_agent_whose_parent_lives_alone() -> None:
    looked = threading.Event()
    calls = [0]

    def getppid() -> int:
        calls[0] += 1
        if calls[0] >= 20:
            looked.set()
        return 42

    stopped = threading.Event()
    watch_parent(42, stopped.set, interval_s=0.001, getppid=getppid)
    assert looked.wait(10.0)
    assert not stopped.is_set()


def test_an_agent_restarted_by_another_parent_watches_the_runner_process() -> None:
    # Restarted by hand with the runner's command line: its parent is a shell, not 42, so
    # it stops when process 42 is gone, not at once because its parent differs.
    lives = iter([True, True, True, False])
    asked: list[int] = []

    def exists(pid: int) -> bool:
        asked.append(pid)
        return next(lives, False)

    stopped = threading.Event()
    watch_parent(42, stopped.set, interval_s=0.001, grace_s=None, getppid=lambda: 7, exists=exists)
    assert stopped.wait(10.0)
    assert asked == [42, 42, 42, 42]


def test_a_runner_that_exists_keeps_a_restarted_agent_running() -> None:
    stopped = threading.Event()
    # This test process stands for the runner: it exists, and it is not the parent's id.
    watch_parent(os.getpid(), stopped.set, interval_s=0.001, getppid=lambda: 1)
    time.sleep(0.1)
    assert not stopped.is_set()


def test_the_watcher_ends_when_the_agent_stopped_first() -> None:
    # An agent stopped by a signal or a shutdown request: the watcher must not outlive it
    # (a thread still waiting at the interpreter's exit keeps the agent's objects alive).
    orphaned: list[int] = []
    stopped = threading.Event()
    thread = watch_parent(42, lambda: orphaned.append(1), interval_s=0.05, getppid=lambda: 42,
                          stopped=stopped)  # fmt: skip
    stopped.set()
    thread.join(5.0)
    assert not thread.is_alive() and orphaned == []


def test_an_agent_loop_that_returns_leaves_no_watcher_behind() -> None:
    def watchers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("limbtree-parent-watch")]

    before = watchers()
    # This process's parent stands for the runner: alive all along.
    run_until_signalled(lambda: time.sleep(0.1), lambda: None, os.getppid())
    assert watchers() == before


def test_a_parent_pid_that_is_not_a_process_id_is_refused() -> None:
    with pytest.raises(ValueError, match="--parent-pid must be a positive process id"):
        watch_parent(0, lambda: None)


# -- end to end -------------------------------------------------------------------------------

LONG_MISSION = """\
mission: long_wait
clock: sim
rate_hz: 50
robots:
  pair: {robot: moonbot_zero}
limbs:
  arm: {robot: light_limb}
  heavy: {robot: heavy_limb}
tree:
  wait: {duration_s: 600}
"""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(entry.name))
    return out


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_the_agents_of_a_runner_killed_with_sigkill_end_by_themselves(tmp_path: Path) -> None:
    mission = tmp_path / "long.yaml"
    mission.write_text(LONG_MISSION)
    out = tmp_path / "run.out"
    # A runner killed with SIGKILL cannot remove its folders (the agents' logs and sockets):
    # they go in the test's own, where the next run finds them.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with out.open("wb") as sink:
        runner = subprocess.Popen(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless", "--speed", "1"],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(os.environ, TMPDIR=str(tmp)),
        )  # fmt: skip
    agents: list[int] = []
    try:
        deadline = time.monotonic() + 180.0  # a safety limit: agents start in seconds
        while b"running long_wait" not in out.read_bytes():
            assert runner.poll() is None, out.read_text()
            assert time.monotonic() < deadline, out.read_text()
            time.sleep(0.2)
        agents = _children(runner.pid)
        # One agent per plant (the quadruped, the arm, the heavy limb), sharing a process per
        # core (limbtree agents): each process watches the runner.
        assert len(agents) == min(3, agent_processes())
        runner.send_signal(signal.SIGKILL)
        runner.wait(30.0)
        deadline = time.monotonic() + 30.0  # the agents notice within a second or so
        while any(_alive(pid) for pid in agents) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in agents if _alive(pid)]
        # The killed run's folders (agent output, sockets) stay; the next run removes them,
        # and its own.
        left = sorted(p.name.rsplit("-", 1)[0] for p in tmp.iterdir())
        assert left in (["limbtree-agents", "limbtree-ipc"], ["limbtree-agents"]), left
        mission.write_text(LONG_MISSION.replace("duration_s: 600", "duration_s: 0.1"))
        subprocess.run(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless"],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=True,
            env=dict(os.environ, TMPDIR=str(tmp)),
        )  # fmt: skip
        assert list(tmp.iterdir()) == []
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(30.0)
        for pid in agents:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _answers(endpoint: str) -> bool:
    try:
        ping_endpoint(endpoint, timeout_s=1.0)
    except TransportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_an_agent_started_by_hand_outlives_the_shell_that_started_it(tmp_path: Path) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    pid_file = tmp_path / "agent.pid"
    command = (
        f"{sys.executable} -m limbtree agent --robot light_limb --bind {endpoint} "
        f"--driver sim > {tmp_path / 'agent.log'} 2>&1 & echo $! > {pid_file}"
    )
    subprocess.run(["sh", "-c", command], check=True, timeout=30)  # the shell exits at once
    pid = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 180.0  # a safety limit: an agent starts in seconds
        while not _answers(endpoint):
            assert _alive(pid) and time.monotonic() < deadline, (tmp_path / "agent.log").read_text()
        time.sleep(2.0)  # longer than the watcher's interval: it would have noticed
        assert _alive(pid) and _answers(endpoint)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGTERM)


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_an_agent_restarted_by_hand_stops_cleanly_when_its_runner_dies(tmp_path: Path) -> None:
    # Restarted with the runner's command line: it watches the runner's process, and when
    # that ends it stops with exit status 0 and a log free of interpreter-exit noise (it
    # once ended with "nanobind: leaked 15 instances!" from the kinematics library).
    runner = subprocess.Popen(["sleep", "300"])
    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    log = tmp_path / "agent.log"
    with log.open("wb") as sink:
        agent = subprocess.Popen(
            [sys.executable, "-m", "limbtree", "agent", "--robot", "light_limb", "--bind",
             endpoint, "--clock", "sim", "--parent-pid", str(runner.pid)],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180.0  # a safety limit: an agent starts in seconds
        while not _answers(endpoint):
            assert agent.poll() is None and time.monotonic() < deadline, log.read_text()
        runner.kill()
        runner.wait(30.0)
        assert agent.wait(30.0) == 0, log.read_text()
        text = log.read_text()
        assert "that started this agent is gone: stopping" in text
        assert "leaked" not in text and "Traceback" not in text, text
    finally:
        for process in (runner, agent):
            if process.poll() is None:
                process.kill()
                process.wait(30.0)
