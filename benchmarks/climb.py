"""Seed 004's climbing: RAMP's planning against the swing, a cycle against real time, sweeps.

Usage: ``python benchmarks/climb.py [--quick] [--rounds N] [--cycles N] [--sweep-runs N]``

Measured side by side in one run (each core figure is its best round, as timeit advises:
slower rounds measure the machine, not the code):

- **Planning per swing** on HubRobo at its nominal stance, one leg's 80 mm stride on a
  fractal terrain: LRST (eq. 2 by SLSQP, with the terrain clearance), MD (eqs. 3-6 along
  the swing at 100 Hz) and the two together as a swing's first tick runs them, against the
  swing's own duration (1.75 s). The planner runs once per swing, inside the tick that starts
  it (``max_tick_s`` in the mission allows for it).
- **A mission as a user runs it**: ``limbtree run missions/asteroid_climb.yaml --headless
  --set planner=P --set rock_mm=0 --set cycles=N``, mission time over wall time from
  ``summary.json`` and the planning times the run recorded (``metrics.climb.steps``), for
  both planners. Target (issue 15): at least 2x faster than real time on 2 cores.
- **A sweep at --jobs 2 against --jobs 1**: ``limbtree sweep`` of the same short runs
  (``--sweep-runs`` of them, one cycle each), wall time of each. Target: near 2x on 2 cores
  (the runs are independent processes; each run is itself a runner and an agent in
  lockstep, so one run keeps about one core busy).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from limbtree.robots import load_robot
from limbtree.robots.floating import floating_tree
from limbtree.robots.terrain import fractal_terrain
from limbtree.skills.climbing import BezierSwing, PlanarLeg, optimise_swing, plan_swing_motion

ROOT = Path(__file__).resolve().parent.parent
MISSION = ROOT / "missions" / "asteroid_climb.yaml"
#: Seed 004 Sec. 3: a swing lasts 1.75 s and strides 80 mm with a 40 mm step height.
SWING_S = 1.75
STRIDE_M = 0.08
STEP_HEIGHT_M = 0.04
#: Issue 15: the climbing missions at least this many times faster than real time.
TARGET_REAL_TIME = 2.0


def best_of(rounds: int, work: Callable[[], object]) -> float:
    """The fastest of ``rounds`` timings of ``work()`` [s]."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def planning(rounds: int) -> list[tuple[str, float]]:
    """LRST, MD and both for each leg's swing: the best round [s] of each."""
    spec = load_robot("hubrobo")
    tree = floating_tree(spec)
    home = np.array(spec.limbs[0].postures["home"], dtype=np.float64)
    legs = {
        limb.name: PlanarLeg(
            tree,
            limb.name,
            f"{limb.name}.palm",
            lower=limb.lower,
            upper=limb.upper,
            reference=home,
        )
        for limb in spec.limbs
    }
    q = np.tile(home, len(legs))
    feet = {name: leg.fk(home)[0] for name, leg in legs.items()}
    terrain = fractal_terrain(3.0, 0.01, 0.03, 0.8, seed=0)
    base = np.eye(4)
    # the base over the feet, each foot on the terrain under it
    drop = {name: float(terrain.height(p[0], p[1])) for name, p in feet.items()}
    base[2, 3] = -feet[spec.limbs[0].name][2] + drop[spec.limbs[0].name]
    holds = {name: base[:3, :3] @ p + base[:3, 3] for name, p in feet.items()}
    rows: list[tuple[str, float]] = []
    for leg in ("leg_1", "leg_0"):
        start = holds[leg]
        end = start + np.array([STRIDE_M, 0.0, 0.0])
        end[2] = float(terrain.height(end[0], end[1]))
        supports = {name: p for name, p in holds.items() if name != leg}

        def lrst(leg: str = leg, start: np.ndarray = start, end: np.ndarray = end) -> object:
            return optimise_swing(
                tree, legs[leg], q, base, start, end, SWING_S, STEP_HEIGHT_M,
                terrain=terrain.height,
            )  # fmt: skip

        swing = optimise_swing(
            tree, legs[leg], q, base, start, end, SWING_S, STEP_HEIGHT_M, terrain=terrain.height
        ).swing

        def md(
            leg: str = leg, supports: dict[str, np.ndarray] = supports, swing: BezierSwing = swing
        ) -> object:
            return plan_swing_motion(tree, legs, q, base, supports, leg, swing)

        def both(lrst: Callable[[], object] = lrst, md: Callable[[], object] = md) -> None:
            lrst()
            md()

        rows.append((f"{leg}: LRST (eq. 2, SLSQP)", best_of(rounds, lrst)))
        rows.append((f"{leg}: MD along the swing (eqs. 3-6)", best_of(rounds, md)))
        rows.append((f"{leg}: the swing's plan (both)", best_of(rounds, both)))
    return rows


def run_mission(planner: str, cycles: int) -> dict[str, float | str]:
    """One headless run; its mission and wall time [s], outcome and swing planning [s]."""
    with tempfile.TemporaryDirectory() as record:
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "run", str(MISSION), "--headless",
             "--set", f"planner={planner}", "--set", "rock_mm=0", "--set", f"cycles={cycles}",
             "--record", record],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        path = Path(record) / "summary.json"
        if not path.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise SystemExit(f"asteroid_climb: no summary.json (exit {done.returncode}): {tail}")
        summary = json.loads(path.read_text())
    steps = summary["metrics"]["climb"]["steps"]
    plans = [float(s["planning_s"]) for s in steps if s.get("node") == "swing"]
    return {
        "outcome": str(summary["outcome"]),
        "sim_s": float(summary["sim_time_s"]),
        "wall_s": float(summary["wall_time_s"]),
        "plan_median_s": statistics.median(plans) if plans else float("nan"),
        "plan_max_s": max(plans, default=float("nan")),
    }


def sweep_wall(jobs: int, runs: int) -> float:
    """Wall time [s] of a fresh ``limbtree sweep`` of ``runs`` one-cycle RAMP runs."""
    out = Path(tempfile.mkdtemp(prefix="limbtree-bench-sweep-"))
    try:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "sweep", str(MISSION), "--set", "planner=ramp",
             "--set", "rock_mm=0", "--set", "cycles=1", "--set", f"terrain_seed=0..{runs - 1}",
             "--jobs", str(jobs), "--out", str(out / "sweep")],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if done.returncode != 0:
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise SystemExit(f"sweep --jobs {jobs} failed (exit {done.returncode}): {tail}")
        return wall
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no sweep")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per core figure")
    parser.add_argument("--cycles", type=int, default=1, help="gait cycles per mission run")
    parser.add_argument(
        "--sweep-runs", type=int, default=4, help="runs in each timed sweep (0: no sweep)"
    )
    args = parser.parse_args()
    if args.sweep_runs < 0:
        parser.error(f"--sweep-runs must be 0 (no sweep) or more, not {args.sweep_runs}")
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds must be 1 or more, not {args.rounds}")
    if args.cycles < 1:
        parser.error(f"--cycles must be 1 or more, not {args.cycles}")
    rounds = args.rounds or (2 if args.quick else 5)

    print(f"{'planning one swing (HubRobo, fractal terrain)':<46} {'best [ms]':>10} "
          f"{'of the swing':>13}")  # fmt: skip
    for label, seconds in planning(rounds):
        print(f"{label:<46} {seconds * 1e3:10.1f} {seconds / SWING_S:12.1%}")

    print()
    print(f"{'asteroid_climb, rock_mm=0':<30} {'outcome':>8} {'sim [s]':>8} {'wall [s]':>9} "
          f"{'x real time':>12} {'plan med/max [s]':>17}")  # fmt: skip
    for planner in ("baseline", "ramp"):
        r = run_mission(planner, args.cycles)
        pace = float(r["sim_s"]) / float(r["wall_s"])
        mark = "met" if pace >= TARGET_REAL_TIME else "missed"
        print(
            f"{'planner=' + planner:<30} {r['outcome']!s:>8} {r['sim_s']:8.2f} "
            f"{r['wall_s']:9.2f} {pace:11.2f}x {r['plan_median_s']:8.2f}/{r['plan_max_s']:.2f}"
            f"   (target {TARGET_REAL_TIME:.0f}x: {mark})"
        )

    if args.quick or args.sweep_runs == 0:
        return
    print()
    one = sweep_wall(1, args.sweep_runs)
    two = sweep_wall(2, args.sweep_runs)
    print(f"sweep of {args.sweep_runs} one-cycle RAMP runs: --jobs 1 {one:.1f} s, --jobs 2 "
          f"{two:.1f} s: {one / two:.2f}x (target: near 2x on 2 cores)")  # fmt: skip


if __name__ == "__main__":
    main()
