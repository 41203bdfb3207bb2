"""The run's header: what the run is, built from the tree and the limbs before the first tick.

:func:`tree_of` describes a built tree with its node ids (:mod:`limbtree.trees.identity`),
:func:`robots_of` the limbs as one-limb robots (today's ``limbs:`` section: one agent per
limb), :func:`world_of` the mission's physical world (seed 004's terrain), for
:class:`~limbtree.trees.stream.RunHeader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import py_trees

from limbtree.trees.limbs import LimbHandle
from limbtree.trees.stream import LimbInfo, RobotInfo, TreeNode, plain


@dataclass(frozen=True)
class RunInfo:
    """What the header says about the run beyond its tree and options.

    Attributes:
        mission_file: the mission file's path ("" for a tree built in code).
        parameters: the mission's parameters after ``--set``.
        robots: robot name -> what it is; None to describe each limb as its own robot.
        agents: limb name -> where its agent is (``sim`` or an endpoint), for the default
            robots.
        world: the header's ``world`` (:func:`world_of`), plain data in SI; empty when the
            mission has no physical world.
    """

    mission_file: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    robots: Mapping[str, RobotInfo] | None = None
    agents: Mapping[str, str] = field(default_factory=dict)
    world: Mapping[str, Any] = field(default_factory=dict)


#: The terrain kinds a header names (``world.terrain.kind``).
TERRAIN_KINDS = ("fractal",)


def world_of(terrain: Mapping[str, Any] | None) -> dict[str, Any]:
    """The header's ``world`` for a mission's ``world.terrain`` (``docs/record.md``).

    Args:
        terrain: the mission model's terrain, the plant's form in SI (``size_m``, ``cell_m``,
            ``sigma_m``, ``hurst``, ``seed``, ``rocks: [{at_m, height_m, radius_m}]``), or
            None when the mission has no ground.

    Returns:
        ``{"terrain": {"kind": "fractal", "size_m", "cell_m", "sigma_m", "hurst", "seed",
        "rocks"}}``, or ``{}`` without a terrain.
    """
    if terrain is None:
        return {}
    spec = plain(terrain)
    return {
        "terrain": {
            "kind": str(spec.get("kind", TERRAIN_KINDS[0])),
            "size_m": spec["size_m"],
            "cell_m": spec["cell_m"],
            "sigma_m": spec["sigma_m"],
            "hurst": spec["hurst"],
            "seed": spec["seed"],
            "rocks": [dict(rock) for rock in spec.get("rocks") or ()],
        }
    }


def limb_info(handle: LimbHandle, chain: str = "") -> LimbInfo:
    """A limb's header entry, from what its agent described.

    Args:
        handle: the limb.
        chain: its name in its robot description, or "" when unknown.
    """
    joints = handle.description.joints
    return LimbInfo(
        joints=tuple(j.name for j in joints),
        max_joint_speed=tuple(float(j.max_speed) for j in joints),
        lower=tuple(float(j.lower) for j in joints),
        upper=tuple(float(j.upper) for j in joints),
        end_effectors=tuple(handle.description.end_effectors),
        has_gripper=bool(handle.description.has_gripper),
        chain=chain,
    )


def robots_of(limbs: Mapping[str, LimbHandle], agents: Mapping[str, str]) -> dict[str, RobotInfo]:
    """Each limb as its own one-limb robot (today's ``limbs:`` section), named like the limb."""
    plants = {"sim": "kinematic"}
    return {
        name: RobotInfo(
            robot=handle.description.robot,
            plant=plants.get(handle.description.driver, handle.description.driver),
            agent=agents.get(name, "?"),
            limbs=MappingProxyType({name: limb_info(handle)}),
            base=handle.base,
        )
        for name, handle in limbs.items()
    }


def tree_of(root: py_trees.behaviour.Behaviour) -> TreeNode:
    """The header's tree of a built tree whose ids are assigned."""

    def node(node_id: str, behaviour: py_trees.behaviour.Behaviour) -> TreeNode:
        params = getattr(behaviour, "node_params", None)
        if params is None:
            params = getattr(behaviour, "params", {})
        kind = getattr(behaviour, "node_type", "") or type(behaviour).__name__
        children = tuple(
            node(f"{node_id}.{index}", child) for index, child in enumerate(behaviour.children)
        )
        frozen = MappingProxyType(plain(params) if isinstance(params, Mapping) else {})
        return TreeNode(node_id, behaviour.name, kind, frozen, children)

    return node("0", root)


__all__ = ["TERRAIN_KINDS", "RunInfo", "limb_info", "robots_of", "tree_of", "world_of"]
