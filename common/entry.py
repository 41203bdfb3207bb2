"""The ``limbtree`` command's entry point (and ``python -m limbtree``'s).

It imports the command line inside a ``try``: a Ctrl-C while the libraries load (numpy,
py_trees, ZeroMQ: a fraction of a second) ends the command as one later does, with
``interrupted`` and status 130, not with a traceback from the middle of an import.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Run the ``limbtree`` command line; returns the exit status."""
    try:
        from limbtree.trees.cli import main as run
    except KeyboardInterrupt:
        print("limbtree: interrupted", file=sys.stderr)
        return 130
    return run()
