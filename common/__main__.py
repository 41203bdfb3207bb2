"""``python -m limbtree`` is the same as the ``limbtree`` command."""

from limbtree.entry import main

raise SystemExit(main())
