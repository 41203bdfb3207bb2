"""Exact against sampled hypersphere clamp, per call, side by side in one run.

Usage: ``python benchmarks/clamp.py [--repeat N]``

Each case is a synchronized move in the middle of a segment: n limbs, the paper's square side
(141 mm, a square of 200 mm diagonal) with p_e = 20 mm, in two flavours: translation only
(r_e = inf, the paper's Sec. III-B setting) and full SE(3) (a 0.8 rad turn, r_e = 0.5 rad).
Calls of the two methods are interleaved, so machine noise hits both alike, and the reported
figure is the best round of each (as timeit advises: slower rounds measure the machine,
not the code). Target (DESIGN.md): exact on SE(3)^6 at least 20x faster.
"""

from __future__ import annotations

import argparse
import math
import time
from functools import partial

import numpy as np

from limbtree.kinematics import Pose, SE3Metric, Trajectory, hypersphere_clamp


def _case(n: int, rotate: bool, seed: int) -> tuple[list[Pose], list[Pose], list[Pose], SE3Metric]:
    rng = np.random.default_rng(seed)
    starts, ends = [], []
    for _ in range(n):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        start = Pose(rng.normal(size=3) * 0.3, q)
        turn = Pose((0.1, 0.1, 0.0), (0.0, 0.0, math.sin(0.4), math.cos(0.4)))
        end = start @ turn if rotate else Pose(start.position + [0.1, 0.1, 0.0], q)
        starts.append(start)
        ends.append(end)
    states = [
        Pose(p.position + rng.normal(size=3) * 0.004, p.quaternion)
        for p in Trajectory(starts, ends)(0.4)
    ]
    metric = SE3Metric(p_e=0.02, r_e=0.5 if rotate else math.inf)
    return states, starts, ends, metric


def _time(call: object, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        call()  # type: ignore[operator]
    return (time.perf_counter() - start) / number


def main() -> None:
    """Print the per-call times and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (best of)")
    args = parser.parse_args()
    print(f"{'limbs':>5} {'case':<12} {'exact [us]':>11} {'sampled [us]':>13} {'ratio':>7}  t")
    for n in (1, 6, 64):
        for rotate in (False, True):
            states, starts, ends, metric = _case(n, rotate, seed=n)
            exact_t = hypersphere_clamp(states, starts, ends, metric).t
            sampled_t = hypersphere_clamp(states, starts, ends, metric, method="sampled").t
            number_exact = max(5, 2000 // n)
            number_sampled = max(2, 200 // n)
            exact_call = partial(hypersphere_clamp, states, starts, ends, metric)
            sampled_call = partial(exact_call, method="sampled")
            exact_times, sampled_times = [], []
            for _ in range(args.rounds):
                exact_times.append(_time(exact_call, number_exact))
                sampled_times.append(_time(sampled_call, number_sampled))
            exact = min(exact_times)
            sampled = min(sampled_times)
            label = "SE(3)" if rotate else "translation"
            print(
                f"{n:>5} {label:<12} {exact * 1e6:>11.1f} {sampled * 1e6:>13.1f} "
                f"{sampled / exact:>6.1f}x  exact {exact_t:.6f} sampled {sampled_t:.6f}"
            )


if __name__ == "__main__":
    main()
