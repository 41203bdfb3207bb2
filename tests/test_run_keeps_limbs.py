"""A real-clock run keeps every limb of its own while it runs, commanded or not (``claim``).

An agent's one-commander lease lasts 1 s after a client's last command: a limb the run sends
no command for a while (it waits while another limb moves) would be free for a second client
to move under the run. The run claims each limb every 0.25 s, which renews its lease and
moves nothing (docs/protocol.md section 5.9); and it does not start on a limb another client
commands. Agents in threads on loopback, a mission run as ``limbtree run`` does.
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from limbtree.robots import make_plant
from limbtree.transport import AgentClient, PlantAgent, RemoteError
from limbtree.trees.app import RunRequest, run_mission
from limbtree.trees.errors import AgentError
from limbtree.trees.runner import RunOutcome

pytestmark = pytest.mark.timeout(120)

MakeAgent = Callable[..., PlantAgent]

#: How long after the run's first tick the second client commands the idle limb [s]: past
#: the 1 s lease of the run's claim before its first tick, so only later claims keep it.
STRAY_AFTER_S = 2.0

MISSION = """\
mission: keep
clock: real
rate_hz: 50
limbs:
  heavy: {{robot: heavy_limb, agent: "{heavy}"}}
  light: {{robot: light_limb, agent: "{light}"}}
tree:
  sequence:
    - sync_move:
        limbs: [light]
        waypoints: [{{translation_mm: [30, 0, 0]}}, {{translation_mm: [0, 0, 0]}}]
        max_speed_mm_s: 20
        timeout_s: 60
    - wait: {{duration_s: 1}}
"""


class Out(io.StringIO):
    """The run's progress; ``running`` is set once the run says it runs (its first tick)."""

    def __init__(self) -> None:
        super().__init__()
        self.running = threading.Event()

    def write(self, text: str) -> int:
        if "running keep in the real clock" in text:
            self.running.set()
        return super().write(text)


def mission_file(tmp_path: Path, heavy: PlantAgent, light: PlantAgent) -> Path:
    path = tmp_path / "keep.yaml"
    path.write_text(MISSION.format(heavy=heavy.request_endpoint, light=light.request_endpoint))
    return path


def test_a_limb_idle_while_the_run_runs_refuses_a_second_clients_command(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    # heavy gets no command at all: the tree moves light for 3 s, then waits 1 s.
    heavy = make_agent(make_plant("heavy_limb"), clock="real", stream_rate_hz=50)
    light = make_agent(make_plant("light_limb"), clock="real", stream_rate_hz=50)
    start_q = heavy.plant.limb_state("arm").q
    out = Out()
    stray: dict[str, object] = {}

    def second_client() -> None:
        if not out.running.wait(60):
            stray["error"] = "the run never started"
            return
        time.sleep(STRAY_AFTER_S)
        with AgentClient(heavy.request_endpoint, subscribe=False) as client:
            try:
                client.command("arm", "joint_position", timeout_s=5, q=[0.3] * len(start_q))
                stray["error"] = "taken"
            except RemoteError as exc:
                stray["error"] = exc

    thread = threading.Thread(target=second_client)
    thread.start()
    try:
        record = tmp_path / "rec"
        request = RunRequest(mission_file(tmp_path, heavy, light), headless=True, record=record)
        outcome = run_mission(request, out, stdin=io.StringIO())
    finally:
        thread.join(60)
    error = stray["error"]
    assert isinstance(error, RemoteError), f"the second client's command: {error}"
    assert error.code == "commanded_elsewhere" and error.field == "limb"
    assert "its last command or claim" in str(error)
    summary = json.loads((record / "summary.json").read_text())
    assert outcome is RunOutcome.SUCCESS, out.getvalue()
    assert summary["wall_time_s"] > STRAY_AFTER_S + 0.5  # (heavy was idle that long, and more)
    # The claims moved nothing: heavy never left its start (the run ends with a hold).
    assert heavy.plant.limb_state("arm").q == pytest.approx(start_q, abs=1e-9)


def test_a_real_clock_run_does_not_start_on_a_limb_another_client_commands(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    heavy = make_agent(make_plant("heavy_limb"), clock="real", stream_rate_hz=50)
    light = make_agent(make_plant("light_limb"), clock="real", stream_rate_hz=50)
    stop = threading.Event()
    started = threading.Event()

    def other_client() -> None:  # (another runner: it commands heavy, then keeps it)
        with AgentClient(heavy.request_endpoint, subscribe=False) as client:
            client.command("arm", "hold", timeout_s=5)
            started.set()
            while not stop.wait(0.2):
                client.claim("arm", timeout_s=5)

    thread = threading.Thread(target=other_client)
    thread.start()
    try:
        assert started.wait(30)
        record = tmp_path / "rec"
        request = RunRequest(mission_file(tmp_path, heavy, light), headless=True, record=record)
        out = Out()
        with pytest.raises(AgentError) as refused:
            run_mission(request, out, stdin=io.StringIO())
    finally:
        stop.set()
        thread.join(30)
    message = str(refused.value)
    assert message.startswith("limb heavy: another client commands it")
    assert heavy.request_endpoint in message
    assert "its last command or claim " in message and " s ago" in message
    assert "the run does not start" in message and "stop the other client" in message
    assert not out.running.is_set()
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and summary["ticks"] == 0
    assert summary["failure"] == message
