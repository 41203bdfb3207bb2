"""Shared fixtures: free port pairs, in-thread limb agents, limb clients, agent processes.

Every agent, client and process made through these fixtures is closed or killed at teardown.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_driver import free_port_pair
from hypothesis import settings

from limbtree.transport import ConfigError, LimbAgent, LimbClient

TESTS_DIR = Path(__file__).resolve().parent

# No per-example deadline: on a shared, loaded machine a 200 ms deadline is a timed assertion
# that fails for reasons that have nothing to do with the code (performance is checked by the
# benchmarks, never by tests).
settings.register_profile("limbtree", deadline=None)
settings.load_profile("limbtree")


@pytest.fixture
def free_port() -> Callable[[], int]:
    """Call it for a port N with N and N+1 free on 127.0.0.1."""
    return free_port_pair


@pytest.fixture
def bound_agent() -> Iterator[Callable[..., LimbAgent]]:
    """Start in-thread agents of a robot on a given endpoint: ``bound_agent("light_limb",
    "ipc://PATH", **kwargs)``; stopped at teardown."""
    from limbtree.robots import make_plant

    agents: list[LimbAgent] = []

    def make(robot: str, bind: str, **kwargs: Any) -> LimbAgent:
        agent = LimbAgent(make_plant(robot), bind, **kwargs)
        agents.append(agent)
        agent.start_in_thread()
        return agent

    yield make
    for agent in agents:
        agent.stop(timeout_s=5.0)


@pytest.fixture
def make_agent() -> Iterator[Callable[..., LimbAgent]]:
    """Start in-thread agents: ``make_agent(driver, clock="sim", **kwargs)``; stopped at teardown.

    The agent binds a fresh free port pair (retried if another process took it meanwhile).
    """
    agents: list[LimbAgent] = []

    def make(driver: Any, **kwargs: Any) -> LimbAgent:
        for _ in range(5):
            port = free_port_pair()
            try:
                agent = LimbAgent(driver, f"tcp://127.0.0.1:{port}", **kwargs)
            except ConfigError:
                continue
            agents.append(agent)
            agent.start_in_thread()
            return agent
        raise RuntimeError("could not bind an agent on a free port pair")

    yield make
    for agent in agents:
        agent.stop(timeout_s=5.0)


@pytest.fixture
def make_client() -> Iterator[Callable[..., LimbClient]]:
    """Make limb clients: ``make_client(endpoint, **kwargs)``; closed at teardown."""
    clients: list[LimbClient] = []

    def make(endpoint: str, **kwargs: Any) -> LimbClient:
        client = LimbClient(endpoint, **kwargs)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def agent_process() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start agent processes serving ``tests/fake_driver.py``; killed at teardown.

    ``agent_process(port, "--clock", "sim", ...)`` passes the extra arguments to the script.
    """
    procs: list[subprocess.Popen[bytes]] = []

    def start(port: int, *args: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(TESTS_DIR / "fake_driver.py"),
                "--bind",
                f"tcp://127.0.0.1:{port}",
                *args,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
