"""Where an agent binds: a live ``ipc://`` agent is never taken over; IPv6 loopback works."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zmq
from fake_driver import wait_until

from limbtree.robots import make_plant
from limbtree.transport import AgentClient, ConfigError, LimbAgent
from limbtree.transport.client import ping_endpoint
from limbtree.transport.endpoint import hold_ipc_path, ipc_in_use, wants_ipv6

pytestmark = pytest.mark.timeout(60)

MakeAgent = Callable[..., LimbAgent]

# Another process that binds a ZeroMQ socket on ipc://PATH, says so, then waits to be killed.
_LISTENER = """
import sys, time, zmq
from limbtree.transport.endpoint import hold_ipc_path
if sys.argv[2:] == ["hold"]:  # as an agent does
    hold = hold_ipc_path(sys.argv[1])
socket = zmq.Context().socket(zmq.ROUTER)
socket.bind(sys.argv[1])
print("bound", flush=True)
time.sleep(60)
"""


@pytest.fixture
def listener() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start processes that bind a ZeroMQ socket on an endpoint; all are killed at the end."""
    processes: list[subprocess.Popen[str]] = []

    def start(endpoint: str, hold: bool = False) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", _LISTENER, endpoint, *(["hold"] if hold else [])],
            stdout=subprocess.PIPE,
            text=True,
        )
        processes.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "bound"
        return process

    yield start
    for process in processes:
        process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def robot_at(endpoint: str) -> str:
    _, description = ping_endpoint(endpoint, timeout_s=5.0)
    return description.plant.robot


def _refusal(bind: str) -> str:
    """The message of the ConfigError an agent bound on ``bind`` must raise."""
    try:
        agent = LimbAgent(make_plant("heavy_limb"), bind)
    except ConfigError as exc:
        return str(exc)
    agent.close()
    pytest.fail(f"an agent bound on {bind} where it must be refused")


# ----------------------------------------------------------------------------------------------
# ipc://: a second agent on a live agent's path is refused, a stale socket file is replaced


def test_a_second_agent_on_a_live_agents_ipc_path_is_refused(
    bound_agent: MakeAgent, tmp_path: Path
) -> None:
    bind = f"ipc://{tmp_path / 'arm'}"
    bound_agent("light_limb", bind)
    text = _refusal(bind)
    assert f"cannot bind {bind}: another agent holds it (process {os.getpid()})" in text
    assert f"its lock {tmp_path / 'arm'}.lock is held" in text
    assert "stop it, or pick another path" in text
    assert robot_at(bind) == "light_limb"  # the first agent still answers on its path


def test_an_agent_starting_on_a_path_another_agent_is_starting_on_is_refused(
    bound_agent: MakeAgent, tmp_path: Path
) -> None:
    # Another agent has taken the path and not bound yet (two started in the same instant):
    # nothing listens there, yet the path is taken.
    path = tmp_path / "arm"
    other = hold_ipc_path(f"ipc://{path}")
    assert other is not None and ipc_in_use(f"ipc://{path}") is None
    assert "another agent holds it" in _refusal(f"ipc://{path}")
    assert not path.exists() and not Path(f"{path}.state").exists()  # nothing bound
    other.release()
    bound_agent("heavy_limb", f"ipc://{path}")
    assert robot_at(f"ipc://{path}") == "heavy_limb"


def test_the_hold_on_an_ipc_path_ends_with_its_process(
    listener: Callable[..., subprocess.Popen[str]], bound_agent: MakeAgent, tmp_path: Path
) -> None:
    path = tmp_path / "arm"
    killed = listener(f"ipc://{path}", hold=True)
    assert "another agent holds it" in _refusal(f"ipc://{path}")
    killed.kill()
    killed.wait(timeout=10)
    bound_agent("heavy_limb", f"ipc://{path}")  # (the system dropped the dead process's lock)
    assert robot_at(f"ipc://{path}") == "heavy_limb"


def test_an_ipc_path_whose_state_stream_is_live_in_another_process_is_refused(
    listener: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    path = tmp_path / "arm"
    listener(f"ipc://{path}.state")
    text = _refusal(f"ipc://{path}")
    assert f"cannot bind ipc://{path}.state: Address already in use" in text
    assert ipc_in_use(f"ipc://{path}.state") is not None  # the other process kept its file
    assert not path.exists()  # the refused agent took nothing with it


def test_an_agent_replaces_the_socket_files_of_a_killed_one(
    listener: Callable[..., subprocess.Popen[str]], bound_agent: MakeAgent, tmp_path: Path
) -> None:
    path = tmp_path / "arm"
    for endpoint in (f"ipc://{path}", f"ipc://{path}.state"):
        killed = listener(endpoint)
        killed.kill()
        killed.wait(timeout=10)
    assert path.is_socket() and Path(f"{path}.state").is_socket()  # left behind
    assert ipc_in_use(f"ipc://{path}") is None
    bound_agent("heavy_limb", f"ipc://{path}")
    assert robot_at(f"ipc://{path}") == "heavy_limb"


def test_an_ipc_bind_never_deletes_a_file_that_is_not_a_socket(tmp_path: Path) -> None:
    precious = tmp_path / "notes"
    precious.write_text("keep me")
    assert "is a file but not a socket" in _refusal(f"ipc://{precious}")
    assert precious.read_text() == "keep me"


# ----------------------------------------------------------------------------------------------
# tcp:// on IPv6: [::1] binds and answers; IPv4 addresses and names are unchanged


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


needs_ipv6 = pytest.mark.skipif(
    not _has_ipv6_loopback(), reason="this computer has no IPv6 loopback (cannot bind ::1)"
)


def _bind_on_free_ports(
    bound_agent: MakeAgent, host: str, family: socket.AddressFamily
) -> LimbAgent:
    """An agent on ``tcp://HOST:N`` with N, N+1 free (retried if another process took them)."""
    loopback = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    for _ in range(20):
        with socket.socket(family, socket.SOCK_STREAM) as first:
            first.bind((loopback, 0))
            port = int(first.getsockname()[1])
        if port >= 65534:
            continue
        try:
            return bound_agent("light_limb", f"tcp://{host}:{port}", insecure=host == "*")
        except ConfigError:
            continue
    raise RuntimeError(f"could not bind an agent on {host}")


def test_which_tcp_endpoints_want_ipv6() -> None:
    assert wants_ipv6("tcp://[::1]:5550")
    assert wants_ipv6("tcp://[fd00::2]:5550")
    assert wants_ipv6("tcp://*:5550")  # then on IPv6 and IPv4 alike
    # A name keeps resolving to IPv4 first (with IPV6 on, localhost may become ::1 only).
    assert not wants_ipv6("tcp://localhost:5550")
    assert not wants_ipv6("tcp://127.0.0.1:5550")
    assert not wants_ipv6("ipc:///tmp/arm")


@needs_ipv6
def test_an_agent_bound_on_ipv6_loopback_answers_a_ping(bound_agent: MakeAgent) -> None:
    agent = _bind_on_free_ports(bound_agent, "[::1]", socket.AF_INET6)
    assert agent.request_endpoint.startswith("tcp://[::1]:")
    assert robot_at(agent.request_endpoint) == "light_limb"
    # Its stream is on [::1] too: a client with IPV6 on follows it.
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    context.setsockopt(zmq.IPV6, 1)
    try:
        with AgentClient(agent.request_endpoint, context=context) as client:
            client.describe(timeout_s=5.0)
            assert wait_until(client.poll, 5.0)  # a state came on the stream
    finally:
        context.term()


@needs_ipv6
def test_an_agent_bound_on_every_interface_answers_on_ipv4_and_ipv6(bound_agent: MakeAgent) -> None:
    agent = _bind_on_free_ports(bound_agent, "*", socket.AF_INET)
    port = agent.request_endpoint.rpartition(":")[2]
    assert robot_at(f"tcp://127.0.0.1:{port}") == "light_limb"
    assert robot_at(f"tcp://[::1]:{port}") == "light_limb"


def test_ipv4_loopback_agents_answer_ipv4_clients_as_before(bound_agent: MakeAgent) -> None:
    agent = _bind_on_free_ports(bound_agent, "127.0.0.1", socket.AF_INET)
    port = agent.request_endpoint.rpartition(":")[2]
    assert robot_at(f"tcp://127.0.0.1:{port}") == "light_limb"
    assert robot_at(f"tcp://localhost:{port}") == "light_limb"
    with AgentClient(f"tcp://127.0.0.1:{port}", subscribe=False) as client:
        assert client.ping(5.0) > 0.0
