"""Signals that end a run: SIGTERM (and SIGHUP) abort it the way Ctrl-C does.

``limbtree run`` may be stopped by a process manager, a CI job's time limit or ``kill``, not
only by an operator at the keyboard. :func:`signals_abort` notes those signals (and Ctrl-C's
SIGINT); the run stops at its next safe point, between two pings of the agents' start-up
(a :class:`RunInterrupted`, a ``KeyboardInterrupt``) or between two ticks, and ends the
same way whatever the signal: limbs told to hold, record closed with outcome ABORTED, agent
processes stopped, temporary folders removed. Later signals, while the run is already
stopping, change nothing, so a second ``kill`` cannot cut the clean-up short (SIGKILL
still can).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType


class RunInterrupted(KeyboardInterrupt):
    """A signal asked the run to stop.

    Attributes:
        signal_name: the signal's name (``SIGTERM``), or ``Ctrl-C`` for SIGINT.
    """

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


#: The environment variable a sweep sets for each ``limbtree run`` it starts: the sweep's
#: process id. The run aborts, as on SIGTERM, once that process is gone (a sweep killed with
#: SIGKILL must not leave runs writing into folders its next attempt clears).
STOP_WITH_ENV = "LIMBTREE_STOP_WITH"
#: The cause an orphaned sweep run records: ``interrupted (its sweep ended)``.
SWEEP_ENDED = "its sweep ended"

#: The signals that abort a run: SIGINT (Ctrl-C), SIGTERM (``kill``), SIGHUP (the terminal
#: closed).
ABORT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class AbortSignals:
    """What :func:`signals_abort` noted: the first signal received, if any.

    The handler only notes the signal; the run stops at its next safe point (between two
    pings of the agents' start-up, between two ticks): :meth:`check` raises there. Raising
    from the handler itself could cut anything in the middle, a ZeroMQ socket left open
    (its context then never terminates) or a tick half recorded.

    Attributes:
        received: the name of the first signal received (``Ctrl-C`` for SIGINT), or None.
    """

    def __init__(self) -> None:
        self.received: str | None = None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: note the first signal."""
        self.note("Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name)

    def note(self, why: str) -> None:
        """Stop the run at its next safe point as a signal would (``why`` names the cause).

        Thread-safe: a watcher thread calls it when the sweep that started the run is gone.
        """
        if self.received is None:
            self.received = why

    def check(self) -> None:
        """A safe point: stop here if a signal came.

        Raises:
            RunInterrupted: naming the signal.
        """
        if self.received is not None:
            raise RunInterrupted(self.received)


@contextlib.contextmanager
def signals_abort(
    signals: Sequence[signal.Signals] = ABORT_SIGNALS, state: AbortSignals | None = None
) -> Iterator[AbortSignals]:
    """While inside, ``signals`` are noted in the returned :class:`AbortSignals`.

    The run checks it at its safe points. Outside the main thread (where Python cannot
    install handlers) signals keep their handlers. The previous handlers are restored on
    exit.

    Args:
        signals: the signals that abort.
        state: where to note them: one that may have noted a signal already (the command
            line's, from before its libraries were imported); None: a new one.
    """
    state = AbortSignals() if state is None else state
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = {sig: signal.signal(sig, state.handle) for sig in signals}
    try:
        yield state
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


__all__ = [
    "ABORT_SIGNALS",
    "STOP_WITH_ENV",
    "SWEEP_ENDED",
    "AbortSignals",
    "RunInterrupted",
    "signals_abort",
]
