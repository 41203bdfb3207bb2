"""What ``limbtree run`` prints at its end: counts in words a person reads (issue 12, item 11)."""

from types import SimpleNamespace

import pytest

from limbtree.trees.app import _closing_line
from limbtree.trees.export.values import plural
from limbtree.trees.runner import RunOutcome


@pytest.mark.parametrize(
    ("count", "expected"), [(0, "0 recoveries"), (1, "1 recovery"), (2, "2 recoveries")]
)
def test_plural_takes_an_irregular_plural(count, expected):
    assert plural(count, "recovery", "recoveries") == expected


def closing(
    outcome: RunOutcome, clamped: bool = True, started: bool = True, **summary: object
) -> str:
    """``limbtree run``'s closing line for a run whose summary has these figures."""
    runner = SimpleNamespace(
        started=started,
        end=SimpleNamespace(summary=summary),
        name="m",
        options=SimpleNamespace(record_dir=None),
        context=SimpleNamespace(telemetry=SimpleNamespace(clamped=clamped)),
    )
    return _closing_line(runner, outcome, recorded=False)  # type: ignore[arg-type]


def test_the_closing_line_says_1_recovery_and_1_tick():
    text = closing(
        RunOutcome.SUCCESS, sim_time_s=0.02, wall_time_s=0.01, ticks=1, faults_recovered=1,
        faults_injected=1, recoveries=1, max_command_state_distance=1.0, failure=None,
    )  # fmt: skip
    assert "1 recovery," in text
    assert "1 tick)" in text
    assert "recoveries" not in text
    assert "max clamp distance 1.000 (<= 1)" in text
    # a run whose skills clamp nothing (a climb, a walk) does not print a meaningless 0.000
    unclamped = closing(
        RunOutcome.SUCCESS, clamped=False, sim_time_s=0.02, wall_time_s=0.01, ticks=1,
        faults_recovered=0, faults_injected=0, recoveries=0, max_command_state_distance=0.0,
        failure=None,
    )  # fmt: skip
    assert "clamp" not in unclamped and "0 recoveries" in unclamped


@pytest.mark.parametrize(
    ("outcome", "line"),
    [(RunOutcome.FAILURE, "failed at Sync move: timed out"),
     (RunOutcome.ABORTED, "aborted: aborted from the web page")],
)  # fmt: skip
def test_the_closing_line_says_why_a_run_failed_or_was_aborted(outcome, line):
    failure = "aborted from the web page" if outcome is RunOutcome.ABORTED else line[10:]
    text = closing(
        outcome, sim_time_s=1.0, wall_time_s=0.5, ticks=51, faults_recovered=0,
        faults_injected=0, recoveries=0, max_command_state_distance=0.5, failure=failure,
    )  # fmt: skip
    assert text.splitlines()[-1] == line


def test_check_counts_a_fault_drawn_on_several_limbs_as_one_disruption_as_the_readme_does():
    from pathlib import Path

    from limbtree.trees.app import faults_text, load

    missions = Path(__file__).parent.parent / "missions"
    robustness = load(missions / "robustness.yaml")
    assert faults_text(robustness) == "29 disruptions (58 limb faults)"
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert "through 29 disruptions" in readme
    assert faults_text(load(missions / "power_loss.yaml")) == "4 faults"


def test_stopped_after_start_up_is_said_only_of_a_run_that_never_started_ticking():
    # A run aborted after "running ..." but before its first tick (a p and an a queued on
    # stdin) said "stopped after N s of start-up" though its start-up was over.
    figures = dict(
        sim_time_s=0.0, wall_time_s=0.1, ticks=0, faults_recovered=0, faults_injected=0,
        recoveries=0, max_command_state_distance=0.0, failure="aborted", startup_s=1.52,
    )  # fmt: skip
    during = closing(RunOutcome.ABORTED, started=False, **figures)
    assert "(0.10 s wall, 0 ticks; stopped after 1.52 s of start-up)" in during
    after = closing(RunOutcome.ABORTED, started=True, **figures)
    assert "(0.10 s wall, 0 ticks)" in after and "start-up" not in after
