"""The web debugger's index of a run: statuses at any tick, resets, timing, telemetry, faults."""

from __future__ import annotations

import json
import threading

import msgpack
import pytest
from records import held_by_a_run

from limbtree.trees.errors import RunError
from limbtree.trees.web.store import IDLE, RunStore, health_flags, index_map, load_record

TREE = {
    "id": "0",
    "name": "root",
    "type": "sequence",
    "params": {},
    "children": [
        {"id": "0.0", "name": "first", "type": "wait", "params": {}, "children": []},
        {"id": "0.1", "name": "second", "type": "sync_move", "params": {}, "children": []},
    ],
}
HEADER = {"kind": "header", "v": 2, "mission": "m", "tree": TREE, "robots": {}}


def tick(i, nodes, messages=None, busy=None, skills=None, events=None, limbs=None):
    return {
        "kind": "tick",
        "t": 0.1 * i,
        "tick": i,
        "limbs": limbs or {},
        "bases": {},
        "nodes": nodes,
        "messages": messages or {},
        "busy": busy or {},
        "skills": skills or {},
        "events": events or [],
    }


def statuses(store, i):
    return {k: v["status"] for k, v in store.frame(i)["nodes"].items()}


def test_a_node_keeps_its_status_until_ticked_again_and_idle_before():
    store = RunStore(HEADER)
    store.add(tick(0, {"0": "RUNNING", "0.0": "RUNNING"}, {"0.0": "1 s left"}))
    store.add(tick(1, {"0": "RUNNING", "0.0": "SUCCESS", "0.1": "RUNNING"}))
    store.add(tick(2, {"0": "RUNNING", "0.1": "RUNNING"}))
    assert statuses(store, 0) == {"0": "RUNNING", "0.0": "RUNNING", "0.1": IDLE}
    assert statuses(store, 2) == {"0": "RUNNING", "0.0": "SUCCESS", "0.1": "RUNNING"}
    frame = store.frame(2)
    assert frame["nodes"]["0.0"]["ticked"] is False and frame["nodes"]["0.1"]["ticked"]
    assert store.frame(0)["nodes"]["0.0"]["message"] == "1 s left"


def test_a_composite_starting_again_resets_its_subtree_and_one_ending_halts_it():
    store = RunStore(HEADER)
    store.add(tick(0, {"0": "RUNNING", "0.0": "SUCCESS", "0.1": "RUNNING"}))
    store.add(tick(1, {"0": "SUCCESS", "0.1": "SUCCESS"}))
    store.add(tick(2, {"0": "RUNNING", "0.0": "RUNNING"}))  # started again: 0.1 reset
    assert statuses(store, 1) == {"0": "SUCCESS", "0.0": "SUCCESS", "0.1": "SUCCESS"}
    assert statuses(store, 2) == {"0": "RUNNING", "0.0": "RUNNING", "0.1": IDLE}
    store.add(tick(3, {"0": "FAILURE"}))  # ended (halted from above): 0.0 was running
    assert statuses(store, 3) == {"0": "FAILURE", "0.0": IDLE, "0.1": IDLE}
    assert store.node("0.1")["history"] == [[0, "RUNNING", ""], [1, "SUCCESS", ""], [2, IDLE, ""]]


def test_node_parameters_are_shown_as_the_mission_file_writes_them():
    # (a record writes infinities as null: r_e cannot be none, timeout can)
    params = {"limbs": ["a", "b"], "p_e": 0.02, "r_e": None, "timeout": None, "settle": 0.002}
    tree = {**TREE, "children": [*TREE["children"][:1], {**TREE["children"][1], "params": params}]}
    store = RunStore({**HEADER, "tree": tree})
    shown = store.node("0.1")["params"]
    assert shown == {
        "limbs": ["a", "b"],
        "p_e_mm": 20.0,
        "r_e_deg": "inf",
        "timeout_s": None,
        "settle_mm": 2.0,
    }
    assert json.loads(json.dumps(shown, allow_nan=False)) == shown  # (JSON has no inf)


def test_an_aborted_runs_last_map_is_shown_but_not_counted_as_a_tick_of_the_nodes():
    store = RunStore(HEADER)
    for i in range(3):
        store.add(tick(i, {"0": "RUNNING", "0.0": "RUNNING"}, busy={"0.0": 0.001}))
    aborted = {**tick(3, {"0": "RUNNING", "0.0": "RUNNING"}, busy={"0.0": 0.0}), "t": 0.2}
    store.add({**aborted, "events": [{"kind": "aborted", "t": 0.2, "why": "operator"}]})
    assert store.ticks == 4  # (the page shows it: the state the run was aborted in)
    node = store.node("0.0")
    assert node["ticks"] == 3 and node["busy"]["mean_s"] == pytest.approx(0.001)


def test_node_details_give_timing_ticks_and_thinned_telemetry():
    store = RunStore(HEADER)
    for i in range(5000):
        mode = "recovering" if 2500 <= i < 2503 else "nominal"
        store.add(
            tick(
                i,
                {"0": "RUNNING", "0.1": "RUNNING"},
                busy={"0.1": 0.001 * (i % 3), "0": 0.002},
                skills={"0.1": {"skill": "sync_move", "mode": mode, "distance": i / 5000}},
            )
        )
    node = store.node("0.1", max_points=500)
    assert node["ticks"] == 5000 and node["type"] == "sync_move"
    assert node["busy"]["max_s"] == pytest.approx(0.002)
    assert node["busy"]["total_s"] == pytest.approx(sum(0.001 * (i % 3) for i in range(5000)))
    assert node["busy"]["mean_s"] == pytest.approx(node["busy"]["total_s"] / 5000)
    telemetry = node["telemetry"]
    assert telemetry["skill"] == "sync_move"
    assert 500 <= len(telemetry["t"]) <= 510  # thinned, but every change of mode kept
    modes = telemetry["labels"]["mode"]
    assert "recovering" in modes and modes.count("recovering") >= 2
    assert set(telemetry["series"]) == {"distance"}
    assert telemetry["t"][-1] == pytest.approx(499.9)
    assert store.node("0.0")["telemetry"] is None and store.node("0.0")["busy"] is None
    with pytest.raises(KeyError, match=r"no node '9'"):
        store.node("9")


def test_faults_are_in_force_from_injected_to_ended_and_events_carry_their_tick():
    store = RunStore(HEADER)
    injected = {"kind": "fault_injected", "t": 0.1, "limb": "a", "fault": "power_off"}
    ended = {"kind": "fault_ended", "t": 0.3, "limb": "a", "fault": "power_off"}
    store.add(tick(0, {"0": "RUNNING"}))
    store.add(tick(1, {"0": "RUNNING"}, events=[injected]))
    store.add(tick(2, {"0": "RUNNING"}))
    store.add(tick(3, {"0": "RUNNING"}, events=[ended]))
    assert [f["fault"] for f in store.frame(2)["faults"]] == ["power_off"]
    assert store.frame(1)["faults"] == [{"limb": "a", "fault": "power_off", "since_t": 0.1}]
    assert store.frame(0)["faults"] == [] and store.frame(3)["faults"] == []
    kinds = [(e["tick"], e["kind"]) for e in store.events]
    assert kinds == [(1, "fault_injected"), (3, "fault_ended")]
    assert store.events_since(1) == [store.events[1]]
    assert store.frame(3)["events"] == [{"tick": 3, **ended}]


def test_limbs_carry_health_names_distance_and_no_skeleton_without_a_description():
    store = RunStore(HEADER)
    limb = {
        "state": [0.0, 0.0, 0.0, 0, 0, 0, 1],
        "command": [0.003, 0.004, 0.0, 0, 0, 0, 1],
        "q": [0.0],
        "q_command": None,
        "health": 1 | 8,
        "stale": True,
    }
    store.add(tick(0, {"0": "RUNNING"}, limbs={"a": limb}))
    out = store.frame(0)["limbs"]["a"]
    assert out["health_flags"] == ["POWER_OFF", "DISASSEMBLED"]
    assert out["distance_mm"] == pytest.approx(5.0)
    assert out["skeleton"] is None and out["stale"] is True
    assert health_flags(0) == []
    assert out["target"] is None
    with pytest.raises(IndexError, match=r"ticks 0 to 0"):
        store.frame(1)


def test_a_limbs_target_frame_is_in_the_frames_of_the_ticks_that_have_one():
    store = RunStore(HEADER)
    limb = {"state": [0.0, 0.0, 0.0, 0, 0, 0, 1], "command": None, "health": 0, "stale": False}
    target = [0.1, 0.2, 0.3, 0, 0, 0, 1]
    store.add(tick(0, {"0": "RUNNING"}, limbs={"a": {**limb, "target": target}}))
    store.add(tick(1, {"0": "RUNNING"}, limbs={"a": limb}))
    assert store.frame(0)["limbs"]["a"]["target"] == target
    assert store.frame(0)["limbs"]["a"]["target_mm"] == pytest.approx(1000 * 0.14**0.5)
    assert store.frame(1)["limbs"]["a"]["target"] is None
    assert store.frame(1)["limbs"]["a"]["target_mm"] is None


def write_log(path, maps):
    path.mkdir(parents=True, exist_ok=True)
    data = b"".join(msgpack.packb(m, use_bin_type=True) for m in maps)
    (path / "log.msgpack").write_bytes(data)
    return data


def test_a_killed_runs_log_loads_up_to_its_last_whole_tick(tmp_path):
    data = write_log(tmp_path, [HEADER, *(tick(i, {"0": "RUNNING"}) for i in range(4))])
    (tmp_path / "log.msgpack").write_bytes(data[:-5])  # the last tick cut short
    store = load_record(tmp_path)
    assert store.ticks == 3 and store.end is None
    (tmp_path / "summary.json").write_text(json.dumps({"outcome": "ABORTED", "failure": "x"}))
    assert load_record(tmp_path).end == {"outcome": "ABORTED", "failure": "x"}


def test_a_record_a_run_is_still_writing_is_read_as_far_as_it_goes_and_says_so(tmp_path):
    write_log(tmp_path, [HEADER])
    with held_by_a_run(tmp_path):
        with pytest.raises(RunError, match=r"has not recorded a tick yet; try again"):
            load_record(tmp_path)
        write_log(tmp_path, [HEADER, *(tick(i, {"0": "RUNNING"}) for i in range(3))])
        store = load_record(tmp_path)
        assert store.ticks == 3 and store.writing and store.state()["writing"] is True
    assert load_record(tmp_path).writing is False  # the run is gone: it was killed
    (tmp_path / "summary.json").write_text(json.dumps({"outcome": "SUCCESS", "failure": None}))
    assert load_record(tmp_path).writing is False


@pytest.mark.parametrize("text", ["[1, 2]", '"done"', "null", "3"])
def test_a_summary_that_is_not_a_json_object_is_a_clear_error(tmp_path, text):
    write_log(tmp_path, [HEADER, tick(0, {"0": "SUCCESS"})])
    (tmp_path / "summary.json").write_text(text)
    with pytest.raises(RunError, match=r"summary.json is not a run summary \(a JSON object"):
        load_record(tmp_path)


def test_a_folder_of_records_is_refused_naming_one_of_them(tmp_path):
    write_log(tmp_path / "seed=0", [HEADER, tick(0, {"0": "SUCCESS"})])
    with pytest.raises(RunError, match=r"no log\.msgpack here") as error:
        load_record(tmp_path)
    assert (
        f"it holds 1 run record (a sweep's folder?): give one of them, e.g. {tmp_path}/seed=0"
        in (str(error.value))
    )


def test_bad_records_get_clear_errors(tmp_path):
    with pytest.raises(RunError, match=r"no log.msgpack here"):
        load_record(tmp_path)
    write_log(tmp_path, [{**HEADER, "v": 9}])
    with pytest.raises(RunError, match=r"layout 9; this limbtree reads layouts 1, 2"):
        load_record(tmp_path)
    write_log(tmp_path, [HEADER, {"kind": "tick"}])
    with pytest.raises(RunError, match=r"not a limbtree run log"):
        load_record(tmp_path)
    write_log(tmp_path, [HEADER])
    (tmp_path / "summary.json").write_text("{")
    with pytest.raises(RunError, match=r"summary.json cannot be read as a run summary"):
        load_record(tmp_path)
    (tmp_path / "summary.json").unlink()
    ticks = [tick(i, {"0": "RUNNING"}) for i in range(4)]
    head = write_log(tmp_path, [HEADER, *ticks[:2]])
    data = write_log(tmp_path, [HEADER, *ticks])
    (tmp_path / "log.msgpack").write_bytes(head + b"\xc1" * 8 + data[len(head) :])
    store = load_record(tmp_path)  # read up to the damage, as limbtree report does
    assert store.ticks == 2
    assert store.damage is not None
    assert store.damage.startswith("the log is read up to its first 2 ticks (0 to 1): ")
    # (msgpack's own text is empty: say what it is)
    assert store.damage.endswith(
        "log.msgpack is damaged: bytes there are not msgpack (FormatError)"
    )
    head = write_log(tmp_path, [HEADER])
    (tmp_path / "log.msgpack").write_bytes(head + b"\xc1" * 8 + data[len(head) :])
    with pytest.raises(RunError, match=r"is damaged: bytes there are not msgpack"):
        load_record(tmp_path)  # damaged before its first tick: nothing to show
    (tmp_path / "log.msgpack").write_bytes(b"")
    with pytest.raises(RunError, match=r"no complete tick and there is no summary.json"):
        load_record(tmp_path)
    write_log(tmp_path, [HEADER])  # a header and not one tick: the same
    with pytest.raises(RunError, match=r"no complete tick and there is no summary.json"):
        load_record(tmp_path)
    # A layout 1 log (no header) damaged part way is read up to the damage too.
    head = write_log(tmp_path, ticks[:2])
    data = write_log(tmp_path, ticks)
    (tmp_path / "log.msgpack").write_bytes(head + b"\xc1" * 8 + data[len(head) :])
    store = load_record(tmp_path)
    assert store.ticks == 2 and store.header["v"] == 1
    assert store.damage is not None
    assert store.damage.startswith("the log is read up to its first 2 ticks (0 to 1): ")
    with pytest.raises(RunError, match=r"missing: no such directory \(give the directory"):
        load_record(tmp_path / "missing")


def test_a_finished_runs_log_cut_short_or_cut_in_its_header_is_not_shown_as_whole(tmp_path):
    ticks = [tick(i, {"0": "RUNNING"}) for i in range(4)]
    data = write_log(tmp_path, [HEADER, *ticks])
    summary = {"outcome": "SUCCESS", "ticks": 4}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert load_record(tmp_path).damage is None  # whole
    (tmp_path / "log.msgpack").write_bytes(data[:-5])  # cut inside its last tick
    store = load_record(tmp_path)
    assert store.ticks == 3 and store.end == {"outcome": "SUCCESS", "failure": None}
    assert store.damage is not None and store.damage.startswith(
        "the log is read up to its first 3 ticks (0 to 2): "
    )
    assert store.damage.endswith("log.msgpack stops early: the run had 4 ticks (summary.json)")
    head = write_log(tmp_path, [HEADER])
    (tmp_path / "log.msgpack").write_bytes(data[: len(head) // 2])  # cut inside its header
    with pytest.raises(RunError, match=r"damaged before its first tick: it ends \d+ bytes in"):
        load_record(tmp_path)
    # A killed run's log (no summary) may end inside a tick: it is shown without a word.
    (tmp_path / "summary.json").unlink()
    (tmp_path / "log.msgpack").write_bytes(data[:-5])
    assert load_record(tmp_path).damage is None


def test_a_layout_1_record_gets_a_stand_in_tree_of_its_node_names(data_dir):
    store = load_record(data_dir / "record_v1")
    tree = store.header["tree"]
    assert tree["id"] == "run" and tree["type"] == "record v1"
    names = [child["id"] for child in tree["children"]]
    assert names == ["up past reach and back down"]
    assert store.ticks > 0 and store.end is not None
    frame = store.frame(store.ticks - 1)
    assert set(frame["nodes"]) == {"run", "up past reach and back down"}


@pytest.fixture
def data_dir():
    from pathlib import Path

    return Path(__file__).parent / "data"


def test_records_without_tick_timing_take_totals_from_the_summary(tmp_path):
    ticks = [tick(i, {"0": "RUNNING", "0.1": "RUNNING"}) for i in range(3)]
    for entry in ticks:
        del entry["busy"]
    write_log(tmp_path, [HEADER, *ticks])
    summary = {"outcome": "SUCCESS", "nodes": [{"id": "0.1", "ticks": 3, "busy_s": 0.006}]}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    busy = load_record(tmp_path).node("0.1")["busy"]
    assert busy == {"total_s": 0.006, "mean_s": pytest.approx(0.002), "max_s": None}


def test_a_long_history_keeps_every_status_change_and_its_last_rows():
    store = RunStore(HEADER)
    for i in range(3000):
        status = "SUCCESS" if i == 1500 else "RUNNING"
        store.add(tick(i, {"0.0": status}, {"0.0": f"{i} s left"}))
    node = store.node("0.0", max_points=500)
    assert node["history_rows"] == 3000
    rows = node["history"]
    assert len(rows) == 200 + 3  # the first, the change to SUCCESS and back, the last 200
    assert [r[0] for r in rows[:3]] == [0, 1500, 1501]
    assert rows[-1] == [2999, "RUNNING", "2999 s left"]


# -- the skeletons, made in the background ---------------------------------------------------

ARM = {
    "state": [0.5, 0.0, 0.5, 0, 0, 0, 1],
    "command": None,
    "q": [0.1, 0.2, 0.3],
    "q_command": [0.0, 0.0, 0.0],
    "health": 0,
    "stale": False,
}


class LineSkeletons:
    """A stand-in for :class:`Skeletons`: every limb a line from the origin to (sum q, 0, 0)."""

    def points(self, limb, q, bases=None):
        return None if q is None else [[0.0, 0.0, 0.0], [sum(q), 0.0, 0.0]]


def test_frames_carry_no_skeletons_until_the_loader_has_made_them():
    from limbtree.trees.web.skeleton import SkeletonLoader

    gate = threading.Event()
    calls = []

    def slow(robots):
        calls.append(robots)
        gate.wait(10)
        return LineSkeletons()

    robots = {"arm": {"robot": "arm", "limbs": {"arm": {}}}}
    loader = SkeletonLoader(robots, build=slow)
    store = RunStore({**HEADER, "robots": robots}, loader)
    store.add(tick(0, {"0": "RUNNING"}, limbs={"arm": ARM}))
    assert calls == []  # indexing the record does not start them
    before = store.frame(0)
    assert before["skeletons"] == "loading"
    assert before["limbs"]["arm"]["skeleton"] is None
    assert before["limbs"]["arm"]["skeleton_command"] is None
    assert before["limbs"]["arm"]["q"] == [0.1, 0.2, 0.3]  # the rest of the frame is there
    gate.set()
    assert loader.wait(10) is not None and calls == [robots]
    after = store.frame(0)
    assert after["skeletons"] == "ready"
    assert after["limbs"]["arm"]["skeleton"] == [[0.0, 0.0, 0.0], [pytest.approx(0.6), 0.0, 0.0]]
    assert after["limbs"]["arm"]["skeleton_command"] == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert len(calls) == 1  # made once


def test_a_loader_that_fails_leaves_frames_without_skeletons_and_says_why():
    from limbtree.trees.web.skeleton import SkeletonLoader

    def broken(robots):
        raise ImportError("No module named 'roboticstoolbox'")

    loader = SkeletonLoader({}, build=broken)
    store = RunStore(HEADER, loader)
    store.add(tick(0, {"0": "RUNNING"}, limbs={"arm": ARM}))
    store.load_skeletons()
    loader.wait(10)
    frame = store.frame(0)
    assert frame["skeletons"] == "ready" and frame["limbs"]["arm"]["skeleton"] is None
    assert loader.error == "ImportError: No module named 'roboticstoolbox'"


def test_a_store_made_skeletons_are_used_at_once():
    store = RunStore(HEADER, LineSkeletons())  # type: ignore[arg-type]
    store.add(tick(0, {"0": "RUNNING"}, limbs={"arm": ARM}))
    frame = store.frame(0)
    assert frame["skeletons"] == "ready" and frame["limbs"]["arm"]["skeleton"] is not None


def test_the_page_colours_a_skills_modes_as_the_report_does():
    import re
    from pathlib import Path

    from limbtree.trees.report.figures import _MODE_COLOURS

    script = (Path(__file__).resolve().parent.parent / "trees" / "web" / "static" / "js"
              / "nodepanel.js").read_text()  # fmt: skip
    block = re.search(r"const MODE_COLOURS = \{(.*?)\};", script, re.S)
    assert block is not None, "nodepanel.js has no MODE_COLOURS"
    page = dict(re.findall(r'(\w+): "(#[0-9a-f]{6})"', block.group(1)))
    assert page == _MODE_COLOURS


def test_a_store_indexed_without_limbs_and_bases_frames_every_tick_the_same():
    # The live server indexes each tick without decoding its limbs and bases (index_map):
    # frames decode the tick again, so nothing the page sees may differ.
    limb = {"state": [0.0, 0.0, 0.0, 0, 0, 0, 1], "command": [0.003, 0.004, 0, 0, 0, 0, 1],
            "q": [0.1], "q_command": None, "health": 0, "stale": False,
            "target": [0.1, 0.2, 0.3, 0, 0, 0, 1]}  # fmt: skip
    raws = [
        msgpack.packb(
            {**tick(i, {"0": "RUNNING", "0.1": "RUNNING"}, messages={"0.1": f"m{i}"},
                    busy={"0.1": 0.001}, skills={"0.1": {"skill": "sync", "t": i / 10}},
                    events=[{"kind": "fault_injected", "limb": "a", "fault": "blockage"}]
                    if i == 3 else None, limbs={"a": limb}),
             "bases": {"r": [1.0, 0, 0, 0, 0, 0, 1]}},
            use_bin_type=True,
        )
        for i in range(6)
    ]  # fmt: skip
    whole, light = RunStore(HEADER), RunStore(HEADER)
    for raw in raws:
        whole.add(msgpack.unpackb(raw, raw=False), raw)
        light.add(index_map(raw), raw)
    assert "limbs" not in index_map(raws[0]) and "bases" not in index_map(raws[0])
    assert index_map(raws[0])["skills"] == {"0.1": {"skill": "sync", "t": 0.0}}
    for i in range(6):
        assert light.frame(i) == whole.frame(i)
    assert light.frame(5)["limbs"]["a"]["target"] == limb["target"]
    assert light.node("0.1") == whole.node("0.1") and light.events == whole.events
    assert index_map(msgpack.packb([1, 2])) == [1, 2]  # not a map: decoded whole
