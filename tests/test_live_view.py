"""The live view fits the terminal and says what it waits for (issue 12, item 11)."""

import dataclasses
import io
import re

from hypothesis import given
from hypothesis import strategies as st

from limbtree.kinematics import Pose
from limbtree.trees.display import (
    HeadlessProgress,
    LiveView,
    TerminalKeyboard,
    TerminalOperator,
    limb_lines,
)
from limbtree.trees.runner import RunOutcome
from limbtree.trees.stream import (
    LimbTick,
    NodeStatus,
    NodeTick,
    RunEnd,
    RunHeader,
    TickSnapshot,
    TreeNode,
)
from limbtree.trees.web.store import RunStore


def big_tree(leaves: int) -> TreeNode:
    children = tuple(
        TreeNode(f"0.{i}", f"a rather long node name number {i} " * 2, "sync_move")
        for i in range(leaves)
    )
    return TreeNode("0", "mission", "sequence", children=children)


def header(tree: TreeNode) -> RunHeader:
    return RunHeader("m", "m.yaml", {}, 0, "sim", 50.0, tree, {})


def snapshot(limbs: int, running: str) -> TickSnapshot:
    ok = LimbTick(Pose(), None, None, None, 0, False)
    sick = LimbTick(None, None, None, None, 8, True)
    return TickSnapshot(
        t=1.0,
        tick=50,
        nodes={
            "0": NodeTick(NodeStatus.RUNNING, "", 0.0),
            running: NodeTick(NodeStatus.RUNNING, "moving", 0.0),
        },
        limbs={f"limb_{i}": sick if i == limbs - 1 else ok for i in range(limbs)},
        bases={},
        events=(),
        skills={},
    )


def test_a_big_run_fits_80_by_24_and_keeps_the_running_node_and_the_sick_limb():
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    view.on_start(header(big_tree(40)))
    for text in ("one", "two", "three", "four", "five"):
        view.on_message(text)
    view.on_tick(snapshot(30, "0.33"))
    lines = view.frame().splitlines()
    assert len(lines) <= 23
    assert max(len(line) for line in lines) <= 80
    assert any("[0.33]" in line or "number 33" in line for line in lines)
    assert any("limb_29" in line for line in lines)
    assert any("more nodes" in line for line in lines)
    assert any("more limbs" in line for line in lines)
    assert "five" in lines[-2] and "one" not in lines


def test_before_the_run_starts_messages_are_drawn_at_once():
    screen = io.StringIO()
    view = LiveView(screen, size=lambda: (80, 24))
    view.on_message("starting 6 simulated agents: waiting for each to answer")
    assert "waiting for each to answer" in screen.getvalue()


def test_the_final_frame_shows_the_outcome_and_no_keys():
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(2, "0.1"))
    assert "q: abort" in view.frame()
    view.on_end(RunEnd(RunOutcome.SUCCESS, 1.0, 50, None, {}))
    frame = view.frame()
    assert "SUCCESS" in frame.splitlines()[0]
    assert "q: abort" not in frame


def headless() -> tuple[HeadlessProgress, list[str]]:
    """``--headless`` progress of a two-leaf run, and the lines it prints."""
    lines: list[str] = []
    progress = HeadlessProgress(io.StringIO())
    progress.on_message = lines.append  # type: ignore[method-assign]
    progress.on_start(header(big_tree(2)))
    return progress, lines


def test_the_terminal_numbers_ticks_as_the_record_and_the_page_do():
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(2, "0.1"))  # the record's tick 50
    assert "tick 50 " in view.frame().splitlines()[0]
    progress, lines = headless()
    progress.on_tick(snapshot(2, "0.1"))
    progress.on_end(RunEnd(RunOutcome.SUCCESS, 1.0, 51, None, {}))
    assert [line.split("tick")[1].split()[0] for line in lines if "tick" in line] == ["50", "50"]


def test_headless_gives_the_tick_that_ends_the_run_one_line_with_its_outcome():
    # (it printed "tick 2500 RUNNING -" and then "tick 2500 SUCCESS -")
    progress, lines = headless()
    last = snapshot(2, "0.1")
    ended = dict(last.nodes, **{"0": NodeTick(NodeStatus.SUCCESS, "", 0.0)})
    progress.on_tick(TickSnapshot(last.t, last.tick, ended, last.limbs, {}, (), {}))
    progress.on_end(RunEnd(RunOutcome.SUCCESS, 1.0, 51, None, {}))
    assert [line.split()[5] for line in lines] == ["SUCCESS"], lines


def test_headless_says_when_a_leaf_fails_even_if_a_fallback_goes_on():
    progress, lines = headless()
    running = snapshot(2, "0.1")
    failed = dict(running.nodes, **{"0.1": NodeTick(NodeStatus.FAILURE, "timed out", 0.0)})
    for nodes in (running.nodes, failed, failed, running.nodes, failed):
        progress.on_tick(TickSnapshot(running.t, running.tick, nodes, running.limbs, {}, (), {}))
    said = [line for line in lines if "failed" in line]
    assert len(said) == 2  # each time it fails, not each tick it stays failed
    assert said[0].endswith("[0.1] failed: timed out")


def test_lines_left_out_are_counted_where_they_were_left_out():
    from limbtree.trees.display import fit_lines

    lines = [f"node {i}" for i in range(22)]
    fitted = fit_lines(lines, 8, "node", lambda i: i == 12)  # the running node, mid-tree
    assert fitted == [
        "node 0", "node 1", "node 2", "node 3", "node 4", "  … 7 more nodes", "node 12",
        "  … 9 more nodes",
    ]  # fmt: skip
    counted = sum(int(line.split()[1]) for line in fitted if "more" in line)
    assert counted + sum("more" not in line for line in fitted) == len(lines)
    assert fit_lines(lines, 4, "node", lambda i: i == 21) == [
        "node 0", "node 1", "  … 19 more nodes", "node 21",
    ]  # fmt: skip
    # One left out is one node (or limb).
    assert fit_lines(lines[:5], 4, "node", lambda i: i in (0, 2, 4)) == [
        "node 0", "  … 1 more node", "node 2", "  … 2 more nodes",
    ]  # fmt: skip
    assert fit_lines(lines[:2], 1, "limb", lambda i: False) == ["  … 2 more limbs"]


def test_a_run_that_ended_at_a_gate_no_longer_shows_its_question():
    operator = TerminalOperator(TerminalKeyboard(io.StringIO()), lambda text: None)
    view = LiveView(io.StringIO(), operator=operator, size=lambda: (80, 24))
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(2, "0.1"))
    assert operator.confirm("0.1", "Limbs clear?") is None  # asked, no answer yet
    assert ">>> Limbs clear?" in view.frame()
    view.on_end(RunEnd(RunOutcome.ABORTED, 1.0, 51, "interrupted (Ctrl-C)", {}))
    assert "Limbs clear?" not in view.frame()


def gated_view(running: str) -> tuple[io.StringIO, LiveView, TerminalOperator]:
    """A live view (its clock stopped: every redraw within the throttle) with a terminal
    operator whose questions it draws, after a first tick with ``running`` running."""
    screen = io.StringIO()
    view = LiveView(screen, size=lambda: (80, 24), wall=lambda: 0.0)
    operator = TerminalOperator(TerminalKeyboard(io.StringIO()), view.on_message)
    view.operator = operator
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(2, running))
    return screen, view, operator


def test_a_gate_that_asks_is_drawn_at_once():
    # While the gate waits no tick comes to redraw the screen (sim time stands still): the
    # question must be drawn when it is asked, not after the next key.
    screen, _view, operator = gated_view("0.1")
    drawn = len(screen.getvalue())
    assert operator.confirm("0.1", "Limbs clear?") is None
    assert ">>> Limbs clear?" in screen.getvalue()[drawn:]


def test_the_tick_of_a_gate_that_asks_is_drawn_though_it_comes_within_the_throttle():
    # The gate asks during its tick; the screen then stays as drawn until the answer (sim
    # time stands still). It kept the tick before the gate, the gate not running.
    screen, view, operator = gated_view("0.0")
    assert operator.confirm("0.1", "Limbs clear?") is None
    gate = snapshot(2, "0.1")
    view.on_tick(TickSnapshot(gate.t + 0.02, gate.tick + 1, gate.nodes, gate.limbs, {}, (), {}))
    last = screen.getvalue().rsplit("\x1b", 1)[-1]
    assert "tick 51 " in last and ">>> Limbs clear?" in last
    # and only that one: the next tick within the throttle is not drawn
    drawn = len(screen.getvalue())
    view.on_tick(TickSnapshot(gate.t + 0.04, gate.tick + 2, gate.nodes, gate.limbs, {}, (), {}))
    assert len(screen.getvalue()) == drawn


def test_the_last_frame_wraps_its_closing_lines_whole():
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(2, "0.1"))
    closing = (
        "ABORTED: robustness in 0.00 s mission time (0.00 s wall, 0 ticks; stopped after "
        "1.52 s of start-up)"
    )
    view.on_message(closing)
    assert "ABORTED: robustness" in view.frame()
    assert "start-up)" not in view.frame()  # cut while the run goes on (redrawn)
    view.on_end(RunEnd(RunOutcome.ABORTED, 0.0, 0, "interrupted (Ctrl-C)", {}))
    frame = view.frame()
    assert frame.endswith("stopped after\n  1.52 s of start-up)\n")
    assert all(len(line) <= 80 for line in frame.splitlines())


def test_the_header_keeps_the_run_state_in_80_columns_whatever_the_mission_name():
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    long_name = dataclasses.replace(header(big_tree(2)), mission="robustness_campaign")
    view.on_start(long_name)
    view.on_tick(dataclasses.replace(snapshot(2, "0.1"), t=600.0, tick=15001))
    first = view.frame().splitlines()[0]
    assert first.startswith("limbtree  RUNNING  robustness_campaign   t =   600.00 s")
    assert len(first) <= 80


def test_a_short_terminal_keeps_the_title_and_the_keys_on_screen():
    # 40x12 with four messages and a gate asking: the frame was 13 lines, so the title
    # (RUNNING / PAUSED, t, tick) scrolled off the top of the terminal.
    operator = TerminalOperator(TerminalKeyboard(io.StringIO()), lambda text: None)
    view = LiveView(io.StringIO(), operator=operator, size=lambda: (40, 12))
    view.on_start(header(big_tree(12)))
    for text in ("one", "two", "three", "four"):
        view.on_message(text)
    view.on_tick(snapshot(1, "0.3"))
    assert operator.confirm("0.3", "go?") is None
    lines = view.frame().splitlines()
    assert len(lines) <= 11  # one row spare for the cursor
    assert lines[0].startswith("limbtree  RUNNING")
    assert any("limb_0" in line for line in lines)
    assert any(line.startswith(">>> go?") for line in lines)
    assert "space: pause/resume" in lines[-1] and "four" in lines[-3]


def test_a_narrow_terminal_shows_the_whole_gate_question_and_its_keys():
    # At 40 columns the question was cut ("… start the al…"): neither it nor y / n showed.
    operator = TerminalOperator(TerminalKeyboard(io.StringIO()), lambda text: None)
    view = LiveView(io.StringIO(), operator=operator, size=lambda: (40, 24))
    view.on_start(header(big_tree(2)))
    view.on_tick(snapshot(1, "0.1"))
    assert operator.confirm("0.1", "limb in its safe pose: start the alignment?") is None
    lines = view.frame().splitlines()
    assert max(len(line) for line in lines) <= 40
    text = " ".join(" ".join(lines).split())
    assert ">>> limb in its safe pose: start the alignment? [y] confirm [n] refuse" in text


def test_the_closing_lines_under_the_last_frame_keep_their_words_whole():
    # At 40 columns the terminal cut "FAILURE: m in 4.67 s mission time (...)" mid-word.
    screen = io.StringIO()
    view = LiveView(screen, size=lambda: (40, 12))
    closing = (
        "FAILURE: self_assembly_minimal in 4.67 s mission time (43.07 s wall, 141 ticks)\n"
        "faults 0/0 recovered, 0 recoveries"
    )
    view.print_below(closing)
    lines = screen.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 40
    assert " ".join(" ".join(lines).split()) == " ".join(closing.split())
    assert lines[-1] == "faults 0/0 recovered, 0 recoveries"


def test_closing_lines_given_as_one_message_after_the_end_keep_their_line_breaks():
    # A run stopped during the agents' start-up: its closing lines come as one message after
    # the end, and the last frame ran them into one paragraph ("start-up) faults 0/0 ...").
    view = LiveView(io.StringIO(), size=lambda: (80, 24))
    view.on_start(header(big_tree(2)))
    view.on_end(RunEnd(RunOutcome.ABORTED, 0.0, 0, "interrupted (Ctrl-C)", {}))
    view.on_message("ABORTED: m in 0.00 s mission time\nfaults 0/0 recovered\nrecord: /tmp/r")
    lines = view.frame().splitlines()
    assert lines[-3:] == [
        "ABORTED: m in 0.00 s mission time",
        "faults 0/0 recovered",
        "record: /tmp/r",
    ]


def test_a_key_pressed_before_a_gate_asks_does_not_answer_it():
    # A stray y typed at the terminal mid-run stayed in the keyboard's buffer and passed
    # the next gate the moment it asked, before the operator could read its question.
    keyboard = TerminalKeyboard(io.StringIO())
    keyboard.interactive = True
    operator = TerminalOperator(keyboard, lambda text: None)
    keyboard.buffer = "y"  # pressed while no gate was waiting
    assert operator.confirm("0.1", "grasp it?") is None
    keyboard.buffer = "n"  # pressed once the question shows
    assert operator.confirm("0.1", "grasp it?") is False


def test_a_limb_never_heard_from_is_not_shown_ok():
    """A run stopped while its agents started drew every silent limb as health OK."""
    never = LimbTick(None, None, None, None, 0, True)
    lost = LimbTick(None, None, (0.0,), None, 0, True)  # (heard from, then went stale)
    never_line, lost_line = limb_lines({"heavy": never, "light": lost})
    assert "OK" not in never_line and "no answer" in never_line, never_line
    assert "---- stale ----" in never_line
    assert " OK " in lost_line, lost_line


# -- statuses held until py_trees resets them (as Groot2 and the web page show them) -------

NESTED = TreeNode(
    "0",
    "mission",
    "sequence",
    children=(
        TreeNode(
            "0.0",
            "twice",
            "sequence",
            children=(TreeNode("0.0.0", "a", "wait"), TreeNode("0.0.1", "b", "wait")),
        ),
        TreeNode("0.1", "c", "wait"),
    ),
)
GLYPH = {"SUCCESS": "✓", "FAILURE": "✕", "RUNNING": "*", "IDLE": " ", "INVALID": " "}


def tick_of(i: int, nodes: dict[str, str]) -> TickSnapshot:
    return TickSnapshot(
        t=0.1 * i,
        tick=i,
        nodes={k: NodeTick(NodeStatus(v), f"{k} at {i}", 0.0) for k, v in nodes.items()},
        limbs={},
        bases={},
        events=(),
        skills={},
    )


def glyphs(view: LiveView) -> dict[str, str]:
    """Node id -> the glyph its line starts with, in the frame drawn now."""
    out = {}
    for line in view.frame().splitlines():
        found = re.search(r"  \[([\d.]+)\]", line)
        if found:
            out[found[1]] = line[0]
    return out


def test_a_node_done_earlier_keeps_its_glyph_until_its_parent_starts_again():
    """The live view drew a node only in the tick that ticked it: a walk's finished steps,
    and a child that failed under a fallback, showed nothing a tick later."""
    view = LiveView(io.StringIO(), size=lambda: (100, 40))
    view.on_start(header(NESTED))
    ticks = [
        {"0": "RUNNING", "0.0": "RUNNING", "0.0.0": "RUNNING"},
        {"0": "RUNNING", "0.0": "RUNNING", "0.0.0": "SUCCESS", "0.0.1": "RUNNING"},
        {"0": "RUNNING", "0.0": "RUNNING", "0.0.1": "RUNNING"},
        {"0": "RUNNING", "0.0": "SUCCESS", "0.0.1": "SUCCESS", "0.1": "RUNNING"},
        {"0": "FAILURE", "0.1": "FAILURE"},
    ]
    seen = []
    for i, nodes in enumerate(ticks):
        view.on_tick(tick_of(i, nodes))
        seen.append(glyphs(view))
    assert seen[2] == {"0": "*", "0.0": "*", "0.0.0": "✓", "0.0.1": "*", "0.1": " "}
    assert seen[4] == {"0": "✕", "0.0": "✓", "0.0.0": "✓", "0.0.1": "✓", "0.1": "✕"}
    # The message stays with the status: what the node said when it was last ticked.
    assert "0.0.0 at 1" in view.frame()
    # The mission starts again (a repeat above it, say): the nodes under it are reset.
    view.on_tick(tick_of(5, {"0": "RUNNING", "0.0": "RUNNING", "0.0.0": "RUNNING"}))
    assert glyphs(view) == {"0": "*", "0.0": "*", "0.0.0": "*", "0.0.1": " ", "0.1": " "}


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from([node.id for node in NESTED.walk()]),
            st.sampled_from(["SUCCESS", "FAILURE", "RUNNING", "INVALID"]),
            min_size=1,
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_live_view_and_the_web_page_show_the_same_statuses(ticks):
    """One rule for both (``reset_without_tick``), whatever the ticks."""
    view = LiveView(io.StringIO(), size=lambda: (100, 40))
    view.on_start(header(NESTED))
    store = RunStore({"kind": "header", "v": 2, "mission": "m", "tree": NESTED.as_map()}, {})
    for i, nodes in enumerate(ticks):
        view.on_tick(tick_of(i, nodes))
        store.add({"kind": "tick", "t": 0.1 * i, "tick": i, "nodes": nodes, "limbs": {},
                   "bases": {}, "events": []})  # fmt: skip
        page = {k: GLYPH[v["status"]] for k, v in store.frame(i)["nodes"].items()}
        assert glyphs(view) == page, (i, nodes)
