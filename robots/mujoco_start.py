"""Where a ``mujoco`` plant's robot starts: its base, its joints and its closed grippers.

The plant (:class:`~limbtree.robots.mujoco_plant.MujocoPlant`) places its robot before it
builds the MuJoCo model, from the robot's kinematics alone:

1. the joints: each limb's named posture (``home`` unless the mission says another);
2. the base: at the grasp point of the first interface that starts latched to a world
   module, or where the mission puts it;
3. on a terrain, each leg whose gripper starts closed (``latched: {LEG.palm: terrain}``):
   the base moves along the world's z by the mean of its palms' heights above the ground,
   then each such leg bends or stretches until its palm stands on the ground, where it
   must be over the terrain's grid (the ground ends there).

This module does that without MuJoCo, so that ``limbtree check`` refuses a start the plant
would refuse (a palm off a terrain too small for the robot, a leg that cannot reach the
ground), with the plant's own words.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.floating import FloatingTree
from limbtree.robots.grippers import PALM, TERRAIN_GRIP, off_terrain
from limbtree.robots.registry import RobotSpec
from limbtree.robots.terrain import Terrain
from limbtree.skills.dynamics import nearest_symmetric_goal

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MujocoStart:
    """A robot's start (the module's text).

    Attributes:
        q0: every joint, the tree's order [rad].
        base_world: ``(4, 4)`` the base in the world [m].
        grip_legs: the legs with a gripper (a palm interface), on a terrain to grip.
        gripped: the legs whose grippers start closed on the terrain.
        welds: interface -> world grasp point it starts latched to (not the terrain).
    """

    q0: FloatArray
    base_world: FloatArray
    grip_legs: tuple[str, ...]
    gripped: tuple[str, ...]
    welds: Mapping[str, str]


def mujoco_start(
    spec: RobotSpec,
    tree: FloatingTree,
    *,
    postures: Mapping[str, str],
    base_given: FloatArray,
    latched: Mapping[str, str],
    grasps: Mapping[str, FloatArray],
    terrain: Terrain | None,
) -> MujocoStart:
    """Place a robot for its ``mujoco`` plant (the module's text).

    Args:
        spec: the robot.
        tree: its floating-base kinematics (:func:`~limbtree.robots.floating.floating_tree`).
        postures: limb -> its starting posture's name (``home`` for a limb not named).
        base_given: ``(4, 4)`` the base in the world when nothing starts latched to a module
            [m].
        latched: interface -> a world grasp point, or ``terrain``, it starts latched to.
        grasps: the world's grasp points -> their poses, ``(4, 4)`` [m].
        terrain: the ground, or None.

    Returns:
        The start.

    Raises:
        ValueError: naming the latch or leg, for an unknown interface or grasp point, a
            terrain grip without a terrain or by an interface that is no gripper's palm, a
            palm that cannot reach the ground within its leg's joint limits, or one off the
            terrain's grid.
    """
    q0 = np.concatenate(
        [np.asarray(spec.limb(limb).posture(postures.get(limb, "home"))) for limb in tree.limbs]
    )
    grip_legs = tuple(
        limb for limb in tree.limbs if terrain is not None and f"{limb}.{PALM}" in tree.frames
    )
    welds = {f: g for f, g in latched.items() if g != TERRAIN_GRIP}
    gripped = _gripped(spec, latched, terrain, grip_legs)
    base_world = _place(spec, tree, q0, base_given, welds, grasps)
    if gripped:
        assert terrain is not None
        base_world = _set_down(tree, q0, base_world, gripped, terrain)
        q0 = _reach_down(spec, tree, q0, base_world, gripped, terrain)
        for leg in gripped:
            palm = base_world @ tree.frame_pose(f"{leg}.{PALM}", q0)
            if (off := off_terrain(leg, palm[0, 3], palm[1, 3], terrain)) is not None:
                raise ValueError(off)
    return MujocoStart(q0, base_world, grip_legs, gripped, welds)


def frame_of(spec: RobotSpec, tree: FloatingTree, frame: str) -> str:
    """``frame``, when the robot has that interface.

    Raises:
        ValueError: naming the robot's interfaces.
    """
    if frame not in tree.frames:
        raise ValueError(
            f"robot {spec.name} has no interface {frame!r}; its interfaces are "
            f"{', '.join(tree.frames)}"
        )
    return frame


def rigid_inverse(matrix: FloatArray) -> FloatArray:
    """The inverse of a rigid 4x4 transform [R p; 0 1]: [Rᵀ −Rᵀp; 0 1]."""
    out = np.eye(4)
    rotation = matrix[:3, :3].T
    out[:3, :3] = rotation
    out[:3, 3] = -(rotation @ matrix[:3, 3])
    return out


def _place(
    spec: RobotSpec,
    tree: FloatingTree,
    q0: FloatArray,
    base_given: FloatArray,
    welds: Mapping[str, str],
    grasps: Mapping[str, FloatArray],
) -> FloatArray:
    """The base's world pose: the first starting latch's grasp point, or as given."""
    if not welds:
        return base_given
    frame, grasp = next(iter(welds.items()))
    frame_of(spec, tree, frame)
    if grasp not in grasps:
        raise ValueError(
            f"latched {frame}: no grasp point {grasp!r} in the world; the world has "
            f"{', '.join(sorted(grasps)) or 'no grasp points'}"
        )
    in_base = tree.frame_pose(frame, q0)
    goal = nearest_symmetric_goal(grasps[grasp], base_given @ in_base)
    placed: FloatArray = goal @ rigid_inverse(in_base)
    return placed


def _gripped(
    spec: RobotSpec,
    latched: Mapping[str, str],
    terrain: Terrain | None,
    grip_legs: Sequence[str],
) -> tuple[str, ...]:
    """The legs whose grippers start closed (``latched: {LEG.palm: terrain}``).

    Raises:
        ValueError: for ``terrain`` given to an interface that is not a gripper's palm, or
            without a terrain.
    """
    legs = []
    for frame, grasp in latched.items():
        if grasp != TERRAIN_GRIP:
            continue
        leg = frame.split(".", 1)[0]
        if terrain is None:
            raise ValueError(
                f"latched {frame}: {TERRAIN_GRIP} needs a terrain; add one to the world"
            )
        if leg not in grip_legs or frame != f"{leg}.{PALM}":
            palms = ", ".join(f"{g}.{PALM}" for g in grip_legs) or "none"
            raise ValueError(
                f"latched {frame}: only a gripper's palm grips the {TERRAIN_GRIP}; the "
                f"palms of robot {spec.name} are {palms}"
            )
        legs.append(leg)
    return tuple(legs)


def _set_down(
    tree: FloatingTree,
    q0: FloatArray,
    base_world: FloatArray,
    gripped: Sequence[str],
    terrain: Terrain,
) -> FloatArray:
    """The base moved along the world's z to the mean height its gripping palms need.

    Each gripping palm is ``h(x, y) - z`` from the terrain under it; the base moves by the
    mean of those, so that :func:`_reach_down` then stretches some legs and bends others by
    as little as it can.
    """
    lifts = []
    for leg in gripped:
        palm = base_world @ tree.frame_pose(f"{leg}.{PALM}", q0)
        x, y, z = palm[:3, 3].tolist()
        lifts.append(terrain.height_at(x, y) - z)
    out = base_world.copy()
    out[2, 3] += float(np.mean(lifts))
    return out


def _reach_down(
    spec: RobotSpec,
    tree: FloatingTree,
    q0: FloatArray,
    base_world: FloatArray,
    gripped: Sequence[str],
    terrain: Terrain,
) -> FloatArray:
    """Each gripping leg's joints in ``q0`` moved so its palm stands on the terrain.

    The palm keeps its ``x, y`` and goes to the terrain's height there (Newton on the leg's
    joints with the tree's palm Jacobian): every closed gripper starts on the ground, none
    holding on to air.

    Raises:
        ValueError: naming the leg when its palm cannot reach the ground within its joint
            limits from this posture and base.
    """
    q = q0.copy()
    rotation_t, origin = base_world[:3, :3].T, base_world[:3, 3]
    for leg in gripped:
        frame, columns = f"{leg}.{PALM}", tree.limb_slice(leg)
        start = base_world @ tree.frame_pose(frame, q)
        x, y = start[0, 3], start[1, 3]
        goal = rotation_t @ (np.array([x, y, terrain.height_at(x, y)]) - origin)
        error = math.inf
        for _ in range(50):
            poses, jacobians = tree.frame_poses_and_jacobians((frame,), q)
            gap = goal - poses[0][:3, 3]
            error = float(np.linalg.norm(gap))
            if error < 1e-10:
                break
            linear = poses[0][:3, :3] @ jacobians[0][:3, 6 + columns.start : 6 + columns.stop]
            q[columns] += np.linalg.lstsq(linear, gap, rcond=None)[0]
        limb = spec.limb(leg)
        outside = (q[columns] < np.asarray(limb.lower) - 1e-9) | (
            q[columns] > np.asarray(limb.upper) + 1e-9
        )
        if error > 1e-6 or outside.any():
            gap_mm = 1e3 * (start[2, 3] - terrain.height_at(x, y))
            raise ValueError(
                f"latched {frame}: {TERRAIN_GRIP}: the palm cannot reach the ground "
                f"{abs(gap_mm):.0f} mm {'below' if gap_mm >= 0.0 else 'above'} it within the "
                "leg's joint limits; start the robot in another posture or place its base "
                "elsewhere"
            )
    return q


__all__ = ["MujocoStart", "frame_of", "mujoco_start", "rigid_inverse"]
