"""Record directories as a run leaves them, for tests of the readers (view, report, sweep)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from limbtree.trees.recorder import lock_record_dir


@contextmanager
def held_by_a_run(directory: Path) -> Iterator[None]:
    """The record directory's lock held, as the run still writing the record holds it."""
    lock = lock_record_dir(directory)
    assert lock is not None, f"{directory} is locked already"
    try:
        yield
    finally:
        os.close(lock)
