"""docs/protocol.md is enough to write a client: its examples, sent raw, work against an agent.

Only pyzmq and msgpack below, as a client in another language would have; the messages are the
document's own hex examples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest
import zmq
from raw_client import raw_sockets

from limbtree.robots import make_plant

DOC = (Path(__file__).resolve().parent.parent / "docs" / "protocol.md").read_text()
MakeAgent = Callable[..., Any]


def hex_examples() -> list[bytes]:
    """Every fenced block of the document made only of hex byte pairs, as bytes."""
    blocks = re.findall(r"```\n([0-9a-f \n]+)```", DOC)
    return [bytes.fromhex(block.replace("\n", " ")) for block in blocks]


@pytest.fixture
def sockets(make_agent: MakeAgent) -> Iterator[tuple[zmq.Socket[bytes], zmq.Socket[bytes]]]:
    agent = make_agent(make_plant("moonbot_zero"), clock="sim")
    with raw_sockets(agent, b"leg_2") as pair:
        yield pair


def exchange(dealer: zmq.Socket[bytes], frame: bytes) -> dict[str, Any]:
    dealer.send(frame)
    reply = msgpack.unpackb(dealer.recv())
    assert isinstance(reply, dict)
    return reply


def test_the_documents_hex_examples_are_the_messages_it_says():
    ping, step, command = hex_examples()
    assert msgpack.unpackb(ping) == {"v": 2, "type": "ping", "seq": 1}
    assert msgpack.unpackb(step) == {"v": 2, "type": "step", "seq": 3, "t": 0.01}
    assert msgpack.unpackb(command) == {
        "v": 2,
        "type": "command",
        "seq": 4,
        "limb": "leg_1",
        "mode": "hold",
    }


def test_a_raw_client_from_the_document_drives_a_plant_agent(sockets):
    dealer, sub = sockets
    ping, step, command = hex_examples()
    assert exchange(dealer, ping)["type"] == "ping_reply"

    described = exchange(dealer, msgpack.packb({"v": 2, "type": "describe", "seq": 2}))
    assert (described["type"], described["seq"], described["kind"]) == (
        "describe_reply",
        2,
        "kinematic",
    )
    assert described["versions"] == [2]
    assert described["floating_base"] is False
    assert [limb["name"] for limb in described["limbs"]] == ["leg_0", "leg_1", "leg_2", "leg_3"]
    leg = described["limbs"][0]
    assert leg["joints"][0]["name"] == "leg_0_hip_yaw"
    assert {"mount", "robot", "driver", "end_effectors", "command_modes", "has_gripper"} <= set(leg)

    stepped = exchange(dealer, step)
    assert (stepped["type"], stepped["seq"], stepped["t"]) == ("step_reply", 3, 0.01)
    assert set(stepped["base"]) == {"pose", "twist"}
    assert stepped["unavailable"] == []
    state = stepped["limbs"]["leg_0"]
    assert state["t"] == 0.01 and len(state["q"]) == 3 and state["detail"]["faults"] == []
    topic, frame = sub.recv_multipart()
    streamed = msgpack.unpackb(frame)
    assert topic == b"leg_2" and streamed["limb"] == "leg_2" and streamed["type"] == "state"

    assert exchange(dealer, command) == {"v": 2, "type": "command_reply", "seq": 4}

    unknown = {"v": 2, "type": "command", "seq": 5, "limb": "arm", "mode": "hold"}
    refused = exchange(dealer, msgpack.packb(unknown))
    assert (refused["code"], refused["field"]) == ("unknown_limb", "limb")
    assert refused["message"] in DOC.replace("\n", " ")

    fault = {"v": 2, "type": "fault", "seq": 6, "limb": "leg_3", "kind": "disassembly"}
    assert exchange(dealer, msgpack.packb(fault))["type"] == "fault_reply"
    later = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 7, "t": 0.02}))
    assert later["unavailable"] == ["leg_3"] and "leg_3" not in later["limbs"]

    old = exchange(dealer, msgpack.packb({"v": 1, "type": "ping", "seq": 8}))
    assert (old["code"], old["seq"]) == ("bad_version", 8)
    assert old["message"] in DOC.replace("\n", " ")

    typed = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 9, "t": "now"}))
    assert (typed["code"], typed["field"]) == ("bad_field", "t")
    assert typed["message"] in DOC.replace("\n", " ")


# --- section 5.4: commands riding on a step ------------------------------------------------


def _command(seq: int, limb: str, **fields: Any) -> dict[str, Any]:
    return {"v": 2, "type": "command", "seq": seq, "limb": limb, **fields}


def test_commands_riding_on_a_step_apply_in_order_before_it_and_refusals_are_listed(sockets):
    dealer, _ = sockets
    start = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 0.0}))
    q0 = start["limbs"]["leg_0"]["q"]
    target = [q0[0] + 0.05, q0[1], q0[2]]
    away = [q0[0] - 0.05, q0[1], q0[2]]
    commands = [
        _command(2, "leg_0", mode="joint_position", q=away),
        _command(3, "leg_0", mode="joint_position", q=target),  # the later one wins
        _command(4, "arm", mode="hold"),  # no such limb
        _command(5, "leg_1", mode="ee_pose", pose=[0, 0, 0, 0, 0, 0, 2]),  # not unit
        {"v": 2, "type": "ping", "seq": 6},  # only commands ride on a step
        "hold",
        _command(7, "leg_2", mode="hold"),
    ]
    frame = {"v": 2, "type": "step", "seq": 8, "t": 0.5, "commands": commands}
    reply = exchange(dealer, msgpack.packb(frame))
    assert (reply["type"], reply["seq"], reply["t"]) == ("step_reply", 8, 0.5)
    assert reply["limbs"]["leg_0"]["q"][0] == pytest.approx(target[0], abs=1e-3)
    refused = {(e["seq"], e["code"], e.get("field")) for e in reply["command_errors"]}
    assert refused == {
        (4, "unknown_limb", "limb"),
        (5, "bad_value", "pose"),
        (6, "unknown_type", "type"),
        (0, "bad_field", "commands"),
    }
    assert all(e["type"] == "error" and e["message"] for e in reply["command_errors"])
    # No command_reply came for the applied ones: the next message is the next reply.
    assert exchange(dealer, msgpack.packb({"v": 2, "type": "ping", "seq": 9}))["seq"] == 9
    fine = [_command(10, "leg_0", mode="hold")]
    plain = exchange(
        dealer, msgpack.packb({"v": 2, "type": "step", "seq": 11, "t": 0.6, "commands": fine})
    )
    assert "command_errors" not in plain  # only when a carried command was refused


def test_a_refused_step_applies_none_of_its_commands(sockets):
    dealer, _ = sockets
    first = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 1.0}))
    q0 = first["limbs"]["leg_0"]["q"]
    move = [_command(2, "leg_0", mode="joint_position", q=[q0[0] + 0.05, q0[1], q0[2]])]
    back = exchange(
        dealer, msgpack.packb({"v": 2, "type": "step", "seq": 3, "t": 0.5, "commands": move})
    )
    assert (back["type"], back["code"], back["field"]) == ("error", "bad_value", "t")
    still = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 4, "t": 1.5}))
    assert still["limbs"]["leg_0"]["q"][0] == pytest.approx(q0[0], abs=1e-3)  # not moved
    bad = exchange(
        dealer, msgpack.packb({"v": 2, "type": "step", "seq": 4, "t": 1.5, "commands": "hold"})
    )
    assert (bad["code"], bad["field"]) == ("bad_field", "commands")
    many = [_command(i, "leg_0", mode="hold") for i in range(5, 5 + 1025)]
    too = exchange(
        dealer, msgpack.packb({"v": 2, "type": "step", "seq": 9999, "t": 1.5, "commands": many})
    )
    assert (too["code"], too["field"]) == ("bad_value", "commands")
    assert "at most 1024" in too["message"]


# --- section 13: delivery, order, versions, reconnection -----------------------------------

SECTION_13 = DOC[DOC.index("## 13. Delivery") : DOC.index("## 14. Example")].replace("\n  ", " ")


def _dealer(context: zmq.Context[zmq.Socket[bytes]], *, immediate: bool) -> zmq.Socket[bytes]:
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.rcvtimeo = 5000
    dealer.immediate = immediate
    dealer.setsockopt(zmq.RECONNECT_IVL, 100)
    dealer.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
    return dealer


@pytest.fixture
def context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


@pytest.fixture
def quad(make_agent: MakeAgent) -> Any:
    return make_agent(make_plant("moonbot_zero"), clock="sim")


def test_sizes_a_request_over_64_kib_is_too_large_and_a_frame_over_1_mib_drops_the_connection(
    quad: Any, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "at most 65536 bytes" in SECTION_13 and "over 1 MiB" in SECTION_13
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    big = msgpack.packb({"v": 2, "type": "ping", "seq": 1, "pad": "x" * 70_000})
    assert exchange(dealer, big)["code"] == "too_large"
    dealer.send(msgpack.packb({"v": 2, "type": "ping", "seq": 2, "pad": b"x" * (1 << 20)}))
    dealer.rcvtimeo = 1000
    with pytest.raises(zmq.Again):
        dealer.recv()  # no reply: the connection was dropped
    dealer.rcvtimeo = 5000
    for seq in range(3, 50):  # it reconnects by itself
        dealer.send(msgpack.packb({"v": 2, "type": "ping", "seq": seq}))
        if dealer.poll(500):
            assert msgpack.unpackb(dealer.recv())["type"] == "ping_reply"
            break
    else:
        pytest.fail("the dealer never reconnected")


def test_the_first_request_of_an_immediate_dealer_is_dropped_before_it_connects(
    make_agent: MakeAgent, free_port: Callable[[], int], context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "fails (`EAGAIN`)" in SECTION_13
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    immediate = _dealer(context, immediate=True)
    queued = _dealer(context, immediate=False)
    immediate.connect(endpoint)
    queued.connect(endpoint)
    ping = msgpack.packb({"v": 2, "type": "ping", "seq": 1})
    with pytest.raises(zmq.Again):
        immediate.send(ping, zmq.NOBLOCK)  # nobody there yet: dropped, not queued
    queued.send(ping, zmq.NOBLOCK)  # queued until connected
    agent = _agent_on(make_agent, port)
    assert msgpack.unpackb(queued.recv())["seq"] == 1
    assert immediate.poll(10_000, zmq.POLLOUT), "POLLOUT never said the connection is up"
    assert exchange(immediate, ping)["type"] == "ping_reply"
    assert not agent.closed


def _agent_on(make_agent: MakeAgent, port: int) -> Any:
    """An agent on ``port``; the fixture picks free ports, so bind this one by hand."""
    from limbtree.transport import PlantAgent

    agent = PlantAgent(make_plant("light_limb"), f"tcp://127.0.0.1:{port}", clock="sim")
    agent.start_in_thread()
    _started.append(agent)
    return agent


_started: list[Any] = []


@pytest.fixture(autouse=True)
def _stop_started() -> Iterator[None]:
    yield
    while _started:
        _started.pop().stop(timeout_s=5.0)


@pytest.mark.parametrize("seq", [0, -3, 2**63 - 1, 2**64 - 1, -(2**63)])
def test_integers_any_msgpack_int_seq_is_echoed_unchanged(quad: Any, seq: int) -> None:
    assert "−2^63 … 2^64−1" in SECTION_13
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    try:
        assert exchange(dealer, msgpack.packb({"v": 2, "type": "ping", "seq": seq}))["seq"] == seq
    finally:
        dealer.close()
        context.term()


def test_integers_state_seq_starts_at_1_and_session_has_32_bits(
    quad: Any, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "starts at 1" in SECTION_13 and "0 … 2^32−1" in SECTION_13
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    first = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 0.01}))
    second = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 2, "t": 0.02}))
    assert first["limbs"]["leg_0"]["seq"] == 1 and second["limbs"]["leg_0"]["seq"] == 2
    assert 0 <= first["limbs"]["leg_0"]["session"] < 2**32


def test_order_replies_on_one_connection_come_in_request_order(
    quad: Any, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "answers in the order it received the requests" in SECTION_13
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    kinds = ["ping", "describe", "step", "command", "ping"] * 20
    for seq, kind in enumerate(kinds, start=1):
        message: dict[str, Any] = {"v": 2, "type": kind, "seq": seq}
        if kind == "step":
            message["t"] = seq * 0.01
        if kind == "command":
            message.update(limb="leg_1", mode="hold")
        dealer.send(msgpack.packb(message))
    seqs = [msgpack.unpackb(dealer.recv())["seq"] for _ in kinds]
    assert seqs == list(range(1, len(kinds) + 1))


def test_versions_bad_version_lists_the_versions_the_agent_speaks(
    quad: Any, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "answers `bad_version` with `versions`" in SECTION_13
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    refused = exchange(dealer, msgpack.packb({"v": 3, "type": "describe", "seq": 1}))
    assert (refused["code"], refused["versions"]) == ("bad_version", [2])
    accepted = exchange(dealer, msgpack.packb({"v": 2, "type": "describe", "seq": 2}))
    assert accepted["versions"] == [2]


def test_reconnection_a_restarted_agent_has_a_new_session_and_seq_from_1(
    make_agent: MakeAgent, free_port: Callable[[], int], context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "has a new `session`" in SECTION_13
    port = free_port()
    dealer = _dealer(context, immediate=True)
    dealer.connect(f"tcp://127.0.0.1:{port}")
    old = _agent_on(make_agent, port)
    assert dealer.poll(10_000, zmq.POLLOUT)
    before = exchange(dealer, msgpack.packb({"v": 2, "type": "step", "seq": 1, "t": 0.5}))
    old.stop(timeout_s=5.0)
    _agent_on(make_agent, port)
    for seq in range(2, 200):  # resend until the new agent answers
        try:
            dealer.send(msgpack.packb({"v": 2, "type": "step", "seq": seq, "t": 0.01}), zmq.NOBLOCK)
        except zmq.Again:
            dealer.poll(100, zmq.POLLOUT)
            continue
        if dealer.poll(500):
            after = msgpack.unpackb(dealer.recv())
            break
    else:
        pytest.fail("the dealer never reached the restarted agent")
    assert after["seq"] == seq
    assert after["limbs"]["arm"]["session"] != before["limbs"]["arm"]["session"]
    assert after["limbs"]["arm"]["seq"] == 1


def test_idempotence_a_fault_resent_starts_its_duration_again(
    quad: Any, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "`fault` is **not** idempotent" in SECTION_13
    dealer = _dealer(context, immediate=False)
    dealer.connect(quad.request_endpoint)
    seq = iter(range(1, 100))

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        return exchange(dealer, msgpack.packb({"v": 2, "seq": next(seq), **message}))

    def blocked(t: float) -> bool:
        state = ask({"type": "step", "t": t})["limbs"]["leg_0"]
        return bool(state["health"] & 2)

    fault = {"type": "fault", "limb": "leg_0", "kind": "blockage", "params": {"duration_s": 0.1}}
    assert ask(fault)["type"] == "fault_reply"
    assert blocked(0.05)
    assert ask(fault)["type"] == "fault_reply"  # again at t = 0.05 s: now until 0.15 s
    assert blocked(0.12)
    assert not blocked(0.2)


def test_idempotence_describe_ping_same_step_and_same_gripper_change_nothing(
    make_agent: MakeAgent, context: zmq.Context[zmq.Socket[bytes]]
) -> None:
    assert "`describe` and `ping` (no effect)" in SECTION_13
    agent = make_agent(make_plant("light_limb"), clock="sim")
    dealer = _dealer(context, immediate=False)
    dealer.connect(agent.request_endpoint)
    seq = iter(range(1, 100))

    def ask(message: dict[str, Any]) -> dict[str, Any]:
        return exchange(dealer, msgpack.packb({"v": 2, "seq": next(seq), **message}))

    first = ask({"type": "step", "t": 0.1})["limbs"]["arm"]
    for message in (
        {"type": "describe"},
        {"type": "ping"},
        {"type": "gripper", "limb": "arm", "action": first["gripper"]},
        {"type": "command", "limb": "arm", "mode": "joint_position", "q": first["q"]},
        {"type": "step", "t": 0.1},
    ):
        assert ask(message)["type"].endswith("_reply")
    again = ask({"type": "step", "t": 0.1})["limbs"]["arm"]
    assert (again["seq"], again["q"], again["gripper"]) == (
        first["seq"],
        first["q"],
        first["gripper"],
    )
    later = ask({"type": "step", "t": 0.2})["limbs"]["arm"]
    assert later["q"] == first["q"]


def test_the_error_tables_counted_column_is_what_the_agent_counts():
    from limbtree.transport.schema import COUNTED_ERRORS, ErrorCode

    rows = re.findall(r"^\| `([a-z_]+)` \| .* \| (yes|no)\b[^|]*\|$", DOC, flags=re.MULTILINE)
    table = {code: counted == "yes" for code, counted in rows if code in set(ErrorCode)}
    assert set(table) == set(ErrorCode)  # every code is in the table
    assert {code for code, counted in table.items() if counted} == set(COUNTED_ERRORS)
