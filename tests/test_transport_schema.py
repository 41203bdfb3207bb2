from __future__ import annotations

import math
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from limbtree.transport import (
    CommandMode,
    GripperAction,
    Health,
    JointInfo,
    LimbDescription,
    LimbState,
    ProtocolError,
)
from limbtree.transport.endpoint import split_endpoint, state_endpoint
from limbtree.transport.errors import ConfigError
from limbtree.transport.schema import (
    MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    REPLY_TYPES,
    REQUEST_TYPES,
    STATE_KEY,
    ErrorCode,
    MessageType,
    decode,
    description_from_map,
    description_to_map,
    encode,
    error_reply,
    packed_header,
    parse_request,
    request,
    state_from_map,
    state_to_map,
    validate_request,
)

pytestmark = pytest.mark.timeout(60)


def frame(**fields: Any) -> bytes:
    message: dict[str, Any] = {"v": PROTOCOL_VERSION, "seq": 7}
    message.update(fields)
    data: bytes = msgpack.packb(message)
    return data


def rejection(data: bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_request(data)
    return info.value


# --- round trips -----------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
vectors = st.lists(finite, min_size=0, max_size=12).map(tuple)
poses = st.lists(finite, min_size=7, max_size=7).map(tuple)


@st.composite
def states(draw: st.DrawFn) -> LimbState:
    q = draw(vectors)
    return LimbState(
        t=draw(finite),
        q=q,
        dq=draw(vectors),
        ee_poses=draw(st.dictionaries(st.text(max_size=8), poses, max_size=3)),
        effort=draw(st.none() | vectors),
        gripper=draw(st.sampled_from(["open", "closed", "none"])),
        health=Health(draw(st.integers(0, 127))),
        detail=draw(
            st.dictionaries(
                st.text(max_size=5), st.integers(-(2**63), 2**64 - 1) | st.text(), max_size=3
            )
        ),
    )


@settings(max_examples=100, deadline=None)
@given(state=states(), seq=st.integers(0, 2**62), agent_time=finite)
def test_state_survives_an_encode_decode_round_trip(
    state: LimbState, seq: int, agent_time: float
) -> None:
    wire = encode(state_to_map(state, seq=seq, agent_time=agent_time))
    sample = state_from_map(decode(wire))
    assert sample.state == state
    assert sample.seq == seq
    assert sample.agent_time == agent_time


def test_state_map_ors_the_agents_extra_health_bits() -> None:
    state = LimbState(t=0.0, q=(), dq=(), ee_poses={}, health=Health.BLOCKED)
    sample = state_from_map(
        decode(encode(state_to_map(state, seq=1, agent_time=0.0, extra_health=Health.BAD_INPUT)))
    )
    assert sample.state.health == Health.BLOCKED | Health.BAD_INPUT


def test_description_survives_a_round_trip() -> None:
    description = LimbDescription(
        robot="heavy",
        driver="sim",
        joints=(JointInfo("a", -1.0, 1.0, 0.15), JointInfo("b", -2.0, 2.0, 0.15)),
        end_effectors=("tip",),
        command_modes=(CommandMode.JOINT_POSITION, CommandMode.EE_POSE),
        has_gripper=True,
        base_pose=(1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 1.0),
    )
    assert description_from_map(decode(encode(description_to_map(description)))) == description


def test_packed_header_plus_seq_and_state_decodes_as_one_map() -> None:
    body = msgpack.packb({"seq": 3})
    data = packed_header(MessageType.STEP_REPLY, 4) + msgpack.packb(12) + STATE_KEY + body
    assert decode(data) == {"v": 2, "type": "step_reply", "seq": 12, "state": {"seq": 3}}


def test_every_request_type_has_a_reply_type() -> None:
    assert {str(r) for r in REPLY_TYPES.values()} == {f"{t}_reply" for t in REQUEST_TYPES}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"type": "describe"}, {}),
        ({"type": "ping"}, {}),
        ({"type": "shutdown"}, {}),
        ({"type": "step", "t": 2}, {"t": 2.0}),
        ({"type": "gripper", "action": "close"}, {"action": GripperAction.CLOSE}),
        ({"type": "fault", "kind": "blockage"}, {"kind": "blockage", "params": {}}),
        (
            {"type": "fault", "kind": "slowdown", "params": {"factor": 0.5}},
            {"kind": "slowdown", "params": {"factor": 0.5}},
        ),
        (
            {"type": "command", "mode": "joint_position", "q": [1, 2.5]},
            {"mode": CommandMode.JOINT_POSITION, "q": (1.0, 2.5)},
        ),
        (
            {"type": "command", "mode": "ee_pose", "pose": [0, 0, 0, 0, 0, 0, 1], "ee": "tip"},
            {"mode": CommandMode.EE_POSE, "pose": (0, 0, 0, 0, 0, 0, 1.0), "ee": "tip"},
        ),
        (
            {"type": "command", "mode": "ee_twist", "twist": [0.1] * 6},
            {"mode": CommandMode.EE_TWIST, "twist": (0.1,) * 6},
        ),
        (
            {"type": "command", "mode": "joint_torque", "tau": [0.0]},
            {"mode": CommandMode.JOINT_TORQUE, "tau": (0.0,)},
        ),
        ({"type": "command", "mode": "hold", "extra": "ignored"}, {"mode": CommandMode.HOLD}),
    ],
)
def test_valid_requests_parse_into_typed_fields(
    fields: dict[str, Any], expected: dict[str, Any]
) -> None:
    parsed = parse_request(frame(**fields))
    assert parsed.type == fields["type"]
    assert parsed.seq == 7
    assert parsed.fields == expected
    assert all(type(x) is float for v in parsed.fields.values() if type(v) is tuple for x in v)


# --- each validation error --------------------------------------------------------------------


def test_bytes_that_are_not_msgpack_are_undecodable() -> None:
    error = rejection(b"\xc1\x00garbage")
    assert error.code == ErrorCode.UNDECODABLE
    assert error.seq == 0


def test_empty_frame_is_undecodable() -> None:
    assert rejection(b"").code == ErrorCode.UNDECODABLE


def test_trailing_bytes_after_the_map_are_undecodable() -> None:
    assert rejection(frame(type="ping") + b"\x01").code == ErrorCode.UNDECODABLE


def test_a_message_that_is_not_a_map_is_undecodable_and_says_what_it_got() -> None:
    error = rejection(msgpack.packb([1, "ping", 3]))
    assert error.code == ErrorCode.UNDECODABLE
    assert "map" in str(error) and "array" in str(error)


def test_non_string_map_keys_are_undecodable() -> None:
    assert rejection(msgpack.packb({1: 2})).code == ErrorCode.UNDECODABLE


def test_invalid_utf8_is_undecodable() -> None:
    data = b"\x81\xa4type\xa2\xff\xfe"
    assert rejection(data).code == ErrorCode.UNDECODABLE


def test_msgpack_extension_types_are_refused() -> None:
    data = msgpack.packb({"v": 2, "type": "ping", "seq": 1, "x": msgpack.ExtType(5, b"abc")})
    error = rejection(data)
    assert error.code == ErrorCode.UNDECODABLE
    assert "extension" in str(error)


def test_deeply_nested_input_is_undecodable_not_a_crash() -> None:
    data = b"\x91" * 100_000 + b"\x00"
    assert rejection(data).code in {ErrorCode.UNDECODABLE, ErrorCode.TOO_LARGE}


def test_oversized_message_is_too_large_and_names_the_limit() -> None:
    data = frame(type="ping", pad="x" * MAX_MESSAGE_BYTES)
    error = rejection(data)
    assert error.code == ErrorCode.TOO_LARGE
    assert str(MAX_MESSAGE_BYTES) in str(error)


def test_wrong_version_names_both_versions() -> None:
    error = rejection(msgpack.packb({"v": 99, "type": "ping", "seq": 4}))
    assert error.code == ErrorCode.BAD_VERSION
    assert "99" in str(error) and str(PROTOCOL_VERSION) in str(error)
    assert error.seq == 4


def test_missing_version_is_a_bad_field_named_v() -> None:
    error = rejection(msgpack.packb({"type": "ping", "seq": 4}))
    assert (error.code, error.field) == (ErrorCode.BAD_FIELD, "v")


def test_unknown_type_lists_the_valid_request_types() -> None:
    error = rejection(frame(type="dance"))
    assert error.code == ErrorCode.UNKNOWN_TYPE
    assert error.seq == 7
    for name in REQUEST_TYPES:
        assert str(name) in str(error)


def test_a_reply_type_sent_to_an_agent_is_an_unknown_type() -> None:
    assert rejection(frame(type="state")).code == ErrorCode.UNKNOWN_TYPE


@pytest.mark.parametrize(
    ("fields", "field", "expected_words"),
    [
        ({"type": "ping", "seq": "7"}, "seq", "int"),
        ({"type": "ping", "seq": True}, "seq", "int"),
        ({"type": 3}, "type", "string"),
        ({"type": "step"}, "t", "missing"),
        ({"type": "step", "t": "soon"}, "t", "number"),
        ({"type": "step", "t": True}, "t", "number"),
        ({"type": "command"}, "mode", "missing"),
        ({"type": "command", "mode": 1}, "mode", "string"),
        ({"type": "command", "mode": "joint_position"}, "q", "missing"),
        ({"type": "command", "mode": "joint_position", "q": 1.0}, "q", "array"),
        ({"type": "command", "mode": "joint_position", "q": [1.0, "a"]}, "q", "index 1"),
        ({"type": "command", "mode": "joint_position", "q": [False]}, "q", "bool"),
        ({"type": "command", "mode": "ee_pose", "pose": [0.0] * 6}, "pose", "7 numbers"),
        ({"type": "command", "mode": "ee_pose", "pose": [0.0] * 7, "ee": 5}, "ee", "string"),
        ({"type": "command", "mode": "ee_twist", "twist": [0.0] * 7}, "twist", "6 numbers"),
        ({"type": "command", "mode": "joint_torque", "tau": {}}, "tau", "array"),
        ({"type": "fault"}, "kind", "missing"),
        ({"type": "fault", "kind": "x", "params": [1]}, "params", "map"),
        ({"type": "gripper", "action": None}, "action", "missing"),
    ],
)
def test_wrongly_typed_fields_are_bad_fields_naming_field_and_expected_type(
    fields: dict[str, Any], field: str, expected_words: str
) -> None:
    error = rejection(frame(**fields))
    assert error.code == ErrorCode.BAD_FIELD
    assert error.field == field
    assert field in str(error)
    assert expected_words in str(error)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"type": "step", "t": math.nan}, "t"),
        ({"type": "step", "t": -1.0}, "t"),
        ({"type": "command", "mode": "joint_position", "q": [0.0, math.inf]}, "q"),
        ({"type": "command", "mode": "fly"}, "mode"),
        ({"type": "gripper", "action": "squeeze"}, "action"),
    ],
)
def test_well_typed_but_unusable_values_are_bad_values(fields: dict[str, Any], field: str) -> None:
    error = rejection(frame(**fields))
    assert (error.code, error.field) == (ErrorCode.BAD_VALUE, field)


def test_unknown_mode_error_lists_the_valid_modes() -> None:
    error = rejection(frame(type="command", mode="fly"))
    for mode in CommandMode:
        assert mode.value in str(error)


def test_huge_but_finite_joint_values_are_accepted() -> None:
    parsed = parse_request(frame(type="command", mode="joint_position", q=[1e308, 1e308]))
    assert parsed.fields["q"] == (1e308, 1e308)


def test_error_reply_carries_code_message_field_and_seq() -> None:
    reply = decode(encode(error_reply(9, ErrorCode.BAD_FIELD, "q is wrong", "q")))
    assert reply == {
        "v": 2,
        "type": "error",
        "seq": 9,
        "code": "bad_field",
        "message": "q is wrong",
        "field": "q",
    }


def test_request_builder_makes_a_message_the_parser_accepts() -> None:
    data = encode(request(MessageType.STEP, 5, t=0.25))
    assert parse_request(data).fields == {"t": 0.25}


def test_malformed_state_maps_are_rejected_naming_the_field() -> None:
    good = state_to_map(
        LimbState(t=0.0, q=(1.0,), dq=(0.0,), ee_poses={"tip": (0.0,) * 7}), seq=1, agent_time=0
    )
    for name, bad in [("q", "x"), ("ee", []), ("health", -1), ("gripper", 3), ("seq", 1.5)]:
        broken = decode(encode({**good, name: bad}))
        with pytest.raises(ProtocolError) as info:
            state_from_map(broken)
        assert info.value.field == name


# --- endpoints ---------------------------------------------------------------------------------


def test_state_endpoint_is_the_next_port_on_the_same_host() -> None:
    assert state_endpoint("tcp://10.0.0.2:5555") == "tcp://10.0.0.2:5556"
    assert split_endpoint("tcp://*:7000") == ("*", 7000)


@pytest.mark.parametrize(
    "endpoint", ["ipc:///tmp/x", "tcp://host", "tcp://:5", "tcp://h:abc", "tcp://h:65535"]
)
def test_malformed_endpoints_are_config_errors(endpoint: str) -> None:
    with pytest.raises(ConfigError):
        split_endpoint(endpoint)


_SCALARS = st.one_of(
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["step", "ping", "2", ""]),
)


@settings(max_examples=400, deadline=None)
@given(
    v=st.just(PROTOCOL_VERSION) | _SCALARS,
    mtype=st.just("step") | _SCALARS,
    seq=st.integers(0, 2**40) | _SCALARS,
    t=st.floats(-1.0, 1e9) | _SCALARS,
)
def test_a_bare_step_reads_the_same_on_the_short_path_as_field_by_field(
    v: Any, mtype: Any, seq: Any, t: Any
) -> None:
    # parse_request takes four-field steps on a shorter path: it must accept and refuse
    # exactly what the field-by-field checks do, with the same result or error.
    obj = {"v": v, "type": mtype, "seq": seq, "t": t}
    frame = msgpack.packb(obj)

    def outcome(parse: Any) -> Any:
        try:
            request = parse()
        except ProtocolError as exc:
            return ("error", exc.code, str(exc), exc.seq, exc.field)
        return ("ok", request.type, request.seq, request.fields)

    short = outcome(lambda: parse_request(frame))
    long = outcome(lambda: validate_request(msgpack.unpackb(frame, use_list=False)))
    assert short == long
