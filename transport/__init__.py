"""limbtree.transport."""
