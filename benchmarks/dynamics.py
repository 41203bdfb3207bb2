"""Seed 003's 1 kHz loop on the ``mujoco`` plant against MuJoCo's own step, and the missions' pace.

Usage: ``python benchmarks/dynamics.py [--quick] [--rounds N] [--calls N] [--runs N]``

Measured side by side in one run (each round times both sides; a figure is its best round, as
timeit advises: slower rounds measure the machine, not the code):

- ``UnifiedImpedance.step`` on the input the plant builds (``trusted_input``: joint state,
  latched frames' world poses, task frames, KE from MuJoCo) against ``mujoco.mj_step`` on the
  same model and state: morphology A (``mirror_arm``, E1 latched on tile 0, E2 driven to
  tile 1: one latch, one task) and C (``mirror_mar``, both E2 latched on tiles, the torso's
  E0 driven as in ``mar_torso``: two latches, the torso task);
- one plant substep, ``MujocoPlant.advance`` by 1 ms (controller, speed limiter, MuJoCo and
  the state sample), and a substep within a 50 Hz tick (``advance`` by 20 ms, per
  substep), against ``mj_step``;
- the seed-003 missions run as a user runs them (``limbtree run M --headless --record
  DIR``): mission time over wall time, from ``summary.json`` (best of ``--runs``). Target
  (DESIGN.md): every seed-003 mission at least 2x faster than real time. ``--quick`` runs
  ``mar_walk_1arm`` only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from limbtree.kinematics.pose import Pose
from limbtree.robots.assembly import WorldModule
from limbtree.robots.floating import floating_tree
from limbtree.robots.mujoco_plant import MujocoConfig, MujocoPlant
from limbtree.robots.registry import load_robot
from limbtree.skills.dynamics import (
    ImpedanceGains,
    ImpedanceInput,
    TaskFrame,
    UnifiedImpedance,
    trusted_input,
)
from limbtree.transport.driver import CommandMode

MISSIONS = Path(__file__).resolve().parent.parent / "missions"
#: The seed-003 missions; ``--quick`` runs the first only.
SEED_003 = ("mar_walk_1arm.yaml", "mar_torso.yaml", "mar_walk_2arm.yaml")
#: DESIGN.md: seeds 003 and 004 at least this many times faster than real time.
TARGET_REAL_TIME = 2.0
#: A tile's SI frame relative to a level tile's centre turned by 180 deg about x (mirror_tile).
TILE_HALF_THICKNESS_M = 0.025
#: mar_torso's gains and goal (80 mm forward, 50 mm up, 5 deg of yaw, relative to the start).
TORSO_GAINS = ImpedanceGains(400.0, 200.0, 800.0, 100.0, 5.0)
TORSO_MOVE = ((0.08, 0.0, 0.05), 5.0)


@dataclass
class Rig:
    """A plant in mid-motion and what its 1 kHz loop computes, for one morphology."""

    label: str
    plant: MujocoPlant
    controller: UnifiedImpedance
    inp: ImpedanceInput
    data: mujoco.MjData  # a copy of the plant's state, for bare mj_step


def tiles(n: int, spacing_m: float) -> list[WorldModule]:
    """``n`` level tiles along +x; their SIs on the plane z = 0."""
    level = [np.array([spacing_m * i, 0.0, -TILE_HALF_THICKNESS_M]) for i in range(n)]
    return [WorldModule(f"tile{i}", "mirror_tile", Pose(p)) for i, p in enumerate(level)]


def si_matrix(x: float) -> np.ndarray:
    """The world pose of the SI of a level tile at ``x`` [m]: z down, into the tile."""
    out = np.eye(4)
    out[:3, :3] = np.diag([1.0, -1.0, -1.0])
    out[0, 3] = x
    return out


def _rig(
    label: str,
    plant: MujocoPlant,
    latched: dict[str, np.ndarray],
    task: TaskFrame,
    limb: str,
) -> Rig:
    """Drive ``task`` for 0.5 s, then take the input the plant's loop builds at that state."""
    plant.command(
        limb,
        CommandMode.IMPEDANCE,
        {
            "frame": task.frame.split(".")[-1],
            "goal": Pose.from_matrix(task.goal).as_array().tolist(),
            "gains": dataclasses.asdict(task.gains),
        },
    )
    plant.advance(0.5)
    m, data = plant.model, plant.data
    tree = floating_tree(m.spec)
    qpos = np.concatenate([m.limb_qpos[name] for name in tree.limbs])
    dofs = np.concatenate([m.limb_dof[name] for name in tree.limbs])
    moment = np.empty(m.model.nv)
    mujoco.mj_mulM(m.model, data, moment, data.qvel)
    inp = trusted_input(
        np.array(data.qpos[qpos]),
        np.array(data.qvel[dofs]),
        latched,
        (task,),
        task.gains.null_nms_per_rad,
        0.5 * float(data.qvel @ moment),
    )
    copy = mujoco.MjData(m.model)
    copy.qpos[:], copy.qvel[:], copy.eq_active[:] = data.qpos, data.qvel, data.eq_active
    mujoco.mj_forward(m.model, copy)
    return Rig(label, plant, UnifiedImpedance(tree), inp, copy)


def morphology_a() -> Rig:
    """mirror_arm from ``arch``: E1 latched on tile 0, E2 driven to tile 1's SI."""
    config = MujocoConfig(latched={"arm.E1": "tile0/si"}, postures={"arm": "arch"})
    plant = MujocoPlant("mirror_arm", world=tiles(3, 0.6), config=config)
    task = TaskFrame("arm.E2", si_matrix(0.6), ImpedanceGains())
    return _rig("A  mirror_arm: 1 latch, E2 task", plant, {"arm.E1": si_matrix(0.0)}, task, "arm")


def morphology_c() -> Rig:
    """mirror_mar in ``home``, both E2 latched, the torso's E0 driven as in mar_torso."""
    latched = {"arm_1.E2": "tile0/si", "arm_2.E2": "tile1/si"}
    config = MujocoConfig(latched=latched, postures={"arm_1": "home", "arm_2": "home"})
    plant = MujocoPlant("mirror_mar", world=tiles(2, 0.35), config=config)
    tree = floating_tree(load_robot("mirror_mar"))
    q = np.concatenate([np.asarray(plant.limb_state(limb).q) for limb in tree.limbs])
    base = Pose.from_array(plant.base_state().pose).as_matrix()
    e0 = base @ tree.frame_pose("E0", q)
    (dx, dy, dz), yaw_deg = TORSO_MOVE
    goal = e0.copy()
    goal[:3, 3] += (dx, dy, dz)
    goal[:3, :3] = Rotation.from_euler("z", yaw_deg, degrees=True).as_matrix() @ e0[:3, :3]
    task = TaskFrame("E0", goal, TORSO_GAINS)
    poses = {"arm_1.E2": si_matrix(0.0), "arm_2.E2": si_matrix(0.35)}
    return _rig("C  mirror_mar: 2 latches, torso task", plant, poses, task, "arm_1")


def best_us(functions: list[Callable[[], object]], *, rounds: int, calls: int) -> list[float]:
    """Best time per call [us] of each function, timed side by side in each round."""
    best = [math.inf] * len(functions)
    for _ in range(rounds):
        for i, function in enumerate(functions):
            start = time.perf_counter()
            for _ in range(calls):
                function()
            best[i] = min(best[i], (time.perf_counter() - start) / calls)
    return [b * 1e6 for b in best]


def controller_vs_step(rig: Rig, *, rounds: int, calls: int) -> tuple[float, float]:
    """(UnifiedImpedance.step [us], mj_step on the same model [us])."""
    model = rig.plant.model.model

    def control() -> None:
        rig.controller.step(rig.inp)

    def step() -> None:
        mujoco.mj_step(model, rig.data)

    control_us, step_us = best_us([control, step], rounds=rounds, calls=calls)
    return control_us, step_us


def substep_vs_step(rig: Rig, *, rounds: int, calls: int) -> tuple[float, float, float]:
    """(advance by 1 ms [us], per substep of advance by 20 ms [us], mj_step [us])."""
    plant, model = rig.plant, rig.plant.model.model
    timestep = plant.model.model.opt.timestep

    def one() -> None:
        plant.advance(plant.time + timestep)

    def tick() -> None:
        plant.advance(plant.time + 20 * timestep)

    def step() -> None:
        mujoco.mj_step(model, rig.data)

    one_us, tick_us, step_us = best_us([one, tick, step], rounds=rounds, calls=calls)
    return one_us, tick_us / 20.0, step_us


def run_mission(mission: str) -> tuple[float, float, str]:
    """Run a mission headless; (mission time [s], wall time [s], outcome)."""
    with tempfile.TemporaryDirectory() as record:
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "run", str(MISSIONS / mission), "--headless",
             "--record", record],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        path = Path(record) / "summary.json"
        if not path.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise SystemExit(f"{mission}: no summary.json (exit {done.returncode}): {tail}")
        summary = json.loads(path.read_text())
    outcome = str(summary["outcome"])
    return float(summary["sim_time_s"]), float(summary["wall_time_s"]), outcome


def main() -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="mar_walk_1arm only, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per case (best of)")
    parser.add_argument("--calls", type=int, default=500, help="calls per round (10 or more)")
    parser.add_argument("--runs", type=int, default=1, help="runs per mission (best of)")
    args = parser.parse_args()
    if args.calls < 10:  # (the plant substeps take a tenth of the calls)
        parser.error(f"--calls must be 10 or more, not {args.calls}")
    if (args.rounds is not None and args.rounds < 1) or args.runs < 1:
        parser.error("--rounds and --runs must be 1 or more")
    rounds = args.rounds or (3 if args.quick else 7)
    rigs = [morphology_a(), morphology_c()]

    print(f"{'controller vs MuJoCo':<38} {'step [us]':>10} {'mj_step [us]':>13} {'ratio':>7}")
    for rig in rigs:
        control_us, step_us = controller_vs_step(rig, rounds=rounds, calls=args.calls)
        print(f"{rig.label:<38} {control_us:10.1f} {step_us:13.1f} {control_us / step_us:6.1f}x")

    print()
    print(f"{'plant substep vs MuJoCo':<38} {'1 ms [us]':>10} {'in 20 ms [us]':>14} "
          f"{'mj_step [us]':>13} {'ratios':>12}")  # fmt: skip
    for rig in rigs:
        one_us, tick_us, step_us = substep_vs_step(rig, rounds=rounds, calls=args.calls // 10)
        print(f"{rig.label:<38} {one_us:10.1f} {tick_us:14.1f} {step_us:13.1f} "
              f"{one_us / step_us:5.1f}x {tick_us / step_us:5.1f}x")  # fmt: skip
    print("1 ms: advance by one substep (state sampled each time); in 20 ms: per substep of a")
    print("50 Hz tick (20 substeps, one state sample)")

    print()
    print(f"{'mission (limbtree run --headless)':<38} {'sim [s]':>8} {'wall [s]':>9} "
          f"{'x real time':>12}  outcome")  # fmt: skip
    for mission in SEED_003[:1] if args.quick else SEED_003:
        runs = [run_mission(mission) for _ in range(max(1, args.runs))]
        sim, wall, outcome = min(runs, key=lambda r: r[1] / max(r[0], 1e-9))
        factor = sim / wall
        verdict = "ok" if factor >= TARGET_REAL_TIME else f"below {TARGET_REAL_TIME:g}x"
        print(f"{mission:<38} {sim:8.1f} {wall:9.1f} {factor:11.2f}x  {outcome} ({verdict})")
    print(f"target (DESIGN.md): every seed-003 mission at least {TARGET_REAL_TIME:g}x real time")


if __name__ == "__main__":
    main()
