"""The web page's control of a live run: breakpoints, step, pause, abort, gates.

In-process runs over fake limbs and a fake wall clock (``test_run_control``'s helpers);
a :class:`ScriptedControl` plays the page, asking for operations at given loops of the
runner. The same control over real HTTP is in ``test_web_server.py``, in a browser in
``test_web_browser.py``.
"""

from __future__ import annotations

import pytest
from test_run_control import make_runner

from limbtree.trees.control import (
    BreakOn,
    ControlError,
    ControlOp,
    RunControl,
    SharedOperator,
)
from limbtree.trees.recorder import read_log
from limbtree.trees.stream import NodeStatus, NodeTick

#: A wait, then a synchronized move of two fake limbs (also used by test_web_server and
#: test_web_browser).
SEQUENCE = """
tree:
  sequence:
    children:
      - wait: {name: first, duration_s: 0.2}
      - sync_move:
          name: square
          limbs: [a, b]
          waypoints:
            - {translation_mm: [50, 0, 0]}
            - {translation_mm: [0, 0, 0]}
          p_e_mm: 20
"""

FAILING = """
tree:
  fallback:
    children:
      - timeout:
          name: too slow
          duration_s: 0.1
          child: {wait: {duration_s: 5}}
      - wait: {name: plan b, duration_s: 0.1}
"""

GATE = """
tree:
  sequence:
    children:
      - wait: {duration_s: 0.1}
      - operator_gate: {name: go, prompt: "go on?"}
"""


class ScriptedControl(RunControl):
    """The page: ``script`` maps a call of :meth:`take` (the runner's loop) to operations;
    ``when_paused`` ops are asked at the first loops that find the run paused."""

    def __init__(self, node_ids, script=None, when_paused=()):
        super().__init__(node_ids)
        self.script = dict(script or {})
        self.when_paused = list(when_paused)
        self.calls = 0

    def take(self):
        self.calls += 1
        for op in self.script.get(self.calls, ()):
            self.request(op)
        if self.paused and self.when_paused:
            self.request(self.when_paused.pop(0))
        return super().take()


def runner_with(tmp_path, tree, control_factory, **kwargs):
    runner, out = make_runner(tmp_path, tree, **kwargs)
    runner.control = control_factory(list(runner.nodes))
    return runner, out


def ticks(tmp_path) -> list[dict]:
    return list(read_log(tmp_path / "rec" / "log.msgpack"))


def paused_at(log: list[dict]) -> list[tuple[int, dict]]:
    """(index of the map, event) of each pause, in the log."""
    return [(i, e) for i, m in enumerate(log) for e in m["events"] if e["kind"] == "paused"]


def test_a_breakpoint_on_start_pauses_after_the_tick_the_node_started_in(tmp_path):
    control = None

    def make(ids):
        nonlocal control
        control = ScriptedControl(ids, when_paused=[ControlOp.RESUME])
        control.set_breakpoint("0.1", BreakOn.START)
        return control

    runner, out = runner_with(tmp_path, SEQUENCE, make)
    assert runner.run().value == "SUCCESS"
    log = ticks(tmp_path)
    started = next(i for i, m in enumerate(log) if "0.1" in m["nodes"])
    pauses = paused_at(log)
    assert len(pauses) == 1
    index, event = pauses[0]
    # The pause is announced in the next tick's map, and names the node and the tick.
    assert index == started + 1
    assert event["node"] == "0.1"
    assert f"square (0.1) started at tick {started}" in event["why"]
    assert "breakpoint" in out.getvalue()


def test_step_advances_exactly_one_tick_and_pauses_again(tmp_path):
    control = None

    def make(ids):
        nonlocal control
        control = ScriptedControl(
            ids, when_paused=[ControlOp.STEP, ControlOp.STEP, ControlOp.RESUME]
        )
        control.set_breakpoint("0.1", "start")
        return control

    runner, _ = runner_with(tmp_path, SEQUENCE, make)
    assert runner.run().value == "SUCCESS"
    log = ticks(tmp_path)
    pauses = paused_at(log)
    assert [e.get("why", "")[:8] for _, e in pauses] == ["breakpoi", "stepped ", "stepped "]
    # one tick between each pause and the next: the map after each step holds the pause
    assert [i for i, _ in pauses] == [pauses[0][0], pauses[0][0] + 1, pauses[0][0] + 2]
    started = next(i for i, m in enumerate(log) if "0.1" in m["nodes"])
    assert pauses[1][1]["why"] == f"stepped to tick {started + 1}"


def test_a_breakpoint_on_failure_pauses_when_the_node_fails(tmp_path):
    def make(ids):
        control = ScriptedControl(ids, when_paused=[ControlOp.RESUME])
        control.set_breakpoint("0.0", BreakOn.FAILURE)
        control.set_breakpoint("0.1", BreakOn.FAILURE)  # never fails: never fires
        return control

    runner, _ = runner_with(tmp_path, FAILING, make)
    assert runner.run().value == "SUCCESS"
    log = ticks(tmp_path)
    failed = next(i for i, m in enumerate(log) if m["nodes"].get("0.0") == "FAILURE")
    pauses = paused_at(log)
    assert [(i, e["node"]) for i, e in pauses] == [(failed + 1, "0.0")]
    assert "too slow (0.0) failed" in pauses[0][1]["why"]


ENDS_FAILING = """
tree:
  sequence:
    children:
      - wait: {name: first, duration_s: 0.1}
      - timeout:
          name: too slow
          duration_s: 0.1
          child: {wait: {duration_s: 5}}
"""


@pytest.mark.parametrize("then", [ControlOp.RESUME, ControlOp.STEP, ControlOp.ABORT])
def test_a_breakpoint_on_the_failure_that_ends_the_run_pauses_before_it_ends(tmp_path, then):
    seen: list[tuple[bool, bool]] = []

    class Watching(ScriptedControl):
        def take(self):
            seen.append((self.paused, self.ended))
            return super().take()

    def make(ids):
        control = Watching(ids, when_paused=[then])
        control.set_breakpoint("0.1", BreakOn.FAILURE)
        return control

    runner, out = runner_with(tmp_path, ENDS_FAILING, make)
    # The tree's outcome stands, however the operator goes on (no tick is left to take).
    assert runner.run().value == "FAILURE"
    assert (True, False) in seen  # paused, and the run not over yet: the page could look
    assert runner.control.ended and not runner.control.paused
    log = ticks(tmp_path)
    assert log[-1]["nodes"]["0"] == "FAILURE"  # no map after the last tick
    ((index, event),) = paused_at(log)
    assert index == len(log) - 1 and event["node"] == "0.1"
    assert f"too slow (0.1) failed at tick {len(log) - 1}" in event["why"]
    assert "breakpoint" in out.getvalue()


def test_abort_from_the_page_ends_the_run_aborted(tmp_path):
    runner, _ = runner_with(
        tmp_path, SEQUENCE, lambda ids: ScriptedControl(ids, {5: [ControlOp.ABORT]})
    )
    assert runner.run().value == "ABORTED"
    assert runner.failure_message() == "aborted from the web page"
    assert runner.control.ended and not runner.control.paused


def test_pause_and_resume_from_the_page_are_recorded_with_who_asked(tmp_path):
    runner, _ = runner_with(
        tmp_path,
        SEQUENCE,
        lambda ids: ScriptedControl(ids, {3: [ControlOp.PAUSE], 6: [ControlOp.RESUME]}),
    )
    assert runner.run().value == "SUCCESS"
    kinds = [
        (e["kind"], e.get("why")) for m in ticks(tmp_path) for e in m["events"]
        if e["kind"] in ("paused", "resumed")
    ]  # fmt: skip
    assert kinds == [
        ("paused", "paused from the web page"),
        ("resumed", "resumed from the web page"),
    ]


def test_the_page_answers_an_operator_gate_and_the_gate_is_an_event(tmp_path):
    operator = SharedOperator()
    runner, _ = make_runner(tmp_path, GATE, operator=operator)

    answered = []

    class Page(RunControl):
        def take(self):
            if operator.question is not None and not answered:
                operator.answer(operator.question[0], True)
                answered.append(operator.question)
            return super().take()

    runner.control = Page(list(runner.nodes))
    assert runner.run().value == "SUCCESS"
    assert answered == [("0.1", "go on?")]
    log = ticks(tmp_path)
    gates = [(m["t"], e) for m in log for e in m["events"] if e["kind"].startswith("gate")]
    # Each in the map of the tick it happened in (its time is that tick's), the answer
    # saying who gave it.
    assert [e for _, e in gates] == [
        {"kind": "gate", "node": "0.1", "t": pytest.approx(0.1), "prompt": "go on?"},
        {"kind": "gate_answered", "node": "0.1", "t": pytest.approx(gates[1][0]),
         "answer": "yes (from the web page)"},
    ]  # fmt: skip
    assert all(t == e["t"] for t, e in gates)


def test_shared_operator_takes_the_first_answer_of_page_or_terminal():
    class Terminal:
        def __init__(self):
            self.answer = None
            self.withdrawn = []

        def confirm(self, key, prompt):
            return self.answer

        def withdraw(self, key):
            self.withdrawn.append(key)

        def waiting(self):
            return self.answer is None

    terminal = Terminal()
    said: list[str] = []
    operator = SharedOperator(terminal, said.append)
    with pytest.raises(ControlError, match=r"no gate is waiting"):
        operator.answer("0.1", True)
    assert operator.confirm("0.1", "go?") is None
    assert operator.question == ("0.1", "go?") and operator.waiting()
    with pytest.raises(ControlError, match=r"gate '0.1' is waiting, not '0.2'"):
        operator.answer("0.2", True)
    operator.answer("0.1", False)
    assert not operator.waiting()
    assert operator.confirm("0.1", "go?") is False
    assert operator.question is None
    # The terminal is told, and its question withdrawn (the gate may run again).
    assert said == ["operator: go? no (from the web page)"] and terminal.withdrawn == ["0.1"]
    terminal.answer = True  # the terminal answers the next one first
    assert operator.confirm("0.3", "again?") is True
    operator.withdraw("0.3")
    assert terminal.withdrawn == ["0.1", "0.3"]
    assert said == ["operator: go? no (from the web page)"]


def test_control_refuses_unknown_nodes_operations_and_kinds():
    control = RunControl(["0", "0.0"])
    with pytest.raises(ControlError, match=r"no node '0.7'"):
        control.set_breakpoint("0.7", "start")
    with pytest.raises(ControlError, match=r"'start', 'failure', 'recovery', not 'end'"):
        control.set_breakpoint("0.0", "end")
    with pytest.raises(ControlError, match=r"unknown operation 'jump'; use one of pause"):
        control.request("jump")
    control.set_breakpoint("0.0", "failure")
    control.set_breakpoint("0.0", "start")
    assert [(b.node, b.on.value) for b in control.breakpoints] == [
        ("0.0", "failure"),
        ("0.0", "start"),
    ]
    control.set_breakpoint("0.0", "failure", enabled=False)
    assert [b.on for b in control.breakpoints] == [BreakOn.START]


def test_a_recovery_breakpoint_on_a_node_that_never_recovers_is_refused():
    control = RunControl(["0", "0.0", "0.1"], recovering=["0.1"])
    with pytest.raises(ControlError, match=r"node '0.0' never recovers.*nodes 0.1\)"):
        control.set_breakpoint("0.0", "recovery")
    control.set_breakpoint("0.1", "recovery")
    control.set_breakpoint("0.0", "recovery", enabled=False)  # (clearing is always fine)
    assert [(b.node, b.on.value) for b in control.breakpoints] == [("0.1", "recovery")]
    # limbtree run --view web names the nodes whose behaviour says it recovers
    from limbtree.trees.behaviours.base import SkillBehaviour
    from limbtree.trees.behaviours.sync_move import SyncMoveBehaviour

    assert SyncMoveBehaviour.recovers and not SkillBehaviour.recovers


def test_observe_fires_on_start_only_when_the_node_was_not_running():
    control = RunControl(["0"])
    control.set_breakpoint("0", "start")
    running = {"0": NodeTick(NodeStatus.RUNNING, "", 0.0)}
    success = {"0": NodeTick(NodeStatus.SUCCESS, "", 0.0)}
    assert control.observe(0, 0.0, running) is not None  # first tick: it starts
    assert control.observe(1, 0.1, running) is None  # still running: no new start
    assert control.observe(2, 0.2, {}) is None  # not ticked
    assert control.observe(3, 0.3, success) is None  # ended, was running
    hit = control.observe(4, 0.4, success)  # ticked again after SUCCESS: started again
    assert hit is not None and (hit.tick, hit.t) == (4, 0.4)
    assert control.hit == hit
    control.set_state(paused=False)
    assert control.hit is None


def test_of_breakpoints_hit_in_one_tick_the_deepest_nodes_pauses_the_run():
    # A failure fails its leaf and the sequences above it in one tick: with a failure
    # breakpoint on each, the run named whichever the set of breakpoints gave first (its
    # order is the ids' hashes, drawn afresh by each process): the page selected and
    # named the root ("paused at breakpoint: doomed (failure)") rather than the leaf whose
    # feedback says why. The deepest node's now, whatever the order they were set in.
    for chain in (["0", "0.1", "0.1.0", "0.1.0.2", "0.1.0.2.3", "0.1.0.2.3.1"],
                  ["0", "0.4", "0.4.7", "0.4.7.1", "0.4.7.1.0", "0.4.7.1.0.5"],
                  ["0", "0.2", "0.2.2", "0.2.2.9", "0.2.2.9.4", "0.2.2.9.4.8"]):  # fmt: skip
        for order in (chain, chain[::-1]):
            control = RunControl(chain)
            for node in order:
                control.set_breakpoint(node, "failure")
                control.set_breakpoint(node, "start")
            failed = {node: NodeTick(NodeStatus.FAILURE, "", 0.0) for node in chain}
            hit = control.observe(0, 0.0, failed)
            assert hit is not None and (hit.node, hit.on) == (chain[-1], BreakOn.FAILURE)
    # A start and a failure of the same tick: the deeper node's, whichever its kind.
    control = RunControl(["0", "0.1"])
    control.set_breakpoint("0", "failure")
    control.set_breakpoint("0.1", "start")
    hit = control.observe(0, 0.0, {"0": NodeTick(NodeStatus.FAILURE, "", 0.0),
                                   "0.1": NodeTick(NodeStatus.FAILURE, "", 0.0)})  # fmt: skip
    assert hit is not None and (hit.node, hit.on) == ("0.1", BreakOn.START)
    # Cleared, it fires no more.
    control.set_breakpoint("0.1", "start", enabled=False)
    hit = control.observe(1, 0.1, {"0": NodeTick(NodeStatus.FAILURE, "", 0.0)})
    assert hit is not None and hit.node == "0"


def test_a_recovery_breakpoint_fires_when_the_skills_mode_turns_to_recovering():
    from types import SimpleNamespace

    control = RunControl(["0"])
    control.set_breakpoint("0", BreakOn.RECOVERY)
    running = {"0": NodeTick(NodeStatus.RUNNING, "", 0.0)}

    def mode(value):
        return {"0": SimpleNamespace(mode=value)}

    assert control.observe(0, 0.0, running, mode("nominal")) is None
    assert control.observe(1, 0.1, running, mode("stale")) is None
    hit = control.observe(2, 0.2, running, mode("recovering"))
    assert hit is not None and hit.on is BreakOn.RECOVERY and hit.tick == 2
    assert control.observe(3, 0.3, running, mode("recovering")) is None  # still recovering
    assert control.observe(4, 0.4, running, mode("nominal")) is None
    assert control.observe(5, 0.5, running, mode("recovering")) is not None  # again


def test_the_pages_unknown_operation_lists_every_operation_the_page_may_send():
    from limbtree.trees.web.link import PAGE_OPS, apply_control

    control = RunControl(["0", "0.0"])
    with pytest.raises(ControlError) as error:
        apply_control(control, None, {"op": "bogus"})
    text = str(error.value)
    assert text.startswith("unknown operation 'bogus'; use one of pause")
    for op in ("pause", "resume", "abort", "step", "break", "unbreak", "answer"):
        assert op in PAGE_OPS and op in text
    apply_control(control, None, {"op": "pause"})  # a run operation still goes through


@pytest.mark.parametrize(
    ("interactive", "web", "how"),
    [(True, False, "press y or n"), (False, False, "type y or n and Enter"),
     (False, True, "answer it in the web page, or type y or n and Enter")],
)  # fmt: skip
def test_the_terminal_question_says_how_it_can_be_answered(interactive, web, how):
    from types import SimpleNamespace

    from limbtree.trees.display import TerminalOperator

    said: list[str] = []
    operator = TerminalOperator(SimpleNamespace(interactive=interactive, buffer=""), said.append)
    operator.web = web
    assert operator.confirm("0.1", "limb clear: go on?") is None
    assert said == [f"operator: limb clear: go on? ({how}; --auto-confirm skips this)"]
