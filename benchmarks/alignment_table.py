"""Seed 002 Table I: both alignment controllers on both limbs, three seeds each, sim clock.

Usage: ``python benchmarks/alignment_table.py [--seeds 1 2 3] [--jobs 2]``

Runs ``missions/self_assembly_minimal.yaml`` (MoonBot Limb V2) and
``missions/self_assembly_dragon.yaml`` (Limb V1) with ``--set controller_version=1`` and
``=2``, each with seeds 1 to 3, through ``limbtree run`` as a user would, and prints the
layout of the paper's Table I from each run's ``metrics.align``: alignment duration, final
Δd and final Δθ, mean ± standard deviation; then how much faster Version 2 was. The paper's
shape: both converge to millimetre level (Δd <= 10 mm, Δθ <= 2 deg), Version 2 is 15 to 40%
faster than Version 1 on each limb, and Version 1's path wobbles less. The path columns come
from the end-effector path the motion capture saw, sampled at 10 Hz as the paper logs it:
its length, its RMS distance from the straight line between its ends (how direct it is), and
its sideways wobble (the RMS of its deviation from a 0.5 s moving average, across that line).

``--plot FILE`` also draws the paper's Fig. 4 into FILE (a PNG): one panel per limb and
version, each trial's approach path as the capture saw it, unrolled along the straight line
from its start to its goal (distance off the line against distance along it), so directness
and wobble compare across the four conditions at one scale.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

MISSIONS = Path(__file__).resolve().parent.parent / "missions"
CASES = (("Limb V2 (Minimal)", "self_assembly_minimal.yaml"),
         ("Limb V1 (Dragon)", "self_assembly_dragon.yaml"))  # fmt: skip
#: The approach alignment's node name in both missions (stage 2).
APPROACH = "2 align 150 mm above the grasp point"


def run(mission: str, version: int, seed: int, root: Path) -> dict[str, Any]:
    """One run; its summary (with ``_ok`` False when it did not succeed)."""
    record = root / f"{Path(mission).stem}-v{version}-s{seed}"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "run", str(MISSIONS / mission), "--headless",
         "--auto-confirm", "--seed", str(seed), "--set", f"controller_version={version}",
         "--record", str(record)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    path = record / "summary.json"
    summary: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    summary["_ok"] = done.returncode == 0
    summary["_record"] = record
    summary["_tail"] = (done.stdout + done.stderr).strip().splitlines()[-3:]
    return summary


def figure_4(results: list[tuple[tuple[str, str, int, int], dict[str, Any]]], out: Path) -> None:
    """Each trial's approach path, unrolled along its start-to-goal line, per limb and version."""
    from matplotlib.figure import Figure

    from limbtree.trees.report import approach_path, read_run

    figure = Figure(figsize=(11, 7), layout="constrained")
    panels = figure.subplots(2, 2, sharex=True, sharey=True)
    for row, (label, _) in enumerate(CASES):
        for col, version in enumerate((1, 2)):
            axes = panels[row][col]
            for (lab, _, ver, seed), summary in results:
                record = summary.get("_record")
                if lab != label or ver != version or not summary["_ok"] or record is None:
                    continue
                skill = read_run(record / "log.msgpack").skills.get(APPROACH)
                approach = None if skill is None else approach_path(skill)
                if approach is not None:
                    along, across = approach.unrolled()
                    axes.plot(along, across, lw=1.0, label=f"seed {seed}")
            axes.set_title(f"{label}, Version {version}", fontsize="medium")
            axes.grid(True, alpha=0.3)
            axes.legend(loc="upper right", fontsize="small")
    for axes in panels[1]:
        axes.set_xlabel("along the line from start to goal [mm]")
    for axes in (panels[0][0], panels[1][0]):
        axes.set_ylabel("off the line [mm]")
    figure.suptitle("Seed 002 Fig. 4: approach paths as the capture saw them")
    figure.savefig(out, dpi=110)


def cell(values: list[float], digits: int = 1) -> str:
    """``mean ± sd`` of the values."""
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.{digits}f} ± {sd:.{digits}f}"


def main() -> None:
    """Run every case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=2, help="runs at once")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="draw Fig. 4 into FILE (PNG)")
    args = parser.parse_args()
    jobs = [(label, mission, version, seed) for label, mission in CASES for version in (1, 2)
            for seed in args.seeds]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: (j, run(j[1], j[2], j[3], Path(tmp))), jobs))
        if args.plot is not None:
            figure_4(results, args.plot)
            print(f"Fig. 4: {args.plot}")
    print(f"{'limb':<18} {'ver':>3} {'duration [s]':>14} {'final Δd [mm]':>14} "
          f"{'final Δθ [deg]':>15} {'path [mm]':>10} {'off line [mm]':>14} "
          f"{'wobble [mm]':>12} {'ok':>5}")  # fmt: skip
    durations: dict[tuple[str, int], float] = {}
    for label, _ in CASES:
        for version in (1, 2):
            rows = [s for (lab, _, ver, _), s in results if lab == label and ver == version]
            ok = [s for s in rows if s["_ok"]]
            align = [s.get("metrics", {}).get("align", {}) for s in ok]
            duration = [a["duration_s"] for a in align if a.get("duration_s") is not None]
            dd = [a["final_dd_mm"] for a in align if a.get("final_dd_mm") is not None]
            dth = [a["final_dtheta_deg"] for a in align if a.get("final_dtheta_deg") is not None]
            path = [a["path_length_mm"] for a in align if a.get("path_length_mm") is not None]
            off = [a["deviation_rms_mm"] for a in align if a.get("deviation_rms_mm") is not None]
            wobble = [a["wobble_rms_mm"] for a in align if a.get("wobble_rms_mm") is not None]
            if duration:
                durations[(label, version)] = statistics.fmean(duration)
            print(f"{label:<18} {version:>3} {cell(duration):>14} {cell(dd):>14} "
                  f"{cell(dth, 2):>15} {cell(path, 0):>10} {cell(off):>14} {cell(wobble):>12} "
                  f"{len(ok)}/{len(rows):<3}")  # fmt: skip
            for s in rows:
                if not s["_ok"]:
                    print(f"    failed run: {' | '.join(s['_tail'])}")
    for label, _ in CASES:
        v1, v2 = durations.get((label, 1)), durations.get((label, 2))
        if v1 and v2:
            print(f"{label}: Version 2 is {100 * (1 - v2 / v1):.0f}% faster than Version 1")


if __name__ == "__main__":
    main()
