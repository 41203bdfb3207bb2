"""How a run shows itself: a live tree in the terminal, or plain lines (``--headless``).

Both are sinks of the tick stream (:mod:`limbtree.trees.stream`): they draw from the run's
header and its snapshots, never from the runner, the tree or the limbs.

The live view redraws at most ten times a second: the tree with each node's status and
feedback message, the limbs' health, and the keys (space pauses and resumes, q aborts,
y/n answer an operator gate). The keyboard is read without blocking, in cbreak mode, and the
terminal is restored however the run ends. When stdin is not a terminal, the same commands
come as lines: ``p`` pauses, ``r`` resumes, ``a`` aborts.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Final, TextIO

from limbtree.transport.driver import Health
from limbtree.trees.context import AnswerLog
from limbtree.trees.export.values import plural
from limbtree.trees.stream import (
    EventKind,
    LimbTick,
    NodeStatus,
    NodeTick,
    RunEnd,
    RunHeader,
    TickSnapshot,
    TreeNode,
    reset_without_tick,
)

_CLEAR = "\x1b[H\x1b[2J"

#: One glyph per status in the live tree; a node never ticked (or reset since) has none.
STATUS_GLYPH: Mapping[NodeStatus, str] = {
    NodeStatus.SUCCESS: "✓",
    NodeStatus.FAILURE: "✕",
    NodeStatus.RUNNING: "*",
    NodeStatus.INVALID: "-",
}


def health_text(flags: int) -> str:
    """``OK`` or the names of the set :class:`Health` flags."""
    health = Health(flags)
    if health == Health.OK:
        return "OK"
    return "|".join(flag.name or "" for flag in Health if flag and flag & health)


def wrap_lines(texts: Sequence[str], columns: int, *, whole_words: bool = False) -> list[str]:
    """``texts`` wrapped to ``columns``, each of their own lines apart, continuations indented.

    Args:
        texts: messages, each of one or more lines (``wrap`` alone would run them into one).
        columns: the width [characters].
        whole_words: keep a word longer than the width (a path, to be copied) and words with
            hyphens whole.
    """
    return [
        wrapped
        for text in texts
        for line in text.split("\n")
        for wrapped in textwrap.wrap(
            line,
            columns,
            subsequent_indent="  ",
            break_long_words=not whole_words,
            break_on_hyphens=not whole_words,
        )
        or [""]
    ]


def limb_lines(limbs: Mapping[str, LimbTick]) -> list[str]:
    """One line per limb: health, freshness and end-effector position [mm].

    A limb never heard from (stale, no state yet, no flag) shows ``no answer``, not ``OK``.
    """
    lines = []
    for name, limb in limbs.items():
        pose = None if limb.stale else limb.state
        where = (
            "   ---- stale ----"
            if pose is None
            else " ".join(f"{v * 1000:8.1f}" for v in pose.position) + " mm"
        )
        # (a limb whose agent never answered has no health to show: not OK)
        unknown = limb.stale and limb.q is None and not limb.health
        health = "no answer" if unknown else health_text(limb.health)
        lines.append(f"  {name:<12} {health:<22} {where}")
    return lines


def tree_lines(tree: TreeNode, nodes: Mapping[str, NodeTick]) -> list[str]:
    """The tree, one node per line with its id, type and name.

    The nodes in ``nodes`` show their status glyph and feedback message; the others none.
    """
    lines: list[str] = []

    def visit(node: TreeNode, prefix: str, connector: str, below: str) -> None:
        tick = nodes.get(node.id)
        glyph = " " if tick is None else STATUS_GLYPH.get(tick.status, "?")
        text = f"{glyph} {prefix}{connector}{node.type}  {node.name}  [{node.id}]"
        if tick is not None and tick.message and tick.status is not NodeStatus.INVALID:
            text += f"  — {tick.message}"
        lines.append(text)
        for index, child in enumerate(node.children):
            last = index == len(node.children) - 1
            visit(child, prefix + below, "└── " if last else "├── ", "    " if last else "│   ")

    visit(tree, "", "", "")
    return lines


def fit_lines(lines: list[str], budget: int, what: str, keep: Callable[[int], bool]) -> list[str]:
    """At most ``budget`` of ``lines``: those ``keep`` picks first, then from the top.

    What is left out is counted where it was left out (``… 12 more nodes`` between the lines
    around it, or at the end), so nothing vanishes without a word and no line seems to
    follow one it does not.

    Args:
        lines: the lines, in order.
        budget: how many lines there is room for (at least 1).
        what: the noun for the count line (singular: ``1 more node``, ``2 more nodes``).
        keep: which lines (by index) matter most (the running nodes, the faulty limbs).
    """
    budget = max(1, budget)
    if len(lines) <= budget:
        return lines
    wanted = [i for i in range(len(lines)) if keep(i)]
    wanted += [i for i in range(len(lines)) if i not in wanted]
    for room in range(budget - 1, 0, -1):  # fewer lines until they and their gaps fit
        shown = _with_gaps(lines, sorted(wanted[:room]), what)
        if len(shown) <= budget:
            return shown
    return [f"  … {_more(len(lines), what)}"]  # (no room for any line: only the count)


def _with_gaps(lines: list[str], chosen: list[int], what: str) -> list[str]:
    """The chosen lines, each run of lines left out counted in its place."""
    out: list[str] = []
    after = 0  # the first index not yet shown or counted
    for index in [*chosen, len(lines)]:
        if index > after:
            out.append(f"  … {_more(index - after, what)}")
        if index < len(lines):
            out.append(lines[index])
        after = index + 1
    return out


def _more(count: int, what: str) -> str:
    """``1 more node``, ``3 more nodes``."""
    return plural(count, f"more {what}")


class LiveView:
    """Redraws the tree and the limbs in place, from the tick stream, within the terminal.

    Each frame fits the terminal (80x24 and up): lines are cut at its width, and when the
    tree and the limbs do not fit its height, the running or failed nodes (and the limbs
    that are not OK) are shown first and the rest counted; in a terminal shorter still, the
    oldest messages give way, so the title line never scrolls off. Before the run's header arrives
    (the agents starting), messages are drawn at once, so the screen says what it waits for.

    Args:
        stream: where to draw (a terminal).
        operator: the terminal operator, to show a pending question.
        interval_s: least wall time between redraws [s].
        wall: the wall clock [s], for the redraw throttle only.
        size: the terminal's (columns, rows); by default read from ``stream``'s terminal
            (80x24 when it has none).
    """

    #: Messages kept under the tree.
    MESSAGES = 4

    def __init__(
        self,
        stream: TextIO,
        operator: TerminalOperator | None = None,
        interval_s: float = 0.1,
        wall: Callable[[], float] = time.monotonic,
        size: Callable[[], tuple[int, int]] | None = None,
    ) -> None:
        self.stream = stream
        self.operator = operator
        self.interval_s = interval_s
        self.wall = wall
        self.size = size if size is not None else lambda: _terminal_size(stream)
        self._last = -float("inf")
        self._messages: list[str] = []
        self._header: RunHeader | None = None
        self._snapshot: TickSnapshot | None = None
        #: Each node's last status and message, until py_trees resets it (Groot2's way).
        self._held: dict[str, NodeTick] = {}
        self._below: dict[str, tuple[str, ...]] = {}
        self._state = "RUNNING"
        self._ended = False
        self._draw_next_tick = False

    def on_start(self, header: RunHeader) -> None:
        """Keep the tree and the mission's name."""
        self._header = header
        self._below = {
            node.id: tuple(below.id for below in node.walk()[1:])
            for node in header.tree.walk()
            if node.children
        }

    def on_message(self, text: str) -> None:
        """Keep the last few messages under the tree, and show them now.

        At once, not at the next tick's redraw: before the run starts no tick comes (the
        agents starting), and while an operator gate waits in the sim clock none comes
        either (mission time stands still): its question would not show. Otherwise at
        most every ``interval_s``, as ticks are (a burst of messages is one redraw).
        """
        self._messages = [*self._messages[-(self.MESSAGES - 1) :], text]
        waiting = self.operator is not None and self.operator.pending is not None
        # A gate asks during its tick: that tick (the gate running) is the one the screen
        # keeps while the question waits, so it is drawn when it comes, throttle or not.
        self._draw_next_tick = self._draw_next_tick or waiting
        now = self.wall()
        if self._header is None or waiting or self._ended or now - self._last >= self.interval_s:
            self._last = now  # (a burst of messages in one tick: one redraw, then the tick's)
            self.draw()

    def on_pause(self, paused: bool, t: float) -> None:
        """Show PAUSED (or RUNNING again) at once."""
        self._state = "PAUSED" if paused else "RUNNING"
        self.draw()

    def on_tick(self, snapshot: TickSnapshot) -> None:
        """Keep each node's status as Groot2 shows it; redraw if the interval has passed."""
        self._snapshot = snapshot
        self._hold(snapshot.nodes)
        now = self.wall()
        if now - self._last >= self.interval_s or self._draw_next_tick:
            self._last = now
            self._draw_next_tick = False
            self.draw()

    def _hold(self, ticked: Mapping[str, NodeTick]) -> None:
        """Each node's last status, until py_trees resets it (the web page shows the same).

        A tick's snapshot holds the nodes ticked in it; a node done earlier keeps its ``✓``
        or ``✕`` until its parent starts again (or halts it), as Groot2 and the web page
        show it.
        """
        held = self._held
        below = self._below

        def running(node_id: str) -> bool:
            tick = held.get(node_id)
            return tick is not None and tick.status is NodeStatus.RUNNING

        for node_id, tick in ticked.items():
            under = below.get(node_id)
            if under:
                was = held.get(node_id)
                status = NodeStatus.INVALID if was is None else was.status
                for reset in reset_without_tick(status, tick.status, under, ticked, running):
                    held.pop(reset, None)
            if tick.status is NodeStatus.INVALID:
                held.pop(node_id, None)
            else:
                held[node_id] = tick

    def on_end(self, end: RunEnd) -> None:
        """The final frame, with the outcome (and no keys: they do nothing any more)."""
        self._state = end.outcome.value
        self._ended = True
        self.draw()

    def frame(self) -> str:
        """The text of one frame, fitted to the terminal's size."""
        columns, rows = self.size()
        header, snapshot = self._header, self._snapshot
        if header is None:
            lines = ["limbtree  starting up", "", *self._messages]
            return "\n".join(_clip(line, columns) for line in lines[:rows]) + "\n"
        # (the tick's number, from 0, as the record, the web page and breakpoints number it)
        t, tick = (0.0, 0) if snapshot is None else (snapshot.t, snapshot.tick)
        nodes = {} if snapshot is None else snapshot.nodes
        limbs = {} if snapshot is None else snapshot.limbs
        tail = list(self._messages)
        if self.operator is not None and self.operator.pending and not self._ended:
            # (a run that ended at a gate, Ctrl-C say, no longer asks)
            # Wrapped, not cut: a narrow terminal shows the whole question and its keys.
            question = f">>> {self.operator.pending}   [y] confirm   [n] refuse"
            tail += textwrap.wrap(question, max(20, columns), subsequent_indent="    ")
        if not self._ended:
            tail.append("space: pause/resume   q: abort")
            # A short terminal: the oldest messages give way, so that the title (the run's
            # state), a node, a limb and the keys keep their rows instead of scrolling off.
            while len(tail) > rows - 8 and len(tail) > 2 and tail[0] in self._messages:
                tail.pop(0)
        else:
            # The last frame stays on the screen: its closing lines whole, wrapped.
            # (each of a message's own lines apart: wrap() would run them into one)
            tail = wrap_lines(tail, columns)
        # Fixed lines: title, blank, blank, limb heading, blank; then tree, limbs and tail.
        room = max(2, rows - 5 - len(tail) - 1)  # one row spare for the cursor
        order = [node.id for node in header.tree.walk()]  # the order tree_lines draws
        held = self._held
        # (first the nodes ticked last, and those that failed: the running path and why)
        first = {
            node_id for node_id, node in nodes.items() if node.status is not NodeStatus.INVALID
        }
        first.update(node_id for node_id, node in held.items() if node.status is NodeStatus.FAILURE)
        active = [node_id in first for node_id in order]
        tree = tree_lines(header.tree, held)
        limb_rows = limb_lines(limbs)
        unwell = [limb.health != 0 or limb.stale for limb in limbs.values()]
        # Limbs get a third of the room at least; the tree what it needs of the rest.
        limb_room = min(len(limb_rows), max(1, room // 3))
        tree_room = min(len(tree), room - limb_room)
        limb_room = min(len(limb_rows), room - tree_room)
        lines = [
            # The state first: a long mission name in a narrow terminal cuts the clock, not it.
            f"limbtree  {self._state:<7}  {header.mission}   t = {t:8.2f} s   tick {tick}   "
            f"{header.clock} clock",
            "",
            *fit_lines(tree, tree_room, "node", lambda i: active[i]),
            "",
            "  limb         health                 end-effector x y z (world)",
            *fit_lines(limb_rows, limb_room, "limb", lambda i: unwell[i]),
            "",
            *tail,
        ]
        if not self._ended:  # (a terminal too short even for that: the title stays on top)
            lines = lines[: max(1, rows - 1)]
        return "\n".join(_clip(line, columns) for line in lines) + "\n"

    def print_below(self, text: str) -> None:
        """Print the run's closing lines under the final frame, wrapped at word boundaries.

        The terminal itself would cut words (``4.67 s`` / `` mission time``) in two. A word
        longer than the width (a record's path) stays whole, to be copied.

        Args:
            text: the closing lines, separated by newlines.
        """
        wrapped = wrap_lines([text], self.size()[0], whole_words=True)
        print("\n".join(wrapped), file=self.stream, flush=True)

    def draw(self) -> None:
        """Redraw now."""
        self.stream.write(_CLEAR + self.frame())
        self.stream.flush()


def _clip(line: str, columns: int) -> str:
    """``line`` cut to the terminal's width, an ellipsis marking the cut."""
    return line if len(line) <= columns else line[: max(1, columns - 1)] + "…"


def _terminal_size(stream: TextIO) -> tuple[int, int]:
    """(columns, rows) of the terminal behind ``stream``; 80x24 when there is none."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return (80, 24)
    return (size.columns or 80, size.lines or 24)


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
        self._leaves: frozenset[str] = frozenset()
        self._names: Mapping[str, str] = {}
        self._root = ""
        self._failed: set[str] = set()
        self._snapshot: TickSnapshot | None = None

    def on_start(self, header: RunHeader) -> None:
        """Learn which nodes are leaves, and their names."""
        nodes = header.tree.walk()
        self._leaves = frozenset(n.id for n in nodes if not n.children)
        self._names = {n.id: n.name for n in nodes}
        self._root = header.tree.id

    def on_message(self, text: str) -> None:
        """Print a line."""
        print(text, file=self.stream, flush=True)

    def on_pause(self, paused: bool, t: float) -> None:
        """The runner's message says it."""

    def on_tick(self, snapshot: TickSnapshot) -> None:
        """A status line when due (not for the tick that ends the run: its end line follows)."""
        self._snapshot = snapshot
        if any(event.kind is EventKind.ABORTED for event in snapshot.events):
            return
        self._say_failures(snapshot)
        root = snapshot.nodes.get(self._root)
        if root is not None and root.status is not NodeStatus.RUNNING:
            return  # the tree ended in this tick: the end line says how, for this tick
        if snapshot.t >= self._next:
            self._next = snapshot.t + self.every_s
            self._status("RUNNING")

    def _say_failures(self, snapshot: TickSnapshot) -> None:
        """A line for each leaf that failed this tick (a fallback may go on: it would not show)."""
        for node_id, node in snapshot.nodes.items():
            if node_id not in self._leaves:
                continue
            if node.status is NodeStatus.FAILURE and node_id not in self._failed:
                self._failed.add(node_id)
                name = self._names.get(node_id, node_id)
                said = f": {node.message}" if node.message else ""
                self.on_message(f"t={snapshot.t:7.2f} s  {name} [{node_id}] failed{said}")
            elif node.status is not NodeStatus.FAILURE:
                self._failed.discard(node_id)

    def on_end(self, end: RunEnd) -> None:
        """The last status line, with the outcome."""
        self._status(end.outcome.value)

    def _status(self, state: str) -> None:
        snapshot = self._snapshot
        if snapshot is None:
            return
        running = [
            f"{self._names.get(node_id, node_id)}: {node.message}"
            for node_id, node in snapshot.nodes.items()
            if node.status is NodeStatus.RUNNING and node_id in self._leaves
        ]
        doing = "; ".join(running) or "-"
        # The tick's number, from 0, as the record, the web page and breakpoints number it
        # (the closing line counts the ticks).
        self.on_message(f"t={snapshot.t:7.2f} s  tick {snapshot.tick:6d}  {state:<8} {doing}")


#: The run keys a terminal sends: space pauses and resumes, q (or Ctrl-C) aborts.
TERMINAL_RUN_KEYS = " qQ\x03"
#: The commands a line on a non-terminal stdin gives (the whole line, any case) -> its key:
#: pause, resume, abort (``q`` too, as in a terminal). ``y`` and ``n`` lines answer an
#: operator gate; any other line is set aside for the run to say it ignored it.
LINE_COMMANDS: Final = MappingProxyType(
    dict.fromkeys(("p", "pause"), "p")
    | dict.fromkeys(("r", "resume"), "r")
    | dict.fromkeys(("a", "abort", "q", "quit"), "a")
)
#: What a non-terminal stdin's lines can say, for messages.
LINE_HELP: Final = "p (pause), r (resume), a or q (abort), y / n (answer an operator gate)"


class TerminalKeyboard:
    """The operator's keys, read without blocking.

    From a terminal: key presses in cbreak mode (space, q, y, n). From any other stdin (a
    pipe, a file, a socket): one command per line, ``p`` (``pause``) pauses, ``r``
    (``resume``) resumes, ``a`` (``abort``, ``q``, ``quit``) aborts, ``y`` / ``n`` answer an
    operator gate, so pause, resume and abort can be scripted. A closed stdin (end of file,
    or none at all) gives nothing.

    Attributes:
        interactive: whether stdin is a terminal.
        buffer: answers to an operator gate (``y``, ``n``) read but not yet taken.
        ignored: lines of a non-terminal stdin that were no command, not yet reported: each
            with why, and with how many of the run keys the same :meth:`pressed` returned came
            before it (the runner reports it in its place among them).
        answers: whether ``y`` / ``n`` lines of a non-terminal stdin answer gates (with
            ``--view web`` and no ``--auto-confirm``); else they are ignored, and reported.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdin
        self.interactive = is_terminal(self.stream)
        self._saved: list[object] | None = None
        self.buffer = ""
        self.ignored: list[tuple[int, str]] = []
        self.answers = True
        self._partial = ""
        self._fd: int | None = None
        if not self.interactive and self.stream is not None:
            try:
                self._fd = self.stream.fileno()
            except (OSError, ValueError):  # closed, or a stand-in without a descriptor
                self._fd = None

    @property
    def closed(self) -> bool:
        """Whether no key can come any more: a non-terminal stdin at its end (or none)."""
        return not self.interactive and self._fd is None

    @property
    def hint(self) -> str:
        """How to pause, resume and abort from this stdin ("" when nothing can come)."""
        if self.interactive:
            return "space pauses and resumes, q aborts"
        if self.closed:
            return ""
        return "lines on stdin: p pauses, r resumes, a aborts"

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
        """The run keys since the last call (y/n go to :attr:`buffer`, for the operator).

        A terminal gives ``" "``, ``q`` or Ctrl-C; lines give ``p``, ``r`` or ``a``
        (:data:`LINE_COMMANDS`; other lines go to :attr:`ignored`).
        """
        if self.interactive:
            fd = self.stream.fileno()
            while select.select([fd], [], [], 0.0)[0]:
                chunk = os.read(fd, 64).decode(errors="replace")
                if not chunk:
                    break
                self.buffer += chunk
            run_keys = "".join(k for k in self.buffer if k in TERMINAL_RUN_KEYS)
            self.buffer = "".join(k for k in self.buffer if k in "yYnN")
            return run_keys
        return self._lines()

    def _lines(self) -> str:
        """Commands from the complete lines that came on a non-terminal stdin."""
        fd = self._fd
        if fd is None:
            return ""
        while True:
            try:
                ready = select.select([fd], [], [], 0.0)[0]
            except (OSError, ValueError):
                ready = []
            if not ready:
                break
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:  # end of file: nothing more will come
                self._fd = None
                self._partial += "\n"
                break
            self._partial += chunk.decode(errors="replace")
        *lines, self._partial = self._partial.split("\n")
        keys = ""
        for line in lines:
            word = line.strip().lower()
            if not word:
                continue
            if word in LINE_COMMANDS:
                keys += LINE_COMMANDS[word]
            elif word in ("y", "yes", "n", "no") and self.answers:
                self.buffer += word[0]
            elif word in ("y", "yes", "n", "no"):  # (no gate reads stdin in this run)
                self.ignored.append(
                    (
                        len(keys),
                        f"{line.strip()!r} on stdin: no operator gate of this run reads it "
                        "(with --auto-confirm they pass by themselves; without it, y / n "
                        "lines answer them only with --view web)",
                    )
                )
            else:
                self.ignored.append(
                    (len(keys), f"{line.strip()!r} on stdin: the commands are {LINE_HELP}")
                )
        return keys


def is_terminal(stream: TextIO | None) -> bool:
    """Whether ``stream`` is an open terminal (False for None, a closed or fake stream)."""
    if stream is None:
        return False
    try:
        return bool(stream.isatty())
    except (OSError, ValueError):
        return False


class TerminalOperator:
    """An operator at the terminal answering gates with y or n.

    The answer is a key press read by the runner's :class:`TerminalKeyboard` (or a ``y`` /
    ``n`` line on a non-terminal stdin, for tools). The question is printed once.

    Args:
        keyboard: the run's keyboard (the runner drains it every loop).
        say: how to show the question (the progress' ``message``).
    """

    def __init__(self, keyboard: TerminalKeyboard, say: Callable[[str], None]) -> None:
        self.keyboard = keyboard
        self.say = say
        #: Whether the run's web page can answer too (the question then says so).
        self.web = False
        self.pending: str | None = None
        self._asked: str | None = None
        self.answers = AnswerLog()

    def confirm(self, key: str, prompt: str) -> bool | None:
        """Ask once, then look for y or n without blocking."""
        if self._asked != key:
            self._asked = key
            self.pending = prompt
            how = "press y or n" if self.keyboard.interactive else "type y or n and Enter"
            if self.web:
                how = f"answer it in the web page, or {how}"
            self.say(f"operator: {prompt} ({how}; --auto-confirm skips this)")
            if self.keyboard.interactive:
                # A y or n pressed at the terminal before this question was on the screen
                # (a stray key, or one meant for an earlier gate) does not answer it.
                self.keyboard.buffer = ""
        answer = self._read()
        if answer is None:
            return None
        self.pending = None
        self._asked = None
        self.answers.note_answer(key, answer, "from the terminal")
        return answer

    def take_answers(self) -> list[tuple[str, str]]:
        """The answers given since the last call: (gate key, ``yes (from the terminal)``)."""
        return self.answers.take_answers()

    def waiting(self) -> bool:
        """Whether a question was asked and its answer has not come yet."""
        return self.pending is not None and not self.keyboard.buffer

    @property
    def question(self) -> tuple[str, str] | None:
        """The gate waiting, as ``(its key, its prompt)``, or None."""
        if self._asked is None or self.pending is None:
            return None
        return (self._asked, self.pending)

    def withdraw(self, key: str) -> None:
        """Forget a question whose gate is no longer running."""
        if self._asked == key:
            self._asked = None
            self.pending = None

    def _read(self) -> bool | None:
        # The runner drains the keyboard every loop (run keys to itself, y/n to the buffer).
        if not self.keyboard.buffer:
            return None
        answer, self.keyboard.buffer = self.keyboard.buffer[0], self.keyboard.buffer[1:]
        return answer in "yY"
