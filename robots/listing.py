"""The text ``limbtree robots`` prints: every robot, its limbs and their joints."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence

from limbtree.robots.registry import JointKind, JointSpec, LimbSpec, RobotSpec

#: Width [characters] that long free text (a robot's description, the paper it comes from)
#: is wrapped to: an 80-column terminal's.
WRAP_WIDTH = 80

_AXES = ("x", "y", "z", "rx", "ry", "rz")


def format_robot_table(specs: Iterable[RobotSpec]) -> str:
    """A readable, aligned listing of robots.

    For each robot: its name, description, total mass and where its numbers come from;
    for each limb: base and end-effector links, grippers, joint speed limit, mass, IK mask
    and postures, then one row per joint with its kind, limits (degrees for revolute joints,
    metres for prismatic ones) and speed limit.

    Args:
        specs: the robots, listed in the order given.

    Returns:
        The listing, without a trailing newline; ``"(no robots)"`` when ``specs`` is empty.
    """
    blocks = [_format_robot(spec) for spec in specs]
    return "\n\n".join(blocks) if blocks else "(no robots)"


def _format_robot(spec: RobotSpec) -> str:
    header = spec.name + (f" - {spec.description}" if spec.description else "")
    limbs = f"{len(spec.limbs)} limb" + ("" if len(spec.limbs) == 1 else "s")
    lines = textwrap.wrap(header, WRAP_WIDTH, subsequent_indent="    ", break_on_hyphens=False)
    lines.append(f"  mass {spec.mass_kg:g} kg, {limbs}")
    lines.append(f"  file: {spec.source}")  # (a line of its own: a path is copied whole)
    if spec.paper:
        lines += textwrap.wrap(
            f"source: {spec.paper}",
            WRAP_WIDTH,
            initial_indent="  ",
            subsequent_indent="          ",
            break_on_hyphens=False,
        )
    for limb in spec.limbs:
        lines.append("")
        lines += _format_limb(limb)
    return "\n".join(lines)


def _format_limb(limb: LimbSpec) -> list[str]:
    speed_unit = "m/s" if all(j.kind is JointKind.PRISMATIC for j in limb.joints) else "rad/s"
    fields = [
        ("chain", f"{limb.base_link} -> {limb.ee_link} ({limb.n} joints)"),
        ("end-effector", ", ".join(limb.end_effectors)),
        ("grippers", ", ".join(limb.grippers) or "none"),
        ("joint speed", f"{limb.max_joint_speed:g} {speed_unit} max"),
        ("mass", f"{limb.mass_kg:g} kg"),
        ("IK", _format_mask(limb.ik_mask)),
        ("postures", ", ".join(limb.postures) or "none"),
    ]
    width = max(len(name) for name, _ in fields) + 1
    lines = [f"  limb {limb.name}"]
    lines += [f"    {name + ':':<{width}} {value}" for name, value in fields]
    lines += ["    " + row for row in _joint_rows(limb.joints)]
    return lines


def _format_mask(mask: Sequence[float] | None) -> str:
    if mask is None or all(w == 1.0 for w in mask):
        return "full pose (x y z rx ry rz)"
    if tuple(mask) == (1.0, 1.0, 1.0, 0.0, 0.0, 0.0):
        return "position only (x y z)"
    return "weights " + " ".join(f"{axis}={w:g}" for axis, w in zip(_AXES, mask, strict=True))


def _format_limit(value: float, kind: JointKind) -> str:
    if math.isinf(value):
        return "none"
    if kind is JointKind.PRISMATIC:
        return f"{value:.3f} m"
    return f"{math.degrees(value):.1f} deg"


def _joint_rows(joints: Sequence[JointSpec]) -> list[str]:
    header = ("joint", "kind", "lower", "upper", "max speed")
    rows = [
        (
            joint.name,
            joint.kind.value,
            _format_limit(joint.lower, joint.kind),
            _format_limit(joint.upper, joint.kind),
            f"{joint.max_speed:g} {joint.unit}/s",
        )
        for joint in joints
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        # Names and kinds left-aligned, numbers right-aligned.
        parts = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [line(header)] + [line(row) for row in rows]
