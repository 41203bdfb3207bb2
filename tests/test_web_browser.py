"""The web debugger in a real browser: Debian's Chromium driven by Playwright.

The page is driven through its documented DOM (``docs/visualization.md``): every tree node
element has ``data-node-id`` and ``data-status``, the scrubber is ``input#timeline``, the
controls are ``#pause``, ``#resume``, ``#step``, ``#abort``, the run's state is
``#run-state[data-state]``, the shown tick is in ``#tick-label``.

Chromium is looked for at ``LIMBTREE_CHROMIUM``, then ``/usr/bin/chromium``. Without it
these tests are skipped, naming the package to install, except where
``LIMBTREE_BROWSER_TESTS=required`` (``.ci/run`` sets it): there they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from test_run_control import make_runner
from test_web_control import SEQUENCE

from limbtree.trees.web.chromium import CHROMIUM_ARGS, chromium_path
from limbtree.trees.web.server import PageState, WebServer
from limbtree.trees.web.store import load_record

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
LIVE = """\
mission: browser_live
clock: sim
rate_hz: 50
limbs:
  heavy: {robot: heavy_limb, agent: sim}
  light: {robot: light_limb, agent: sim, base: {translation_mm: [1500, 0, 0]}}
tree:
  sequence:
    name: out and back
    children:
      - wait: {name: settle, duration_s: 5}
      - sync_move:
          name: square
          limbs: [heavy, light]
          waypoints:
            - {translation_mm: [60, 0, 0]}
            - {translation_mm: [0, 0, 0]}
          p_e_mm: 20
"""


GATED = """\
mission: browser_gate
clock: sim
rate_hz: 50
limbs:
  heavy: {robot: heavy_limb, agent: sim}
tree:
  sequence:
    children:
      - wait: {duration_s: 0.2}
      - operator_gate: {name: go, prompt: "limb clear: go on?"}
      - wait: {duration_s: 0.2}
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    path = chromium_path()
    if path is None:
        message = (
            "no Chromium for the browser tests: apt-get install chromium (Debian's package), "
            "or set LIMBTREE_CHROMIUM to a Chromium binary"
        )
        if os.environ.get("LIMBTREE_BROWSER_TESTS") == "required":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS))
        yield launched
        launched.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield page
    page.close()
    assert errors == [], f"the page logged errors: {errors}"


def serve(directory: Path) -> WebServer:
    server = WebServer(PageState(store=load_record(directory)), port=0)
    server.start()
    return server


def tree_ids(node: dict) -> list[str]:
    return [node["id"], *(i for child in node["children"] for i in tree_ids(child))]


def shown_statuses(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('[data-node-id]')]"
        ".map(e => [e.dataset.nodeId, e.dataset.status]))"
    )


def scrub(page, tick: int) -> None:
    page.evaluate(
        "t => { const s = document.querySelector('#timeline'); s.value = t; "
        "s.dispatchEvent(new Event('input', {bubbles: true})); "
        "s.dispatchEvent(new Event('change', {bubbles: true})); }",
        tick,
    )
    page.wait_for_function(
        f"(document.querySelector('#tick-label')?.textContent || '').includes('tick {tick} ')"
    )


def test_a_records_page_shows_every_node_and_scrubbing_shows_that_ticks_statuses(tmp_path, page):
    runner, _ = make_runner(tmp_path, SEQUENCE)
    assert runner.run().value == "SUCCESS"
    record = tmp_path / "rec"
    store = load_record(record)
    server = serve(record)
    try:
        page.goto(server.url)
        ids = tree_ids(store.header["tree"])
        page.wait_for_function(f"document.querySelectorAll('[data-node-id]').length >= {len(ids)}")
        assert sorted(shown_statuses(page)) == sorted(ids)
        timeline = page.locator("input#timeline")
        assert timeline.get_attribute("type") == "range"
        assert timeline.get_attribute("max") == str(store.ticks - 1)
        started = next(i for i in range(store.ticks) if store.frame(i)["nodes"]["0.1"]["ticked"])
        for tick in (0, started, store.ticks - 1, started - 1):
            scrub(page, tick)
            expected = {k: v["status"] for k, v in store.frame(tick)["nodes"].items()}
            page.wait_for_function(
                "e => Object.entries(e).every(([id, s]) => "
                'document.querySelector(`[data-node-id="${id}"]`)?.dataset.status === s)',
                arg=expected,
            )
            assert shown_statuses(page) == expected
        assert page.locator("#run-state").get_attribute("data-state") == "SUCCESS"
    finally:
        server.stop()


def big_record(directory: Path, count: int) -> list[str]:
    """A record whose tree has ``count`` nodes: a root over sequences of waits."""
    children = []
    made = 1
    i = 0
    while made < count:
        leaves = min(9, count - made - 1)
        kids = [
            {"id": f"0.{i}.{j}", "name": f"step {i}.{j}", "type": "wait",
             "params": {"duration_s": 1.0}, "children": []}
            for j in range(leaves)
        ]  # fmt: skip
        children.append(
            {"id": f"0.{i}", "name": f"phase {i}", "type": "sequence", "params": {},
             "children": kids}
        )  # fmt: skip
        made += 1 + leaves
        i += 1
    tree = {"id": "0", "name": "big", "type": "sequence", "params": {}, "children": children}
    header = {"kind": "header", "v": 2, "mission": "big", "tree": tree, "robots": {},
              "rate_hz": 10.0, "clock": "sim"}  # fmt: skip
    directory.mkdir(parents=True)
    with open(directory / "log.msgpack", "wb") as log:
        log.write(msgpack.packb(header))
        for t in range(20):
            nodes = {"0": "RUNNING", "0.0": "RUNNING", "0.0.0": "RUNNING" if t < 10 else "SUCCESS"}
            log.write(msgpack.packb({"kind": "tick", "t": t / 10, "tick": t, "limbs": {},
                                     "bases": {}, "nodes": nodes, "events": [],
                                     "skills": {}}))  # fmt: skip
    return tree_ids(tree)


def test_a_500_node_tree_renders(tmp_path, page):
    ids = big_record(tmp_path / "big", 500)
    assert len(ids) == 500
    server = serve(tmp_path / "big")
    try:
        page.goto(server.url)
        page.wait_for_function("document.querySelectorAll('[data-node-id]').length >= 500")
        assert sorted(shown_statuses(page)) == sorted(ids)
        page.screenshot(path=str(tmp_path / "big.png"))
    finally:
        server.stop()


@pytest.fixture
def live_run(tmp_path, request) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """``limbtree run --view web`` of LIVE (or the mission text the test gives), stdin closed."""
    mission = tmp_path / "live.yaml"
    mission.write_text(getattr(request, "param", LIVE))
    record = tmp_path / "rec"
    limbtree = str(Path(sys.executable).parent / "limbtree")
    process = subprocess.Popen(
        [limbtree, "run", str(mission), "--view", "web", "--port", "0", "--headless",
         "--speed", "1", "--record", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        url = None
        deadline = time.monotonic() + 60
        for line in process.stdout:
            if m := re.search(r"web view: (http://\S+)", line):
                url = m.group(1)
                break
            assert time.monotonic() < deadline, "no URL printed"
        assert url is not None, "limbtree run printed no URL"
        yield process, url, record
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def shown_tick(page) -> int:
    text = page.locator("#tick-label").text_content() or ""
    match = re.search(r"tick (\d+)", text)
    assert match, f"no tick in {text!r}"
    return int(match.group(1))


def test_a_breakpoint_pauses_a_live_run_step_advances_one_tick_abort_ends_it(live_run, page):
    process, url, record = live_run
    page.goto(url)
    page.locator("#pause").click()
    page.wait_for_selector("#run-state[data-state=paused]")
    page.locator('[data-node-id="0.1"]').first.click()
    page.locator("#break-start").click()
    page.wait_for_selector("#break-start[aria-pressed=true]")
    page.locator("#resume").click()
    # The run pauses right after the tick in which "square" started.
    page.wait_for_function(
        "document.querySelector('#run-state')?.dataset.state === 'paused' && "
        "document.querySelector('[data-node-id=\"0.1\"]')?.dataset.status === 'RUNNING'",
        timeout=30_000,
    )
    follow = page.locator("#follow")
    if not follow.is_checked():
        follow.check()
    page.wait_for_function(
        "document.querySelector('[data-node-id=\"0.0\"]')?.dataset.status === 'SUCCESS'"
    )
    at = shown_tick(page)
    page.locator("#step").click()
    page.wait_for_function(
        f"(document.querySelector('#tick-label')?.textContent || '').includes('tick {at + 1} ')"
        " && document.querySelector('#run-state')?.dataset.state === 'paused'"
    )
    time.sleep(0.5)  # a step that ran on would show a later tick by now
    assert shown_tick(page) == at + 1
    page.locator("#abort").click()
    page.wait_for_selector("#run-state[data-state=ABORTED]", timeout=20_000)
    assert process.wait(20) == 1
    summary = json.loads((record / "summary.json").read_text())
    assert summary["outcome"] == "ABORTED" and summary["failure"] == "aborted from the web page"
    pauses = [
        e for tick in msgpack.Unpacker(open(record / "log.msgpack", "rb"), raw=False)  # noqa: SIM115
        for e in tick.get("events", ()) if e["kind"] == "paused"
    ]  # fmt: skip
    assert [p.get("node") for p in pauses][1:3] == ["0.1", None]
    assert pauses[2]["why"] == f"stepped to tick {at + 1}"


@pytest.mark.parametrize("live_run", [GATED], indirect=True)
def test_the_page_answers_an_operator_gate_of_a_run_without_a_terminal(live_run, page):
    process, url, record = live_run  # (stdin closed: only the page can answer)
    page.goto(url)
    page.wait_for_selector("#gate:not([hidden])", timeout=30_000)
    assert "limb clear: go on?" in (page.locator("#gate").text_content() or "")
    page.locator("#gate-yes").click()
    page.wait_for_selector("#run-state[data-state=SUCCESS]", timeout=30_000)
    assert process.wait(20) == 0
    events = [
        e for tick in msgpack.Unpacker(open(record / "log.msgpack", "rb"), raw=False)  # noqa: SIM115
        for e in tick.get("events", ()) if e["kind"] == "gate"
    ]  # fmt: skip
    assert events == [{"kind": "gate", "node": "0.1", "t": 0.2, "prompt": "limb clear: go on?"}]
