"""The web debugger's node panel and limbs table in a real browser (Chromium, Playwright).

The page is driven as ``tests/test_web_browser.py`` drives it (its fixtures and helpers):
what the panel says after a live run ends, when its server has stopped, how it captions a
node's status history, how it colours and labels a skill's telemetry, and how the limbs
table names limbs whose names begin alike.
"""

from __future__ import annotations

import contextlib
from itertools import pairwise
from pathlib import Path

import msgpack
import pytest
import test_web_browser as browser_tests
from test_web_browser import GATED, LIVE, leave, serve

from limbtree.trees.web.store import load_record

# (test_web_browser's fixtures, used here by name)
browser = browser_tests.browser
page = browser_tests.page
live_run = browser_tests.live_run

pytestmark = pytest.mark.slow

#: test_web_browser's gated run with its gate last: the run ends on the tick it succeeds.
GATE_LAST = browser_tests.GATED.rsplit("      - wait:", 1)[0]
assert GATE_LAST.rstrip().endswith('prompt: "limb clear: go on?"}')

#: A message too long for one line of the panel.
LONG = "waiting for the sensed end-effector state from the motion capture of mar.arm_1"


def panel_record(directory: Path, ticks: int = 40) -> Path:
    """A record of one node (0.0) whose feedback changes every tick, with telemetry whose
    text fields hold names with digits, numbers, statuses, modes and a long message, over
    two limbs whose names differ only at their end."""
    joints = [f"joint_{i}" for i in range(1, 8)]
    tree = {"id": "0", "name": "root", "type": "sequence", "params": {}, "children": [
        {"id": "0.0", "name": "reach", "type": "wait", "params": {"duration_s": 1.0},
         "children": []}]}  # fmt: skip
    limbs = {name: {"joints": joints, "chain": "arm"} for name in ("mar.arm_1", "mar.arm_2")}
    header = {"kind": "header", "v": 2, "mission": "panel", "tree": tree, "rate_hz": 10.0,
              "clock": "sim", "robots": {"mar": {"robot": "heavy_limb", "limbs": limbs,
                                                 "base": [0, 0, 0, 0, 0, 0, 1.0]}}}  # fmt: skip
    directory.mkdir(parents=True)
    with open(directory / "log.msgpack", "wb") as log:
        log.write(msgpack.packb(header))
        for i in range(ticks):
            q = [0.0, 0.3, 0.0, -1.2, 0.0, 0.6, 0.0]
            limb = {"state": [0.1, 0, 0.3, 0, 0, 0, 1.0], "command": [0.1, 0, 0.31, 0, 0, 0, 1.0],
                    "q": q, "q_command": q, "health": 0, "stale": False}  # fmt: skip
            telemetry = {
                "skill": "align",
                "outcome": "SUCCESS" if i == ticks - 1 else "RUNNING",
                "mode": "recovering" if 10 <= i < 20 else "nominal",
                "frame": "mar.E1" if i < 20 else "mar.E2",
                "target": "mar.E2",
                "step": f"leg_{1 + i // 20} for {i / 10:.1f} s",
                "message": LONG if i % 10 < 5 else "",
                "dd_mm": 10.0 - i / 4,
            }
            status = "SUCCESS" if i == ticks - 1 else "RUNNING"
            log.write(msgpack.packb({"kind": "tick", "t": i / 10, "tick": i,
                                     "limbs": {"mar.arm_1": limb, "mar.arm_2": limb},
                                     "bases": {}, "nodes": {"0": status, "0.0": status},
                                     "messages": {"0.0": f"Δd {10 - i / 4:.2f} mm"},
                                     "events": [], "skills": {"0.0": telemetry}}))  # fmt: skip
    return directory


def timing(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('#node-timing tr')]"
        ".map(r => [r.cells[0].textContent, r.cells[1].textContent]))"
    )


def wait_for_panel(page, node: str) -> None:
    page.wait_for_selector(f'#node-panel[data-panel-node="{node}"]')
    page.wait_for_selector("#node-timing table", timeout=20_000)


def assert_panel_is_the_records(page, record: Path, node: str) -> None:
    """The panel's counts, history and newest feedback are the record's final ones."""
    expected = load_record(record).node(node)
    ticks = f"{expected['ticks']} tick{'' if expected['ticks'] == 1 else 's'}"
    with contextlib.suppress(Exception):  # (the asserts below say what differs)
        page.wait_for_function(
            "t => [...document.querySelectorAll('#node-timing tr')].some(r => "
            "r.cells[0].textContent === 'ticked' && r.cells[1].textContent === t)",
            arg=ticks,
            timeout=5_000,
        )
    shown = timing(page)
    assert shown["ticked"] == ticks
    assert shown.get("newest feedback", "") == expected["last_message"]
    assert "as of" not in shown
    changes = page.locator("#node-history .transitions .status-tag").all_text_contents()
    assert changes[0] == expected["history"][-1][1], changes
    info = page.evaluate("window.limbtree.panel.info")
    assert info["history"] == expected["history"]
    assert info["history_rows"] == expected["history_rows"]


@pytest.mark.parametrize("live_run", [GATE_LAST], indirect=True)
def test_the_panel_shows_the_records_final_state_when_a_live_run_ends_on_its_node(live_run, page):
    """Answering the last gate ends the run at once (its server stops with it: stdin is not
    a terminal): the gate's panel says what the record says, SUCCESS and every tick."""
    process, url, record = live_run
    page.goto(url)
    page.wait_for_selector("#gate:not([hidden])", timeout=30_000)
    wait_for_panel(page, "0.1")  # (the page selects the gate's node)
    page.locator("#gate-yes").click()
    page.wait_for_selector("#run-state[data-state=SUCCESS]", timeout=30_000)
    assert process.wait(20) == 0
    assert_panel_is_the_records(page, record, "0.1")
    assert page.locator("#node-status").text_content() == "SUCCESS"
    page.locator("#node-panel").screenshot(path=str(record.parent / "gate_panel.png"))


def test_the_panel_of_a_skill_followed_to_the_end_of_a_live_run_is_the_records(live_run, page):
    """A sync_move selected while it runs, to the run's end: its tick count, status history
    and newest feedback are the record's (not those of the last refresh before the end)."""
    assert "sync_move" in LIVE
    process, url, record = live_run
    page.goto(url)
    page.wait_for_selector('[data-node-id="0.1"]')
    page.locator('[data-node-id="0.1"]').click()
    wait_for_panel(page, "0.1")
    page.wait_for_selector("#run-state[data-state=SUCCESS]", timeout=60_000)
    assert process.wait(20) == 0
    assert_panel_is_the_records(page, record, "0.1")
    # The feedback quoted for the tick shown (the last) is the newest.
    quoted = page.locator("#node-message").text_content() or ""
    assert quoted.strip("“”") == timing(page).get("newest feedback", "")


@pytest.mark.parametrize("live_run", [GATED], indirect=True)
def test_a_node_opened_after_the_server_stopped_says_so_in_every_section(live_run, page):
    process, url, record = live_run
    page.goto(url)
    page.wait_for_selector("#gate:not([hidden])", timeout=30_000)
    page.locator("#gate-yes").click()
    page.wait_for_selector("#run-state[data-state=SUCCESS]", timeout=30_000)
    assert process.wait(20) == 0
    page.expected_errors.append("ERR_CONNECTION_REFUSED")  # (the browser logs the refusal)
    page.locator('[data-node-id="0.0"]').click()
    page.wait_for_selector('#node-panel[data-panel-node="0.0"]')
    sections = ["node-params", "node-history", "node-timing", "node-telemetry"]
    page.wait_for_function(
        "ids => ids.every(id => !document.getElementById(id).textContent.includes('loading'))",
        arg=sections,
        timeout=10_000,
    )
    for section in sections:
        text = page.locator(f"#{section}").inner_text()
        assert text.startswith("cannot load: limbtree has stopped serving this run"), section
    banner = page.locator("#banner-text").inner_text()
    assert "stopped serving" in banner and f"limbtree view {record}" in banner
    assert page.locator("#banner").is_visible()
    page.screenshot(path=str(record.parent / "stopped.png"))


def test_the_history_caption_says_its_list_is_the_status_changes(tmp_path, page):
    server = serve(panel_record(tmp_path / "rec"))
    try:
        page.goto(server.url)
        page.locator('[data-node-id="0.0"]').click()
        wait_for_panel(page, "0.0")
        text = page.locator("#node-history").inner_text()
        # 2 status changes (RUNNING, SUCCESS), 38 changes of the feedback alone
        assert "2 status changes · 38 feedback changes" in text
        assert "the latest:" not in text
        caption = page.locator("#node-history .history-caption").inner_text()
        assert caption == "its status changes, newest first, with the feedback at each:"
        tags = page.locator("#node-history .transitions .status-tag").all_text_contents()
        assert tags == ["SUCCESS", "RUNNING"]
        page.screenshot(path=str(tmp_path / "history.png"))
    finally:
        leave(page, server)


STATUS = {"SUCCESS": "rgb(60, 180, 75)", "FAILURE": "rgb(230, 25, 75)",
          "RUNNING": "rgb(240, 160, 48)", "IDLE": "rgb(200, 200, 200)"}  # fmt: skip


def legends(page) -> dict[str, list[dict[str, str]]]:
    """Each telemetry band's legend: its entries' text, colour, title and right edge."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#node-telemetry .band-box')]
          .map(b => [b.dataset.key, [...b.querySelectorAll('.legend-item')].map(i => ({
            text: i.querySelector('.legend-text').textContent,
            colour: getComputedStyle(i.querySelector('i')).backgroundColor,
            title: i.title,
            right: i.getBoundingClientRect().right,
            cut: i.querySelector('.legend-text').scrollWidth
              > i.querySelector('.legend-text').clientWidth,
          }))]))"""
    )


@pytest.mark.parametrize("width", [1400, 1000])
def test_telemetry_bands_use_status_colours_for_statuses_and_keep_names_whole(
    tmp_path, page, width
):
    page.set_viewport_size({"width": width, "height": 900})
    server = serve(panel_record(tmp_path / "rec"))
    try:
        page.goto(server.url)
        page.locator('[data-node-id="0.0"]').click()
        wait_for_panel(page, "0.0")
        page.wait_for_selector("#node-telemetry .band-box")
        bands = legends(page)
        by = {key: {e["text"]: e for e in entries} for key, entries in bands.items()}
        # Statuses in the tree's colours; modes in none of them.
        assert by["outcome"]["SUCCESS"]["colour"] == STATUS["SUCCESS"]
        assert by["outcome"]["RUNNING"]["colour"] == STATUS["RUNNING"]
        for mode in ("nominal", "recovering"):
            assert by["mode"][mode]["colour"] not in STATUS.values(), mode
        # Names with digits are themselves; numbers of their own are one kind.
        assert sorted(by["frame"]) == ["mar.E1", "mar.E2"]
        assert sorted(by["step"]) == ["leg_1 for … s", "leg_2 for … s"]
        assert not any("#" in text for entries in by.values() for text in entries)
        # One colour per value, whatever else its band holds.
        assert by["target"]["mar.E2"]["colour"] == by["frame"]["mar.E2"]["colour"]
        assert by["frame"]["mar.E1"]["colour"] != by["frame"]["mar.E2"]["colour"]
        # A long message stays in the panel: cut with an ellipsis, whole on hover.
        edge = page.evaluate(
            "document.getElementById('node-telemetry').getBoundingClientRect().right"
        )
        for entries in bands.values():
            for entry in entries:
                assert entry["right"] <= edge + 0.5, entry
        message = by["message"][LONG]
        assert LONG in message["title"]
        page.locator("#node-telemetry").screenshot(path=str(tmp_path / f"telemetry_{width}.png"))
    finally:
        leave(page, server)


@pytest.mark.parametrize("width", [1400, 900])
def test_limb_names_that_begin_alike_stay_apart_in_the_limbs_table(tmp_path, page, width):
    page.set_viewport_size({"width": width, "height": 900})
    server = serve(panel_record(tmp_path / "rec"))
    try:
        page.goto(server.url)
        page.wait_for_selector('#limbs tr[data-limb="mar.arm_2"]')
        page.wait_for_function("window.limbtree?.app?.shown !== null")
        cells = page.evaluate(
            """() => [...document.querySelectorAll('#limbs td.limb-name')].map(c => ({
              text: c.textContent, title: c.title,
              clipped: [c, ...c.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth
                && getComputedStyle(e).overflow !== 'visible'),
            }))"""
        )
        assert [c["title"] for c in cells] == ["mar.arm_1", "mar.arm_2"]
        assert not any(c["clipped"] for c in cells), cells  # (what is shown is the text)
        assert cells[0]["text"] != cells[1]["text"]
        assert all(c["text"].endswith(("_1", "_2")) for c in cells), cells
        page.locator("#limbs").screenshot(path=str(tmp_path / f"limbs_{width}.png"))
    finally:
        leave(page, server)


#: A run that goes on for a while with one running leaf (test_web_browser's, one wait).
LONG_WAIT = browser_tests.GATED.split("    children:\n")[0] + (
    "    children:\n      - wait: {duration_s: 60}\n"
)


@pytest.mark.parametrize("live_run", [LONG_WAIT], indirect=True)
def test_a_live_panel_asks_for_its_node_at_most_once_a_second(live_run, page):
    # The panel's own timer and the newer frames once asked at the same instants: two
    # requests each second, back to back (each costs the server CPU on the run's cores).
    # (A page following the run gets the node with its frames and fetches it only once:
    # test_web_browser; here it has stopped following, and fetches it itself.)
    _, url, _ = live_run
    page.goto(url)
    page.locator('[data-node-id="0.0"]').click()
    page.wait_for_selector('#node-panel[data-panel-node="0.0"]')
    page.locator("#follow").uncheck()
    page.wait_for_timeout(6000)
    asked = page.evaluate(  # when each request began, by the page's own clock [ms]
        "() => performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('/api/node/')).map(e => e.startTime / 1000)"
    )
    gaps = [b - a for a, b in pairwise(asked)]
    assert len(asked) >= 4, asked  # it does follow the run
    assert min(gaps[1:]) > 0.5, gaps  # (the first answer may come at once after the click)
