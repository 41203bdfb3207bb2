"""Issue 12, wire item 9: what a raw client written from docs/protocol.md found, fixed.

Only pyzmq and msgpack on the client side, as a client in another language would have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest
import zmq
from raw_client import raw_sockets

from limbtree.robots import make_plant
from limbtree.transport import PlantAgent
from limbtree.transport.schema import MAX_NESTING_DEPTH, state_from_map

pytestmark = pytest.mark.timeout(60)

MakeAgent = Callable[..., PlantAgent]
Sockets = tuple[zmq.Socket[bytes], zmq.Socket[bytes], PlantAgent]


@pytest.fixture
def wire(make_agent: MakeAgent) -> Iterator[Sockets]:
    agent = make_agent(make_plant("light_limb"), clock="sim")
    with raw_sockets(agent) as (dealer, sub):
        yield dealer, sub, agent


def ask(dealer: zmq.Socket[bytes], message: Any) -> dict[str, Any]:
    dealer.send(message if isinstance(message, bytes) else msgpack.packb(message))
    reply: dict[str, Any] = msgpack.unpackb(dealer.recv())
    return reply


def command(seq: int, mode: str, **fields: Any) -> dict[str, Any]:
    return {"v": 2, "type": "command", "seq": seq, "limb": "arm", "mode": mode, **fields}


HOME_POSE = [0.4, 0.0, 0.4, 0.0, 0.0, 0.0, 1.0]


# --- nil means missing --------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        command(1, "ee_twist", twist=[0.0] * 6, ee=None),
        command(1, "ee_twist", twist=[0.0] * 6, deadline_s=None),
        {"v": 2, "type": "fault", "seq": 1, "limb": "arm", "kind": "clear", "params": None},
        {"v": 2, "type": "gripper", "seq": 1, "limb": None, "action": "open"},
    ],
    ids=["ee", "deadline_s", "params", "limb"],
)
def test_a_nil_optional_field_means_missing(wire: Sockets, message: dict[str, Any]) -> None:
    dealer, _, agent = wire
    reply = ask(dealer, message)
    assert reply["type"].endswith("_reply"), reply
    assert agent.errors_received == {}


def test_a_nil_token_is_a_missing_token(wire: Sockets) -> None:
    dealer, _, _ = wire
    reply = ask(dealer, {"v": 2, "type": "shutdown", "seq": 1, "token": None})
    assert reply["code"] == "shutdown_refused"


def test_a_state_with_nil_detail_has_no_detail() -> None:
    state = {
        "seq": 1, "session": 2, "agent_time": 0.0, "t": 0.0, "q": (0.0,), "dq": (0.0,),
        "effort": None, "ee": {}, "gripper": "none", "health": 0, "detail": None,
    }  # fmt: skip
    assert state_from_map(state).state.detail == {}


# --- invalid quaternion -------------------------------------------------------------------


@pytest.mark.parametrize("quaternion", [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
def test_an_invalid_quaternion_is_a_counted_bad_value_naming_the_field(
    wire: Sockets, quaternion: list[float]
) -> None:
    dealer, _, agent = wire
    reply = ask(dealer, command(7, "ee_pose", pose=[0.4, 0.0, 0.4, *quaternion]))
    assert (reply["type"], reply["seq"], reply["code"], reply["field"]) == (
        "error",
        7,
        "bad_value",
        "pose",
    )
    assert "quaternion" in reply["message"] and "array(" not in reply["message"]
    assert agent.errors_received == {"bad_value": 1}


# --- extension types, binary keys and depth, nested --------------------------------------

TIMESTAMP = msgpack.Timestamp(1, 0)


FAULT = {"v": 2, "type": "fault", "seq": 3, "limb": "arm", "kind": "clear"}
REFUSED = [
    ({"v": 2, "type": "ping", "seq": 3, "x": TIMESTAMP}, "x"),
    ({"v": 2, "type": "ping", "seq": 3, "x": {"y": [TIMESTAMP]}}, "x"),
    ({"v": 2, "type": "ping", "seq": 3, b"x": 1}, None),
    ({**FAULT, "params": {b"k": 1}}, "params"),
    ({**FAULT, "params": {"a": [TIMESTAMP]}}, "params"),
    # (msgpack itself refuses these while unpacking: the seq and field are read again)
    ({"v": 2, "type": "ping", "seq": 3, "x": {5: 1}}, "x"),
    ({**FAULT, "params": {"a": {None: 1}}}, "params"),
    ({"v": 2, "type": "ping", "seq": 3, "x": [msgpack.ExtType(5, b"a")]}, "x"),
    ({"v": 2, "type": "ping", "seq": 3, 7: 1}, None),
]


@pytest.mark.parametrize(
    ("message", "field"),
    REFUSED,
    ids=[
        "timestamp",
        "nested-timestamp",
        "binary-key",
        "nested-binary-key",
        "timestamp-in-params",
        "int-key",
        "nil-key-in-params",
        "extension-type-5",
        "top-level-int-key",
    ],
)
def test_timestamps_and_binary_keys_are_refused_wherever_they_are(
    wire: Sockets, message: dict[Any, Any], field: str | None
) -> None:
    dealer, _, agent = wire
    reply = ask(dealer, msgpack.packb(message, use_bin_type=True))
    assert (reply["type"], reply["seq"], reply["code"]) == ("error", 3, "undecodable")
    assert reply.get("field") == field
    assert agent.errors_received == {"undecodable": 1}


def test_a_refused_frame_nested_deep_is_still_undecodable_not_an_internal_error(
    wire: Sockets,
) -> None:
    dealer, _, agent = wire
    # an extension type 600 arrays down (msgpack's own limit is 1024 levels): the frame is
    # read again to find its field, and that reading must not hit Python's recursion limit
    head = msgpack.packb({"v": 2, "type": "ping", "seq": 9})
    frame = (
        bytes((head[0] + 1,)) + head[1:] + msgpack.packb("x") + b"\x91" * 600
        + msgpack.packb(msgpack.ExtType(5, b"a"))
    )  # fmt: skip
    reply = ask(dealer, frame)
    assert (reply["code"], reply["seq"], reply["field"]) == ("undecodable", 9, "x")
    assert agent.errors_received == {"undecodable": 1}


def test_bytes_that_are_not_msgpack_get_a_message_that_says_something(wire: Sockets) -> None:
    dealer, _, _ = wire
    reply = ask(dealer, b"\xc1\x00\x01")  # 0xc1 is never used in msgpack
    assert reply["code"] == "undecodable" and reply["seq"] == 0
    # (once "not valid msgpack: FormatError", the exception's name: its text is empty)
    assert reply["message"] == (
        "not valid msgpack: a value starts with 0xc1, a byte msgpack never uses (is it "
        "msgpack at all?)"
    )


def _nested(depth: int) -> bytes:
    """A ping whose field ``x`` holds arrays nested so the message has ``depth`` levels."""
    head = msgpack.packb({"v": 2, "type": "ping", "seq": 4})
    return bytes((head[0] + 1,)) + head[1:] + msgpack.packb("x") + b"\x91" * (depth - 1) + b"\x01"


def test_nesting_up_to_the_limit_is_served_and_beyond_it_the_error_names_the_limit(
    wire: Sockets,
) -> None:
    dealer, _, _ = wire
    assert ask(dealer, _nested(MAX_NESTING_DEPTH))["type"] == "ping_reply"
    for depth in (MAX_NESTING_DEPTH + 1, 5000):
        reply = ask(dealer, _nested(depth))
        assert reply["code"] == "undecodable"
        assert f"limit of {MAX_NESTING_DEPTH} levels" in reply["message"]


# --- sim clock: commands act at the next step; the same t publishes nothing --------------


def step(dealer: zmq.Socket[bytes], seq: int, t: float) -> dict[str, Any]:
    reply = ask(dealer, {"v": 2, "type": "step", "seq": seq, "t": t})
    assert reply["type"] == "step_reply", reply
    state: dict[str, Any] = reply["limbs"]["arm"]
    return state


@pytest.mark.parametrize(
    "message",
    [
        command(2, "joint_position", q=[0.5] * 7),
        command(2, "ee_twist", twist=[0.05, 0.0, 0.0, 0.0, 0.0, 0.0]),
    ],
    ids=["joint_position", "ee_twist"],
)
def test_a_sim_clock_command_shows_in_the_very_next_step(
    wire: Sockets, message: dict[str, Any]
) -> None:
    dealer, _, _ = wire
    before = step(dealer, 1, 0.01)
    assert ask(dealer, message)["type"] == "command_reply"
    after = step(dealer, 3, 0.02)
    assert after["q"] != before["q"]
    assert any(v != 0.0 for v in after["dq"])


def test_stepping_to_the_same_t_publishes_no_new_state(wire: Sockets) -> None:
    dealer, sub, _ = wire
    # Wait for the subscription: step until a state arrives.
    sub.rcvtimeo = 100
    t, seq = 0.0, 1
    while True:
        t += 0.01
        first = step(dealer, seq, t)
        seq += 1
        try:
            sub.recv_multipart()
            break
        except zmq.Again:
            assert t < 5.0, "the stream never arrived"
    while sub.poll(200):
        sub.recv_multipart()
    again = step(dealer, seq, t)
    assert again["seq"] == first["seq"] and again["q"] == first["q"]
    assert not sub.poll(300), "a repeated step published a state"
    later = step(dealer, seq + 1, t + 0.01)
    assert later["seq"] == first["seq"] + 1
    assert sub.poll(2000)


def test_bytes_after_the_map_are_named_as_such(wire: Sockets) -> None:
    dealer, _, _ = wire
    reply = ask(dealer, msgpack.packb({"v": 2, "type": "ping", "seq": 4}) + b"xyz")
    assert reply["code"] == "undecodable"
    assert reply["message"] == (
        "3 bytes after the message's map: a frame holds one msgpack map, nothing after it"
    )  # once "not valid msgpack: unpack(b) received extra data.", msgpack's words
