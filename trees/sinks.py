"""Fan the tick stream out to its sinks, detaching any sink that raises.

A sink is a viewer, a recorder, a custom consumer (:class:`~limbtree.trees.stream.TickSink`).
A bug in one must not stop a robot in mid-motion nor cost the record: :class:`Sinks` calls
each in turn, and one that raises is detached, the others (the recorder is always first) go
on, the remaining sinks get a message, and :attr:`Sinks.failures` lists it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from limbtree.trees.stream import RunEnd, RunHeader, TickSink, TickSnapshot


@dataclass
class SinkFailure:
    """A sink that raised and was detached.

    Attributes:
        sink: the sink's class name.
        t: when [s, mission time].
        error: what it raised.
    """

    sink: str
    t: float
    error: str


class Sinks:
    """The run's sinks, in order.

    Args:
        sinks: the sinks.
        now: the mission time [s], for the failure's record.
        on_failure: called with each failure (the runner records an event).
    """

    def __init__(
        self,
        sinks: Iterable[TickSink],
        now: Callable[[], float],
        on_failure: Callable[[SinkFailure], None] = lambda failure: None,
    ) -> None:
        self.sinks: list[TickSink] = list(sinks)
        self.now = now
        self.on_failure = on_failure
        self.failures: list[SinkFailure] = []

    def __len__(self) -> int:
        return len(self.sinks)

    def _failed(self, sink: TickSink, exc: Exception) -> None:
        self.sinks.remove(sink)
        t = self.now()
        failure = SinkFailure(type(sink).__name__, t, f"{type(exc).__name__}: {exc}")
        self.failures.append(failure)
        self.on_failure(failure)
        self.message(f"t={t:7.2f} s  {failure.sink} failed and was detached: {failure.error}")

    def _each(self, call: Callable[[TickSink], object]) -> None:
        """``call`` on every sink in turn; one that raises is detached, the others go on."""
        for sink in list(self.sinks):
            try:
                call(sink)
            except Exception as exc:  # a sink's bug must not stop the robot nor the record
                self._failed(sink, exc)

    def start(self, header: RunHeader) -> None:
        """``on_start`` to every sink."""
        self._each(lambda sink: sink.on_start(header))

    def tick(self, snapshot: TickSnapshot) -> None:
        """``on_tick`` to every sink."""
        self._each(lambda sink: sink.on_tick(snapshot))

    def message(self, text: str) -> None:
        """``on_message`` to every sink."""
        self._each(lambda sink: sink.on_message(text))

    def pause(self, paused: bool, t: float) -> None:
        """``on_pause`` to every sink."""
        self._each(lambda sink: sink.on_pause(paused, t))

    def end(self, end: RunEnd) -> None:
        """``on_end`` to every sink."""
        self._each(lambda sink: sink.on_end(end))


__all__ = ["SinkFailure", "Sinks"]
