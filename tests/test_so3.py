"""The one set of SO(3) helpers (kinematics/so3.py): group laws on random rotations."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import unit_quaternions

from limbtree.kinematics.so3 import (
    canonical,
    quaternion_angle,
    quaternion_conjugate,
    quaternion_from_rotation_vector,
    quaternion_multiply,
    rotation_angle,
    rotation_vector,
)

vectors = st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3).map(np.array)


@given(vectors)
def test_rotation_vector_inverts_quaternion_from_rotation_vector(r):
    if np.linalg.norm(r) >= math.pi:
        return  # beyond pi the same rotation has a shorter vector
    assert rotation_vector(quaternion_from_rotation_vector(r)) == pytest.approx(r, abs=1e-9)


@given(unit_quaternions(), unit_quaternions())
def test_quaternion_angle_is_the_angle_of_the_relative_rotation(q_a, q_b):
    relative = quaternion_multiply(quaternion_conjugate(q_a), q_b)
    assert quaternion_angle(q_a, q_b) == pytest.approx(rotation_angle(relative), abs=1e-9)
    assert quaternion_angle(q_a, -np.asarray(q_b)) == pytest.approx(quaternion_angle(q_a, q_b))


@given(unit_quaternions())
def test_a_quaternion_times_its_conjugate_is_the_identity(q):
    assert canonical(quaternion_multiply(q, quaternion_conjugate(q))) == pytest.approx(
        [0.0, 0.0, 0.0, 1.0], abs=1e-12
    )


def test_tiny_rotation_vectors_keep_their_direction():
    q = quaternion_from_rotation_vector([1e-9, 0.0, 0.0])
    assert q == pytest.approx([5e-10, 0.0, 0.0, 1.0], rel=1e-9, abs=1e-20)
    assert rotation_vector(q) == pytest.approx([1e-9, 0.0, 0.0], rel=1e-9)
