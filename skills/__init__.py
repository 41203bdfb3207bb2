"""limbtree.skills."""
