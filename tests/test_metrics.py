import math

import numpy as np
import pytest
from hypothesis import given
from strategies import poses

from limbtree.kinematics import InvalidMetricError, Pose, SE3Metric, stacked_distance
from limbtree.kinematics.metrics import weighted_euclidean


def test_weighted_euclidean_divides_each_component_by_its_allowed_error():
    assert weighted_euclidean([0, 0, 0], [3, 0, 4], [1, 1, 2]) == pytest.approx(math.hypot(3, 2))
    assert weighted_euclidean([0, 0], [5, 1], [math.inf, 1]) == 1.0


def test_weighted_euclidean_refuses_zero_scales():
    with pytest.raises(InvalidMetricError):
        weighted_euclidean([0], [1], [0])


@given(poses(), poses())
def test_d_se_is_eq_7(a, b):
    metric = SE3Metric(p_e=0.05, r_e=0.3)
    expected = math.hypot(np.linalg.norm(b.position - a.position) / 0.05, a.angle_to(b) / 0.3)
    assert metric.distance(a, b) == pytest.approx(expected, rel=1e-9)
    assert stacked_distance(a, b, metric) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@given(poses(), poses(), poses())
def test_d_se_is_symmetric_and_obeys_the_triangle_inequality(a, b, c):
    metric = SE3Metric(p_e=0.1, r_e=0.5)
    assert metric.distance(a, b) == pytest.approx(metric.distance(b, a), abs=1e-9)
    assert metric.distance(a, c) <= metric.distance(a, b) + metric.distance(b, c) + 1e-9


def test_infinite_scales_ignore_their_part():
    a = Pose((0, 0, 0))
    b = Pose((1, 0, 0), (0, 0, 1, 0))
    assert SE3Metric(p_e=0.5, r_e=math.inf).distance(a, b) == pytest.approx(2.0)
    assert SE3Metric(p_e=math.inf, r_e=math.pi).distance(a, b) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan])
def test_metric_refuses_non_positive_scales(bad):
    with pytest.raises(InvalidMetricError, match="p_e must be a positive number"):
        SE3Metric(p_e=bad)


def test_stacked_distance_uses_the_chosen_norm():
    a = [Pose((0, 0, 0)), Pose((0, 0, 0))]
    b = [Pose((0.3, 0, 0)), Pose((0.4, 0, 0))]
    metric = SE3Metric(p_e=0.1)
    assert stacked_distance(a, b, metric) == pytest.approx(4.0)
    assert stacked_distance(a, b, metric, ord=2) == pytest.approx(5.0)
    assert stacked_distance(a, b, metric, ord=1) == pytest.approx(7.0)
    with pytest.raises(InvalidMetricError, match="ord must be >= 1"):
        stacked_distance(a, b, metric, ord=0.5)


def test_per_limb_metrics_are_applied_per_limb():
    a = [Pose((0, 0, 0)), Pose((0, 0, 0))]
    b = [Pose((0.1, 0, 0)), Pose((0.1, 0, 0))]
    metrics = [SE3Metric(p_e=0.1), SE3Metric(p_e=0.05)]
    assert stacked_distance(a, b, metrics) == pytest.approx(2.0)
