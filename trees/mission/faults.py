"""Scheduled faults of a mission: ``faults`` as written, ``random_faults`` drawn from a seed.

Faults are recorded whatever the mission's clock; the runner refuses them when it runs in
the real clock (the clock can be changed on the command line, so the file cannot know).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import yaml

from limbtree.transport.faults import SLOWDOWN_FACTOR_HIGH, SLOWDOWN_FACTOR_LOW
from limbtree.trees.mission.model import SCHEDULED_FAULT_KINDS, FaultDecl, FaultKind
from limbtree.trees.mission.source import INVALID, Entry, Item, Reader
from limbtree.trees.mission.units import NONE, S
from limbtree.trees.mission.values import (
    REQUIRED,
    Choice,
    Indices,
    Integer,
    LimbList,
    LimbName,
    ParamSpec,
    Quantity,
    Range,
    ValueContext,
    Weights,
    read_fields,
    value_places,
)

_KINDS: Final = tuple(kind.value for kind in SCHEDULED_FAULT_KINDS)
#: The slowdown factor, within the simulator's limits (both excluded).
_FACTOR: Final = Quantity(
    NONE,
    low=SLOWDOWN_FACTOR_LOW,
    low_open=True,
    high=SLOWDOWN_FACTOR_HIGH,
    high_open=True,
)

#: The keys of one entry of ``faults``.
FAULT_SPECS: Final = (
    ParamSpec("at", Quantity(S, low=0), REQUIRED, "when, in mission time"),
    ParamSpec("limb", LimbName(), REQUIRED, "which declared limb"),
    ParamSpec("kind", Choice(_KINDS), REQUIRED, "what happens"),
    ParamSpec("duration", Quantity(S, low=0, low_open=True), None, "how long; none: until the end"),
    ParamSpec("factor", _FACTOR, None, "slowdown only (required): speed multiplier"),
    ParamSpec("joints", Indices(), None, "blockage only: joint indices from 0; none: every joint"),
)

#: The most faults one ``random_faults`` group draws (the draw is eager: a huge count would
#: hang ``limbtree check`` and fill the memory).
MAX_RANDOM_COUNT: Final = 10_000

#: The keys of one group of ``random_faults``.
RANDOM_SPECS: Final = (
    ParamSpec("count", Integer(1, maximum=MAX_RANDOM_COUNT), REQUIRED, "how many faults to draw"),
    ParamSpec("kinds", Weights(_KINDS), REQUIRED, "kinds to draw: a map kind -> weight, or a list"),
    ParamSpec("limbs", LimbList(), None, "limbs to draw from; none: every declared limb"),
    ParamSpec("between", Range(Quantity(S, low=0)), REQUIRED, "[t0, t1]: when faults start"),
    ParamSpec(
        "duration",
        Range(Quantity(S, low=0, low_open=True)),
        REQUIRED,
        "[low, high]: how long each lasts",
    ),
    ParamSpec("factor", Range(_FACTOR), (0.2, 0.8), "[low, high]: slowdown speed multiplier"),
    ParamSpec(
        "limbs_per_fault",
        Range(Quantity(NONE, low=1)),
        (1, 1),
        "[low, high]: how many of the limbs one fault hits at once (seed 000 Table II: "
        "disassembly of 1 to 3 legs, power off of all 4)",
    ),
)

#: Kind-specific keys: key -> the kind it belongs to.
_ONLY_FOR: Final = {"factor": FaultKind.SLOWDOWN, "joints": FaultKind.BLOCKAGE}


@dataclass(frozen=True)
class RandomFaults:
    """One ``random_faults`` group, read but not yet drawn (all times in seconds)."""

    count: int
    kinds: Mapping[str, float]
    limbs: tuple[str, ...]
    between: tuple[float, float]
    duration: tuple[float, float]
    factor: tuple[float, float]
    item: Item
    limbs_per_fault: tuple[float, float] = (1, 1)

    def draw(self, rng: np.random.Generator) -> list[FaultDecl]:
        """Draw the group's faults: each draws its time, kind, limbs, duration and factor.

        A fault hitting several limbs (``limbs_per_fault``) gives one :class:`FaultDecl` per
        limb, all at the same time and for the same duration. Every fault makes the same
        draws in the same order whatever its kind, so a seed gives the same schedule for the
        same file.
        """
        kinds = list(self.kinds)
        weights = np.array([self.kinds[k] for k in kinds], dtype=float)
        weights /= weights.sum()
        faults = []
        for _ in range(self.count):
            at_s = float(rng.uniform(*self.between))
            kind = FaultKind(kinds[int(rng.choice(len(kinds), p=weights))])
            low, high = (min(int(v), len(self.limbs)) for v in self.limbs_per_fault)
            hit = int(rng.integers(low, high + 1))
            chosen = sorted(int(i) for i in rng.choice(len(self.limbs), size=hit, replace=False))
            duration_s = float(rng.uniform(*self.duration))
            factor = float(rng.uniform(*self.factor))
            params = {"factor": factor} if kind is FaultKind.SLOWDOWN else {}
            for i in chosen:
                limb = self.limbs[i]
                faults.append(
                    FaultDecl(at_s, limb, kind, duration_s, params, self.item.at, drawn=True)
                )
        return faults


def read_faults(ctx: ValueContext, item: Item) -> list[FaultDecl] | None:
    """Read ``faults``: a list of faults; None when any is invalid (reported)."""
    reader = ctx.reader
    elements = reader.elements(item, "faults")
    if elements is None:
        return None
    faults: list[FaultDecl] = []
    ok = True
    for element in elements:
        child = reader.child(item, element)
        fault = None if child is None else _fault(ctx, child)
        if fault is None:
            ok = False
        else:
            faults.append(fault)
    return faults if ok else None


def _fault(ctx: ValueContext, item: Item) -> FaultDecl | None:
    reader = ctx.reader
    entries = reader.entries(item, "a fault")
    if entries is None:
        return None
    fields = read_fields(ctx, item, entries, FAULT_SPECS, what="a fault", at=item.at)
    kind = fields["kind"]
    ok = INVALID not in fields.values()
    if kind is not INVALID:
        ok = _kind_keys(reader, item, entries, FaultKind(kind)) and ok
        if kind == FaultKind.SLOWDOWN and fields["factor"] is None:
            reader.error(item, f"a slowdown fault needs factor ({_FACTOR.bounds()})")
            ok = False
    if not ok:
        return None
    params = {key: fields[key] for key in _ONLY_FOR if fields[key] is not None}
    # Where each value is written (a parameter's value, a --set override: there)
    places = value_places(item, entries, FAULT_SPECS)
    params_at = {key: places[key] for key in params if key in places}
    return FaultDecl(
        fields["at"],
        fields["limb"],
        FaultKind(kind),
        fields["duration"],
        params,
        item.at,
        params_at=params_at,
    )


def _kind_keys(reader: Reader, item: Item, entries: Sequence[Entry], kind: FaultKind) -> bool:
    """Whether every kind-specific key suits ``kind`` (reports the ones that do not)."""
    ok = True
    for entry in entries:
        owner = _ONLY_FOR.get(entry.key)
        if owner is not None and owner is not kind:
            reader.report(entry.at, f"{entry.key} applies only to {owner} faults", item.note)
            ok = False
    return ok


def read_random_faults(ctx: ValueContext, item: Item) -> list[RandomFaults] | None:
    """Read ``random_faults``: one group (a map) or a list of groups."""
    reader = ctx.reader
    groups: list[Item] = []
    if isinstance(item.node, yaml.SequenceNode):
        for element in item.node.value:
            child = reader.child(item, element)
            if child is None:
                return None
            groups.append(child)
    else:
        groups.append(item)
    result: list[RandomFaults] = []
    ok = True
    for group in groups:
        entries = reader.entries(group, "random_faults (a group, or a list of groups)")
        if entries is None:
            ok = False
            continue
        fields: dict[str, Any] = read_fields(
            ctx, group, entries, RANDOM_SPECS, what="random_faults", at=group.at
        )
        if INVALID in fields.values():
            ok = False
            continue
        limbs = fields["limbs"] or ctx.declared_limbs
        if not limbs:
            reader.error(group, "random_faults needs limbs; the mission declares none")
            ok = False
            continue
        fields["limbs"] = tuple(limbs)
        most = max(fields["limbs_per_fault"])
        if most > len(limbs):
            entry = next((e for e in entries if e.key == "limbs_per_fault"), None)
            reader.error(
                group if entry is None else reader.child(group, entry.node) or group,
                f"limbs_per_fault asks up to {most:g} distinct limbs for one fault, but it "
                f"draws from {len(limbs)} ({', '.join(limbs)}): at most {len(limbs)}, or "
                "give more limbs",
            )
            ok = False
            continue
        result.append(RandomFaults(item=group, **fields))
    return result if ok else None
