"""Driving the page from a headless Chromium: where the browser is, and how to start it.

For the browser tests, ``benchmarks/web.py`` and a user's own automation (Playwright's
``chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)``). Debian's
``chromium`` package is the browser: nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable naming the Chromium binary to use.
CHROMIUM_ENV = "LIMBTREE_CHROMIUM"
#: Headless flags for a machine with no GPU and no outside network: without the
#: background-networking ones Chromium keeps reaching for Google's hosts.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str | None:
    """The Chromium binary: ``LIMBTREE_CHROMIUM``, else ``/usr/bin/chromium``; None if neither."""
    for candidate in (os.environ.get(CHROMIUM_ENV), "/usr/bin/chromium"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


__all__ = ["CHROMIUM_ARGS", "CHROMIUM_ENV", "chromium_path"]
