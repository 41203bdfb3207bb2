"""The public API of limbtree.trees.mission, its node registry, units and reference."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import limbtree.trees.mission as mission_api
from limbtree.trees.mission import (
    REQUIRED,
    TOP_KEYS,
    NodeKind,
    NodeSpec,
    ParamSpec,
    check_mission,
    load_mission,
)
from limbtree.trees.mission.declarations import LIMB_SPECS
from limbtree.trees.mission.faults import FAULT_SPECS, RANDOM_SPECS
from limbtree.trees.mission.model import SCHEDULED_FAULT_KINDS
from limbtree.trees.mission.units import quaternion_from_euler, stem
from limbtree.trees.mission.values import Text
from limbtree.trees.nodes import builtin_registry

DOCS = Path(__file__).parent.parent / "docs" / "missions.md"
ROBOTS = {"heavy_limb": ("arm",)}
NODE_SPECS = builtin_registry()
NODE_ALIASES = NODE_SPECS.aliases


def test_every_public_name_imports():
    for name in mission_api.__all__:
        assert getattr(mission_api, name) is not None


def test_the_registry_is_read_only():
    with pytest.raises(TypeError):
        NODE_SPECS["wait"] = NODE_SPECS["sequence"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        NODE_SPECS.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        NODE_ALIASES["sel"] = "fallback"  # type: ignore[index]


def test_the_registry_holds_the_vocabulary_of_the_issue():
    kinds = {name: spec.kind for name, spec in NODE_SPECS.items()}
    assert {n for n, k in kinds.items() if k is NodeKind.COMPOSITE} == {
        "sequence",
        "fallback",
        "parallel",
    }
    assert {n for n, k in kinds.items() if k is NodeKind.DECORATOR} == {
        "repeat",
        "retry",
        "timeout",
        "inverter",
        "force_success",
        "force_failure",
        "until_success",
    }
    assert {n for n, k in kinds.items() if k is NodeKind.LEAF} == {
        "sync_move",
        "velocity_move",
        "joint_sync_move",
        "joint_move",
        "recover_to_last_valid",
        "wait",
        "operator_gate",
        "align",
        "grasp",
        "release",
        "walk_step",
        "impedance_move",
        "latch",
        "unlatch",
        "climb_step",
        "base_adjust",
        "grip_guard",
    }
    assert dict(NODE_ALIASES) == {"selector": "fallback"}


def test_param_keys_carry_their_unit_and_defaults_convert_to_si():
    sync = NODE_SPECS["sync_move"]
    assert [p.key for p in sync.params] == [
        "limbs",
        "waypoints",
        "frame",
        "p_e_mm",
        "r_e_deg",
        "norm",
        "recovery",
        "monotonic",
        "max_speed_mm_s",
        "settle_mm",
        "stale_timeout_s",
        "loop",
        "timeout_s",
        "ik_timeout_s",
        "stall_timeout_s",
    ]
    assert sync.param("p_e").default_value() == pytest.approx(0.02)
    assert sync.param("r_e").default_value() == math.inf
    assert sync.param("waypoints").required
    assert NODE_SPECS["joint_sync_move"].param("q_e").default_value() == pytest.approx(
        math.radians(5)
    )
    with pytest.raises(KeyError, match="no parameter"):
        sync.param("speed")


def test_node_specs_refuse_inconsistent_children_and_reserved_keys():
    with pytest.raises(ValueError, match="decorator"):
        NodeSpec("wrap", NodeKind.DECORATOR, (), (0, 3))
    with pytest.raises(ValueError, match="leaf"):
        NodeSpec("act", NodeKind.LEAF, (), (1, 1))
    with pytest.raises(ValueError, match="reserved"):
        NodeSpec("act", NodeKind.LEAF, (ParamSpec("name", Text()),), (0, 0))


def test_a_later_skill_extends_the_registry_without_touching_it(tmp_path):
    weld = NodeSpec(
        "weld",
        NodeKind.LEAF,
        (ParamSpec("gripper", Text(), REQUIRED, "which gripper"),),
        (0, 0),
        "weld a seam",
    )
    registry = NODE_SPECS.with_types(weld)
    assert "weld" not in NODE_SPECS and registry["weld"] is weld
    path = tmp_path / "m.yaml"
    path.write_text("mission: m\ntree: {weld: {gripper: left_hand}}\n")
    mission = load_mission(path, robots=ROBOTS, registry=registry)
    assert mission.root.params["gripper"] == "left_hand"
    (problem,) = check_mission(path, robots=ROBOTS)
    assert "unknown node type weld" in problem.message


@pytest.mark.parametrize(
    ("key", "expected"),
    [("p_e_cm", "p_e"), ("p_e_mm", "p_e"), ("max_speed_m_s", "max_speed"), ("norm", "norm")],
)
def test_stem_drops_a_unit_suffix(key, expected):
    assert stem(key) == expected


def test_rotation_is_xyz_extrinsic_with_the_scalar_last():
    q = quaternion_from_euler(np.radians([90.0, 0.0, 90.0]))
    expected = (
        Rotation.from_euler("z", 90, degrees=True) * Rotation.from_euler("x", 90, degrees=True)
    ).as_quat()
    assert np.allclose(q, expected) or np.allclose(q, -expected)
    assert q[3] >= 0
    assert quaternion_from_euler((0.0, 0.0, 0.0)) == (0.0, 0.0, 0.0, 1.0)


def test_the_reference_documents_every_key_and_node_type():
    text = DOCS.read_text()
    words = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)", text))
    keys = set(TOP_KEYS)
    keys |= {p.key for spec in NODE_SPECS.values() for p in spec.params}
    keys |= {p.key for p in (*LIMB_SPECS, *FAULT_SPECS, *RANDOM_SPECS)}
    keys |= set(NODE_SPECS) | set(NODE_ALIASES)
    keys |= {kind.value for kind in SCHEDULED_FAULT_KINDS}
    assert sorted(keys - words) == []
