"""Node identities: every node of a built tree gets the path of child indices from the root.

The root is ``"0"``, its children ``"0.0"``, ``"0.1"``, ..., their children ``"0.1.0"``, and
so on (DESIGN.md, "Node types"). The id depends only on the tree's shape, so it is the same
in every run of the same mission file and parameters; a node's name is for display only,
and two nodes with one name stay two nodes in the record, the summary, the views and the
report.
"""

from __future__ import annotations

from collections.abc import Iterator

import py_trees

#: The root's id.
ROOT_ID = "0"


def walk(root: py_trees.behaviour.Behaviour) -> Iterator[tuple[str, py_trees.behaviour.Behaviour]]:
    """Every node of a tree with its id, parents before children, children in order.

    Args:
        root: the built tree.

    Yields:
        (node id, behaviour) pairs.
    """
    stack: list[tuple[str, py_trees.behaviour.Behaviour]] = [(ROOT_ID, root)]
    while stack:
        node_id, node = stack.pop()
        yield node_id, node
        children = list(node.children)
        for index in range(len(children) - 1, -1, -1):
            stack.append((f"{node_id}.{index}", children[index]))


def assign_node_ids(root: py_trees.behaviour.Behaviour) -> dict[str, py_trees.behaviour.Behaviour]:
    """Set ``node_id`` on every node of a built tree; the runner calls it before the first tick.

    Args:
        root: the built tree.

    Returns:
        node id -> behaviour, parents before children.
    """
    nodes: dict[str, py_trees.behaviour.Behaviour] = {}
    for node_id, node in walk(root):
        node.node_id = node_id  # type: ignore[attr-defined]
        nodes[node_id] = node
    return nodes


def node_id(node: py_trees.behaviour.Behaviour) -> str:
    """The id :func:`assign_node_ids` gave ``node``.

    Raises:
        AttributeError: when the node belongs to no tree that got ids (a bug: the runner
            assigns them before the first tick).
    """
    value = getattr(node, "node_id", None)
    if not isinstance(value, str):
        raise AttributeError(
            f"node {node.name!r} has no node_id; call limbtree.trees.identity.assign_node_ids "
            "on its tree first"
        )
    return value


__all__ = ["ROOT_ID", "assign_node_ids", "node_id", "walk"]
