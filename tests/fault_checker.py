"""Replays a run record's fault events against its limbs' health flags, tick by tick.

It knows only ``docs/record.md`` and ``docs/missions.md``: a fault is in force on a limb
from the tick of its ``fault_injected`` up to, not including, the tick of its
``fault_ended``; in force, ``blockage`` shows ``BLOCKED``, ``slowdown`` ``SLOWED`` and
``power_off`` ``POWER_OFF`` in the limb's health, and out of force they do not; while a
``disassembly`` is in force the agent sends no state of the limb, so its health is the
last state's and is not checked. ``fault_recovered`` comes after ``fault_ended``, once per
fault; a fault is injected, ended and recovered at most once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from limbtree.transport.driver import Health

#: The health flag each fault kind shows while it is in force.
FLAG_OF: Mapping[str, Health] = {
    "blockage": Health.BLOCKED,
    "slowdown": Health.SLOWED,
    "power_off": Health.POWER_OFF,
}
CHECKED = Health.BLOCKED | Health.SLOWED | Health.POWER_OFF


def fault_record_problems(ticks: Iterable[Mapping[str, Any]]) -> list[str]:
    """Everything out of order between the record's fault events and health flags."""
    problems: list[str] = []
    in_force: set[tuple[str, str]] = set()
    ended: Counter[tuple[str, str]] = Counter()
    for tick in ticks:
        t = tick["t"]
        for event in tick["events"]:
            kind = event["kind"]
            if not kind.startswith("fault_"):
                continue
            key = (event["limb"], event["fault"])
            what = f"tick {tick['tick']} (t={t}): {event['fault']} on {event['limb']}"
            if kind == "fault_injected":
                if key in in_force:
                    problems.append(f"{what} injected while one is in force")
                in_force.add(key)
            elif kind == "fault_ended":
                if key not in in_force:
                    problems.append(f"{what} ended but none is in force")
                in_force.discard(key)
                ended[key] += 1
            elif kind == "fault_recovered":
                if ended[key] <= 0:
                    problems.append(f"{what} recovered but none ended before")
                ended[key] -= 1
        for limb, entry in tick["limbs"].items():
            if (limb, "disassembly") in in_force:
                continue
            expected = Health.OK
            for kind, flag in FLAG_OF.items():
                if (limb, kind) in in_force:
                    expected |= flag
            got = Health(entry["health"]) & CHECKED
            if got != expected:
                problems.append(
                    f"tick {tick['tick']} (t={t}): {limb}'s health shows {got!r}, "
                    f"its faults in force say {expected!r}"
                )
    return problems
