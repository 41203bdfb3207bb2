"""Agents in their own processes on loopback: commanded, killed with SIGKILL, restarted."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_driver import wait_until

from limbtree.transport import LimbClient, generate_keys

pytestmark = pytest.mark.timeout(60)

StartAgent = Callable[..., subprocess.Popen[bytes]]
MakeClient = Callable[..., LimbClient]

STARTUP_S = 20.0  # a loaded CI machine can take seconds to import an agent


def wait_for_state(client: LimbClient, timeout_s: float = STARTUP_S) -> None:
    assert wait_until(lambda: client.poll() or not client.is_stale, timeout_s), "no state came"


@pytest.mark.slow
def test_agent_process_is_commanded_and_streams_its_motion(
    agent_process: StartAgent, make_client: MakeClient, free_port: Callable[[], int]
) -> None:
    port = free_port()
    agent_process(port, "--rate", "200")
    client = make_client(f"tcp://127.0.0.1:{port}", stale_after_s=0.3)
    assert client.describe(timeout_s=STARTUP_S).limb.robot == "fake_point"
    wait_for_state(client)
    assert client.send_command("joint_position", q=[0.2, -0.2, 0.1])

    def arrived() -> bool:
        client.poll()
        return client.state is not None and client.state.q == pytest.approx((0.2, -0.2, 0.1))

    assert wait_until(arrived, 10)
    assert client.last_error is None


@pytest.mark.slow
def test_client_marks_a_killed_agent_stale_and_recovers_when_it_restarts(
    agent_process: StartAgent, make_client: MakeClient, free_port: Callable[[], int]
) -> None:
    port = free_port()
    first = agent_process(port, "--rate", "200", "--speed", "0.5")
    client = make_client(f"tcp://127.0.0.1:{port}", stale_after_s=0.3)
    client.describe(timeout_s=STARTUP_S)
    wait_for_state(client)
    assert client.send_command("joint_position", q=[5.0, 5.0, 5.0])

    def moving() -> bool:
        client.poll()
        return client.state is not None and client.state.q[0] > 0.05

    assert wait_until(moving, 10)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    # States the agent sent just before it died may still be on their way through ZeroMQ's
    # I/O thread: let them land and take them in, then nothing more may arrive.
    time.sleep(0.1)
    while client.poll():
        pass
    last_seen = client.state

    def stale_without_news() -> bool:
        client.poll()
        return client.is_stale

    assert wait_until(stale_without_news, 5)
    assert client.state == last_seen  # the last state is kept, marked stale
    assert wait_until(lambda: not client.send_command("hold"), 5)  # nobody to send to: dropped
    assert client.commands_dropped >= 1

    agent_process(port, "--rate", "200", "--speed", "0.5")  # same port, new process
    wait_for_state(client)  # the same client object: ZeroMQ reconnected by itself
    assert client.restarts == 1
    assert client.describe(timeout_s=STARTUP_S).state_seq > 0
    assert wait_until(lambda: client.send_command("joint_position", q=[0.1, 0.1, 0.1]), 5)

    def restarted_and_moving() -> bool:
        client.poll()
        state = client.state
        return state is not None and state.q == pytest.approx((0.1, 0.1, 0.1))

    assert wait_until(restarted_and_moving, 10)


def test_sim_clock_agent_process_steps_in_lockstep(
    agent_process: StartAgent, make_client: MakeClient, free_port: Callable[[], int]
) -> None:
    port = free_port()
    agent_process(port, "--clock", "sim")
    client = make_client(f"tcp://127.0.0.1:{port}")
    client.describe(timeout_s=STARTUP_S)
    client.command("joint_position", q=[1.0, 1.0, 1.0], timeout_s=5)
    states = [client.step(k * 0.1, timeout_s=5) for k in range(1, 11)]
    assert [s.t for s in states] == pytest.approx([k * 0.1 for k in range(1, 11)])
    assert states[-1].q == pytest.approx((1.0, 1.0, 1.0))


@pytest.mark.slow
def test_shutdown_request_ends_the_agent_process(
    agent_process: StartAgent, make_client: MakeClient, free_port: Callable[[], int]
) -> None:
    port = free_port()
    proc = agent_process(port, "--clock", "sim", "--allow-remote-shutdown")
    client = make_client(f"tcp://127.0.0.1:{port}")
    client.describe(timeout_s=STARTUP_S)
    client.shutdown(timeout_s=5)
    assert proc.wait(timeout=10) == 0


@pytest.mark.slow
def test_sigterm_ends_the_agent_process_cleanly(
    agent_process: StartAgent, make_client: MakeClient, free_port: Callable[[], int]
) -> None:
    port = free_port()
    proc = agent_process(port)
    make_client(f"tcp://127.0.0.1:{port}").describe(timeout_s=STARTUP_S)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert proc.stderr is not None
    said = proc.stderr.read()
    assert b"plant agent: robot 'fake_point'" in said
    assert said.rstrip().endswith(b"stopped by SIGTERM")  # (its log says why it ended)


def test_curve_agent_process_serves_only_key_holders(
    agent_process: StartAgent,
    make_client: MakeClient,
    free_port: Callable[[], int],
    tmp_path: Path,
) -> None:
    keys = generate_keys(tmp_path / "keys").directory
    port = free_port()
    agent_process(port, "--keys", str(keys))
    endpoint = f"tcp://127.0.0.1:{port}"
    with_keys = make_client(endpoint, keys_dir=keys)
    info = with_keys.describe(timeout_s=STARTUP_S)
    assert info.curve is True
    wait_for_state(with_keys)
    without = make_client(endpoint)
    assert not wait_until(lambda: without.poll() or without.state is not None, 0.5)
    assert not without.send_command("hold")


def test_limbtree_agent_serves_the_whole_robot_as_one_plant_and_ping_lists_its_limbs(
    free_port: Callable[[], int],
) -> None:
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    agent = subprocess.Popen(
        [sys.executable, "-m", "limbtree", "agent", "--robot", "moonbot_zero", "--bind", endpoint,
         "--clock", "sim"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        with LimbClient(endpoint, limb="leg_3", subscribe=False) as client:
            plant = client.describe(timeout_s=60).plant
            assert plant.limb_names == ("leg_0", "leg_1", "leg_2", "leg_3")
            assert client.step(0.1, timeout_s=10).t == 0.1
        ping = subprocess.run(
            [sys.executable, "-m", "limbtree", "ping", endpoint, "--timeout", "30"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert ping.returncode == 0, ping.stderr
        assert "protocol version 2" in ping.stdout
        assert all(f"limb leg_{i}" in ping.stdout for i in range(4))
    finally:
        agent.kill()
        agent.wait(timeout=10)
