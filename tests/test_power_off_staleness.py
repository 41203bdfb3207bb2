"""Issue 17 item 3: a powered-off limb goes stale in the sim clock as in the real clock.

In the real clock the agent publishes one state saying ``POWER_OFF`` and then stays quiet
(``test_transport_agent.py``); in the sim clock every ``step`` reply repeats the frozen
state. Either way the client's staleness runs, in its clock, from the state that said why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from limbtree.robots import make_plant
from limbtree.transport import AgentClient
from limbtree.transport.driver import Health

MakeAgent = Callable[..., Any]
RATE_HZ = 50


@pytest.mark.timeout(60)
def test_a_powered_off_limb_goes_stale_in_mission_time_from_the_state_that_said_so(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(make_plant("moonbot_zero"), clock="sim")
    now = [0.0]
    with AgentClient(agent.request_endpoint, stale_after_s=0.25, clock=lambda: now[0]) as client:
        client.describe(timeout_s=5)
        stale: list[float] = []
        for k in range(3 * RATE_HZ):
            t = k / RATE_HZ
            if k == RATE_HZ:
                client.fault("leg_0", "power_off", timeout_s=5)
            if k == 2 * RATE_HZ:
                client.fault("leg_0", "power_on", timeout_s=5)
            now[0] = t
            step = client.step(t, timeout_s=5)
            # The reply still carries the frozen state, flagged POWER_OFF.
            assert bool(step.states["leg_0"].health & Health.POWER_OFF) == (
                RATE_HZ <= k < 2 * RATE_HZ
            )
            assert not client.is_stale("leg_1")
            if client.is_stale("leg_0"):
                stale.append(t)
        assert client.received_at("leg_0") == 2.98
    # Stale from just after 1.0 s + 0.25 s until power returns at 2.0 s.
    assert stale[0] == pytest.approx(1.26) and stale[-1] == pytest.approx(1.98)
    assert len(stale) == round((1.98 - 1.26) * RATE_HZ) + 1
