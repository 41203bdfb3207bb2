"""The hypersphere clamp (seed 000 Sec. II): its three requirements, both methods, edge cases."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from strategies import clamp_cases

from limbtree.kinematics import (
    InvalidMetricError,
    Pose,
    SE3Metric,
    ShapeMismatchError,
    Trajectory,
    build_problem,
    hypersphere_clamp,
)
from limbtree.kinematics.clamp import sample_count
from limbtree.kinematics.segment import SAFETY

GRID = 4001


def _dense_feasible(problem, lo, hi, count=GRID, margin=0.0):
    ts = np.linspace(lo, hi, count)
    return ts, problem.stacked(ts) <= 1.0 - margin


#: The exact clamp keeps its answer inside by SAFETY (d^2 <= 1 - SAFETY), so a point exactly
#: on the sphere (hypothesis found one: a zero-length move 1 radius from the centre) is not
#: an answer it missed.
ON_SPHERE = SAFETY


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clamp_cases())
def test_exact_clamp_meets_the_three_requirements(case):
    center, start, end, metric, order, t_min = case
    result = hypersphere_clamp(center, start, end, metric, ord=order, t_min=t_min)
    problem = build_problem(center, start, end, metric, ord=order)
    if result.t is None:
        # Nothing feasible anywhere on [t_min, 1].
        _, inside = _dense_feasible(problem, t_min, 1.0, margin=ON_SPHERE)
        assert not inside.any()
        assert result.poses is None and result.distance is None
        return
    # 1) the command lies within the hypersphere, 2) on the trajectory, with t >= t_min ...
    assert t_min <= result.t <= 1.0
    assert result.distance <= 1.0
    expected = Trajectory(start, end)(result.t)
    for got, want in zip(result.poses, expected, strict=True):
        assert got.isclose(want, atol_m=1e-12, atol_rad=1e-7)
    # 3) ... and no larger t is feasible.
    if result.t < 1.0 - 1e-7:
        _, inside = _dense_feasible(problem, result.t + 1e-7, 1.0, margin=ON_SPHERE)
        assert not inside.any()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clamp_cases())
def test_exact_and_sampled_agree_to_the_sampling_resolution(case):
    center, start, end, metric, order, t_min = case
    exact = hypersphere_clamp(center, start, end, metric, ord=order, t_min=t_min)
    sampled = hypersphere_clamp(
        center, start, end, metric, ord=order, t_min=t_min, method="sampled"
    )
    problem = build_problem(center, start, end, metric, ord=order)
    spacing = (1.0 - t_min) / sample_count(problem, t_min)
    if sampled.t is not None:
        # Every sampled answer is feasible, so the exact one is at least as large.
        assert exact.t is not None
        assert sampled.distance <= 1.0
        assert exact.t >= sampled.t - 1e-12
    if exact.t is not None:
        lo = max(t_min, exact.t - spacing)
        _, inside = _dense_feasible(problem, lo, exact.t, 257)
        if inside.all():
            # The feasible stretch below exact.t is wider than a sample step: Alg. 1 finds it.
            assert sampled.t is not None
            assert sampled.t >= exact.t - spacing - 1e-12


def test_sample_count_is_eq_10():
    start = Pose((0, 0, 0))
    end = Pose((0.2, 0, 0))
    problem = build_problem(start, start, end, SE3Metric(p_e=0.02))
    assert sample_count(problem) == 1000  # d(S, F) = 10, step distance 0.01


def test_state_on_the_path_gets_a_command_one_radius_ahead():
    start, end = Pose((0, 0, 0)), Pose((1, 0, 0))
    state = Pose((0.3, 0, 0))
    result = hypersphere_clamp(state, start, end, SE3Metric(p_e=0.05))
    assert result.t == pytest.approx(0.35, abs=1e-9)
    assert result.poses[0].position[0] == pytest.approx(0.35, abs=1e-9)


def test_far_state_gets_none():
    result = hypersphere_clamp(Pose((0, 5, 0)), Pose((0, 0, 0)), Pose((1, 0, 0)), SE3Metric(0.05))
    assert result.t is None and not result.found


def test_start_equal_to_end_is_feasible_only_within_the_sphere():
    s = Pose((0, 0, 0))
    assert hypersphere_clamp(Pose((0.01, 0, 0)), s, s, SE3Metric(0.05)).t == 1.0
    assert hypersphere_clamp(Pose((0.1, 0, 0)), s, s, SE3Metric(0.05)).t is None


def test_t_min_forbids_going_back():
    start, end = Pose((0, 0, 0)), Pose((1, 0, 0))
    state = Pose((0.3, 0, 0))
    assert hypersphere_clamp(state, start, end, SE3Metric(0.05), t_min=0.32).t == pytest.approx(
        0.35
    )
    assert hypersphere_clamp(state, start, end, SE3Metric(0.05), t_min=0.4).t is None


def test_infinite_p_e_clamps_on_rotation_only():
    start = Pose((0, 0, 0))
    end = Pose((5, 0, 0), (0, 0, 1, 0))  # half turn about z and far away
    state = Pose((0, 0, 0))
    result = hypersphere_clamp(state, start, end, SE3Metric(p_e=math.inf, r_e=0.5))
    # theta(t) = pi t, so theta <= 0.5 up to t = 0.5 / pi.
    assert result.t == pytest.approx(0.5 / math.pi, abs=1e-9)


def test_infinite_r_e_ignores_rotation():
    start = Pose((0, 0, 0))
    end = Pose((0.01, 0, 0), (1, 0, 0, 0))
    assert hypersphere_clamp(start, start, end, SE3Metric(p_e=0.05)).t == 1.0


def test_antipodal_quaternions_are_the_same_rotation():
    q = np.array([0.2, -0.4, 0.1, 0.88])
    q /= np.linalg.norm(q)
    start = Pose((0, 0, 0), q)
    end = Pose((0.1, 0, 0), -q)
    state = Pose((0, 0, 0), -q)
    result = hypersphere_clamp(state, start, end, SE3Metric(p_e=0.02, r_e=0.1))
    assert result.t == pytest.approx(0.2, abs=1e-9)


def test_half_turn_rotation_reaches_the_kink_and_beyond():
    # The state's rotation is a half turn from the start: theta passes through pi.
    start = Pose((0, 0, 0), (0, 0, 0, 1))
    end = Pose((0, 0, 0), (0, 0, 1, 0))
    state = Pose((0, 0, 0), (1, 0, 0, 0))
    result = hypersphere_clamp(state, start, end, SE3Metric(p_e=1.0, r_e=3.5))
    sampled = hypersphere_clamp(state, start, end, SE3Metric(p_e=1.0, r_e=3.5), method="sampled")
    assert result.t == pytest.approx(1.0) and sampled.t == pytest.approx(1.0)


@pytest.mark.parametrize("n", [1, 6, 64])
def test_the_slowest_limb_holds_every_limb_back(n):
    rng = np.random.default_rng(n)
    start = [Pose(rng.normal(size=3)) for _ in range(n)]
    end = [Pose(s.position + [0.2, 0.0, 0.0]) for s in start]
    # Within one radius (0.1 in t) of each other, so some t serves every limb.
    progress = rng.uniform(0.4, 0.5, size=n)
    state = [Pose(s.position + [0.2 * p, 0.0, 0.0]) for s, p in zip(start, progress, strict=True)]
    result = hypersphere_clamp(state, start, end, SE3Metric(p_e=0.02))
    slowest = progress.min()
    assert result.t == pytest.approx(slowest + 0.1, abs=1e-9)


def test_limbs_further_apart_than_two_radii_have_no_common_point():
    start = [Pose((0, 0, 0)), Pose((0, 1, 0))]
    end = [Pose((1, 0, 0)), Pose((1, 1, 0))]
    state = [Pose((0.1, 0, 0)), Pose((0.9, 1, 0))]
    assert hypersphere_clamp(state, start, end, SE3Metric(p_e=0.05)).t is None


def test_inputs_of_different_lengths_are_refused():
    with pytest.raises(ShapeMismatchError, match="one pose per limb"):
        hypersphere_clamp([Pose(), Pose()], [Pose()], [Pose()], SE3Metric())
    with pytest.raises(ShapeMismatchError, match="metrics for 2 limbs"):
        hypersphere_clamp([Pose(), Pose()], [Pose(), Pose()], [Pose(), Pose()], [SE3Metric()] * 3)


def test_bad_options_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="choose 'exact' or 'sampled'"):
        hypersphere_clamp(Pose(), Pose(), Pose(), SE3Metric(), method="bisect")
    with pytest.raises(ValueError, match=r"t_min must lie in \[0, 1\]"):
        hypersphere_clamp(Pose(), Pose(), Pose(), SE3Metric(), t_min=1.5)
    with pytest.raises(InvalidMetricError):
        hypersphere_clamp(Pose(), Pose(), Pose(), SE3Metric(), ord=0)


def test_public_api_names_all_import():
    import limbtree.kinematics as kinematics

    for name in kinematics.__all__:
        assert getattr(kinematics, name) is not None


def test_a_point_exactly_on_the_sphere_is_not_an_answer():
    # hypothesis found it: a move of zero length exactly one radius from the centre. The
    # exact clamp keeps its answers inside by SAFETY, so it has none, and nothing strictly
    # inside is missed.
    centre, here = [Pose([0.0, 0.0, 0.01])], [Pose([0.0, 0.0, 0.0])]
    metric = SE3Metric(p_e=0.01, r_e=0.1)
    problem = build_problem(centre, here, here, metric, ord=math.inf)
    assert float(problem.stacked(np.array([0.0]))[0]) == 1.0
    assert hypersphere_clamp(centre, here, here, metric, ord=math.inf).t is None
    assert not _dense_feasible(problem, 0.0, 1.0, margin=ON_SPHERE)[1].any()
