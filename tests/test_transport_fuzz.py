"""Random bytes and random msgpack thrown at a live agent: it answers each and keeps serving."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import zmq
from fake_driver import FakeDriver, free_port_pair
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from limbtree.transport import ConfigError, LimbAgent, LimbClient
from limbtree.transport.schema import REQUEST_TYPES

pytestmark = pytest.mark.timeout(60)

# Codes the driver or the agent's state produce; everything else is a rejected request.
NOT_COUNTED = {"ik_failed", "unknown_fault", "not_simulated", "internal", "unavailable"}


class Fuzzer:
    """A live sim-clock agent, a raw DEALER to throw things at it, and a tally of its replies."""

    def __init__(self) -> None:
        self.driver = FakeDriver()
        self.agent = self._bind_agent()
        self.agent.start_in_thread()
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.sock = self.context.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.rcvtimeo = 5000
        self.sock.connect(self.agent.request_endpoint)
        self.counted: Counter[str] = Counter()

    def _bind_agent(self) -> LimbAgent:
        for _ in range(5):
            endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
            try:
                return LimbAgent(self.driver, endpoint, clock="sim")
            except ConfigError:
                continue
        raise RuntimeError("could not bind an agent on a free port pair")

    def throw(self, frames: list[bytes]) -> dict[str, Any]:
        self.sock.send_multipart(frames)
        reply_frames = self.sock.recv_multipart()
        assert reply_frames[:-1] == frames[:-1]  # the envelope comes back as it was
        reply = msgpack.unpackb(reply_frames[-1])
        assert isinstance(reply, dict)
        assert reply["v"] == 2
        assert isinstance(reply["seq"], int)
        if reply["type"] == "error":
            assert isinstance(reply["code"], str) and isinstance(reply["message"], str)
            assert reply["message"]
            if reply["code"] not in NOT_COUNTED:
                self.counted[reply["code"]] += 1
        else:
            assert reply["type"].endswith("_reply")
        return reply

    def close(self) -> None:
        self.sock.close()
        self.context.term()
        self.agent.stop()


@pytest.fixture(scope="module")
def fuzzer() -> Iterator[Fuzzer]:
    f = Fuzzer()
    yield f
    f.close()


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=12)
    | st.binary(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    [
        "v",
        "type",
        "seq",
        "t",
        "mode",
        "q",
        "pose",
        "twist",
        "tau",
        "ee",
        "kind",
        "params",
        "action",
        "limb",
    ]
) | st.text(max_size=6)
# Requests that stay well-formed enough to reach deep validation; never shutdown.
request_types = st.sampled_from([str(t) for t in REQUEST_TYPES if t != "shutdown"])


@st.composite
def near_valid_maps(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "v": draw(st.sampled_from([2, 2, 2, 0, 1, "2", None])),
        "type": draw(request_types | st.text(max_size=8)),
        "seq": draw(st.integers(0, 2**63 - 1) | scalars),
    }
    if message["type"] == "fault":
        message["kind"] = draw(st.sampled_from(["blockage", "reassemble"]) | scalars)
    message.update(draw(st.dictionaries(field_names, values, max_size=5)))
    if message.get("type") == "shutdown" or (
        message.get("type") == "fault" and message.get("kind") in ("disassembly", "sleep")
    ):
        message["type"] = "ping"
    return message


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300))
def test_random_bytes_get_error_replies(fuzzer: Fuzzer, data: bytes) -> None:
    reply = fuzzer.throw([data])
    if reply["type"] == "error" and reply["code"] == "undecodable":
        assert reply["seq"] == 0


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(message=near_valid_maps())
def test_random_msgpack_maps_get_a_reply_or_an_error_naming_the_problem(
    fuzzer: Fuzzer, message: dict[str, Any]
) -> None:
    reply = fuzzer.throw([msgpack.packb(message)])
    if type(message.get("seq")) is int and message.get("v") == 2:
        assert reply["seq"] == message["seq"]


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(envelope=st.lists(st.binary(max_size=8), max_size=3), data=st.binary(max_size=64))
def test_random_envelopes_come_back_around_the_reply(
    fuzzer: Fuzzer, envelope: list[bytes], data: bytes
) -> None:
    fuzzer.throw([*envelope, data])


@pytest.mark.slow
def test_after_the_fuzz_the_agent_still_serves_and_counted_every_rejection(
    fuzzer: Fuzzer,
) -> None:
    # Whatever else ran before on this agent (``-m slow`` deselects the other fuzz tests),
    # it first takes 600 malformed messages of its own.
    rng = random.Random(7)
    for _ in range(600):
        fuzzer.throw([rng.randbytes(rng.randrange(1, 48))])
    with LimbClient(fuzzer.agent.request_endpoint) as client:
        info = client.describe(timeout_s=5)
        assert sum(fuzzer.counted.values()) >= 600
        assert dict(info.errors_received) == dict(fuzzer.counted)
        assert client.ping(timeout_s=5) > 0
