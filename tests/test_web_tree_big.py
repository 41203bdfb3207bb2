"""The web debugger on a big tree and a long record, in Chromium (as ``test_web_browser``).

* A click on a timeline event mark shows that event's tick, on a record far longer than the
  strip is wide.
* Only the tree's node elements carry ``data-node-id`` (the node panel has
  ``data-panel-node``).

Screenshots go to ``tmp_path`` (``LIMBTREE_SHOTS=DIR`` puts them in DIR instead).
"""

from __future__ import annotations

import os
from pathlib import Path

import msgpack
import pytest
import test_web_browser as browser_tests
from test_web_browser import leave, serve, shown_tick, tree_ids

# The browser tests' fixtures, used here by name.
browser = browser_tests.browser
page = browser_tests.page

pytestmark = pytest.mark.slow

SEQUENCES = 24
LEAVES = 20


def shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("LIMBTREE_SHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    return where


def big_tree(sequences: int = SEQUENCES, leaves: int = LEAVES) -> dict:
    """A root sequence over ``sequences`` sequences of ``leaves`` waits each (record ids)."""
    children = [
        {"id": f"0.{i}", "name": f"phase {i}", "type": "sequence", "params": {},
         "children": [
             {"id": f"0.{i}.{j}", "name": f"step {i}.{j}", "type": "wait",
              "params": {"duration_s": 0.1}, "children": []}
             for j in range(leaves)
         ]}
        for i in range(sequences)
    ]  # fmt: skip
    return {"id": "0", "name": "big", "type": "sequence", "params": {}, "children": children}


def write_record(directory: Path, tree: dict, ticks: list[dict], events=None) -> Path:
    """A layout-2 record of ``tree`` whose tick k sets the statuses ``ticks[k]``."""
    header = {"kind": "header", "v": 2, "mission": "big", "tree": tree, "robots": {},
              "rate_hz": 50.0, "clock": "sim"}  # fmt: skip
    events = events or {}
    directory.mkdir(parents=True)
    with open(directory / "log.msgpack", "wb") as log:
        log.write(msgpack.packb(header))
        for k, nodes in enumerate(ticks):
            log.write(msgpack.packb({"kind": "tick", "t": k / 50, "tick": k, "limbs": {},
                                     "bases": {}, "nodes": nodes, "events": events.get(k, []),
                                     "skills": {}}))  # fmt: skip
    return directory


def sequence_ticks(upto_phase: int, upto_leaf: int, leaves: int = LEAVES) -> list[dict]:
    """The ticks of the big tree's root sequence run up to leaf ``upto_leaf`` of phase
    ``upto_phase`` (which is left RUNNING): one tick per leaf, the leaf before succeeding."""
    ticks = []
    for i in range(upto_phase + 1):
        for j in range(leaves if i < upto_phase else upto_leaf + 1):
            nodes = {"0": "RUNNING", f"0.{i}": "RUNNING", f"0.{i}.{j}": "RUNNING"}
            if j > 0:
                nodes[f"0.{i}.{j - 1}"] = "SUCCESS"
            elif i > 0:
                nodes[f"0.{i - 1}"] = "SUCCESS"
                nodes[f"0.{i - 1}.{leaves - 1}"] = "SUCCESS"
            ticks.append(nodes)
    return ticks


# ---------------------------------------------------------------- the timeline


def test_clicking_an_event_mark_shows_the_events_own_tick(tmp_path, page):
    """20,000 ticks on a strip about 1,400 px wide: a pixel is about 14 ticks. A click on
    the mark (within the tooltip's hover distance) shows the mark's tick; a click away from
    any mark shows the pixel's tick."""
    ticks = 20_000
    fault = {"kind": "fault_injected", "limb": "leg_3", "fault": "disassembly"}
    tree = {"id": "0", "name": "hold", "type": "wait", "params": {}, "children": []}
    record = write_record(
        tmp_path / "long", tree, [{"0": "RUNNING"}] * ticks, events={747: [fault]}
    )
    server = serve(record)
    try:
        page.goto(server.url)
        last = f"tick {ticks - 1} "
        page.wait_for_function(
            f"(document.querySelector('#tick-label')?.textContent || '').includes('{last}')"
        )
        mark = page.locator("#timeline-marks rect.mark[data-kind=fault_injected]")
        mark.wait_for(state="visible")
        page.wait_for_timeout(300)  # (the strip is drawn again once the events are in)
        box = mark.bounding_box()
        assert box is not None
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        for dx in (0, 3, -3):  # on the mark, and a little to either side
            page.mouse.move(x + dx, y)
            tip = page.locator("#tooltip").inner_text()
            assert "fault_injected — leg_3 · disassembly" in tip and "tick 747 " in tip, tip
            page.mouse.click(x + dx, y)
            page.wait_for_function(
                "(document.querySelector('#tick-label')?.textContent || '').includes('tick 747 ')"
            )
            assert shown_tick(page) == 747
            assert page.locator("input#timeline").input_value() == "747"
        # Away from the marks: the tick under the pointer, as its tooltip says.
        page.mouse.move(x + 300, y)
        tip = page.locator("#tooltip").inner_text()
        assert tip.startswith("tick "), tip
        said = int(tip.split()[1])
        assert abs(said - 747) > 1000
        page.mouse.click(x + 300, y)
        page.wait_for_function(
            f"(document.querySelector('#tick-label')?.textContent || '').includes('tick {said} ')"
        )
    finally:
        leave(page, server)


# ---------------------------------------------------------------- data-node-id


def test_only_the_trees_node_elements_carry_data_node_id(tmp_path, page):
    tree = big_tree(2, 3)
    record = write_record(tmp_path / "small", tree, sequence_ticks(1, 1, 3))
    server = serve(record)
    try:
        page.goto(server.url)
        page.wait_for_function("document.querySelectorAll('[data-node-id]').length >= 9")
        page.locator('[data-node-id="0.1"]').click()  # (strict: one element)
        page.wait_for_function("document.querySelector('#node-name')?.textContent === 'phase 1'")
        # The open panel names its node, but not as a tree node: strict locators still work.
        assert page.locator('[data-node-id="0.1"]').count() == 1
        assert page.locator("#node-panel").get_attribute("data-panel-node") == "0.1"
        assert page.locator("[data-node-id]").count() == len(tree_ids(tree))
        assert page.locator("[data-node-id]:not([data-status])").count() == 0
        page.locator('[data-node-id="0.0"]').click()
        page.wait_for_selector('#node-panel[data-panel-node="0.0"]')
        assert page.locator('[data-node-id="0.0"]').count() == 1
    finally:
        leave(page, server)
