"""MuJoCo rigs for the dynamics tests: a MIRROR arm on a row of tiles, stepped at 1 kHz.

The loop reads the state between ``mj_step1`` and ``mj_step2`` (so site poses, the mass
matrix and the state belong together: wave-2 brief 4.8), computes torques, writes them to
the motors and finishes the step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

mujoco = pytest.importorskip("mujoco")

from limbtree.kinematics.pose import Pose  # noqa: E402
from limbtree.robots import load_robot  # noqa: E402
from limbtree.robots.assembly import WorldModule  # noqa: E402
from limbtree.robots.floating import floating_tree  # noqa: E402
from limbtree.robots.mujoco_model import build_model, retarget_weld  # noqa: E402

TILE_HALF_THICKNESS_M = 0.025  # mirror_tile: its SI is 0.025 m above the tile frame


def si_at(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    """A tile SI's world frame: on the plane z = 0 of the world, its z pointing down."""
    t = np.eye(4)
    t[:3, :3] = Rotation.from_euler("x", math.pi).as_matrix()
    t[:3, 3] = (x, y, z)
    return t


def tile(name: str, si_world: np.ndarray) -> WorldModule:
    """A mirror_tile placed so that its SI's frame is ``si_world``."""
    si_in_tile = np.eye(4)
    si_in_tile[:3, :3] = Rotation.from_euler("x", math.pi).as_matrix()
    si_in_tile[2, 3] = TILE_HALF_THICKNESS_M
    return WorldModule(name, "mirror_tile", Pose.from_matrix(si_world @ np.linalg.inv(si_in_tile)))


class RobotOnTiles:
    """A MIRROR robot on a row of tiles along +x, no gravity; its first latch places it.

    Args:
        robot: ``mirror_arm`` or ``mirror_mar``.
        posture: the starting posture of every limb.
        latched: interface frame -> tile it starts latched on (the first places the base).
        tiles: how many tiles.
        spacing_m: their spacing [m].
    """

    def __init__(
        self,
        robot: str,
        posture: str,
        latched: dict[str, str],
        tiles: int = 4,
        spacing_m: float = 0.6,
    ) -> None:
        self.spec = load_robot(robot)
        self.tree = floating_tree(self.spec)
        self.si = {f"tile{k}": si_at(spacing_m * k) for k in range(tiles)}
        q0 = np.concatenate([limb.posture(posture) for limb in self.spec.limbs])
        first, tile0 = next(iter(latched.items()))
        base = self.si[tile0] @ np.linalg.inv(self.tree.frame_pose(first, q0))
        self.m = build_model(
            self.spec,
            base_pose_world=Pose.from_matrix(base),
            floating=True,
            modules=[tile(name, pose) for name, pose in self.si.items()],
        )
        self.model = self.m.model
        self.data = mujoco.MjData(self.model)
        limbs = [limb.name for limb in self.spec.limbs]
        self.qpos = np.concatenate([self.m.limb_qpos[limb] for limb in limbs])
        self.dof = np.concatenate([self.m.limb_dof[limb] for limb in limbs])
        self.actuators = np.concatenate([self.m.limb_actuator[limb] for limb in limbs])
        self.data.qpos[self.qpos] = q0
        self.latched: dict[str, str] = {}
        mujoco.mj_forward(self.model, self.data)
        for frame, name in latched.items():
            self.latch(frame, f"{name}/si")

    @property
    def time(self) -> float:
        return float(self.data.time)

    def latch(self, frame: str, grasp: str) -> None:
        retarget_weld(self.model, self.data, self.m, frame, grasp)
        self.data.eq_active[self.m.weld[frame]] = 1
        self.latched[frame] = grasp

    def unlatch(self, frame: str) -> None:
        self.data.eq_active[self.m.weld[frame]] = 0
        del self.latched[frame]

    def grasp_pose(self, grasp: str) -> np.ndarray:
        return self.si[grasp.split("/")[0]]

    def latched_poses(self) -> dict[str, np.ndarray]:
        return {frame: self.grasp_pose(grasp) for frame, grasp in self.latched.items()}

    def begin(self) -> tuple[np.ndarray, np.ndarray]:
        """``mj_step1``: positions and velocities of this step; returns (q, q̇)."""
        mujoco.mj_step1(self.model, self.data)
        return self.data.qpos[self.qpos].copy(), self.data.qvel[self.dof].copy()

    def finish(self, tau: np.ndarray) -> None:
        """Torques to the motors (MuJoCo clips them to the effort limit), then ``mj_step2``."""
        self.data.ctrl[self.actuators] = tau
        mujoco.mj_step2(self.model, self.data)

    def site_pose(self, frame: str) -> np.ndarray:
        site = self.m.frame_site[frame]
        t = np.eye(4)
        t[:3, :3] = self.data.site_xmat[site].reshape(3, 3)
        t[:3, 3] = self.data.site_xpos[site]
        return t

    def kinetic_energy(self) -> float:
        """½ qvelᵀ M qvel [J] from MuJoCo's mass matrix (valid after :meth:`begin`)."""
        out = np.empty(self.model.nv)
        mujoco.mj_mulM(self.model, self.data, out, self.data.qvel)
        return 0.5 * float(self.data.qvel @ out)


class ArmOnTiles(RobotOnTiles):
    """mirror_arm, E1 latched on tile 0's SI, tiles 0.6 m apart (seed 003 Sec. 5-A).

    Args:
        posture: ``home`` (E2 on tile 1) or ``arch`` (E2 129 mm / 16.9 deg off tile 1).
    """

    def __init__(self, posture: str = "home") -> None:
        super().__init__("mirror_arm", posture, {"arm.E1": "tile0"})


class MarOnTiles(RobotOnTiles):
    """mirror_mar with both E2 latched on tiles 0 and 1, 0.35 m apart (seed 003 Sec. 5-B)."""

    def __init__(self) -> None:
        super().__init__("mirror_mar", "home", {"arm_1.E2": "tile0", "arm_2.E2": "tile1"}, 6, 0.35)
