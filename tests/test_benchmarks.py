"""Every benchmark in ``benchmarks/`` still runs and prints its table (smoke runs).

Performance goals are checked by the benchmarks themselves, side by side in one run, never
by timings here (the machines are shared and noisy): these runs are as short as each
script allows and assert only that it ran to its end and printed what it measures, so a
change that breaks a benchmark shows in CI, not on the day someone needs its figures.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from limbtree.trees.web.chromium import chromium_path

pytestmark = pytest.mark.slow

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

#: script, the shortest arguments, a line its output must have.
SMOKE = [
    ("clamp.py", ["--rounds", "1"], "exact [us]  sampled [us]   ratio"),
    ("sim_step.py", ["--rounds", "1", "--ticks", "10"], "ee_pose [us]  hold [us]"),
    ("tick.py", ["--limbs", "6", "--seconds", "0.5"], "limbs clock target Hz   ticks/s"),
    ("transport.py", ["--n", "200", "--blocks", "2", "--seconds", "0.2"], "x bare pyzmq"),
    ("climb.py", ["--quick", "--rounds", "1"], "planner=ramp"),
    ("dynamics.py", ["--quick", "--rounds", "1", "--calls", "10"], "plant substep vs MuJoCo"),
    ("alignment_table.py", ["--seeds", "1", "--jobs", "1"], "Version 2 is"),
    ("web.py", ["--pairs", "1", "--seconds", "2", "--record-ticks", "100"], "scrubber redraw"),
]


def test_every_benchmark_has_a_smoke_run():
    assert sorted(p.name for p in BENCHMARKS.glob("*.py")) == sorted(s for s, _, _ in SMOKE)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("script", "args", "said"), SMOKE, ids=[s for s, _, _ in SMOKE])
def test_a_benchmark_runs_to_its_end(script, args, said):
    if script == "web.py" and chromium_path() is None:
        if os.environ.get("LIMBTREE_BROWSER_TESTS") == "required":
            pytest.fail("no Chromium for benchmarks/web.py: apt-get install chromium")
        pytest.skip("no Chromium for benchmarks/web.py: apt-get install chromium")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True, text=True, timeout=280, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert said in out, out
    assert "Traceback" not in out, out
