from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgpack
import pytest
import zmq
from fake_driver import FakeDriver, wait_until

from limbtree.robots import make_plant
from limbtree.transport import (
    AgentClient,
    ConfigError,
    Health,
    LimbAgent,
    LimbClient,
    LimbUnavailableError,
    RemoteError,
    RequestTimeoutError,
)
from limbtree.transport.exposure import ShutdownPolicy
from limbtree.transport.schema import (
    COMMANDER_LEASE_MAX_S,
    COMMANDER_LEASE_S,
    MAX_FRAME_BYTES,
    MAX_MESSAGE_BYTES,
)

pytestmark = pytest.mark.timeout(30)

MakeAgent = Callable[..., LimbAgent]
MakeClient = Callable[..., LimbClient]


@contextmanager
def raw_socket(kind: int, endpoint: str, timeout_ms: int = 2000) -> Iterator[zmq.Socket[bytes]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = context.socket(kind)
    sock.linger = 0
    sock.rcvtimeo = timeout_ms
    sock.connect(endpoint)
    try:
        yield sock
    finally:
        sock.close()
        context.term()


def ask(sock: zmq.Socket[bytes], message: Any) -> dict[str, Any]:
    sock.send(message if isinstance(message, bytes) else msgpack.packb(message))
    reply: dict[str, Any] = msgpack.unpackb(sock.recv())
    return reply


# --- requests and replies -------------------------------------------------------------------


def test_describe_reports_the_limb_and_the_agent(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    info = make_client(agent.request_endpoint).describe(timeout_s=5)
    assert info.limb == FakeDriver().describe()
    assert info.clock == "sim"
    assert info.curve is False
    assert info.errors_received == {}
    assert info.max_message_bytes == MAX_MESSAGE_BYTES


def test_a_dealer_client_gets_a_single_frame_reply_echoing_its_seq(make_agent: MakeAgent) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    with raw_socket(zmq.DEALER, agent.request_endpoint) as sock:
        sock.send(msgpack.packb({"v": 2, "type": "ping", "seq": 41}))
        frames = sock.recv_multipart()
    assert len(frames) == 1
    reply = msgpack.unpackb(frames[0])
    assert (reply["type"], reply["seq"], reply["v"]) == ("ping_reply", 41, 2)


def test_a_req_client_gets_its_envelope_back(make_agent: MakeAgent) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    with raw_socket(zmq.REQ, agent.request_endpoint) as sock:
        for seq in (1, 2):
            assert ask(sock, {"v": 2, "type": "ping", "seq": seq})["seq"] == seq


def test_agent_logs_one_line_saying_what_it_serves(
    make_agent: MakeAgent, make_client: MakeClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="limbtree.transport.agent"):
        agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=50)
        make_client(agent.request_endpoint).ping(timeout_s=5)
    lines = [r.getMessage() for r in caplog.records if "plant agent" in r.getMessage()]
    assert len(lines) == 1
    for words in (
        "fake_point",
        agent.request_endpoint,
        agent.state_endpoint,
        "real",
        "50 Hz",
        "CURVE off",
    ):
        assert words in lines[0]


def test_agent_refuses_a_port_already_in_use(make_agent: MakeAgent) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    with pytest.raises(ConfigError, match="cannot bind"):
        LimbAgent(FakeDriver(), agent.request_endpoint)


@pytest.mark.parametrize("kwargs", [{"clock": "lunar"}, {"stream_rate_hz": 0.0}])
def test_agent_refuses_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        LimbAgent(FakeDriver(), "tcp://127.0.0.1:1", **kwargs)


def test_shutdown_request_replies_then_stops_the_agent(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim", shutdown=ShutdownPolicy(allow_remote=True))
    make_client(agent.request_endpoint).shutdown(timeout_s=5)
    assert wait_until(lambda: agent.closed, 5)
    assert driver.closed


# --- commands ---------------------------------------------------------------------------------


def test_commands_reach_the_driver_with_the_default_end_effector_filled_in(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim")
    client = make_client(agent.request_endpoint)
    client.command("ee_pose", pose=[0.1, 0.2, 0.3, 0, 0, 0, 1], timeout_s=5)
    mode, payload = driver.commands[-1]
    assert mode == "ee_pose"
    assert payload == {"pose": (0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.0), "ee": "tip"}


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"mode": "joint_position", "q": [1.0]}, "bad_value", "q"),
        ({"mode": "ee_twist", "twist": [0.0] * 6}, "unsupported_mode", "mode"),
        ({"mode": "ee_pose", "pose": [0, 0, 0, 0, 0, 0, 1], "ee": "elbow"}, "bad_value", "ee"),
        ({"mode": "ee_pose", "pose": [99, 0, 0, 0, 0, 0, 1]}, "ik_failed", None),
    ],
)
def test_commands_the_limb_cannot_take_get_an_error_naming_why(
    make_agent: MakeAgent,
    make_client: MakeClient,
    fields: dict[str, Any],
    code: str,
    field: str | None,
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    with pytest.raises(RemoteError) as info:
        client.command(timeout_s=5, **fields)
    assert (info.value.code, info.value.field) == (code, field)


def test_a_driver_error_comes_back_with_its_code_and_the_agent_goes_on(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    with pytest.raises(RemoteError, match="unknown_fault") as refused:
        client.fault("meteor", timeout_s=5)
    assert refused.value.field == "kind"  # the field the driver named
    with pytest.raises(RemoteError, match="internal"):
        client.fault("boom", timeout_s=5)
    assert client.ping(timeout_s=5) > 0


# --- bad input --------------------------------------------------------------------------------


def test_bad_input_gets_error_replies_is_counted_and_flags_health(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    with raw_socket(zmq.DEALER, agent.request_endpoint) as sock:
        assert ask(sock, b"\xc1")["code"] == "undecodable"
        assert ask(sock, b"x" * (MAX_MESSAGE_BYTES + 1))["code"] == "too_large"
        bad_version = ask(sock, {"v": 1, "type": "ping", "seq": 5})
        assert (bad_version["code"], bad_version["seq"]) == ("bad_version", 5)
        assert "speaks version 2" in bad_version["message"]
        assert ask(sock, {"v": 2, "type": "nap", "seq": 6})["code"] == "unknown_type"
        bad_field = ask(sock, {"v": 2, "type": "step", "seq": 7, "t": "now"})
        assert (bad_field["code"], bad_field["field"]) == ("bad_field", "t")
    info = client.describe(timeout_s=5)
    assert info.errors_received == {
        "undecodable": 1,
        "too_large": 1,
        "bad_version": 1,
        "unknown_type": 1,
        "bad_field": 1,
    }
    assert client.step(0.1, timeout_s=5).health & Health.BAD_INPUT


def test_too_many_frames_are_refused_without_losing_the_framing(make_agent: MakeAgent) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    with raw_socket(zmq.DEALER, agent.request_endpoint) as sock:
        sock.send_multipart([b""] * 20 + [msgpack.packb({"v": 2, "type": "ping", "seq": 1})])
        assert msgpack.unpackb(sock.recv_multipart()[-1])["code"] == "undecodable"
        assert ask(sock, {"v": 2, "type": "ping", "seq": 2})["type"] == "ping_reply"


def test_a_frame_past_the_socket_limit_drops_only_that_peer(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    with raw_socket(zmq.DEALER, agent.request_endpoint, timeout_ms=300) as sock:
        sock.send(b"\x00" * (MAX_FRAME_BYTES + 1))
        with pytest.raises(zmq.Again):
            sock.recv()
    assert make_client(agent.request_endpoint).ping(timeout_s=5) > 0


def test_step_on_a_real_clock_agent_is_a_wrong_clock_error(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="real")
    with pytest.raises(RemoteError) as info:
        make_client(agent.request_endpoint).step(1.0, timeout_s=5)
    assert info.value.code == "wrong_clock"


def test_a_step_back_in_time_is_refused(make_agent: MakeAgent, make_client: MakeClient) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    client = make_client(agent.request_endpoint)
    client.step(1.0, timeout_s=5)
    client.step(1.0, timeout_s=5)
    with pytest.raises(RemoteError, match="back in time"):
        client.step(0.5, timeout_s=5)


# --- sim clock ----------------------------------------------------------------------------------


def run_lockstep(make_agent: MakeAgent, make_client: MakeClient) -> list[tuple[float, ...]]:
    agent = make_agent(FakeDriver(max_speed=0.7), clock="sim")
    client = make_client(agent.request_endpoint)
    trace = []
    for tick in range(1, 60):
        if tick == 10:
            client.command("joint_position", q=[1.0, -0.5, 0.25], timeout_s=5)
        if tick == 40:
            client.command("ee_pose", pose=[0.0, 0.0, 0.0, 0, 0, 0, 1], timeout_s=5)
        state = client.step(tick * 0.05, timeout_s=5)
        trace.append((state.t, *state.q, *state.dq))
    return trace


def test_sim_clock_lockstep_is_deterministic(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    first = run_lockstep(make_agent, make_client)
    second = run_lockstep(make_agent, make_client)
    assert first == second
    assert first[-1][0] == pytest.approx(59 * 0.05)
    assert first[38][1] == pytest.approx(1.0)  # reached its target at 0.7 units/s


def test_step_reply_state_is_also_published_with_the_same_seq(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    stepper = make_client(agent.request_endpoint)
    watcher = make_client(agent.request_endpoint)
    stepper.ping(timeout_s=5)
    t = 0.0

    def step_and_look() -> bool:
        nonlocal t
        t += 0.01
        stepper.step(t, timeout_s=5)
        watcher.poll()
        return watcher.sample is not None

    assert wait_until(step_and_look, 5)
    assert wait_until(lambda: watcher.poll() or watcher.sample == stepper.sample, 2)


# --- real clock ---------------------------------------------------------------------------------


def test_real_clock_agent_streams_state_with_strictly_increasing_seq(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=200)
    client = make_client(agent.request_endpoint)
    seqs: list[int] = []

    def collect() -> bool:
        if client.poll() and client.sample is not None:
            seqs.append(client.sample.seq)
        return len(seqs) >= 10

    assert wait_until(collect, 5, step_s=0.001)
    assert all(b > a for a, b in itertools.pairwise(seqs))
    assert not client.is_stale


def test_a_client_that_fell_behind_takes_each_limbs_newest_state(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=500)
    client = make_client(agent.request_endpoint)
    assert wait_until(lambda: client.poll() and client.sample is not None, 5, step_s=0.001)
    first = client.sample
    agent_client = client.agent
    decoded: list[list[bytes]] = []
    on_stream = agent_client._on_stream

    def counted(frames: list[bytes]) -> bool:
        decoded.append(frames)
        return on_stream(frames)

    agent_client._on_stream = counted  # type: ignore[method-assign]
    time.sleep(0.3)  # about 150 states queue up
    assert client.poll()
    assert len(decoded) == 1  # only the newest is decoded
    behind = client.sample
    assert first is not None and behind is not None and behind.seq > first.seq + 50
    # Nothing newer was left in the queue: whatever comes next is newer still.
    time.sleep(0.05)
    client.poll()
    assert client.sample is not None and client.sample.seq > behind.seq


def test_real_clock_agent_moves_the_limb_on_its_own_time(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    now = [0.0]
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=500, time_source=lambda: now[0])
    client = make_client(agent.request_endpoint)
    assert client.send_command("joint_position", q=[1.0, 1.0, 1.0]) or wait_until(
        lambda: client.send_command("joint_position", q=[1.0, 1.0, 1.0]), 5
    )
    client.ping(timeout_s=5)  # the command is in before the ping's reply
    now[0] = 0.5

    def moved() -> bool:
        client.poll()
        state = client.state
        return state is not None and state.t == 0.5

    assert wait_until(moved, 5)
    assert client.state is not None
    assert client.state.q == pytest.approx((0.5, 0.5, 0.5))


def test_power_off_stops_the_stream_after_one_state_saying_so(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=200)
    client = make_client(agent.request_endpoint, stale_after_s=0.1)
    assert wait_until(lambda: client.poll() or not client.is_stale, 5)
    client.fault("power_off", timeout_s=5)

    def powered_off() -> bool:
        client.poll()
        return client.state is not None and bool(client.state.health & Health.POWER_OFF)

    assert wait_until(powered_off, 5)
    assert wait_until(lambda: client.poll() or client.is_stale, 5)
    client.fault("power_on", timeout_s=5)
    assert wait_until(lambda: client.poll() and not client.is_stale, 5)


# --- disassembly ------------------------------------------------------------------------------


def test_disassembled_real_clock_agent_goes_silent_until_reassembled(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=200)
    client = make_client(agent.request_endpoint, stale_after_s=0.1)
    assert wait_until(lambda: client.poll() or not client.is_stale, 5)
    client.fault("disassembly", timeout_s=5)
    assert wait_until(lambda: client.poll() or client.is_stale, 5)
    with pytest.raises(RequestTimeoutError):
        client.ping(timeout_s=0.2)
    with raw_socket(zmq.DEALER, agent.request_endpoint, timeout_ms=200) as sock:
        sock.send(b"garbage")
        with pytest.raises(zmq.Again):
            sock.recv()
    client.fault("reassemble", timeout_s=5)
    assert wait_until(lambda: client.poll() and not client.is_stale, 5)
    assert client.ping(timeout_s=5) > 0
    assert client.describe(timeout_s=5).errors_received == {"undecodable": 1}


def test_disassembled_sim_clock_agent_keeps_time_but_answers_unavailable(
    make_agent: MakeAgent, make_client: MakeClient
) -> None:
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim")
    client = make_client(agent.request_endpoint)
    client.command("joint_position", q=[5.0, 5.0, 5.0], timeout_s=5)
    client.step(0.5, timeout_s=5)
    client.fault("disassembly", timeout_s=5)
    with pytest.raises(LimbUnavailableError):
        client.step(1.0, timeout_s=5)
    assert driver.t == 1.0
    for call in (client.ping, client.describe):
        with pytest.raises(LimbUnavailableError):
            call(timeout_s=5)
    client.fault("reassemble", timeout_s=5)
    state = client.step(1.5, timeout_s=5)
    assert state.t == 1.5
    assert state.q == pytest.approx((1.5, 1.5, 1.5))


def test_a_limb_takes_one_commander_at_a_time(make_agent: MakeAgent) -> None:
    """A second client's commands are refused while the first commanded within the lease."""
    now = [0.0]
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=50, time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as first,
        AgentClient(agent.request_endpoint, subscribe=False) as second,
    ):
        first.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
        now[0] = COMMANDER_LEASE_S - 0.1
        refusal = r"commanded_elsewhere: limb .* commanded by another client .*one commander"
        with pytest.raises(RemoteError, match=refusal) as refused:
            second.command(None, "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
        assert refused.value.code == "commanded_elsewhere"
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            second.gripper(None, "open", timeout_s=5)
        first.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])  # still its own
        now[0] += 2.5 * now[0] + 0.1  # the first stopped commanding: its lease ran out
        second.command(None, "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            first.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])


def test_a_sim_clock_agent_is_stepped_by_one_client_at_a_time(make_agent: MakeAgent) -> None:
    """A step from another client is refused and moves nothing, however long the stepping
    client has been quiet (a paused run sends no step), until that client releases.

    A stray client once stepped a runner's agent 50 s ahead: the limbs moved under the run,
    whose next step then went "back in time" and aborted it.
    """
    now = [0.0]
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim", time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as runner,
        AgentClient(agent.request_endpoint, subscribe=False) as stray,
    ):
        runner.step(0.5, timeout_s=5)
        now[0] = 300.0  # the run paused for five minutes
        with pytest.raises(RemoteError, match=r"commanded_elsewhere: this agent is stepped by "
                           r"another client .*follows one run's time") as refused:  # fmt: skip
            stray.step(50.0, timeout_s=5)
        assert refused.value.code == "commanded_elsewhere"
        assert driver.t == 0.5  # the plant did not move
        # A step the agent refuses for its t claims nothing either.
        with pytest.raises(RemoteError, match="bad_value"):
            stray.step(0.1, timeout_s=5)
        assert runner.step(1.0, timeout_s=5).t == 1.0  # the run goes on
        # Released (as limbtree run does at its end), another client may step at once.
        runner.release(timeout_s=5)
        assert stray.step(2.0, timeout_s=5).t == 2.0
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            runner.step(3.0, timeout_s=5)


def test_a_sim_clock_agent_takes_commands_from_the_client_that_steps_it_only(
    make_agent: MakeAgent,
) -> None:
    """A paused sim run sends nothing, and a lease would lapse: the stepping client's claim
    covers its limbs' commands too, until it releases (a reviewer commanded a paused run's
    limb from a second client)."""
    now = [0.0]
    driver = FakeDriver()
    agent = make_agent(driver, clock="sim", time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as runner,
        AgentClient(agent.request_endpoint, subscribe=False) as stray,
    ):
        runner.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
        runner.step(0.5, timeout_s=5)
        now[0] = 300.0  # the run paused for five minutes: a lease would be long over
        refusal = r"commanded_elsewhere: limb .* belongs to the run that steps this agent"
        with pytest.raises(RemoteError, match=refusal) as refused:
            stray.command(None, "joint_position", timeout_s=5, q=[0.9, 0.9, 0.9])
        assert refused.value.code == "commanded_elsewhere" and refused.value.field == "limb"
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            stray.gripper(None, "open", timeout_s=5)
        runner.step(1.0, timeout_s=5)
        assert tuple(driver.commands[-1][1]["q"]) == (0.1, 0.1, 0.1)  # the run's target stands
        runner.release(timeout_s=5)
        stray.command(None, "joint_position", timeout_s=5, q=[0.9, 0.9, 0.9])


def test_release_lists_the_limbs_released_and_again_lists_none(make_agent: MakeAgent) -> None:
    """``release`` is idempotent (protocol section 13): sent again, it releases nothing."""
    agent = make_agent(FakeDriver(), clock="sim")
    with AgentClient(agent.request_endpoint, subscribe=False) as client:
        client.describe(timeout_s=5)
        client.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
        (limb,) = client.limbs
        assert client.release(timeout_s=5) == [limb]
        assert client.release(timeout_s=5) == []


def test_a_claim_renews_the_lease_and_leaves_the_limb_on_its_move(make_agent: MakeAgent) -> None:
    """``claim`` (protocol section 5.9) keeps a limb no command went to for over 1 s: a
    runner's idle limb (one limb moves while the other waits) stays its own while it runs."""
    now = [0.0]
    driver = FakeDriver(max_speed=1.0)
    agent = make_agent(driver, clock="real", stream_rate_hz=50, time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as first,
        AgentClient(agent.request_endpoint, subscribe=False) as second,
    ):
        (limb,) = first.describe(timeout_s=5).plant.limbs
        first.command(None, "joint_position", timeout_s=5, q=[1.0, 1.0, 1.0])  # 1 s at 1 m/s
        now[0] = 0.5
        assert wait_until(lambda: driver.t == 0.5, 5.0)
        moved = driver.q[0]
        now[0] = 0.8
        assert first.claim(timeout_s=5) == [limb.name]
        assert first.claim(limb.name, timeout_s=5) == [limb.name]  # (again: idempotent)
        now[0] = 1.5  # past the 1 s lease of the command, within that of the claim
        refusal = r"commanded_elsewhere: limb .* commanded by another client \(its last command "
        with pytest.raises(RemoteError, match=refusal + r"or claim 0.70 s ago\)") as refused:
            second.command(None, "joint_position", timeout_s=5, q=[-1.0, -1.0, -1.0])
        assert refused.value.field == "limb"
        with pytest.raises(RemoteError, match=refusal) as refused:
            second.claim(timeout_s=5)
        assert (refused.value.code, refused.value.field) == ("commanded_elsewhere", "limb")
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            second.gripper(None, "close", timeout_s=5)
        # The claims moved nothing: the move the limb had goes on to its end.
        assert wait_until(lambda: driver.q == [1.0, 1.0, 1.0], 5.0), driver.q
        assert 0.0 < moved < 1.0
        assert [mode for mode, _ in driver.commands] == ["joint_position"]
        assert driver.target == [1.0, 1.0, 1.0] and driver.gripper_state == "open"
        assert agent.errors_received == {}  # (neither a claim nor its refusal counts)
        # The claim's lease is a command's: 2.5 times the interval from the command (0.8 s).
        now[0] = 0.8 + 2.5 * 0.8 + 0.1
        assert second.claim(timeout_s=5) == [limb.name]
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            first.claim(timeout_s=5)
        with pytest.raises(RemoteError, match=r"unknown_limb: no limb 'nope' here") as unknown:
            first.claim("nope", timeout_s=5)
        assert unknown.value.field == "limb"


def test_a_claim_of_every_limb_claims_all_or_none(make_agent: MakeAgent) -> None:
    """Without ``limb``, a claim is of every limb the agent serves, refused whole when another
    client commands one of them; in the sim clock only the client that steps it may claim."""
    agent = make_agent(make_plant("moonbot_zero"), clock="sim")
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as runner,
        AgentClient(agent.request_endpoint, subscribe=False) as stray,
    ):
        legs = ["leg_0", "leg_1", "leg_2", "leg_3"]
        assert stray.claim("leg_1", timeout_s=5) == ["leg_1"]
        with pytest.raises(RemoteError, match=r"commanded_elsewhere: limb 'leg_1'"):
            runner.claim(timeout_s=5)
        assert stray.release(timeout_s=5) == ["leg_1"]  # (and the refused claim took none)
        assert runner.claim(timeout_s=5) == legs
        assert runner.release(timeout_s=5) == legs
        runner.step(0.01, timeout_s=5)
        with pytest.raises(RemoteError, match=r"commanded_elsewhere: limb 'leg_0' belongs to "
                           r"the run that steps this agent"):  # fmt: skip
            stray.claim("leg_0", timeout_s=5)
        assert runner.claim("leg_2", timeout_s=5) == ["leg_2"]


def test_a_disassembled_limb_may_be_claimed(make_agent: MakeAgent) -> None:
    """As ``release``, ``claim`` is answered for a disassembled limb, and its commander keeps
    the limb while it is away (real clock: a refusal is silence, as every reply about it)."""
    now = [0.0]
    driver = FakeDriver()
    agent = make_agent(driver, clock="real", stream_rate_hz=50, time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as first,
        AgentClient(agent.request_endpoint, subscribe=False) as second,
    ):
        (limb,) = first.describe(timeout_s=5).plant.limbs
        first.fault(None, "disassembly", timeout_s=5)
        now[0] = 0.5
        assert first.claim(timeout_s=5) == [limb.name]
        with pytest.raises(RequestTimeoutError):
            second.claim(timeout_s=0.5)
        second.fault(None, "reassemble", timeout_s=5)
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            second.command(None, "hold", timeout_s=5)
        assert driver.commands == []


def test_a_slow_commander_keeps_its_limb_between_two_commands(make_agent: MakeAgent) -> None:
    """A client commanding every 3 s (a runner ticking at 1/3 Hz) keeps a 7.5 s lease."""
    now = [0.0]
    agent = make_agent(FakeDriver(), clock="real", stream_rate_hz=50, time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as slow,
        AgentClient(agent.request_endpoint, subscribe=False) as other,
    ):
        slow.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
        now[0] = 3.0
        slow.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
        now[0] = 3.0 + 2.5 * 3.0 - 0.1  # between its commands, past the 1 s lease
        with pytest.raises(RemoteError, match=r"commanded_elsewhere: .* command it 7.5 s after"):
            other.command(None, "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
        now[0] = 3.0 + 2.5 * 3.0 + 0.1
        other.command(None, "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
        # After 100 s of silence, other's next command would earn a 250 s lease but for the
        # cap: the slow client takes the limb back COMMANDER_LEASE_MAX_S later.
        now[0] += 100.0
        other.command(None, "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
        now[0] += COMMANDER_LEASE_MAX_S + 0.1
        slow.command(None, "joint_position", timeout_s=5, q=[0.1, 0.1, 0.1])
