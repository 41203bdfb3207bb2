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
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    sub = context.socket(zmq.SUB)
    for sock in (dealer, sub):
        sock.linger = 0
        sock.rcvtimeo = 5000
    dealer.connect(agent.request_endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, b"leg_2")
    sub.connect(agent.state_endpoint)
    try:
        yield dealer, sub
    finally:
        dealer.close()
        sub.close()
        context.term()


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
