"""``python -m limbtree`` is the same as the ``limbtree`` command."""

from limbtree.trees.cli import main

raise SystemExit(main())
