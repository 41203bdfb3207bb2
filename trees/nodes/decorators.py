"""The decorator node types: one child each.

BehaviorTree.CPP v4 mapping: ``repeat`` is ``Repeat num_cycles`` (-1: forever); ``retry``
and ``until_success`` are ``RetryUntilSuccessful num_attempts`` (both give up on the n-th
failure, so n attempts in all; -1: no limit); ``timeout`` is ``Timeout msec`` (limbtree counts
mission time, BT.CPP wall time: the same in the ``real`` clock); ``inverter``,
``force_success`` and ``force_failure`` are BT.CPP's ``Inverter``, ``ForceSuccess`` and
``ForceFailure``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

import py_trees

from limbtree.trees.behaviours.timeout import ClockTimeout
from limbtree.trees.context import MissionContext
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.nodes import BtElement, NodeExport, NodeKind, NodeSpec
from limbtree.trees.mission.values import REQUIRED, Integer, ParamSpec
from limbtree.trees.nodes.params import POSITIVE_S

Behaviour = py_trees.behaviour.Behaviour

#: py_trees' Retry fails once failures reach num_failures: "no cap" is a count that is never
#: reached (-1 would fail at the first failure).
_NO_CAP: Final = sys.maxsize


def _count(times: Any) -> int | None:
    """A ``times`` parameter as a count, None for forever / no limit."""
    return None if times in (None, "forever") else int(times)


def _attempts(params: Mapping[str, Any]) -> str:
    count = _count(params.get("times"))
    return "" if count is None else f"{count} attempt{'s' if count != 1 else ''}"


def _fixed(tag: str) -> Callable[[Mapping[str, Any], str], BtElement]:
    def element(params: Mapping[str, Any], name: str) -> BtElement:
        return BtElement(tag)

    return element


def _only(cls: type[Behaviour]) -> Callable[[Any], Mapping[str, Any] | None]:
    def recognise(behaviour: Any) -> Mapping[str, Any] | None:
        return {} if isinstance(behaviour, cls) else None

    return recognise


# repeat ----------------------------------------------------------------------------------


def _build_repeat(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    count = _count(node.params.get("times"))
    (child,) = children
    return py_trees.decorators.Repeat(
        node.name, child=child, num_success=-1 if count is None else count
    )


def _repeat_detail(params: Mapping[str, Any]) -> str:
    count = _count(params.get("times"))
    return "forever" if count is None else f"×{count}"


def _repeat_btcpp(params: Mapping[str, Any], name: str) -> BtElement:
    count = _count(params.get("times"))
    return BtElement("Repeat", {"num_cycles": str(-1 if count is None else count)})


def _recognise_repeat(behaviour: Any) -> Mapping[str, Any] | None:
    if not isinstance(behaviour, py_trees.decorators.Repeat):
        return None
    count = int(behaviour.num_success)
    return {"times": None if count < 0 else count}


REPEAT: Final = NodeSpec(
    "repeat",
    NodeKind.DECORATOR,
    (
        ParamSpec(
            "times",
            Integer(1, forever=True),
            "forever",
            "how many successes; forever never stops",
        ),
    ),
    (1, 1),
    "run the child again each time it succeeds; FAILURE when it fails",
    build=_build_repeat,
    export=NodeExport(detail=_repeat_detail, btcpp=_repeat_btcpp, recognise=_recognise_repeat),
)


# retry, until_success --------------------------------------------------------------------


def _build_retry(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    count = _count(node.params.get("times"))
    (child,) = children
    return py_trees.decorators.Retry(
        node.name, child=child, num_failures=_NO_CAP if count is None else count
    )


def _retry_btcpp(params: Mapping[str, Any], name: str) -> BtElement:
    count = _count(params.get("times"))
    return BtElement("RetryUntilSuccessful", {"num_attempts": str(-1 if count is None else count)})


def _retry_count(behaviour: Any) -> int | None:
    """A hand-built Retry's attempts, None when it has no limit (-1 or the no-cap count)."""
    count = int(behaviour.num_failures)
    return None if count < 0 or count >= _NO_CAP else count


def _recognise_retry(behaviour: Any) -> Mapping[str, Any] | None:
    if not isinstance(behaviour, py_trees.decorators.Retry):
        return None
    count = _retry_count(behaviour)
    return None if count is None else {"times": count}


def _recognise_until_success(behaviour: Any) -> Mapping[str, Any] | None:
    if not isinstance(behaviour, py_trees.decorators.Retry) or _retry_count(behaviour) is not None:
        return None
    return {"times": None}


RETRY: Final = NodeSpec(
    "retry",
    NodeKind.DECORATOR,
    (ParamSpec("times", Integer(1), REQUIRED, "how many attempts in all"),),
    (1, 1),
    "run the child again when it fails, up to times attempts",
    build=_build_retry,
    export=NodeExport(detail=_attempts, btcpp=_retry_btcpp, recognise=_recognise_retry),
)

UNTIL_SUCCESS: Final = NodeSpec(
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
    build=_build_retry,
    export=NodeExport(detail=_attempts, btcpp=_retry_btcpp, recognise=_recognise_until_success),
)


# timeout ---------------------------------------------------------------------------------


def _build_timeout(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    (child,) = children
    return ClockTimeout(node.name, child, float(node.params["duration"]), context.clock)


def _timeout_btcpp(params: Mapping[str, Any], name: str) -> BtElement:
    msec = round(float(params.get("duration", 0.0)) * 1000.0)
    return BtElement("Timeout", {"msec": str(msec)})


def _recognise_timeout(behaviour: Any) -> Mapping[str, Any] | None:
    if not isinstance(behaviour, ClockTimeout | py_trees.decorators.Timeout):
        return None
    return {"duration": float(behaviour.duration)}


TIMEOUT: Final = NodeSpec(
    "timeout",
    NodeKind.DECORATOR,
    (ParamSpec("duration", POSITIVE_S, REQUIRED, "mission time allowed"),),
    (1, 1),
    "FAILURE when the child still runs after duration_s of mission time",
    build=_build_timeout,
    export=NodeExport(
        detail=lambda params: f"{float(params.get('duration', 0.0)):g} s",
        btcpp=_timeout_btcpp,
        recognise=_recognise_timeout,
    ),
)


# inverter, force_success, force_failure --------------------------------------------------


def _wrapping(cls: type[py_trees.decorators.Decorator]) -> Callable[..., Behaviour]:
    def build(
        node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
    ) -> Behaviour:
        (child,) = children
        return cls(node.name, child=child)

    return build


INVERTER: Final = NodeSpec(
    "inverter",
    NodeKind.DECORATOR,
    (),
    (1, 1),
    "swap the child's SUCCESS and FAILURE",
    build=_wrapping(py_trees.decorators.Inverter),
    export=NodeExport(btcpp=_fixed("Inverter"), recognise=_only(py_trees.decorators.Inverter)),
)

FORCE_SUCCESS: Final = NodeSpec(
    "force_success",
    NodeKind.DECORATOR,
    (),
    (1, 1),
    "SUCCESS whenever the child finishes",
    build=_wrapping(py_trees.decorators.FailureIsSuccess),
    export=NodeExport(
        btcpp=_fixed("ForceSuccess"), recognise=_only(py_trees.decorators.FailureIsSuccess)
    ),
)

FORCE_FAILURE: Final = NodeSpec(
    "force_failure",
    NodeKind.DECORATOR,
    (),
    (1, 1),
    "FAILURE whenever the child finishes",
    build=_wrapping(py_trees.decorators.SuccessIsFailure),
    export=NodeExport(
        btcpp=_fixed("ForceFailure"), recognise=_only(py_trees.decorators.SuccessIsFailure)
    ),
)

#: The decorator node types.
DECORATORS: Final = (
    REPEAT,
    RETRY,
    TIMEOUT,
    INVERTER,
    FORCE_SUCCESS,
    FORCE_FAILURE,
    UNTIL_SUCCESS,
)
