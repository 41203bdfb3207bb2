"""limbtree.robots."""
