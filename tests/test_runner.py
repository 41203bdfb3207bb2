"""The runner, builder and behaviours over in-process fake limbs (no agent processes)."""

from __future__ import annotations

import io
import json
import sys
import textwrap

import numpy as np
import pytest
from fake_limbs import FakeLink, handles

from limbtree.transport.driver import Health
from limbtree.transport.errors import RemoteError
from limbtree.trees.app import robot_catalogue
from limbtree.trees.builder import build_tree
from limbtree.trees.context import MissionContext
from limbtree.trees.display import HeadlessProgress
from limbtree.trees.mission import load_mission
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import Runner, RunOptions, RunOutcome, ScheduledFault, TickClock

LIMBS = """
limbs:
  a: {robot: heavy_limb}
  b: {robot: light_limb}
"""


class Keys:
    def __init__(self, script):
        self.script = dict(script)  # tick -> keys
        self.tick = 0

    def pressed(self):
        self.tick += 1
        return self.script.get(self.tick, "")


class Refuse:
    def confirm(self, key, prompt):
        return False

    def withdraw(self, key):
        pass


def run(tmp_path, tree_yaml, *, speeds=(0.2, 0.05), faults=(), keys=None, operator=None,
        record=True, max_time_s=120.0, health=None, prepare=None):  # fmt: skip
    path = tmp_path / "mission.yaml"
    path.write_text("mission: test\nrate_hz: 50\n" + LIMBS + textwrap.dedent(tree_yaml))
    mission = load_mission(path, robots=robot_catalogue())
    clock = TickClock()
    links = {
        "a": FakeLink((0.0, 0.0, 0.0), speeds[0], clock=clock.now),
        "b": FakeLink((1.0, 0.0, 0.0), speeds[1], clock=clock.now),
    }
    for name, flags in (health or {}).items():
        links[name].stuck = flags
    if prepare is not None:
        prepare(links)
    context = MissionContext(handles(links), clock.now)
    if operator is not None:
        context.operator = operator
    root = build_tree(mission.root, context)
    out = io.StringIO()
    runner = Runner(
        "test", clock, root, context, links, list(faults),
        RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec" if record else None,
                   max_time_s=max_time_s),
        [HeadlessProgress(out)], keys,
    )  # fmt: skip
    outcome = runner.run()
    return outcome, runner, links, out.getvalue()


SQUARE = """
tree:
  sync_move:
    name: square
    limbs: [a, b]
    waypoints:
      - {translation_mm: [100, 0, 0]}
      - {translation_mm: [100, 100, 0]}
      - {translation_mm: [0, 100, 0]}
      - {translation_mm: [0, 0, 0]}
    p_e_mm: 20
"""


def test_a_synchronized_square_succeeds_and_records_every_tick(tmp_path):
    outcome, runner, _links, _ = run(tmp_path, SQUARE)
    assert outcome is RunOutcome.SUCCESS
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "SUCCESS" and summary["ticks"] == runner.ticks
    assert 0.99 <= summary["max_command_state_distance"] <= 1.0
    (square,) = [node for node in summary["nodes"] if node["name"] == "square"]
    assert square["id"] == "0" and square["type"] == "sync_move"
    assert square["ticks"] == runner.ticks and square["last_status"] == "SUCCESS"
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    assert len(ticks) == runner.ticks
    for entry in ticks:
        for limb in entry["limbs"].values():
            if limb["command"] is not None:
                # The logged state is the one the command was clamped around: within p_e.
                gap = np.linalg.norm(np.subtract(limb["command"][:3], limb["state"][:3]))
                assert gap <= 0.02 + 1e-9


def test_the_slow_limb_paces_the_fast_one(tmp_path):
    _, _, links, _ = run(tmp_path, SQUARE, record=False)
    a, b = links["a"], links["b"]
    moves_a = [f["pose"][:3] for mode, f in a.commands if mode.value == "ee_pose"]
    moves_b = [f["pose"][:3] for mode, f in b.commands if mode.value == "ee_pose"]
    offsets = np.array(moves_a) - (np.array(moves_b) - [1.0, 0.0, 0.0])
    assert np.abs(offsets).max() <= 0.04 + 1e-9


def test_power_loss_is_injected_recovered_and_counted(tmp_path):
    faults = [ScheduledFault(1.0, "a", "power_off", 1.0)]
    outcome, _runner, _, out = run(tmp_path, SQUARE, faults=faults)
    assert outcome is RunOutcome.SUCCESS
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["faults_injected"] == 1 and summary["faults_recovered"] == 1
    assert summary["recoveries"] >= 1
    assert summary["max_command_state_distance"] <= 1.0
    assert "recovered from power_off on a" in out
    kinds = [e["kind"] for t in read_log(tmp_path / "rec" / "log.msgpack") for e in t["events"]]
    assert (
        kinds.index("fault_injected") < kinds.index("fault_ended") < kinds.index("fault_recovered")
    )


def test_a_limb_stale_past_its_timeout_fails_the_move_with_a_clear_message(tmp_path):
    tree = SQUARE.replace("p_e_mm: 20", "p_e_mm: 20\n    stale_timeout_s: 1")
    faults = [ScheduledFault(0.5, "b", "disassembly", 10.0)]
    outcome, runner, _, _ = run(tmp_path, tree, faults=faults)
    assert outcome is RunOutcome.FAILURE
    # (its agent says it is disassembled: the move holds from then, and says so)
    assert "limb b is disassembled since t=0.50 s" in runner.failure_message()
    assert "stale_timeout_s" in runner.failure_message()


def test_q_aborts_and_the_limbs_hold(tmp_path):
    outcome, _runner, links, _out = run(tmp_path, SQUARE, keys=Keys({20: "q"}))
    assert outcome is RunOutcome.ABORTED
    assert links["a"].commands[-1][0].value == "hold"
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED"
    assert "limbs hold, record closed" in _out


def test_an_abort_without_a_record_says_only_that_the_limbs_hold(tmp_path):
    outcome, _runner, _links, out = run(tmp_path, SQUARE, keys=Keys({20: "q"}), record=False)
    assert outcome is RunOutcome.ABORTED
    assert "limbs hold" in out and "record" not in out


def test_space_pauses_without_ticking(tmp_path):
    outcome, _runner, _, out = run(tmp_path, SQUARE, keys=Keys({5: " ", 7: " "}))
    assert outcome is RunOutcome.SUCCESS
    assert "paused" in out and "resumed" in out


def test_a_refused_operator_gate_fails_the_sequence(tmp_path):
    tree = """
    tree:
      sequence:
        - operator_gate: {prompt: "go on?"}
        - wait: {duration_s: 1}
    """
    outcome, runner, _, _ = run(tmp_path, tree, operator=Refuse(), record=False)
    assert outcome is RunOutcome.FAILURE
    assert "refused by the operator" in runner.failure_message()


def test_every_attempt_of_a_retried_move_times_out_after_the_same_ticks(tmp_path):
    # 0.2 s at 50 Hz is 10 ticks from each attempt's first tick. The second attempt starts at
    # tick 11 (0.22 s): 0.42 - 0.22 is 0.19999999999999998 in floats, which once let it run
    # one tick more (11) than the first (10), and the fourth (from 0.66 s) too.
    tree = """
    tree:
      retry:
        times: 4
        child:
          sync_move: {limbs: [a], waypoints: [{translation_mm: [0, 0, 1000]}], timeout_s: 0.2}
    """
    outcome, runner, _, _ = run(tmp_path, tree)
    assert outcome is RunOutcome.FAILURE
    assert "timed out after 0.2 s" in runner.failure_message()
    attempts: list[list[int]] = []
    previous = None
    for entry in read_log(tmp_path / "rec" / "log.msgpack"):
        status = entry["nodes"].get("0.0")
        if status is not None and previous in (None, "FAILURE"):
            attempts.append([entry["tick"]])  # this attempt's first tick
        if status == "FAILURE":
            attempts[-1].append(entry["tick"])  # its timeout
        previous = status
    assert [end - first for first, end in attempts] == [10, 10, 10, 10], attempts


def _attempt_ticks(log, node: str) -> list[int]:
    """Each attempt of a retried node: its ticks from its first tick to its failure."""
    attempts: list[list[int]] = []
    previous = None
    for entry in read_log(log):
        status = entry["nodes"].get(node)
        if status is not None and previous in (None, "FAILURE"):
            attempts.append([entry["tick"]])  # this attempt's first tick
        if status == "FAILURE":
            attempts[-1].append(entry["tick"])
        previous = status
    return [end - first for first, end in attempts]


@pytest.mark.parametrize(
    ("leaf", "said", "faults"),
    [
        ("grasp: {limb: a, timeout_s: 0.2}", "gripper did not close within 0.2 s", ()),
        ("release: {limb: a, timeout_s: 0.2}", "gripper did not open within 0.2 s", ()),
        ("sync_move: {limbs: [a], waypoints: [{translation_mm: [0, 0, 10]}], "
         "stale_timeout_s: 0.2}", "no state from a after 0.2 s", ("disassembly",)),
        ("joint_move: {limb: a, posture: safe, stale_timeout_s: 0.2}",
         "no joint state from a after 0.2 s", ("disassembly",)),
    ],
)  # fmt: skip
def test_every_attempt_of_a_retried_wait_fails_after_the_same_ticks(tmp_path, leaf, said, faults):
    # A gripper that never reports (the fake limbs have none), a limb that sends no state:
    # 0.2 s at 50 Hz is 10 ticks from each attempt's first tick. These waits compared
    # "now - since > timeout", one tick more than the moves' timeouts, and 11 or 12 ticks
    # as the floats of each start tick fell.
    tree = f"""
    tree:
      retry:
        times: 4
        child:
          {leaf}
    """
    scheduled = [ScheduledFault(0.0, "a", kind, 100.0) for kind in faults]
    outcome, runner, _, _ = run(tmp_path, tree, faults=scheduled)
    assert outcome is RunOutcome.FAILURE
    assert said in runner.failure_message()
    assert _attempt_ticks(tmp_path / "rec" / "log.msgpack", "0.0") == [10, 10, 10, 10]


@pytest.mark.parametrize(
    "leaf",
    ["joint_move: {limb: a, posture: {q_deg: [0, 0, 0]}, stale_timeout_s: 0.2}",
     "joint_sync_move: {limbs: [a, b], postures: [{q_deg: [0, 0, 0]}], stale_timeout_s: 0.2}"],
)  # fmt: skip
def test_a_joint_move_on_a_limb_whose_bus_fails_says_so_not_are_agents_up(tmp_path, leaf):
    # A hardware limb whose joint reads fail publishes BUS_FAULT: its agent is up. The joint
    # moves said "no joint state from the limbs: are their agents up?".
    tree = f"""
    tree:
      {leaf}
    """
    outcome, runner, _, _ = run(tmp_path, tree, health={"a": Health.BUS_FAULT}, record=False)
    assert outcome is RunOutcome.FAILURE
    message = runner.failure_message()
    assert "no joint state from a after 0.2 s (a is without joint readings (its bus fails))" in (
        message
    ), message
    assert "agent" not in message, message


def test_a_failed_run_says_that_the_agent_refused_its_commands_and_why(tmp_path):
    # A driver whose command() raises: the agent answers each command with internal. The
    # run failed only with "timed out ... check that the limb can move (faults, limits,
    # speed)": what the agent said was in the replies alone.
    def refuse_everything(links):
        a = links["a"]
        a.command_errors = 250
        a.last_error = RemoteError(
            "internal", "agent error: RuntimeError('servo controller rejected the packet')",
            endpoint="tcp://127.0.0.1:5550", request="command",
        )  # fmt: skip

    tree = """
    tree:
      joint_move: {limb: a, posture: {q_deg: [0, 0, 30]}, timeout_s: 0.2}
    """
    outcome, runner, _, _ = run(tmp_path, tree, prepare=refuse_everything, record=False)
    assert outcome is RunOutcome.FAILURE
    message = runner.failure_message()
    assert message.startswith("Joint move: timed out after 0.2 s"), message
    assert message.endswith(
        "(limb a: its agent refused 250 of the run's commands, the last: tcp://127.0.0.1:5550: "
        "internal: agent error: RuntimeError('servo controller rejected the packet'))"
    ), message


def test_timeout_uses_the_mission_clock(tmp_path):
    tree = """
    tree:
      timeout:
        duration_s: 2
        child: {wait: {duration_s: 10}}
    """
    outcome, runner, _, _ = run(tmp_path, tree, record=False)
    assert outcome is RunOutcome.FAILURE
    assert runner.t == pytest.approx(2.0, abs=0.05)


@pytest.mark.parametrize(
    ("second", "end"),
    [("wait: {duration_s: 0.2}", "SUCCESS"),
     ("timeout: {duration_s: 0.2, child: {wait: {duration_s: 10}}}", "FAILURE")],
)  # fmt: skip
def test_a_wait_and_a_timeout_last_their_ticks_from_any_start_tick(tmp_path, second, end):
    # Started at tick 11 (0.22 s), 0.2 s at 50 Hz ends at tick 21 (0.42 s), though
    # 0.42 - 0.22 is 0.19999999999999998 in floats (it once ended at tick 22).
    tree = f"""
    tree:
      sequence:
        - wait: {{duration_s: 0.22}}
        - {second}
    """
    run(tmp_path, tree)
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    started = [t["tick"] for t in ticks if t["nodes"].get("0.1") == "RUNNING"]
    (ended,) = [t["tick"] for t in ticks if t["nodes"].get("0.1") == end]
    assert (started[0], ended) == (11, 21)


def test_repeat_and_parallel_compose(tmp_path):
    tree = """
    tree:
      parallel:
        policy: one
        children:
          - wait: {duration_s: 3}
          - repeat:
              times: forever
              child: {wait: {duration_s: 0.5}}
    """
    outcome, runner, _, _ = run(tmp_path, tree, record=False)
    assert outcome is RunOutcome.SUCCESS
    assert runner.t == pytest.approx(3.0, abs=0.05)


def test_a_node_its_parent_halts_in_the_tick_is_not_running_after_it(tmp_path):
    # The parallel ends when its first child does: the long wait, ticked RUNNING in that
    # same tick, is halted; the record (the page, the terminal) must not show it running.
    tree = """
    tree:
      parallel:
        policy: one
        children:
          - wait: {name: short, duration_s: 0.2}
          - wait: {name: long, duration_s: 30}
    """
    outcome, _, _, _ = run(tmp_path, tree)
    assert outcome is RunOutcome.SUCCESS
    ticks = list(read_log(tmp_path / "rec" / "log.msgpack"))
    assert ticks[-2]["nodes"]["0.1"] == "RUNNING"
    assert ticks[-1]["nodes"] == {"0": "SUCCESS", "0.0": "SUCCESS", "0.1": "INVALID"}
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    (long,) = [node for node in summary["nodes"] if node["name"] == "long"]
    assert long["last_status"] == "INVALID" and long["ticks"] == len(ticks)


def test_ik_failures_of_two_limbs_in_turn_are_timed_per_limb(tmp_path, monkeypatch):
    # a's IK fails from 1 s to 4 s and from 4.5 s to 7 s (its time starts again), b's from
    # 3.5 s to 12 s: some limb fails for 11 s on end, but no limb for 10 s (ik_timeout):
    # the move goes on and arrives.
    import dataclasses

    from limbtree.transport.driver import Health

    windows = {0.0: ((1.0, 4.0), (4.5, 7.0)), 1.0: ((3.5, 12.0),)}
    faults: dict[float, list[str]] = {0.0: [], 1.0: []}  # injected, as a state lists them

    class FlakyIK(FakeLink):
        def step(self, t, timeout_s=1.0):
            state = super().step(t, timeout_s)
            spans = windows[self.start_x]
            if any(low <= t < high for low, high in spans):
                state = dataclasses.replace(
                    state,
                    health=state.health | Health.IK_FAILED,
                    detail={**state.detail, "faults": faults[self.start_x]},
                )
                self._state = state
            return state

        def __init__(self, start=(0.0, 0.0, 0.0), *args, **kwargs):
            super().__init__(start, *args, **kwargs)
            self.start_x = float(start[0])

    monkeypatch.setattr(sys.modules[__name__], "FakeLink", FlakyIK)
    slow = SQUARE.replace("p_e_mm: 20", "p_e_mm: 20\n    max_speed_mm_s: 25")
    outcome, runner, _, _ = run(tmp_path, slow, speeds=(0.05, 0.05))
    assert outcome is RunOutcome.SUCCESS, runner.failure_message()
    assert runner.t > 12.5  # (still moving when b's failure ended)
    # b's failure an injected ik_error (its state lists it): not counted, however long.
    faults[1.0] = ["ik_error"]
    (tmp_path / "injected").mkdir()
    outcome, runner, _, _ = run(tmp_path / "injected", slow.replace(
        "p_e_mm: 20", "p_e_mm: 20\n    ik_timeout_s: 5"), speeds=(0.05, 0.05))  # fmt: skip
    assert outcome is RunOutcome.SUCCESS, runner.failure_message()
    faults[1.0] = []
    # The same move with a shorter ik_timeout fails on b, naming it.
    short = slow.replace("p_e_mm: 20", "p_e_mm: 20\n    ik_timeout_s: 5")
    (tmp_path / "short").mkdir()
    outcome, runner, _, _ = run(tmp_path / "short", short, speeds=(0.05, 0.05))
    assert outcome is RunOutcome.FAILURE
    assert "IK failed for 5 s on end (b: IK failed;" in runner.failure_message()
    assert runner.t == pytest.approx(8.5, abs=0.05)


def test_joint_sync_move_reaches_the_postures(tmp_path):
    tree = """
    tree:
      joint_sync_move:
        limbs: [a, b]
        postures:
          - {a: {q_deg: [10, 0, 0]}, b: {q_deg: [57.29577951308232, 0, 0]}}
        q_e_deg: 5
    """
    outcome, _, links, _ = run(tmp_path, tree, record=False)
    assert outcome is RunOutcome.SUCCESS
    assert links["b"].position[0] == pytest.approx(1.0, abs=np.radians(1))


def test_recover_to_last_valid_needs_a_previous_move(tmp_path):
    tree = """
    tree:
      recover_to_last_valid: {limbs: [a]}
    """
    outcome, runner, _, _ = run(tmp_path, tree, record=False)
    assert outcome is RunOutcome.FAILURE
    assert "no last valid command for a" in runner.failure_message()


def test_the_failure_named_is_the_one_that_failed_the_run_not_one_absorbed_before(tmp_path):
    # The timeout under force_success and the fallback's first child failed first and kept
    # their FAILURE; the run's failure was named after the first of them ("Timeout: timed
    # out after 0.1 s"), not after the refused gate that failed the run.
    tree = """
    tree:
      sequence:
        - force_success:
            child: {timeout: {duration_s: 0.1, child: {wait: {duration_s: 1}}}}
        - fallback:
            memory: false
            children:
              - recover_to_last_valid: {limbs: [a]}  # fails at once: no move before it
              - wait: {duration_s: 0.1}
        - operator_gate: {prompt: "go on?"}
    """
    outcome, runner, _, _ = run(tmp_path, tree, operator=Refuse(), record=False)
    assert outcome is RunOutcome.FAILURE
    assert runner.failure_message() == "Operator gate: refused by the operator"


@pytest.mark.parametrize(
    ("leaf", "said"),
    [
        ("sync_move: {limbs: [a, b], waypoints: [{translation_mm: [0, 0, 100]}], "
         "stall_timeout_s: 1}",
         "stalled: for 1.0 s the limbs came no closer to waypoint 1/1 (from it: a 80 mm, "
         "b 100 mm); check that each limb can move"),
        ("joint_move: {limb: b, posture: {q_deg: [10, 10, 10]}, stall_timeout_s: 1}",
         "stalled: for 1.0 s the limbs came no closer to posture 1/1 (from it: b joint "),
    ],
)  # fmt: skip
def test_a_move_on_a_limb_that_never_moves_fails_once_stalled(tmp_path, leaf, said):
    # Without a timeout_s such a move held for ever (a blockage with no end).
    outcome, runner, _, _ = run(tmp_path, f"tree:\n  {leaf}\n", speeds=(0.2, 0.0))
    assert outcome is RunOutcome.FAILURE
    assert said in runner.failure_message()
