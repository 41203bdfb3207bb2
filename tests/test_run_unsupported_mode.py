"""A command a limb never takes stops the run, naming the limb and what it accepts.

A ``mujoco`` plant's limbs take joint and impedance commands, not end-effector poses: a
``sync_move`` on one was refused at every tick (``unsupported_mode``) while the node waited,
the limb still, until its timeout (or for ever without one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_reach import FLOATING


def test_a_pose_move_on_a_limb_that_takes_joints_stops_the_run_at_once(tmp_path: Path) -> None:
    mission = tmp_path / "mission.yaml"
    mission.write_text(FLOATING)  # a sync_move's poses to a mujoco plant's arm
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(mission), "--headless",
         "--record", str(tmp_path / "run")],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0, done.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED"
    assert summary["sim_time_s"] < 1.0  # at once, not at a timeout (there is none)
    failure = summary["failure"]
    assert failure.startswith("limb arm.arm: its agent refused this run's command: ")
    assert "unsupported_mode: limb 'arm' (mirror_arm) does not accept 'ee_pose'" in failure
    assert "it accepts impedance, latch, joint_position, joint_torque, hold" in failure
