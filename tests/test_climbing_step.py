"""Seed 004's stepping cores (limbtree.skills.climbing.step): a swing and a base adjustment of
HubRobo on flat ground, stepped like the tree steps them. The feet are checked by the floating
tree's forward kinematics of the joint targets (not the closed-form leg the cores use), the
momentum by differentiating the planned joints and base poses through the tree's momentum
matrix (not the plan's own figures), the support pose against the plane's closed form."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest
from climbing_robot import climber
from scipy.spatial.transform import Rotation

from limbtree.skills.climbing import ClimbingInputError, plan_swing_motion
from limbtree.skills.climbing.step import (
    ClimbObservation,
    GripLoss,
    Planner,
    SupportParams,
    SupportStep,
    SwingParams,
    SwingStep,
)
from limbtree.skills.outcome import Outcome

SWING = "leg_1"  # the rear left leg: the crawl's first swing
RATE_HZ = 100.0  # the tree's tick rate in these tests
STRIDE = np.array([0.08, 0.0, 0.0])


def observe(t, q=None, base=None, footholds=None, **kwargs):
    robot = climber()
    return ClimbObservation(
        t,
        robot.q if q is None else q,
        robot.base if base is None else base,
        robot.footholds if footholds is None else footholds,
        **kwargs,
    )


def run(core, make_observation=observe, limit_s=5.0):
    """Step ``core`` at RATE_HZ until it ends; every tick's result."""
    results = []
    t = 0.0
    while t < limit_s:
        result = core.step(make_observation(t), 1.0 / RATE_HZ)
        results.append(result)
        if result.outcome is not Outcome.RUNNING:
            return results
        t = round(t + 1.0 / RATE_HZ, 9)
    raise AssertionError(f"{core} did not end within {limit_s} s")


def world_feet(q, base):
    """Every foot in the world by the floating tree's FK (independent of PlanarLeg)."""
    robot = climber()
    return {
        leg: base[:3, :3] @ robot.tree.frame_pose(frame, q)[:3, 3] + base[:3, 3]
        for leg, frame in robot.feet.items()
    }


@pytest.fixture(scope="module", params=[Planner.BASELINE, Planner.RAMP])
def swing_run(request):
    robot = climber()
    core = SwingStep(
        robot.tree, robot.legs, SWING, SwingParams(planner=request.param), clock=time.perf_counter
    )
    return request.param, core, run(core)


def test_a_swing_lands_its_foot_on_the_target_and_keeps_the_others_within_1_mm(swing_run):
    planner, core, results = swing_run
    robot = climber()
    target = robot.footholds[SWING] + STRIDE  # flat ground: the stride along the plane
    assert [r.outcome for r in results[:-1]] == [Outcome.RUNNING] * (len(results) - 1)
    assert results[-1].outcome is Outcome.SUCCESS
    assert len(results) == 176  # 1.75 s at 100 Hz, both ends included
    worst = 0.0
    path = core.swing.evaluate(np.arange(len(results)) / RATE_HZ).position
    for k, result in enumerate(results):
        feet = world_feet(result.q, result.base_pose)
        for leg in robot.legs:
            if leg != SWING:
                worst = max(worst, float(np.linalg.norm(feet[leg] - robot.footholds[leg])))
        for leg, model in robot.legs.items():  # the supporting legs' targets are the plan's
            if leg != SWING:
                np.testing.assert_array_equal(result.joint_targets[leg], result.q[model.columns])
        # the swinging leg's put its foot on the path from the base as observed (here the
        # base never moves, whatever the plan says)
        commanded = result.q.copy()
        commanded[robot.legs[SWING].columns] = result.joint_targets[SWING]
        foot = world_feet(commanded, robot.base)[SWING]
        np.testing.assert_allclose(foot, path[min(k, len(path) - 1)], atol=1e-9)
    assert worst < 1e-3
    assert worst < 1e-6  # in fact: the plan's IK is exact, the interpolation ~1e-8
    end = world_feet(results[-1].q, results[-1].base_pose)[SWING]
    np.testing.assert_allclose(end, target, atol=1e-6)
    # the foot rises to h_sw (40 mm) above the footholds half way
    middle = results[len(results) // 2]
    assert world_feet(middle.q, middle.base_pose)[SWING][2] == pytest.approx(0.04, abs=2e-3)
    if planner is Planner.BASELINE:  # the base is held
        for result in results:
            np.testing.assert_allclose(result.base_pose, robot.base, atol=1e-12)
    else:  # MD moves it
        moved = np.linalg.norm(results[-1].base_pose[:3, 3] - robot.base[:3, 3])
        assert moved > 5e-4  # ~1 mm with eq. 6's alpha


def test_the_swing_leg_opens_its_gripper_at_the_start_and_closes_it_at_the_end(swing_run):
    _, _, results = swing_run
    assert results[0].open_grippers == (SWING,)
    assert results[0].close_grippers == ()
    assert all(r.open_grippers == () and r.close_grippers == () for r in results[1:-1])
    assert results[-1].close_grippers == (SWING,)
    assert results[-1].open_grippers == ()


def test_telemetry_and_metrics_carry_the_plan(swing_run):
    planner, _, results = swing_run
    tele = results[len(results) // 2].telemetry.as_map()
    assert tele["skill"] == "climb_step"
    assert tele["leg"] == SWING and tele["planner"] == planner.value
    assert tele["apex_m"] == pytest.approx(0.04, abs=2e-3)
    assert tele["swing_lin_kg_m_s"] > 0.0
    assert 0.0 < tele["planning_s"] < 10.0
    metrics = results[-1].metrics
    assert metrics is not None and metrics["planner"] == planner.value
    if planner is Planner.RAMP:
        assert 0.0 <= metrics["alpha_min"] <= metrics["alpha_max"] <= 1.0
        assert metrics["objective_after"] <= metrics["objective_before"]
        # stance: w = 1.84e-3 m^3 -> alpha = (1.84 - 1.2) / 1.3 = 0.49 (eq. 6)
        assert tele["alpha"] >= 0.0 and results[0].telemetry.as_map()["alpha"] == pytest.approx(
            (1.84e-3 - 1.2e-3) / 1.3e-3, abs=0.05
        )
    else:
        assert metrics["alpha_max"] == 0.0 and "objective_before" not in metrics


def momentum_along(core):
    """The robot's total momentum along a plan: its joints and base poses differentiated,
    through the tree's momentum matrix [(k, 6)]."""
    robot = climber()
    motion = core.motion
    dt = motion.t[1] - motion.t[0]
    rates = np.gradient(motion.q, dt, axis=0)
    out = []
    for k in range(1, len(motion.t) - 1):
        before, now, after = motion.base_poses[k - 1 : k + 2]
        v = now[:3, :3].T @ (after[:3, 3] - before[:3, 3]) / (2 * dt)
        w = Rotation.from_matrix(before[:3, :3].T @ after[:3, :3]).as_rotvec() / (2 * dt)
        out.append(robot.tree.momentum_matrix(motion.q[k]) @ np.concatenate([v, w, rates[k]]))
    return np.array(out), dt


def swing_core(planner, **kwargs):
    robot = climber()
    core = SwingStep(robot.tree, robot.legs, SWING, SwingParams(planner=planner, **kwargs))
    core.step(observe(0.0), 0.01)
    return core


def held(core):
    """The same swing path flown with the base held (no MD), as a momentum reference."""
    robot = climber()
    motion = plan_swing_motion(
        robot.tree,
        robot.legs,
        robot.q,
        robot.base,
        robot.footholds,
        SWING,
        core.swing,
        distribute=False,
    )
    return type("Held", (), {"motion": motion})()


def test_ramps_momentum_distribution_lowers_the_robots_momentum():
    baseline, _ = momentum_along(swing_core(Planner.BASELINE))
    lin_base = np.linalg.norm(baseline[:, :3], axis=1)
    # Sec. 4's fixed alpha = 0.3: eq. 4 moves the base against the swing (on the paper's LRST
    # path: the free points anywhere, not on the footholds' normals)
    core = swing_core(Planner.RAMP, alpha=0.3, normal_ends=False)
    fixed, _ = momentum_along(core)
    same_path, _ = momentum_along(held(core))
    peak_fixed = np.linalg.norm(fixed[:, :3], axis=1).max()
    # 0.86 measured, not 0.7: the swinging leg's joints also carry the base's motion
    assert peak_fixed < 0.9 * np.linalg.norm(same_path[:, :3], axis=1).max()
    assert peak_fixed < lin_base.max()  # and below the baseline's (LRST's path peaks higher)
    # eq. 6's alpha: 0.49 at the stance but down to ~0.03 mid-swing, where the swinging leg
    # is stretched (its manipulability is the smallest): the peak barely moves, the
    # momentum over the swing and its rate of change (the grippers' load) do
    ramp, dt = momentum_along(swing_core(Planner.RAMP, normal_ends=False))
    lin_ramp = np.linalg.norm(ramp[:, :3], axis=1)
    assert lin_ramp.sum() < 0.97 * lin_base.sum()
    rate_base = np.linalg.norm(np.gradient(baseline[:, :3], dt, axis=0), axis=1).max()
    rate_ramp = np.linalg.norm(np.gradient(ramp[:, :3], dt, axis=0), axis=1).max()
    assert rate_ramp < 0.9 * rate_base
    # with alpha = 1, eq. 4 leaves next to none (3% measured: the plan integrates eq. 4 by
    # explicit Euler at 100 Hz)
    full, _ = momentum_along(swing_core(Planner.RAMP, alpha=1.0, normal_ends=False))
    assert np.linalg.norm(full[:, :3], axis=1).max() < 0.05 * lin_base.max()


def test_a_detached_supporting_gripper_fails_the_swing_naming_leg_force_and_time():
    robot = climber()
    core = SwingStep(robot.tree, robot.legs, SWING, SwingParams(planner=Planner.BASELINE))
    assert core.step(observe(10.0), 0.01).outcome is Outcome.RUNNING
    # the swinging leg's own gripper is open: its report does not matter
    own = core.step(observe(10.01, detached=(GripLoss(SWING, 2.0, 10.01),)), 0.01)
    assert own.outcome is Outcome.RUNNING
    lost = GripLoss("leg_3", 1.234, 10.02)
    result = core.step(observe(10.02, detached=(lost,)), 0.01)
    assert result.outcome is Outcome.FAILURE
    assert "leg_3" in result.message and "1.234 N" in result.message
    assert "t = 10.020 s" in result.message
    assert result.q is None and result.metrics is not None
    assert core.step(observe(10.03), 0.01) is result  # stays failed


def test_an_unreachable_foothold_fails_the_swing():
    robot = climber()
    far = robot.footholds[SWING] + [0.5, 0.0, 0.0]
    core = SwingStep(robot.tree, robot.legs, SWING, SwingParams(planner="baseline"), target=far)
    result = core.step(observe(0.0), 0.01)
    assert result.outcome is Outcome.FAILURE
    assert "out of leg_1's reach" in result.message


def test_bad_input_is_named():
    robot = climber()
    with pytest.raises(ClimbingInputError, match="planner"):
        SwingParams(planner="fast")
    with pytest.raises(ClimbingInputError, match="swing_leg"):
        SwingStep(robot.tree, robot.legs, "leg_9")
    with pytest.raises(ClimbingInputError, match="base_pose"):
        observe(0.0, base=np.ones((4, 4)))
    core = SwingStep(robot.tree, robot.legs, SWING)
    with pytest.raises(ClimbingInputError, match="footholds"):
        core.step(observe(0.0, footholds={"leg_0": [0, 0, 0]}), 0.01)


def plane_pose(footholds, h_n):
    """The support pose by its closed form: over the centroid, h_n up, z on the plane normal
    and x along world x projected onto the plane."""
    points = np.array(list(footholds.values()))
    centroid = points.mean(axis=0)
    _, _, vt = np.linalg.svd(points - centroid)
    normal = vt[2] * np.sign(vt[2][2])
    x = np.array([1.0, 0.0, 0.0]) - normal[0] * normal
    x /= np.linalg.norm(x)
    pose = np.eye(4)
    pose[:3, :3] = np.column_stack([x, np.cross(normal, x), normal])
    pose[:3, 3] = centroid + [0.0, 0.0, h_n]
    return pose


@pytest.mark.parametrize("planner", [Planner.RAMP, Planner.BASELINE])
def test_the_support_phase_takes_the_base_to_its_pose_with_the_feet_fixed(planner):
    robot = climber()
    # after leg_1's swing: its foothold 80 mm ahead and 20 mm up (the plane tilts)
    holds = dict(robot.footholds)
    holds[SWING] = holds[SWING] + [0.08, 0.0, 0.02]
    core = SupportStep(robot.tree, robot.legs, SupportParams(planner=planner))
    results = run(core, lambda t: observe(t, footholds=holds))
    assert results[-1].outcome is Outcome.SUCCESS and len(results) == 176
    assert all(r.open_grippers == () == r.close_grippers for r in results)
    worst = 0.0
    for result in results:
        feet = world_feet(result.q, result.base_pose)
        worst = max(worst, max(float(np.linalg.norm(feet[leg] - holds[leg])) for leg in holds))
    assert worst < 1e-6
    if planner is Planner.RAMP:
        expected = plane_pose(holds, 0.11)
        assert abs(expected[0, 2]) > 0.01  # the plane does tilt
    else:  # level, over the centroid, at the footholds' mean height + h_n
        expected = np.eye(4)
        expected[:3, 3] = np.mean(list(holds.values()), axis=0) + [0.0, 0.0, 0.11]
    np.testing.assert_allclose(results[-1].base_pose, expected, atol=1e-9)
    np.testing.assert_allclose(results[0].base_pose, robot.base, atol=1e-12)
    metrics = results[-1].metrics
    assert metrics["shift_m"] == pytest.approx(
        np.linalg.norm(expected[:3, 3] - robot.base[:3, 3]), abs=1e-12
    )
    assert results[-1].telemetry.as_map()["skill"] == "base_adjust"


def test_the_support_phase_raises_the_base_over_a_rock_by_eq_1():
    robot = climber()
    rock_top = 0.1  # a 100 mm rock under the base's centre, 40 mm across

    def terrain(x, y):
        return np.where(np.hypot(x, y) < 0.02, rock_top, 0.0)

    core = SupportStep(robot.tree, robot.legs, SupportParams(planner=Planner.RAMP))
    results = run(core, lambda t: observe(t, terrain=terrain))
    assert results[-1].outcome is Outcome.SUCCESS
    # the lower face (30 mm below the base origin at 110 mm: 80 mm up) is 20 mm into the
    # rock; eq. 1 raises by that plus h_add (20 mm): the base origin at 150 mm
    assert results[-1].base_pose[2, 3] == pytest.approx(0.15, abs=1e-9)
    assert results[-1].metrics["raise_m"] == pytest.approx(0.04, abs=1e-9)
    baseline = SupportStep(robot.tree, robot.legs, SupportParams(planner=Planner.BASELINE))
    flat = run(baseline, lambda t: observe(t, terrain=terrain))
    assert flat[-1].base_pose[2, 3] == pytest.approx(0.11, abs=1e-9)  # blind to the rock


def test_a_rock_too_high_to_climb_over_fails_the_support_phase_naming_the_leg():
    robot = climber()

    def terrain(x, y):  # a 300 mm rock: eq. 1 lifts the base out of the legs' reach
        return np.where(np.hypot(x, y) < 0.02, 0.3, 0.0)

    core = SupportStep(robot.tree, robot.legs, SupportParams(planner=Planner.RAMP))
    result = core.step(observe(0.0, terrain=terrain), 0.01)
    assert result.outcome is Outcome.FAILURE
    assert re.search(
        r"puts leg_\d's foot out of reach \(reach margin -[\d.]+, below 0: ", result.message
    )
    assert "too far from the footholds for the legs" in result.message


def test_a_detached_gripper_fails_the_support_phase():
    robot = climber()
    core = SupportStep(robot.tree, robot.legs)
    core.step(observe(0.0), 0.01)
    result = core.step(observe(0.01, detached=(GripLoss("leg_0", 1.25, 0.01),)), 0.01)
    assert result.outcome is Outcome.FAILURE
    assert "leg_0" in result.message and "1.250 N" in result.message
    assert not math.isnan(result.metrics["shift_m"])


def settling_palm(rest_s):
    """Observations whose swinging palm is still sinking onto the foothold after 1.75 s.

    The palm is 10 mm above its foothold at the plan's end and comes down as
    ``exp(-t / rest_s)``: its speed falls below 5 mm/s ``rest_s ln(2 / rest_s)`` later.
    """
    robot = climber()

    def make(t):
        footholds = dict(robot.footholds)
        late = max(0.0, t - 1.7)
        footholds[SWING] = footholds[SWING] + np.array([0.0, 0.0, 0.01 * math.exp(-late / rest_s)])
        return observe(t, footholds=footholds)

    return make


@pytest.mark.parametrize("planner", [Planner.BASELINE, Planner.RAMP])
def test_the_gripper_closes_once_the_swinging_palm_has_come_to_rest(planner):
    robot = climber()
    params = SwingParams(planner=planner, settle_speed_m_s=0.005)
    results = run(SwingStep(robot.tree, robot.legs, SWING, params), settling_palm(0.05))
    ends = [k for k, r in enumerate(results) if r.close_grippers]
    assert ends == [len(results) - 1]  # closed once, when it ended
    settled_at = len(results) - 1 - 175  # ticks after the plan's end (1.75 s at 100 Hz)
    # 10 mm/0.05 s = 0.2 m/s falls to 5 mm/s after 0.05 ln(40) = 0.18 s past 1.7 s
    assert 0.10 <= settled_at / RATE_HZ <= 0.15
    for result in results[175:-1]:
        assert result.outcome is Outcome.RUNNING and result.close_grippers == ()
        assert "coming to rest" in result.message
        assert result.telemetry.as_map()["phase"] == "settling"
        # the plan's last targets are held while waiting
        np.testing.assert_allclose(
            result.joint_targets[SWING], results[175].joint_targets[SWING], atol=1e-12
        )
    assert results[-1].outcome is Outcome.SUCCESS and "at rest after 0.1" in results[-1].message
    assert results[-1].metrics["settle_s"] == pytest.approx(settled_at / RATE_HZ, abs=1e-9)


def test_a_palm_that_never_comes_to_rest_is_gripped_at_the_timeout():
    robot = climber()
    params = SwingParams(planner=Planner.BASELINE, settle_speed_m_s=0.005, settle_timeout_s=0.3)

    def wobbling(t):  # 10 mm at 3 Hz: up to 0.19 m/s, never at rest
        footholds = dict(robot.footholds)
        footholds[SWING] = footholds[SWING] + np.array([0.0, 0.0, 0.01 * math.sin(6 * math.pi * t)])
        return observe(t, footholds=footholds)

    results = run(SwingStep(robot.tree, robot.legs, SWING, params), wobbling)
    assert results[-1].close_grippers == (SWING,)
    assert results[-1].metrics["settle_s"] == pytest.approx(0.3, abs=1e-9)


def test_by_default_the_gripper_closes_when_the_plan_ends_as_in_the_paper():
    robot = climber()
    params = SwingParams(planner=Planner.BASELINE)
    results = run(SwingStep(robot.tree, robot.legs, SWING, params), settling_palm(0.05))
    assert len(results) == 176 and results[-1].close_grippers == (SWING,)
    assert results[-1].metrics["settle_s"] == 0.0
    assert "at rest" not in results[-1].message  # it closed on a moving palm
