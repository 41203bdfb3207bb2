"""Issue 12, safety item 2: exposed binds need keys or --insecure; shutdown needs the owner.

And ``ee_twist`` / ``joint_torque`` commands have a deadline: a limb whose client went quiet
comes to rest by itself.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import pytest
import zmq
from fake_driver import FakeDriver, free_port_pair, wait_until

from limbtree.robots import make_plant
from limbtree.transport import AgentClient, ConfigError, PlantAgent, RemoteError
from limbtree.transport.deadline import DEADLINE_DETAIL_KEY, DEFAULT_COMMAND_DEADLINE_S
from limbtree.transport.exposure import (
    SHUTDOWN_TOKEN_ENV,
    ShutdownPolicy,
    check_exposure,
    is_loopback_host,
)
from limbtree.trees.cli import main

pytestmark = pytest.mark.timeout(60)

MakeAgent = Callable[..., PlantAgent]


@pytest.fixture
def client() -> Iterator[Callable[..., AgentClient]]:
    clients: list[AgentClient] = []

    def make(endpoint: str, **kwargs: Any) -> AgentClient:
        made = AgentClient(endpoint, **kwargs)
        clients.append(made)
        return made

    yield make
    for made in clients:
        made.close()


# --- exposed binds ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("*", False),
        ("192.0.2.10", False),
        ("[::]", False),
        ("robot.local", False),
    ],
)
def test_is_loopback_host(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_an_agent_refuses_a_network_bind_without_keys_naming_keys_and_insecure() -> None:
    port = free_port_pair()
    with pytest.raises(ConfigError) as caught:
        PlantAgent(FakeDriver(), f"tcp://0.0.0.0:{port}")
    message = str(caught.value)
    assert "--keys" in message and "--insecure" in message and "every network interface" in message


def test_insecure_network_bind_is_allowed_with_a_warning() -> None:
    warning = check_exposure("tcp://0.0.0.0:5550", curve=False, insecure=True)
    assert warning is not None and "WITHOUT authentication" in warning and "--keys" in warning
    assert check_exposure("tcp://0.0.0.0:5550", curve=True, insecure=False) is None
    assert check_exposure("tcp://127.0.0.1:5550", curve=False, insecure=False) is None


def test_an_insecure_agent_logs_the_warning(caplog: pytest.LogCaptureFixture) -> None:
    port = free_port_pair()
    with caplog.at_level(logging.WARNING, logger="limbtree.transport.agent"):
        agent = PlantAgent(FakeDriver(), f"tcp://*:{port}", insecure=True)
    agent.close()
    assert any("WITHOUT authentication" in r.getMessage() for r in caplog.records)


def test_limbtree_agent_refuses_a_network_bind_before_loading_the_robot(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = free_port_pair()
    status = main(["agent", "--robot", "no_such_robot", "--bind", f"tcp://0.0.0.0:{port}"])
    err = capsys.readouterr().err
    assert status == 1
    assert "limbtree agent:" in err and "--keys" in err and "--insecure" in err


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--clock", "sim", "--rate", "5"], "--rate sets the real clock's state stream"),
        (["--quiet-steps"], "--quiet-steps is for the sim clock"),
        (["--keys", "keys", "--insecure"], "--insecure is for an agent without --keys"),
    ],
)
def test_limbtree_agent_refuses_flags_that_would_do_nothing(
    flags: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bind = f"tcp://127.0.0.1:{free_port_pair()}"
    status = main(["agent", "--robot", "no_such_robot", "--bind", bind, *flags])
    err = capsys.readouterr().err
    assert status == 1
    assert f"limbtree agent: {says}" in err and err.rstrip().endswith(": drop it")


@pytest.mark.parametrize(
    ("rate", "says"),
    [
        ("-5", "--rate must be a finite number > 0, got '-5'"),
        ("nan", "--rate must be a finite number > 0, got 'nan'"),
        ("fast", "--rate wants a number of updates a second, got 'fast'"),
        ("1e9", "--rate must be at most 10000 Hz (faster, the agent's loop only spins), got '1e9'"),
    ],
)
def test_limbtree_agent_names_a_bad_rate_by_its_flag(rate: str, says: str, capsys) -> None:
    # -5 and nan were named as the Python parameter stream_rate_hz; 1e9 spun a core.
    bind = f"tcp://127.0.0.1:{free_port_pair()}"
    with pytest.raises(SystemExit):
        main(["agent", "--robot", "light_limb", "--bind", bind, "--rate", rate])
    assert f"argument --rate: {says}" in capsys.readouterr().err


@pytest.mark.parametrize("rate", ["0.5", "19.9"])
def test_limbtree_agent_refuses_a_hardware_driver_updated_too_slowly(
    rate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each update sends a setpoint up to max_speed / rate from the last: at 0.5 Hz a 2 s
    # jump, which a position servo covers at its own speed, faster than the limit.
    bind = f"tcp://127.0.0.1:{free_port_pair()}"
    argv = ["agent", "--robot", "no_such_robot", "--bind", bind, "--driver", "my.bus:Driver"]
    status = main([*argv, "--rate", rate])
    err = capsys.readouterr().err
    assert status == 1
    assert f"limbtree agent: --rate {rate} Hz is too slow for a hardware driver" in err
    assert "give --rate 20 or more (the default is 100)" in err
    status = main([*argv, "--rate", "20"])  # (gets as far as the robot)
    assert "no_such_robot" in capsys.readouterr().err


def test_limbtree_agent_refuses_a_seed_for_a_hardware_driver(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A real limb has no simulated noise: --seed was parsed and then dropped in silence.
    bind = f"tcp://127.0.0.1:{free_port_pair()}"
    argv = ["agent", "--robot", "no_such_robot", "--bind", bind, "--driver", "my.bus:Driver"]
    assert main([*argv, "--seed", "3"]) == 1
    err = capsys.readouterr().err
    assert "limbtree agent: --seed seeds the simulated limbs' noise; --driver my.bus:Driver " in err
    assert "drives a real limb: drop it" in err
    assert main([*argv, "--seed", "3", "--driver", "sim"]) == 1  # (gets as far as the robot)
    assert "no_such_robot" in capsys.readouterr().err


# --- shutdown -----------------------------------------------------------------------------


def test_shutdown_is_refused_by_default_and_the_agent_goes_on(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(FakeDriver(), clock="sim")
    remote = client(agent.request_endpoint)
    with pytest.raises(RemoteError) as caught:
        remote.shutdown(timeout_s=5)
    assert caught.value.code == "shutdown_refused"
    assert "--allow-remote-shutdown" in str(caught.value)
    remote.ping(timeout_s=5)
    assert not agent.closed
    assert agent.errors_received == {}  # refused, but not a malformed request


def test_shutdown_with_a_wrong_token_is_refused(
    make_agent: MakeAgent, client: Callable[..., AgentClient], caplog: pytest.LogCaptureFixture
) -> None:
    agent = make_agent(FakeDriver(), clock="sim", shutdown=ShutdownPolicy(token="right"))
    remote = client(agent.request_endpoint)
    with pytest.raises(RemoteError, match="shutdown_refused"):
        remote.shutdown(timeout_s=5, token="wrong")
    remote.ping(timeout_s=5)
    # The agent's log says why: the token given was not the owner's (not that none came).
    assert (
        "shutdown request refused (the request's token is not the owner's; not started "
        "with --allow-remote-shutdown)" in caplog.text
    )


def test_a_refused_shutdown_is_logged_with_its_reason() -> None:
    owned, unowned = ShutdownPolicy(token="right"), ShutdownPolicy()
    assert owned.why_refused(None).startswith("the request carried no token;")
    assert owned.why_refused("wrong").startswith("the request's token is not the owner's;")
    assert unowned.why_refused("any").startswith("the request carried a token, but this agent")


def test_shutdown_with_the_owner_token_stops_the_agent(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(FakeDriver(), clock="sim", shutdown=ShutdownPolicy(token="right"))
    client(agent.request_endpoint).shutdown(timeout_s=5, token="right")
    assert wait_until(lambda: agent.closed, 5)


def test_allow_remote_shutdown_lets_anyone_stop_the_agent(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(FakeDriver(), clock="sim", shutdown=ShutdownPolicy(allow_remote=True))
    client(agent.request_endpoint).shutdown(timeout_s=5)
    assert wait_until(lambda: agent.closed, 5)


@pytest.mark.slow
def test_limbtree_agent_stops_only_for_the_token_its_launcher_gave_it(
    client: Callable[..., AgentClient],
) -> None:
    port = free_port_pair()
    env = dict(os.environ, **{SHUTDOWN_TOKEN_ENV: "owner-secret"})
    process = subprocess.Popen(
        [sys.executable, "-m", "limbtree", "agent", "--robot", "light_limb",
         "--bind", f"tcp://127.0.0.1:{port}", "--clock", "sim"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        remote = client(f"tcp://127.0.0.1:{port}")
        remote.describe(timeout_s=45)
        with pytest.raises(RemoteError, match="shutdown_refused"):
            remote.shutdown(timeout_s=5)
        remote.shutdown(timeout_s=5, token="owner-secret")
        assert process.wait(timeout=15) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


# --- command deadlines --------------------------------------------------------------------

TWIST = [0.02, 0.0, 0.0, 0.0, 0.0, 0.0]


def _steps(remote: AgentClient, limb: str, start: float, end: float, dt: float) -> list[Any]:
    states = []
    k = 1
    while start + k * dt <= end + 1e-9:
        states.append(remote.step(start + k * dt, timeout_s=5).states[limb])
        k += 1
    return states


def test_an_ee_twist_without_a_new_command_stops_at_its_default_deadline(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(make_plant("light_limb"), clock="sim")
    remote = client(agent.request_endpoint)
    remote.step(0.01, timeout_s=5)
    remote.command("arm", "ee_twist", timeout_s=5, twist=TWIST)
    dt = 0.01
    before = _steps(remote, "arm", 0.01, 0.01 + DEFAULT_COMMAND_DEADLINE_S - 0.03, dt)
    assert before[-1].q != before[0].q, "the twist did not move the limb"
    assert all(DEADLINE_DETAIL_KEY not in s.detail for s in before)
    after = _steps(remote, "arm", before_t(before), 1.0, dt)
    expired = [s for s in after if DEADLINE_DETAIL_KEY in s.detail]
    assert expired, "the agent never said the command ran out"
    assert expired[0].detail[DEADLINE_DETAIL_KEY]["mode"] == "ee_twist"
    assert expired[0].detail[DEADLINE_DETAIL_KEY]["expired_at"] == pytest.approx(
        0.01 + DEFAULT_COMMAND_DEADLINE_S
    )
    # At rest: the last half second has one joint vector and no velocity.
    rest = [s for s in after if s.t >= 0.5]
    assert all(s.q == rest[0].q for s in rest)
    assert all(v == 0.0 for v in rest[-1].dq)


def before_t(states: list[Any]) -> float:
    return float(states[-1].t)


def test_an_ee_twist_renewed_in_time_keeps_moving(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(make_plant("light_limb"), clock="sim")
    remote = client(agent.request_endpoint)
    t = 0.0
    states = []
    for _ in range(60):
        remote.command("arm", "ee_twist", timeout_s=5, twist=TWIST)
        t += 0.02
        states.append(remote.step(t, timeout_s=5).states["arm"])
    assert all(DEADLINE_DETAIL_KEY not in s.detail for s in states)
    assert states[-1].q != states[-2].q


def test_deadline_s_sets_a_shorter_deadline_and_a_new_command_clears_the_note(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(make_plant("light_limb"), clock="sim")
    remote = client(agent.request_endpoint)
    remote.step(0.01, timeout_s=5)
    remote.command("arm", "ee_twist", timeout_s=5, twist=TWIST, deadline_s=0.05)
    states = _steps(remote, "arm", 0.01, 0.2, 0.01)
    expired = [s for s in states if DEADLINE_DETAIL_KEY in s.detail]
    assert expired[0].detail[DEADLINE_DETAIL_KEY]["expired_at"] == pytest.approx(0.06)
    remote.command("arm", "hold", timeout_s=5)
    assert DEADLINE_DETAIL_KEY not in remote.step(0.21, timeout_s=5).states["arm"].detail


BAD_DEADLINES = [(0.0, "bad_value"), (-1.0, "bad_value"), (11.0, "bad_value"), ("x", "bad_field")]


@pytest.mark.parametrize(("value", "code"), BAD_DEADLINES)
def test_a_bad_deadline_s_is_refused_naming_the_field(
    make_agent: MakeAgent, value: object, code: str
) -> None:
    agent = make_agent(make_plant("light_limb"), clock="sim")
    context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.linger = 0
    dealer.rcvtimeo = 5000
    dealer.connect(agent.request_endpoint)
    try:
        message = {"v": 2, "type": "command", "seq": 3, "limb": "arm", "mode": "ee_twist"}
        dealer.send(msgpack.packb({**message, "twist": TWIST, "deadline_s": value}))
        reply = msgpack.unpackb(dealer.recv())
    finally:
        dealer.close()
        context.term()
    assert (reply["type"], reply["code"], reply["field"]) == ("error", code, "deadline_s")
    assert "deadline_s" in reply["message"]


def test_a_real_clock_agent_brings_a_twisting_limb_to_rest_when_its_client_goes_quiet(
    make_agent: MakeAgent, client: Callable[..., AgentClient]
) -> None:
    agent = make_agent(make_plant("light_limb"), clock="real", stream_rate_hz=100)
    remote = client(agent.request_endpoint)
    remote.describe(timeout_s=5)
    remote.command("arm", "ee_twist", timeout_s=5, twist=TWIST, deadline_s=0.1)

    def rested() -> bool:
        remote.poll()
        state = remote.link("arm").state
        return state is not None and DEADLINE_DETAIL_KEY in state.detail

    assert wait_until(rested, 10), "the limb never came to rest by itself"
    link = remote.link("arm")

    def still() -> bool:
        remote.poll()
        state = link.state
        return state is not None and all(v == 0.0 for v in state.dq)

    assert wait_until(still, 10), "the limb kept moving after its command ran out"
    resting = link.state
    assert resting is not None
    assert wait_until(lambda: remote.poll() is not None and _later(link, resting.t + 0.3), 10)
    assert link.state is not None and link.state.q == resting.q


def _later(link: Any, t: float) -> bool:
    state = link.state
    return state is not None and state.t > t


def test_the_launcher_gives_its_agents_a_fresh_owner_token_in_the_environment(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import limbtree.trees.launcher as launcher

    seen: list[tuple[list[str], dict[str, str]]] = []

    class Recorded:
        def __init__(self, command: list[str], **kwargs: Any) -> None:
            seen.append((command, kwargs["env"]))

        def poll(self) -> int:
            return 0

        def wait(self, timeout: float) -> int:
            return 0

    monkeypatch.setattr(launcher.subprocess, "Popen", Recorded)
    agents = launcher.SimAgents([], tmp_path)
    other = launcher.SimAgents([], tmp_path)
    agents._launch(
        [launcher.SimAgentSpec("arm", "light_limb", None, 0, "sim")], ["tcp://127.0.0.1:5550"]
    )
    agents.stop()
    ((command, env),) = seen
    assert env[SHUTDOWN_TOKEN_ENV] == agents.token and len(agents.token) == 32
    assert agents.token != other.token
    assert agents.token not in " ".join(command)
