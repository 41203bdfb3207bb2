"""A small floating tree written from first principles, as an independent oracle for the
dynamics tests: product-of-exponentials forward kinematics, body Jacobians from adjoints,
and a mass matrix from the links' body Jacobians (each link's inertia at its frame origin).

Twists are ``[v; ω]`` and body Jacobians map ``[V_b; q̇]`` to a frame's body twist, as in
the contract of ``kinematics.floating.FloatingTree``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rot(axis, angle):
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    k = hat(axis)
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * k @ k


def transform(rotation=None, position=(0.0, 0.0, 0.0)):
    g = np.eye(4)
    if rotation is not None:
        g[:3, :3] = rotation
    g[:3, 3] = position
    return g


def inverse(g):
    out = np.eye(4)
    out[:3, :3] = g[:3, :3].T
    out[:3, 3] = -g[:3, :3].T @ g[:3, 3]
    return out


def adjoint(g):
    """Ad_g for twists ordered [v; ω]: maps a twist in g's child frame to its parent frame."""
    r, p = g[:3, :3], g[:3, 3]
    out = np.zeros((6, 6))
    out[:3, :3] = r
    out[:3, 3:] = hat(p) @ r
    out[3:, 3:] = r
    return out


def twist_exp(twist):
    """exp(ξ^) for a twist ξ = [v; ω] (a 4x4 transform)."""
    v, w = np.asarray(twist[:3], float), np.asarray(twist[3:], float)
    theta = np.linalg.norm(w)
    g = np.eye(4)
    if theta < 1e-12:
        g[:3, 3] = v
        return g
    k = hat(w / theta)
    g[:3, :3] = np.eye(3) + np.sin(theta) * k + (1 - np.cos(theta)) * k @ k
    v_mat = np.eye(3) + (1 - np.cos(theta)) / theta * k + (theta - np.sin(theta)) / theta * k @ k
    g[:3, 3] = v_mat @ v
    return g


class ToyTree:
    """A floating base with serial limbs; every joint turns about its own frame's z.

    Args:
        limbs: limb name -> (mount: the limb's E1 frame in the base; joints: one fixed
            transform per joint from the previous frame to the joint frame; end: E2 in the
            last joint's frame).
        base_frames: robot-level frame name -> pose in the base (e.g. ``E0``).
        seed: for the links' masses and inertias.
    """

    def __init__(self, limbs, base_frames=None, seed=0):
        self.limbs = tuple(limbs)
        self._limbs = dict(limbs)
        self._base_frames = dict(base_frames or {})
        self._slices = {}
        start = 0
        for name, (_, joints, _) in self._limbs.items():
            self._slices[name] = slice(start, start + len(joints))
            start += len(joints)
        self.n = start
        frames = list(self._base_frames)
        for name in self.limbs:
            frames += [f"{name}.E1", f"{name}.E2"]
        self.frames = tuple(frames)
        rng = np.random.default_rng(seed)
        self._inertia = rng.uniform(0.5, 2.0, size=(self.n + 1, 6))

    def limb_slice(self, limb):
        return self._slices[limb]

    def _chain(self, limb, q):
        """Joint frames of a limb (after each joint's rotation) and its end frame, in the base."""
        mount, joints, end = self._limbs[limb]
        qs = q[self._slices[limb]]
        g = mount.copy()
        frames = []
        for fixed, angle in zip(joints, qs, strict=True):
            g = g @ fixed
            frames.append(g.copy())  # the joint's axis is this frame's z
            g = g @ transform(rot((0, 0, 1), angle))
        return (
            frames,
            g @ end,
            [f @ transform(rot((0, 0, 1), a)) for f, a in zip(frames, qs, strict=True)],
        )

    def frame_pose(self, frame, q):
        q = np.asarray(q, float)
        if frame in self._base_frames:
            return self._base_frames[frame].copy()
        limb, end = frame.split(".")
        if end == "E1":
            return self._limbs[limb][0].copy()
        return self._chain(limb, q)[1]

    def frame_jacobian(self, frame, q):
        q = np.asarray(q, float)
        g = self.frame_pose(frame, q)
        jac = np.zeros((6, 6 + self.n))
        jac[:, :6] = adjoint(inverse(g))
        if frame in self._base_frames:
            return jac
        limb, end = frame.split(".")
        if end == "E1":
            return jac
        axes, _, _ = self._chain(limb, q)
        g_inv = inverse(g)
        for i, joint in enumerate(axes):
            jac[:, 6 + self._slices[limb].start + i] = adjoint(g_inv @ joint) @ np.array(
                [0, 0, 0, 0, 0, 1.0]
            )
        return jac

    def frame_poses_and_jacobians(self, frames: Sequence[str], q):
        poses = np.array([self.frame_pose(f, q) for f in frames])
        jacs = np.array([self.frame_jacobian(f, q) for f in frames])
        return poses, jacs

    def mass_matrix(self, q):
        q = np.asarray(q, float)
        m = np.zeros((6 + self.n, 6 + self.n))
        m[:6, :6] = np.diag(self._inertia[0])
        index = 1
        for limb in self.limbs:
            axes, _, links = self._chain(limb, q)
            for i, link in enumerate(links):
                jac = np.zeros((6, 6 + self.n))
                jac[:, :6] = adjoint(inverse(link))
                for j in range(i + 1):
                    jac[:, 6 + self._slices[limb].start + j] = adjoint(
                        inverse(link) @ axes[j]
                    ) @ np.array([0, 0, 0, 0, 0, 1.0])
                m += jac.T @ np.diag(self._inertia[index]) @ jac
                index += 1
        return m


def _arm_joints(lengths=(0.10, 0.10, 0.30, 0.30, 0.30, 0.30, 0.10, 0.10)):
    """A MIRROR-like arm: joint axes z-y-z-y-z-y-z, offsets along the arm (as seed 003's guess)."""
    y_axis = rot((1, 0, 0), -np.pi / 2)  # turns z onto y
    joints = []
    for i in range(7):
        fixed = transform(position=(0.0, 0.0, lengths[i]))
        # z joints at even indices, y joints at odd ones: alternate by turning the frame.
        if i % 2 == 1:
            fixed = fixed @ transform(y_axis)
        elif i > 0:
            fixed = fixed @ transform(y_axis.T)
        joints.append(fixed)
    # In the last joint's frame (axis z), E2 lies further along the arm.
    end = transform(rot((1, 0, 0), np.pi), (0.0, 0.0, lengths[7]))
    return joints, end


def toy_arm():
    """One arm whose base body is E1 (morphology A): ``arm.E1`` is the base frame."""
    joints, end = _arm_joints()
    joints[0] = transform(rot((1, 0, 0), np.pi)) @ joints[0]  # the arm runs along -z of E1
    return ToyTree({"arm": (np.eye(4), joints, end)}, seed=1)


def toy_mar():
    """A torso (E0 on top) with two arms on ports (morphology C)."""
    joints, end = _arm_joints()
    port_1 = transform(rot((1, 0, 0), np.pi / 2), (0.25, 0.0, 0.0))
    port_2 = transform(rot((1, 0, 0), -np.pi / 2), (-0.25, 0.0, 0.0))
    e0 = transform(position=(0.0, 0.0, 0.15))
    return ToyTree(
        {"arm_1": (port_1, joints, end), "arm_2": (port_2, joints, end)},
        base_frames={"E0": e0},
        seed=2,
    )
