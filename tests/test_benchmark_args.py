"""The benchmarks refuse arguments that would measure nothing, before measuring anything."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@functools.cache
def _climb_main():
    spec = importlib.util.spec_from_file_location("bench_climb", BENCHMARKS / "climb.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # --rounds -1 printed "inf" for every planning figure; 0 was quietly the default
        (["--rounds", "-1"], "--rounds must be 1 or more, not -1"),
        (["--rounds", "0"], "--rounds must be 1 or more, not 0"),
        # --cycles 0 planned for seconds, then failed in the mission run
        (["--cycles", "0"], "--cycles must be 1 or more, not 0"),
    ],
)
def test_climb_benchmark_refuses_a_count_below_one(args, said, monkeypatch, capsys):
    main = _climb_main()
    monkeypatch.setattr(sys, "argv", ["climb.py", "--quick", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    out = capsys.readouterr()
    assert said in out.err
    assert out.out == ""
