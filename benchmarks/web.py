"""What the web debugger costs a run, and how fast it opens and scrubs a long record.

Usage: ``python benchmarks/web.py [--pairs 3] [--seconds 180] [--record-ticks 36000]``

1. **Cost to the run** (target: at most 5% slower). The 6-limb robustness mission in the
   ``sim`` clock at ``--speed max`` for ``--seconds`` of mission time, run alternately
   without a web view and with ``--view web`` and a headless Chromium page following it
   live (Playwright). Each run's ``wall_time_s`` (the ticking, not the agents' start-up) is
   read from its ``summary.json``; the ratio is taken within each pair (the machine's speed
   drifts between pairs; every other pair runs the watched case first), and the median
   reported.
2. **A 12-minute record** (target: opens in under 3 s, the scrubber redraws in under
   100 ms). A record of ``--record-ticks`` ticks is made by tiling a real 6-limb run's
   ticks (renumbered, so the page sees one long run with its faults and events);
   ``limbtree view`` serves it; the page is opened in Chromium and timed until its tree and
   timeline are drawn, then the scrubber is moved to 20 positions and each redraw timed
   until the tick label shows the new tick.

Chromium: ``LIMBTREE_CHROMIUM`` or ``/usr/bin/chromium`` (Debian's ``chromium`` package).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgpack

from limbtree.trees.web.chromium import CHROMIUM_ARGS, chromium_path

ROOT = Path(__file__).resolve().parent.parent
MISSION = ROOT / "missions" / "robustness.yaml"
#: The command line installed beside this Python.
LIMBTREE = str(Path(sys.executable).parent / "limbtree")


#: Move the scrubber to tick t; resolves with the milliseconds until the page painted it.
REDRAW_JS = """t => new Promise(resolve => {
    const slider = document.querySelector('#timeline');
    const label = document.querySelector('#tick-label');
    const began = performance.now();
    const seen = new MutationObserver(() => {
        if (!label.textContent.includes(`tick ${t} `)) return;
        seen.disconnect();
        requestAnimationFrame(() => resolve(performance.now() - began));
    });
    seen.observe(label, {childList: true, characterData: true, subtree: true});
    slider.value = t;
    slider.dispatchEvent(new Event('input', {bubbles: true}));
})"""


def chromium() -> str:
    path = chromium_path()
    if path is None:
        sys.exit("no Chromium: apt-get install chromium, or set LIMBTREE_CHROMIUM")
    return path


def socket_watcher(url: str) -> threading.Thread:
    """A following page's stream without a browser: reads (and parses) every update until
    the end, and asks for the next frame as soon as one came (a page that draws at once)."""
    from websockets.sync.client import connect

    address = url.replace("http://", "ws://").split("/?")[0] + "/ws"

    def read() -> None:
        with connect(address, open_timeout=10, max_size=None) as socket:
            want = json.dumps({"want": "frame"})
            socket.send(want)
            for message in socket:
                update = json.loads(message)
                if update.get("type") == "end":
                    return
                if "frame" in update:
                    socket.send(want)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def run(seconds: float, record: Path, browser: Any | None) -> tuple[float, float]:
    """One headless run; with ``browser`` (a Chromium, or "socket" for a bare WebSocket
    reader), served with --view web and watched.

    Returns:
        (wall time of the ticking from summary.json, CPU time of the run's process and its
        children: its agents and, with a view, the web server from its start) [s].
    """
    command = [
        LIMBTREE, "run", str(MISSION),
        "--set", f"duration_s={seconds:g}", "--speed", "max", "--headless",
        "--record", str(record),
    ]  # fmt: skip
    if browser is not None:
        command += ["--view", "web", "--port", "0"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    page = None
    assert process.stdout is not None
    for line in process.stdout:
        if browser is not None and page is None and (m := re.search(r"http://\S+", line)):
            if browser == "socket":
                page = socket_watcher(m.group(0))
                continue
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(m.group(0))
            follow = page.locator("#follow")
            if follow.count() and not follow.is_checked():
                follow.check()
    _, status, usage = os.wait4(process.pid, 0)  # the run's rusage, its agents' included
    process.returncode = os.waitstatus_to_exitcode(status)
    if isinstance(page, threading.Thread):
        page.join(5)
    elif page is not None:
        page.close()
    summary = json.loads((record / "summary.json").read_text())
    return float(summary["wall_time_s"]), usage.ru_utime + usage.ru_stime


def cost(pairs: int, seconds: float, browser: Any) -> None:
    what = "a WebSocket reader" if browser == "socket" else "a Chromium page"
    print(f"-- {what} following the run:")
    ratios, cpu_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):
            # Every other pair runs the watched case first: neither case always follows
            # the other (a run's wall time depends a little on what ran just before it).
            if i % 2:
                watched, watched_cpu = run(seconds, Path(tmp) / f"web{i}", browser)
                plain, plain_cpu = run(seconds, Path(tmp) / f"plain{i}", None)
            else:
                plain, plain_cpu = run(seconds, Path(tmp) / f"plain{i}", None)
                watched, watched_cpu = run(seconds, Path(tmp) / f"web{i}", browser)
            ratios.append(watched / plain)
            cpu_ratios.append(watched_cpu / plain_cpu)
            print(
                f"pair {i + 1}: without a view {plain:6.2f} s wall ({plain_cpu:6.1f} s CPU), "
                f"with {what} {watched:6.2f} s ({watched_cpu:6.1f} s CPU): "
                f"x{watched / plain:.3f} wall, x{watched_cpu / plain_cpu:.3f} CPU",
                flush=True,
            )
    cpu = statistics.median(cpu_ratios)
    print(
        f"CPU of the run's processes with {what}: x{cpu:.3f} (median; the run, its agents "
        "and, with a view, the web server, its start-up included)"
    )
    median = statistics.median(ratios)
    verdict = "met" if median <= 1.05 else "MISSED"
    print(f"cost of {what} watching the run: x{median:.3f} (median of {pairs}; target <= 1.05: "
          f"{verdict})")  # fmt: skip


def long_record(seconds: float, ticks: int, directory: Path) -> None:
    """A ``ticks``-long record tiled from a real run of ``seconds`` of mission time."""
    source = directory / "source"
    subprocess.run(
        [LIMBTREE, "run", str(MISSION), "--set",
         f"duration_s={seconds:g}", "--headless", "--record", str(source)],
        check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    unpacker = msgpack.Unpacker(open(source / "log.msgpack", "rb"), raw=False)  # noqa: SIM115
    header, *tiles = list(unpacker)
    period = tiles[1]["t"] - tiles[0]["t"]
    out = directory / "long"
    out.mkdir()
    with open(out / "log.msgpack", "wb") as log:
        log.write(msgpack.packb(header))
        for i in range(ticks):
            entry = dict(tiles[i % len(tiles)])
            entry["tick"], entry["t"] = i, i * period
            entry["events"] = [{**e, "t": i * period} for e in entry["events"]]
            log.write(msgpack.packb(entry))
    summary = json.loads((source / "summary.json").read_text())
    summary.update(ticks=ticks, sim_time_s=ticks * period)
    (out / "summary.json").write_text(json.dumps(summary))


def record_speed(ticks: int, browser: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        long_record(60.0, ticks, Path(tmp))
        size = (Path(tmp) / "long" / "log.msgpack").stat().st_size / 1e6
        began = time.perf_counter()
        server = subprocess.Popen(
            [LIMBTREE, "view", str(Path(tmp) / "long"),
             "--port", "0"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            url = ""
            for line in server.stdout:
                if m := re.search(r"http://\S+", line):
                    url = m.group(0)
                    break
            loaded = time.perf_counter() - began
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            began = time.perf_counter()
            page.goto(url)
            page.wait_for_function(
                f"document.querySelector('#timeline')?.max == '{ticks - 1}' && "
                "document.querySelectorAll('[data-node-id]').length > 0 && "
                "/tick \\d+/.test(document.querySelector('#tick-label')?.textContent || '') && "
                "window.limbtree?.view3d?.ok === true",  # the 3D view too (three.js loaded)
                timeout=60_000,
            )
            opened = time.perf_counter() - began
            times = []
            rng = random.Random(3)
            for _ in range(20):
                target = rng.randrange(ticks)
                # Timed in the page: from the scrubber's input event to the first paint
                # after the tick label (drawn last, with the tree) shows the new tick.
                took_ms = page.evaluate(REDRAW_JS, target)
                times.append(took_ms / 1000.0)
            page.close()
        finally:
            server.terminate()
            server.wait()
    verdict = "met" if opened < 3 else "MISSED"
    print(f"record of {ticks} ticks ({size:.0f} MB): limbtree view ready in {loaded:.2f} s; the "
          f"page opened in {opened:.2f} s (target < 3 s: {verdict})")  # fmt: skip
    ms = sorted(1000 * t for t in times)
    print(f"scrubber redraw over 20 jumps: median {statistics.median(ms):.0f} ms, max "
          f"{ms[-1]:.0f} ms (target < 100 ms: {'met' if ms[-1] < 100 else 'MISSED'})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--record-ticks", type=int, default=36_000)
    parser.add_argument("--skip-cost", action="store_true")
    parser.add_argument("--skip-record", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=list(CHROMIUM_ARGS))
        try:
            if not args.skip_cost:
                cost(args.pairs, args.seconds, "socket")
                cost(args.pairs, args.seconds, browser)
            if not args.skip_record:
                record_speed(args.record_ticks, browser)
        finally:
            browser.close()


if __name__ == "__main__":
    main()
