"""Issue 12, safety item 1: no combination of clocks, agents and clients moves a joint too fast.

- A runner whose clock is not an agent's refuses to start, saying so and what to change.
- A real-clock agent enforces its joints' speed limits in its own time, whatever a client
  sends and however fast: a raw client floods it with far targets while the test samples the
  state stream.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from raw_client import raw_sockets

from limbtree.robots import make_plant
from limbtree.transport import PlantAgent
from limbtree.trees.app import RunRequest, check_agent_clock, run_mission
from limbtree.trees.errors import RunError

pytestmark = pytest.mark.timeout(60)

MakeAgent = Callable[..., PlantAgent]

#: Relative tolerance of the speed check: float round-off of ``speed * dt`` steps summed over
#: a sampling interval (measured: 4e-14), with a wide margin.
SPEED_TOLERANCE = 1e-6
#: How long each client floods the agent [s] (a safety bound, not a timing assertion).
FLOOD_S = 1.0


# --- the runner refuses an agent on another clock -----------------------------------------


def test_check_agent_clock_names_robot_endpoint_both_clocks_and_the_fix() -> None:
    with pytest.raises(RunError) as caught:
        check_agent_clock("arm", "tcp://10.0.0.2:7000", "real", "sim")
    message = str(caught.value)
    for words in ("robot arm", "tcp://10.0.0.2:7000", "real clock", "sim clock"):
        assert words in message
    assert "--clock real" in message and "start the agent with --clock sim" in message


def test_check_agent_clock_passes_matching_clocks() -> None:
    check_agent_clock("arm", "tcp://127.0.0.1:7000", "sim", "sim")
    check_agent_clock("arm", "tcp://127.0.0.1:7000", "real", "real")


def test_a_sim_run_refuses_a_real_clock_agent_before_the_tree_starts(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    agent = make_agent(make_plant("heavy_limb"), clock="real", stream_rate_hz=50)
    mission = tmp_path / "remote.yaml"
    mission.write_text(
        "mission: remote\n"
        "clock: sim\n"
        "limbs:\n"
        "  heavy:\n"
        "    robot: heavy_limb\n"
        f"    agent: {agent.request_endpoint}\n"
        "tree:\n"
        "  joint_move: {limb: heavy, posture: safe}\n"
    )
    with pytest.raises(RunError) as caught:
        run_mission(RunRequest(mission, headless=True, auto_confirm=True), out=_Null())
    message = str(caught.value)
    assert agent.request_endpoint in message
    assert "runs the real clock" in message and "uses the sim clock" in message
    assert "--clock real" in message and "--clock sim" in message
    # Nothing moved: the agent was never commanded.
    assert agent.plant.limb_state("arm").q == make_plant("heavy_limb").limb_state("arm").q


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


# --- the agent enforces speed limits in its own time --------------------------------------


def _far_command(
    mode: str,
    limb: str,
    seq: int,
    rng: random.Random,
    joints: list[dict[str, Any]],
    start: list[float],
) -> dict[str, Any]:
    if mode == "mix":
        mode = rng.choice(["joint_position", "ee_pose", "ee_twist", "hold"])
    message: dict[str, Any] = {"v": 2, "type": "command", "seq": seq, "limb": limb, "mode": mode}
    if mode == "joint_position":
        message["q"] = [rng.uniform(j["lower"], j["upper"]) for j in joints]
    elif mode == "ee_pose":
        # Far for one tick (up to 0.15 m away), yet on the limb's IK branch (the start's
        # orientation), so that the agent does move the limb: a target off its branch
        # would be refused as ik_failed and prove nothing about speed.
        position = [c + rng.uniform(-0.15, 0.15) for c in start[:3]]
        message["pose"] = [*position, *start[3:7]]
    elif mode == "ee_twist":
        message["twist"] = [rng.uniform(-5.0, 5.0) for _ in range(6)]
    return message


@pytest.mark.parametrize(
    ("robot", "mode"),
    [
        ("light_limb", "joint_position"),
        ("light_limb", "ee_pose"),
        ("light_limb", "ee_twist"),
        ("moonbot_zero", "mix"),
        ("heavy_limb", "mix"),
    ],
)
def test_a_real_clock_agent_flooded_with_far_targets_never_exceeds_joint_speed_limits(
    make_agent: MakeAgent, robot: str, mode: str
) -> None:
    agent = make_agent(make_plant(robot), clock="real", stream_rate_hz=200)
    limb_name = agent.plant.describe().limbs[0].name
    with raw_sockets(agent, limb_name.encode(), rcvhwm=100_000) as (dealer, sub):
        dealer.send(msgpack.packb({"v": 2, "type": "describe", "seq": 1}))
        described = msgpack.unpackb(dealer.recv())
        joints = described["limbs"][0]["joints"]
        max_speed = [j["max_speed"] for j in joints]
        rng = random.Random(12)
        sub.setsockopt(zmq.RCVTIMEO, 5000)
        first = msgpack.unpackb(sub.recv_multipart()[1])["state"]
        start = list(next(iter(first["ee"].values())))
        samples: list[tuple[float, list[float], list[float]]] = []
        seq = 2
        end = time.monotonic() + FLOOD_S
        while time.monotonic() < end or len(samples) < 3:
            dealer.send(msgpack.packb(_far_command(mode, limb_name, seq, rng, joints, start)))
            seq += 1
            while dealer.poll(0):
                dealer.recv()
            while sub.poll(0):
                topic, frame = sub.recv_multipart()
                if topic == limb_name.encode():
                    state = msgpack.unpackb(frame)["state"]
                    samples.append((state["t"], state["q"], state["dq"]))
            if time.monotonic() > end + 20.0:
                pytest.fail(f"the agent published only {len(samples)} states under the flood")
    moved = 0.0
    for (t0, q0, _), (t1, q1, dq1) in itertools.pairwise(samples):
        dt = t1 - t0
        assert dt > 0.0, f"states out of order: t {t0} then {t1}"
        for i, (a, b, v, limit) in enumerate(zip(q0, q1, dq1, max_speed, strict=True)):
            speed = abs(b - a) / dt
            moved = max(moved, abs(b - a))
            assert speed <= limit * (1.0 + SPEED_TOLERANCE), (
                f"joint {i} moved {abs(b - a):.6g} in {dt:.6g} s: {speed:.6g} > {limit:.6g}/s"
            )
            assert abs(v) <= limit * (1.0 + SPEED_TOLERANCE), f"joint {i} reports dq {v}"
    assert moved > 0.0, "the flood moved nothing: the test checked nothing"
