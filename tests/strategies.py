"""Hypothesis strategies shared by the kinematics tests."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from limbtree.kinematics import Pose

finite = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)


@st.composite
def unit_quaternions(draw: st.DrawFn) -> np.ndarray:
    """Uniform-ish unit quaternions, never near zero before normalising."""
    q = np.array([draw(st.floats(-1.0, 1.0)) for _ in range(4)])
    norm = np.linalg.norm(q)
    if norm < 1e-3:
        q = np.array([0.0, 0.0, 0.0, 1.0])
        norm = 1.0
    return q / norm


@st.composite
def poses(draw: st.DrawFn, scale: float = 0.3) -> Pose:
    position = np.array([draw(finite) for _ in range(3)]) * scale
    return Pose(position, draw(unit_quaternions()))


@st.composite
def clamp_cases(draw: st.DrawFn, max_limbs: int = 6) -> tuple:
    """Random SE(3)^n clamps: center near the path (often), start, end, metric, ord, t_min."""
    n = draw(st.integers(1, max_limbs))
    starts = [draw(poses()) for _ in range(n)]
    ends = []
    for s in starts:
        if draw(st.booleans()):
            ends.append(draw(poses()))
        else:  # translation only
            ends.append(
                Pose(s.position + np.array([draw(finite) for _ in range(3)]) * 0.2, s.quaternion)
            )
    centers = []
    for s, e in zip(starts, ends, strict=True):
        if draw(st.booleans()):
            t = draw(st.floats(0.0, 1.0))
            from limbtree.kinematics import Trajectory

            on_path = Trajectory(s, e)(t)[0]
            jitter = np.array([draw(finite) for _ in range(3)]) * 0.03
            centers.append(Pose(on_path.position + jitter, on_path.quaternion))
        else:
            centers.append(draw(poses()))
    from limbtree.kinematics import SE3Metric

    p_e = draw(st.sampled_from([0.01, 0.02, 0.05, 0.2, math.inf]))
    r_e = draw(st.sampled_from([0.1, 0.5, 1.0, 2.5, 3.5, math.inf]))
    if p_e == math.inf and r_e == math.inf:
        r_e = 0.5
    order = draw(st.sampled_from([math.inf, math.inf, 1.0, 2.0, 3.0]))
    t_min = draw(st.sampled_from([0.0, 0.0, 0.25, 0.5, 0.9]))
    return centers, starts, ends, SE3Metric(p_e, r_e), order, t_min
