"""Issue 19 part 2: looping moves whose lap fits in the hypersphere end their ticks.

Each mission is a ``parallel`` (policy ``one``) of a 1 s ``wait`` and a looping ``sync_move``
whose every segment lies inside the hypersphere. Before the fix the move went round for ever
inside its first tick; now it advances at most one lap per tick, so the wait ends the run
with SUCCESS, in both clocks, as ``limbtree run`` is used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from limbtree.trees.recorder import read_log

#: Each case starts an agent process: seconds each.
pytestmark = pytest.mark.slow

MISSIONS = Path(__file__).resolve().parent / "missions"

LOOPS = ("loop_inside_sphere.yaml", "loop_same_point.yaml", "loop_small_rotation.yaml")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("clock", ["sim", "real"])
@pytest.mark.parametrize("mission", LOOPS)
def test_a_looping_move_inside_its_hypersphere_lets_the_wait_end_the_run(
    mission: str, clock: str, tmp_path: Path
) -> None:
    record = tmp_path / "record"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(MISSIONS / mission), "--headless",
         "--clock", clock, "--record", str(record)],
        capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    summary = json.loads((record / "summary.json").read_text())
    assert done.returncode == 0 and summary["outcome"] == "SUCCESS", done.stdout + done.stderr
    assert summary["sim_time_s"] == pytest.approx(1.0, abs=0.1)
    ticks = [t for t in read_log(record / "log.msgpack") if t.get("kind") == "tick"]
    assert ticks[-1]["nodes"]["0.0"] == "SUCCESS"  # the wait ended it
    laps = [t["skills"]["0.1"]["laps"] for t in ticks if "0.1" in t["skills"]]
    assert len(laps) >= 10
    assert all(0 <= b - a <= 1 for a, b in zip([0, *laps], laps, strict=False))
