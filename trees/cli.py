"""The ``limbtree`` command line."""
from __future__ import annotations
import argparse
import limbtree

def main(argv: list[str] | None = None) -> int:
    """Run the command line."""
    p = argparse.ArgumentParser(prog="limbtree")
    p.add_argument("--version", action="version", version=limbtree.__version__)
    p.parse_args(argv)
    return 0
