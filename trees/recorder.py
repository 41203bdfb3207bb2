"""The run record: ``summary.json`` and a streamed ``log.msgpack`` (DESIGN.md, "Run record").

``log.msgpack`` is a stream of msgpack maps, one per tick, written and flushed as the run
goes, so a run killed half way leaves a readable log. ``docs/record.md`` documents every
field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import msgpack

from limbtree.trees.errors import RunError
from limbtree.trees.limbs import LimbHandle

#: Version of the record's layout, written in every tick and the summary.
RECORD_VERSION = 1


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


class Recorder:
    """Writes one run's record into a directory.

    Args:
        directory: where to write; created if needed.

    Raises:
        RunError: if the directory cannot be created or written.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._log: IO[bytes] | None = open(self.directory / "log.msgpack", "wb")  # noqa: SIM115
        except OSError as exc:
            raise RunError(f"cannot write the run record in {self.directory}: {exc}") from None
        self._packer = msgpack.Packer(use_bin_type=True)

    def tick(
        self,
        *,
        t: float,
        index: int,
        limbs: Mapping[str, LimbHandle],
        nodes: Mapping[str, str],
        skills: Mapping[str, Mapping[str, Any]],
        events: list[dict[str, Any]],
    ) -> None:
        """Append one tick and flush it (:meth:`entry` then :meth:`write`)."""
        self.write(
            self.entry(t=t, index=index, limbs=limbs, nodes=nodes, skills=skills, events=events)
        )

    def entry(
        self,
        *,
        t: float,
        index: int,
        limbs: Mapping[str, LimbHandle],
        nodes: Mapping[str, str],
        skills: Mapping[str, Mapping[str, Any]],
        events: list[dict[str, Any]],
    ) -> dict[str, Any]:
        """One tick's record, taken from the limbs now (write it later with :meth:`write`).

        Args:
            t: the tick time [s].
            index: the tick number, from 0.
            limbs: every limb; each one's ``tick_record`` holds what was commanded this tick.
            nodes: node name -> status of the nodes ticked this tick.
            skills: node name -> the skill's internals this tick.
            events: things that happened this tick (faults injected, ended, recovered, ...).
        """
        limb_maps: dict[str, Any] = {}
        for name, limb in limbs.items():
            record = limb.tick_record
            sensed = limb.pose()
            center = record.center if record.command is not None else sensed
            state = limb.state
            limb_maps[name] = {
                "state": None if center is None else center.as_array().tolist(),
                "command": None if record.command is None else record.command.as_array().tolist(),
                "q": None if state is None else list(state.q),
                "q_command": None if record.joints is None else list(record.joints),
                "health": 0 if state is None else int(state.health),
                "stale": not limb.fresh,
            }
        return {
            "v": RECORD_VERSION,
            "t": t,
            "tick": index,
            "limbs": limb_maps,
            "nodes": dict(nodes),
            "skills": {k: dict(v) for k, v in skills.items()},
            "events": list(events),
        }

    def write(self, entry: Mapping[str, Any]) -> None:
        """Append a tick's record to the log and flush it."""
        if self._log is None:
            return
        self._log.write(self._packer.pack(entry))
        self._log.flush()

    def close(self, summary: Mapping[str, Any]) -> Path:
        """Close the log and write ``summary.json``; returns its path."""
        if self._log is not None:
            self._log.close()
            self._log = None
        path = self.directory / "summary.json"
        clean = json.loads(json.dumps(summary, default=_json_default))
        path.write_text(json.dumps(clean, indent=2, sort_keys=False) + "\n")
        return path


def _json_default(value: object) -> object:
    if isinstance(value, float):
        return _finite(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def read_log(path: Path) -> Iterator[dict[str, Any]]:
    """The ticks of a ``log.msgpack``, in order; a truncated last tick is skipped.

    Raises:
        RunError: if the file is missing or is not a limbtree log.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in the finally below
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc}") from None
    try:
        unpacker = msgpack.Unpacker(handle, raw=False, strict_map_key=False)
        try:
            for entry in unpacker:
                if not isinstance(entry, dict) or "t" not in entry:
                    raise RunError(f"{path} is not a limbtree run log (an entry has no 't')")
                yield entry
        except (msgpack.exceptions.ExtraData, ValueError) as exc:
            raise RunError(f"{path} is damaged: {exc}") from None
    finally:
        handle.close()
