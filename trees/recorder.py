"""The run record: ``summary.json`` and a streamed ``log.msgpack`` (DESIGN.md, "Run record").

:class:`Recorder` is a sink of the tick stream (:mod:`limbtree.trees.stream`): it writes
the header map first, then one map per tick, each flushed as it goes, so a run killed half
way leaves a readable log; at the end it writes ``summary.json``. ``docs/record.md``
documents every field of layout 2, and of layout 1 that readers still accept.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Final

import msgpack

from limbtree.trees.errors import RunError
from limbtree.trees.stream import RunEnd, RunHeader, TickSnapshot, plain

#: Version of the record's layout, written in the header and the summary.
RECORD_VERSION = 2
#: The layouts :func:`read_log` reads.
READABLE_VERSIONS = (1, 2)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def header_map(header: RunHeader) -> dict[str, Any]:
    """The log's first map (``"kind": "header"``); ``world`` only when the mission has one."""
    out = {
        "kind": "header",
        "v": RECORD_VERSION,
        "mission": header.mission,
        "mission_file": header.mission_file,
        "parameters": plain(header.parameters),
        "seed": header.seed,
        "clock": header.clock,
        "rate_hz": header.rate_hz,
        "tree": header.tree.as_map(),
        "robots": {name: robot.as_map() for name, robot in header.robots.items()},
    }
    if header.world:
        out["world"] = plain(header.world)
    return out


def tick_map(snapshot: TickSnapshot) -> dict[str, Any]:
    """A tick's map (``"kind": "tick"``), nodes and skills keyed by node id."""
    limbs: dict[str, Any] = {}
    for name, limb in snapshot.limbs.items():
        limbs[name] = {
            "state": None if limb.state is None else limb.state.as_list(),
            "command": None if limb.command is None else limb.command.as_list(),
            "q": None if limb.q is None else list(limb.q),
            "q_command": None if limb.q_command is None else list(limb.q_command),
            "health": limb.health,
            "stale": limb.stale,
        }
        if limb.target is not None:
            limbs[name]["target"] = limb.target.as_list()
    nodes = snapshot.nodes
    return {
        "kind": "tick",
        "t": snapshot.t,
        "tick": snapshot.tick,
        "limbs": limbs,
        "bases": {name: pose.as_list() for name, pose in snapshot.bases.items()},
        "nodes": {node_id: node.status.value for node_id, node in nodes.items()},
        "messages": {node_id: node.message for node_id, node in nodes.items() if node.message},
        "busy": {node_id: node.busy_s for node_id, node in nodes.items()},
        "skills": {node_id: skill.as_map() for node_id, skill in snapshot.skills.items()},
        "events": [event.as_map() for event in snapshot.events],
    }


def lock_record_dir(directory: Path) -> int | None:
    """Take the record directory's lock (``flock`` on the directory); its descriptor.

    A run holds it while it writes its record, so that nothing else writes there meanwhile
    (a second run given the same ``--record``, or a sweep clearing the folder of a run an
    earlier, killed attempt left going). Close the descriptor to release it.

    Returns:
        The descriptor holding the lock, or None when another process holds it.

    Raises:
        OSError: the directory cannot be opened.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


#: Why a record directory cannot be written: a run holds its lock (:func:`lock_record_dir`).
BEING_WRITTEN: Final = (
    "another limbtree run is writing its record there; wait for it to end, or give another "
    "directory"
)


def being_written(directory: Path) -> bool:
    """Whether a run holds the record directory's lock: it is still writing the record."""
    try:
        lock = lock_record_dir(directory)
    except OSError:
        return False
    if lock is None:
        return True
    os.close(lock)
    return False


class Recorder:
    """Writes one run's record into a directory; a sink of the tick stream.

    The recorder holds the directory's lock (:func:`lock_record_dir`) until it is closed.

    Args:
        directory: where to write; created if needed.

    Raises:
        RunError: if the directory cannot be created or written, or another run is writing
            its record there.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock = lock_record_dir(self.directory)
        except OSError as exc:
            raise RunError(f"cannot write the run record in {self.directory}: {exc}") from None
        if lock is None:
            raise RunError(f"{self.directory}: {BEING_WRITTEN}")
        # Released by close(), or when the recorder is dropped unclosed (as a killed run's
        # process releases it).
        self._unlock = weakref.finalize(self, os.close, lock)
        try:
            self._log: IO[bytes] | None = open(self.directory / "log.msgpack", "wb")  # noqa: SIM115
        except OSError as exc:
            self._unlock()
            raise RunError(f"cannot write the run record in {self.directory}: {exc}") from None
        self._packer = msgpack.Packer(use_bin_type=True)
        #: The last tick written: its snapshot, its map and the map packed (the web view
        #: takes them instead of converting the tick again).
        self.last: tuple[TickSnapshot, dict[str, Any], bytes] | None = None

    def on_start(self, header: RunHeader) -> None:
        """Write the header map."""
        self.write(header_map(header))

    def on_tick(self, snapshot: TickSnapshot) -> None:
        """Append the tick and flush it."""
        entry = tick_map(snapshot)
        packed = self.write(entry)
        self.last = (snapshot, entry, packed)

    def on_message(self, text: str) -> None:
        """Messages are not recorded (the events are)."""

    def on_pause(self, paused: bool, t: float) -> None:
        """Pauses are recorded as the next tick's events."""

    def on_end(self, end: RunEnd) -> None:
        """Close the log and write ``summary.json``."""
        self.close(end.summary)

    def write(self, entry: Mapping[str, Any]) -> bytes:
        """Append a map to the log and flush it; returns the map packed."""
        packed: bytes = self._packer.pack(entry)
        if self._log is None:
            return packed
        self._log.write(packed)
        self._log.flush()
        return packed

    def close(self, summary: Mapping[str, Any]) -> Path:
        """Close the log and write ``summary.json``; returns its path."""
        if self._log is not None:
            self._log.close()
            self._log = None
        path = self.directory / "summary.json"
        try:
            path.write_text(json.dumps(plain_summary(summary), indent=2, sort_keys=False) + "\n")
        finally:
            self._unlock()
        return path


def plain_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``summary`` as plain JSON values (arrays as lists, NaN as null, paths as text)."""
    out: dict[str, Any] = json.loads(json.dumps(summary, default=_json_default))
    return out


def _json_default(value: object) -> object:
    if isinstance(value, float):
        return _finite(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def damage_text(exc: BaseException) -> str:
    """Why msgpack could not read a log on, for a message (its own text can be empty)."""
    text = str(exc).strip()
    kind = type(exc).__name__
    return f"{text} ({kind})" if text else f"bytes there are not msgpack ({kind})"


def read_so_far(ticks: int) -> str:
    """How far a log that stops early was read, for a message.

    ``its first 224 ticks (0 to 223)``: the count and the ticks' numbers, which start at 0.
    """
    if ticks <= 0:
        return "no tick"
    if ticks == 1:
        return "its first tick (tick 0)"
    return f"its first {ticks} ticks (0 to {ticks - 1})"


#: The files of a run record (``docs/record.md``).
RECORD_FILES: Final = ("summary.json", "log.msgpack")


def records_in(directory: Path) -> list[Path]:
    """The run records right under ``directory`` (a sweep's folder holds one per run).

    Args:
        directory: a folder that is not itself a record.

    Returns:
        Its subfolders holding ``summary.json`` or ``log.msgpack``, sorted by name.
    """
    try:
        folders = sorted(p for p in directory.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p for p in folders if any((p / name).is_file() for name in RECORD_FILES)]


def not_a_record_hint(directory: Path) -> str:
    """What to give instead of ``directory``, which holds no record: one it holds, if any.

    ``""`` when it holds none; else ``"; it holds 4 run records (a sweep's folder?): give one
    of them, e.g. DIR/RUN"``.
    """
    inside = records_in(directory)
    if not inside:
        return ""
    count = "1 run record" if len(inside) == 1 else f"{len(inside)} run records"
    return f"; it holds {count} (a sweep's folder?): give one of them, e.g. {inside[0]}"


def read_summary(path: Path) -> dict[str, Any]:
    """A record's ``summary.json`` as a map (``limbtree report`` and ``limbtree view``).

    Args:
        path: the ``summary.json`` file.

    Returns:
        Its JSON object.

    Raises:
        RunError: naming ``path``, when it cannot be read, is not a JSON object, or has no
            ``outcome`` text (every run's summary has one, layout 1 too: another tool's
            ``summary.json`` is not taken for a run's).
    """
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunError(f"{path} cannot be read as a run summary: {exc}") from None
    if not isinstance(summary, dict):
        raise RunError(f"{path} is not a run summary (a JSON object with outcome, ticks, ...)")
    if not isinstance(summary.get("outcome"), str):
        raise RunError(
            f"{path} is not a run summary: it has no outcome (a run's summary says SUCCESS, "
            "FAILURE or ABORTED there); give the directory limbtree run --record wrote"
        )
    return summary


def read_record(path: Path) -> tuple[dict[str, Any] | None, Iterator[dict[str, Any]]]:
    """A ``log.msgpack``'s header map (None for a layout 1 log) and an iterator of its ticks.

    A truncated last tick is skipped (the log of a killed run).

    Raises:
        RunError: if the file is missing, is not a limbtree log, or has a layout this
            version cannot read (the iterator raises for damage further in).
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed when the ticks are done
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc}") from None
    unpacker = msgpack.Unpacker(handle, raw=False, strict_map_key=False)
    try:
        first = next(unpacker, None)
    except (msgpack.exceptions.ExtraData, ValueError) as exc:
        handle.close()
        raise RunError(f"{path} is damaged: {damage_text(exc)}") from None
    header: dict[str, Any] | None = None
    if isinstance(first, dict) and first.get("kind") == "header":
        version = first.get("v")
        if version not in READABLE_VERSIONS:
            handle.close()
            readable = ", ".join(str(v) for v in READABLE_VERSIONS)
            raise RunError(
                f"{path} is a record of layout {version!r}; this limbtree reads layouts "
                f"{readable} (a newer limbtree wrote it?)"
            )
        header = first
        first = None

    def ticks() -> Iterator[dict[str, Any]]:
        try:
            if first is not None:
                yield _tick(path, first)
            for entry in unpacker:
                yield _tick(path, entry)
        except (msgpack.exceptions.ExtraData, ValueError) as exc:
            raise RunError(f"{path} is damaged: {damage_text(exc)}") from None
        finally:
            handle.close()

    if first is None and header is None:
        handle.close()
        return None, iter(())
    return header, ticks()


def _tick(path: Path, entry: object) -> dict[str, Any]:
    if not isinstance(entry, dict) or "t" not in entry:
        raise RunError(f"{path} is not a limbtree run log (an entry has no 't')")
    return entry


def read_header(path: Path) -> dict[str, Any] | None:
    """The header map of a ``log.msgpack`` (layout 2), or None for a layout 1 log.

    Raises:
        RunError: if the file is missing, or its layout is one this version cannot read.
    """
    header, ticks = read_record(path)
    try:
        for _ in ticks:  # starts the reader, so that closing it closes the file
            break
    except RunError:
        pass  # damage after the header is the ticks' reader's business, not the header's
    close = getattr(ticks, "close", None)
    if close is not None:
        close()
    return header


def read_log(path: Path) -> Iterator[dict[str, Any]]:
    """The ticks of a ``log.msgpack`` (layout 1 or 2), in order.

    A truncated last tick is skipped; the header of a layout 2 log is left out (read it with
    :func:`read_header`).

    Raises:
        RunError: if the file is missing or is not a limbtree log.
    """
    _, ticks = read_record(path)
    yield from ticks


def node_ids_named(header: Mapping[str, Any], name: str) -> list[str]:
    """The ids of the header tree's nodes called ``name`` (names are not unique)."""
    found: list[str] = []
    stack = [header.get("tree") or {}]
    while stack:
        node = stack.pop()
        if node.get("name") == name:
            found.append(str(node.get("id")))
        stack.extend(reversed(node.get("children") or []))
    return found
