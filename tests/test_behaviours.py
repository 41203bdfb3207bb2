"""The behaviours are adapters: they step their core and publish its typed telemetry."""

import py_trees
import pytest
from fake_limbs import FakeLink, handles

from limbtree.errors import LimbtreeError
from limbtree.trees.behaviours import CannotStart, RecoverToLastValidBehaviour, SyncMoveBehaviour
from limbtree.trees.context import MissionContext

SYNC_KEYS = {"skill", "mode", "segment", "t", "distance", "message", "laps"}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def run(behaviour, links, clock, ticks):
    statuses = []
    for k in range(ticks):
        clock.t = 0.02 * k
        for link in links.values():
            link.step(clock.t)
        behaviour.context.telemetry.new_tick()
        behaviour.tick_once()
        statuses.append(behaviour.status)
        if behaviour.status is not py_trees.common.Status.RUNNING:
            break
    return statuses


def test_cannot_start_is_a_limbtree_error():
    assert issubclass(CannotStart, LimbtreeError)


def test_sync_move_reports_the_synchronizers_typed_figures_each_tick():
    clock = Clock()
    links = {"a": FakeLink(speed=0.5, clock=clock), "b": FakeLink((1.0, 0, 0), 0.5, clock=clock)}
    context = MissionContext(handles(links), clock)
    params = {
        "limbs": ["a", "b"],
        "waypoints": [{"a": [0.05, 0, 0, 0, 0, 0, 1], "b": [0.05, 0, 0, 0, 0, 0, 1]}],
        "p_e": 0.02,
    }
    move = SyncMoveBehaviour("move", context, params)
    seen = []
    original = move.report

    def spy(telemetry):
        original(telemetry)
        seen.append(context.telemetry.tick["move"].as_map())

    move.report = spy
    statuses = run(move, links, clock, 200)
    assert statuses[-1] is py_trees.common.Status.SUCCESS
    assert seen and all(set(s) == SYNC_KEYS and s["skill"] == "sync" for s in seen)
    assert seen[-1]["mode"] == "done"
    assert all(s["distance"] is None or s["distance"] <= 1.0 for s in seen)
    assert context.last_valid["a"].position == pytest.approx([0.05, 0.0, 0.0])


def test_recover_without_a_last_valid_command_fails_with_what_to_do():
    clock = Clock()
    links = {"a": FakeLink(clock=clock)}
    context = MissionContext(handles(links), clock)
    recover = RecoverToLastValidBehaviour("recover", context, {"limbs": ["a"]})
    assert run(recover, links, clock, 5) == [py_trees.common.Status.FAILURE]
    assert "place recover_to_last_valid after a sync_move" in recover.feedback_message
