"""Value types of motion: poses, waypoints, speed profiles, joint postures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import yaml

from limbtree.trees.mission.limb_values import check_limb_keys
from limbtree.trees.mission.scalars import Quantity, Text, Vector
from limbtree.trees.mission.source import INVALID, Entry, Item
from limbtree.trees.mission.units import (
    DEG,
    MM,
    MM_S,
    S,
    Unit,
    euler_from_quaternion,
    quaternion_from_euler,
    stem,
)
from limbtree.trees.mission.value_type import (
    REQUIRED,
    ParamSpec,
    ValueContext,
    ValueType,
    file_fields,
    list_items,
    read_fields,
)

_TRANSLATION: Final = ParamSpec("translation", Vector(3, MM), (0.0, 0.0, 0.0))
_ROTATION: Final = ParamSpec("rotation", Vector(3, DEG), (0.0, 0.0, 0.0))


@dataclass(frozen=True)
class PoseSpec(ValueType):
    """``{translation_mm: [x, y, z], rotation_deg: [rx, ry, rz]}``, both optional.

    The rotation is xyz-extrinsic Euler angles (about the fixed x, then y, then z axis).
    The model holds ``(x, y, z, qx, qy, qz, qw)`` [m], quaternion scalar last.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a pose {translation_mm: [x, y, z], rotation_deg: [rx, ry, rz]}"

    @staticmethod
    def is_pose(entries: Sequence[Entry]) -> bool:
        """Whether a map's keys make it a pose rather than a map limb -> pose."""
        return not entries or any(
            e.key.startswith(("translation", "rotation", "position", "orientation"))
            for e in entries
        )

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        entries = ctx.reader.entries(item, f"{key} (a pose)")
        if entries is None:
            return INVALID
        fields = read_fields(
            ctx, item, entries, (_TRANSLATION, _ROTATION), what=f"{key} (a pose)", at=item.at
        )
        if INVALID in fields.values():
            return INVALID
        x, y, z = fields["translation"]
        return (float(x), float(y), float(z), *quaternion_from_euler(fields["rotation"]))

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: ``{translation_mm, rotation_deg}``."""
        if not (isinstance(value, list | tuple) and len(value) == 7):
            return super().file_value(value)
        rotation = euler_from_quaternion(value[3:])
        return file_fields(
            (_TRANSLATION, _ROTATION), {"translation": value[:3], "rotation": rotation}
        )


@dataclass(frozen=True)
class Waypoints(ValueType):
    """A non-empty list of waypoints, each a pose for every limb or a map limb -> pose.

    The model holds a tuple of read-only maps limb -> ``(x, y, z, qx, qy, qz, qw)``.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of waypoints (a pose, or a map limb -> pose)"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one waypoint")
        waypoints: list[Any] = []
        for number, element in enumerate(elements, start=1):
            waypoints.append(self._waypoint(ctx, element, f"{key} {number}"))
        if INVALID in waypoints:
            return INVALID
        return tuple(waypoints)

    def _waypoint(self, ctx: ValueContext, item: Item, what: str) -> Any:
        if isinstance(item.node, yaml.SequenceNode):  # (a position written as a list)
            return ctx.reader.error(
                item,
                f"{what} must be a pose {{translation_mm: [x, y, z], rotation_deg: [rx, ry, "
                "rz]}, or a map limb -> pose; got a list (a position alone is "
                "{translation_mm: [x, y, z]})",
            )
        entries = ctx.reader.entries(item, what)
        if entries is None:
            return INVALID
        if PoseSpec.is_pose(entries):
            pose = PoseSpec().read(ctx, item, what)
            if pose is INVALID:
                return INVALID
            return MappingProxyType({limb: pose for limb in ctx.node_limbs or ()})
        good, ok = check_limb_keys(ctx, item, entries, what)
        poses: dict[str, Any] = {}
        for entry in good:
            child = ctx.reader.child(item, entry.node)
            poses[entry.key] = (
                INVALID if child is None else PoseSpec().read(ctx, child, f"{what}, {entry.key}")
            )
        if not ok or INVALID in poses.values():
            return INVALID
        return MappingProxyType({limb: poses[limb] for limb in ctx.node_limbs or tuple(poses)})

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: each waypoint a map limb -> pose."""
        return _per_limb_list(PoseSpec(), value)


_SEGMENT: Final = (
    ParamSpec("duration", Quantity(S, low=0, low_open=True), REQUIRED),
    ParamSpec("velocity", Vector(3, MM_S), REQUIRED),
)


@dataclass(frozen=True)
class Profile(ValueType):
    """A non-empty list of ``{duration_s, velocity_mm_s: [vx, vy, vz]}`` segments.

    The model holds read-only maps ``{"duration": s, "velocity": (vx, vy, vz) [m/s]}``.
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of {duration_s, velocity_mm_s: [vx, vy, vz]}"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one segment")
        segments: list[Any] = []
        for number, element in enumerate(elements, start=1):
            what = f"{key} segment {number}"
            entries = ctx.reader.entries(element, what)
            if entries is None:
                segments.append(INVALID)
                continue
            fields = read_fields(ctx, element, entries, _SEGMENT, what=what, at=element.at)
            ok = INVALID not in fields.values()
            segments.append(MappingProxyType(fields) if ok else INVALID)
        return INVALID if INVALID in segments else tuple(segments)

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: ``{duration_s, velocity_mm_s}`` segments."""
        return [
            file_fields(_SEGMENT, segment) if isinstance(segment, Mapping) else segment
            for segment in value
        ]


@dataclass(frozen=True)
class _Joints(ValueType):
    """``q_deg``: a non-empty list of finite numbers [deg]."""

    def key_unit(self) -> Unit:
        """See :meth:`ValueType.key_unit`."""
        return DEG

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of joint angles in degrees"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must list at least one joint angle")
        return Vector(len(elements), DEG).read(ctx, item, key)


_Q: Final = ParamSpec("q", _Joints(), REQUIRED)


@dataclass(frozen=True)
class Posture(ValueType):
    """A named posture of the robot (checked when the tree is built) or ``{q_deg: [...]}``.

    The model holds the name, or the joint values as a tuple [rad].
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a posture name or {q_deg: [q1, q2, ...]}"

    @staticmethod
    def is_joints(entries: Sequence[Entry]) -> bool:
        """Whether a map is ``{q_deg: [...]}`` rather than a map limb -> posture."""
        return any(e.key.startswith("q") and stem(e.key) == "q" for e in entries)

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        node = item.node
        if isinstance(node, yaml.ScalarNode):
            return Text().read(ctx, item, key)
        entries = ctx.reader.entries(item, key)
        if entries is None:
            return INVALID
        fields = read_fields(ctx, item, entries, (_Q,), what=key, at=item.at)
        return fields["q"]

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: the name, or ``{q_deg: [...]}``."""
        return value if isinstance(value, str) else file_fields((_Q,), {"q": value})


@dataclass(frozen=True)
class Postures(ValueType):
    """A non-empty list of postures; each for every limb, or a map limb -> posture.

    The model holds a tuple of read-only maps limb -> posture (name, or joints [rad]).
    """

    def expected(self) -> str:
        """See :meth:`ValueType.expected`."""
        return "a list of postures (a posture, or a map limb -> posture)"

    def read(self, ctx: ValueContext, item: Item, key: str) -> Any:
        """See :meth:`ValueType.read`."""
        elements = list_items(ctx, item, key, self.expected())
        if elements is None:
            return INVALID
        if not elements:
            return ctx.reader.error(item, f"{key} must have at least one posture")
        result: list[Any] = []
        for number, element in enumerate(elements, start=1):
            result.append(self._posture(ctx, element, f"{key} {number}"))
        return INVALID if INVALID in result else tuple(result)

    def _posture(self, ctx: ValueContext, item: Item, what: str) -> Any:
        if isinstance(item.node, yaml.MappingNode):
            entries = ctx.reader.entries(item, what)
            if entries is None:
                return INVALID
            if not Posture.is_joints(entries):
                good, ok = check_limb_keys(ctx, item, entries, what)
                postures: dict[str, Any] = {}
                for entry in good:
                    child = ctx.reader.child(item, entry.node)
                    postures[entry.key] = (
                        INVALID if child is None else Posture().read(ctx, child, what)
                    )
                if not ok or INVALID in postures.values():
                    return INVALID
                order = ctx.node_limbs or tuple(postures)
                return MappingProxyType({limb: postures[limb] for limb in order})
        posture = Posture().read(ctx, item, what)
        if posture is INVALID:
            return INVALID
        return MappingProxyType({limb: posture for limb in ctx.node_limbs or ()})

    def file_value(self, value: Any) -> Any:
        """See :meth:`ValueType.file_value`: each entry a map limb -> posture."""
        return _per_limb_list(Posture(), value)


def _per_limb_list(each: ValueType, value: Any) -> list[Any]:
    """A list of (maps limb -> ``each``'s value, or one for every limb) in file form."""
    return [
        {limb: each.file_value(v) for limb, v in entry.items()}
        if isinstance(entry, Mapping)
        else each.file_value(entry)
        for entry in value
    ]


__all__ = ["PoseSpec", "Posture", "Postures", "Profile", "Waypoints"]
