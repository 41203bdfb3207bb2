"""Agents started by a test as a limb's own computer would run them: ``limbtree agent``.

The test is the agent's supervisor, not the runner: it starts the process at a fixed
address the mission names, and must kill it in its ``finally``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from limbtree.transport import ping_endpoint
from limbtree.transport.errors import TransportError


def start_agent(
    endpoint: str, log: Path, robot: str = "light_limb", clock: str = "sim"
) -> subprocess.Popen[bytes]:
    """``limbtree agent`` of ``robot`` (limb ``arm``) on ``endpoint``, output to ``log``."""
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "limbtree", "agent", "--robot", robot,
             "--bind", endpoint, "--clock", clock, "--name", "arm"],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip


def wait_until_it_answers(endpoint: str, agent: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until the agent answers a ping; fails with its log when it died or never did."""
    deadline = time.monotonic() + 120.0  # a safety limit: an agent starts in seconds
    while True:
        assert agent.poll() is None, log.read_text()
        try:
            ping_endpoint(endpoint, timeout_s=1.0)
        except TransportError:
            assert time.monotonic() < deadline, log.read_text()
            continue
        return
