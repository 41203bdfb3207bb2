"""A robot description's floating tree: :func:`floating_tree`.

Builds :class:`~limbtree.kinematics.floating.FloatingTree` (kinematics never imports robots)
from a :class:`~limbtree.robots.registry.RobotSpec`: the base is the URDF's root link, the
limbs keep their ``robot.yaml`` order and joint order, the frames are the robot's interface
frames (``"LIMB.END"``, base-body names such as ``"E0"``) plus every limb's end-effector as
``"LIMB.ee"``, and the armature is ``joint_armature_kgm2``.
"""

from __future__ import annotations

from collections.abc import Mapping

from limbtree.kinematics.floating import FloatingTree
from limbtree.robots.registry import RobotSpec

#: Name of each limb's end-effector frame in a floating tree: ``"LIMB.ee"``.
EE_FRAME_SUFFIX = "ee"


def floating_tree(spec: RobotSpec, extra_frames: Mapping[str, str] | None = None) -> FloatingTree:
    """The floating-base kinematics and inertia of a robot.

    Args:
        spec: the robot (:func:`~limbtree.robots.registry.load_robot`). Every limb must start
            at the URDF's root link or below it, and every movable joint must be in a limb.
        extra_frames: more frames, name -> link (e.g. feet of a robot without interfaces).

    Returns:
        The tree; its frames are ``spec.interface_links``, then ``"LIMB.ee"`` per limb, then
        ``extra_frames``.

    Raises:
        limbtree.kinematics.floating.FloatingTreeError: if the description does not make a
            floating tree (the message says why).
    """
    frames = dict(spec.interface_links)
    for limb in spec.limbs:
        frames.setdefault(f"{limb.name}.{EE_FRAME_SUFFIX}", limb.ee_link)
    frames.update(extra_frames or {})
    return FloatingTree.from_urdf(
        spec.urdf_path,
        spec.base_link,
        [(limb.name, limb.joint_names) for limb in spec.limbs],
        frames,
        spec.joint_armature_kgm2,
    )
