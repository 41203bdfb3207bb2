"""Outages of something that fails tick after tick (a limb's bus, a plant), logged by outage.

A failing bus raises at every tick of the loop that calls it; one log line per tick would
flood the log, and logging only the first failure ever hides every later outage. An
:class:`OutageLog` keeps the outage in progress (since when, why, how many failed ticks) and
logs each outage's first failure with its traceback, a summary every ``every_s`` while it
lasts, and its end. At most :data:`OUTAGE_LOG_BURST` outages starting within ``every_s``
are logged one by one; when a bus flaps faster, an outage beyond them is logged only if it
lasts ``every_s``, otherwise it is counted, and the count is logged with the next outage
logged, or on its own ``every_s`` after the last line. The log gets a few lines per
``every_s`` at most, and every outage shows in it.

Times are the caller's (the driver's or the agent's time [s]); nothing here reads a clock.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["OUTAGE_LOG_BURST", "OUTAGE_LOG_EVERY_S", "Outage", "OutageLog"]

OUTAGE_LOG_EVERY_S: Final = 5.0
"""While an outage lasts, one summary line this often [s]; the window of
:data:`OUTAGE_LOG_BURST`."""
OUTAGE_LOG_BURST: Final = 3
"""How many outages starting within :data:`OUTAGE_LOG_EVERY_S` are logged one by one."""


@dataclass
class Outage:
    """One outage: from its first failed tick until a tick succeeds again.

    Attributes:
        what: what fails, for a person (``"its joint reads"``).
        error: the last failure, ``"OSError: serial cable unplugged"``.
        since_s: the time of the first failed tick [s].
        failed_ticks: the ticks that failed so far.
        logged_s: the time of its last log line [s] (its start when it was not logged).
        logged: whether a line said it started (then its end is logged too).
    """

    what: str
    error: str
    since_s: float
    failed_ticks: int = 1
    logged_s: float = 0.0
    logged: bool = False

    def detail(self) -> dict[str, Any]:
        """``error``, ``since`` [s] and ``failed_ticks``, for a state's ``detail``."""
        return {"error": self.error, "since": self.since_s, "failed_ticks": self.failed_ticks}


class OutageLog:
    """The outages of one thing, logged once each (see the module).

    Call :meth:`failed` for each failed tick and :meth:`succeeded` for each tick that
    worked (it costs next to nothing while nothing fails).

    Args:
        logger: where the lines go (first failure and summaries ``ERROR``, end ``WARNING``).
        subject: who fails, at the start of each line (``"limb 'arm' (heavy_limb)"``).
        during: what happens while it fails, after the first line
            (``"it holds and commands are refused until they succeed"``).
        after: what happens once it works again, after the last line.
        every_s: the summary period, and the window of ``burst`` [s].
        burst: how many outages starting within ``every_s`` are logged one by one, >= 1.
    """

    def __init__(
        self,
        logger: logging.Logger,
        subject: str,
        during: str,
        after: str,
        every_s: float = OUTAGE_LOG_EVERY_S,
        burst: int = OUTAGE_LOG_BURST,
    ) -> None:
        self._log = logger
        self._subject = subject
        self._during = during
        self._after = after
        self._every_s = every_s
        self._outage: Outage | None = None
        #: The starts of the last ``burst`` outages logged [s].
        self._starts: deque[float] = deque(maxlen=max(1, burst))
        self._last_line_s = 0.0
        # Outages that started too soon after a logged one and ended unlogged.
        self._quiet = 0
        self._quiet_since_s = 0.0
        self._quiet_ticks = 0
        self._quiet_last = ""

    @property
    def outage(self) -> Outage | None:
        """The outage in progress, or None."""
        return self._outage

    def failed(self, t: float, what: str, exc: BaseException) -> Outage:
        """A tick at time ``t`` [s] failed: ``what`` raised ``exc``; start or prolong the outage.

        Returns:
            The outage in progress.
        """
        error = f"{type(exc).__name__}: {exc}"
        outage = self._outage
        if outage is not None:
            outage.what = what
            outage.error = error
            outage.failed_ticks += 1
            if t - outage.logged_s >= self._every_s:
                self._line(t, outage)
                self._log.error(
                    "%s: %s still fail (%d failed ticks, %.1f s since t=%.3f s): %s",
                    self._subject,
                    what,
                    outage.failed_ticks,
                    t - outage.since_s,
                    outage.since_s,
                    error,
                )
            return outage
        outage = Outage(what, error, t, logged_s=t)
        self._outage = outage
        starts = self._starts
        if len(starts) == starts.maxlen and t - starts[0] < self._every_s:
            return outage  # (a flapping bus: counted when it ends, logged if it lasts)
        starts.append(t)
        self._line(t, outage)
        self._log.error(
            "%s: %s fail at t=%.3f s (%s); %s%s",
            self._subject,
            what,
            t,
            error,
            self._during,
            self._quiet_text(" (", ")"),
            exc_info=exc,
        )
        return outage

    def succeeded(self, t: float) -> Outage | None:
        """A tick at time ``t`` [s] worked: end the outage, if any.

        Returns:
            The outage that ended, or None.
        """
        outage = self._outage
        if outage is None:
            if self._quiet and t - self._last_line_s >= self._every_s:
                self._last_line_s = t
                self._log.warning(
                    "%s: %s; %s", self._subject, self._quiet_text("", ""), self._after
                )
            return None
        self._outage = None
        if outage.logged:
            self._last_line_s = t
            self._log.warning(
                "%s: %s succeed again after %d failed ticks, %.2f s (since t=%.3f s); %s",
                self._subject,
                outage.what,
                outage.failed_ticks,
                t - outage.since_s,
                outage.since_s,
                self._after,
            )
        else:
            if not self._quiet:
                self._quiet_since_s = outage.since_s
            self._quiet += 1
            self._quiet_ticks += outage.failed_ticks
            self._quiet_last = f"{outage.what}: {outage.error}"
        return outage

    def _quiet_text(self, before: str, after: str) -> str:
        """The short outages not logged one by one, then forgets them; "" when none."""
        if not self._quiet:
            return ""
        text = (
            f"{before}{self._quiet} more short outages since t={self._quiet_since_s:.3f} s, "
            f"{self._quiet_ticks} failed ticks in all, not logged one by one; the last: "
            f"{self._quiet_last}{after}"
        )
        self._quiet = 0
        self._quiet_ticks = 0
        return text

    def _line(self, t: float, outage: Outage) -> None:
        outage.logged_s = t
        outage.logged = True
        self._last_line_s = t
