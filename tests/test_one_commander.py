"""Two runners on one limb's agent: the second is refused and stops; the first goes on.

A limb takes one commander at a time (``commanded_elsewhere``, docs/protocol.md): the agent
refuses a client's command within another client's lease (1 s after its last command, longer
for a slow client).
End to end: an agent started by hand in the real clock, one ``limbtree run`` moving its limb,
then a second one started on the same agent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_processes import start_agent, wait_until_it_answers
from fake_driver import free_port_pair

MISSION = """\
mission: {name}
clock: real
rate_hz: {rate_hz}
limbs:
  arm: {{robot: light_limb, agent: "{endpoint}"}}
tree:
  sync_move:
    limbs: [arm]
    waypoints: [{{translation_mm: [{dx}, 0, 0]}}, {{translation_mm: [0, 0, 0]}}]
    max_speed_mm_s: {speed}
    timeout_s: 60
"""


class Runs:
    """``limbtree run`` processes of missions on one real-clock agent the test started."""

    def __init__(self, tmp_path: Path, endpoint: str) -> None:
        self.tmp_path, self.endpoint = tmp_path, endpoint
        self.processes: list[subprocess.Popen[str]] = []

    def start(
        self, name: str, dx: int, speed: float = 20.0, rate_hz: float = 25
    ) -> subprocess.Popen[str]:
        mission = self.tmp_path / f"{name}.yaml"
        text = MISSION.format(
            name=name, endpoint=self.endpoint, dx=dx, speed=speed, rate_hz=rate_hz
        )
        mission.write_text(text)
        process = subprocess.Popen(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
             "--record", str(self.tmp_path / name)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            text=True,
        )  # fmt: skip
        self.processes.append(process)
        return process


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[Runs]:
    """A real-clock agent of one ``arm`` (started as its own computer would), and its runs."""
    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    log = tmp_path / "agent.log"
    agent = start_agent(endpoint, log, clock="real")
    launched = Runs(tmp_path, endpoint)
    try:
        wait_until_it_answers(endpoint, agent, log)
        yield launched
    finally:
        for process in [*launched.processes, agent]:
            if process.poll() is None:
                process.kill()
                process.wait(30)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_second_runner_on_a_commanded_limb_is_refused_and_stops(
    tmp_path: Path, runs: Runs
) -> None:
    # (slow: about 10 s of moving, so it still commands the arm however long the second run
    # takes to start on a loaded machine)
    first = runs.start("first", 40, speed=8.0)
    deadline = time.monotonic() + 120
    while (
        not (tmp_path / "first" / "log.msgpack").exists()
        or (tmp_path / "first" / "log.msgpack").stat().st_size < 20_000
    ):  # it is ticking, commanding the arm
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    second = runs.start("second", -40)
    second_out, _ = second.communicate(timeout=120)
    first_out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, first_out
    assert second.returncode == 1, second_out
    summary = json.loads((tmp_path / "second" / "summary.json").read_text())
    failure = summary["failure"]
    # (refused at its claim of the arm before its first tick: it moved nothing)
    assert failure.startswith("limb arm: another client commands it, its agent refused this ")
    assert "commanded_elsewhere" in failure and "the run does not start" in failure
    assert "stop the other client" in failure and summary["ticks"] == 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_commands_at_once_a_limb_the_run_before_it_released(
    tmp_path: Path, runs: Runs
) -> None:
    """A run releases the limbs of agents it did not start as it ends (``release``).

    The first run ticks at 0.5 Hz, so its lease is 2.5 times its pace: 5 s after its last
    command. Without the release, the next run, started as the first ends, would be refused.
    """
    first = runs.start("first", 60, rate_hz=0.5)
    first_out, _ = first.communicate(timeout=120)
    second = runs.start("second", -40)
    second_out, _ = second.communicate(timeout=120)
    assert first.returncode == 0, first_out
    assert second.returncode == 0, second_out
    summary = json.loads((tmp_path / "first" / "summary.json").read_text())
    assert summary["ticks"] >= 3  # (it commanded the arm at its slow pace)
