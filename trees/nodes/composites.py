"""The composite node types: ``sequence``, ``fallback`` (alias ``selector``), ``parallel``.

BehaviorTree.CPP v4 mapping (``limbtree tree --format xml``), checked against BT.CPP's sources:

- ``sequence`` with memory: ``Sequence``. Both resume at the RUNNING child and start again from
  the first child after the sequence succeeded or failed. (BT.CPP ``SequenceWithMemory``
  differs: after a failure it re-ticks the failed child, never the earlier ones, which
  py_trees cannot express.) Without memory: ``ReactiveSequence``: every tick starts from the
  first child, and a running later child is halted when an earlier one turns RUNNING or
  FAILURE.
- ``fallback`` with memory: ``Fallback`` (resumes at the running child, restarts after
  SUCCESS or after every child failed); without: ``ReactiveFallback``.
- ``parallel``: ``Parallel failure_count="1"`` (py_trees fails a parallel on any failure,
  whatever the policy) and ``success_count`` -1 for policy ``all``, 1 for ``one``, and the
  number of selected children for ``selected``: BT.CPP counts children, it cannot name them,
  so an XML comment lists them. ``synchronise: false`` (py_trees re-ticks children that
  already succeeded) has no BT.CPP counterpart: an XML comment says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import py_trees

from limbtree.trees.context import MissionContext
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.nodes import (
    ALWAYS,
    BtElement,
    Concurrency,
    NodeExport,
    NodeKind,
    NodeSpec,
)
from limbtree.trees.mission.values import Choice, Flag, Names, ParamSpec
from limbtree.trees.nodes.params import MEMORY

Behaviour = py_trees.behaviour.Behaviour
Policy = py_trees.common.ParallelPolicy


def _memory_detail(params: Mapping[str, Any]) -> str:
    return "" if params.get("memory", True) else "reactive"


def _reactive(tag: str) -> Callable[[Mapping[str, Any], str], BtElement]:
    def element(params: Mapping[str, Any], name: str) -> BtElement:
        return BtElement(tag if params.get("memory", True) else "Reactive" + tag)

    return element


def _build_sequence(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    memory = bool(node.params.get("memory", True))
    return py_trees.composites.Sequence(node.name, memory=memory, children=list(children))


def _build_fallback(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    memory = bool(node.params.get("memory", True))
    return py_trees.composites.Selector(node.name, memory=memory, children=list(children))


#: A sequence or fallback without memory re-ticks its first children while a later one runs.
_REACTIVE: Final = Concurrency(lambda params: not params.get("memory", True), "memory false")


def _recognise(cls: type[Behaviour]) -> Callable[[Any], Mapping[str, Any] | None]:
    def recognise(behaviour: Any) -> Mapping[str, Any] | None:
        if not isinstance(behaviour, cls):
            return None
        return {"memory": bool(getattr(behaviour, "memory", True))}

    return recognise


SEQUENCE: Final = NodeSpec(
    "sequence",
    NodeKind.COMPOSITE,
    (MEMORY,),
    (1, None),
    "run the children in order; FAILURE at the first that fails",
    build=_build_sequence,
    export=NodeExport(
        symbol="→",
        detail=_memory_detail,
        fill="#dbe7f5",
        btcpp=_reactive("Sequence"),
        recognise=_recognise(py_trees.composites.Sequence),
    ),
    concurrent=_REACTIVE,
)

FALLBACK: Final = NodeSpec(
    "fallback",
    NodeKind.COMPOSITE,
    (MEMORY,),
    (1, None),
    "try the children in order; SUCCESS at the first that succeeds (alias: selector)",
    build=_build_fallback,
    aliases=("selector",),
    export=NodeExport(
        symbol="?",
        detail=_memory_detail,
        fill="#f6e3c6",
        btcpp=_reactive("Fallback"),
        recognise=_recognise(py_trees.composites.Selector),
    ),
    concurrent=_REACTIVE,
)


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


def _selected(params: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(name) for name in params.get("selected") or ())


def _build_parallel(
    node: NodeModel, children: tuple[Behaviour, ...], context: MissionContext
) -> Behaviour:
    params = node.params
    policy_name = params.get("policy", "all")
    synchronise = bool(params.get("synchronise", True))
    policy: Policy.Base
    if policy_name == "one":
        policy = Policy.SuccessOnOne()
    elif policy_name == "selected":
        selected = set(_selected(params))
        waited = [child for child in children if child.name in selected]
        policy = Policy.SuccessOnSelected(children=waited, synchronise=synchronise)
    else:
        policy = Policy.SuccessOnAll(synchronise=synchronise)
    return py_trees.composites.Parallel(node.name, policy=policy, children=list(children))


def _parallel_detail(params: Mapping[str, Any]) -> str:
    policy = params.get("policy", "all")
    if policy == "one":
        return "one succeeds"
    detail = (
        f"selected succeed: {', '.join(_selected(params))}"
        if policy == "selected"
        else "all succeed"
    )
    return detail if params.get("synchronise", True) else detail + ", re-ticks successes"


def _parallel_btcpp(params: Mapping[str, Any], name: str) -> BtElement:
    policy = params.get("policy", "all")
    selected = _selected(params)
    success = {"all": -1, "one": 1}.get(str(policy), len(selected))
    comments: list[str] = []
    if policy == "selected":
        comments.append(f"{name}: succeeds once these succeed: {', '.join(selected)}")
    if policy != "one" and not params.get("synchronise", True):
        comments.append(f"{name}: py_trees re-ticks children that already succeeded")
    attributes = {"success_count": str(success), "failure_count": "1"}
    return BtElement("Parallel", attributes, tuple(comments))


def _recognise_parallel(behaviour: Any) -> Mapping[str, Any] | None:
    if not isinstance(behaviour, py_trees.composites.Parallel):
        return None
    policy = behaviour.policy
    if isinstance(policy, Policy.SuccessOnOne):
        name = "one"
    elif isinstance(policy, Policy.SuccessOnSelected):
        name = "selected"
    else:
        name = "all"
    selected = tuple(str(c.name) for c in getattr(policy, "children", ()) or ())
    return {
        "policy": name,
        "synchronise": bool(getattr(policy, "synchronise", False)),
        "selected": selected if name == "selected" else None,
    }


PARALLEL: Final = NodeSpec(
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
    build=_build_parallel,
    export=NodeExport(
        symbol="⇉",
        detail=_parallel_detail,
        fill="#e4dcf3",
        btcpp=_parallel_btcpp,
        recognise=_recognise_parallel,
    ),
    concurrent=ALWAYS,
)

#: The composite node types.
COMPOSITES: Final = (SEQUENCE, FALLBACK, PARALLEL)
