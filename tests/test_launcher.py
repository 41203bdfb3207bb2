"""The runner's simulated agents: real processes on loopback, ports that do not collide."""

from __future__ import annotations

import shutil
import socket
import stat
import tempfile
from pathlib import Path

import pytest

import limbtree.trees.launcher as launcher
from limbtree.tempdirs import OwnedTempDir
from limbtree.transport import LimbClient
from limbtree.trees.errors import RunError
from limbtree.trees.launcher import SimAgents, SimAgentSpec, free_port_pairs


def answers(endpoint: str, timeout_s: float) -> bool:
    client = LimbClient(endpoint, subscribe=False)
    try:
        client.ping(timeout_s=timeout_s)
        return True
    except Exception:
        return False
    finally:
        client.close()


def test_port_pairs_are_distinct_and_do_not_overlap():
    ports = free_port_pairs(64)
    taken = [p for port in ports for p in (port, port + 1)]
    assert len(set(taken)) == len(taken) == 128


@pytest.mark.slow
def test_an_agent_whose_port_was_taken_is_started_again_on_another(tmp_path, monkeypatch):
    # Another program binds the port between the search and the agent's start.
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    calls = []

    def search(count, *args):
        calls.append(count)
        return [taken] * count if len(calls) == 1 else free_port_pairs(count, *args)

    monkeypatch.setattr(launcher, "free_port_pairs", search)
    spec = SimAgentSpec("arm", "light_limb", None, seed=1, clock="sim")
    try:
        with SimAgents([spec], tmp_path, transport="tcp") as agents:
            endpoints = agents.start(answers)
            assert endpoints["arm"] != f"tcp://127.0.0.1:{taken}"
            assert answers(endpoints["arm"], 2.0)
            assert len(calls) == 2
    finally:
        squatter.close()


@pytest.mark.slow
def test_an_agent_that_cannot_start_is_named_with_its_log(tmp_path):
    spec = SimAgentSpec("arm", "light_limb", None, seed=1, clock="sim",
                        options=(("flex", "-1"),))  # fmt: skip
    with SimAgents([spec], tmp_path) as agents, pytest.raises(RunError) as raised:
        agents.start(answers)
    message = str(raised.value)
    assert "limb arm (light_limb) exited" in message
    log = Path(message.rsplit("see ", 1)[1])
    assert "flex" in log.read_text()


@pytest.mark.parametrize(
    "base",
    [
        (0.0, 1.5, 0.0, 0.0, 0.0, 1.0, 0.0),  # turned 180 degrees about z
        (-1.0, -1.5, 0.0, 0.0, 0.0, 1.0, 0.0),  # (a value starting with "-" is no option)
    ],
)
def test_a_limb_on_a_turned_base_is_served_with_its_base_in_the_world(tmp_path, base):
    spec = SimAgentSpec("leg", "moonbot_zero", "leg_2", seed=1, clock="sim", base=base)
    with SimAgents([spec], tmp_path) as agents:
        endpoint = agents.start(answers)["leg"]
        with LimbClient(endpoint, limb="leg_2", subscribe=False) as client:
            plant = client.describe(timeout_s=10).plant
    assert plant.limb_names == ("leg_2",)
    assert plant.base_pose == pytest.approx(base)


def _spec(limb: str, clock: str = "sim") -> SimAgentSpec:
    return SimAgentSpec(limb, "light_limb", None, seed=1, clock=clock)


def test_sim_clock_agents_are_dealt_round_robin_and_real_clock_ones_stay_alone():
    specs = [_spec(f"l{i}") for i in range(5)] + [_spec("r", clock="real")]
    groups = launcher.process_groups(specs, processes=2)
    assert [[s.limb for s in g] for g in groups] == [["l0", "l2", "l4"], ["l1", "l3"], ["r"]]
    # Never more processes than agents, never fewer than one.
    assert len(launcher.process_groups(specs[:2], processes=8)) == 2
    assert len(launcher.process_groups(specs[:2], processes=1)) == 1


def test_the_process_count_comes_from_the_environment_or_the_cores(monkeypatch):
    assert launcher.agent_processes({launcher.PROCESSES_ENV: "3"}) == 3
    monkeypatch.setattr(launcher.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert launcher.agent_processes({}) == 4
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(RunError, match=f"{launcher.PROCESSES_ENV}='{bad}'.*whole number"):
            launcher.agent_processes({launcher.PROCESSES_ENV: bad})


@pytest.mark.parametrize("forked", [True, False])
def test_agents_sharing_a_process_each_answer_on_their_own_ports_and_all_stop(
    tmp_path: Path, forked: bool
) -> None:
    specs = [_spec("a"), _spec("b"), _spec("c")]
    agents = SimAgents(specs, tmp_path, processes=2, forked=forked)
    with agents:
        endpoints = agents.start(answers)
        assert len(set(endpoints.values())) == 3
        assert all(answers(e, 2.0) for e in endpoints.values())
        processes = {id(agents._processes[limb]) for limb in "abc"}
        assert len(processes) == 2
        assert agents.log_of("a") == agents.log_of("c") == tmp_path / "agents-1.log"
        assert agents.log_of("b") == tmp_path / "agent-b.log"  # alone: a plain agent
        handles = list(agents._processes.values())
    assert all(p.poll() is not None for p in handles)
    assert "plant agent a: robot 'light_limb'" in (tmp_path / "agents-1.log").read_text()


def test_a_killed_process_of_several_agents_names_every_limb_it_served(tmp_path: Path) -> None:
    # (a reviewer killed one shared process: the run's message named one of its three limbs)
    specs = [_spec("a"), _spec("b"), _spec("c")]
    agents = SimAgents(specs, tmp_path, processes=2, forked=False)
    with agents:
        agents.start(answers)
        shared = agents._processes["a"]
        shared.kill()
        shared.wait()
        assert agents.exit_of("a") == (
            f"was killed by SIGKILL (the same process served c); see {tmp_path}/agents-1.log"
        )
        assert agents.exit_of("b") is None  # (its own process still runs)


def test_agents_serve_on_unix_sockets_in_a_folder_of_their_own_removed_with_them(tmp_path):
    specs = [_spec("arm"), _spec("leg 2"), _spec("light")]
    agents = SimAgents(specs, tmp_path, processes=2)
    with agents:
        endpoints = agents.start(answers)
        folder = agents.socket_dir
        assert agents.transport == "ipc" and folder is not None
        # Only this user enters it: loopback TCP would let any local user reach the agents.
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert endpoints == {
            "arm": f"ipc://{folder}/arm",
            "leg 2": f"ipc://{folder}/limb.1",  # (not a plain name: its index)
            "light": f"ipc://{folder}/light",
        }
        assert all(answers(e, 2.0) for e in endpoints.values())
    assert not folder.exists()
    assert agents.socket_dir is None


def test_agents_serve_on_loopback_tcp_when_asked_or_when_socket_paths_would_be_too_long(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(launcher.TRANSPORT_ENV, "tcp")
    with SimAgents([_spec("arm")], tmp_path) as agents:
        assert agents.start(answers)["arm"].startswith("tcp://127.0.0.1:")
        assert agents.socket_dir is None
    monkeypatch.delenv(launcher.TRANSPORT_ENV)
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    with SimAgents([_spec("arm")], tmp_path) as agents:
        endpoint = agents.start(answers)["arm"]
        assert agents.transport == "tcp" and endpoint.startswith("tcp://127.0.0.1:")
        assert answers(endpoint, 2.0)
    assert list(deep.iterdir()) == []  # (the folder made for the sockets is gone too)


def test_the_transport_comes_from_the_environment():
    assert launcher.agent_transport({}) == "ipc"
    assert launcher.agent_transport({launcher.TRANSPORT_ENV: " tcp "}) == "tcp"
    assert launcher.agent_transport({launcher.TRANSPORT_ENV: "ipc"}) == "ipc"
    with pytest.raises(RunError, match=f"{launcher.TRANSPORT_ENV}='udp': give ipc .* or tcp"):
        launcher.agent_transport({launcher.TRANSPORT_ENV: "udp"})


@pytest.mark.slow
def test_agents_whose_unix_sockets_cannot_be_made_are_started_again_on_loopback_tcp(
    tmp_path, monkeypatch
):
    # A temporary folder where no socket can be made (as on some network file systems):
    # here, one that is gone by the time the agents bind.
    def gone(prefix: str) -> OwnedTempDir:
        folder = OwnedTempDir(prefix, tmp_path)
        shutil.rmtree(folder.path)
        return folder

    monkeypatch.setattr(launcher, "OwnedTempDir", gone)
    specs = [_spec("a"), _spec("b"), _spec("c")]
    with SimAgents(specs, tmp_path, processes=2) as agents:
        endpoints = agents.start(answers)
        assert all(e.startswith("tcp://127.0.0.1:") for e in endpoints.values()), endpoints
        assert all(answers(e, 2.0) for e in endpoints.values())
