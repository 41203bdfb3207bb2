"""``limbtree ping`` on a real-clock agent also listens to its state stream.

An agent whose driver cannot read its limb answers ``ping`` and ``describe`` like a healthy
one, but publishes no state; a mission then failed with "no state from head ... is its agent
running?". ``limbtree ping`` now says which limb publishes nothing, and the health of those
that do.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from limbtree.robots.driver import HardwareDriver, JointReading
from limbtree.transport import PlantAgent
from limbtree.trees.cli import main

pytestmark = pytest.mark.timeout(60)


class Arm(HardwareDriver):
    """The light limb over a fake bus that may misbehave.

    Args:
        mode: ``"ok"``; ``"extra_joint"``: reads one value too many; ``"nack"``: every
            setpoint write raises.
    """

    driver_name = "test_arm"

    def __init__(self, mode: str) -> None:
        super().__init__("light_limb")
        self.mode = mode
        self.q = np.array(self.tracker.limb.postures["home"], dtype=np.float64)

    def read_joints(self) -> JointReading:
        q = np.append(self.q, 0.0) if self.mode == "extra_joint" else self.q.copy()
        return JointReading(q, np.zeros_like(q))

    def write_joint_targets(self, q: npt.NDArray[np.float64]) -> None:
        if self.mode == "nack":
            raise OSError("servo 3 NACK")
        self.q = np.array(q, dtype=np.float64)

    def power_state(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("mode", "status", "said"),
    [
        ("ok", 0, "light_limb: t = "),
        ("nack", 0, "health BUS_FAULT (write_joint_targets fails since t = "),
        ("extra_joint", 1, "answers, but limb light_limb published no state in"),
    ],
)
def test_ping_says_which_limbs_publish_no_state_and_the_health_of_the_others(
    make_agent: Callable[..., PlantAgent],
    capsys: pytest.CaptureFixture[str],
    mode: str,
    status: int,
    said: str,
) -> None:
    agent = make_agent(Arm(mode), clock="real", stream_rate_hz=100.0)
    assert main(["ping", agent.request_endpoint, "--timeout", "30"]) == status
    out, err = capsys.readouterr()
    assert said in out + err, out + err
    if mode == "ok":
        assert "health OK" in out
    if mode == "nack":
        assert "OSError: servo 3 NACK; commands are refused" in out
    if mode == "extra_joint":
        assert "light_limb: no state in" in out
        assert "read_joints raises or returns the wrong number of joints" in err
