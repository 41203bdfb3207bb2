"""A limb's forward kinematics in the tree: ``LimbHandle.pose_at`` and joint moves' targets."""

from __future__ import annotations

import dataclasses

import numpy as np
import py_trees
import pytest
from fake_limbs import FakeLink, description

from limbtree.kinematics import Pose
from limbtree.kinematics.errors import ChainError
from limbtree.robots import load_robot
from limbtree.trees.app import _kinematics
from limbtree.trees.behaviours.joint_move import JointSyncMoveBehaviour
from limbtree.trees.context import MissionContext
from limbtree.trees.limbs import LimbHandle


class PointChain:
    """A fake chain: the end-effector sits at the first three joint values (as FakeLink's)."""

    def __init__(self) -> None:
        self.calls = 0

    def fk(self, q):
        self.calls += 1
        return Pose(np.asarray(q, dtype=float)[:3])


class Loader:
    """Counts its loads; raises ``error`` instead of loading when given one."""

    def __init__(self, chain=None, error=None) -> None:
        self.chain, self.error, self.loads = chain, error, 0

    def __call__(self):
        self.loads += 1
        if self.error is not None:
            raise self.error
        return self.chain


def handle(kinematics=None, base=(0.0, 0.0, 0.0), link=None) -> LimbHandle:
    return LimbHandle(
        "a", description(), link or FakeLink(), Pose(np.array(base)), {}, kinematics=kinematics
    )


def test_pose_at_is_the_chains_pose_placed_where_the_limb_base_is():
    chain = PointChain()
    limb = handle(Loader(chain), base=(1.0, 2.0, 0.0))
    pose = limb.pose_at([0.1, 0.2, 0.3])
    assert pose.position.tolist() == pytest.approx([1.1, 2.2, 0.3])


def test_pose_at_loads_the_chain_once_and_computes_a_posture_once():
    chain = PointChain()
    loader = Loader(chain)
    limb = handle(loader)
    for _ in range(3):
        limb.pose_at([0.1, 0.2, 0.3])
    assert (loader.loads, chain.calls) == (1, 1)
    assert limb.pose_at([0.1, 0.2, 0.4]).position[2] == pytest.approx(0.4)
    assert chain.calls == 2


def test_without_a_chain_there_is_no_pose_and_a_failed_load_is_not_tried_again():
    assert handle().pose_at([0.0, 0.0, 0.0]) is None
    loader = Loader(error=ChainError("heavy_limb.urdf: no joint between 'a' and 'b'"))
    limb = handle(loader)
    assert limb.chain() is None and limb.pose_at([0.0, 0.0, 0.0]) is None
    assert loader.loads == 1


def test_a_joint_move_targets_where_its_posture_puts_each_end_effector():
    links = {"a": FakeLink((0.0, 0.0, 0.0), 0.2), "b": FakeLink((1.0, 0.0, 0.0), 0.2)}
    loaders = {name: Loader(PointChain()) for name in links}
    handles = {
        name: LimbHandle(name, description(), link, Pose(), {}, kinematics=loaders[name])
        for name, link in links.items()
    }
    now = [0.0]
    context = MissionContext(handles, lambda: now[0])
    postures = [
        {"a": [0.02, 0.0, 0.0], "b": [1.0, 0.03, 0.0]},
        {"a": [0.02, 0.05, 0.0], "b": [1.0, 0.0, 0.0]},
    ]
    move = JointSyncMoveBehaviour(
        "fold", context, {"limbs": ["a", "b"], "postures": postures, "q_e": 0.01, "settle": 1e-4}
    )
    # The chains load when the tree is built, not in a tick.
    assert [loader.loads for loader in loaders.values()] == [1, 1]
    seen = set()
    status = py_trees.common.Status.RUNNING
    while status is py_trees.common.Status.RUNNING and now[0] < 5.0:
        context.telemetry.new_tick()
        for link in links.values():
            link.step(now[0])
        move.tick_once()
        status = move.status
        segment = context.telemetry.tick["fold"].as_map()["segment"]
        seen.add(segment)
        for name in links:
            target = context.telemetry.targets[name]
            assert target.position.tolist() == pytest.approx(postures[segment][name])
        now[0] += 0.02
    assert status is py_trees.common.Status.SUCCESS and seen == {0, 1}


class StandingLink(FakeLink):
    """A fake limb whose state says its end-effector is latched (it stands on it)."""

    def _sample(self):
        return dataclasses.replace(super()._sample(), detail={"ends_latched": ["ee"]})


def test_a_joint_move_gives_no_target_for_a_limb_standing_on_its_end_effector():
    # Its joints move its other end (a MIRROR arm after a step): the posture says nothing
    # of where the end-effector goes, which stays where it is latched.
    links = {"a": StandingLink((0.0, 0.0, 0.0), 0.2), "b": FakeLink((1.0, 0.0, 0.0), 0.2)}
    handles = {
        name: LimbHandle(name, description(), link, Pose(), {}, kinematics=Loader(PointChain()))
        for name, link in links.items()
    }
    context = MissionContext(handles, lambda: 0.0)
    postures = [{"a": [0.02, 0.0, 0.0], "b": [1.0, 0.03, 0.0]}]
    move = JointSyncMoveBehaviour(
        "fold", context, {"limbs": ["a", "b"], "postures": postures, "q_e": 0.01, "settle": 1e-4}
    )
    context.telemetry.new_tick()
    move.tick_once()
    assert set(context.telemetry.targets) == {"b"}


def test_the_run_gives_a_chain_only_where_it_ends_at_the_default_end_effector():
    mirror = load_robot("mirror_arm")  # E1 at link e1, E2 at e2, the chain ends at e2
    e2_first = dataclasses.replace(description("mirror_arm"), end_effectors=("E2", "E1"))
    e1_first = dataclasses.replace(description("mirror_arm"), end_effectors=("E1", "E2"))
    assert _kinematics(mirror, "arm", e2_first) is not None
    assert _kinematics(mirror, "arm", e1_first) is None
    heavy = load_robot("heavy_limb")  # no interfaces: its end-effector is its ee_link
    assert _kinematics(heavy, None, dataclasses.replace(description(), end_effectors=("ee_link",)))
