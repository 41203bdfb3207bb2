"""``limbtree run`` stopped by a signal, mid-run or during the agents' start-up.

Each test starts ``limbtree run`` as a process (with a real simulated agent on loopback),
signals it, and checks what it leaves: a record that says ABORTED and why, a readable log,
no agent process and no temporary folder.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from limbtree.trees.recorder import read_header, read_log

#: Each test starts an agent process: seconds each.
pytestmark = pytest.mark.slow

#: A safety limit only (a busy machine takes long to start an agent), never a measured time.
LIMIT_S = 180.0

MISSION = """\
mission: long_wait
clock: sim
rate_hz: 50
limbs:
  arm: {robot: light_limb}
tree:
  wait: {duration_s: 3600}
"""


class Run:
    """``limbtree run`` in a process whose output lines are read as they come."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        mission = tmp_path / "long_wait.yaml"
        mission.write_text(MISSION)
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir()
        env = dict(os.environ, TMPDIR=str(self.tmp), PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, env=env, cwd=tmp_path,
        )  # fmt: skip
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, text: str) -> None:
        """Read lines until one contains ``text``."""
        while True:
            line = self.lines.get(timeout=LIMIT_S)
            if line is None:
                raise AssertionError(f"the run ended before {text!r}:\n{''.join(self.output)}")
            self.output.append(line)
            if text in line:
                return

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def end(self) -> str:
        """Wait for the process to exit; its whole output."""
        self.process.wait(timeout=LIMIT_S)
        self._reader.join(timeout=LIMIT_S)
        while (line := self.lines.get_nowait() if not self.lines.empty() else None) is not None:
            self.output.append(line)
        return "".join(self.output)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[list[Run]]:
    runs: list[Run] = []
    yield runs
    for run in runs:
        run.kill()


def processes_holding(path: Path) -> list[int]:
    """The processes with a file open under ``path`` (an agent writes its log there)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            targets = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue
        if any(target.startswith(str(path)) for target in targets):
            pids.append(int(entry.name))
    return pids


def recorded(tmp_path: Path, running: list[Run], speed: str) -> tuple[Run, Path]:
    """The mission run at ``--speed`` into a record; the run and the record's folder."""
    record = tmp_path / "rec"
    run = Run(tmp_path, "--speed", speed, "--record", str(record))
    running.append(run)
    return run, record


def aborted(run: Run, record: Path) -> dict[str, Any]:
    """The summary of a run that ended ABORTED (exit status 1)."""
    out = run.end()
    assert run.process.returncode == 1, out
    summary: dict[str, Any] = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED", summary
    summary["_out"] = out
    return summary


def test_sigterm_mid_run_aborts_after_scripted_pause_and_resume(tmp_path, running):
    run, record = recorded(tmp_path, running, "1")
    run.wait_for("running long_wait")
    run.say("p")
    run.wait_for("paused")
    run.say("r")
    run.wait_for("resumed")
    run.process.send_signal(signal.SIGTERM)
    summary = aborted(run, record)
    assert "interrupted (SIGTERM): limbs hold, record closed" in summary["_out"]
    assert summary["failure"] == "interrupted (SIGTERM)"
    assert read_header(record / "log.msgpack") is not None
    events = [e for tick in read_log(record / "log.msgpack") for e in tick["events"]]
    assert [e["kind"] for e in events] == ["paused", "resumed", "aborted"], events
    assert processes_holding(tmp_path) == []
    assert list(run.tmp.iterdir()) == []


@pytest.mark.parametrize("how", ["SIGTERM", "a"])
def test_a_slowly_paced_run_stops_at_once_between_two_ticks(tmp_path, running, how):
    # --speed 1e-6: the next tick is due in 5.5 hours; the abort must not wait for it
    run, record = recorded(tmp_path, running, "1e-6")
    run.wait_for("tick      0")
    started = time.monotonic()
    if how == "SIGTERM":
        run.process.send_signal(signal.SIGTERM)
    else:
        run.say("a")
    summary = aborted(run, record)
    assert time.monotonic() - started < 30.0  # (a safety limit: 0.13 s measured, to exit)
    assert summary["ticks"] == 1, summary


def test_a_run_paused_from_a_pipe_that_then_closes_aborts_saying_why(tmp_path, running):
    # (nothing could ever resume it: it sat paused for ever)
    run, record = recorded(tmp_path, running, "1")
    run.wait_for("running long_wait")
    run.say("p")
    run.wait_for("paused")
    assert run.process.stdin is not None
    run.process.stdin.close()
    summary = aborted(run, record)
    assert summary["failure"].startswith("paused, and stdin, the only way to resume, was closed")


def test_ctrl_c_during_start_up_leaves_no_agent_nor_temporary_folder(tmp_path, running):
    run = Run(tmp_path)
    running.append(run)
    run.wait_for("starting 1 simulated agent:")
    run.process.send_signal(signal.SIGINT)
    out = run.end()
    assert run.process.returncode == 1, out
    assert "ABORTED: long_wait" in out
    assert "interrupted (Ctrl-C) while starting the agents" in out
    assert processes_holding(tmp_path) == []
    assert list(run.tmp.iterdir()) == []  # the agents' output folder was removed


def test_sigterm_during_the_agents_start_up_records_an_aborted_run(tmp_path, running):
    record = tmp_path / "rec"
    run = Run(tmp_path, "--record", str(record))
    running.append(run)
    run.wait_for("starting 1 simulated agent:")
    run.process.send_signal(signal.SIGTERM)
    summary = aborted(run, record)
    assert summary["failure"] == "interrupted (SIGTERM) while starting the agents"
    assert summary["ticks"] == 0
    # the start-up it spent is said (the run loop's wall time is next to none)
    assert summary["startup_s"] > 0.0
    assert f"0 ticks; stopped after {summary['startup_s']:.2f} s of start-up)" in summary["_out"]
    header = read_header(record / "log.msgpack")
    assert header is not None and header["tree"]["type"] == "wait"
    (last,) = list(read_log(record / "log.msgpack"))
    assert [e["kind"] for e in last["events"]] == ["aborted"]
    assert processes_holding(tmp_path) == []


def test_run_with_gates_and_stdin_not_a_terminal_exits_before_starting_anything(tmp_path):
    mission = Path(__file__).resolve().parent.parent / "missions" / "self_assembly_minimal.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
         "--record", str(tmp_path / "rec")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=LIMIT_S,
    )  # fmt: skip
    assert done.returncode == 1
    assert "starting" not in done.stdout
    assert "no one can answer the mission's operator gates" in done.stderr
    assert "--auto-confirm" in done.stderr
    assert done.stderr.count('operator_gate "Operator gate" asks') == 3
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize("during", ["building the tree", "opening the record"])
def test_a_signal_before_the_first_tick_leaves_a_whole_record(tmp_path, monkeypatch, during):
    """SIGTERM noted after the agents answered but before the first tick: header, abort, summary.

    (The runner opens its log when it is made; a signal noted before its first tick once
    left that log empty and no summary.)
    """
    from limbtree.trees import app
    from limbtree.trees.stream import RunOutcome

    sent: list[int] = []

    def signalled(original):
        def wrapper(*args, **kwargs):
            made = original(*args, **kwargs)
            if not sent:  # (the aborted run's record builds its tree again)
                sent.append(signal.SIGTERM)
                os.kill(os.getpid(), signal.SIGTERM)  # noted only: the run stops at a safe point
            return made

        return wrapper

    target = "build_tree" if during == "building the tree" else "Runner"
    monkeypatch.setattr(app, target, signalled(getattr(app, target)))
    mission = tmp_path / "long_wait.yaml"
    mission.write_text(MISSION)
    record = tmp_path / "rec"
    out = io.StringIO()
    request = app.RunRequest(mission=mission, headless=True, record=record)
    assert app.run_mission(request, out) is RunOutcome.ABORTED
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED", out.getvalue()
    assert summary["failure"].startswith("interrupted (SIGTERM)"), summary["failure"]
    header = read_header(record / "log.msgpack")
    assert header is not None and header["tree"]["type"] == "wait"
    (last,) = list(read_log(record / "log.msgpack"))
    assert [e["kind"] for e in last["events"]] == ["aborted"]


def test_a_simulated_agent_killed_mid_run_stops_the_run_at_once(tmp_path, running):
    """One of the run's own agents dies: its limbs cannot come back, so the run stops (it
    used to wait 2 s for it at every tick, for minutes, until the skill timed out)."""
    record = tmp_path / "rec"
    run = Run(tmp_path, "--speed", "1", "--record", str(record))
    running.append(run)
    run.wait_for("running long_wait")
    # The agent's output file is open in the agents/ folder (in the runner too).
    (agent,) = [pid for pid in processes_holding(record / "agents") if pid != run.process.pid]
    os.kill(agent, signal.SIGKILL)
    out = run.end()
    assert run.process.returncode == 1, out
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED"
    assert summary["failure"].startswith("the simulated agent of arm was killed by SIGKILL; see ")
    assert summary["failure"].endswith(": its limbs cannot answer again, the run stops")
    # the line says once that the limbs hold (it said "(limbs told to hold): limbs hold")
    assert "the run stops: limbs hold, record closed" in out and "told to hold" not in out
    # the last map shows the dead agent's limb stale (its last state was not old enough yet)
    *_, last = read_log(record / "log.msgpack")
    assert [e["kind"] for e in last["events"]] == ["aborted"]
    assert last["limbs"]["arm"]["stale"] is True and last["limbs"]["arm"]["state"] is None
    # (killed in the run's first seconds, it stopped then: the mission would wait 3600 s)
    assert summary["sim_time_s"] < 10
    # It closes as any aborted run does, saying why as it stops and in its summary, not a
    # third time as the command's error (which came instead of the summary lines).
    assert "ABORTED: long_wait in " in out and f"record: {record}" in out
    assert out.count("killed by SIGKILL") == 2 and "limbtree run:" not in out


def test_a_simulated_agent_killed_in_a_run_without_record_keeps_the_output_it_names(
    tmp_path, running
):
    """Without --record the agents write into a temporary folder, removed at the end: the
    message said "see /tmp/limbtree-agents-.../agent-arm.log", a file already gone."""
    run = Run(tmp_path, "--speed", "1")
    running.append(run)
    run.wait_for("running long_wait")
    (agent,) = [pid for pid in processes_holding(run.tmp) if pid != run.process.pid]
    os.kill(agent, signal.SIGKILL)
    out = run.end()
    assert run.process.returncode == 1, out
    named = re.search(r"see (\S+\.log)", out)
    assert named is not None, out
    assert Path(named[1]).is_file(), out
    assert Path(named[1]).is_relative_to(run.tmp)


def test_a_signal_while_the_command_imports_its_libraries_aborts_the_run_with_a_record(
    tmp_path, monkeypatch, capsys
):
    """Ctrl-C or SIGTERM in a run's first seconds (its libraries importing, the mission
    loading) ended the process with no record and no word of the run; it is now noted, and
    the run is aborted before any agent starts, its record saying why."""
    from limbtree.trees import app
    from limbtree.trees.cli import main

    original = app.load

    def load(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # (before the run's own handlers: the command's)
        return original(*args, **kwargs)

    monkeypatch.setattr(app, "load", load)
    mission = tmp_path / "long_wait.yaml"
    mission.write_text(MISSION)
    record = tmp_path / "rec"
    assert main(["run", str(mission), "--headless", "--record", str(record)]) == 1
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and summary["ticks"] == 0
    assert summary["failure"] == "interrupted (Ctrl-C) while starting the agents"
    assert "ABORTED: long_wait in 0.00 s mission time" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # (restored)
