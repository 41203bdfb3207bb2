"""The ``limbtree`` command line (DESIGN.md, "Command line").

Each subcommand is a small function over the library; heavy imports happen inside them so
that ``limbtree --help`` answers at once. Exit status 0 means success; every error prints one
clear line (or ``file:line:column`` lines for missions) and exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import limbtree
from limbtree.errors import LimbtreeError

Handler = Callable[[argparse.Namespace], int]


def _robots(args: argparse.Namespace) -> int:
    from limbtree.robots import format_robot_table, load_robot, robot_names

    names = args.names or list(robot_names())
    print(format_robot_table([load_robot(name) for name in names]))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="limbtree",
        description="Behaviour-tree missions for modular, multi-limbed space robots.",
    )
    parser.add_argument("--version", action="version", version=f"limbtree {limbtree.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    robots = commands.add_parser(
        "robots",
        help="list the robots limbtree knows, with joints, speed limits and end-effectors",
        description="List the robots limbtree knows (built in, and on LIMBTREE_ROBOT_PATH).",
    )
    robots.add_argument("names", nargs="*", metavar="NAME", help="only these robots")
    robots.set_defaults(handler=_robots)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except LimbtreeError as exc:
        print(f"limbtree {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"limbtree {args.command}: interrupted", file=sys.stderr)
        return 130
