"""Seed 000 eq. 11: a speed-driven command, clamped, against a limb with a reach limit."""

import weakref

import numpy as np
import pytest

from limbtree.kinematics import Pose, SE3Metric
from limbtree.skills import Mode, Outcome, SpeedSegment, StepTimer, SyncObservation, VelocityMove

_TIMERS: weakref.WeakKeyDictionary[object, StepTimer] = weakref.WeakKeyDictionary()


def tick(move, time, states):
    """Step ``move`` at ``time`` [s], dt from its previous tick here (0 at the first)."""
    timer = _TIMERS.setdefault(move, StepTimer())
    return move.step(SyncObservation(time, tuple(states)), timer.dt(time))


REACH_Z = 0.3


def follow(command):
    """A limb that tracks its command exactly but cannot rise above REACH_Z."""
    p = command.position.copy()
    p[2] = min(p[2], REACH_Z)
    return Pose(p, command.quaternion)


@pytest.mark.slow
def test_command_stops_at_the_edge_of_reach_and_comes_back_down_the_same_path():
    profile = [SpeedSegment(10.0, (0.0, 0.0, 0.03)), SpeedSegment(10.0, (0.0, 0.0, -0.03))]
    move = VelocityMove([SE3Metric(p_e=0.05, r_e=0.5)], profile, ["heavy"])
    state = Pose((0.1, 0.0, 0.1))
    commands = []
    for i in range(2100):
        step = tick(move, i * 0.01, [state])
        if step.outcome is Outcome.SUCCESS:
            break
        if step.command is not None:
            assert step.distance <= 1.0
            commands.append(step.command[0].position)
            state = follow(step.command[0])
    commands = np.array(commands)
    # Never more than p_e beyond the reach, always on the vertical line.
    assert commands[:, 2].max() <= REACH_Z + 0.05 + 1e-9
    assert np.allclose(commands[:, :2], [0.1, 0.0])
    # Back down after the input reverses.
    assert commands[-1, 2] < REACH_Z - 0.1
    assert step.outcome is Outcome.SUCCESS


def test_stale_state_holds_the_command():
    move = VelocityMove([SE3Metric()], [SpeedSegment(1.0, (0.0, 0.0, 0.1))], ["a"])
    tick(move, 0.0, [Pose()])
    step = tick(move, 0.1, [None])
    assert step.command is None and step.mode is Mode.STALE


def test_a_profile_done_says_which_limb_ended_short_of_where_the_input_leads():
    # A limb blocked the whole profile long ended "profile done", like one that followed.
    profile = [SpeedSegment(1.0, (0.0, 0.0, 0.1))]
    move = VelocityMove([SE3Metric(p_e=0.02), SE3Metric(p_e=0.02)], profile, ["free", "stuck"])
    free, stuck = Pose((0.0, 0.0, 0.0)), Pose((1.0, 0.0, 0.0))
    step = None
    for i in range(102):
        step = tick(move, i * 0.01, [free, stuck])
        if step.outcome is not Outcome.RUNNING:
            break
        if step.command is not None:
            free = step.command[0]  # follows exactly; stuck never moves
    assert step.outcome is Outcome.SUCCESS
    assert step.message == (
        "profile done; short of where the input speed alone leads (clamped: a limb blocked "
        "or out of reach): free 79 mm, stuck 99 mm"  # (free waits for stuck: in sync)
    )
    followed = VelocityMove([SE3Metric(p_e=0.02)], profile, ["free"])
    state = Pose()
    for i in range(102):
        step = tick(followed, i * 0.01, [state])
        if step.outcome is not Outcome.RUNNING:
            break
        if step.command is not None:
            state = step.command[0]
    assert step.message == "profile done"
