"""Floating-base kinematics and inertia of a tree of limbs (seed 003 eqs. 1, 7; seed 004 eqs. 3-4).

A :class:`FloatingTree` is a robot whose base body floats: the limbs' chains hang from the
base link, joined to it by fixed transforms (ports), and interface frames (the standard
interfaces, SIs, of seed 003) sit on the limbs' ends and on the base body. Its configuration
is the base pose ``g_b`` in the world and the joint vector ``q``; its velocity is
``V = [V_b; q_dot]``, where ``V_b`` is the base's body twist.

Conventions (the dynamics contract):

- A twist is ``[v; w]``, linear first [m/s; rad/s]. The body twist ``V_f`` of a frame ``f``
  is its velocity in its own coordinates: ``v = R_f^T p_f_dot``, ``w = (R_f^T R_f_dot)^v``.
- :meth:`FloatingTree.frame_jacobian` is ``[T_b T_q]`` (6 x (6 + n)) with
  ``V_f = T_b V_b + T_q q_dot`` (seed 003 eq. 7); ``T_b = Ad(g_bf^-1)`` and ``T_q`` is the
  frame's body Jacobian.
- :meth:`FloatingTree.mass_matrix` is ``M`` in ``[V_b; q_dot]`` coordinates,
  ``KE = 1/2 V^T M V`` (seed 003 eq. 1), from the URDF inertials of every link plus the motor
  armature on the joints' diagonal.
- :meth:`FloatingTree.momentum_matrix` is ``M[:6, :]``: the linear momentum and the angular
  momentum about the base origin, both in base coordinates (seed 004 eqs. 3-4).

Everything is computed from the URDF by a vectorised numpy forward kinematics over the whole
tree (one batched product per tree level), so the controller's hot call,
:meth:`FloatingTree.frame_poses_and_jacobians`, costs a few tens of microseconds. Joint values
are the URDF's (as in :class:`~limbtree.kinematics.chain.KinematicChain`), and each limb's
joints keep their chain order. Nothing here reads the world: poses are in the base frame.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from limbtree.kinematics.errors import ChainError, JointCountError

try:  # rtb's compiled forward kinematics and end-frame Jacobian (the hot path)
    from roboticstoolbox._fknm_c import ETS_fkine as _fkine_c
    from roboticstoolbox._fknm_c import ETS_jacobe as _jacobe_c

    _FKINE_C_AVAILABLE = True
except ImportError:  # pragma: no cover - a build of rtb without them: the numpy path
    _FKINE_C_AVAILABLE = False

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Joint kinds that move (URDF names).
_MOVABLE: Final = ("revolute", "continuous", "prismatic")


class FloatingTreeError(ChainError):
    """A floating tree cannot be built from its description, or was asked for a wrong frame."""


#: Frame sets whose computation plan a tree remembers (the controller uses a handful).
_MAX_PLANS: Final = 256
#: ``-[p]x`` gathered from ``p``: ``(p[:, _SKEW_INDEX] * _SKEW_SIGN).reshape(k, 3, 3)``.
_SKEW_INDEX: Final = np.array([0, 2, 1, 2, 0, 0, 1, 0, 0])
_SKEW_SIGN: Final = np.array([0.0, 1.0, -1.0, -1.0, 0.0, 1.0, 1.0, -1.0, 0.0])


def _cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a x b`` over the last axis of same-shaped arrays (numpy's ``cross`` is slower)."""
    result = np.empty_like(a)
    result[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    result[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    result[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return result


#: The placeholder pose of a frame the compiled path computes.
_NO_POSE: Final = np.eye(4)


class _FramePlan(NamedTuple):
    """How the hot path computes one frame."""

    handle: Any  # rtb's compiled sequence from the base to the frame; None: on the base
    start: int  # the sequence's joints are q[start:stop] ...
    stop: int
    columns: IntArray | None  # ... or q[columns] when they are not contiguous
    pose: FloatArray  # the constant pose of a frame on the base (unused for the others)


@dataclass(frozen=True)
class _Joint:
    name: str
    kind: str
    parent: str
    child: str
    origin: FloatArray  # 4x4, parent frame -> joint frame at q = 0
    axis: FloatArray  # (3,) unit, in the joint (child) frame


@dataclass(frozen=True)
class _Inertial:
    mass: float
    com: FloatArray  # (3,) in the link frame
    inertia: FloatArray  # (3, 3) about the com, in the link frame


def _rpy_matrix(rpy: Sequence[float]) -> FloatArray:
    """URDF fixed-axis roll, pitch, yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = (
        math.cos(r),
        math.sin(r),
        math.cos(p),
        math.sin(p),
        math.cos(y),
        math.sin(y),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _numbers(text: str | None, count: int, default: float, where: str) -> list[float]:
    if text is None:
        return [default] * count
    try:
        values = [float(v) for v in text.split()]
    except ValueError:
        raise FloatingTreeError(f"{where}: {text!r} is not {count} numbers") from None
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise FloatingTreeError(f"{where}: {text!r} is not {count} finite numbers")
    return values


def _origin(element: ElementTree.Element | None, where: str) -> FloatArray:
    transform = np.eye(4)
    if element is not None:
        transform[:3, :3] = _rpy_matrix(_numbers(element.get("rpy"), 3, 0.0, where))
        transform[:3, 3] = _numbers(element.get("xyz"), 3, 0.0, where)
    return transform


def _read_urdf(path: Path) -> tuple[list[str], dict[str, _Joint], dict[str, _Inertial]]:
    """Links, joints (by child link) and inertials of a URDF file."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise FloatingTreeError(f"cannot read URDF {path}: {exc}") from None
    links: list[str] = []
    inertials: dict[str, _Inertial] = {}
    for element in root.findall("link"):
        name = element.get("name") or ""
        links.append(name)
        inertial = element.find("inertial")
        if inertial is None:
            continue
        where = f"{path}: link {name!r} inertial"
        mass_el = inertial.find("mass")
        mass = _numbers(mass_el.get("value") if mass_el is not None else None, 1, 0.0, where)[0]
        origin = _origin(inertial.find("origin"), where)
        i_el = inertial.find("inertia")
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        values = {
            k: _numbers(i_el.get(k) if i_el is not None else None, 1, 0.0, where)[0] for k in keys
        }
        tensor = np.array(
            [
                [values["ixx"], values["ixy"], values["ixz"]],
                [values["ixy"], values["iyy"], values["iyz"]],
                [values["ixz"], values["iyz"], values["izz"]],
            ]
        )
        rotation = origin[:3, :3]
        inertials[name] = _Inertial(mass, origin[:3, 3].copy(), rotation @ tensor @ rotation.T)
    joints: dict[str, _Joint] = {}
    for element in root.findall("joint"):
        name = element.get("name") or ""
        where = f"{path}: joint {name!r}"
        parent_el, child_el = element.find("parent"), element.find("child")
        parent = parent_el.get("link") if parent_el is not None else None
        child = child_el.get("link") if child_el is not None else None
        if not parent or not child:
            raise FloatingTreeError(f"{where}: needs a parent and a child link")
        kind = element.get("type") or ""
        if kind not in (*_MOVABLE, "fixed"):
            raise FloatingTreeError(
                f"{where} is {kind!r}; a floating tree has only revolute, continuous, "
                "prismatic and fixed joints"
            )
        axis_el = element.find("axis")
        axis = np.array(
            _numbers(axis_el.get("xyz") if axis_el is not None else None, 3, 0.0, where)
            if axis_el is not None
            else [1.0, 0.0, 0.0]
        )
        norm = float(np.linalg.norm(axis))
        if kind != "fixed":
            if norm < 1e-12:
                raise FloatingTreeError(f"{where}: the axis is zero")
            axis = axis / norm
        joints[child] = _Joint(
            name, kind, parent, child, _origin(element.find("origin"), where), axis
        )
    return links, joints, inertials


class FloatingTree:
    """Kinematics and inertia of limbs around a floating base, from a URDF.

    Build it with :meth:`from_urdf` (or :func:`limbtree.robots.floating.floating_tree` from a
    robot description). Immutable; every method is pure.

    Attributes:
        base_link: URDF link of the floating base body (the URDF's root).
        limbs: limb names, in joint-vector order.
        n: total number of joints.
        frames: the frame names it knows, in the order given.
        total_mass: mass of every link [kg].
        armature: ``(n,)`` motor reflected inertia per joint [kg m^2], on ``M``'s diagonal.
    """

    def __init__(
        self,
        path: str | Path,
        base_link: str,
        limbs: Sequence[tuple[str, Sequence[str]]],
        frames: Mapping[str, str],
        armature: float | Sequence[float] = 0.0,
    ) -> None:
        """Build the tree (use :meth:`from_urdf`; the arguments are the same)."""
        self._path = Path(path).expanduser().resolve()
        links, joints, inertials = _read_urdf(self._path)
        link_set = set(links)
        if base_link not in link_set:
            raise FloatingTreeError(
                f"{self._path}: no link {base_link!r}; valid links: {', '.join(links)}"
            )
        if base_link in joints:
            raise FloatingTreeError(
                f"{self._path}: base link {base_link!r} is the child of joint "
                f"{joints[base_link].name!r}; the floating base must be the URDF's root link"
            )
        self.base_link = base_link
        # ---- joint order: limbs in order, each limb's joints in its order
        joint_by_name = {joint.name: joint for joint in joints.values()}
        order: list[str] = []
        slices: dict[str, slice] = {}
        for limb, names in limbs:
            start = len(order)
            for name in names:
                joint = joint_by_name.get(name)
                if joint is None or joint.kind not in _MOVABLE:
                    raise FloatingTreeError(
                        f"limb {limb!r}: {name!r} is not a movable joint of {self._path.name}"
                    )
                if name in order:
                    raise FloatingTreeError(f"limb {limb!r}: joint {name!r} is in two limbs")
                order.append(name)
            if limb in slices:
                raise FloatingTreeError(f"limb {limb!r} is given twice")
            slices[limb] = slice(start, len(order))
        # ---- the tree below the base: links in breadth-first order
        children: dict[str, list[str]] = {}
        for joint in joints.values():
            children.setdefault(joint.parent, []).append(joint.child)
        reached = [base_link]
        for link in reached:
            reached.extend(children.get(link, ()))
        missing = [
            j.name
            for j in joints.values()
            if j.kind in _MOVABLE and j.child in reached and j.name not in order
        ]
        if missing:
            raise FloatingTreeError(
                f"{self._path.name}: joints {', '.join(missing)} move but belong to no limb; "
                "every joint below the base must be in a limb"
            )
        outside = [name for name in order if joint_by_name[name].child not in reached]
        if outside:
            raise FloatingTreeError(
                f"{self._path.name}: joints {', '.join(outside)} are not below {base_link!r}"
            )
        index = {name: k for k, name in enumerate(order)}
        n = len(order)
        self.limbs = tuple(limb for limb, _ in limbs)
        self._slices = slices
        self.n = n
        self.joint_names = tuple(order)
        # ---- per link: the movable joint it rides on (its "body", -1 = base) and its fixed
        # offset from that joint's frame
        body_of: dict[str, int] = {base_link: -1}
        offset: dict[str, FloatArray] = {base_link: np.eye(4)}
        # ---- per joint: parent body, fixed transform from the parent body's frame, level
        parent_body = np.full(n, -1, dtype=np.intp)
        local = np.zeros((n, 4, 4))
        level = np.zeros(n, dtype=np.intp)
        for link in reached[1:]:
            joint = joints[link]
            parent = joint.parent
            transform = offset[parent] @ joint.origin
            if joint.kind == "fixed":
                body_of[link] = body_of[parent]
                offset[link] = transform
            else:
                k = index[joint.name]
                parent_body[k] = body_of[parent]
                local[k] = transform
                level[k] = 0 if body_of[parent] < 0 else level[body_of[parent]] + 1
                body_of[link] = k
                offset[link] = np.eye(4)
        self._parent_body = parent_body
        self._local = local
        axes = np.array([joint_by_name[name].axis for name in order]).reshape(n, 3)
        self._axes = axes
        self._prismatic = np.array([joint_by_name[name].kind == "prismatic" for name in order])
        self._revolute = ~self._prismatic
        # Rodrigues: R = I + sin(q) K + (1 - cos(q)) K^2, K = [axis]x
        skew = np.zeros((n, 3, 3))
        skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -axes[:, 2], axes[:, 1], -axes[:, 0]
        skew[:, 1, 0], skew[:, 2, 0], skew[:, 2, 1] = axes[:, 2], -axes[:, 1], axes[:, 0]
        self._skew = skew
        self._skew2 = skew @ skew
        # levels: joints whose parent body is computed before them (one batch each)
        self._levels = [np.flatnonzero(level == v) for v in range(int(level.max(initial=-1)) + 1)]
        self._level_parents = [parent_body[ids] for ids in self._levels]
        # ancestors: joint k moves body j when k is j or above it
        ancestor = np.zeros((n, n), dtype=bool)  # [body, joint]
        for k in range(n):
            j = k
            while j >= 0:
                ancestor[k, j] = True
                j = int(parent_body[j])
        self._ancestor = ancestor
        # ---- frames
        frame_names: list[str] = []
        frame_body: list[int] = []
        frame_offset: list[FloatArray] = []
        for frame, link in frames.items():
            if link not in body_of:
                where = "not below the base" if link in link_set else "not a link"
                raise FloatingTreeError(
                    f"frame {frame!r}: {link!r} is {where} of {self._path.name}; "
                    f"links below {base_link!r}: {', '.join(reached)}"
                )
            frame_names.append(frame)
            frame_body.append(body_of[link])
            frame_offset.append(offset[link])
        self.frames = tuple(frame_names)
        self._frame_index = {name: k for k, name in enumerate(frame_names)}
        self._frame_body = np.array(frame_body, dtype=np.intp)
        self._frame_offset = np.array(frame_offset).reshape(len(frame_names), 4, 4)
        self._chains: list[object] = []
        self._fast = self._compiled_frames(frames, index)
        # frames asked for together -> how to compute them (memo of frame_poses_and_jacobians)
        self._plans: dict[tuple[str, ...], list[_FramePlan] | None] = {}
        # ---- inertia: every link below the base with mass
        masses, coms, tensors, bodies = [], [], [], []
        for link in reached:
            inertial = inertials.get(link)
            if inertial is None or inertial.mass <= 0.0:
                continue
            masses.append(inertial.mass)
            coms.append(offset[link][:3, :3] @ inertial.com + offset[link][:3, 3])
            tensors.append(offset[link][:3, :3] @ inertial.inertia @ offset[link][:3, :3].T)
            bodies.append(body_of[link])
        if not masses:
            raise FloatingTreeError(f"{self._path.name}: no link below {base_link!r} has a mass")
        # in the body's (joint child) frame: com and inertia about the com
        self._mass = np.array(masses)
        self._com = np.array(coms)
        self._inertia = np.array(tensors)
        # square roots for the mass matrix: S^T S = I (the tensors are symmetric, PSD)
        values, vectors = np.linalg.eigh(self._inertia)
        self._sqrt_inertia = np.sqrt(np.clip(values, 0.0, None))[:, :, None] * np.transpose(
            vectors, (0, 2, 1)
        )
        self._sqrt_mass = np.sqrt(np.array(masses))
        self._mass_body = np.array(bodies, dtype=np.intp)
        self.total_mass = float(self._mass.sum())
        armature_array = np.broadcast_to(np.asarray(armature, dtype=np.float64), (n,)).copy()
        if not (np.isfinite(armature_array).all() and (armature_array >= 0).all()):
            raise FloatingTreeError(f"armature must be finite and >= 0 [kg m^2], got {armature!r}")
        armature_array.setflags(write=False)
        self.armature = armature_array
        self._eye = np.broadcast_to(np.eye(3), (n, 3, 3))

    def _compiled_frames(
        self, frames: Mapping[str, str], index: Mapping[str, int]
    ) -> list[_FramePlan | None]:
        """Per frame, rtb's compiled sequence from the base to it, and its joints' columns.

        None for a frame on the base body (its pose is constant: ``_frame_offset``).
        """
        if not _FKINE_C_AVAILABLE or all(b < 0 for b in self._frame_body):
            return [None] * len(self.frames)
        import roboticstoolbox as rtb
        from roboticstoolbox.models.URDF.URDFRobot import URDF_read

        from limbtree.kinematics.chain import KinematicChain

        try:
            elinks, robot_name, _ = URDF_read(self._path)
            robot = rtb.Robot(elinks, name=robot_name)
        except Exception as exc:  # rtb raises URDFError, ValueError, RuntimeError, ...
            raise FloatingTreeError(f"cannot load URDF {self._path}: {exc}") from exc
        compiled: list[_FramePlan | None] = []
        for name, body in zip(self.frames, self._frame_body, strict=True):
            if body < 0:
                compiled.append(None)
                continue
            chain = KinematicChain.from_robot(robot, self.base_link, frames[name])
            columns = np.array([index[joint] for joint in chain.joint_names], dtype=np.intp)
            # The chain owns the compiled sequence: keep it alive with its handle (rtb frees
            # the C structure with its ETS).
            self._chains.append(chain)
            first = int(columns[0])
            if np.array_equal(columns, np.arange(first, first + columns.size)):
                compiled.append(
                    _FramePlan(chain._fknm, first, first + columns.size, None, _NO_POSE)
                )
            else:
                compiled.append(_FramePlan(chain._fknm, 0, 0, columns, _NO_POSE))
        return compiled

    @classmethod
    def from_urdf(
        cls,
        path: str | Path,
        base_link: str,
        limbs: Sequence[tuple[str, Sequence[str]]],
        frames: Mapping[str, str],
        armature: float | Sequence[float] = 0.0,
    ) -> FloatingTree:
        """Build a floating tree from a URDF file.

        Args:
            path: the URDF file.
            base_link: the floating base body: the URDF's root link.
            limbs: ``(limb name, joint names)`` in joint-vector order; every movable joint
                below the base must be in exactly one limb.
            frames: frame name -> URDF link whose frame it is (``{"arm.E2": "e2"}``).
            armature: motor reflected inertia [kg m^2], one value or one per joint.

        Raises:
            FloatingTreeError: if the file cannot be read, a link or joint is unknown, the
                base is not the root, a movable joint is in no limb, or the base subtree has
                no mass.
        """
        return cls(path, base_link, limbs, frames, armature)

    def __repr__(self) -> str:
        return (
            f"FloatingTree({self.base_link!r}, limbs={self.limbs}, n={self.n}, "
            f"frames={self.frames}, source={str(self._path)!r})"
        )

    # ------------------------------------------------------------------ description

    def limb_slice(self, limb: str) -> slice:
        """The limb's entries in ``q`` and its columns in ``T_q`` (offset 6 in ``[T_b T_q]``).

        Raises:
            FloatingTreeError: for an unknown limb; it lists the valid ones.
        """
        found = self._slices.get(limb)
        if found is None:
            raise FloatingTreeError(f"no limb {limb!r}; valid limbs: {', '.join(self.limbs)}")
        return found

    # ------------------------------------------------------------------ kinematics

    def _q(self, q: Sequence[float] | FloatArray) -> FloatArray:
        # a fresh array: rtb's compiled calls refuse read-only ones (views of it are writable)
        array = np.array(q, dtype=np.float64)
        if array.shape != (self.n,):
            raise JointCountError("q", self.n, array.shape)
        if not np.isfinite(array).all():
            raise FloatingTreeError("q contains NaN or infinity")
        return array

    def _bodies(self, q: FloatArray) -> FloatArray:
        """``(n, 4, 4)`` pose of every joint's child frame in the base frame."""
        s = np.sin(q)[:, None, None]
        c = np.cos(q)[:, None, None]
        motion = np.zeros((self.n, 4, 4))
        motion[:, :3, :3] = self._eye + s * self._skew + (1.0 - c) * self._skew2
        motion[:, 3, 3] = 1.0
        if self._prismatic.any():
            motion[self._prismatic, :3, :3] = np.eye(3)
            motion[self._prismatic, :3, 3] = self._axes[self._prismatic] * q[self._prismatic, None]
        step = self._local @ motion  # parent body frame -> joint child frame
        bodies = np.empty((self.n, 4, 4))
        for ids, parents in zip(self._levels, self._level_parents, strict=True):
            if parents[0] < 0:  # the first level hangs from the base
                bodies[ids] = step[ids]
            else:
                bodies[ids] = bodies[parents] @ step[ids]
        return bodies

    def _frame_indices(self, frames: Sequence[str]) -> IntArray:
        try:
            return np.fromiter((self._frame_index[f] for f in frames), dtype=np.intp)
        except KeyError as exc:
            raise FloatingTreeError(
                f"unknown frame {exc.args[0]!r}; valid frames: {', '.join(self.frames)}"
            ) from None

    def _jacobians(self, poses: FloatArray, body: IntArray, bodies: FloatArray) -> FloatArray:
        """``[T_b T_q]`` of frames at ``poses`` (k, 4, 4) riding on ``body`` (k,)."""
        k = len(body)
        n = self.n
        rotation_t = np.transpose(poses[:, :3, :3], (0, 2, 1))  # R_f^T
        position = poses[:, :3, 3]
        jac = np.zeros((k, 6, 6 + n))
        # T_b = Ad(g_bf^-1) = [[R^T, -R^T [p]x], [0, R^T]]
        jac[:, :3, :3] = rotation_t
        jac[:, 3:, 3:6] = rotation_t
        px = np.zeros((k, 3, 3))
        px[:, 0, 1], px[:, 0, 2], px[:, 1, 2] = -position[:, 2], position[:, 1], -position[:, 0]
        px[:, 1, 0], px[:, 2, 0], px[:, 2, 1] = position[:, 2], -position[:, 1], position[:, 0]
        jac[:, :3, 3:6] = -rotation_t @ px
        if n == 0:
            return jac
        # joint axes and points in the base frame
        axis = np.einsum("nij,nj->ni", bodies[:, :3, :3], self._axes)  # (n, 3)
        point = bodies[:, :3, 3]  # (n, 3): the child frame origin is on the axis
        arm = position[:, None, :] - point[None, :, :]  # (k, n, 3)
        lin = np.empty((k, n, 3))
        lin[..., 0] = axis[None, :, 1] * arm[..., 2] - axis[None, :, 2] * arm[..., 1]
        lin[..., 1] = axis[None, :, 2] * arm[..., 0] - axis[None, :, 0] * arm[..., 2]
        lin[..., 2] = axis[None, :, 0] * arm[..., 1] - axis[None, :, 1] * arm[..., 0]
        ang = np.broadcast_to(axis, (k, n, 3)).copy()
        if self._prismatic.any():
            lin[:, self._prismatic] = axis[self._prismatic]
            ang[:, self._prismatic] = 0.0
        mask = np.zeros((k, n))
        moving = body >= 0
        mask[moving] = self._ancestor[body[moving]]
        lin *= mask[..., None]
        ang *= mask[..., None]
        jac[:, :3, 6:] = rotation_t @ np.transpose(lin, (0, 2, 1))
        jac[:, 3:, 6:] = rotation_t @ np.transpose(ang, (0, 2, 1))
        return jac

    def _frame_poses(self, ids: IntArray, bodies: FloatArray) -> FloatArray:
        body = self._frame_body[ids]
        offset = self._frame_offset[ids]
        poses = offset.copy()
        moving = body >= 0
        if moving.any():
            poses[moving] = bodies[body[moving]] @ offset[moving]
        return poses

    def frame_pose(self, frame: str, q: Sequence[float] | FloatArray) -> FloatArray:
        """A frame's pose in the base body's frame.

        Args:
            frame: a frame name (:attr:`frames`).
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(4, 4)`` homogeneous transform [m].

        Raises:
            FloatingTreeError: for an unknown frame or a non-finite ``q``.
            JointCountError: if ``q`` does not have ``n`` values.
        """
        key = (frame,)
        plan = self._plan(key)
        values = self._q(q)
        if plan is None:
            poses = self._frame_poses(self._frame_indices(key), self._bodies(values))
            first: FloatArray = poses[0]
            return first
        entry = plan[0]
        if entry.handle is None:
            return entry.pose.copy()
        joints = (
            values[entry.start : entry.stop] if entry.columns is None else values[entry.columns]
        )
        pose: FloatArray = np.asarray(_fkine_c(entry.handle, joints, None, None, 1))
        return pose

    def frame_jacobian(self, frame: str, q: Sequence[float] | FloatArray) -> FloatArray:
        """``[T_b T_q]``: the frame's body twist is ``T_b V_b + T_q q_dot`` (seed 003 eq. 7).

        Args:
            frame: a frame name (:attr:`frames`).
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(6, 6 + n)`` matrix; rows ``[v; w]`` of the frame's body twist [m/s; rad/s].

        Raises:
            FloatingTreeError: for an unknown frame or a non-finite ``q``.
            JointCountError: if ``q`` does not have ``n`` values.
        """
        jacobian: FloatArray = self.frame_poses_and_jacobians((frame,), q)[1][0]
        return jacobian

    def frame_poses_and_jacobians(
        self, frames: Sequence[str], q: Sequence[float] | FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Poses and ``[T_b T_q]`` of several frames in one pass (the controller's hot call).

        Args:
            frames: frame names (:attr:`frames`), in the order wanted.
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(poses, jacobians)``: ``(k, 4, 4)`` poses in the base frame [m] and
            ``(k, 6, 6 + n)`` Jacobians, one per frame in order.

        Raises:
            FloatingTreeError: for an unknown frame or a non-finite ``q``.
            JointCountError: if ``q`` does not have ``n`` values.
        """
        key = frames if isinstance(frames, tuple) else tuple(frames)
        plan = self._plan(key)
        values = self._q(q)
        if plan is None:
            ids = self._frame_indices(key)
            bodies = self._bodies(values)
            poses = self._frame_poses(ids, bodies)
            return poses, self._jacobians(poses, self._frame_body[ids], bodies)
        return self._compiled_poses_and_jacobians(plan, values)

    def _plan(self, frames: tuple[str, ...]) -> list[_FramePlan] | None:
        """How the compiled path computes these frames (one entry each); None: it cannot."""
        if frames in self._plans:
            return self._plans[frames]
        ids = self._frame_indices(frames)
        plan: list[_FramePlan] | None = None
        if all(self._fast[i] is not None or self._frame_body[i] < 0 for i in ids):
            plan = [
                self._fast[i] or _FramePlan(None, 0, 0, None, self._frame_offset[i]) for i in ids
            ]
        if len(self._plans) < _MAX_PLANS:
            self._plans[frames] = plan
        return plan

    def _compiled_poses_and_jacobians(
        self, plan: list[_FramePlan], q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """The hot path: rtb's compiled FK and end-frame Jacobian per frame, then ``T_b``."""
        k = len(plan)
        poses = np.empty((k, 4, 4))
        jac = np.zeros((k, 6, 6 + self.n))
        for row, entry in enumerate(plan):
            if entry.handle is None:
                poses[row] = entry.pose
                continue
            if entry.columns is None:
                values = q[entry.start : entry.stop]
                poses[row] = _fkine_c(entry.handle, values, None, None, 1)
                jac[row, :, 6 + entry.start : 6 + entry.stop] = _jacobe_c(
                    entry.handle, values, None
                )
            else:
                values = q[entry.columns]
                poses[row] = _fkine_c(entry.handle, values, None, None, 1)
                jac[row][:, 6 + entry.columns] = _jacobe_c(entry.handle, values, None)
        rotation_t = np.transpose(poses[:, :3, :3], (0, 2, 1))
        jac[:, :3, :3] = rotation_t
        jac[:, 3:, 3:6] = rotation_t
        # T_b's coupling block -R^T [p]x, with [p]x gathered from p by index
        cross = (poses[:, :3, 3][:, _SKEW_INDEX] * _SKEW_SIGN).reshape(k, 3, 3)
        jac[:, :3, 3:6] = rotation_t @ cross
        return poses, jac

    # ------------------------------------------------------------------ inertia

    def _link_jacobians(self, q: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per massive link: its com frame's pose (link axes) and ``[T_b T_q]``."""
        bodies = self._bodies(q)
        body = self._mass_body
        poses = np.broadcast_to(np.eye(4), (len(body), 4, 4)).copy()
        poses[:, :3, 3] = self._com
        moving = body >= 0
        if moving.any():
            poses[moving] = bodies[body[moving]] @ poses[moving]
        return poses, self._jacobians(poses, body, bodies)

    def mass_matrix(self, q: Sequence[float] | FloatArray, *, armature: bool = True) -> FloatArray:
        """The mass matrix ``M`` in ``[V_b; q_dot]`` coordinates: ``KE = 1/2 V^T M V``.

        Args:
            q: ``(n,)`` joint values [rad or m].
            armature: add the motors' reflected inertia on the joints' diagonal (as the
                physics plant does); False: the links' inertia only.

        Returns:
            ``(6 + n, 6 + n)`` symmetric positive-definite matrix [kg, kg m, kg m^2].

        Raises:
            FloatingTreeError: for a non-finite ``q``.
            JointCountError: if ``q`` does not have ``n`` values.
        """
        _, jac = self._link_jacobians(self._q(q))
        # body twist at the com, link axes: KE = 1/2 (m |v|^2 + w^T I w)
        # = |W V|^2 with W = [sqrt(m) T_lin; S T_ang] per link, S^T S = I: M = W^T W
        weighted = np.empty_like(jac)
        weighted[:, :3, :] = self._sqrt_mass[:, None, None] * jac[:, :3, :]
        weighted[:, 3:, :] = self._sqrt_inertia @ jac[:, 3:, :]
        stacked = weighted.reshape(-1, 6 + self.n)
        matrix: FloatArray = stacked.T @ stacked
        if armature:
            diagonal = np.arange(6, 6 + self.n)
            matrix[diagonal, diagonal] += self.armature
        return matrix

    def momentum_matrix(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Momentum as a function of ``[V_b; q_dot]``: ``M[:6, :]`` (seed 004 eqs. 3-4).

        Row 0-2: linear momentum [kg m/s]; rows 3-5: angular momentum about the base origin
        [kg m^2/s]; both in base coordinates. ``H_b`` is columns ``:6``, a limb's ``H_bm``
        its columns ``6 + limb_slice``.

        Args:
            q: ``(n,)`` joint values [rad or m].

        Returns:
            ``(6, 6 + n)`` matrix.

        Raises:
            FloatingTreeError: for a non-finite ``q``.
            JointCountError: if ``q`` does not have ``n`` values.
        """
        _, jac = self._link_jacobians(self._q(q))
        # a link's momentum at its com, in its axes: [m v; I w]; moved to the base origin and
        # base axes by Ad(g_bc^-1)^T = T_b^T (the first 6 columns of its Jacobian)
        link_momentum = np.empty_like(jac)
        link_momentum[:, :3, :] = self._mass[:, None, None] * jac[:, :3, :]
        link_momentum[:, 3:, :] = self._inertia @ jac[:, 3:, :]
        transfer = np.transpose(jac[:, :, :6], (0, 2, 1))
        result: FloatArray = np.einsum("lij,ljm->im", transfer, link_momentum)
        return result

    def momentum_matrices(
        self, qs: Sequence[Sequence[float]] | FloatArray, *, limb: str | None = None
    ) -> FloatArray:
        """:meth:`momentum_matrix` of many joint vectors in one vectorised pass.

        A planner that scores a whole trajectory (seed 004's LRST, eq. 2, samples a swing
        at tens of points per candidate) calls this once instead of once per sample. It
        sums the links' inertia in base coordinates (composite form) instead of stacking
        their Jacobians: a link of mass ``m``, centre of mass ``c`` and rotated inertia
        ``I`` (base axes) adds ``m`` to the linear block, ``m c`` to the first moments and
        ``Q = I + m (|c|^2 1 - c c^T)`` to the inertia about the base origin; a revolute
        joint of axis ``a`` through ``o`` then has the columns ``[a x (m c - m o);
        Q a - m c x (a x o)]`` summed over the links it moves.

        Args:
            qs: ``(k, n)`` joint vectors [rad or m], one per row.
            limb: only this limb's columns ``H_bm`` (seed 004 eq. 3), from the links it
                moves alone: several times cheaper than the whole matrix.

        Returns:
            ``(k, 6, 6 + n)``: row ``i`` equals ``momentum_matrix(qs[i])``; with ``limb``,
            ``(k, 6, n_limb)``: its columns ``6 + limb_slice(limb)``.

        Raises:
            FloatingTreeError: if ``qs`` is not a 2-D array of finite numbers, or for an
                unknown limb.
            JointCountError: if the rows do not have ``n`` values.
        """
        try:
            values = np.array(qs, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise FloatingTreeError(f"qs must be rows of {self.n} numbers: {exc}") from None
        if values.ndim != 2:
            raise FloatingTreeError(
                f"qs must be a 2-D array of joint vectors, got shape {values.shape}"
            )
        if values.shape[1] != self.n:
            raise JointCountError("qs", self.n, values.shape)
        if not np.isfinite(values).all():
            raise FloatingTreeError("qs contains NaN or infinity")
        count, n = values.shape
        if limb is None:
            joints = np.arange(n)
            links = np.arange(len(self._mass_body))
        else:
            joints = np.arange(n)[self.limb_slice(limb)]
            # the links these joints move, and every joint above them (for their poses)
            links = np.flatnonzero(
                (self._mass_body >= 0) & self._ancestor[self._mass_body][:, joints].any(axis=1)
            )
        body = self._mass_body[links]
        moving = body >= 0
        needed = np.flatnonzero(self._ancestor[body[moving]].any(axis=0))
        # every chosen link's rotation and centre of mass in the base frame
        rotation = np.broadcast_to(np.eye(3), (count, len(links), 3, 3)).copy()
        com = np.broadcast_to(self._com[links], (count, len(links), 3)).copy()
        bodies = self._bodies_many(values, needed)
        if moving.any():
            chosen = bodies[:, body[moving]]
            rotation[:, moving] = chosen[..., :3, :3]
            com[:, moving] = (
                np.einsum("klij,lj->kli", chosen[..., :3, :3], self._com[links][moving])
                + chosen[..., :3, 3]
            )
        mass = self._mass[links]
        first = mass[:, None] * com  # (k, l, 3): m c
        # inertia about the base origin in base axes: R I R^T + m (|c|^2 1 - c c^T)
        about = rotation @ self._inertia[links] @ np.swapaxes(rotation, -1, -2)
        about -= first[..., :, None] * com[..., None, :]
        diagonal = (first * com).sum(axis=-1)
        about[..., 0, 0] += diagonal
        about[..., 1, 1] += diagonal
        about[..., 2, 2] += diagonal
        result = np.zeros((count, 6, 6 + n if limb is None else len(joints)))
        offset = 6 if limb is None else 0
        if limb is None:
            moment = first.sum(axis=1)  # (k, 3): M C
            skew = (moment[:, _SKEW_INDEX] * _SKEW_SIGN).reshape(count, 3, 3)  # -[M C]x
            result[:, 0, 0] = result[:, 1, 1] = result[:, 2, 2] = self.total_mass
            result[:, :3, 3:6] = skew
            result[:, 3:, :3] = -skew
            result[:, 3:, 3:6] = about.sum(axis=1)
        if len(joints) == 0:
            return result
        # per joint: the links it moves (their mass, first moments and inertia summed)
        weights = np.zeros((len(links), len(joints)))
        weights[moving] = self._ancestor[body[moving]][:, joints]
        mass_below = mass @ weights  # (j,)
        first_below = np.einsum("kli,lj->kji", first, weights)  # (k, j, 3)
        about_below = np.tensordot(about, weights, axes=([1], [0]))  # (k, 3, 3, j)
        frames = bodies[:, joints]
        axis = np.einsum("kjab,jb->kja", frames[..., :3, :3], self._axes[joints])
        point = frames[..., :3, 3]  # (k, j, 3): on the axis
        linear = _cross(axis, first_below - mass_below[None, :, None] * point)
        angular = np.einsum("kabj,kjb->kja", about_below, axis) - _cross(
            first_below, _cross(axis, point)
        )
        slide = self._prismatic[joints]
        if slide.any():
            linear[:, slide] = mass_below[None, slide, None] * axis[:, slide]
            angular[:, slide] = _cross(first_below[:, slide], axis[:, slide])
        result[:, :3, offset:] = np.swapaxes(linear, 1, 2)
        result[:, 3:, offset:] = np.swapaxes(angular, 1, 2)
        return result

    def _bodies_many(self, qs: FloatArray, joints: IntArray) -> FloatArray:
        """``(k, n, 4, 4)``: :meth:`_bodies` of each row of a checked ``(k, n)`` array.

        Only the entries of ``joints`` (which must hold every joint above each of them) are
        computed; the others are left undefined.
        """
        count, n = qs.shape
        bodies = np.empty((count, n, 4, 4))
        if len(joints) == 0:
            return bodies
        values = qs[:, joints]
        s = np.sin(values)[..., None, None]
        c = np.cos(values)[..., None, None]
        motion = np.zeros((count, len(joints), 4, 4))
        motion[..., :3, :3] = (
            self._eye[joints] + s * self._skew[joints] + (1.0 - c) * self._skew2[joints]
        )
        motion[..., 3, 3] = 1.0
        slide = self._prismatic[joints]
        if slide.any():
            motion[:, slide, :3, :3] = np.eye(3)
            motion[:, slide, :3, 3] = self._axes[joints][slide] * values[:, slide, None]
        step = np.empty((count, n, 4, 4))
        step[:, joints] = self._local[joints] @ motion  # parent body frame -> child frame
        wanted = np.zeros(n, dtype=bool)
        wanted[joints] = True
        for ids, parents in zip(self._levels, self._level_parents, strict=True):
            keep = wanted[ids]
            if not keep.any():
                continue
            ids, parents = ids[keep], parents[keep]
            if parents[0] < 0:  # the first level hangs from the base
                bodies[:, ids] = step[:, ids]
            else:
                bodies[:, ids] = bodies[:, parents] @ step[:, ids]
        return bodies

    def center_of_mass(self, q: Sequence[float] | FloatArray) -> FloatArray:
        """Centre of mass of every link, in the base frame [m] (``(3,)``)."""
        bodies = self._bodies(self._q(q))
        points = self._com.copy()
        moving = self._mass_body >= 0
        if moving.any():
            chosen = bodies[self._mass_body[moving]]
            points[moving] = (
                np.einsum("lij,lj->li", chosen[:, :3, :3], points[moving]) + chosen[:, :3, 3]
            )
        result: FloatArray = self._mass @ points / self.total_mass
        return result
