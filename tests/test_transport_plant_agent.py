"""Wire v2: one agent serves a plant of several limbs; one client per agent, one link per limb."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import msgpack
import pytest
import zmq
from fake_driver import wait_until

from limbtree.robots import make_plant
from limbtree.transport import (
    AgentClient,
    LimbAgent,
    LimbUnavailableError,
    RemoteError,
    RequestTimeoutError,
)
from limbtree.transport.driver import CommandMode, Health
from limbtree.trees.errors import AgentError
from limbtree.trees.launcher import free_port_pair
from limbtree.trees.lockstep import Lockstep, PlantAgent

MakeAgent = Callable[..., Any]
LEGS = ("leg_0", "leg_1", "leg_2", "leg_3")


@contextmanager
def raw(kind: int, endpoint: str) -> Iterator[zmq.Socket[bytes]]:
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = context.socket(kind)
    sock.linger = 0
    sock.rcvtimeo = 5000
    sock.connect(endpoint)
    try:
        yield sock
    finally:
        sock.close()
        context.term()


def ask(sock: zmq.Socket[bytes], message: dict[str, Any]) -> dict[str, Any]:
    sock.send(msgpack.packb(message))
    reply = msgpack.unpackb(sock.recv())
    assert isinstance(reply, dict)
    return reply


@pytest.fixture
def quad(make_agent: MakeAgent) -> Any:
    return make_agent(make_plant("moonbot_zero"), clock="sim")


@pytest.fixture
def client(quad: Any) -> Iterator[AgentClient]:
    with AgentClient(quad.request_endpoint) as agent_client:
        yield agent_client


def test_describe_returns_the_whole_plant(client: AgentClient) -> None:
    info = client.describe(timeout_s=5)
    assert info.plant.robot == "moonbot_zero"
    assert info.plant.kind == "kinematic"
    assert info.plant.limb_names == LEGS
    assert not info.plant.floating_base
    assert len(info.plant.limb("leg_2").description.joints) == 3
    assert info.versions == (2,)
    assert client.limbs == LEGS


def test_one_step_brings_every_limb_and_the_base(client: AgentClient) -> None:
    step = client.step(0.1, timeout_s=5)
    assert set(step.states) == set(LEGS)
    assert all(state.t == 0.1 for state in step.states.values())
    assert step.base.pose == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    assert step.unavailable == ()
    assert client.state("leg_3") == step.states["leg_3"]


def test_a_command_goes_to_the_named_limb_only(client: AgentClient) -> None:
    q0 = client.step(0.0, timeout_s=5).states
    target = [q + 0.2 for q in q0["leg_1"].q]
    client.command("leg_1", CommandMode.JOINT_POSITION, timeout_s=5, q=target)
    client.step(0.5, timeout_s=5)  # the servos take the new setpoint from this step on
    states = client.step(1.0, timeout_s=5).states
    assert states["leg_1"].q == pytest.approx(target)
    assert states["leg_0"].q == q0["leg_0"].q


def test_a_limb_link_shares_the_agents_connection(client: AgentClient) -> None:
    link = client.link("leg_2")
    assert link.describe(timeout_s=5).limb.joints[0].name.startswith("leg_2")
    assert link.send_command(CommandMode.HOLD)
    client.step(0.05, timeout_s=5)
    assert link.state is not None and not link.is_stale


def test_an_unknown_or_missing_limb_gets_an_error_listing_the_limbs(quad: Any) -> None:
    with raw(zmq.DEALER, quad.request_endpoint) as sock:
        unknown = ask(sock, {"v": 2, "type": "command", "seq": 1, "limb": "arm", "mode": "hold"})
        assert (unknown["code"], unknown["field"]) == ("unknown_limb", "limb")
        assert "leg_0, leg_1, leg_2, leg_3" in unknown["message"]
        missing = ask(sock, {"v": 2, "type": "command", "seq": 2, "mode": "hold"})
        assert missing["code"] == "unknown_limb"
        assert ask(sock, {"v": 2, "type": "ping", "seq": 3})["type"] == "ping_reply"


def test_a_version_1_message_is_refused_naming_the_versions_spoken(quad: Any) -> None:
    with raw(zmq.DEALER, quad.request_endpoint) as sock:
        reply = ask(sock, {"v": 1, "type": "describe", "seq": 9})
    assert (reply["type"], reply["code"], reply["seq"], reply["v"]) == (
        "error",
        "bad_version",
        9,
        2,
    )
    assert "speaks version 2" in reply["message"]


def test_a_disassembled_leg_leaves_the_step_and_its_link_says_so(client: AgentClient) -> None:
    client.fault("leg_3", "disassembly", timeout_s=5)
    step = client.step(0.1, timeout_s=5)
    assert step.unavailable == ("leg_3",)
    assert set(step.states) == {"leg_0", "leg_1", "leg_2"}
    assert client.link("leg_3").disassembled and not client.link("leg_2").disassembled
    with pytest.raises(RemoteError) as info:
        client.command("leg_3", "hold", timeout_s=5)
    assert info.value.code == "unavailable"
    assert "leg_3" in str(info.value)
    client.fault("leg_3", "reassemble", timeout_s=5)
    assert set(client.step(0.2, timeout_s=5).states) == set(LEGS)
    assert not client.link("leg_3").disassembled


def test_a_one_limb_agent_refuses_a_step_while_its_limb_is_disassembled(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(make_plant("heavy_limb"), clock="sim")
    with AgentClient(agent.request_endpoint) as one:
        link = one.link("arm")
        link.fault("disassembly", timeout_s=5)
        link.send_step(0.1, timeout_s=5)
        with pytest.raises(LimbUnavailableError, match="arm"):
            link.finish_step()
        assert link.disassembled
        link.fault("reassemble", timeout_s=5)
        link.step(0.2, timeout_s=5)
        assert not link.disassembled


def test_the_stream_publishes_one_topic_per_limb(make_agent: MakeAgent) -> None:
    agent = make_agent(make_plant("moonbot_zero"), clock="real", stream_rate_hz=100)
    with raw(zmq.SUB, agent.state_endpoint) as sub:
        sub.setsockopt(zmq.SUBSCRIBE, b"leg_2")
        topic, frame = sub.recv_multipart()
        message = msgpack.unpackb(frame)
    assert topic == b"leg_2"
    assert (message["v"], message["type"], message["limb"]) == (2, "state", "leg_2")
    assert len(message["state"]["q"]) == 3
    assert len(message["base"]["pose"]) == 7


def test_a_client_follows_every_limb_in_the_real_clock(make_agent: MakeAgent) -> None:
    agent = make_agent(make_plant("moonbot_zero"), clock="real", stream_rate_hz=100)
    with AgentClient(agent.request_endpoint) as follower:

        def all_fresh() -> bool:
            follower.poll()
            return all(not follower.is_stale(name) for name in LEGS)

        assert wait_until(all_fresh, 5)
        assert follower.base is not None
        assert not follower.state("leg_0").health & Health.POWER_OFF


# -- commands riding on steps (the sim-clock runner's one message each way per tick) ---------


@pytest.fixture
def riding(quad: Any) -> Iterator[AgentClient]:
    with AgentClient(quad.request_endpoint, commands_ride_on_steps=True) as agent_client:
        yield agent_client


def test_held_commands_go_out_inside_the_next_step(riding: AgentClient) -> None:
    q0 = riding.step(0.0, timeout_s=5).states
    leg = riding.link("leg_1")
    target = [q + 0.2 for q in q0["leg_1"].q]
    assert leg.send_command(CommandMode.JOINT_POSITION, q=target)
    assert leg.commands_sent == 0  # held for the step
    riding.step(0.5, timeout_s=5)
    assert leg.commands_sent == 1 and leg.command_errors == 0
    assert riding.step(1.0, timeout_s=5).states["leg_1"].q == pytest.approx(target)
    riding.poll()
    assert riding.stale_replies == 0  # no command_reply came for it


def test_a_carried_command_refused_by_the_agent_counts_on_its_limb(riding: AgentClient) -> None:
    riding.step(0.0, timeout_s=5)
    riding.fault("leg_2", "disassembly", timeout_s=5)
    gone = riding.link("leg_2")
    here = riding.link("leg_0")
    gone.send_command(CommandMode.HOLD)
    here.send_command(CommandMode.HOLD)
    riding.step(0.1, timeout_s=5)
    assert (gone.command_errors, here.command_errors) == (1, 0)
    assert gone.last_error is not None and gone.last_error.code == "unavailable"
    assert "leg_2" in str(gone.last_error)


def test_any_other_request_sends_the_held_commands_first_in_order(riding: AgentClient) -> None:
    riding.step(0.0, timeout_s=5)
    leg = riding.link("leg_3")
    leg.send_command(CommandMode.HOLD)  # held ...
    riding.fault("leg_3", "disassembly", timeout_s=5)  # ... so it goes out before the fault
    assert leg.commands_sent == 1
    riding.step(0.1, timeout_s=5)
    riding.poll()
    assert leg.command_errors == 0  # it reached the leg before the leg came off


def test_held_commands_are_dropped_and_counted_when_their_step_cannot_go_out() -> None:
    with AgentClient("tcp://127.0.0.1:9", commands_ride_on_steps=True, subscribe=False) as lone:
        link = lone.link("leg_0")
        link.send_command(CommandMode.HOLD)
        lone.send_step(0.1, timeout_s=0.05)  # no connection: it waits in finish_step
        with pytest.raises(RequestTimeoutError):
            lone.finish_step()
        assert (link.commands_sent, link.commands_dropped) == (0, 1)


def test_a_step_sent_before_its_agent_is_up_goes_out_when_it_comes_up() -> None:
    port = free_port_pair()
    with AgentClient(f"tcp://127.0.0.1:{port}", subscribe=False) as early:
        early.send_step(0.25, timeout_s=30)  # nobody there yet: it does not wait here
        agent = LimbAgent(make_plant("moonbot_zero"), f"tcp://127.0.0.1:{port}", clock="sim")
        agent.start_in_thread()
        try:
            step = early.finish_step()
        finally:
            agent.stop(timeout_s=5.0)
    assert step.t == pytest.approx(0.25) and set(step.states) == set(LEGS)


def test_the_lockstep_waits_once_for_all_its_absent_agents_not_once_each() -> None:
    # Three agents that are not there (killed, say): before, each step waited its full time
    # for a connection, one after the other (three agents: three times the step's time).
    timeout_s = 1.0
    clients = [
        AgentClient(f"tcp://127.0.0.1:{free_port_pair()}", subscribe=False) for _ in range(3)
    ]
    try:
        lockstep = Lockstep(
            [PlantAgent(c, {f"a{i}.leg": "leg"}) for i, c in enumerate(clients)], timeout_s
        )
        start = time.monotonic()
        lockstep.begin(0.1)
        stale = lockstep.finish()
        elapsed = time.monotonic() - start
    finally:
        for c in clients:
            c.close()
    assert [type(problem) for _, problem in stale] == [RequestTimeoutError] * 3
    assert timeout_s <= elapsed < 2 * timeout_s, elapsed


def test_an_agent_restarted_late_in_a_run_is_caught_up_to_the_runs_time(quad: Any) -> None:
    # (a reviewer restarted a sim agent at t = 70 s: it starts at t = 0, refused the run's
    # step to 72.24 s as more than a minute ahead, and the run stopped)
    with AgentClient(quad.request_endpoint, subscribe=False) as fresh:
        lockstep = Lockstep([PlantAgent(fresh, {f"q.{leg}": leg for leg in LEGS})], 5.0)
        lockstep.begin(125.5)
        assert lockstep.finish() == []
        described = fresh.describe(timeout_s=5)
        assert described.agent_time == 125.5
        assert described.errors_received == {"bad_value": 1}  # (the step it refused)
        lockstep.begin(125.52)  # and the run goes on, tick by tick
        assert lockstep.finish() == []


def test_a_step_refused_for_going_back_in_time_still_stops_the_run(quad: Any) -> None:
    with AgentClient(quad.request_endpoint, subscribe=False) as runner:
        lockstep = Lockstep([PlantAgent(runner, {f"q.{leg}": leg for leg in LEGS})], 5.0)
        lockstep.begin(50.0)
        assert lockstep.finish() == []
        lockstep.begin(100.0)
        assert lockstep.finish() == []
        lockstep.begin(90.0)  # (refused, and catching up from t = 0 is refused too)
        with pytest.raises(AgentError, match=r"step to t=90\.000 s .*goes back in time"):
            lockstep.finish()


def test_a_commander_that_releases_its_limb_lets_another_command_it_at_once(
    make_agent: MakeAgent,
) -> None:
    now = [0.0]
    quadruped = make_plant("moonbot_zero")
    agent = make_agent(quadruped, clock="real", stream_rate_hz=50, time_source=lambda: now[0])
    with (
        AgentClient(agent.request_endpoint, subscribe=False) as first,
        AgentClient(agent.request_endpoint, subscribe=False) as second,
    ):
        for limb in ("leg_0", "leg_1"):
            first.command(limb, "joint_position", timeout_s=5, q=[0.1, 0.2, 0.3])
        now[0] = 0.1  # well within its lease
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            second.command("leg_0", "joint_position", timeout_s=5, q=[0.1, 0.2, 0.2])
        # another client cannot release it, nor learn anything by trying
        with pytest.raises(RemoteError, match=r"commanded_elsewhere: .*only its commander"):
            second.release("leg_0", timeout_s=5)
        assert second.release(timeout_s=5) == []  # it commands nothing
        # a refusal for what a well-formed request asks is not bad input: nothing counted,
        # so no limb is flagged BAD_INPUT (the first client's limbs least of all)
        assert first.describe(timeout_s=5).errors_received == {}
        first.command("leg_2", "joint_position", timeout_s=5, q=[0.1, 0.2, 0.3])
        assert first.release("leg_0", timeout_s=5) == ["leg_0"]
        second.command("leg_0", "joint_position", timeout_s=5, q=[0.1, 0.2, 0.2])
        with pytest.raises(RemoteError, match="commanded_elsewhere"):
            second.command("leg_1", "joint_position", timeout_s=5, q=[0.1, 0.2, 0.2])
        assert first.release(timeout_s=5) == ["leg_1", "leg_2"]  # every limb it commands
        second.command("leg_1", "joint_position", timeout_s=5, q=[0.1, 0.2, 0.2])
        with pytest.raises(RemoteError, match="unknown_limb"):
            first.release("leg_9", timeout_s=5)


def test_a_step_of_more_than_a_minute_is_refused_naming_the_limit(client: AgentClient) -> None:
    # (a mujoco plant steps its physics each millisecond: a step to t = 1e9 would keep its
    # agent from answering anyone for days)
    client.step(60.0, timeout_s=5)
    with pytest.raises(RemoteError, match=r"bad_value: .*at most 60 s per step") as refused:
        client.step(120.5, timeout_s=5)
    assert refused.value.code == "bad_value"
    assert client.step(120.0, timeout_s=5).t == 120.0  # and it goes on serving
    assert client.describe(timeout_s=5).errors_received == {"bad_value": 1}


def test_limbs_reassembled_after_all_were_gone_are_read_again_at_the_same_t(
    client: AgentClient,
) -> None:
    # (an outside client's find: the step to the same t answered the states from before the
    # disassembly, t = 0.1, and published nothing)
    client.step(0.1, timeout_s=5)
    client.command("leg_2", "joint_position", timeout_s=5, q=[0.2, 0.2, 0.2])
    for leg in LEGS:
        client.fault(leg, "disassembly", timeout_s=5)
    with pytest.raises(LimbUnavailableError):
        client.step(1.0, timeout_s=5)
    for leg in LEGS:
        client.fault(leg, "reassemble", timeout_s=5)
    step = client.step(1.0, timeout_s=5)
    assert step.t == 1.0
    assert {state.t for state in step.states.values()} == {1.0}
    assert set(step.states) == set(LEGS)
    # and they are new states (a larger seq): the client takes them
    assert all(client.state(leg).t == 1.0 for leg in LEGS)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "twist",
    [
        [0.0, 0.0, 0.0, 1e300, 1e300, 1e300],  # its rotation's norm overflowed into inf
        [1.7e308, 1.7e308, 1.7e308, 1.7e308, 1.7e308, 1.7e308],
        [0.0, 0.0, -1e300, 0.0, 0.0, 0.0],
    ],
)
def test_an_absurd_twist_stops_the_limb_with_ik_failed_not_a_bus_fault(
    quad: Any, twist: list[float]
) -> None:
    # (a reviewer's raw client sent ee_twist [0, 0, 0, 1e300, 1e300, 1e300]: the agent
    # answered command_reply, then logged a traceback, "ValueError: math domain error", and
    # flagged the simulated leg BUS_FAULT, "its setpoint writes fail")
    with raw(zmq.DEALER, quad.request_endpoint) as sock:
        first = ask(sock, {"v": 2, "type": "step", "seq": 1, "t": 0.05})
        q0 = first["limbs"]["leg_1"]["q"]
        command = {"v": 2, "type": "command", "seq": 2, "limb": "leg_1", "mode": "ee_twist"}
        assert ask(sock, {**command, "twist": twist, "deadline_s": 10})["type"] == "command_reply"
        for k in range(3):
            reply = ask(sock, {"v": 2, "type": "step", "seq": 3 + k, "t": 0.1 + 0.05 * k})
            state = reply["limbs"]["leg_1"]
            assert state["health"] & Health.BUS_FAULT == 0
            assert state["health"] & Health.IK_FAILED
            assert "cannot follow" in state["detail"]["ik_failure"]
            assert state["q"] == q0
        # The limb takes the next command as ever.
        hold = {**command, "seq": 9, "mode": "hold"}
        assert ask(sock, hold)["type"] == "command_reply"
        reply = ask(sock, {"v": 2, "type": "step", "seq": 10, "t": 0.5})
        assert reply["limbs"]["leg_1"]["health"] & (Health.BUS_FAULT | Health.IK_FAILED) == 0


def test_a_carried_command_of_another_version_is_refused_with_the_versions_spoken(
    quad: Any,
) -> None:
    # (docs/protocol.md 5.4: each refused carried command is listed as "the error reply it
    # would have had on its own"; a bad_version reply on its own has `versions`, the one in
    # a step's command_errors had not)
    command = {"type": "command", "limb": "leg_0", "mode": "hold"}
    with raw(zmq.DEALER, quad.request_endpoint) as sock:
        alone = ask(sock, {**command, "v": 1, "seq": 1})
        reply = ask(
            sock,
            {
                "v": 2,
                "type": "step",
                "seq": 2,
                "t": 0.1,
                "commands": [{**command, "v": 1, "seq": 3}],
            },
        )
    assert alone["code"] == "bad_version" and alone["versions"] == [2]
    (carried,) = reply["command_errors"]
    assert carried == {**alone, "seq": 3}


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_an_ee_pose_a_world_away_is_refused_in_powers_of_ten_not_hundreds_of_digits(
    quad: Any,
) -> None:
    # (the limb-computer review's raw client: ee_pose at x = 1e300 m was refused naming
    # "(1000000000000000000161765076786456438212668646231659438295495017101117...0, 0.0,
    # 0.0) mm", 300 digits, and the agent's log got numpy's "overflow encountered in matmul")
    with raw(zmq.DEALER, quad.request_endpoint) as sock:
        ask(sock, {"v": 2, "type": "step", "seq": 1, "t": 0.05})
        command = {"v": 2, "type": "command", "seq": 2, "limb": "leg_1", "mode": "ee_pose"}
        reply = ask(sock, {**command, "pose": [1e300, 0.0, -0.25, 0.0, 0.0, 0.0, 1.0]})
    assert reply["type"] == "error" and reply["code"] == "ik_failed", reply
    assert "at (1e+303, 0.0, -250.0) mm" in reply["message"], reply["message"]
    assert len(reply["message"]) < 600
