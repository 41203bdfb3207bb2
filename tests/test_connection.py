"""Connection errors of ``limbtree run``: which limb, which address, what was tried."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from limbtree.trees.app import RunRequest, run_mission
from limbtree.trees.connection import AgentTarget, probe, unreachable_message
from limbtree.trees.errors import RunError
from limbtree.trees.launcher import free_port_pair


def test_probe_says_nothing_listens_on_a_closed_port():
    port = free_port_pair()
    assert probe(f"tcp://127.0.0.1:{port}") == (
        f"nothing listens on port {port} of 127.0.0.1 (connection refused)"
    )


def test_probe_says_a_host_name_does_not_resolve():
    assert probe("tcp://no-such-host.invalid:5550").startswith(
        "the host name no-such-host.invalid does not resolve"
    )


def test_probe_says_something_listens_that_is_not_an_agent():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert "accepts TCP connections, but no limbtree agent answered" in probe(
            f"tcp://127.0.0.1:{port}"
        )


def test_the_message_names_the_robot_its_limbs_the_address_the_keys_and_what_to_check():
    target = AgentTarget(
        "quad", "moonbot_zero", ("quad.leg_0", "quad.leg_1"), "tcp://10.0.0.5:5550", Path("k")
    )
    text = unreachable_message(target, "asking", "no reply", finding="nothing listens")
    first, *rest = text.splitlines()
    assert first == (
        "robot quad (limbs quad.leg_0, quad.leg_1; moonbot_zero): cannot use its agent at "
        "tcp://10.0.0.5:5550"
    )
    assert "  tried: asking, with the CURVE client keys in k" in rest
    assert "  found: nothing listens" in rest
    assert "limbtree agent --robot moonbot_zero --bind tcp://ADDRESS:5550" in text
    assert "limbtree ping tcp://10.0.0.5:5550" in text


@pytest.mark.slow  # waits for the describe timeout (5 s)
def test_run_says_which_limb_which_address_what_was_tried_and_what_to_check(tmp_path):
    port = free_port_pair()
    mission = tmp_path / "remote.yaml"
    mission.write_text(
        "mission: remote\nclock: sim\nrate_hz: 50\nlimbs:\n"
        f'  arm: {{robot: light_limb, agent: "tcp://127.0.0.1:{port}"}}\n'
        "tree:\n  wait: {duration_s: 1}\n"
    )
    with pytest.raises(RunError) as error:
        run_mission(RunRequest(mission), io.StringIO(), stdin=io.StringIO())
    text = str(error.value)
    assert text.startswith(f"limb arm (light_limb): cannot use its agent at tcp://127.0.0.1:{port}")
    assert "tried: connecting and asking it to describe its plant, waiting up to 5 s" in text
    assert f"found: nothing listens on port {port} of 127.0.0.1" in text
    assert "check: that an agent runs there" in text
    assert "the agent's --keys and the mission's `keys:` agree (both set, with the same" in text
    # recorded: the refused run leaves no run folder without a record in it
    record = tmp_path / "rec"
    with pytest.raises(RunError):
        run_mission(RunRequest(mission, record=record), io.StringIO(), stdin=io.StringIO())
    assert not record.exists()
    record.mkdir()  # (a folder the user made stays, and stays empty)
    with pytest.raises(RunError):
        run_mission(RunRequest(mission, record=record), io.StringIO(), stdin=io.StringIO())
    assert record.is_dir() and list(record.iterdir()) == []


def test_a_host_name_that_does_not_resolve_is_said_before_any_wait(tmp_path):
    """ZeroMQ retries a name it cannot resolve in silence: ping waited out its --timeout
    and the run its describe timeout before saying so. (Bounded well below either wait.)"""
    endpoint = "tcp://no-such-host.invalid:5550"
    done = subprocess.run(
        [sys.executable, "-m", "limbtree", "ping", endpoint, "--timeout", "600"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"limbtree ping: {endpoint}: the host name no-such-host.invalid does not resolve"
    ), done.stderr
    mission = tmp_path / "remote.yaml"
    mission.write_text(
        "mission: remote\nclock: sim\nrate_hz: 50\nlimbs:\n"
        f'  arm: {{robot: light_limb, agent: "{endpoint}"}}\n'
        "tree:\n  wait: {duration_s: 1}\n"
    )
    with pytest.raises(RunError) as error:
        run_mission(RunRequest(mission), io.StringIO(), stdin=io.StringIO())
    text = str(error.value)
    assert text.startswith(f"limb arm (light_limb): cannot use its agent at {endpoint}")
    assert "  error: the host name no-such-host.invalid does not resolve" in text
    assert "  tried: looking up its host name, without CURVE keys" in text


def test_a_sim_clock_agent_an_earlier_run_stepped_is_refused_before_the_run(tmp_path):
    from limbtree.robots import make_plant
    from limbtree.transport import AgentClient, PlantAgent

    port = free_port_pair()
    endpoint = f"tcp://127.0.0.1:{port}"
    agent = PlantAgent(make_plant("light_limb", None, seed=0), endpoint, clock="sim")
    agent.start_in_thread()
    try:
        with AgentClient(endpoint) as client:  # an earlier run
            client.step(12.0, timeout_s=5.0)
        mission = tmp_path / "again.yaml"
        mission.write_text(
            "mission: again\nclock: sim\nrate_hz: 50\nlimbs:\n"
            f'  arm: {{robot: light_limb, agent: "{endpoint}"}}\n'
            "tree:\n  wait: {duration_s: 1}\n"
        )
        out = io.StringIO()
        with pytest.raises(RunError) as error:
            run_mission(RunRequest(mission, headless=True), out, stdin=io.StringIO())
    finally:
        agent.stop()
    assert out.getvalue().splitlines() == [  # (no "starting 0 simulated agents")
        "note: robot arm uses a remote agent; the sim clock steps it as it steps simulated ones"
    ]
    assert str(error.value) == (
        f"robot arm: the sim-clock agent at {endpoint} was stepped to t=12 s already: another "
        "run is stepping it now, or an earlier run did. A sim-clock agent serves one run, from "
        "t=0: wait for the other run to end, then restart the agent (not while a run uses it: "
        "its limbs would jump back to their start)"
    )


def test_an_agent_of_another_robot_is_refused_saying_how_to_mend_it(tmp_path):
    from limbtree.robots import make_plant
    from limbtree.transport import PlantAgent

    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    agent = PlantAgent(make_plant("light_limb", None, seed=0), endpoint, clock="sim")
    agent.start_in_thread()
    try:
        mission = tmp_path / "other.yaml"
        mission.write_text(
            "mission: other\nclock: sim\nrate_hz: 50\nlimbs:\n"
            f'  arm: {{robot: heavy_limb, agent: "{endpoint}"}}\n'
            "tree:\n  wait: {duration_s: 1}\n"
        )
        with pytest.raises(RunError) as error:
            run_mission(RunRequest(mission, headless=True), io.StringIO(), stdin=io.StringIO())
    finally:
        agent.stop()
    assert str(error.value) == (
        f"limb arm: the agent at {endpoint} drives light_limb, but the mission declares "
        "heavy_limb: give the limb's agent the address of a heavy_limb agent, or start this "
        "one with --robot heavy_limb"
    )


def test_every_agent_that_cannot_serve_the_run_is_named_at_once(tmp_path):
    # Two agents wrong in different ways: the user learns of both from one refusal, not of
    # the second only after mending the first.
    from limbtree.robots import make_plant
    from limbtree.transport import AgentClient, PlantAgent

    stepped = f"tcp://127.0.0.1:{free_port_pair()}"
    other = f"tcp://127.0.0.1:{free_port_pair()}"
    agents = [
        PlantAgent(make_plant("light_limb", None, seed=0), stepped, clock="sim"),
        PlantAgent(make_plant("light_limb", None, seed=1), other, clock="sim"),
    ]
    for agent in agents:
        agent.start_in_thread()
    try:
        with AgentClient(stepped) as client:  # an earlier run
            client.step(3.0, timeout_s=5.0)
        mission = tmp_path / "two.yaml"
        mission.write_text(
            "mission: two\nclock: sim\nrate_hz: 50\nlimbs:\n"
            f'  arm: {{robot: light_limb, agent: "{stepped}"}}\n'
            f'  heavy: {{robot: heavy_limb, agent: "{other}"}}\n'
            "tree:\n  wait: {duration_s: 1}\n"
        )
        with pytest.raises(RunError) as error:
            run_mission(RunRequest(mission, headless=True), io.StringIO(), stdin=io.StringIO())
    finally:
        for agent in agents:
            agent.stop()
    lines = str(error.value).splitlines()
    assert lines[0] == "the agents of 2 robots cannot serve this run:"
    assert lines[1].startswith(
        f"  - robot arm: the sim-clock agent at {stepped} was stepped to t=3 s"
    )
    assert lines[2].startswith(f"  - limb heavy: the agent at {other} drives light_limb, but the")
    assert len(lines) == 3


def test_an_agent_whose_robot_has_other_joints_than_the_runners_is_refused(tmp_path, monkeypatch):
    # The same robot name, two descriptions: the limb's computer has the pan-tilt head of
    # docs/robots.md, the runner's a newer one whose second joint was renamed and narrowed.
    # The run went on and commanded the agent's limb with the runner's postures and limits.
    from test_robots import PAN_TILT_URDF, PAN_TILT_YAML

    from limbtree.robots import make_plant
    from limbtree.transport import PlantAgent

    def robot_dir(root: Path, urdf: str) -> Path:
        (root / "pan_tilt").mkdir(parents=True)
        (root / "pan_tilt" / "pan_tilt.urdf").write_text(urdf)
        (root / "pan_tilt" / "robot.yaml").write_text(PAN_TILT_YAML)
        return root

    agents_dir = robot_dir(tmp_path / "limb", PAN_TILT_URDF)
    newer = PAN_TILT_URDF.replace('joint name="tilt"', 'joint name="tilt_v2"')
    runners_dir = robot_dir(tmp_path / "runner", newer)
    monkeypatch.setenv("LIMBTREE_ROBOT_PATH", str(agents_dir))
    endpoint = f"tcp://127.0.0.1:{free_port_pair()}"
    agent = PlantAgent(make_plant("pan_tilt"), endpoint, clock="sim")
    agent.start_in_thread()
    monkeypatch.setenv("LIMBTREE_ROBOT_PATH", str(runners_dir))
    try:
        mission = tmp_path / "head.yaml"
        mission.write_text(
            "mission: head\nclock: sim\nrate_hz: 50\nlimbs:\n"
            f'  head: {{robot: pan_tilt, agent: "{endpoint}"}}\n'
            "tree:\n  wait: {duration_s: 1}\n"
        )
        with pytest.raises(RunError) as error:
            run_mission(RunRequest(mission, headless=True), io.StringIO(), stdin=io.StringIO())
    finally:
        agent.stop()
    assert str(error.value) == (
        f"limb head: the agent at {endpoint} drives a pan_tilt whose joints differ from this "
        f"computer's description of it ({runners_dir / 'pan_tilt' / 'robot.yaml'}): the "
        "agent's joints are pan, tilt; here pan, tilt_v2; the run would command it with the "
        "wrong postures and limits: give both computers the same robot description "
        "(LIMBTREE_ROBOT_PATH, docs/robots.md)"
    )
