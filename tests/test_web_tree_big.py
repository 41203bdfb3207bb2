"""The web debugger on a big tree and a long record, in Chromium (as ``test_web_browser``).

* A 505-node tree (24 sequences of 20 waits) opens legible: its composites off the running
  path folded, the root and the running node in view, ``fit`` readable, and the running path
  unfolding as a live run moves; ``#collapse-all`` and ``#expand-all`` fold and unfold all.
* A click on a timeline event mark shows that event's tick, on a record far longer than the
  strip is wide.
* Only the tree's node elements carry ``data-node-id`` (the node panel has
  ``data-panel-node``).

Screenshots go to ``tmp_path`` (``LIMBTREE_SHOTS=DIR`` puts them in DIR instead).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest
import test_web_browser as browser_tests
from test_web_browser import STILL, leave, serve, settled, shown_tick, tree_ids

# The browser tests' fixtures, used here by name.
browser = browser_tests.browser
page = browser_tests.page
live_run = browser_tests.live_run

pytestmark = pytest.mark.slow

SEQUENCES = 24
LEAVES = 20
#: The smallest zoom at which the page calls the tree legible (tree.js LEGIBLE).
LEGIBLE = 0.45


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


def big_mission(sequences: int = SEQUENCES, leaves: int = LEAVES, wait_s: float = 0.1) -> str:
    """The same tree as a mission file (505 nodes for 24 x 20)."""
    lines = [
        "mission: big_tree", "clock: sim", "rate_hz: 50", "limbs:",
        "  heavy: {robot: heavy_limb, agent: sim}", "tree:", "  sequence:", "    name: big",
        "    children:",
    ]  # fmt: skip
    for i in range(sequences):
        lines += [
            "      - sequence:",
            f"          name: phase {i}",
            "          children:",
            *(
                f"            - wait: {{name: step {i}.{j}, duration_s: {wait_s}}}"
                for j in range(leaves)
            ),
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the tree's view


def view(page) -> dict:
    """The tree's zoom and, per drawn node, its box on screen, status and fold."""
    return page.evaluate(
        """() => {
          const svg = document.querySelector('#tree');
          const pane = svg.getBoundingClientRect();
          const nodes = {};
          for (const g of document.querySelectorAll('#tree g.node')) {
            if (g.getAttribute('display') === 'none') continue;
            const r = g.querySelector('rect.box').getBoundingClientRect();
            nodes[g.dataset.nodeId] = {
              status: g.dataset.status, collapsed: g.dataset.collapsed,
              hidden: g.querySelector('.hidden-count')?.textContent ?? '',
              inside: r.left >= pane.left && r.right <= pane.right
                && r.top >= pane.top && r.bottom <= pane.bottom,
            };
          }
          return {k: window.d3.zoomTransform(svg).k, nodes};
        }"""
    )


def test_a_505_node_record_opens_folded_to_its_running_path_and_legible(tmp_path, page):
    tree = big_tree()
    ids = tree_ids(tree)
    assert len(ids) == 505
    record = write_record(tmp_path / "big", tree, sequence_ticks(5, 3))
    server = serve(record)
    out = shots(tmp_path)
    try:
        page.goto(server.url)
        page.wait_for_function(
            "document.querySelector('[data-node-id=\"0.5.3\"]')?.dataset.status === 'RUNNING'"
        )
        settled(page)
        page.screenshot(path=str(out / "big_first_view.png"))
        # Every node still has its element, with its status (a folded one is not drawn).
        assert page.locator("#tree g.node[data-node-id][data-status]").count() == 505
        first = view(page)
        drawn = first["nodes"]
        # The composites off the running path are folded, saying how many nodes they hide;
        # the running path is open; nothing in a fold is drawn.
        for i in range(SEQUENCES):
            phase = drawn[f"0.{i}"]
            if i == 5:
                assert phase["collapsed"] == "false" and phase["status"] == "RUNNING"
            else:
                assert phase["collapsed"] == "true" and phase["hidden"] == str(LEAVES)
                assert f"0.{i}.0" not in drawn
        assert sorted(drawn) == sorted(
            ["0", *(f"0.{i}" for i in range(SEQUENCES)), *(f"0.5.{j}" for j in range(LEAVES))]
        )
        # The first view reads, and shows the root and the running node.
        assert first["k"] >= LEGIBLE
        assert drawn["0"]["inside"] and drawn["0.5"]["inside"] and drawn["0.5.3"]["inside"]

        # fit: the whole (folded) tree, legible.
        page.mouse.move(700, 400)
        page.mouse.wheel(0, 2000)  # zoomed far out by hand first
        settled(page)
        page.locator("#fit").click()
        settled(page)
        page.screenshot(path=str(out / "big_fit.png"))
        fitted = view(page)
        assert fitted["k"] >= LEGIBLE
        assert all(node["inside"] for node in fitted["nodes"].values())

        # expand all: every node drawn; collapse all: folded again but for the running path.
        page.locator("#expand-all").click()
        settled(page)
        assert len(view(page)["nodes"]) == 505
        page.locator("#fit").click()
        settled(page)
        page.screenshot(path=str(out / "big_expanded_fit.png"))
        page.locator("#collapse-all").click()
        settled(page)
        page.screenshot(path=str(out / "big_collapse_all.png"))
        collapsed = view(page)
        assert sorted(collapsed["nodes"]) == sorted(drawn)
        assert collapsed["k"] >= LEGIBLE
        assert all(node["inside"] for node in collapsed["nodes"].values())
    finally:
        leave(page, server)


#: self_assembly_dragon.yaml's tree: a root over seven phases and gates, two with two steps.
DRAGON_NAMES = ["1 safe pose", "Operator gate", "2 align 150 mm above the grasp point",
                "Operator gate", "3 grasp", "Operator gate", "4 reconfiguration"]  # fmt: skip
DRAGON_STEPS = {4: ["align on the grasp point", "Grasp"], 6: ["lift", "assembly posture"]}


def dragon_tree() -> dict:
    children = []
    for i, name in enumerate(DRAGON_NAMES):
        steps = [
            {"id": f"0.{i}.{j}", "name": step, "type": "wait", "params": {}, "children": []}
            for j, step in enumerate(DRAGON_STEPS.get(i, []))
        ]
        kind = "sequence" if steps else "wait"
        children.append({"id": f"0.{i}", "name": name, "type": kind, "params": {},
                         "children": steps})  # fmt: skip
    return {"id": "0", "name": "self-assembly (Dragon)", "type": "sequence", "params": {},
            "children": children}  # fmt: skip


#: The least size on screen of a node's name, px (13 px at scale 1).
NAME_PX = "13 * window.d3.zoomTransform(document.querySelector('#tree')).k"


def test_a_tree_wider_than_its_pane_is_fitted_no_smaller_than_its_names_read(tmp_path, page):
    # self_assembly_dragon.yaml in a 960 x 600 window: fitted, its names were 6 px high.
    page.set_viewport_size({"width": 960, "height": 600})
    ticks = [{"0": "RUNNING", "0.0": "SUCCESS", "0.1": "SUCCESS", "0.2": "RUNNING"}] * 3
    record = write_record(tmp_path / "dragon", dragon_tree(), ticks)
    server = serve(record)
    try:
        page.goto(server.url)
        page.wait_for_function(
            "document.querySelector('[data-node-id=\"0.2\"]')?.dataset.status === 'RUNNING'"
        )
        settled(page)
        for fitted_by in ("first view", "fit", "fit after zooming out"):
            if fitted_by != "first view":
                if fitted_by == "fit after zooming out":
                    page.mouse.move(250, 300)
                    page.mouse.wheel(0, 1500)
                    settled(page)
                page.locator("#fit").click()
                settled(page)
            assert page.evaluate(NAME_PX) >= 9.99, fitted_by
            shown = view(page)["nodes"]
            # The running node and the root are in the pane; the rest is a pan away.
            assert shown["0"]["inside"] and shown["0.2"]["inside"], fitted_by
        page.screenshot(path=str(shots(tmp_path) / "dragon_fit.png"))
        # Shift+wheel pans sideways to the rest of the tree, at the same scale.
        before = page.evaluate(NAME_PX)
        assert not view(page)["nodes"]["0.6"]["inside"]
        page.mouse.move(250, 300)
        page.keyboard.down("Shift")
        for _ in range(20):
            page.mouse.wheel(0, 60)
            page.wait_for_timeout(50)
            if view(page)["nodes"]["0.6"]["inside"]:
                break
        page.keyboard.up("Shift")
        assert view(page)["nodes"]["0.6"]["inside"]
        assert page.evaluate(NAME_PX) == pytest.approx(before)
        # A tree that fits is fitted whole, as before.
        page.set_viewport_size({"width": 1920, "height": 900})
        page.locator("#fit").click()
        settled(page)
        assert all(node["inside"] for node in view(page)["nodes"].values())
    finally:
        leave(page, server)


def test_a_small_tree_is_not_folded(tmp_path, page):
    tree = big_tree(3, 4)
    record = write_record(tmp_path / "small", tree, sequence_ticks(1, 2, 4))
    server = serve(record)
    try:
        page.goto(server.url)
        page.wait_for_function(
            "document.querySelector('[data-node-id=\"0.1.2\"]')?.dataset.status === 'RUNNING'"
        )
        settled(page)
        shown = view(page)
        assert sorted(shown["nodes"]) == sorted(tree_ids(tree))
        assert all(node["collapsed"] in ("false", None) for node in shown["nodes"].values())
    finally:
        leave(page, server)


def check_mission(path: Path) -> None:
    limbtree = str(Path(sys.executable).parent / "limbtree")
    done = subprocess.run([limbtree, "check", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "505 nodes" in done.stdout, done.stdout


RUNNING_PHASE = """() => {
  const open = [...document.querySelectorAll('#tree g.node[data-status=RUNNING]')]
    .map((g) => g.dataset.nodeId).filter((id) => /^0\\.[0-9]+$/.test(id))
    .filter((id) => document.querySelector(`[data-node-id="${id}"]`).dataset.collapsed === 'false');
  return open.length === 1 ? Number(open[0].split('.')[1]) : null;
}"""


def held(page) -> int:
    """Pause the live run and wait for the page to show its last tick on a still tree: the
    phase running then (the tree is read while nothing moves it: a phase that ended while
    the view settled unfolded the next one under the test)."""
    page.locator("#pause").click()
    page.wait_for_selector("#run-state[data-state=paused]")
    handle = page.wait_for_function(
        "() => { const app = window.limbtree.app;"
        " if (app.shown?.tick !== app.ticks - 1 || app.liveRenderQueued) return false;"
        f" return {STILL} ? {{phase: ({RUNNING_PHASE})()}} : false; }}",
        timeout=30_000,
    )
    phase = handle.json_value()["phase"]
    assert phase is not None, "no single running phase unfolded"
    return phase


@pytest.mark.parametrize("live_run", [big_mission(wait_s=0.2)], indirect=True)
def test_a_live_505_node_run_unfolds_its_running_path_as_it_moves(live_run, page, tmp_path):
    _, url, _ = live_run
    out = shots(tmp_path)
    page.goto(url)
    # Each phase runs 4 s (20 waits of 0.2 s): the running one is open, its leaves drawn.
    page.wait_for_function(f"({RUNNING_PHASE})() ?? false", timeout=30_000)
    phase = held(page)
    page.screenshot(path=str(out / "big_live.png"))
    shown = view(page)
    assert shown["k"] >= LEGIBLE
    assert f"0.{phase}.0" in shown["nodes"]
    for i in range(SEQUENCES):
        if i != phase:
            assert shown["nodes"][f"0.{i}"]["collapsed"] == "true", i
            assert f"0.{i}.0" not in shown["nodes"]
    running = [i for i, node in shown["nodes"].items() if node["status"] == "RUNNING"]
    assert len(running) == 3 and all(shown["nodes"][i]["inside"] for i in running)
    # Moving on: the next phase unfolds, this one folds again.
    page.locator("#resume").click()
    page.wait_for_function(f"({RUNNING_PHASE})() > {phase}", timeout=30_000)
    later = held(page)
    assert later > phase
    page.screenshot(path=str(out / "big_live_next.png"))
    shown = view(page)
    assert shown["nodes"][f"0.{phase}"] == {**shown["nodes"][f"0.{phase}"], "collapsed": "true",
                                            "status": "SUCCESS", "hidden": str(LEAVES)}  # fmt: skip
    assert f"0.{phase}.0" not in shown["nodes"] and f"0.{later}.0" in shown["nodes"]
    assert shown["k"] >= LEGIBLE
    check_mission(tmp_path / "live.yaml")


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
        label = "(document.querySelector('#tick-label')?.textContent || '')"
        not_747 = f"!{label}.includes('tick 747 ')"
        for dx in (0, 3, -3):  # on the mark, and a little to either side
            # Elsewhere first: each click on the mark must bring tick 747 back by itself.
            page.mouse.click(x + 300, y)
            page.wait_for_function(not_747)
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
