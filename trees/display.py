"""How a run shows itself: a live tree in the terminal, or plain lines (``--headless``).

The live view redraws at most ten times a second: the tree with each node's status and
feedback message, the limbs' health, and the keys (space pauses and resumes, q aborts,
y/n answer an operator gate). The keyboard is read without blocking, in cbreak mode, and the
terminal is restored however the run ends.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

import py_trees

from limbtree.transport.driver import Health

if TYPE_CHECKING:
    from limbtree.trees.runner import Runner

_CLEAR = "\x1b[H\x1b[2J"


def health_text(flags: int) -> str:
    """``OK`` or the names of the set :class:`Health` flags."""
    health = Health(flags)
    if health == Health.OK:
        return "OK"
    return "|".join(flag.name or "" for flag in Health if flag and flag & health)


def limb_lines(runner: Runner) -> list[str]:
    """One line per limb: health, freshness and end-effector position."""
    lines = []
    for name, limb in runner.context.limbs.items():
        pose = limb.pose()
        where = (
            "   ---- stale ----"
            if pose is None
            else " ".join(f"{v * 1000:8.1f}" for v in pose.position) + " mm"
        )
        lines.append(f"  {name:<12} {health_text(int(limb.health)):<22} {where}")
    return lines


class LiveView:
    """Redraws the tree and the limbs in place.

    Args:
        stream: where to draw (a terminal).
        render: turns the tree into text with statuses.
        operator: the terminal operator, to show a pending question.
        interval_s: least wall time between redraws [s].
    """

    def __init__(
        self,
        stream: TextIO,
        render: Callable[[py_trees.behaviour.Behaviour], str],
        operator: TerminalOperator | None = None,
        interval_s: float = 0.1,
    ) -> None:
        self.stream = stream
        self.render = render
        self.operator = operator
        self.interval_s = interval_s
        self._last = 0.0
        self._messages: list[str] = []

    def message(self, text: str) -> None:
        """Keep the last few messages under the tree."""
        self._messages = [*self._messages[-5:], text]

    def update(self, runner: Runner, force: bool = False) -> None:
        """Redraw if the interval has passed (or ``force``)."""
        now = time.monotonic()
        if not force and now - self._last < self.interval_s:
            return
        self._last = now
        state = "PAUSED" if runner.paused else (runner.outcome or "RUNNING")
        lines = [
            f"limbtree  {runner.name}   t = {runner.t:8.2f} s   tick {runner.ticks}   "
            f"{runner.options.clock} clock   {state}",
            "",
            self.render(runner.root),
            "",
            "  limb         health                 end-effector x y z (world)",
            *limb_lines(runner),
            "",
            *self._messages,
        ]
        if self.operator is not None and self.operator.pending:
            lines.append(f">>> {self.operator.pending}   [y] confirm   [n] refuse")
        lines.append("space: pause/resume   q: abort")
        self.stream.write(_CLEAR + "\n".join(lines) + "\n")
        self.stream.flush()


class HeadlessProgress:
    """Plain progress lines: messages as they come, and a status line every few seconds.

    Args:
        stream: where to print.
        every_s: mission time between status lines [s].
    """

    def __init__(self, stream: TextIO, every_s: float = 5.0) -> None:
        self.stream = stream
        self.every_s = every_s
        self._next = 0.0

    def message(self, text: str) -> None:
        """Print a line."""
        print(text, file=self.stream, flush=True)

    def update(self, runner: Runner, force: bool = False) -> None:
        """A status line when due: time, ticks and the running leaf's feedback."""
        if not force and runner.t < self._next:
            return
        self._next = runner.t + self.every_s
        running = [
            node
            for node in runner.root.iterate()
            if node.status == py_trees.common.Status.RUNNING and not node.children
        ]
        doing = "; ".join(f"{n.name}: {n.feedback_message}" for n in running) or "-"
        state = runner.outcome.value if runner.outcome else "RUNNING"
        self.message(f"t={runner.t:7.2f} s  tick {runner.ticks:6d}  {state:<8} {doing}")


class TerminalKeyboard:
    """Keys from a terminal, read without blocking; nothing when stdin is not a terminal."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self.interactive = self.stream.isatty()
        self._saved: list[object] | None = None
        self.buffer = ""

    @contextlib.contextmanager
    def raw(self) -> Iterator[TerminalKeyboard]:
        """Put the terminal in cbreak mode for the duration (restored on exit)."""
        if not self.interactive:
            yield self
            return
        import termios
        import tty

        fd = self.stream.fileno()
        saved = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd)
            yield self
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    def pressed(self) -> str:
        """The keys pressed since the last call (run keys only; y/n go to the operator)."""
        if not self.interactive:
            return ""
        fd = self.stream.fileno()
        while select.select([fd], [], [], 0.0)[0]:
            chunk = os.read(fd, 64).decode(errors="replace")
            if not chunk:
                break
            self.buffer += chunk
        run_keys = "".join(k for k in self.buffer if k in " qQ\x03")
        self.buffer = "".join(k for k in self.buffer if k in "yYnN")
        return run_keys


class TerminalOperator:
    """An operator at the terminal answering gates with y or n.

    With a terminal, the answer is a key press (through :class:`TerminalKeyboard`); without
    one, a line ``y`` or ``n`` on standard input. The question is printed once.

    Args:
        keyboard: the run's keyboard.
        say: how to show the question (the progress' ``message``).
    """

    def __init__(self, keyboard: TerminalKeyboard, say: Callable[[str], None]) -> None:
        self.keyboard = keyboard
        self.say = say
        self.pending: str | None = None
        self._asked: str | None = None

    def confirm(self, key: str, prompt: str) -> bool | None:
        """Ask once, then look for y or n without blocking."""
        if self._asked != key:
            self._asked = key
            self.pending = prompt
            how = "press y or n" if self.keyboard.interactive else "type y or n and Enter"
            self.say(f"operator: {prompt} ({how}; --auto-confirm skips this)")
        answer = self._read()
        if answer is None:
            return None
        self.pending = None
        self._asked = None
        return answer

    def withdraw(self, key: str) -> None:
        """Forget a question whose gate is no longer running."""
        if self._asked == key:
            self._asked = None
            self.pending = None

    def _read(self) -> bool | None:
        if self.keyboard.interactive:
            self.keyboard.pressed()  # drains the terminal into its buffer
            for k in self.keyboard.buffer:
                self.keyboard.buffer = ""
                return k in "yY"
            return None
        stream = self.keyboard.stream
        try:
            ready = select.select([stream], [], [], 0.0)[0]
        except (ValueError, OSError):
            return None
        if not ready:
            return None
        line = stream.readline().strip().lower()
        if line in ("y", "yes"):
            return True
        if line in ("n", "no"):
            return False
        return None
