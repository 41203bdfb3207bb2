"""Per-tick cost of a simulated limb, in-process: what one lockstep tick of a sim agent does.

Usage: ``python benchmarks/sim_step.py [--rounds N] [--ticks N]``

For each kind of limb of the robustness mission (``heavy_limb``, ``light_limb``, a
``moonbot_zero`` leg), two cases at 25 Hz:

- ``ee_pose``: ``command(EE_POSE, a 1 mm move from the current pose)`` + ``advance(t)`` +
  ``state()``, the moves turning in a circle so the limb stays near where it started;
- ``hold``: ``advance(t)`` + ``state()`` with no command.

Each round runs ``--ticks`` ticks on one limb; the figure is the best round [us per tick] (as
timeit advises: slower rounds measure the machine, not the code). Targets: heavy_limb at most
120 us with an ``ee_pose`` command, at most 60 us holding. The last line adds the six limbs of
``missions/robustness.yaml`` up into one tick of that mission.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

from limbtree.robots import SimulatedLimb
from limbtree.transport.driver import CommandMode

#: The limb kinds of the robustness mission, and how many of each it has.
LIMBS: tuple[tuple[str, str | None, int], ...] = (
    ("heavy_limb", None, 1),
    ("light_limb", None, 1),
    ("moonbot_zero", "leg_0", 4),
)
#: Tick period [s] (25 Hz, as the robustness mission).
DT = 0.04
#: Size of each commanded move [m].
STEP_M = 0.001


def _ee_pose_tick(limb: SimulatedLimb) -> Callable[[int], None]:
    (ee,) = limb.describe().end_effectors

    def tick(k: int) -> None:
        x, y, z, *quaternion = limb.state().ee_poses[ee]
        angle = 0.1 * k
        pose = [x + STEP_M * math.cos(angle), y + STEP_M * math.sin(angle), z, *quaternion]
        limb.command(CommandMode.EE_POSE, {"ee": ee, "pose": pose})
        limb.advance(k * DT)
        limb.state()

    return tick


def _hold_tick(limb: SimulatedLimb) -> Callable[[int], None]:
    def tick(k: int) -> None:
        limb.advance(k * DT)
        limb.state()

    return tick


CASES: dict[str, Callable[[SimulatedLimb], Callable[[int], None]]] = {
    "ee_pose": _ee_pose_tick,
    "hold": _hold_tick,
}


def best_us_per_tick(
    robot: str, limb_name: str | None, case: str, *, rounds: int, ticks: int
) -> float:
    """The best round's time per tick [us] of ``case`` on a fresh limb."""
    limb = SimulatedLimb(robot, limb_name, seed=0)
    tick = CASES[case](limb)
    k = 0
    tick(k)  # the first tick reads the limb at t = 0: not a steady-state tick
    best = math.inf
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(ticks):
            k += 1
            tick(k)
        best = min(best, (time.perf_counter() - start) / ticks)
    return best * 1e6


def main() -> None:
    """Print the per-tick times."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per case (best of)")
    parser.add_argument("--ticks", type=int, default=300, help="ticks per round")
    args = parser.parse_args()
    print(f"{'limb':<20} {'ee_pose [us]':>13} {'hold [us]':>10}")
    mission = dict.fromkeys(CASES, 0.0)
    for robot, limb_name, count in LIMBS:
        figures = {
            case: best_us_per_tick(robot, limb_name, case, rounds=args.rounds, ticks=args.ticks)
            for case in CASES
        }
        for case, us in figures.items():
            mission[case] += count * us
        label = robot if limb_name is None else f"{robot}/{limb_name}"
        print(f"{label:<20} {figures['ee_pose']:>13.1f} {figures['hold']:>10.1f}")
    print(f"{'robustness (6 limbs)':<20} {mission['ee_pose']:>13.1f} {mission['hold']:>10.1f}")


if __name__ == "__main__":
    main()
