"""Several sim-clock agents served from one loop in one process (transport/host.py, issue 11).

Each agent keeps its own ports, plant and state; a shutdown ends its own agent only; the
host ends when none is left or when it is stopped; real-clock and CURVE agents are refused.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_driver import FakeDriver, free_port_pair, wait_until

from limbtree.transport import ConfigError, LimbClient, PlantAgent, TransportError
from limbtree.transport.exposure import ShutdownPolicy
from limbtree.transport.host import AgentHost

Host = tuple[AgentHost, threading.Thread, list[FakeDriver], list[str]]


@pytest.fixture
def hosted() -> Iterator[Callable[..., Host]]:
    """``hosted(n, **agent_kwargs)``: a host of n fake-driver agents, run in a thread."""
    started: list[tuple[AgentHost, threading.Thread]] = []

    def start(n: int, **kwargs: Any) -> Host:
        drivers = [FakeDriver() for _ in range(n)]
        endpoints = [f"tcp://127.0.0.1:{free_port_pair()}" for _ in range(n)]

        def make(context: Any) -> list[PlantAgent]:
            return [
                PlantAgent(d, e, clock="sim", context=context, **kwargs)
                for d, e in zip(drivers, endpoints, strict=True)
            ]

        host = AgentHost(make)
        thread = threading.Thread(target=host.run, daemon=True)
        thread.start()
        started.append((host, thread))
        return host, thread, drivers, endpoints

    yield start
    for host, thread in started:
        host.request_stop()
        thread.join(timeout=5.0)


@pytest.fixture
def clients() -> Iterator[Callable[[str], LimbClient]]:
    made: list[LimbClient] = []

    def make(endpoint: str) -> LimbClient:
        client = LimbClient(endpoint)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def test_each_hosted_agent_steps_its_own_plant(
    hosted: Callable[..., Host], clients: Callable[[str], LimbClient]
) -> None:
    host, _, drivers, endpoints = hosted(3)
    links = [clients(e) for e in endpoints]
    for k, link in enumerate(links):
        link.describe(timeout_s=5.0)
        link.command("joint_position", q=[0.1 * (k + 1)] * 3, timeout_s=5.0)
    for step in range(1, 6):
        states = [link.step(step * 0.1, timeout_s=5.0) for link in links]
        assert [s.t for s in states] == pytest.approx([step * 0.1] * 3)
    # Each plant moved toward its own target (1 m/s for 0.5 s reaches 0.1, 0.2, 0.3).
    for k, link in enumerate(links):
        assert link.state is not None
        assert link.state.q == pytest.approx([0.1 * (k + 1)] * 3)
    assert [d.t for d in drivers] == pytest.approx([0.5] * 3)
    assert len(host.agents) == 3


def test_a_shutdown_ends_its_own_agent_and_the_host_serves_the_others(
    hosted: Callable[..., Host], clients: Callable[[str], LimbClient]
) -> None:
    _, thread, drivers, endpoints = hosted(2, shutdown=ShutdownPolicy(allow_remote=True))
    first, second = clients(endpoints[0]), clients(endpoints[1])
    first.describe(timeout_s=5.0)
    second.describe(timeout_s=5.0)
    first.shutdown(timeout_s=5.0)
    assert wait_until(lambda: drivers[0].closed, 5.0)
    assert not drivers[1].closed and thread.is_alive()
    assert second.step(0.1, timeout_s=5.0).t == pytest.approx(0.1)
    second.shutdown(timeout_s=5.0)
    thread.join(timeout=5.0)
    assert not thread.is_alive() and drivers[1].closed  # none left: the host ended


def test_stopping_the_host_closes_every_agent(hosted: Callable[..., Host]) -> None:
    host, thread, drivers, _ = hosted(2)
    host.request_stop()
    thread.join(timeout=5.0)
    assert not thread.is_alive()
    assert all(d.closed for d in drivers)
    with pytest.raises(TransportError, match="closed"):
        host.agents[0].begin_hosted()


def test_a_real_clock_agent_is_refused_and_the_others_are_closed() -> None:
    drivers = [FakeDriver(), FakeDriver()]

    def make(context: Any) -> list[PlantAgent]:
        return [
            PlantAgent(drivers[0], f"tcp://127.0.0.1:{free_port_pair()}", clock="sim",
                       context=context),
            PlantAgent(drivers[1], f"tcp://127.0.0.1:{free_port_pair()}", clock="real",
                       context=context),
        ]  # fmt: skip

    with pytest.raises(ConfigError, match="only a sim-clock agent"):
        AgentHost(make)
    assert all(d.closed for d in drivers)


def test_a_host_needs_an_agent() -> None:
    with pytest.raises(ConfigError, match="at least one agent"):
        AgentHost(lambda context: [])


def test_an_agent_with_curve_keys_cannot_share_a_context(tmp_path: Path) -> None:
    import zmq

    from limbtree.transport import generate_keys

    generate_keys(tmp_path)
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        with pytest.raises(ConfigError, match="its own ZeroMQ context"):
            PlantAgent(
                FakeDriver(), f"tcp://127.0.0.1:{free_port_pair()}", clock="sim",
                keys_dir=tmp_path, context=context,
            )  # fmt: skip
    finally:
        context.term()


def _agents_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "limbtree", "agents", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("each", "says"),
    [
        ("--robot light_limb --bind tcp://127.0.0.1:5555 --clock real", "add --clock sim"),
        ("--robot light_limb --bind tcp://127.0.0.1:5555", "has the real clock"),
        ("--robot light_limb --bind tcp://127.0.0.1:5555 --clock sim --keys K", "--keys"),
        ("--robot light_limb --bind tcp://127.0.0.1:5555 --clock sim --parent-pid 1",
         "--parent-pid"),
        ("--robot light_limb --clock sim", "not a valid limbtree agent command line"),
        # (a reviewer's unbalanced quote ended in a traceback, "No closing quotation")
        ("--robot 'light_limb --bind tcp://127.0.0.1:5555 --clock sim",
         "cannot be split into arguments (no closing quotation)"),
    ],
)  # fmt: skip
def test_limbtree_agents_names_what_it_cannot_host(each: str, says: str) -> None:
    done = _agents_command("--each", each)
    assert done.returncode != 0
    assert says in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("first", "second", "address"),
    [
        ("ipc://{tmp}/arm", "ipc://{tmp}/arm", "ipc://{tmp}/arm"),
        ("tcp://127.0.0.1:{port}", "tcp://127.0.0.1:{port1}", "tcp://127.0.0.1:{port1}"),
    ],
)
def test_limbtree_agents_refuses_two_agents_on_one_address_before_binding(
    first: str, second: str, address: str, tmp_path: Path
) -> None:
    # (the second ipc agent was refused once the first had bound, naming this very process
    # as "another agent" holding the path)
    port = free_port_pair()
    names = {"tmp": tmp_path, "port": port, "port1": port + 1}
    binds = [form.format(**names) for form in (first, second)]
    each = [f"--robot light_limb --bind {bind} --clock sim" for bind in binds]
    done = _agents_command("--each", each[0], "--each", each[1])
    assert done.returncode == 1
    assert f"--each {each[1]!r} binds {address.format(**names)}, as --each {each[0]!r} does" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr and "plant agent" not in done.stderr
    assert not (tmp_path / "arm").exists()


def test_limbtree_agents_serves_two_robots_from_one_process(
    clients: Callable[[str], LimbClient],
) -> None:
    ports = [free_port_pair(), free_port_pair()]
    process = subprocess.Popen(
        [sys.executable, "-m", "limbtree", "agents",
         "--each", f"--robot light_limb --bind tcp://127.0.0.1:{ports[0]} --clock sim "
                   "--name left --allow-remote-shutdown",
         "--each", f"--robot heavy_limb --bind tcp://127.0.0.1:{ports[1]} --clock sim "
                   "--name right --allow-remote-shutdown"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        links = [clients(f"tcp://127.0.0.1:{p}") for p in ports]
        robots = [link.describe(timeout_s=60.0).plant.robot for link in links]
        assert robots == ["light_limb", "heavy_limb"]
        assert [link.step(0.05, timeout_s=5.0).t for link in links] == pytest.approx([0.05] * 2)
        for link in links:
            link.shutdown(timeout_s=5.0)
        assert process.wait(timeout=20) == 0
        assert process.stderr is not None
        log = process.stderr.read().decode()
        assert "plant agent left: robot 'light_limb'" in log
        assert "plant agent right: robot 'heavy_limb'" in log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()
