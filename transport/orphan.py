"""An agent that a runner started ends by itself when that runner dies, however it died.

``limbtree run`` starts its simulated agents as child processes and passes each its own
process id (``limbtree agent --parent-pid PID``). A runner that ends normally stops them; one
killed with SIGKILL (or crashed) cannot. :func:`watch_parent` is the agent's side: a daemon
thread that looks every ``interval_s`` whether the process's parent is still ``parent_pid``.
When the parent dies the operating system hands its children to another process (init or a
sub-reaper), the parent id changes, and the watcher asks the agent to stop; if the agent has
not exited ``grace_s`` later, the watcher ends the process.

An agent restarted by hand or by a supervisor with the runner's command line (the runner's
``--parent-pid`` but another parent) watches the runner's process itself instead: it stops
when no process ``parent_pid`` exists any more.

An agent started by hand (no ``--parent-pid``) is not watched and keeps running.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Final

_log = logging.getLogger(__name__)

#: How often the watcher looks at the parent [s].
WATCH_INTERVAL_S: Final = 0.5
#: How long an orphaned agent may take to stop cleanly before its process is ended [s].
ORPHAN_GRACE_S: Final = 5.0
#: The exit status of an agent ended by the watcher after the grace period.
EXIT_ORPHANED: Final = 3


def watch_parent(
    parent_pid: int,
    on_orphaned: Callable[[], None],
    *,
    interval_s: float = WATCH_INTERVAL_S,
    grace_s: float | None = ORPHAN_GRACE_S,
    getppid: Callable[[], int] = os.getppid,
    exists: Callable[[int], bool] | None = None,
    exit_process: Callable[[int], None] = os._exit,
    stopped: threading.Event | None = None,
) -> threading.Thread:
    """Call ``on_orphaned`` once the runner ``parent_pid`` is gone.

    When ``parent_pid`` is this process's parent, the runner is gone when the parent changes
    (which a reused process id cannot fool). Otherwise (an agent restarted by hand with the
    runner's command line) it is gone when no process ``parent_pid`` exists.

    Args:
        parent_pid: the id of the process that started this one (the runner).
        on_orphaned: asks the agent to stop (called from the watcher thread; must be
            thread-safe, like :meth:`~limbtree.transport.PlantAgent.request_stop`).
        interval_s: how often to look [s], > 0.
        grace_s: after ``on_orphaned``, how long the process may take to exit before
            ``exit_process(EXIT_ORPHANED)`` ends it [s]; None never ends it.
        getppid: the parent's id (injected for tests).
        exists: whether a process id exists (injected for tests); None: ask the system.
        exit_process: ends the process (injected for tests).
        stopped: set by the caller once it has stopped (for whatever reason): the watcher
            then ends at once, before the interpreter's exit (a thread still waiting then
            keeps the agent's objects alive, and compiled libraries report them as leaked).

    Returns:
        The started daemon thread (it ends after ``on_orphaned``, or with the process).

    Raises:
        ValueError: if ``parent_pid`` is not a positive process id or ``interval_s`` <= 0.
    """
    if parent_pid <= 0:
        raise ValueError(f"--parent-pid must be a positive process id, not {parent_pid}")
    if not interval_s > 0:
        raise ValueError(f"interval_s must be > 0, not {interval_s}")
    wake = stopped if stopped is not None else threading.Event()
    if getppid() == parent_pid:

        def present() -> bool:
            return getppid() == parent_pid

    else:
        is_process = _process_exists if exists is None else exists
        _log.info(
            "this agent's parent is not process %d, the runner named by --parent-pid: "
            "watching whether that process still exists",
            parent_pid,
        )

        def present() -> bool:
            return is_process(parent_pid)

    def watch() -> None:
        while present():
            if wake.wait(interval_s):
                return  # the caller stopped first
        _log.warning(
            "the runner (process %d) that started this agent is gone: stopping", parent_pid
        )
        on_orphaned()
        if grace_s is not None and not wake.wait(grace_s):
            _log.error("the agent did not stop within %g s of its runner's death: exiting", grace_s)
            exit_process(EXIT_ORPHANED)

    thread = threading.Thread(target=watch, name=f"limbtree-parent-watch {parent_pid}")
    thread.daemon = True
    thread.start()
    return thread


def _process_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


__all__ = ["EXIT_ORPHANED", "ORPHAN_GRACE_S", "WATCH_INTERVAL_S", "watch_parent"]
