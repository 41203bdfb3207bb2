"""Signals that end a run: SIGTERM (and SIGHUP) abort it the way Ctrl-C does.

``limbtree run`` may be stopped by a process manager, a CI job's time limit or ``kill``, not
only by an operator at the keyboard. :func:`signals_abort` turns those signals into a
:class:`RunInterrupted` (a ``KeyboardInterrupt``), so every path that handles Ctrl-C (the
runner's loop, the agents' start-up) ends the run the same way: limbs told to hold, record
closed with outcome ABORTED, agent processes stopped, temporary folders removed.

The first signal raises; later ones, while the run is already stopping, are ignored, so a
second ``kill`` cannot cut the clean-up short (SIGKILL still can).
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


#: The signals that abort a run: SIGINT (Ctrl-C), SIGTERM (``kill``), SIGHUP (the terminal
#: closed).
ABORT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class AbortSignals:
    """The state of :func:`signals_abort`: whether a signal came, and whether it still raises.

    Attributes:
        received: the name of the first signal received (``Ctrl-C`` for SIGINT), or None.
        armed: whether a signal raises; :meth:`disarm` once the run has ended, so that a
            signal during the clean-up cannot cut it short.
    """

    def __init__(self) -> None:
        self.received: str | None = None
        self.armed = True

    def disarm(self) -> None:
        """Signals from now on are noted, not raised."""
        self.armed = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler: the first signal raises while armed, any other is noted."""
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        first = self.received is None
        self.received = self.received or name
        if first and self.armed:
            raise RunInterrupted(name)


@contextlib.contextmanager
def signals_abort(signals: Sequence[signal.Signals] = ABORT_SIGNALS) -> Iterator[AbortSignals]:
    """While inside, the first of ``signals`` raises :class:`RunInterrupted` in the main thread.

    Outside the main thread (where Python cannot install handlers) signals keep their
    handlers. The previous handlers are restored on exit.
    """
    state = AbortSignals()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    previous = {sig: signal.signal(sig, state.handle) for sig in signals}
    try:
        yield state
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


__all__ = ["ABORT_SIGNALS", "AbortSignals", "RunInterrupted", "signals_abort"]
