"""Tests of limbtree.kinematics.chain: FK, Jacobian, IK and manipulability on every robot."""

import math

import numpy as np
import pytest
import roboticstoolbox as rtb
from hypothesis import given, settings
from hypothesis import strategies as st
from roboticstoolbox.ets.fknm import IK_LM_c
from roboticstoolbox.models.URDF.URDFRobot import URDF_read
from scipy.spatial.transform import Rotation

from limbtree.kinematics import Pose
from limbtree.kinematics.chain import POSITION_MASK, IKResult, KinematicChain
from limbtree.kinematics.errors import ChainError, JointCountError, UnknownLinkError
from limbtree.robots import builtin_robot_dir, load_robot, robot_names

SHIPPED = [builtin_robot_dir()]
SPECS = {name: load_robot(name, SHIPPED) for name in robot_names(SHIPPED)}
LIMBS = [(robot, limb.name) for robot, spec in SPECS.items() for limb in spec.limbs]
LIMB_IDS = [f"{robot}.{limb}" for robot, limb in LIMBS]


def chain_of(robot: str, limb: str) -> KinematicChain:
    return SPECS[robot].chain(limb)


def urdf_of(robot: str):
    return SPECS[robot].urdf_path


def joint_values(chain: KinematicChain, fractions) -> np.ndarray:
    """Joint values at the given fractions (0..1) of each joint's range."""
    return chain.lower + np.asarray(fractions) * (chain.upper - chain.lower)


def fractions_for(data, n: int, low: float = 0.0, high: float = 1.0):
    return data.draw(st.lists(st.floats(low, high), min_size=n, max_size=n), label="fractions")


def rotation_vector(R: np.ndarray) -> np.ndarray:
    return Rotation.from_matrix(R).as_rotvec()


# ---------------------------------------------------------------------- construction


def test_chain_has_the_limbs_joints_in_base_to_end_effector_order():
    chain = chain_of("heavy_limb", "arm")
    assert chain.n == 7
    assert chain.joint_names == tuple(f"joint_{i}" for i in range(1, 8))
    assert chain.base_link == "mount"
    assert chain.ee_link == "ee_link"
    assert np.allclose(chain.upper, -chain.lower)
    assert chain.revolute.all()


def test_chain_of_a_leg_numbers_its_joints_from_zero():
    chain = chain_of("moonbot_zero", "leg_2")
    assert chain.joint_names == ("leg_2_hip_yaw", "leg_2_hip_pitch", "leg_2_knee")
    assert chain.fk_matrix([0.0, 0.0, 0.0]).shape == (4, 4)


def test_limits_are_read_only():
    chain = chain_of("light_limb", "arm")
    with pytest.raises(ValueError):
        chain.lower[0] = 0.0
    with pytest.raises(ValueError):
        chain.upper[0] = 0.0


def test_unknown_link_error_lists_the_valid_links():
    with pytest.raises(UnknownLinkError) as info:
        KinematicChain.from_urdf(urdf_of("heavy_limb"), "mount", "tool0")
    error = info.value
    assert error.link == "tool0"
    assert "ee_link" in error.valid_links and "mount" in error.valid_links
    assert "tool0" in str(error) and "ee_link" in str(error)
    assert isinstance(error, ChainError)


def test_missing_urdf_file_is_a_chain_error(tmp_path):
    with pytest.raises(ChainError, match="not found"):
        KinematicChain.from_urdf(tmp_path / "nothing.urdf", "a", "b")


def test_broken_urdf_file_is_a_chain_error_naming_the_file(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text("<robot name='x'><link name='a'></robot>")
    with pytest.raises(ChainError, match=r"broken\.urdf"):
        KinematicChain.from_urdf(path, "a", "a")


def test_chain_without_joints_is_refused():
    with pytest.raises(ChainError, match="no joint"):
        KinematicChain.from_urdf(urdf_of("heavy_limb"), "mount", "base_link")


def test_relative_urdf_paths_are_read_from_the_current_directory(monkeypatch):
    monkeypatch.chdir(urdf_of("light_limb").parent)
    chain = KinematicChain.from_urdf("light_limb.urdf", "mount", "ee_link")
    assert chain.n == 7


# ---------------------------------------------------------------------- forward kinematics


def rtb_reference(robot: str, limb: str):
    """rtb's own model of the robot, and the global joint index of each chain joint."""
    elinks, name, _ = URDF_read(urdf_of(robot))
    model = rtb.Robot(elinks, name=name)
    index = {link._joint_name: link.jindex for link in model.links if link.isjoint}
    chain = chain_of(robot, limb)
    return model, [index[joint] for joint in chain.joint_names]


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
def test_fk_matches_roboticstoolbox_fkine(robot, limb):
    chain = chain_of(robot, limb)
    model, jindices = rtb_reference(robot, limb)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform(chain.lower, chain.upper)
        q_model = np.zeros(model.n)
        q_model[jindices] = q
        T_base = model.fkine(q_model, end=chain.base_link).A
        T_ee = model.fkine(q_model, end=chain.ee_link).A
        assert np.allclose(chain.fk_matrix(q), np.linalg.inv(T_base) @ T_ee, atol=1e-12)


def test_fk_takes_read_only_strided_and_listed_joints_alike():
    # The compiled FK is called directly: it needs writable C-contiguous float64 arrays.
    chain = chain_of("heavy_limb", "arm")
    q = np.linspace(-0.5, 0.5, chain.n)
    frozen = q.copy()
    frozen.setflags(write=False)
    strided = np.repeat(q, 2)[::2]
    expected = chain._ets.eval(q)
    for joints in (frozen, strided, q.tolist(), tuple(q.astype(np.float32).tolist())):
        assert np.allclose(chain.fk_matrix(joints), expected, atol=1e-6)
    assert not frozen.flags.writeable  # left as it was


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
def test_fk_of_many_joint_vectors_is_fk_of_each(robot, limb):
    chain = chain_of(robot, limb)
    qs = np.random.default_rng(3).uniform(chain.lower, chain.upper, (5, chain.n))
    many = chain.fk_matrices(qs)
    assert many.shape == (5, 4, 4)
    for q, transform in zip(qs, many, strict=True):
        assert np.allclose(transform, chain.fk_matrix(q), atol=1e-12)
    assert chain.fk_matrices(qs[:1]).shape == (1, 4, 4)
    with pytest.raises(JointCountError):
        chain.fk_matrices(np.zeros((2, chain.n + 1)))
    with pytest.raises(ChainError, match="2-D"):
        chain.fk_matrices(np.zeros(chain.n))
    with pytest.raises(ChainError, match="NaN"):
        chain.fk_matrices(np.full((2, chain.n), np.nan))


def test_ik_masks_are_checked_even_when_a_checked_one_is_reused():
    chain = chain_of("heavy_limb", "arm")
    q = np.full(chain.n, 0.2)
    target = chain.fk(q)
    assert chain.ik(target, q, mask=POSITION_MASK).success
    assert chain.ik(target, q, mask=np.array(POSITION_MASK)).success  # the same, as an array
    with pytest.raises(ChainError, match="non-negative"):
        chain.ik(target, q, mask=(1.0, 1.0, 1.0, -1.0, 0.0, 0.0))
    with pytest.raises(ChainError, match="6 weights"):
        chain.ik(target, q, mask=[1.0, 1.0])


def test_chain_from_a_link_below_the_root_is_expressed_in_that_links_frame():
    # rtb 1.5's Robot.ets(start, end) would include link_3's own joint here (joint_3).
    urdf = urdf_of("heavy_limb")
    whole = KinematicChain.from_urdf(urdf, "mount", "ee_link")
    upper = KinematicChain.from_urdf(urdf, "mount", "link_3")
    lower = KinematicChain.from_urdf(urdf, "link_3", "ee_link")
    assert lower.joint_names == ("joint_4", "joint_5", "joint_6", "joint_7")
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert np.allclose(upper.fk_matrix(q[:3]) @ lower.fk_matrix(q[3:]), whole.fk_matrix(q))


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
def test_fk_pose_is_the_fk_matrix(robot, limb):
    chain = chain_of(robot, limb)
    q = joint_values(chain, np.full(chain.n, 0.3))
    pose = chain.fk(q)
    assert isinstance(pose, Pose)
    assert np.allclose(pose.as_matrix(), chain.fk_matrix(q), atol=1e-12)


def test_straight_heavy_limb_points_up_with_about_one_metre_reach_from_the_shoulder():
    chain = chain_of("heavy_limb", "arm")
    assert np.allclose(chain.fk(np.zeros(7)).position, [0.0, 0.0, 1.40])
    forearm = KinematicChain.from_urdf(urdf_of("heavy_limb"), "link_2", "ee_link")
    assert 0.9 <= np.linalg.norm(forearm.fk(np.zeros(5)).position) <= 1.2


def test_light_limb_reaches_about_seven_tenths_of_a_metre_from_the_shoulder():
    forearm = KinematicChain.from_urdf(urdf_of("light_limb"), "link_2", "ee_link")
    assert 0.6 <= np.linalg.norm(forearm.fk(np.zeros(5)).position) <= 0.8


def test_quadruped_leg_reaches_a_quarter_metre_from_its_hip():
    leg = KinematicChain.from_urdf(urdf_of("moonbot_zero"), "leg_0_coxa", "leg_0_foot")
    assert np.isclose(np.linalg.norm(leg.fk(np.zeros(2)).position), 0.25)


def test_chain_against_the_urdf_tree_is_the_inverse_of_the_forward_chain():
    urdf = urdf_of("moonbot_limb_v1")
    forward = KinematicChain.from_urdf(urdf, "end_a", "end_b")
    backward = KinematicChain.from_urdf(urdf, "end_b", "end_a")
    assert backward.joint_names == tuple(reversed(forward.joint_names))
    q = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7])
    assert np.allclose(backward.fk_matrix(q[::-1]), np.linalg.inv(forward.fk_matrix(q)))


# ---------------------------------------------------------------------- Jacobian


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_jacobian_matches_finite_differences_of_fk(robot, limb, data):
    chain = chain_of(robot, limb)
    q = joint_values(chain, fractions_for(data, chain.n, 0.01, 0.99))
    J = chain.jacobian(q)
    assert J.shape == (6, chain.n)
    h = 1e-6
    for i in range(chain.n):
        step = np.zeros(chain.n)
        step[i] = h
        T_plus, T_minus = chain.fk_matrix(q + step), chain.fk_matrix(q - step)
        v = (T_plus[:3, 3] - T_minus[:3, 3]) / (2 * h)
        w = rotation_vector(T_plus[:3, :3] @ T_minus[:3, :3].T) / (2 * h)
        assert np.allclose(J[:3, i], v, atol=1e-7), f"linear velocity of joint {i}"
        assert np.allclose(J[3:, i], w, atol=1e-7), f"angular velocity of joint {i}"


# ---------------------------------------------------------------------- manipulability


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
def test_manipulability_is_sqrt_det_j_jt_of_the_right_block(robot, limb):
    chain = chain_of(robot, limb)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q = rng.uniform(chain.lower, chain.upper)
        J = chain.jacobian(q)
        block = J if chain.n >= 6 else J[:3]
        expected = math.sqrt(max(np.linalg.det(block @ block.T), 0.0))
        assert chain.manipulability(q) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_full_manipulability_of_a_three_joint_leg_is_always_zero():
    leg = chain_of("moonbot_zero", "leg_0")
    q = np.array([0.3, -0.4, 1.5])
    assert leg.manipulability(q, translational=False) == pytest.approx(0.0, abs=1e-12)
    assert leg.manipulability(q) > 1e-4


@pytest.mark.parametrize(
    ("robot", "limb", "q"),
    [
        ("heavy_limb", "arm", np.zeros(7)),  # straight up: every roll axis on one line
        ("light_limb", "arm", np.zeros(7)),
        ("moonbot_limb_v1", "arm", np.zeros(7)),
        ("moonbot_limb_v2", "arm", np.zeros(7)),
        ("moonbot_zero", "leg_1", np.zeros(3)),  # stretched out: the foot cannot move outwards
        ("moonbot_zero", "leg_3", np.array([0.5, 0.7, 0.0])),
    ],
)
def test_manipulability_is_zero_at_a_singular_posture(robot, limb, q):
    assert chain_of(robot, limb).manipulability(q) == pytest.approx(0.0, abs=1e-9)


# ---------------------------------------------------------------------- inverse kinematics


@pytest.mark.parametrize(("robot", "limb"), LIMBS, ids=LIMB_IDS)
@settings(max_examples=15, deadline=None, derandomize=True)
@given(data=st.data())
def test_ik_finds_a_pose_that_fk_reached(robot, limb, data):
    # 2 % away from the limits: poses reachable only with several joints exactly on their
    # limits are a documented weak spot of LM with clipping (about 1 in 150 misses).
    spec = SPECS[robot].limb(limb)
    chain = chain_of(robot, limb)
    q_true = joint_values(chain, fractions_for(data, chain.n, 0.02, 0.98))
    target = chain.fk(q_true)
    result = chain.ik(target, spec.posture("home"), mask=spec.ik_mask, tol=1e-10, slimit=50)
    assert result.success, result
    assert np.all(result.q >= chain.lower) and np.all(result.q <= chain.upper)
    reached = chain.fk(result.q)
    assert reached.distance_to(target) < 2e-5
    if spec.ik_mask is None:
        assert reached.angle_to(target) < 2e-5


@pytest.mark.parametrize("corner", ["lower", "upper"])
def test_ik_reaches_a_foot_position_with_every_leg_joint_on_a_limit(corner):
    leg = chain_of("moonbot_zero", "leg_0")
    q_true = getattr(leg, corner)
    result = leg.ik(leg.fk(q_true), np.zeros(3), mask=POSITION_MASK, tol=1e-10, slimit=50)
    assert result.success
    assert leg.fk(result.q).distance_to(leg.fk(q_true)) < 2e-5


def test_position_only_ik_ignores_the_orientation():
    leg = chain_of("moonbot_zero", "leg_0")
    target = leg.fk([0.2, -0.3, 1.6])
    turned = Pose(target.position, (1.0, 0.0, 0.0, 0.0))  # an orientation no leg can reach
    assert leg.ik(turned, np.zeros(3), mask=POSITION_MASK, seed=0).success
    assert not leg.ik(turned, np.zeros(3), slimit=3, seed=0).success


def test_ik_from_a_nearby_state_stays_on_the_same_branch():
    chain = chain_of("heavy_limb", "arm")
    q = np.array([0.3, 0.6, -0.4, 1.3, 0.5, 0.9, -0.2])
    target = chain.fk(q + 0.01)
    result = chain.ik(target, q, slimit=1)
    assert result.success
    assert result.searches == 1
    assert np.linalg.norm(result.q - q) < 0.05  # a redundant arm drifts a little, no jump


def test_nearest_ik_takes_the_restart_solution_closest_to_q0():
    chain = chain_of("moonbot_limb_v2", "arm")
    target = chain.fk([1.0, -1.2, 0.8, 1.9, -0.6, 1.1, 0.4])
    q0 = chain.lower * 0.9  # far away: the search from q0 fails, restarts are needed
    first = chain.ik(target, q0, seed=11, slimit=10)
    nearest = chain.ik(target, q0, seed=11, slimit=10, nearest=True)
    assert first.success and nearest.success and first.searches > 1
    assert nearest.searches == 10  # every restart was tried
    gap = float(np.max(np.abs(nearest.q - q0)))
    assert gap <= float(np.max(np.abs(first.q - q0)))
    assert chain.fk(nearest.q).distance_to(target) < 1e-3
    # Each restart alone: none that succeeds lands nearer q0.
    rng = np.random.default_rng(11)
    for _ in range(9):
        start = rng.uniform(chain._sample_low, chain._sample_high)
        alone = chain.ik(target, start, slimit=1)
        if alone.success:
            assert float(np.max(np.abs(alone.q - q0))) >= gap - 1e-12
    # When the first search succeeds, nearest changes nothing.
    near_q = np.array([1.0, -1.2, 0.8, 1.9, -0.6, 1.1, 0.4]) + 0.01
    assert chain.ik(target, near_q, nearest=True).searches == 1


def test_ik_is_deterministic_for_a_given_q0_and_seed():
    chain = chain_of("moonbot_limb_v2", "arm")
    target = chain.fk([1.0, -1.2, 0.8, 1.9, -0.6, 1.1, 0.4])
    q0 = chain.lower * 0.9  # far away, so restarts are needed
    first = chain.ik(target, q0, seed=11, ilimit=5, slimit=30)
    chain.ik(chain.fk(np.zeros(7)), q0, seed=3)  # other calls in between change nothing
    np.random.seed(123)
    second = chain.ik(target, q0, seed=11, ilimit=5, slimit=30)
    assert first.searches > 1
    assert np.array_equal(first.q, second.q)
    assert (first.success, first.iterations, first.searches) == (
        second.success,
        second.iterations,
        second.searches,
    )


def test_unreachable_target_fails_and_holds_q0_clipped_to_the_limits():
    chain = chain_of("light_limb", "arm")
    far = Pose((3.0, 0.0, 0.5), (0.0, 0.0, 0.0, 1.0))
    q0 = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 9.0])  # last joint beyond its limit
    result = chain.ik(far, q0, slimit=4, seed=0)
    assert not result.success
    assert result.searches == 4
    assert np.array_equal(result.q, np.clip(q0, chain.lower, chain.upper))
    assert result.residual == pytest.approx(chain.residual(result.q, far), rel=1e-12)
    assert result.residual > 1.0  # more than 2 m short


def test_ik_wraps_a_revolute_joint_a_full_turn_back_into_its_limits():
    chain = chain_of("heavy_limb", "arm")
    q = np.array([0.5, 0.6, 0.0, 1.3, 0.2, 0.9, 0.1])
    q0 = q + np.array([2 * math.pi, 0, 0, 0, 0, 0, 0]) + 0.02  # joint_1 a turn out of range
    result = chain.ik(chain.fk(q), q0, slimit=1)
    assert result.success
    assert result.q[0] == pytest.approx(0.5, abs=1e-3)


def test_residual_is_roboticstoolbox_residual():
    chain = chain_of("heavy_limb", "arm")
    target = chain.fk([0.4, 0.7, 0.1, 1.0, 0.2, 0.8, 0.0])
    q0 = np.array([0.3, 0.6, 0.0, 1.1, 0.1, 0.7, 0.1])
    # rtb reports the residual of q0 when its one iteration is not enough.
    _, success, _, _, rtb_residual = IK_LM_c(
        chain._fknm, target.as_matrix(), q0.copy(), 1, 1, 1e-12, 0, np.ones(6), 1.0, "chan"
    )
    assert not success
    assert chain.residual(q0, target) == pytest.approx(rtb_residual, rel=1e-9)
    mask = np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    expected = 0.5 * np.sum((target.position - chain.fk(q0).position) ** 2)
    assert chain.residual(q0, target, mask=mask) == pytest.approx(expected, rel=1e-12)


def test_ik_result_is_immutable():
    chain = chain_of("moonbot_zero", "leg_0")
    result = chain.ik(chain.fk([0.1, 0.2, 1.0]), np.zeros(3), mask=POSITION_MASK)
    assert isinstance(result, IKResult)
    with pytest.raises(ValueError):
        result.q[0] = 1.0
    with pytest.raises(AttributeError):
        result.success = False  # type: ignore[misc]


def test_ik_accepts_read_only_arrays():
    chain = chain_of("light_limb", "arm")
    q0 = SPECS["light_limb"].limb("arm").posture("home")  # a read-only array
    mask = np.ones(6)
    mask.setflags(write=False)
    assert chain.ik(chain.fk(q0), q0, mask=mask).success


# ---------------------------------------------------------------------- argument errors


@pytest.mark.parametrize("method", ["fk", "fk_matrix", "jacobian", "manipulability"])
def test_wrong_length_q_names_the_expected_length(method):
    chain = chain_of("heavy_limb", "arm")
    with pytest.raises(JointCountError, match="must have 7 values") as info:
        getattr(chain, method)(np.zeros(6))
    assert info.value.expected == 7
    assert info.value.got == (6,)


def test_wrong_length_q0_names_q0_and_the_expected_length():
    leg = chain_of("moonbot_zero", "leg_0")
    with pytest.raises(JointCountError, match="q0 must have 3 values"):
        leg.ik(Pose(), [0.0, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"mask": [1, 1, 1]}, "6 weights"),
        ({"mask": [0, 0, 0, 0, 0, 0]}, "not all 0"),
        ({"mask": [1, 1, 1, -1, 0, 0]}, "non-negative"),
        ({"tol": 0.0}, "tol"),
        ({"slimit": 0}, "slimit"),
    ],
)
def test_bad_ik_settings_are_refused(kwargs, words):
    chain = chain_of("heavy_limb", "arm")
    with pytest.raises(ChainError, match=words):
        chain.ik(Pose(), np.zeros(7), **kwargs)


def test_nan_joint_values_are_refused():
    chain = chain_of("heavy_limb", "arm")
    with pytest.raises(ChainError, match="NaN"):
        chain.fk([0, 0, 0, math.nan, 0, 0, 0])


@pytest.mark.parametrize(("robot", "limb"), [("heavy_limb", "arm"), ("moonbot_zero", "leg_2")])
def test_joint_positions_walk_the_chain_from_the_base_to_the_end_effector(robot, limb):
    chain = chain_of(robot, limb)
    q = joint_values(chain, np.linspace(0.2, 0.8, chain.n))
    points = chain.joint_positions(q)
    assert points.shape == (chain.n + 2, 3)
    assert np.allclose(points[0], 0.0)
    assert np.allclose(points[-1], chain.fk(q).position)
    # Each joint's origin, the product of the sequence's transforms up to that joint.
    frame, expected, j = np.eye(4), [], 0
    for et in chain._ets:
        frame = frame @ (et.A(q[j]) if et.isjoint else et.A())
        if et.isjoint:
            j += 1
            expected.append(frame[:3, 3])
    assert np.allclose(points[1:-1], expected, atol=1e-12)
    with pytest.raises(JointCountError):
        chain.joint_positions(q[:-1])
