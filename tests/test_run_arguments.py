"""``limbtree run`` refuses bad arguments before it starts anything, with no traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from limbtree.trees.cli import main

SQUARE = str(Path(__file__).resolve().parent.parent / "missions" / "square_sync.yaml")


def _record(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def test_a_record_is_never_overwritten_by_a_second_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "rec"
    record.mkdir()
    (record / "summary.json").write_text(json.dumps({"outcome": "SUCCESS"}))
    (record / "log.msgpack").write_bytes(b"\x92\x01\x02")
    (record / "grip_forces.png").write_bytes(b"png")
    before = _record(record)
    assert main(["run", SQUARE, "--headless", "--record", str(record)]) == 1
    err = capsys.readouterr().err
    assert f"--record {record}: it already holds a run's record (summary.json, log.msgpack)" in (
        err
    )
    assert f"rm -r {record}" in err and "Traceback" not in err
    assert _record(record) == before
    assert sorted(p.name for p in record.iterdir()) == sorted(before)  # no agents/ either


def test_a_record_directory_with_other_files_only_is_used(tmp_path: Path) -> None:
    # (limbtree sweep writes its run.log there first; a fresh directory is made.)
    record = tmp_path / "rec"
    record.mkdir()
    (record / "notes.txt").write_text("mine")
    assert main(["run", SQUARE, "--headless", "--record", str(record)]) == 0
    assert (record / "summary.json").exists() and (record / "notes.txt").read_text() == "mine"
    made = tmp_path / "new" / "deeper"
    assert main(["run", SQUARE, "--headless", "--record", str(made)]) == 0
    assert json.loads((made / "summary.json").read_text())["outcome"] == "SUCCESS"


@pytest.mark.parametrize("kind", ["file", "under a file"])
def test_a_record_path_that_cannot_be_a_directory_is_named(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "taken"
    file.write_text("x")
    target = file if kind == "file" else file / "rec"
    assert main(["run", SQUARE, "--headless", "--record", str(target)]) == 1
    err = capsys.readouterr().err
    assert f"--record {target}: " in err and "Traceback" not in err
    expected = "that is a file, not a directory" if kind == "file" else "cannot make the directory"
    assert expected in err
    assert file.read_text() == "x"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", SQUARE, "--seed", "-1"], "--seed must be 0 or more, got '-1'"),
        (["run", SQUARE, "--seed", "one"], "--seed wants a whole number, got 'one'"),
        (
            ["run", SQUARE, "--view", "web", "--port", "99999"],
            "--port must be 0 to 65535 (0 picks a free one), got '99999'",
        ),
        (["run", SQUARE, "--view", "web", "--port", "-1"], "--port must be 0 to 65535"),
        (["view", ".", "--port", "70000"], "--port must be 0 to 65535"),
        # (a process id: 0 or less once bound the agent, then ended it in a traceback)
        (
            ["agent", "--robot", "light_limb", "--bind", "ipc:///nowhere/a", "--parent-pid", "-3"],
            "--parent-pid must be 1 or more (a process id), got '-3'",
        ),
        (["agents", "--each", "--robot x", "--parent-pid", "0"], "--parent-pid must be 1 or more"),
    ],
)
def test_bad_numbers_are_refused_by_the_parser(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_stop_with_that_is_not_a_process_id_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIMBTREE_STOP_WITH", "sweep")
    assert main(["run", SQUARE, "--headless", "--record", str(tmp_path / "rec")]) == 1
    err = capsys.readouterr().err
    assert "LIMBTREE_STOP_WITH='sweep': it must be a process id" in err
    assert "Traceback" not in err and not (tmp_path / "rec").exists()


def test_a_record_directory_another_run_is_writing_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from limbtree.trees.errors import RunError
    from limbtree.trees.recorder import Recorder

    first = Recorder(tmp_path / "rec")
    with pytest.raises(RunError, match="another limbtree run is writing its record there"):
        Recorder(tmp_path / "rec")
    # limbtree run says so before it starts anything (and does not offer rm -r).
    assert main(["run", SQUARE, "--headless", "--record", str(tmp_path / "rec")]) == 1
    err = capsys.readouterr().err
    assert "another limbtree run is writing its record there; wait for it to end" in err
    assert "rm -r" not in err and not (tmp_path / "rec" / "agents").exists()
    first.close({"outcome": "SUCCESS"})
    Recorder(tmp_path / "rec").close({"outcome": "SUCCESS"})  # (the lock went with the close)


def test_a_web_host_that_is_not_this_machines_is_refused_before_the_agents_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --port 0 too: the host is tried with a free port (192.0.2.1: TEST-NET-1, no machine's)
    args = ["run", SQUARE, "--view", "web", "--host", "192.0.2.1", "--token", "t"]
    assert main([*args, "--port", "0", "--record", str(tmp_path / "rec")]) == 1
    printed = capsys.readouterr()
    assert "cannot listen on 192.0.2.1:0" in printed.err and "give --host" in printed.err
    assert "starting" not in printed.out + printed.err  # (no agent was started)
    assert not (tmp_path / "rec").exists()


def test_a_speed_for_a_real_clock_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", SQUARE, "--headless", "--clock", "real", "--speed", "100"]
    assert main([*args, "--record", str(tmp_path / "rec")]) == 1
    err = capsys.readouterr().err
    assert "--speed 100 paces the sim clock;" in err and "drop --speed, or add --clock sim" in err
    assert not (tmp_path / "rec").exists()


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """``limbtree robots | head -1``: no traceback when stdout's reader has gone."""
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes
    try:
        done = subprocess.run(
            [sys.executable, "-m", "limbtree", "robots"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 141
