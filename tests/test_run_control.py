"""Runs that end, and end honestly: pause, resume, abort, operator gates, signals.

In-process tests over fake limbs and a fake wall clock; the tests that start real agent
processes and signal ``limbtree run`` are in ``test_run_signals.py``.
"""

from __future__ import annotations

import io
import json
import os
import textwrap

import pytest
from fake_limbs import FakeLink, handles

from limbtree.transport.driver import CommandMode
from limbtree.transport.errors import RemoteError, RequestTimeoutError
from limbtree.transport.schema import ErrorCode
from limbtree.trees.app import RunRequest, check_operator, load, run_mission
from limbtree.trees.builder import build_tree
from limbtree.trees.clocks import RealClock, SimClock
from limbtree.trees.context import MissionContext
from limbtree.trees.display import LINE_HELP, HeadlessProgress, TerminalKeyboard
from limbtree.trees.errors import AgentError, RunError
from limbtree.trees.mission import load_mission
from limbtree.trees.recorder import read_log
from limbtree.trees.runner import HOLD_RENEW_S, Runner, RunOptions, RunOutcome, TickClock

LIMBS = """
limbs:
  a: {robot: heavy_limb}
  b: {robot: light_limb}
"""

MOVE = """
tree:
  sync_move:
    name: square
    limbs: [a, b]
    waypoints:
      - {translation_mm: [100, 0, 0]}
      - {translation_mm: [0, 0, 0]}
    p_e_mm: 20
"""


class FakeWall:
    """A wall clock that only moves when something sleeps."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


class Keys:
    """Keys by loop iteration of the runner (it reads the keyboard once per iteration)."""

    def __init__(self, script: dict[int, str]) -> None:
        self.script = dict(script)
        self.calls = 0

    def pressed(self) -> str:
        self.calls += 1
        return self.script.get(self.calls, "")


class DeadlineLink(FakeLink):
    """A fake limb whose step reply counts as late after its timeout of (fake) wall time."""

    def __init__(self, *args, wall: FakeWall, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.wall = wall
        self.sent_at = 0.0
        self.timeout_s = 1.0

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        super().send_step(t, timeout_s)
        self.sent_at, self.timeout_s = self.wall(), timeout_s

    def finish_step(self):
        if self.wall() - self.sent_at > self.timeout_s:
            raise RequestTimeoutError("tcp://fake", "step", self.timeout_s)
        return super().finish_step()


class LateOperator:
    """Answers yes after the runner asked it ``polls`` times whether it is still waiting."""

    def __init__(self, polls: int) -> None:
        self.polls = polls
        self.asked_at: list[float] = []
        self.pending = False
        self.clock = None

    def confirm(self, key: str, prompt: str):
        if not self.pending and self.polls > 0:
            self.pending = True
            self.asked_at.append(self.clock())
            return None
        if self.pending:
            return None
        return True

    def waiting(self) -> bool:
        if self.pending:
            self.polls -= 1
            if self.polls <= 0:
                self.pending = False
        return self.pending

    def withdraw(self, key: str) -> None:
        self.pending = False


def make_runner(tmp_path, tree_yaml, *, keys=None, operator=None, wall=None, speed=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "mission.yaml"
    path.write_text("mission: test\nrate_hz: 50\n" + LIMBS + textwrap.dedent(tree_yaml))
    mission = load_mission(path, robots={"heavy_limb": ("arm",), "light_limb": ("arm",)})
    clock = TickClock()
    wall = wall or FakeWall()
    links = {
        "a": DeadlineLink((0.0, 0.0, 0.0), 0.2, clock=clock.now, wall=wall),
        "b": DeadlineLink((1.0, 0.0, 0.0), 0.05, clock=clock.now, wall=wall),
    }
    context = MissionContext(handles(links), clock.now)
    if operator is not None:
        operator.clock = clock.now
        context.operator = operator
    root = build_tree(mission.root, context)
    out = io.StringIO()
    runner = Runner(
        "test", clock, root, context, links, [],
        RunOptions(rate_hz=50.0, record_dir=tmp_path / "rec", max_time_s=120.0, speed=speed),
        [HeadlessProgress(out)], keys, time_source=wall, sleep=wall.sleep,
    )  # fmt: skip
    return runner, out


def events(tmp_path) -> list[dict]:
    return [e for t in read_log(tmp_path / "rec" / "log.msgpack") for e in t["events"]]


# -- the clocks -----------------------------------------------------------------------------


def test_a_paused_sim_clock_does_not_race_to_catch_up_the_paused_time():
    wall = FakeWall()
    clock = SimClock(10.0, speed=1.0, wall=wall, sleep=wall.sleep)
    clock.start()
    assert clock.remaining(5) == pytest.approx(0.5)  # tick 5 is due 0.5 s after the start
    wall.sleep(clock.remaining(5))
    assert wall.now == pytest.approx(100.5)
    clock.pause()
    wall.sleep(30.0)
    clock.resume()
    assert clock.remaining(6) == pytest.approx(0.1)  # after tick 5, not 30 s in the past
    wall.sleep(clock.remaining(6))
    assert wall.now == pytest.approx(130.6)
    assert clock.elapsed() == pytest.approx(30.6)  # the wall time still counts the pause


def test_a_paused_real_clock_stops_mission_time():
    wall = FakeWall()
    clock = RealClock(10.0, wall=wall, sleep=wall.sleep)
    clock.start()
    wall.sleep(2.0)
    clock.pause()
    wall.sleep(50.0)
    assert clock.tick_time(0) == pytest.approx(2.0)
    clock.resume()
    wall.sleep(1.0)
    assert clock.tick_time(0) == pytest.approx(3.0)


# -- pause, resume, abort -------------------------------------------------------------------


def test_lines_on_a_non_terminal_stdin_pause_resume_abort_and_answer():
    read, write = os.pipe()
    with os.fdopen(read) as stream:
        keyboard = TerminalKeyboard(stream)
        assert not keyboard.interactive
        assert keyboard.hint == "lines on stdin: p pauses, r resumes, a aborts"
        os.write(write, b"p\nresume\n  A \ny\nwhat\nr")
        assert keyboard.pressed() == "pra"
        assert keyboard.buffer == "y"
        # (with the number of the keys above that came before it: "p", "resume", "A")
        assert keyboard.ignored == [(3, f"'what' on stdin: the commands are {LINE_HELP}")]
        keyboard.ignored.clear()
        # Whole words: the terminal's q aborts here too, and a word that only begins with a
        # command's letter is no command.
        os.write(write, b"\nPause\nq\nquit\nabort\nplease\nrestart\n")
        assert keyboard.pressed() == "rpaaa"
        assert [(at, line.split(" on stdin")[0]) for at, line in keyboard.ignored] == [
            (5, "'please'"),
            (5, "'restart'"),
        ]
        os.write(write, b"r")
        os.close(write)
        assert keyboard.pressed() == "r"  # the last line, ended by the end of the file
        assert keyboard.pressed() == ""


def test_a_y_line_no_gate_reads_is_reported_not_kept():
    # Without --view web (or with --auto-confirm) no gate reads stdin: a y line was kept
    # without a word, and the README says every line that is no command is reported.
    read, write = os.pipe()
    with os.fdopen(read) as stream:
        keyboard = TerminalKeyboard(stream)
        keyboard.answers = False
        os.write(write, b"y\nNo\np\n")
        assert keyboard.pressed() == "p"
        assert keyboard.buffer == ""
        why = (
            "on stdin: no operator gate of this run reads it (with --auto-confirm they "
            "pass by themselves; without it, y / n lines answer them only with --view web)"
        )
        assert keyboard.ignored == [(0, f"'y' {why}"), (0, f"'No' {why}")]
        os.close(write)


def test_a_closed_stdin_gives_no_keys():
    keyboard = TerminalKeyboard(io.StringIO("p\n"))  # no descriptor: like pytest's stdin
    assert not keyboard.interactive and keyboard.pressed() == ""
    assert keyboard.hint == ""  # (nothing to tell: no key can come)


class LineKeys(Keys):
    """:class:`Keys` from stdin lines: with a hint, and lines that were no command."""

    hint = "lines on stdin: p pauses, r resumes, a aborts"

    def __init__(self, script: dict[int, str], ignored: dict[int, tuple[int, str]]) -> None:
        super().__init__(script)
        self.later = {
            tick: (before, f"{line!r} on stdin: the commands are {LINE_HELP}")
            for tick, (before, line) in ignored.items()
        }
        self.ignored: list[tuple[int, str]] = []

    def pressed(self) -> str:
        keys = super().pressed()
        if self.calls in self.later:
            self.ignored.append(self.later[self.calls])
        return keys


def test_the_run_says_how_to_resume_from_its_stdin_and_which_lines_it_ignored(tmp_path):
    keys = LineKeys({10: "p", 20: "r"}, ignored={15: (0, "x")})
    runner, out = make_runner(tmp_path, MOVE, keys=keys)
    assert runner.run() is RunOutcome.SUCCESS
    said = out.getvalue()
    assert "paused (lines on stdin: p pauses, r resumes, a aborts)" in said
    assert "q aborts" not in said  # (a terminal's key, said only to a terminal)
    assert (
        "ignored the line 'x' on stdin: the commands are p (pause), r (resume), a or q "
        "(abort), y / n (answer an operator gate)"
    ) in said
    assert keys.ignored == []  # each said once


def test_lines_ignored_are_said_in_their_place_among_the_commands(tmp_path):
    # "p", "x", "r" in one burst: paused, then the ignored line, then resumed (the ignored
    # line was said before the pause, as if it came first).
    keys = LineKeys({10: "pr"}, ignored={10: (1, "x")})
    runner, out = make_runner(tmp_path, MOVE, keys=keys)
    assert runner.run() is RunOutcome.SUCCESS
    said = out.getvalue()
    paused, ignored = said.index("paused"), said.index("ignored the line 'x'")
    assert paused < ignored < said.index("resumed", ignored), said


def test_lines_after_an_abort_are_still_said(tmp_path):
    keys = LineKeys({10: "a"}, ignored={10: (1, "x")})
    runner, out = make_runner(tmp_path, MOVE, keys=keys)
    assert runner.run() is RunOutcome.ABORTED
    said = out.getvalue()
    assert said.index("aborted by the operator") < said.index("ignored the line 'x'"), said


def test_a_long_pause_in_the_sim_clock_makes_no_link_errors_and_is_recorded(tmp_path):
    # 300 loop iterations paused, 0.05 s of wall time each: 15 s, far past the 2 s step timeout.
    runner, out = make_runner(tmp_path, MOVE, keys=Keys({10: "p", 310: "r"}))
    assert runner.run() is RunOutcome.SUCCESS
    kinds = [e["kind"] for e in events(tmp_path)]
    assert "link" not in kinds, [e for e in events(tmp_path) if e["kind"] == "link"]
    assert kinds.count("paused") == 1 and kinds.count("resumed") == 1
    assert "paused" in out.getvalue() and "resumed" in out.getvalue()


def test_pausing_stops_mission_time(tmp_path):
    # At speed 1, 100 loop iterations paused (0.05 s of wall time each) add 5 s of wall time,
    # and the ticks after the pause keep their pace instead of racing through the 5 s.
    runner, _ = make_runner(tmp_path, MOVE, keys=Keys({10: "p", 110: "r"}), speed=1.0)
    assert runner.run() is RunOutcome.SUCCESS
    assert runner.t > 1.0
    assert runner.run_clock.elapsed() == pytest.approx(runner.t + 5.0, abs=0.1)


class LeasedLink(FakeLink):
    """A fake limb of a real-clock agent: its commands are refused for good once another
    client took it (``taken_after`` holds, or never)."""

    def __init__(self, *args, taken_after: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.taken_after = taken_after
        self.last_error: RemoteError | None = None

    def send_command(self, mode, **fields) -> bool:
        holds = sum(1 for m, _ in self.commands if m is CommandMode.HOLD)
        if self.taken_after is not None and holds >= self.taken_after:
            self.last_error = RemoteError(
                ErrorCode.COMMANDED_ELSEWHERE,
                "limb 'arm' is commanded by another client",
                endpoint="tcp://fake",
            )
        return super().send_command(mode, **fields)

    @property
    def is_stale(self) -> bool:
        return False  # (its agent streams by itself; nothing here steps it)


class ClaimingLink(LeasedLink):
    """A fake limb of a real-clock agent that takes ``claim`` (protocol section 5.9): its
    claims are refused for good once another client took it (``claimed_after`` claims, or
    never), and so is the blocking claim before the first tick when ``taken`` is set."""

    def __init__(
        self,
        *args,
        claimed_after: int | None = None,
        taken: bool = False,
        answer: str = "claimed",
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.claimed_after = claimed_after
        self.taken = taken
        self.answer = answer
        self.claims = 0
        self.blocking_claims = 0

    def _taken(self, detail: str) -> RemoteError:
        return RemoteError(
            ErrorCode.COMMANDED_ELSEWHERE,
            f"limb 'arm' is commanded by another client ({detail})",
            endpoint="tcp://fake:7000",
            field="limb",
            request="claim",
        )

    def claim(self, timeout_s: float = 1.0) -> list[str]:
        self.blocking_claims += 1
        if self.taken:
            raise self._taken("its last command or claim 0.30 s ago")
        if self.answer == "unknown_type":  # (an agent older than claim)
            raise RemoteError(
                ErrorCode.UNKNOWN_TYPE, "unknown message type 'claim'", endpoint="tcp://old:7000"
            )
        if self.answer == "timeout":
            raise RequestTimeoutError("tcp://slow:7000", "claim", timeout_s)
        return ["arm"]

    def send_claim(self) -> bool:
        self.claims += 1
        if self.claimed_after is not None and self.claims > self.claimed_after:
            self.last_error = self._taken("its last command or claim 0.10 s ago")
        return True


def real_clock_runner(tmp_path, keys, taken_after=None, link=LeasedLink, duration_s=1, **kwargs):
    path = tmp_path / "mission.yaml"
    path.write_text(
        "mission: test\nclock: real\n" + LIMBS + f"tree:\n  wait: {{duration_s: {duration_s}}}\n"
    )
    mission = load_mission(path, robots={"heavy_limb": ("arm",), "light_limb": ("arm",)})
    clock, wall = TickClock(), FakeWall()
    links = {name: link(taken_after=taken_after, clock=clock.now, **kwargs) for name in ("a", "b")}
    context = MissionContext(handles(links), clock.now)
    runner = Runner(
        "test", clock, build_tree(mission.root, context), context, links, [],
        RunOptions(clock="real", rate_hz=50.0, record_dir=tmp_path / "rec"),
        [HeadlessProgress(io.StringIO())], keys, time_source=wall, sleep=wall.sleep,
    )  # fmt: skip
    return runner, links


def test_a_paused_real_clock_run_keeps_telling_its_limbs_to_hold(tmp_path):
    # Paused for 100 loop iterations of 0.05 s of wall time: 5 s, five times the agents'
    # 1 s lease. A hold every 0.25 s renews it, so no other client can take a limb meanwhile.
    runner, links = real_clock_runner(tmp_path, Keys({10: "p", 110: "r"}))
    assert runner.run() is RunOutcome.SUCCESS
    for link in links.values():
        holds = sum(1 for mode, _ in link.commands if mode is CommandMode.HOLD)
        # (one every HOLD_RENEW_S, rounded up to the loop's 0.05 s; before, one in all)
        assert holds >= 5.0 / (HOLD_RENEW_S + 0.05)


def holds(link):
    return sum(1 for mode, _ in link.commands if mode is CommandMode.HOLD)


def test_a_paused_real_clock_run_keeps_its_limbs_by_claims_not_holds(tmp_path):
    # The same 5 s pause over agents that take claims: one hold as it pauses (and one as the
    # run ends), then a claim every HOLD_RENEW_S, which renews the lease and moves nothing.
    runner, links = real_clock_runner(tmp_path, Keys({10: "p", 110: "r"}), link=ClaimingLink)
    assert runner.run() is RunOutcome.SUCCESS
    for link in links.values():
        assert link.blocking_claims == 1  # (before the first tick)
        assert holds(link) == 2
        assert link.claims >= 5.0 / (HOLD_RENEW_S + 0.05)


def test_a_running_real_clock_run_claims_limbs_it_does_not_command(tmp_path):
    # A 3 s wait commands neither limb: without claims, their 1 s lease would lapse twice over.
    runner, links = real_clock_runner(tmp_path, Keys({}), link=ClaimingLink, duration_s=3)
    assert runner.run() is RunOutcome.SUCCESS
    for link in links.values():
        assert link.commands == [(CommandMode.HOLD, {})]  # (the run's end only)
        # One every HOLD_RENEW_S of the 3 s (the ticks are 0.02 s apart): 12, give or take.
        assert 3.0 / HOLD_RENEW_S - 1 <= link.claims <= 3.0 / HOLD_RENEW_S + 1


def test_the_limbs_of_an_agent_older_than_claim_are_held_while_paused_as_before(tmp_path):
    runner, links = real_clock_runner(
        tmp_path, Keys({10: "p", 110: "r"}), link=ClaimingLink, answer="unknown_type"
    )
    assert runner.run() is RunOutcome.SUCCESS
    for link in links.values():
        assert link.claims == 0
        assert holds(link) >= 5.0 / (HOLD_RENEW_S + 0.05)
    said = runner.sinks.sinks[-1].stream.getvalue()
    assert "limb a: its agent (tcp://old:7000) is older than the claim request" in said
    assert "update the agent" in said


def test_a_claim_unanswered_before_the_first_tick_is_sent_again_while_the_run_runs(tmp_path):
    runner, links = real_clock_runner(tmp_path, Keys({}), link=ClaimingLink, answer="timeout")
    assert runner.run() is RunOutcome.SUCCESS
    said = runner.sinks.sinks[-1].stream.getvalue()
    assert "limb a: its claim before the first tick failed (tcp://slow:7000: no reply" in said
    assert all(link.claims >= 3 for link in links.values())  # (the 1 s wait, every 0.25 s)


def test_a_claim_refused_while_the_run_runs_stops_it_naming_limb_endpoint_and_fix(tmp_path):
    runner, _ = real_clock_runner(tmp_path, Keys({}), link=ClaimingLink, claimed_after=2)
    refusal = (
        r"limb a: another client commands it, its agent refused this run's claim: "
        r"tcp://fake:7000: commanded_elsewhere: .*; the run stops \(one limb takes one "
        r"commander\): stop the other client"
    )
    with pytest.raises(AgentError, match=refusal):
        runner.run()
    assert runner.outcome is RunOutcome.ABORTED
    assert 0.5 <= runner.t < 1.0  # (the third claim, 0.5 s in; the wait lasts 1 s)


def test_a_real_clock_run_does_not_start_on_a_limb_another_client_commands(tmp_path):
    runner, links = real_clock_runner(tmp_path, Keys({}), link=ClaimingLink, taken=True)
    refusal = (
        r"limb a: another client commands it, its agent refused this run's claim: "
        r"tcp://fake:7000: commanded_elsewhere: .*its last command or claim 0.30 s ago.*; the "
        r"run does not start .*: stop the other client"
    )
    with pytest.raises(AgentError, match=refusal):
        runner.run()
    assert runner.outcome is RunOutcome.ABORTED and runner.ticks == 0
    assert all(link.commands == [] and link.claims == 0 for link in links.values())
    (aborted,) = events(tmp_path)
    assert aborted["kind"] == "aborted" and "does not start" in aborted["why"]


def test_a_limb_taken_from_a_paused_real_clock_run_stops_it(tmp_path):
    runner, _ = real_clock_runner(tmp_path, Keys({10: "p", 110: "r"}), taken_after=3)
    with pytest.raises(AgentError, match=r"limb a: its agent refused .*commanded by another"):
        runner.run()
    assert runner.outcome is RunOutcome.ABORTED


def test_an_abort_is_an_event_in_the_record_with_why(tmp_path):
    runner, _ = make_runner(tmp_path, MOVE, keys=Keys({20: "p", 25: "a"}))
    assert runner.run() is RunOutcome.ABORTED
    found = events(tmp_path)
    assert [e["kind"] for e in found][-2:] == ["paused", "aborted"]
    assert found[-1]["why"] == "aborted by the operator"
    summary = json.loads((tmp_path / "rec" / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and summary["failure"] == "aborted by the operator"


# -- operator gates -------------------------------------------------------------------------

GATE = """
tree:
  sequence:
    - wait: {duration_s: 1}
    - operator_gate: {prompt: "go on?"}
    - wait: {duration_s: 1}
"""


def test_sim_time_stands_still_while_a_gate_waits(tmp_path):
    operator = LateOperator(polls=500)  # 500 ticks would be 10 s of mission time
    runner, _ = make_runner(tmp_path, GATE, operator=operator)
    assert runner.run() is RunOutcome.SUCCESS
    assert operator.polls == 0
    assert operator.asked_at == [pytest.approx(1.0, abs=0.05)]
    assert runner.t == pytest.approx(2.0, abs=0.1)


def test_a_gate_no_one_can_answer_is_refused_naming_it_and_auto_confirm():
    mission = load(_path("self_assembly_minimal.yaml"))
    with pytest.raises(RunError) as error:
        check_operator(mission, interactive=False)
    text = str(error.value)
    assert "--auto-confirm" in text and "--view web to answer them in the web page" in text
    assert (
        'self_assembly_minimal.yaml:36:9: operator_gate "Operator gate" asks '
        '"limb in its safe pose: start the alignment?"'
    ) in text
    assert text.count("operator_gate") == 3
    check_operator(mission, interactive=True)  # someone at a terminal can answer


def test_run_refuses_gates_with_a_non_terminal_stdin_before_starting_anything(tmp_path):
    request = RunRequest(_path("self_assembly_minimal.yaml"), record=tmp_path / "rec")
    with pytest.raises(RunError, match="--auto-confirm"):
        run_mission(request, io.StringIO(), stdin=io.StringIO())
    assert not (tmp_path / "rec").exists()


def _path(name: str):
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "missions" / name


# -- moves that must end --------------------------------------------------------------------


def test_joint_move_fails_when_its_timeout_runs_out_saying_how_far_it_got(tmp_path):
    # Limb b's joint j0 starts at 1 rad (57.3 deg) and moves at 0.05 rad/s: the 32.7 deg to
    # 90 take about 11 s; the timeout is 2 s.
    tree = """
    tree:
      joint_move: {limb: b, posture: {q_deg: [90, 0, 0]}, timeout_s: 2}
    """
    runner, _ = make_runner(tmp_path, tree)
    assert runner.run() is RunOutcome.FAILURE
    assert runner.t == pytest.approx(2.0, abs=0.05)
    message = runner.failure_message()
    assert "timed out after 2 s moving to posture 1/1: b joint j0 is" in message
    # 2 s at 0.05 rad/s: 5.7 of the 32.7 degrees done.
    off = float(message.split("joint j0 is ")[1].split(" deg")[0])
    assert off == pytest.approx(32.7 - 5.7, abs=0.5)
    assert "timeout_s" in message


def test_joint_move_within_its_timeout_succeeds(tmp_path):
    tree = """
    tree:
      joint_move: {limb: a, posture: {q_deg: [10, 0, 0]}, timeout_s: 5}
    """
    runner, _ = make_runner(tmp_path, tree)
    assert runner.run() is RunOutcome.SUCCESS


# -- signals --------------------------------------------------------------------------------


def test_signals_are_noted_and_stop_the_run_at_its_next_safe_point():
    import signal

    from limbtree.trees.interrupts import RunInterrupted, signals_abort

    with signals_abort() as signals:
        signals.check()  # nothing yet
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)  # a point where the handler has run
        os.kill(os.getpid(), signal.SIGHUP)  # the run is already stopping: changes nothing
        signal.sigtimedwait([], 0)
        assert signals.received == "SIGTERM"
        with pytest.raises(RunInterrupted) as raised:
            signals.check()
        assert raised.value.signal_name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_signal_noted_stops_the_runner_between_two_ticks(tmp_path):
    runner, _ = make_runner(tmp_path, MOVE)
    noted: list[str | None] = [None]
    runner.signalled = lambda: noted[0]
    original = runner._tick

    def tick(t):
        original(t)
        if runner.ticks == 30:
            noted[0] = "SIGTERM"

    runner._tick = tick
    assert runner.run() is RunOutcome.ABORTED
    assert runner.ticks == 30
    found = events(tmp_path)
    assert found[-1] == {
        "kind": "aborted",
        "t": pytest.approx(0.58),
        "why": "interrupted (SIGTERM)",
    }
