import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from limbtree.kinematics import InvalidMetricError
from limbtree.kinematics.joint_clamp import joint_clamp

vectors = st.lists(st.floats(-1, 1), min_size=3, max_size=3).map(np.array)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(vectors, vectors, vectors), min_size=1, max_size=4),
    st.sampled_from([math.inf, 1.0, 2.0]),
)
def test_joint_clamp_is_the_largest_feasible_t_on_a_dense_grid(limbs, order):
    center = [c for c, _, _ in limbs]
    start = [s for _, s, _ in limbs]
    end = [f for _, _, f in limbs]
    q_e = [0.3] * len(limbs)
    t = joint_clamp(center, start, end, q_e, ord=order)
    ts = np.linspace(0, 1, 2001)
    d = np.array(
        [[np.linalg.norm(((1 - x) * s + x * f - c) / 0.3) for c, s, f in limbs] for x in ts]
    )
    stacked = d.max(axis=1) if order == math.inf else (d**order).sum(axis=1) ** (1 / order)
    feasible = ts[stacked <= 1.0]
    if t is None:
        assert feasible.size == 0
    else:
        x = t
        at_t = [np.linalg.norm(((1 - x) * s + x * f - c) / 0.3) for c, s, f in limbs]
        value = max(at_t) if order == math.inf else sum(v**order for v in at_t) ** (1 / order)
        assert value <= 1.0 + 1e-9
        assert feasible.size == 0 or feasible.max() <= t + 1e-9


def test_joint_clamp_refuses_non_positive_errors():
    with pytest.raises(InvalidMetricError):
        joint_clamp([np.zeros(2)], [np.zeros(2)], [np.ones(2)], [0.0])
