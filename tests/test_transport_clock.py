from __future__ import annotations

import math

import pytest

from limbtree.transport import Clock, ConfigError, MonotonicClock, SimClock


def test_monotonic_clock_counts_seconds_from_its_creation_on_the_given_source() -> None:
    now = [100.0]
    clock = MonotonicClock(lambda: now[0])
    assert clock.now() == 0.0
    now[0] = 102.5
    assert clock.now() == 2.5


def test_sim_clock_moves_only_when_advanced() -> None:
    clock = SimClock()
    assert clock.now() == 0.0
    assert clock.advance(0.25) == 0.25
    clock.set(1.0)
    assert clock.now() == 1.0


@pytest.mark.parametrize("dt", [-0.1, math.nan, math.inf])
def test_sim_clock_refuses_to_go_backwards_or_to_nowhere(dt: float) -> None:
    with pytest.raises(ConfigError):
        SimClock(1.0).advance(dt)


def test_sim_clock_refuses_to_be_set_to_the_past() -> None:
    clock = SimClock(2.0)
    with pytest.raises(ConfigError, match="back"):
        clock.set(1.0)


def test_both_clocks_satisfy_the_clock_protocol() -> None:
    assert isinstance(SimClock(), Clock)
    assert isinstance(MonotonicClock(), Clock)
