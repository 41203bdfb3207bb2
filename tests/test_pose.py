import math

import numpy as np
import pytest
from hypothesis import given
from spatialmath import SE3
from strategies import poses

from limbtree.kinematics import InvalidPoseError, Pose


def test_pose_defaults_to_identity():
    pose = Pose()
    assert np.array_equal(pose.position, [0, 0, 0])
    assert np.array_equal(pose.quaternion, [0, 0, 0, 1])


def test_pose_arrays_are_read_only_copies():
    position = np.array([1.0, 2.0, 3.0])
    pose = Pose(position, (0, 0, 0, 1))
    position[0] = 9.0
    assert pose.position[0] == 1.0
    with pytest.raises(ValueError):
        pose.position[0] = 5.0
    with pytest.raises(ValueError):
        pose.quaternion[3] = 0.5


@pytest.mark.parametrize(
    ("quaternion", "words"),
    [
        ((0, 0, 0, 0), "zero quaternion"),
        ((0, 0, 0, 2), "norm is 2"),
        ((0, 0, math.nan, 1), "NaN"),
        ((0, 0, 1), "shape"),
    ],
)
def test_bad_quaternion_is_refused_with_the_reason(quaternion, words):
    with pytest.raises(InvalidPoseError, match=words) as info:
        Pose((0, 0, 0), quaternion)
    assert info.value.field == "quaternion"


def test_nearly_unit_quaternion_is_normalised():
    pose = Pose((0, 0, 0), (0, 0, 0, 1 + 1e-9))
    assert np.linalg.norm(pose.quaternion) == pytest.approx(1.0, abs=1e-15)


def test_bad_position_is_refused():
    with pytest.raises(InvalidPoseError, match="position"):
        Pose((0, math.inf, 0))


@given(poses())
def test_matrix_round_trip_keeps_the_transform(pose):
    back = Pose.from_matrix(pose.as_matrix())
    assert back.isclose(pose, atol_m=1e-12, atol_rad=1e-7)


@given(poses())
def test_spatialmath_round_trip_keeps_the_transform(pose):
    se3 = pose.as_se3()
    assert isinstance(se3, SE3)
    assert Pose.from_se3(se3).isclose(pose, atol_m=1e-12, atol_rad=1e-7)


@given(poses(), poses())
def test_composition_with_inverse_is_identity(a, b):
    assert (a @ a.inverse()).isclose(Pose(), atol_m=1e-9, atol_rad=1e-7)
    assert np.allclose((a @ b).as_matrix(), a.as_matrix() @ b.as_matrix(), atol=1e-12)


@given(poses(), poses())
def test_angle_to_matches_the_rotation_matrix_angle(a, b):
    relative = a.rotation.T @ b.rotation
    expected = math.acos(max(-1.0, min(1.0, (np.trace(relative) - 1) / 2)))
    assert a.angle_to(b) == pytest.approx(expected, abs=1e-6)


def test_angle_is_blind_to_quaternion_sign():
    q = np.array([0.1, 0.2, 0.3, 0.9])
    q /= np.linalg.norm(q)
    assert Pose((0, 0, 0), q).angle_to(Pose((0, 0, 0), -q)) == 0.0


def test_from_matrix_refuses_a_reflection():
    m = np.eye(4)
    m[0, 0] = -1
    with pytest.raises(InvalidPoseError, match="proper rotation"):
        Pose.from_matrix(m)


def test_array_layout_is_position_then_scalar_last_quaternion():
    pose = Pose.from_array([1, 2, 3, 0, 0, 0, 1])
    assert pose.as_array().tolist() == [1, 2, 3, 0, 0, 0, 1]
    listed = Pose.from_array([1, 2, 3, 0.5, 0.5, 0.5, 0.5]).as_list()
    assert listed == [1, 2, 3, 0.5, 0.5, 0.5, 0.5] and all(type(v) is float for v in listed)
