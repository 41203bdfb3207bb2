"""limbtree.trees."""
