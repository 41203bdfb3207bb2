"""The leaf node types: limbtree's skills, each a thin behaviour over its core.

Every leaf is built by :func:`leaf`: the behaviour class gets the node's display name, the
mission context and the node's validated parameters (SI). ``commands`` names the parameters
that hold the limbs a leaf commands; ``wait`` and ``operator_gate`` command none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import py_trees

from limbtree.trees.behaviours import (
    AlignBehaviour,
    GraspBehaviour,
    JointMoveBehaviour,
    JointSyncMoveBehaviour,
    OperatorGateBehaviour,
    RecoverToLastValidBehaviour,
    ReleaseBehaviour,
    SyncMoveBehaviour,
    VelocityMoveBehaviour,
    WaitBehaviour,
)
from limbtree.trees.behaviours.base import SkillBehaviour
from limbtree.trees.context import MissionContext
from limbtree.trees.mission.controllers import ControllerParams, check_controller
from limbtree.trees.mission.model import NodeModel, PlantKind
from limbtree.trees.mission.nodes import NodeExport, NodeKind, NodeSpec
from limbtree.trees.mission.units import MM, MM_S, MM_S2, NONE, S
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    Flag,
    Integer,
    LimbName,
    ParamSpec,
    PoseSpec,
    Posture,
    Postures,
    Profile,
    Quantity,
    Text,
    Waypoints,
)
from limbtree.trees.nodes.params import (
    ANGLE_TOLERANCE,
    LIMBS,
    POSITIVE_S,
    Q_E,
    STALE_TIMEOUT,
    STALL_TIMEOUT,
    p_e,
    r_e,
    settle_deg,
    settle_mm,
)

Behaviour = py_trees.behaviour.Behaviour


def leaf(
    cls: type[SkillBehaviour],
) -> Callable[[NodeModel, tuple[Behaviour, ...], MissionContext], Behaviour]:
    """The builder of a leaf node type whose behaviour is ``cls(name, context, params)``.

    Args:
        cls: a :class:`~limbtree.trees.behaviours.SkillBehaviour` subclass.

    Returns:
        A ``NodeSpec.build`` function.
    """

    def build(
        node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
    ) -> Behaviour:
        return cls(node.name, context, dict(node.params))

    build.__qualname__ = f"leaf({cls.__name__})"
    return build


def check_align(
    params: Mapping[str, Any],
    children: tuple[NodeModel, ...],
    report: Callable[[str, str], None],
) -> Mapping[str, Any]:
    """``version`` is 1 (step-and-settle) or 2 (adaptive clamp); ``v1``/``v2`` hold together."""
    if params.get("version") not in (1, 2):
        report("version", f"version must be 1 or 2, got {params.get('version')!r}")
    for version in (1, 2):
        values = params.get(f"v{version}")
        if values:
            problem = check_controller(version, values)
            if problem is not None:
                report(f"v{version}", f"v{version}: {problem}")
    return params


#: What the moves on a trajectory need of a plant (:attr:`NodeSpec.plants_why`).
_SENDS_EE_POSE: Final = "sends end-effector pose commands (ee_pose)"


SYNC_MOVE: Final = NodeSpec(
    "sync_move",
    NodeKind.LEAF,
    (
        LIMBS,
        ParamSpec(
            "waypoints",
            Waypoints(),
            REQUIRED,
            "poses to pass through: one pose for every limb, or a map limb -> pose",
        ),
        ParamSpec(
            "frame",
            Choice(("relative", "absolute")),
            "relative",
            "relative: offsets from each limb's pose when the node starts; absolute: world",
        ),
        p_e(20.0),
        r_e(float("inf")),
        ParamSpec(
            "norm",
            Quantity(NONE, low=1, allow_inf=True),
            float("inf"),
            "norm stacking the limbs' distances (seed 000 eq. 9)",
        ),
        ParamSpec(
            "recovery",
            Choice(("last_valid", "nearest", "restart", "none")),
            "last_valid",
            "how a limb pushed off the path comes back (seed 000 Sec. II-B)",
        ),
        ParamSpec("monotonic", Flag(), False, "the trajectory parameter t never decreases"),
        ParamSpec(
            "max_speed",
            Quantity(MM_S, low=0, low_open=True),
            None,
            "the goal point advances at most this fast; none: as fast as the clamp allows",
        ),
        settle_mm(2.0),
        STALE_TIMEOUT,
        ParamSpec("loop", Flag(), False, "after the last waypoint go back to the first, forever"),
        ParamSpec(
            "timeout",
            POSITIVE_S,
            None,
            "FAILURE after this much mission time, naming the waypoint and how far each limb "
            "is from it; none: never",
        ),
        ParamSpec(
            "ik_timeout",
            Quantity(S, low=0, low_open=True, allow_inf=True),
            10.0,
            "FAILURE when a limb's IK has failed this long on end (a waypoint out of its "
            "reach), naming the waypoint and how far each limb is from it; inf: never",
        ),
        STALL_TIMEOUT,
    ),
    (0, 0),
    "n end-effectors through waypoints in sync, clamped to the hypersphere (seed 000)",
    build=leaf(SyncMoveBehaviour),
    commands=("limbs",),
    plants=(PlantKind.KINEMATIC,),
    plants_why=_SENDS_EE_POSE,
    export=NodeExport(headline=("p_e",)),
)


VELOCITY_MOVE: Final = NodeSpec(
    "velocity_move",
    NodeKind.LEAF,
    (
        LIMBS,
        ParamSpec(
            "profile",
            Profile(),
            REQUIRED,
            "segments {duration_s, velocity_mm_s: [vx, vy, vz]} applied to every limb",
        ),
        p_e(50.0),
        r_e(30.0),
        STALE_TIMEOUT,
    ),
    (0, 0),
    "integrate a velocity profile, clamped around the sensed state (seed 000 eq. 11)",
    build=leaf(VelocityMoveBehaviour),
    commands=("limbs",),
    plants=(PlantKind.KINEMATIC,),
    plants_why=_SENDS_EE_POSE,
    export=NodeExport(headline=("p_e",)),
)


JOINT_SYNC_MOVE: Final = NodeSpec(
    "joint_sync_move",
    NodeKind.LEAF,
    (
        LIMBS,
        ParamSpec(
            "postures",
            Postures(),
            REQUIRED,
            "postures to pass through: a name or {q_deg: [...]}, for all or per limb",
        ),
        Q_E,
        settle_deg(1.0),
        STALE_TIMEOUT,
        STALL_TIMEOUT,
    ),
    (0, 0),
    "limbs through joint postures in sync, clamped in joint space",
    build=leaf(JointSyncMoveBehaviour),
    commands=("limbs",),
    export=NodeExport(headline=("q_e",)),
)


JOINT_MOVE: Final = NodeSpec(
    "joint_move",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb to move"),
        ParamSpec("posture", Posture(), REQUIRED, "a posture name or {q_deg: [...]}"),
        Q_E,
        settle_deg(1.0),
        ParamSpec("timeout", POSITIVE_S, None, "FAILURE after this much mission time; none: never"),
        STALE_TIMEOUT,
        STALL_TIMEOUT,
    ),
    (0, 0),
    "one limb into a posture (reconfiguration)",
    build=leaf(JointMoveBehaviour),
    commands=("limb",),
    export=NodeExport(headline=("q_e",)),
)


RECOVER_TO_LAST_VALID: Final = NodeSpec(
    "recover_to_last_valid",
    NodeKind.LEAF,
    (LIMBS, p_e(20.0), r_e(float("inf")), settle_mm(2.0), STALE_TIMEOUT, STALL_TIMEOUT),
    (0, 0),
    "bring the limbs back onto their last valid command (seed 000 Sec. II-B)",
    build=leaf(RecoverToLastValidBehaviour),
    commands=("limbs",),
    plants=(PlantKind.KINEMATIC,),
    plants_why=_SENDS_EE_POSE,
    export=NodeExport(headline=("p_e",)),
)


WAIT: Final = NodeSpec(
    "wait",
    NodeKind.LEAF,
    (ParamSpec("duration", POSITIVE_S, REQUIRED, "how long"),),
    (0, 0),
    "RUNNING for duration_s of mission time, then SUCCESS",
    build=leaf(WaitBehaviour),
)


OPERATOR_GATE: Final = NodeSpec(
    "operator_gate",
    NodeKind.LEAF,
    (ParamSpec("prompt", Text(), REQUIRED, "what the operator confirms"),),
    (0, 0),
    "wait for the operator to confirm (--auto-confirm passes it)",
    build=leaf(OperatorGateBehaviour),
)


ALIGN: Final = NodeSpec(
    "align",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb whose end-effector aligns"),
        ParamSpec("target", Text(), REQUIRED, "motion-capture body to align to, e.g. wheel/grasp"),
        ParamSpec(
            "offset",
            PoseSpec(),
            None,
            "goal relative to the target, in its frame (seed 002: 150 mm above the grasp "
            "point); none: the target itself",
        ),
        ParamSpec("version", Integer(1, maximum=2), 2, "1: step-and-settle; 2: adaptive clamp"),
        ParamSpec("dd", Quantity(MM, low=0, low_open=True), 10.0, "success: position error"),
        ParamSpec("dtheta", ANGLE_TOLERANCE, 2.0, "success: rotation error"),
        p_e(
            20.0,
            "version 1: the hypersphere its steps are clamped to, on position (seed 000 eq. "
            "7); version 2 does not read it",
        ),
        r_e(
            10.0,
            "version 1: the hypersphere its steps are clamped to, on rotation; inf ignores "
            "rotation; version 2 does not read it",
        ),
        ParamSpec(
            "max_speed",
            Quantity(MM_S, low=0, low_open=True),
            50.0,
            "version 1: the peak speed of each step's interpolation (the synchronizer's "
            "LERP, easing in and out); version 2 does not read it (its own: v2's t_max_mm_s)",
        ),
        ParamSpec(
            "max_accel",
            Quantity(MM_S2, low=0, low_open=True),
            150.0,
            "version 1: the peak acceleration of each step's interpolation (version 2's "
            "largest: its filter taking t_max from rest, t_max / (tau_lin + 1/30 s)); "
            "version 2 does not read it",
        ),
        ParamSpec("timeout", POSITIVE_S, None, "FAILURE after this long; none: never"),
        ParamSpec(
            "stall_timeout",
            Quantity(S, low=0, low_open=True, allow_inf=True),
            10.0,
            "FAILURE when the error, still over twice dd or dtheta, has come no closer (by "
            "1 mm or 0.5 deg) for this long: a goal out of the limb's reach, a blocked limb; "
            "inf: never",
        ),
        ParamSpec(
            "metrics", Text(), "align", "summary.json metrics key for this alignment's figures"
        ),
        ParamSpec(
            "v1",
            ControllerParams(1),
            None,
            "Version 1's parameters, e.g. {s_max_mm: 20}; version 2 does not read them",
        ),
        ParamSpec(
            "v2",
            ControllerParams(2),
            None,
            "Version 2's parameters, e.g. {t_max_mm_s: 30}; version 1 does not read them",
        ),
        STALE_TIMEOUT,
    ),
    (0, 0),
    "drive an end-effector onto a motion-captured target (seed 002 V1 or V2)",
    check_align,
    build=leaf(AlignBehaviour),
    commands=("limb",),
    plants=(PlantKind.KINEMATIC,),
    plants_why="sends end-effector pose and twist commands (ee_pose, ee_twist)",
    export=NodeExport(headline=("p_e",)),
)


GRASP: Final = NodeSpec(
    "grasp",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb whose gripper closes"),
        ParamSpec("module", Text(), None, "the module it must hold; none: any"),
        ParamSpec("timeout", POSITIVE_S, 2.0, "FAILURE if not attached within this"),
    ),
    (0, 0),
    "close the gripper and check that the module is attached",
    build=leaf(GraspBehaviour),
    commands=("limb",),
)


RELEASE: Final = NodeSpec(
    "release",
    NodeKind.LEAF,
    (
        ParamSpec("limb", LimbName(), REQUIRED, "the limb whose gripper opens"),
        ParamSpec("timeout", POSITIVE_S, 2.0, "FAILURE if not open within this"),
    ),
    (0, 0),
    "open the gripper",
    build=leaf(ReleaseBehaviour),
    commands=("limb",),
)

#: The leaf node types: limbtree's skills.
SKILLS: Final = (
    SYNC_MOVE,
    VELOCITY_MOVE,
    JOINT_SYNC_MOVE,
    JOINT_MOVE,
    RECOVER_TO_LAST_VALID,
    WAIT,
    OPERATOR_GATE,
    ALIGN,
    GRASP,
    RELEASE,
)
