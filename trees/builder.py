"""Build a py_trees tree from a validated mission model.

Build apart from run: the mission file is parsed and validated into a model
(:mod:`limbtree.trees.mission`), this module turns the model into behaviours bound to a
:class:`~limbtree.trees.context.MissionContext`, and the runner ticks the result. Each node
type's declaration (:class:`~limbtree.trees.mission.nodes.NodeSpec`) says how its behaviour
is built; every built behaviour, composite or leaf, carries ``node_type`` (the mission-file
type name) and ``node_params`` (its validated parameters, SI, after ``--set``); the root
of an inlined subtree use also carries ``node_subtree``, the subtree's name (from
:attr:`~limbtree.trees.mission.model.NodeModel.origin`), and ``node_passed``, and a node
with a parameter written ``$NAME`` of its subtree ``node_bound``: the BT.CPP export writes
them back as ``<SubTree>`` ports.
"""

from __future__ import annotations

from types import MappingProxyType

import py_trees

from limbtree.trees.context import MissionContext
from limbtree.trees.errors import TreeBuildError
from limbtree.trees.mission.model import NodeModel
from limbtree.trees.mission.nodes import NodeRegistry


def build_tree(
    root: NodeModel, context: MissionContext, registry: NodeRegistry | None = None
) -> py_trees.behaviour.Behaviour:
    """The behaviour tree of a mission model.

    Args:
        root: the model's root node.
        context: the limbs, clock and operator the behaviours are bound to.
        registry: the node types; None: :func:`limbtree.trees.nodes.default_registry`.

    Raises:
        TreeBuildError: for a node type the registry does not know or cannot build.
    """
    if registry is None:
        from limbtree.trees.nodes import default_registry

        registry = default_registry()
    types = registry

    def build(node: NodeModel) -> py_trees.behaviour.Behaviour:
        spec = types.resolve(node.type)
        if spec is None or spec.build is None:
            buildable = sorted(name for name, s in types.items() if s.build is not None)
            why = "no such node type" if spec is None else "its declaration has no build"
            raise TreeBuildError(
                f"{node.name}: no behaviour for node type {node.type!r} ({why}); "
                f"known: {', '.join(buildable)}"
            )
        children = tuple(build(child) for child in node.children)
        behaviour = spec.build(node, children, context)
        # The node's identity for the exports, the recorder and the viewers (set on the
        # instance: a SkillBehaviour's class-level node_type is only its default).
        vars(behaviour).update(node_type=spec.type, node_params=MappingProxyType(dict(node.params)))
        if node.subtree is not None:
            vars(behaviour).update(node_subtree=node.subtree, node_passed=node.passed)
        if node.bound:
            vars(behaviour).update(node_bound=node.bound)
        return behaviour

    return build(root)
