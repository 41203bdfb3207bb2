"""The ``limbtree`` command's entry point: a Ctrl-C while it imports is an interrupt."""

from __future__ import annotations

import subprocess
import sys

#: A Ctrl-C that lands while the command line's module imports (an import hook raises it
#: there, as SIGINT would: deterministic, where a real signal's moment is not).
INTERRUPTED_IMPORT = """
import sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "limbtree.trees.cli":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
from limbtree.entry import main
sys.exit(main())
"""


def test_a_ctrl_c_while_the_command_imports_is_an_interrupt_not_a_traceback():
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130
    assert done.stderr == "limbtree: interrupted\n"


def test_the_version_is_read_when_asked_for():
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout == f"limbtree {version('limbtree')}\n"
