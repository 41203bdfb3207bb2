from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Callable

import msgpack
import numpy as np
import pytest
import zmq
from fake_driver import FakeDriver, wait_until

from limbtree.transport import (
    AgentClient,
    AgentUnreachableError,
    ConfigError,
    LimbAgent,
    LimbClient,
    ProtocolError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
    ping_endpoint,
    step_all,
)
from limbtree.transport.driver import CommandMode
from limbtree.transport.schema import validate_request

pytestmark = pytest.mark.timeout(30)

MakeAgent = Callable[..., LimbAgent]
MakeClient = Callable[..., LimbClient]


def test_ping_endpoint_returns_round_trip_and_description(make_agent: MakeAgent) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    rtt, info = ping_endpoint(agent.request_endpoint, timeout_s=5)
    assert 0 < rtt < 5
    assert info.limb.robot == "fake_point"


def test_ping_endpoint_fails_fast_and_clearly_when_nobody_answers(
    free_port: Callable[[], int],
) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(AgentUnreachableError) as info:
        ping_endpoint(endpoint, timeout_s=0.3)
    assert time.monotonic() - start < 2.0
    message = str(info.value)
    assert endpoint in message
    assert "limbtree agent" in message and "N+1" in message and "--keys" in message


def test_ping_of_an_ipc_path_with_no_agent_says_the_socket_file_is_missing(tmp_path) -> None:
    path = tmp_path / "arm"
    with pytest.raises(AgentUnreachableError) as info:
        ping_endpoint(f"ipc://{path}", timeout_s=0.3)
    message = str(info.value)
    assert f"the socket files {path} (there is no such file) and {path}.state" in message
    assert "port" not in message and "firewall" not in message


def test_ping_with_keys_of_an_agent_without_curve_suggests_it_may_not_use_them(
    free_port: Callable[[], int], tmp_path
) -> None:
    from limbtree.transport import generate_keys

    generate_keys(tmp_path / "keys")
    with pytest.raises(AgentUnreachableError) as info:
        ping_endpoint(f"tcp://127.0.0.1:{free_port()}", timeout_s=0.3, keys_dir=tmp_path / "keys")
    assert "that the agent was started with --keys at all" in str(info.value)


def test_a_new_client_has_no_state_and_is_stale(free_port: Callable[[], int]) -> None:
    with LimbClient(f"tcp://127.0.0.1:{free_port()}") as client:
        assert client.poll() is False
        assert client.state is None
        assert client.is_stale


def test_commands_to_an_absent_agent_are_dropped_and_counted_without_blocking(
    free_port: Callable[[], int],
) -> None:
    with LimbClient(f"tcp://127.0.0.1:{free_port()}") as client:
        start = time.perf_counter()
        results = [client.send_command("hold") for _ in range(100)]
        assert time.perf_counter() - start < 0.5
        assert results == [False] * 100
        assert client.commands_dropped == 100
        assert client.commands_sent == 0


def test_malformed_commands_are_refused_locally(free_port: Callable[[], int]) -> None:
    with LimbClient(f"tcp://127.0.0.1:{free_port()}") as client:
        with pytest.raises(ProtocolError) as info:
            client.send_command("joint_position", q="up")
        assert info.value.field == "q"
        with pytest.raises(ProtocolError):
            client.send_gripper("squeeze")


def test_requests_time_out_with_the_endpoint_and_request_named(
    free_port: Callable[[], int],
) -> None:
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    with LimbClient(endpoint) as client, pytest.raises(RequestTimeoutError) as info:
        client.describe(timeout_s=0.1)
    assert info.value.endpoint == endpoint
    assert "describe" in str(info.value)


def test_a_reply_that_comes_after_its_timeout_is_discarded(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    client.ping(timeout_s=5)
    with pytest.raises(RequestTimeoutError):
        client.fault("sleep", timeout_s=0.05, s=0.3)
    assert client.ping(timeout_s=5) > 0  # the late fault_reply arrives first and is skipped
    assert client.stale_replies == 1


@pytest.mark.parametrize("timeout_s", [1e10, math.inf])
def test_a_timeout_longer_than_zeromq_takes_waits_for_the_reply(
    make_agent: MakeAgent, make_client: MakeClient, timeout_s: float
) -> None:
    # (a reviewer's `limbtree ping ENDPOINT --timeout 1e10` ended in a traceback,
    # "OverflowError: Python int too large to convert to C long", from the receive timeout
    # ZeroMQ takes in ms as a C int)
    agent = make_agent(FakeDriver(), clock="sim")
    rtt, info = ping_endpoint(agent.request_endpoint, timeout_s=timeout_s)
    assert rtt > 0 and info.limb.robot == "fake_point"
    client = make_client(agent.request_endpoint)
    client.ping(timeout_s=5)
    client.send_command("hold")  # its command_reply comes before the describe_reply
    assert client.describe(timeout_s=timeout_s).limb.robot == "fake_point"
    assert client.ping(timeout_s=timeout_s) > 0


def test_command_refusals_show_up_in_last_error_after_poll(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    client.ping(timeout_s=5)
    assert client.send_command("ee_pose", pose=[50, 0, 0, 0, 0, 0, 1])
    assert wait_until(lambda: client.poll() or client.last_error is not None, 5)
    assert client.last_error is not None
    assert client.last_error.code == "ik_failed"
    assert client.command_errors == 1
    client.clear_error()
    assert client.last_error is None


def test_numpy_arrays_are_accepted_as_command_fields(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim")
    client = make_client(agent.request_endpoint)
    client.command("joint_position", q=np.array([0.5, 0.25, 0.0]), timeout_s=5)
    assert driver.commands[-1][1]["q"] == (0.5, 0.25, 0.0)


def test_gripper_requests_reach_the_driver(make_agent: MakeAgent, make_client: MakeClient) -> None:
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim")
    client = make_client(agent.request_endpoint)
    client.gripper("close", timeout_s=5)
    assert client.step(0.1, timeout_s=5).gripper == "closed"
    assert client.send_gripper("open")
    assert client.step(0.2, timeout_s=5).gripper == "open"


def test_staleness_follows_the_injected_clock(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    now = [10.0]
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint, stale_after_s=0.5, clock=lambda: now[0])
    client.step(0.1, timeout_s=5)
    assert client.received_at == 10.0
    assert not client.is_stale
    now[0] = 10.5
    assert not client.is_stale
    now[0] = 10.6
    assert client.is_stale


def test_a_closed_client_refuses_requests(free_port: Callable[[], int]) -> None:
    client = LimbClient(f"tcp://127.0.0.1:{free_port()}")
    client.close()
    client.close()
    with pytest.raises(TransportError, match="closed"):
        client.ping(timeout_s=0.1)


def test_client_refuses_a_non_positive_staleness_limit() -> None:
    with pytest.raises(ConfigError):
        LimbClient("tcp://127.0.0.1:5555", stale_after_s=0.0)


def test_many_clients_can_share_one_context(make_agent: MakeAgent) -> None:
    import zmq

    agent = make_agent(FakeDriver(), clock="sim")
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        clients = [LimbClient(agent.request_endpoint, context=context) for _ in range(4)]
        assert all(c.ping(timeout_s=5) > 0 for c in clients)
        for c in clients:
            c.close()
    finally:
        context.term()


def test_step_all_steps_several_agents_in_parallel(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agents = [make_agent(FakeDriver(max_speed=s), clock="sim") for s in (1.0, 2.0, 3.0)]
    clients = [make_client(a.request_endpoint) for a in agents]
    for client in clients:
        client.command("joint_position", q=[9.0, 9.0, 9.0], timeout_s=5)
    states = step_all(clients, 0.5, timeout_s=5)
    assert [s.q[0] for s in states] == pytest.approx([0.5, 1.0, 1.5])
    assert [c.state for c in clients] == states


def test_step_all_collects_every_reply_before_raising_a_refusal(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    sim = make_agent(FakeDriver(), clock="sim")
    real = make_agent(FakeDriver(), clock="real")
    clients = [make_client(sim.request_endpoint), make_client(real.request_endpoint)]
    with pytest.raises(RemoteError, match="wrong_clock"):
        step_all(clients, 0.5, timeout_s=5)
    assert clients[0].state is not None and clients[0].state.t == 0.5
    assert clients[0].step(0.6, timeout_s=5).t == 0.6  # ready for the next step


def test_a_client_has_at_most_one_step_in_flight(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    with pytest.raises(TransportError, match="no step"):
        client.finish_step()
    client.send_step(0.1, timeout_s=5)
    with pytest.raises(TransportError, match="already"):
        client.send_step(0.2, timeout_s=5)
    assert client.finish_step().t == 0.1


def test_a_plain_pose_command_is_the_message_the_checked_path_builds() -> None:
    # send_command builds a plain ee_pose (7 floats, unit quaternion) in a few steps; the
    # message must be the one the field-by-field path builds, and anything less plain
    # (numpy arrays, ints, a bad quaternion, NaN) must still go through that path.
    with AgentClient("tcp://127.0.0.1:9", subscribe=False) as client:
        sent: list[bytes] = []
        client._send = lambda frame: sent.append(frame) or True  # type: ignore[method-assign]
        link = client.link("arm")
        pose = [0.1, 0.2, 0.3, 0.0, 0.0, 0.6, 0.8]
        link.send_command(CommandMode.EE_POSE, ee="tip", pose=pose)
        link.send_command(CommandMode.EE_POSE, ee="tip", pose=np.array(pose))
        link.send_command(CommandMode.EE_POSE, ee="tip", pose=[0, 0, 0, 0, 0, 0, 1])
        fast, checked, ints = (msgpack.unpackb(frame) for frame in sent)
        assert {**fast, "seq": 0} == {**checked, "seq": 0}
        assert ints["pose"] == [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        validate_request({**fast, "pose": tuple(fast["pose"])})
        for bad in ([0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 2.0], [math.nan, 0, 0, 0, 0, 0, 1.0]):
            with pytest.raises(ProtocolError, match="pose"):
                link.send_command(CommandMode.EE_POSE, ee="tip", pose=bad)
        assert len(sent) == 3


def test_limbtree_ping_of_another_program_says_something_listens_but_is_no_agent(
    free_port: Callable[[], int], capsys: pytest.CaptureFixture[str]
) -> None:
    # (a reviewer's `limbtree ping` of a plain TCP server said only "no limb agent answered
    # ... check that `limbtree agent` runs there", as for a dead port; `limbtree run` told
    # them apart)
    from limbtree.trees.cli import main

    listener = socket.socket()
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        endpoint = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        assert main(["ping", endpoint, "--timeout", "0.3"]) == 1
        err = capsys.readouterr().err
        assert f"no limb agent answered at {endpoint}" in err
        assert "accepts TCP connections, but no limbtree agent answered there" in err
    finally:
        listener.close()
    dead = f"tcp://127.0.0.1:{free_port()}"
    assert main(["ping", dead, "--timeout", "0.3"]) == 1
    assert "nothing listens on port" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({}, "errors_received is not a map of ints"),
        ({"errors_received": {}}, "clock is None, not one of 'real', 'sim'"),
    ],
)
def test_a_malformed_describe_reply_is_named_with_the_endpoint(
    fields: dict[str, object], says: str
) -> None:
    # (a reviewer's `limbtree ping` of a server answering describe_reply without the
    # protocol's fields said only "errors_received must be a map of ints", or
    # "malformed describe_reply: ValueError(\"'None' is not a valid ClockMode\")")
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    router = context.socket(zmq.ROUTER)
    router.linger = 0
    router.rcvtimeo = 5000
    port = router.bind_to_random_port("tcp://127.0.0.1")
    endpoint = f"tcp://127.0.0.1:{port}"

    def answer() -> None:
        *envelope, frame = router.recv_multipart()
        seq = msgpack.unpackb(frame)["seq"]
        reply = {"v": 2, "type": "describe_reply", "seq": seq, **fields}
        router.send_multipart([*envelope, msgpack.packb(reply)])

    server = threading.Thread(target=answer)
    server.start()
    try:
        with AgentClient(endpoint, subscribe=False) as client, pytest.raises(ProtocolError) as info:
            client.describe(timeout_s=5)
    finally:
        server.join()
        router.close()
        context.term()
    message = str(info.value)
    assert f"{endpoint} answered describe with a malformed describe_reply: {says}" in message
    assert "limbtree agent speaking protocol version 2" in message
