"""Temporary folders a run owns, and those a killed run left behind.

``limbtree run`` makes two kinds of temporary folder: its simulated agents' output when
there is no ``--record`` (``limbtree-agents-*``) and their Unix sockets
(``limbtree-ipc-*``). It removes them when it ends, however it ends, except when it is
killed with SIGKILL (or the machine stops): then they stay, one pair per killed run.

Each folder therefore holds a lock file that its process keeps locked (``flock``) for as
long as it uses the folder; the kernel releases the lock when the process ends, however it
ends (and only then: agents forked from the run share it). Making a folder of a kind first
removes the folders of that kind, in the same temporary directory and of the same user,
whose lock no one holds. A folder kept on purpose (agent output that an error message
points to) gives up its lock file and stays.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from typing import Final

#: The lock file in each folder: locked by the process that uses the folder.
LOCK_NAME: Final = ".limbtree-owner"


class OwnedTempDir:
    """A fresh temporary folder, locked by this process until removed or kept.

    Making one first removes the folders with the same prefix that a killed run left
    (:func:`remove_left_behind`).

    Args:
        prefix: the start of the folder's name (``limbtree-ipc-``).
        parent: where to make it; the temporary directory (``TMPDIR``) by default.
    """

    def __init__(self, prefix: str, parent: Path | None = None) -> None:
        remove_left_behind(prefix, parent)
        self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        # Locked under another name, then renamed: a folder being made is never one whose
        # lock file a sweep could take.
        making = self.path / f"{LOCK_NAME}.new"
        self._fd: int | None = os.open(making, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.rename(making, self.path / LOCK_NAME)

    def remove(self) -> None:
        """Remove the folder and what is in it (nothing when it is gone already)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def keep(self) -> None:
        """Keep the folder for the user to read: no later run removes it."""
        with contextlib.suppress(OSError):
            (self.path / LOCK_NAME).unlink()
        self._release()

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def remove_left_behind(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the folders named ``prefix*`` whose process is gone (see the module's text).

    Only this user's folders with a lock file that no process holds are removed: not
    another user's, not one in use, not one kept on purpose, nor one made by an older
    limbtree (no lock file).

    Args:
        prefix: the start of the folders' names.
        parent: where to look; the temporary directory by default.

    Returns:
        The folders removed.
    """
    where = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = [e for e in where.iterdir() if e.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in entries:
        try:
            if not entry.is_dir() or entry.is_symlink() or entry.stat().st_uid != os.getuid():
                continue
            fd = os.open(entry / LOCK_NAME, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # (held: in use)
            os.close(fd)
            continue
        try:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
        finally:
            os.close(fd)
    return removed


__all__ = ["LOCK_NAME", "OwnedTempDir", "remove_left_behind"]
