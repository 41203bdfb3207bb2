"""A scheduled slowdown's factor is checked against the simulator's own limits."""

import textwrap
from pathlib import Path

import pytest

from limbtree.transport.faults import SLOWDOWN_FACTOR_HIGH, SLOWDOWN_FACTOR_LOW
from limbtree.trees.mission import check_mission

ROBOTS = {"heavy_limb": ("arm",)}


def problems(tmp_path: Path, factor: float) -> list[str]:
    path = tmp_path / "m.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            mission: m
            limbs:
              arm: {{robot: heavy_limb}}
            faults:
              - {{at_s: 1, limb: arm, kind: slowdown, factor: {factor!r}}}
            tree:
              wait: {{duration_s: 1}}
            """
        )
    )
    return [str(p) for p in check_mission(path, robots=ROBOTS)]


@pytest.mark.parametrize("factor", [SLOWDOWN_FACTOR_HIGH, SLOWDOWN_FACTOR_LOW, 1.5])
def test_check_refuses_a_slowdown_factor_the_simulator_refuses(tmp_path, factor):
    (message,) = problems(tmp_path, factor)
    assert message.startswith(f"{tmp_path / 'm.yaml'}:5:")
    assert "factor must be in (0, 1)" in message


@pytest.mark.parametrize("factor", [0.01, 0.5, 0.99])
def test_check_accepts_a_slowdown_factor_inside_the_limits(tmp_path, factor):
    assert problems(tmp_path, factor) == []
