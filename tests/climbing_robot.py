"""The robot the climbing-core tests use: HubRobo (seed 004's robot) in its nominal stance.

Falls back to moonbot_zero (another yaw-pitch-pitch quadruped) while the hubrobo
description is absent. Built once per test session: loading a URDF through rtb takes a
second.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from limbtree.kinematics.floating import FloatingTree
from limbtree.robots import load_robot
from limbtree.robots.errors import UnknownRobotError
from limbtree.robots.floating import floating_tree
from limbtree.robots.registry import RobotSpec
from limbtree.skills.climbing import PlanarLeg


@dataclass(frozen=True, eq=False)
class Climber:
    """A quadruped standing with its base ``base_height`` above flat ground at z = 0."""

    name: str
    spec: RobotSpec
    tree: FloatingTree
    legs: dict[str, PlanarLeg]
    feet: dict[str, str]  # leg -> foot frame
    home: np.ndarray  # one leg's nominal joints
    q: np.ndarray  # every joint, nominal
    base: np.ndarray  # 4x4 base pose in the world
    footholds: dict[str, np.ndarray]  # leg -> world contact point


@functools.cache
def climber() -> Climber:
    try:
        spec = load_robot("hubrobo")
        foot = "palm"
    except UnknownRobotError:  # the description is not there yet
        spec = load_robot("moonbot_zero")
        foot = "ee"
    tree = floating_tree(spec)
    home = np.array(spec.limbs[0].postures["home"], dtype=float)
    legs = {
        limb.name: PlanarLeg(
            tree,
            limb.name,
            f"{limb.name}.{foot}",
            lower=limb.lower,
            upper=limb.upper,
            reference=home,
        )
        for limb in spec.limbs
    }
    q = np.tile(home, len(legs))
    feet_base = {name: leg.fk(home)[0] for name, leg in legs.items()}
    base = np.eye(4)
    base[2, 3] = -feet_base[spec.limbs[0].name][2]
    footholds = {name: base[:3, :3] @ p + base[:3, 3] for name, p in feet_base.items()}
    return Climber(
        spec.name,
        spec,
        tree,
        legs,
        {name: leg.foot_frame for name, leg in legs.items()},
        home,
        q,
        base,
        footholds,
    )
