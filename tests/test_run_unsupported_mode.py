"""A command a limb never takes stops the run, naming the limb and what it accepts.

A ``mujoco`` plant's limbs take joint and impedance commands, not end-effector poses: a
``sync_move`` on one was refused at every tick (``unsupported_mode``) while the node waited,
the limb still, until its timeout (or for ever without one). ``limbtree check`` refuses such
a node on a simulated robot (``test_targets.py``); a robot served by its own agent is
whatever plant that agent serves, so the run finds out only when the agent refuses.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: A sync_move on an agent of its own; the mission takes the robot for a kinematic one.
REMOTE = """\
mission: remote_mujoco
clock: sim
robots:
  arm: {{robot: mirror_arm, agent: '{endpoint}'}}
tree:
  sync_move:
    limbs: [arm]
    waypoints: [{{translation_mm: [0, 0, 20]}}]
"""


@pytest.mark.timeout(120)
def test_a_pose_move_on_a_limb_that_takes_joints_stops_the_run_at_once(tmp_path: Path) -> None:
    endpoint = f"ipc://{tmp_path}/arm"
    agent = subprocess.Popen(
        [sys.executable, "-m", "limbtree", "agent", "--robot", "mirror_arm",
         "--plant", "mujoco", "--clock", "sim", "--bind", endpoint],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        mission = tmp_path / "mission.yaml"
        mission.write_text(REMOTE.format(endpoint=endpoint))
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
             "--record", str(tmp_path / "run")],
            capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=100,
        )  # fmt: skip
    finally:
        agent.kill()
        agent.wait(timeout=10)
    assert done.returncode != 0, done.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED", done.stdout + done.stderr
    assert summary["sim_time_s"] < 1.0  # at once, not at a timeout (there is none)
    failure = summary["failure"]
    assert failure.startswith("limb arm.arm: its agent refused this run's command: ")
    assert "unsupported_mode: limb 'arm' (mirror_arm) does not accept 'ee_pose'" in failure
    assert "it accepts impedance, latch, joint_position, joint_torque, hold" in failure
