"""Agents on ``ipc://PATH``: a runner and its agents on one computer, over Unix sockets."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_driver import wait_until

from limbtree.transport import AgentClient, LimbAgent, agent_endpoints
from limbtree.transport.endpoint import endpoint_host
from limbtree.transport.errors import ConfigError
from limbtree.transport.exposure import check_exposure
from limbtree.trees.app import RunRequest, run_mission
from limbtree.trees.connection import probe
from limbtree.trees.errors import RunError
from limbtree.trees.runner import RunOutcome

MakeIpcAgent = Callable[..., LimbAgent]


@pytest.fixture
def ipc_agent(tmp_path: Path, bound_agent: MakeIpcAgent) -> MakeIpcAgent:
    """In-thread agents of a robot on ``ipc://TMP/NAME`` (conftest's ``bound_agent``)."""

    def make(robot: str, name: str = "agent", **kwargs: Any) -> LimbAgent:
        return bound_agent(robot, f"ipc://{tmp_path / name}", **kwargs)

    return make


def test_an_ipc_agent_streams_on_its_path_with_state_added() -> None:
    assert agent_endpoints("ipc:///run/limbs/arm") == (
        "ipc:///run/limbs/arm",
        "ipc:///run/limbs/arm.state",
    )
    assert agent_endpoints("tcp://10.0.0.2:5555") == ("tcp://10.0.0.2:5555", "tcp://10.0.0.2:5556")
    assert endpoint_host("ipc:///run/limbs/arm") is None
    assert endpoint_host("tcp://10.0.0.2:5555") == "10.0.0.2"


@pytest.mark.parametrize("endpoint", ["ipc://", "udp://10.0.0.2:5555", "10.0.0.2:5555"])
def test_a_malformed_endpoint_names_both_forms(endpoint: str) -> None:
    with pytest.raises(ConfigError) as caught:
        agent_endpoints(endpoint)
    assert endpoint in str(caught.value)
    assert "ipc://PATH" in str(caught.value)


def test_an_ipc_bind_needs_no_keys_it_serves_this_computer_only() -> None:
    assert check_exposure("ipc:///tmp/arm", curve=False, insecure=False) is None


def test_a_client_steps_an_agent_bound_on_ipc_and_follows_its_stream(
    ipc_agent: MakeIpcAgent,
) -> None:
    stepped = ipc_agent("moonbot_zero", "quad", clock="sim")
    with AgentClient(stepped.request_endpoint, subscribe=False) as client:
        step = client.step(0.5, timeout_s=5)
    assert step.t == pytest.approx(0.5)
    assert set(step.states) == {"leg_0", "leg_1", "leg_2", "leg_3"}

    streaming = ipc_agent("heavy_limb", "heavy", clock="real", stream_rate_hz=200)
    with AgentClient(streaming.request_endpoint) as client:
        client.describe(timeout_s=5)
        assert wait_until(client.poll, 5)  # a newer state came on the stream
        assert client.state_endpoint == streaming.request_endpoint + ".state"


def test_a_mission_moves_a_limb_whose_agent_is_bound_on_ipc(
    ipc_agent: MakeIpcAgent, tmp_path: Path
) -> None:
    agent = ipc_agent("heavy_limb", "heavy", clock="sim")
    before = agent.plant.limb_state("arm").q
    mission = tmp_path / "ipc.yaml"
    mission.write_text(
        "mission: ipc\nclock: sim\nlimbs:\n"
        f"  heavy: {{robot: heavy_limb, agent: {agent.request_endpoint}}}\n"
        "tree:\n  joint_move: {limb: heavy, posture: safe}\n"
    )
    outcome = run_mission(RunRequest(mission, headless=True), out=io.StringIO())
    assert outcome is RunOutcome.SUCCESS
    assert agent.plant.limb_state("arm").q != before


def test_a_run_whose_ipc_agent_is_absent_says_there_is_no_socket_file(tmp_path: Path) -> None:
    path = tmp_path / "nobody"
    mission = tmp_path / "absent.yaml"
    mission.write_text(
        "mission: absent\nclock: sim\nlimbs:\n"
        f"  heavy: {{robot: heavy_limb, agent: ipc://{path}}}\n"
        "tree:\n  wait: {duration_s: 1}\n"
    )
    with pytest.raises(RunError) as caught:
        run_mission(RunRequest(mission, headless=True), out=io.StringIO())
    text = str(caught.value)
    assert f"cannot use its agent at ipc://{path}" in text
    assert f"there is no socket file {path}" in text
    assert f"--bind ipc://{path} on this computer" in text
    assert "firewall" not in text


def test_the_probe_tells_a_left_socket_file_from_a_plain_file(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_text("")
    assert "not a socket" in probe(f"ipc://{plain}")
    left = tmp_path / "left"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
        unix.bind(str(left))  # bound, never listening: as an agent that ended
    assert "nothing listens" in probe(f"ipc://{left}")
