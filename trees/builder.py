"""Build a py_trees tree from a validated mission model.

Build apart from run: the mission file is parsed and validated into a model
(:mod:`limbtree.trees.mission`), this module turns the model into behaviours bound to a
:class:`~limbtree.trees.context.MissionContext`, and the runner ticks the result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import py_trees

from limbtree.trees.behaviours import LEAVES, ClockTimeout
from limbtree.trees.context import MissionContext
from limbtree.trees.errors import TreeBuildError
from limbtree.trees.mission.model import NodeModel

Builder = Callable[[NodeModel, list[py_trees.behaviour.Behaviour]], py_trees.behaviour.Behaviour]


def _policy(params: dict[str, Any]) -> py_trees.common.ParallelPolicy.Base:
    policy = params.get("policy", "all")
    synchronise = bool(params.get("synchronise", True))
    if policy == "one":
        return py_trees.common.ParallelPolicy.SuccessOnOne()
    if policy == "selected":
        return py_trees.common.ParallelPolicy.SuccessOnSelected(
            children=[], synchronise=synchronise
        )
    return py_trees.common.ParallelPolicy.SuccessOnAll(synchronise=synchronise)


def build_tree(root: NodeModel, context: MissionContext) -> py_trees.behaviour.Behaviour:
    """The behaviour tree of a mission model.

    Raises:
        TreeBuildError: for a node type this build of limbtree has no behaviour for.
    """

    def build(node: NodeModel) -> py_trees.behaviour.Behaviour:
        params = dict(node.params)
        children = [build(child) for child in node.children]
        kind = node.type
        if kind == "sequence":
            return py_trees.composites.Sequence(
                node.name, memory=bool(params.get("memory", True)), children=children
            )
        if kind in ("fallback", "selector"):
            return py_trees.composites.Selector(
                node.name, memory=bool(params.get("memory", True)), children=children
            )
        if kind == "parallel":
            policy = _policy(params)
            if isinstance(policy, py_trees.common.ParallelPolicy.SuccessOnSelected):
                selected = set(params.get("selected", ()))
                policy.children = [c for c in children if c.name in selected]
            return py_trees.composites.Parallel(node.name, policy=policy, children=children)
        if kind in LEAVES:
            return LEAVES[kind](node.name, context, params)
        if len(children) != 1:
            raise TreeBuildError(f"{node.name}: a {kind} decorator needs exactly one child")
        child = children[0]
        if kind == "repeat":
            times = params.get("times", "forever")
            count = -1 if times in ("forever", None) else int(times)
            return py_trees.decorators.Repeat(node.name, child=child, num_success=count)
        if kind == "retry":
            return py_trees.decorators.Retry(
                node.name, child=child, num_failures=int(params["times"])
            )
        if kind == "until_success":
            times = params.get("times")
            # py_trees' Retry fails once failures reach num_failures: "no cap" is a count
            # that is never reached (-1 would fail at the first failure).
            count = sys.maxsize if times is None else int(times)
            return py_trees.decorators.Retry(node.name, child=child, num_failures=count)
        if kind == "timeout":
            return ClockTimeout(node.name, child, float(params["duration"]), context.clock)
        if kind == "inverter":
            return py_trees.decorators.Inverter(node.name, child=child)
        if kind == "force_success":
            return py_trees.decorators.FailureIsSuccess(node.name, child=child)
        if kind == "force_failure":
            return py_trees.decorators.SuccessIsFailure(node.name, child=child)
        valid = sorted(
            [*LEAVES, "sequence", "fallback", "selector", "parallel", "repeat", "retry"]
            + ["until_success", "timeout", "inverter", "force_success", "force_failure"]
        )
        raise TreeBuildError(f"no behaviour for node type {kind!r}; known: {', '.join(valid)}")

    return build(root)
