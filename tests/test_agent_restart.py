"""An agent killed with SIGKILL mid-mission and started again: the mission goes on (issue 12).

The agent runs as a limb on its own computer would: started by the test (its supervisor),
not by the runner, at a fixed address the mission names. Halfway through a move the test
kills it with SIGKILL and starts it again on the same address. The runner must notice the
silence (a ``link`` event; the limb holds), take the new process's state as soon as it
answers (``link_restored``, ``agent_restarted``), and finish the move, every command
within its hypersphere around the sensed state.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agent_processes import start_agent, wait_until_it_answers
from fake_driver import free_port_pair

from limbtree.trees.recorder import read_log

MISSION = """\
mission: restart
clock: sim
rate_hz: 25
limbs:
  arm: {{robot: light_limb, agent: "{endpoint}"}}
tree:
  sync_move:
    limbs: [arm]
    waypoints:
      - {{translation_mm: [60, 0, 0]}}
      - {{translation_mm: [60, 60, 0]}}
      - {{translation_mm: [0, 0, 0]}}
    max_speed_mm_s: 20
    stale_timeout_s: 60
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("again", ["light_limb", "heavy_limb"])
def test_a_mission_goes_on_after_its_agent_is_killed_and_started_again(
    tmp_path: Path, again: str
) -> None:
    """... and stops, the limb told to hold, if the agent comes back driving another robot."""
    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    mission = tmp_path / "restart.yaml"
    mission.write_text(MISSION.format(endpoint=endpoint))
    agent_log = tmp_path / "agent.log"
    run_out = tmp_path / "run.out"
    agents = [start_agent(endpoint, agent_log)]
    runner: subprocess.Popen[bytes] | None = None
    try:
        wait_until_it_answers(endpoint, agents[0], agent_log)
        with run_out.open("wb") as sink:
            runner = subprocess.Popen(
                [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
                 "--speed", "2", "--record", str(tmp_path / "rec")],
                stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        deadline = time.monotonic() + 120.0
        while b"running restart" not in run_out.read_bytes():
            assert runner.poll() is None, run_out.read_text()
            assert time.monotonic() < deadline, run_out.read_text()
            time.sleep(0.1)
        time.sleep(1.5)  # about 3 s of mission time: the arm is on its first segment
        agents[0].send_signal(signal.SIGKILL)
        agents[0].wait(30.0)
        time.sleep(0.5)
        agents.append(start_agent(endpoint, agent_log, again))
        code = runner.wait(240.0)
    finally:
        if runner is not None and runner.poll() is None:
            runner.kill()
            runner.wait(30.0)
        for agent in agents:
            if agent.poll() is None:
                agent.terminate()
                try:
                    agent.wait(10.0)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait(10.0)

    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    if again == "heavy_limb":  # another robot: its limb cannot be commanded as a light_limb
        assert code == 1, run_out.read_text()
        assert summary["outcome"] == "ABORTED", summary
        assert summary["failure"] == (
            "limb arm: its agent restarted and drives heavy_limb, but the mission declares "
            "light_limb: the run stops; start the right agent and run again"
        )
        assert "drives heavy_limb, but the mission declares light_limb" in run_out.read_text()
        return
    assert code == 0, run_out.read_text()
    assert summary["outcome"] == "SUCCESS", summary
    assert summary["max_command_state_distance"] <= 1.0 + 1e-9
    events = [e for tick in read_log(tmp_path / "rec" / "log.msgpack") for e in tick["events"]]
    kinds = [e["kind"] for e in events if e.get("limb") == "arm"]
    assert kinds.count("link") == 1 and kinds.count("agent_restarted") == 1, kinds
    lost = kinds.index("link")
    assert kinds.index("link_restored") > lost and kinds.index("agent_restarted") > lost
    (restart,) = [e for e in events if e["kind"] == "agent_restarted"]
    assert 1.0 < restart["t"] < summary["sim_time_s"]
