"""The limb agent wire protocol: message types, error codes, encoding and validation.

Every message is one msgpack map with at least ``v`` (protocol version, int), ``type`` (str) and
``seq`` (int). ``docs/protocol.md`` is the reference for people writing clients in other
languages; this module is its executable form. Nothing here does I/O.

Decoding is safe for untrusted bytes: size is checked before unpacking, strings must be UTF-8,
map keys must be strings, msgpack extension types are refused, and nothing is ever unpickled.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import msgpack

from limbtree.transport.deadline import DEADLINE_FIELD, MAX_COMMAND_DEADLINE_S
from limbtree.transport.driver import (
    CommandMode,
    GripperAction,
    Health,
    JointInfo,
    LimbDescription,
    LimbState,
)
from limbtree.transport.errors import ProtocolError
from limbtree.transport.faults import FaultKind as FaultKind  # re-exported: the wire names it
from limbtree.transport.plant import BaseState, PlantDescription, PlantLimb

PROTOCOL_VERSION: Final = 2
"""The protocol version this code speaks (wire field ``v``)."""

SUPPORTED_VERSIONS: Final = (PROTOCOL_VERSION,)
"""Every protocol version an agent answers; a ``bad_version`` error reply lists them."""

MAX_MESSAGE_BYTES: Final = 64 * 1024
"""Largest message an agent accepts [bytes]; a larger one gets a ``too_large`` error reply."""

MAX_FRAME_BYTES: Final = 1024 * 1024
"""Largest ZeroMQ message the sockets accept at all [bytes] (``ZMQ_MAXMSGSIZE``).

A peer that sends more is disconnected by ZeroMQ without a reply (it reconnects by itself);
this keeps a hostile peer from making the agent allocate without bound.
"""

MAX_NESTING_DEPTH: Final = 32
#: The field of a ``step`` request that carries the client's commands (docs/protocol.md 5.4).
COMMANDS_FIELD: Final = "commands"
#: The field of a ``step_reply`` listing the carried commands that were refused.
COMMAND_ERRORS_FIELD: Final = "command_errors"
#: At most this many commands ride on one ``step``.
MAX_STEP_COMMANDS: Final = 1024
"""Deepest nesting of maps and arrays in a request; the message map itself is level 1."""

QUATERNION_TOLERANCE: Final = 1e-6
"""How far from 1 the norm of a pose's quaternion may be (as ``limbtree.kinematics.Pose``)."""

MAX_ENVELOPE_FRAMES: Final = 8
"""Most envelope frames (between the routing identity and the message) an agent echoes back."""


class MessageType(StrEnum):
    """The ``type`` field of every message."""

    DESCRIBE = "describe"
    PING = "ping"
    COMMAND = "command"
    STEP = "step"
    FAULT = "fault"
    GRIPPER = "gripper"
    SHUTDOWN = "shutdown"
    RELEASE = "release"
    """The commander gives up its command of a limb (section 5.3 of the protocol)."""
    CLAIM = "claim"
    """A client becomes a limb's commander without commanding it (section 5.9)."""
    DESCRIBE_REPLY = "describe_reply"
    PING_REPLY = "ping_reply"
    COMMAND_REPLY = "command_reply"
    STEP_REPLY = "step_reply"
    FAULT_REPLY = "fault_reply"
    GRIPPER_REPLY = "gripper_reply"
    SHUTDOWN_REPLY = "shutdown_reply"
    RELEASE_REPLY = "release_reply"
    CLAIM_REPLY = "claim_reply"
    ERROR = "error"
    """The reply to any request the agent refused; see :class:`ErrorCode`."""
    STATE = "state"
    """A state sample on the state stream (PUB socket, port N+1)."""


REQUEST_TYPES: Final = (
    MessageType.DESCRIBE,
    MessageType.PING,
    MessageType.COMMAND,
    MessageType.STEP,
    MessageType.FAULT,
    MessageType.GRIPPER,
    MessageType.SHUTDOWN,
    MessageType.RELEASE,
    MessageType.CLAIM,
)
"""The message types a client may send to an agent."""

REPLY_TYPES: Final[Mapping[MessageType, MessageType]] = MappingProxyType(
    {request: MessageType(f"{request}_reply") for request in REQUEST_TYPES}
)
"""Request type -> the type of its successful reply."""


#: How long a client that commanded a limb stays its only commander after its last command
#: or gripper action [s] (the agent's clock; another client's are refused meanwhile): this,
#: or 2.5 times the interval between its last two commands when that is longer (a slow
#: client), up to :data:`COMMANDER_LEASE_MAX_S`.
COMMANDER_LEASE_S: Final = 1.0
#: The longest lease [s].
COMMANDER_LEASE_MAX_S: Final = 10.0
#: The most a ``step`` may advance a plant [s of sim time]: a plant steps its physics
#: substep by substep, and one step far ahead would keep its agent from answering anyone.
MAX_STEP_SPAN_S: Final = 60.0


class ErrorCode(StrEnum):
    """The ``code`` field of ``error`` replies."""

    UNDECODABLE = "undecodable"
    """Not one msgpack map: bad msgpack, trailing bytes, invalid UTF-8, non-string map keys,
    extension types, or a top-level value that is not a map."""
    TOO_LARGE = "too_large"
    """The message is longer than :data:`MAX_MESSAGE_BYTES`."""
    BAD_VERSION = "bad_version"
    """``v`` is not the agent's protocol version."""
    UNKNOWN_TYPE = "unknown_type"
    """``type`` names no request; the message lists the valid ones."""
    BAD_FIELD = "bad_field"
    """A field is missing or has the wrong type or length; ``field`` names it."""
    BAD_VALUE = "bad_value"
    """A field has the right type but a value the agent cannot use: NaN or infinity, an
    unknown command mode or gripper action, a joint vector of the wrong length, an unknown
    end-effector, a step back in time."""
    WRONG_CLOCK = "wrong_clock"
    """``step`` sent to an agent running the real clock."""
    UNAVAILABLE = "unavailable"
    """The limb is disassembled (sim clock only; in the real clock the agent stays silent)."""
    UNSUPPORTED_MODE = "unsupported_mode"
    """The limb does not accept this command mode, or has no gripper."""
    IK_FAILED = "ik_failed"
    """No IK solution for an ``ee_pose`` command; the limb did not move."""
    UNKNOWN_LIMB = "unknown_limb"
    """``limb`` names no limb of the agent's plant, or is missing on an agent serving several
    limbs; the message lists the agent's limbs."""
    NOT_SIMULATED = "not_simulated"
    """``fault`` sent to a hardware limb."""
    UNKNOWN_FAULT = "unknown_fault"
    """The driver does not know this fault kind."""
    INTERNAL = "internal"
    """The driver raised something unexpected; the agent logged it and goes on serving."""
    COMMANDED_ELSEWHERE = "commanded_elsewhere"
    """A command (or gripper action) for a limb that another client commanded within the
    last :data:`COMMANDER_LEASE_S` (or longer, for a slow one): one limb takes one commander
    at a time."""
    SHUTDOWN_REFUSED = "shutdown_refused"
    """``shutdown`` without the agent's owner token, to an agent started without
    ``--allow-remote-shutdown``."""


#: The errors that count as bad input (``errors_received``, the BAD_INPUT health bit):
#: requests the agent rejected as malformed. A well-formed request refused for what it asks
#: (another client commands the limb, ...) is not counted.
COUNTED_ERRORS: Final = frozenset(
    {
        ErrorCode.UNDECODABLE,
        ErrorCode.TOO_LARGE,
        ErrorCode.BAD_VERSION,
        ErrorCode.UNKNOWN_TYPE,
        ErrorCode.BAD_FIELD,
        ErrorCode.BAD_VALUE,
        ErrorCode.UNKNOWN_LIMB,
        ErrorCode.WRONG_CLOCK,
        ErrorCode.UNSUPPORTED_MODE,
    }
)


class Request(NamedTuple):
    """A decoded and validated request.

    Attributes:
        type: one of :data:`REQUEST_TYPES`.
        seq: the client's sequence number, echoed in the reply.
        fields: the validated fields: numbers as float, number arrays as tuples of float,
            ``mode`` as :class:`CommandMode`, ``action`` as :class:`GripperAction`. A fresh
            dict the caller may consume.
    """

    type: MessageType
    seq: int
    fields: dict[str, Any]


# --------------------------------------------------------------------------------------------
# Decoding


def _refuse_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"msgpack extension type {code} is not part of this protocol")


def unpack(frame: bytes) -> Any:
    """Unpack msgpack bytes the protocol's way.

    UTF-8 strings, string map keys, tuples for arrays, no extension types. Raises what msgpack
    raises; :func:`decode` turns that into protocol errors.
    """
    return msgpack.unpackb(
        frame, raw=False, strict_map_key=True, use_list=False, ext_hook=_refuse_ext
    )


def decode(frame: bytes, *, max_bytes: int = MAX_MESSAGE_BYTES) -> dict[str, Any]:
    """Decode one message frame into its map, checking only the size and the encoding.

    Args:
        frame: the raw frame.
        max_bytes: the size limit [bytes].

    Returns:
        The top-level map (string keys).

    Raises:
        ProtocolError: ``too_large`` or ``undecodable``.
    """
    if len(frame) > max_bytes:
        raise ProtocolError(
            ErrorCode.TOO_LARGE,
            f"message of {len(frame)} bytes is larger than the limit of {max_bytes} bytes",
        )
    try:
        obj = unpack(frame)
    except msgpack.StackError:  # msgpack's own limit (1024) is far beyond ours
        raise ProtocolError(
            ErrorCode.UNDECODABLE,
            f"nesting deeper than the limit of {MAX_NESTING_DEPTH} levels "
            "(the message map is level 1)",
        ) from None
    except msgpack.ExtraData as exc:
        raise ProtocolError(
            ErrorCode.UNDECODABLE,
            f"{len(exc.extra)} bytes after the message's map: a frame holds one msgpack map, "
            "nothing after it",
        ) from None
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        lenient = _read_leniently(frame)
        if lenient is not None:  # a map, refused for a key or an extension type inside:
            check_plain(lenient)  # named there, with the message's seq and field
        why = str(exc) or type(exc).__name__
        if isinstance(exc, msgpack.FormatError):  # (its text is empty)
            why = "a value starts with 0xc1, a byte msgpack never uses (is it msgpack at all?)"
        raise ProtocolError(ErrorCode.UNDECODABLE, f"not valid msgpack: {why}") from None
    if type(obj) is not dict:
        raise ProtocolError(
            ErrorCode.UNDECODABLE,
            f"a message must be one msgpack map, got {_wire_type_name(obj)}",
        )
    return obj


def _read_leniently(frame: bytes) -> dict[Any, Any] | None:
    """A refused frame's map, read with any map keys and extension types, or None.

    msgpack refuses a non-string key or an extension type before ``seq`` is read; read
    again this way, :func:`check_plain` names what it is and where, with the ``seq``.
    """
    try:
        obj = msgpack.unpackb(frame, raw=False, strict_map_key=False, use_list=False)
    except Exception:  # (not msgpack at all: nothing more to say)
        return None
    return obj if type(obj) is dict else None


def check_header(obj: Mapping[str, Any]) -> tuple[str, int]:
    """Check ``v``, ``seq`` and ``type`` of a decoded message.

    Args:
        obj: the decoded map.

    Returns:
        ``(type, seq)``; ``type`` is any string, not yet checked against the known types.

    Raises:
        ProtocolError: ``bad_version`` or ``bad_field``; its ``seq`` is the message's when it
            could be read, else 0.
    """
    seq = obj.get("seq")
    seq_ok = type(seq) is int
    seq_echo: int = seq if seq_ok else 0  # type: ignore[assignment]
    v = obj.get("v")
    if type(v) is not int:
        raise _field_error("v", "an int (the protocol version)", v, "message", seq_echo)
    if v not in SUPPORTED_VERSIONS:
        speaks = ", ".join(str(version) for version in SUPPORTED_VERSIONS)
        raise ProtocolError(
            ErrorCode.BAD_VERSION,
            f"protocol version {v} is not supported: this side speaks version {speaks} "
            "(see docs/protocol.md)",
            seq=seq_echo,
            field="v",
        )
    if not seq_ok:
        raise _field_error("seq", "an int", seq, "message", 0)
    mtype = obj.get("type")
    if type(mtype) is not str:
        raise _field_error("type", "a string", mtype, "message", seq_echo)
    return mtype, seq_echo


def parse_request(frame: bytes) -> Request:
    """Decode and validate one request frame.

    Args:
        frame: the raw message frame.

    Returns:
        The validated request.

    Raises:
        ProtocolError: with the wire code of the first problem found.
    """
    obj = decode(frame)
    if len(obj) == 4:  # the lockstep's usual request: a bare step, checked in fewer steps
        t = obj.get("t")
        seq = obj.get("seq")
        if (
            type(t) is float
            and type(seq) is int
            and obj.get("type") == "step"
            and type(obj.get("v")) is int
            and obj["v"] == PROTOCOL_VERSION
            and 0.0 <= t < math.inf
        ):
            # Four scalars under the four string keys: nothing to walk (check_plain) and
            # nothing the field-by-field path would convert.
            return Request(MessageType.STEP, seq, {"t": t})
    check_plain(obj)
    return validate_request(obj)


def check_plain(obj: dict[str, Any]) -> None:
    """Check a decoded request all the way down: string map keys, no timestamps, bounded depth.

    msgpack decodes binary map keys and the timestamp extension (type -1) without calling
    the extension hook; this refuses them wherever they are (and, in a frame :func:`decode`
    read again leniently, other keys and extension types), and any nesting deeper than
    :data:`MAX_NESTING_DEPTH` levels (the message map is level 1). Only requests are walked:
    the agent's own replies and states are trusted by its clients.

    Args:
        obj: the decoded message map.

    Raises:
        ProtocolError: ``undecodable``, naming the top-level field it is under.
    """
    stack: list[tuple[object, int, str]] = [(obj, 1, "")]
    pop = stack.pop
    push = stack.append
    while stack:
        node, depth, top = pop()
        if type(node) is dict:
            for key in node:
                if type(key) is not str:
                    raise _not_plain(
                        obj, top, f"a map key is {_wire_type_name(key)}; map keys must be strings"
                    )
            values: Any = node.items() if depth == 1 else ((top, v) for v in node.values())
        else:
            values = ((top, v) for v in node)  # type: ignore[attr-defined]
        for where, value in values:
            tv = type(value)
            if tv is dict or tv is tuple:
                if depth >= MAX_NESTING_DEPTH:
                    raise _not_plain(
                        obj,
                        where,
                        f"nesting deeper than the limit of {MAX_NESTING_DEPTH} levels "
                        "(the message map is level 1)",
                    )
                push((value, depth + 1, where))
            elif tv is msgpack.Timestamp:
                raise _not_plain(
                    obj,
                    where,
                    "a msgpack timestamp (extension type -1) is not part of this protocol",
                )
            elif tv is msgpack.ExtType:  # (only in a frame read leniently, see decode)
                raise _not_plain(
                    obj, where, f"msgpack extension type {value.code} is not part of this protocol"
                )


def _not_plain(obj: dict[str, Any], top: str, problem: str) -> ProtocolError:
    seq = obj.get("seq")
    where = f" (under field {top!r})" if top else ""
    return ProtocolError(
        ErrorCode.UNDECODABLE,
        f"{problem}{where}",
        seq=seq if type(seq) is int else 0,
        field=top or None,
    )


def validate_request(obj: dict[str, Any]) -> Request:
    """Validate a decoded request map (what :func:`parse_request` does after decoding).

    Args:
        obj: the decoded map; arrays must be tuples, as :func:`decode` makes them.

    Returns:
        The validated request.

    Raises:
        ProtocolError: with the wire code of the first problem found.
    """
    mtype, seq = check_header(obj)
    parser = _REQUEST_PARSERS.get(mtype)
    if parser is None:
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"unknown message type {mtype!r}: valid request types are {_VALID_REQUESTS}",
            seq=seq,
            field="type",
        )
    return parser(obj, seq)


# --------------------------------------------------------------------------------------------
# Field checks. Each takes the value, the field name and where it is (for messages), and
# returns the value converted (int -> float, arrays -> tuples).


def _wire_type_name(value: object) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes):
        return "bin"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _field_error(name: str, expected: str, value: object, where: str, seq: int) -> ProtocolError:
    if value is None:
        message = f"{where} is missing field {name!r} ({expected})"
    else:
        message = f"field {name!r} of {where} must be {expected}, got {_wire_type_name(value)}"
    return ProtocolError(ErrorCode.BAD_FIELD, message, seq=seq, field=name)


def _number(value: object, name: str, where: str, seq: int) -> float:
    tv = type(value)
    if tv is float:
        if math.isfinite(value):  # type: ignore[arg-type]
            return value  # type: ignore[return-value]
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"field {name!r} of {where} is {value}, not finite",
            seq=seq,
            field=name,
        )
    if tv is int:
        return float(value)  # type: ignore[arg-type]
    raise _field_error(name, "a number (int or float)", value, where, seq)


_NUMBER_TYPES: Final = frozenset({float, int})


def _numbers(
    value: object, name: str, where: str, seq: int, length: int | None = None
) -> tuple[float, ...]:
    # Fast path: a list of finite floats (what msgpack decodes) of the right length. The sum
    # is finite exactly when every element is, unless huge finite values overflow it; the
    # slow path below then decides element by element.
    if type(value) is tuple and (length is None or len(value) == length):
        kinds = set(map(type, value))
        if kinds <= _NUMBER_TYPES and math.isfinite(sum(value)):
            return value if int not in kinds else tuple(map(float, value))  # type: ignore[return-value]
    return _numbers_checked(value, name, where, seq, length)


def _numbers_checked(
    value: object, name: str, where: str, seq: int, length: int | None
) -> tuple[float, ...]:
    if type(value) is not tuple or (length is not None and len(value) != length):
        expected = f"an array of {length} numbers" if length else "an array of numbers"
        if type(value) is tuple:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"field {name!r} of {where} must be {expected}, got {len(value)} values",
                seq=seq,
                field=name,
            )
        raise _field_error(name, expected, value, where, seq)
    for i, x in enumerate(value):
        tx = type(x)
        if tx is float:
            if not math.isfinite(x):
                raise ProtocolError(
                    ErrorCode.BAD_VALUE,
                    f"field {name!r} of {where} has {x} at index {i}, not finite",
                    seq=seq,
                    field=name,
                )
        elif tx is not int:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"field {name!r} of {where} must be an array of numbers, "
                f"got {_wire_type_name(x)} at index {i}",
                seq=seq,
                field=name,
            )
    return tuple(map(float, value))


def _string(value: object, name: str, where: str, seq: int) -> str:
    if type(value) is str:
        return value
    raise _field_error(name, "a string", value, where, seq)


def _choice(value: object, name: str, where: str, seq: int, enum: type[StrEnum], valid: str) -> Any:
    if type(value) is not str:
        raise _field_error(name, f"a string, one of {valid}", value, where, seq)
    try:
        return enum(value)
    except ValueError:
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"field {name!r} of {where} is {value!r}; valid values are {valid}",
            seq=seq,
            field=name,
        ) from None


# --------------------------------------------------------------------------------------------
# Requests


def _parse_empty(mtype: MessageType) -> Callable[[dict[str, Any], int], Request]:
    def parse(obj: dict[str, Any], seq: int) -> Request:
        return Request(mtype, seq, {})

    return parse


_MODES = ", ".join(m.value for m in CommandMode)
_ACTIONS = ", ".join(a.value for a in GripperAction)
_VALID_REQUESTS = ", ".join(sorted(t.value for t in REQUEST_TYPES))


def _limb(obj: dict[str, Any], fields: dict[str, Any], where: str, seq: int) -> dict[str, Any]:
    """Add the ``limb`` field to ``fields`` when the message has one (a limb's name)."""
    limb = obj.get("limb")
    if limb is None:
        return fields
    if type(limb) is not str:
        raise _field_error("limb", "a string (the limb's name)", limb, where, seq)
    fields["limb"] = limb
    return fields


def _parse_command(obj: dict[str, Any], seq: int) -> Request:
    mode: CommandMode = _choice(obj.get("mode"), "mode", "command", seq, CommandMode, _MODES)
    where = f"command({mode.value})"
    fields: dict[str, Any] = _limb(obj, {"mode": mode}, "command", seq)
    if mode is CommandMode.JOINT_POSITION:
        fields["q"] = _numbers(obj.get("q"), "q", where, seq)
    elif mode is CommandMode.EE_POSE:
        pose = _numbers(obj.get("pose"), "pose", where, seq, 7)
        if obj.get("ee") is not None:  # nil means missing
            fields["ee"] = _string(obj["ee"], "ee", where, seq)
        fields["pose"] = _unit_quaternion(pose, "pose", where, seq)
    elif mode is CommandMode.EE_TWIST:
        fields["twist"] = _numbers(obj.get("twist"), "twist", where, seq, 6)
        if obj.get("ee") is not None:
            fields["ee"] = _string(obj["ee"], "ee", where, seq)
        _deadline(obj, fields, where, seq)
    elif mode is CommandMode.JOINT_TORQUE:
        fields["tau"] = _numbers(obj.get("tau"), "tau", where, seq)
        _deadline(obj, fields, where, seq)
    elif mode is CommandMode.IMPEDANCE:
        fields["frame"] = _string(obj.get("frame"), "frame", where, seq)
        goal = obj.get("goal")
        fields["goal"] = (
            None
            if goal is None
            else _unit_quaternion(_numbers(goal, "goal", where, seq, 7), "goal", where, seq)
        )
        gains = obj.get("gains")
        if gains is not None:
            fields["gains"] = _gains(gains, where, seq)
    elif mode is CommandMode.LATCH:
        fields["end"] = _string(obj.get("end"), "end", where, seq)
        engage = obj.get("engage")
        if type(engage) is not bool:
            raise _field_error("engage", "a bool", engage, where, seq)
        fields["engage"] = engage
    return Request(MessageType.COMMAND, seq, fields)


#: The gains an ``impedance`` command may set (seed 003 eq. 8), all >= 0.
IMPEDANCE_GAINS: Final = (
    "k_n_per_m",
    "k_nm_per_rad",
    "d_ns_per_m",
    "d_nms_per_rad",
    "null_nms_per_rad",
)


def _gains(value: object, where: str, seq: int) -> dict[str, float]:
    """The ``gains`` map of an ``impedance`` command: known names, numbers >= 0."""
    if type(value) is not dict:
        raise _field_error("gains", "a map of gain name -> number", value, where, seq)
    gains: dict[str, float] = {}
    for key, raw in value.items():
        if key not in IMPEDANCE_GAINS:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"field 'gains' of {where} has {key!r}; valid gains are "
                f"{', '.join(IMPEDANCE_GAINS)}",
                seq=seq,
                field="gains",
            )
        number = _number(raw, f"gains.{key}", where, seq)
        if number < 0.0:
            raise ProtocolError(
                ErrorCode.BAD_VALUE,
                f"gain {key!r} of {where} is {number}; gains must be >= 0",
                seq=seq,
                field="gains",
            )
        gains[key] = number
    return gains


def _unit_quaternion(pose: tuple[float, ...], name: str, where: str, seq: int) -> tuple[float, ...]:
    """``pose`` (7 numbers ``[x, y, z, qx, qy, qz, qw]``) if its quaternion has norm 1."""
    norm = math.sqrt(sum(v * v for v in pose[3:]))
    if abs(norm - 1.0) > QUATERNION_TOLERANCE:
        quaternion = ", ".join(f"{v:g}" for v in pose[3:])
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"field {name!r} of {where} has quaternion [{quaternion}] of norm {norm:.9g}; "
            "give a unit quaternion (qx, qy, qz, qw), scalar last",
            seq=seq,
            field=name,
        )
    return pose


def _deadline(obj: dict[str, Any], fields: dict[str, Any], where: str, seq: int) -> None:
    """Add the optional ``deadline_s`` of an ``ee_twist`` or ``joint_torque`` command."""
    value = obj.get(DEADLINE_FIELD)
    if value is None:
        return
    deadline_s = _number(value, DEADLINE_FIELD, where, seq)
    if not 0.0 < deadline_s <= MAX_COMMAND_DEADLINE_S:
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"field {DEADLINE_FIELD!r} of {where} is {deadline_s} s; it must be > 0 s and "
            f"<= {MAX_COMMAND_DEADLINE_S:g} s",
            seq=seq,
            field=DEADLINE_FIELD,
        )
    fields[DEADLINE_FIELD] = deadline_s


def _parse_step(obj: dict[str, Any], seq: int) -> Request:
    t = _number(obj.get("t"), "t", "step", seq)
    if t < 0.0:
        raise ProtocolError(
            ErrorCode.BAD_VALUE, f"field 't' of step is {t} s; it must be >= 0", seq=seq, field="t"
        )
    raw = obj.get(COMMANDS_FIELD)
    if raw is None:  # missing or nil: no commands ride on this step
        return Request(MessageType.STEP, seq, {"t": t})
    if type(raw) is not tuple:
        raise _field_error(COMMANDS_FIELD, "an array of command messages", raw, "step", seq)
    if len(raw) > MAX_STEP_COMMANDS:
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"field {COMMANDS_FIELD!r} of step holds {len(raw)} commands; at most "
            f"{MAX_STEP_COMMANDS}",
            seq=seq,
            field=COMMANDS_FIELD,
        )
    return Request(MessageType.STEP, seq, {"t": t, COMMANDS_FIELD: [_step_command(c) for c in raw]})


def _step_command(obj: object) -> Request | ProtocolError:
    """One command carried by a step: the request, or why it is refused (the step goes on)."""
    try:
        if type(obj) is not dict:
            raise ProtocolError(
                ErrorCode.BAD_FIELD,
                f"each of a step's {COMMANDS_FIELD!r} must be a command message (a map), "
                f"not {_wire_type_name(obj)}",
                field=COMMANDS_FIELD,
            )
        mtype, seq = check_header(obj)
        if mtype != MessageType.COMMAND.value:
            raise ProtocolError(
                ErrorCode.UNKNOWN_TYPE,
                f"a step carries only command messages, not {mtype!r}",
                seq=seq,
                field="type",
            )
        return _parse_command(obj, seq)
    except ProtocolError as exc:
        return exc


def _parse_fault(obj: dict[str, Any], seq: int) -> Request:
    kind = _string(obj.get("kind"), "kind", "fault", seq)
    params = obj.get("params")
    if params is None:  # missing or nil: no parameters
        params = {}
    if type(params) is not dict:
        raise _field_error("params", "a map (string keys)", params, "fault", seq)
    return Request(
        MessageType.FAULT, seq, _limb(obj, {"kind": kind, "params": params}, "fault", seq)
    )


def _parse_gripper(obj: dict[str, Any], seq: int) -> Request:
    action = _choice(obj.get("action"), "action", "gripper", seq, GripperAction, _ACTIONS)
    return Request(MessageType.GRIPPER, seq, _limb(obj, {"action": action}, "gripper", seq))


def _parse_shutdown(obj: dict[str, Any], seq: int) -> Request:
    token = obj.get("token")
    fields: dict[str, Any] = {}
    if token is not None:  # nil means missing
        fields["token"] = _string(token, "token", "shutdown", seq)
    return Request(MessageType.SHUTDOWN, seq, fields)


def _parse_release(obj: dict[str, Any], seq: int) -> Request:
    return Request(MessageType.RELEASE, seq, _limb(obj, {}, "release", seq))


def _parse_claim(obj: dict[str, Any], seq: int) -> Request:
    return Request(MessageType.CLAIM, seq, _limb(obj, {}, "claim", seq))


_REQUEST_PARSERS: Final[Mapping[str, Callable[[dict[str, Any], int], Request]]] = MappingProxyType(
    {
        MessageType.DESCRIBE.value: _parse_empty(MessageType.DESCRIBE),
        MessageType.PING.value: _parse_empty(MessageType.PING),
        MessageType.SHUTDOWN.value: _parse_shutdown,
        MessageType.COMMAND.value: _parse_command,
        MessageType.STEP.value: _parse_step,
        MessageType.FAULT.value: _parse_fault,
        MessageType.GRIPPER.value: _parse_gripper,
        MessageType.RELEASE.value: _parse_release,
        MessageType.CLAIM.value: _parse_claim,
    }
)


# --------------------------------------------------------------------------------------------
# Encoding


def _plain(obj: object) -> object:
    """Msgpack ``default`` hook: numpy arrays and scalars, other mappings and sequences."""
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return tolist()
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, Sequence) and not isinstance(obj, str | bytes):
        return list(obj)
    raise TypeError(f"cannot encode {type(obj).__name__} in a limbtree message")


def make_packer() -> msgpack.Packer:
    """A msgpack packer set up for this protocol (one per socket owner; not thread-safe)."""
    return msgpack.Packer(use_bin_type=True, default=_plain)


def encode(message: Mapping[str, Any]) -> bytes:
    """Encode one message map.

    Args:
        message: the map; values may be plain Python data, tuples, or numpy arrays.

    Returns:
        The msgpack bytes.

    Raises:
        TypeError: when a value cannot be encoded.
    """
    data: bytes = msgpack.packb(message, use_bin_type=True, default=_plain)
    return data


def request(mtype: MessageType | str, seq: int, **fields: Any) -> dict[str, Any]:
    """Build a request map (not validated: :func:`parse_request` is what agents run).

    Args:
        mtype: the request type.
        seq: the client's sequence number.
        **fields: the request's fields.

    Returns:
        The map, ready for :func:`encode`.
    """
    message: dict[str, Any] = {"v": PROTOCOL_VERSION, "type": str(mtype), "seq": seq}
    message.update(fields)
    return message


def error_reply(seq: int, code: str, message: str, field: str | None = None) -> dict[str, Any]:
    """Build an ``error`` reply map.

    Args:
        seq: the request's sequence number (0 when it could not be read).
        code: the :class:`ErrorCode` value (or a driver's code).
        message: what was wrong, for a person.
        field: the offending field, when there is one.

    Returns:
        The map.
    """
    reply: dict[str, Any] = {
        "v": PROTOCOL_VERSION,
        "type": MessageType.ERROR.value,
        "seq": seq,
        "code": str(code),
        "message": message,
    }
    if field is not None:
        reply["field"] = field
    return reply


# --------------------------------------------------------------------------------------------
# State


def state_to_map(
    state: LimbState, *, seq: int, agent_time: float, session: int = 0, extra_health: int = 0
) -> dict[str, Any]:
    """Encode a state sample as its wire map (the ``state`` field of stream and step messages).

    Args:
        state: the driver's state.
        seq: the agent's state sequence number (strictly increasing per agent run).
        agent_time: the agent's clock [s] when the sample was taken.
        session: the agent run's random id (changes when an agent restarts).
        extra_health: :class:`Health` bits the agent ORs in (``BAD_INPUT``).

    Returns:
        The map; arrays may be tuples (msgpack encodes them as arrays).
    """
    ee = state.ee_poses
    return {
        "seq": seq,
        "session": session,
        "agent_time": agent_time,
        "t": state.t,
        "q": state.q,
        "dq": state.dq,
        "effort": state.effort,
        "ee": ee if type(ee) is dict else dict(ee),
        "gripper": state.gripper,
        "health": int(state.health) | extra_health,
        "detail": state.detail if type(state.detail) is dict else dict(state.detail),
    }


class StateSample(NamedTuple):
    """A state as a client received it.

    Attributes:
        state: the limb state.
        seq: the agent's state sequence number.
        agent_time: the agent's clock when the sample was taken [s].
        session: the agent run's id; a new value means the agent restarted.
    """

    state: LimbState
    seq: int
    agent_time: float
    session: int = 0


_STATE = "state"


_FLOAT_ONLY: Final = frozenset({float})
#: Every combination of the health flags, built once: building an IntFlag costs about a
#: microsecond, once per state received.
_HEALTH_FLAGS: Final = tuple(Health(value) for value in range(2 * max(Health).value))


def state_from_map(m: object, seq: int = 0) -> StateSample:
    """Decode and validate a wire state map.

    Args:
        m: the ``state`` field of a ``state`` or ``step_reply`` message.
        seq: the enclosing message's ``seq``, for error reports.

    Returns:
        The sample.

    Raises:
        ProtocolError: ``bad_field`` or ``bad_value`` naming the field.
    """
    # Fast path for what agents send: every field present, numbers as finite floats. It
    # checks the same things as the field-by-field path below, in fewer Python steps.
    if type(m) is dict:
        try:
            q = m["q"]
            dq = m["dq"]
            effort = m["effort"]
            ee = m["ee"]
            t = m["t"]
            agent_time = m["agent_time"]
            state_seq = m["seq"]
            session = m["session"]
            gripper = m["gripper"]
            health = m["health"]
            detail = m["detail"]
        except KeyError:
            pass
        else:
            if (
                type(q) is tuple
                and type(dq) is tuple
                and type(ee) is dict
                and (effort is None or type(effort) is tuple)
                and type(state_seq) is int
                and type(session) is int
                and type(health) is int
                and health >= 0
                and type(gripper) is str
                and type(detail) is dict
            ):
                # Every number in one tuple: one pass for their types, one sum for finiteness.
                numbers = (
                    (t, agent_time, *q, *dq)
                    if effort is None
                    else (t, agent_time, *q, *dq, *effort)
                )
                for pose in ee.values():
                    if type(pose) is not tuple or len(pose) != 7:
                        numbers = ()  # (the checked path names the pose)
                        break
                    numbers += pose
                if (
                    numbers
                    and set(map(type, numbers)) <= _FLOAT_ONLY
                    and math.isfinite(sum(numbers))
                ):
                    flags = _HEALTH_FLAGS[health] if health < len(_HEALTH_FLAGS) else Health(health)
                    # Positional: a class called with keywords costs a microsecond more (3.11
                    # builds a dict for them), once per state received.
                    state = LimbState(t, q, dq, ee, effort, gripper, flags, detail)
                    return StateSample(state, state_seq, agent_time, session)
    return _state_from_map_checked(m, seq)


def _state_from_map_checked(m: object, seq: int) -> StateSample:
    """Field-by-field :func:`state_from_map`, naming the first field that is wrong.

    Args:
        m: the ``state`` field of a ``state`` or ``step_reply`` message.
        seq: the enclosing message's ``seq``, for error reports.

    Returns:
        The sample.

    Raises:
        ProtocolError: ``bad_field`` or ``bad_value`` naming the field.
    """
    if type(m) is not dict:
        raise _field_error(_STATE, "a map", m, "message", seq)
    state_seq = m.get("seq")
    if type(state_seq) is not int:
        raise _field_error("seq", "an int", state_seq, _STATE, seq)
    session = m.get("session")
    if type(session) is not int:
        raise _field_error("session", "an int", session, _STATE, seq)
    agent_time = _number(m.get("agent_time"), "agent_time", _STATE, seq)
    t = _number(m.get("t"), "t", _STATE, seq)
    q = _numbers(m.get("q"), "q", _STATE, seq)
    dq = _numbers(m.get("dq"), "dq", _STATE, seq)
    effort_raw = m.get("effort")
    effort = None if effort_raw is None else _numbers(effort_raw, "effort", _STATE, seq)
    ee_raw = m.get("ee")
    if type(ee_raw) is not dict:
        raise _field_error("ee", "a map of end-effector name -> 7 numbers", ee_raw, _STATE, seq)
    try:
        ee = {name: _numbers(pose, "ee", _STATE, seq, 7) for name, pose in ee_raw.items()}
    except ProtocolError:  # say which end-effector (formatting names only when it failed)
        for name, pose in ee_raw.items():
            _numbers(pose, f"ee.{name}", _STATE, seq, 7)
        raise
    gripper = _string(m.get("gripper"), "gripper", _STATE, seq)
    health = m.get("health")
    if type(health) is not int or health < 0:
        raise _field_error("health", "a non-negative int (Health flags)", health, _STATE, seq)
    detail = m.get("detail")
    if detail is None:  # missing or nil: no detail
        detail = {}
    if type(detail) is not dict:
        raise _field_error("detail", "a map", detail, _STATE, seq)
    state = LimbState(
        t=t,
        q=q,
        dq=dq,
        ee_poses=ee,
        effort=effort,
        gripper=gripper,
        health=Health(health),
        detail=detail,
    )
    return StateSample(state, state_seq, agent_time, session)


# --------------------------------------------------------------------------------------------
# Description


def description_to_map(description: LimbDescription) -> dict[str, Any]:
    """Encode a limb description as the limb part of a ``describe_reply``.

    Args:
        description: the driver's description.

    Returns:
        The map with ``robot``, ``driver``, ``joints``, ``end_effectors``, ``command_modes``,
        ``has_gripper`` and ``base_pose``.
    """
    return {
        "robot": description.robot,
        "driver": description.driver,
        "joints": [
            {"name": j.name, "lower": j.lower, "upper": j.upper, "max_speed": j.max_speed}
            for j in description.joints
        ],
        "end_effectors": list(description.end_effectors),
        "command_modes": [str(m) for m in description.command_modes],
        "has_gripper": description.has_gripper,
        "base_pose": list(description.base_pose),
    }


def description_from_map(m: Mapping[str, Any], seq: int = 0) -> LimbDescription:
    """Decode and validate the limb part of a ``describe_reply``.

    Args:
        m: the reply map.
        seq: the reply's ``seq``, for error reports.

    Returns:
        The description.

    Raises:
        ProtocolError: ``bad_field`` or ``bad_value`` naming the field.
    """
    where = MessageType.DESCRIBE_REPLY.value
    joints_raw = m.get("joints")
    if type(joints_raw) is not tuple:
        raise _field_error("joints", "an array of joint maps", joints_raw, where, seq)
    joints = []
    for i, j in enumerate(joints_raw):
        name = f"joints[{i}]"
        if type(j) is not dict:
            raise _field_error(name, "a map", j, where, seq)
        joints.append(
            JointInfo(
                name=_string(j.get("name"), f"{name}.name", where, seq),
                lower=_number(j.get("lower"), f"{name}.lower", where, seq),
                upper=_number(j.get("upper"), f"{name}.upper", where, seq),
                max_speed=_number(j.get("max_speed"), f"{name}.max_speed", where, seq),
            )
        )
    ees = m.get("end_effectors")
    if type(ees) is not tuple or any(type(e) is not str for e in ees):
        raise _field_error("end_effectors", "an array of strings", ees, where, seq)
    modes_raw = m.get("command_modes")
    if type(modes_raw) is not tuple:
        raise _field_error("command_modes", "an array of strings", modes_raw, where, seq)
    modes = tuple(_choice(x, "command_modes", where, seq, CommandMode, _MODES) for x in modes_raw)
    has_gripper = m.get("has_gripper")
    if type(has_gripper) is not bool:
        raise _field_error("has_gripper", "a bool", has_gripper, where, seq)
    return LimbDescription(
        robot=_string(m.get("robot"), "robot", where, seq),
        driver=_string(m.get("driver"), "driver", where, seq),
        joints=tuple(joints),
        end_effectors=tuple(ees),
        command_modes=modes,
        has_gripper=has_gripper,
        base_pose=_numbers(m.get("base_pose"), "base_pose", where, seq, 7),
    )


def plant_description_to_map(description: PlantDescription) -> dict[str, Any]:
    """Encode a plant description as the plant part of a ``describe_reply``.

    Args:
        description: the plant's description.

    Returns:
        The map with ``robot``, ``kind``, ``base_pose``, ``floating_base`` and ``limbs`` (an
        array of limb maps: ``name``, ``mount`` and the fields of :func:`description_to_map`).
    """
    return {
        "robot": description.robot,
        "kind": description.kind,
        "base_pose": list(description.base_pose),
        "floating_base": description.floating_base,
        "limbs": [
            {"name": limb.name, "mount": list(limb.mount), **description_to_map(limb.description)}
            for limb in description.limbs
        ],
    }


def plant_description_from_map(m: Mapping[str, Any], seq: int = 0) -> PlantDescription:
    """Decode and validate the plant part of a ``describe_reply``.

    Args:
        m: the reply map.
        seq: the reply's ``seq``, for error reports.

    Returns:
        The description.

    Raises:
        ProtocolError: ``bad_field`` or ``bad_value`` naming the field.
    """
    where = MessageType.DESCRIBE_REPLY.value
    limbs_raw = m.get("limbs")
    if type(limbs_raw) is not tuple or not limbs_raw:
        raise _field_error("limbs", "a non-empty array of limb maps", limbs_raw, where, seq)
    limbs = []
    for i, limb in enumerate(limbs_raw):
        if type(limb) is not dict:
            raise _field_error(f"limbs[{i}]", "a map", limb, where, seq)
        limbs.append(
            PlantLimb(
                name=_string(limb.get("name"), f"limbs[{i}].name", where, seq),
                description=description_from_map(limb, seq),
                mount=_numbers(limb.get("mount"), f"limbs[{i}].mount", where, seq, 7),
            )
        )
    floating = m.get("floating_base")
    if type(floating) is not bool:
        raise _field_error("floating_base", "a bool", floating, where, seq)
    try:
        return PlantDescription(
            robot=_string(m.get("robot"), "robot", where, seq),
            kind=_string(m.get("kind"), "kind", where, seq),
            limbs=tuple(limbs),
            base_pose=_numbers(m.get("base_pose"), "base_pose", where, seq, 7),
            floating_base=floating,
        )
    except ValueError as exc:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"{where}: {exc}", seq=seq) from None


def base_to_map(base: BaseState) -> dict[str, Any]:
    """Encode a base state: ``{"pose": [7 floats], "twist": [6 floats]}`` (world frame)."""
    return {"pose": base.pose, "twist": base.twist}


def base_from_map(m: object, seq: int = 0) -> BaseState:
    """Decode and validate a base state map.

    Raises:
        ProtocolError: ``bad_field`` or ``bad_value`` naming the field.
    """
    if type(m) is not dict:
        raise _field_error("base", "a map with pose and twist", m, "message", seq)
    return BaseState(
        pose=_numbers(m.get("pose"), "base.pose", "message", seq, 7),
        twist=_numbers(m.get("twist"), "base.twist", "message", seq, 6),
    )


# --------------------------------------------------------------------------------------------
# Pre-packed headers, so hot paths append only what changes


def packed_header(mtype: MessageType, n_fields: int) -> bytes:
    """The msgpack bytes of a map header and its ``v``, ``type`` and ``seq`` key.

    Appending the packed ``seq`` value and then ``n_fields - 3`` packed key/value pairs gives
    a complete message; agents use this to send replies without re-packing constant parts.

    Args:
        mtype: the message type.
        n_fields: the number of entries of the whole map (3 to 15).

    Returns:
        The prefix bytes.

    Raises:
        ValueError: when ``n_fields`` is outside 3..15 (a msgpack fixmap).
    """
    if not 3 <= n_fields <= 15:
        raise ValueError(f"a packed header needs 3 to 15 fields, not {n_fields}")
    pack: Callable[[object], bytes] = msgpack.packb
    return (
        bytes((0x80 | n_fields,))
        + pack("v")
        + pack(PROTOCOL_VERSION)
        + pack("type")
        + pack(mtype.value)
        + pack("seq")
    )


STATE_KEY: Final[bytes] = msgpack.packb("state")
"""The packed ``"state"`` key, which precedes the packed state map in state messages."""

LIMB_KEY: Final[bytes] = msgpack.packb("limb")
"""The packed ``"limb"`` key."""

LIMBS_KEY: Final[bytes] = msgpack.packb("limbs")
"""The packed ``"limbs"`` key of ``step_reply`` (limb name -> state map)."""

BASE_KEY: Final[bytes] = msgpack.packb("base")
"""The packed ``"base"`` key (the base state map)."""

UNAVAILABLE_KEY: Final[bytes] = msgpack.packb("unavailable")
"""The packed ``"unavailable"`` key of ``step_reply`` (the disassembled limbs' names)."""

T_KEY: Final[bytes] = msgpack.packb("t")
"""The packed ``"t"`` key."""

COMMAND_ERRORS_KEY: Final[bytes] = msgpack.packb(COMMAND_ERRORS_FIELD)
"""The packed ``"command_errors"`` key of ``step_reply`` (refusals of the carried commands)."""
