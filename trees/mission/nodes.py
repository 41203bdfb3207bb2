"""The node vocabulary of mission trees: composites, decorators and skill leaves.

:data:`NODE_SPECS` is the registry the loader checks trees against: node type ->
:class:`NodeSpec`, each listing its parameters (:class:`ParamSpec`: model name, value type,
default in the file's unit) and how many children it takes. It is read-only; a later skill
adds its node by building a new registry, ``with_specs(NODE_SPECS, ALIGN_SPEC)``, and
passing it to the loader (``load_mission(..., specs=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final

from limbtree.trees.mission.controllers import ControllerParams, check_controller
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.units import DEG, MM, MM_S, MM_S2, NONE, S
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    Flag,
    Integer,
    LimbList,
    LimbName,
    Names,
    ParamSpec,
    PerLimb,
    PoseSpec,
    Posture,
    Postures,
    Profile,
    Quantity,
    Text,
    Waypoints,
)


class NodeKind(StrEnum):
    """What a node does with children."""

    COMPOSITE = "composite"
    DECORATOR = "decorator"
    LEAF = "leaf"


#: A node type's own check over its read parameters and children: returns the parameters
#: (possibly completed), and reports problems through ``report(key, message)``.
NodeCheck = Callable[
    [Mapping[str, Any], tuple[NodeModel, ...], Callable[[str, str], None]], Mapping[str, Any]
]


@dataclass(frozen=True)
class NodeSpec:
    """A node type of mission trees.

    Attributes:
        type: the name in mission files.
        kind: composite (``children: [...]``), decorator (``child: ...``) or leaf.
        params: its parameters, in the order of the reference.
        children: the least and most number of children (None: no limit).
        doc: one line for the reference.
        check: checks across parameters and children, or None.
    """

    type: str
    kind: NodeKind
    params: tuple[ParamSpec, ...]
    children: tuple[int, int | None]
    doc: str = ""
    check: NodeCheck | None = None

    def __post_init__(self) -> None:
        low, high = self.children
        expected = {NodeKind.LEAF: (0, 0), NodeKind.DECORATOR: (1, 1)}.get(self.kind)
        if expected is not None and (low, high) != expected:
            raise ValueError(f"a {self.kind} takes {expected} children, not {self.children}")
        if self.kind is NodeKind.COMPOSITE and (low < 0 or (high is not None and high < low)):
            raise ValueError(f"bad children range {self.children} for {self.type}")
        keys = [p.key for p in self.params]
        if len(set(keys)) != len(keys) or {"name", "child", "children"} & set(keys):
            raise ValueError(f"{self.type}: parameter keys must be distinct and not reserved")

    @property
    def child_key(self) -> str | None:
        """The key its children go under: ``children``, ``child``, or None for a leaf."""
        return {NodeKind.COMPOSITE: "children", NodeKind.DECORATOR: "child"}.get(self.kind)

    def param(self, name: str) -> ParamSpec:
        """The parameter with model name ``name``.

        Raises:
            KeyError: when the node type has no such parameter.
        """
        for spec in self.params:
            if spec.name == name:
                return spec
        raise KeyError(f"{self.type} has no parameter {name!r}")


def with_specs(base: Mapping[str, NodeSpec], *specs: NodeSpec) -> Mapping[str, NodeSpec]:
    """A new read-only registry: ``base`` plus (or with replaced) ``specs``."""
    merged = dict(base)
    merged.update((spec.type, spec) for spec in specs)
    return MappingProxyType(merged)


# Parameters shared by several nodes -------------------------------------------------------

_POSITIVE_S: Final = Quantity(S, low=0, low_open=True)
LIMBS: Final = ParamSpec("limbs", LimbList(), REQUIRED, "the limbs the node moves")


def _p_e(default: float) -> ParamSpec:
    return ParamSpec(
        "p_e",
        PerLimb(Quantity(MM, low=0, low_open=True, allow_inf=True)),
        default,
        "hypersphere radius on position, one number or per limb (seed 000 eq. 7)",
    )


def _r_e(default: float) -> ParamSpec:
    return ParamSpec(
        "r_e",
        PerLimb(Quantity(DEG, low=0, low_open=True, allow_inf=True)),
        default,
        "hypersphere radius on rotation, one number or per limb; inf ignores rotation",
    )


STALE_TIMEOUT: Final = ParamSpec(
    "stale_timeout", _POSITIVE_S, 5.0, "FAILURE when a limb's state is stale this long"
)


def _settle_mm(default: float) -> ParamSpec:
    return ParamSpec(
        "settle",
        Quantity(MM, low=0, low_open=True),
        default,
        "success once every limb is this close to the last waypoint",
    )


def _settle_deg(default: float) -> ParamSpec:
    return ParamSpec(
        "settle",
        Quantity(DEG, low=0, low_open=True),
        default,
        "success once every joint is this close to the last posture",
    )


_Q_E: Final = ParamSpec(
    "q_e",
    Quantity(DEG, low=0, low_open=True),
    5.0,
    "per-joint radius of the joint-space clamp",
)
_MEMORY: Final = ParamSpec(
    "memory", Flag(), True, "resume from the running child (true) or restart each tick"
)


def _check_align(
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


def _check_parallel(
    params: Mapping[str, Any],
    children: tuple[NodeModel, ...],
    report: Callable[[str, str], None],
) -> Mapping[str, Any]:
    """``selected`` names children, each exactly one, and goes with policy ``selected``."""
    policy = params.get("policy")
    selected = params.get("selected")
    if policy != "selected":
        if selected is not None:
            report("selected", "selected applies only to policy: selected")
        return params
    if selected is None:
        report("policy", "policy selected needs selected: the names of the children to wait for")
        return params
    names = [child.name for child in children]
    for name in selected if isinstance(selected, Sequence) else ():
        count = names.count(name)
        if count != 1:
            why = "no child" if count == 0 else f"{count} children"
            report("selected", f"selected: {why} named {name}; children: {', '.join(names)}")
    return params


_SPECS: Final = (
    # Composites --------------------------------------------------------------------------
    NodeSpec(
        "sequence",
        NodeKind.COMPOSITE,
        (_MEMORY,),
        (1, None),
        "run the children in order; FAILURE at the first that fails",
    ),
    NodeSpec(
        "fallback",
        NodeKind.COMPOSITE,
        (_MEMORY,),
        (1, None),
        "try the children in order; SUCCESS at the first that succeeds (alias: selector)",
    ),
    NodeSpec(
        "parallel",
        NodeKind.COMPOSITE,
        (
            ParamSpec(
                "policy",
                Choice(("all", "one", "selected")),
                "all",
                "SUCCESS when all, one, or the selected children succeed",
            ),
            ParamSpec(
                "synchronise",
                Flag(),
                True,
                "policies all and selected: do not re-tick children that succeeded",
            ),
            ParamSpec(
                "selected",
                Names(),
                None,
                "policy selected: the names of the children to wait for",
            ),
        ),
        (1, None),
        "tick every child each tick",
        _check_parallel,
    ),
    # Decorators --------------------------------------------------------------------------
    NodeSpec(
        "repeat",
        NodeKind.DECORATOR,
        (
            ParamSpec(
                "times",
                Integer(1, forever=True),
                "forever",
                "how many successes; forever (model: None) never stops",
            ),
        ),
        (1, 1),
        "run the child again each time it succeeds; FAILURE when it fails",
    ),
    NodeSpec(
        "retry",
        NodeKind.DECORATOR,
        (ParamSpec("times", Integer(1), REQUIRED, "how many attempts in all"),),
        (1, 1),
        "run the child again when it fails, up to times attempts",
    ),
    NodeSpec(
        "timeout",
        NodeKind.DECORATOR,
        (ParamSpec("duration", _POSITIVE_S, REQUIRED, "mission time allowed"),),
        (1, 1),
        "FAILURE when the child still runs after duration_s of mission time",
    ),
    NodeSpec("inverter", NodeKind.DECORATOR, (), (1, 1), "swap the child's SUCCESS and FAILURE"),
    NodeSpec(
        "force_success", NodeKind.DECORATOR, (), (1, 1), "SUCCESS whenever the child finishes"
    ),
    NodeSpec(
        "force_failure", NodeKind.DECORATOR, (), (1, 1), "FAILURE whenever the child finishes"
    ),
    NodeSpec(
        "until_success",
        NodeKind.DECORATOR,
        (
            ParamSpec(
                "times",
                Integer(1),
                None,
                "at most this many attempts, then FAILURE; none: no limit",
            ),
        ),
        (1, 1),
        "run the child again each time it fails, until it succeeds",
    ),
    # Leaves ------------------------------------------------------------------------------
    NodeSpec(
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
            _p_e(20.0),
            _r_e(float("inf")),
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
            _settle_mm(2.0),
            STALE_TIMEOUT,
            ParamSpec(
                "loop", Flag(), False, "after the last waypoint go back to the first, forever"
            ),
        ),
        (0, 0),
        "n end-effectors through waypoints in sync, clamped to the hypersphere (seed 000)",
    ),
    NodeSpec(
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
            _p_e(50.0),
            _r_e(30.0),
            STALE_TIMEOUT,
        ),
        (0, 0),
        "integrate a velocity profile, clamped around the sensed state (seed 000 eq. 11)",
    ),
    NodeSpec(
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
            _Q_E,
            _settle_deg(1.0),
            STALE_TIMEOUT,
        ),
        (0, 0),
        "limbs through joint postures in sync, clamped in joint space",
    ),
    NodeSpec(
        "joint_move",
        NodeKind.LEAF,
        (
            ParamSpec("limb", LimbName(), REQUIRED, "the limb to move"),
            ParamSpec("posture", Posture(), REQUIRED, "a posture name or {q_deg: [...]}"),
            _Q_E,
            _settle_deg(1.0),
            ParamSpec(
                "timeout", _POSITIVE_S, None, "FAILURE after this much mission time; none: never"
            ),
            STALE_TIMEOUT,
        ),
        (0, 0),
        "one limb into a posture (reconfiguration)",
    ),
    NodeSpec(
        "recover_to_last_valid",
        NodeKind.LEAF,
        (LIMBS, _p_e(20.0), _r_e(float("inf")), _settle_mm(2.0), STALE_TIMEOUT),
        (0, 0),
        "bring the limbs back onto their last valid command (seed 000 Sec. II-B)",
    ),
    NodeSpec(
        "wait",
        NodeKind.LEAF,
        (ParamSpec("duration", _POSITIVE_S, REQUIRED, "how long"),),
        (0, 0),
        "RUNNING for duration_s of mission time, then SUCCESS",
    ),
    NodeSpec(
        "operator_gate",
        NodeKind.LEAF,
        (ParamSpec("prompt", Text(), REQUIRED, "what the operator confirms"),),
        (0, 0),
        "wait for the operator to confirm (--auto-confirm passes it)",
    ),
    NodeSpec(
        "align",
        NodeKind.LEAF,
        (
            ParamSpec("limb", LimbName(), REQUIRED, "the limb whose end-effector aligns"),
            ParamSpec(
                "target", Text(), REQUIRED, "motion-capture body to align to, e.g. wheel/grasp"
            ),
            ParamSpec(
                "offset",
                PoseSpec(),
                None,
                "goal relative to the target, in its frame (seed 002: 150 mm above the grasp "
                "point); none: the target itself",
            ),
            ParamSpec("version", Integer(1), 2, "1: step-and-settle; 2: adaptive clamp"),
            ParamSpec("dd", Quantity(MM, low=0, low_open=True), 10.0, "success: position error"),
            ParamSpec(
                "dtheta", Quantity(DEG, low=0, low_open=True), 2.0, "success: rotation error"
            ),
            _p_e(20.0),
            _r_e(10.0),
            ParamSpec(
                "max_speed",
                Quantity(MM_S, low=0, low_open=True),
                50.0,
                "version 1: the peak speed of each step's interpolation (the synchronizer's "
                "LERP, easing in and out; version 2's t_max)",
            ),
            ParamSpec(
                "max_accel",
                Quantity(MM_S2, low=0, low_open=True),
                150.0,
                "version 1: the peak acceleration of each step's interpolation (version 2's "
                "largest: its filter taking t_max from rest, t_max / (tau_lin + 1/30 s))",
            ),
            ParamSpec("timeout", _POSITIVE_S, None, "FAILURE after this long; none: never"),
            ParamSpec(
                "metrics", Text(), "align", "summary.json metrics key for this alignment's figures"
            ),
            ParamSpec(
                "v1", ControllerParams(1), None, "Version 1's parameters, e.g. {s_max_mm: 20}"
            ),
            ParamSpec(
                "v2", ControllerParams(2), None, "Version 2's parameters, e.g. {t_max_mm_s: 30}"
            ),
            STALE_TIMEOUT,
        ),
        (0, 0),
        "drive an end-effector onto a motion-captured target (seed 002 V1 or V2)",
        _check_align,
    ),
    NodeSpec(
        "grasp",
        NodeKind.LEAF,
        (
            ParamSpec("limb", LimbName(), REQUIRED, "the limb whose gripper closes"),
            ParamSpec("module", Text(), None, "the module it must hold; none: any"),
            ParamSpec("timeout", _POSITIVE_S, 2.0, "FAILURE if not attached within this"),
        ),
        (0, 0),
        "close the gripper and check that the module is attached",
    ),
    NodeSpec(
        "release",
        NodeKind.LEAF,
        (
            ParamSpec("limb", LimbName(), REQUIRED, "the limb whose gripper opens"),
            ParamSpec("timeout", _POSITIVE_S, 2.0, "FAILURE if not open within this"),
        ),
        (0, 0),
        "open the gripper",
    ),
)

#: Node type -> spec: the vocabulary of mission trees.
NODE_SPECS: Final[Mapping[str, NodeSpec]] = MappingProxyType({spec.type: spec for spec in _SPECS})

#: Other names for node types: alias -> type.
NODE_ALIASES: Final[Mapping[str, str]] = MappingProxyType({"selector": "fallback"})
