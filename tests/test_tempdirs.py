"""The temporary folders of a run, and those a run killed with SIGKILL left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from limbtree.tempdirs import LOCK_NAME, OwnedTempDir, remove_left_behind

PREFIX = "limbtree-ipc-"

#: A process that makes a folder, says where, and waits to be killed.
HOLDER = """
import sys, time
from pathlib import Path
from limbtree.tempdirs import OwnedTempDir
folder = OwnedTempDir(sys.argv[1], Path(sys.argv[2]))
(folder.path / "agent.log").write_text("output")
print(folder.path, flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A live process holding a folder in ``tmp_path``."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, PREFIX, str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        yield process, Path(process.stdout.readline().strip())
    finally:
        process.kill()
        process.wait(30)


def test_a_folder_of_a_process_killed_with_sigkill_goes_when_the_next_is_made(holder, tmp_path):
    process, left = holder
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    assert (left / "agent.log").exists()  # (what SIGKILL leaves)
    new = OwnedTempDir(PREFIX, tmp_path)
    assert not left.exists()
    assert sorted(tmp_path.iterdir()) == [new.path]
    new.remove()
    assert list(tmp_path.iterdir()) == []


def test_a_folder_in_use_stays(holder, tmp_path):
    _, used = holder
    assert remove_left_behind(PREFIX, tmp_path) == []
    new = OwnedTempDir(PREFIX, tmp_path)
    assert (used / "agent.log").exists()
    assert remove_left_behind(PREFIX, tmp_path) == []  # (new is in use too)
    new.remove()


def test_only_folders_of_the_kind_with_a_lock_no_one_holds_go(tmp_path):
    kept = OwnedTempDir(PREFIX, tmp_path)
    kept.keep()  # (an error message names a file in it)
    other_kind = OwnedTempDir("limbtree-agents-", tmp_path)
    os.close(other_kind._fd or -1)  # (as if its process were gone)
    other_kind._fd = None
    unlocked = tmp_path / f"{PREFIX}old"  # made by an older limbtree, or by hand
    unlocked.mkdir()
    a_file = tmp_path / f"{PREFIX}file"
    a_file.write_text("not a folder")
    (tmp_path / f"{PREFIX}link").symlink_to(other_kind.path)
    assert remove_left_behind(PREFIX, tmp_path) == []
    assert kept.path.is_dir() and not (kept.path / LOCK_NAME).exists()
    assert unlocked.is_dir() and a_file.is_file() and other_kind.path.is_dir()
    assert remove_left_behind("limbtree-agents-", tmp_path) == [other_kind.path]
    assert not other_kind.path.exists()


def test_a_folder_removed_twice_or_kept_after_removal_is_no_error(tmp_path):
    folder = OwnedTempDir(PREFIX, tmp_path)
    folder.remove()
    folder.remove()
    folder.keep()
    assert list(tmp_path.iterdir()) == []
