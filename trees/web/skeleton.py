"""Where each limb's joints are, in the world, for the web debugger's 3D view.

A record (or a live run's header) names each limb's robot description and its chain; the
joints' positions follow from the joint values by forward kinematics
(:meth:`~limbtree.kinematics.chain.KinematicChain.joint_positions`), placed by the robot's
base pose of that tick. A limb whose description is not installed here (a record from
another machine) has no skeleton: the page then draws its end-effector frames only.

Making :class:`Skeletons` imports roboticstoolbox (about 2 s, more on a busy machine), so
this module imports it only there, and :class:`SkeletonLoader` makes them in a thread of
its own: ``limbtree view`` answers the page first and the skeletons follow.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from limbtree.kinematics import Pose

if TYPE_CHECKING:
    from limbtree.kinematics.chain import KinematicChain
    from limbtree.robots.registry import RobotSpec

_IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
_LOG = logging.getLogger(__name__)


class Skeletons:
    """Joint positions of the header's limbs.

    Args:
        robots: the header's ``robots`` map (robot name -> ``{"robot", "limbs", "base"}``).
    """

    def __init__(self, robots: Mapping[str, Any]) -> None:
        self._limbs: dict[str, tuple[str, KinematicChain, tuple[float, ...]]] = {}
        specs: dict[str, RobotSpec | None] = {}
        for robot_name, robot in robots.items():
            description = str(robot.get("robot", ""))
            if description not in specs:
                specs[description] = _load(description)
            spec = specs[description]
            if spec is None:
                continue
            base = tuple(robot.get("base") or _IDENTITY)
            for limb_name, limb in (robot.get("limbs") or {}).items():
                chain = _chain(spec, limb_name, limb.get("chain") or "")
                if chain is not None:
                    self._limbs[limb_name] = (robot_name, chain, base)

    def __contains__(self, limb: object) -> bool:
        return limb in self._limbs

    def points(
        self,
        limb: str,
        q: Sequence[float] | None,
        bases: Mapping[str, Sequence[float]] | None = None,
    ) -> list[list[float]] | None:
        """The limb's skeleton in the world [m]: base, each joint, end effector.

        Args:
            limb: the limb's name.
            q: its joint values [rad or m], or None.
            bases: the tick's robot base poses (robot name -> 7 floats); the header's when
                a robot is not there.

        Returns:
            ``[[x, y, z], ...]``, or None when the limb, its chain or ``q`` is unknown or
            does not fit.
        """
        entry = self._limbs.get(limb)
        if entry is None or q is None:
            return None
        robot, chain, base = entry
        if len(q) != chain.n:
            return None
        try:
            local = chain.joint_positions(q)
        except ValueError:  # NaN in a record
            return None
        matrix = Pose.from_array((bases or {}).get(robot) or base).as_matrix()
        world = local @ matrix[:3, :3].T + matrix[:3, 3]
        out: list[list[float]] = world.round(5).tolist()
        return out


class SkeletonLoader:
    """:class:`Skeletons` made in a background thread, once :meth:`start` is called.

    The thread only builds them; whoever reads :meth:`result` (the server's event loop)
    takes them once they are there.

    Args:
        robots: the header's ``robots`` map.
        build: makes the skeletons (:class:`Skeletons`; tests pass a slow or failing one).
    """

    def __init__(
        self,
        robots: Mapping[str, Any],
        build: Callable[[Mapping[str, Any]], Skeletons] | None = None,
    ) -> None:
        self._robots = robots
        self._build: Callable[[Mapping[str, Any]], Skeletons] = build or Skeletons
        self._done = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self._result: Skeletons | None = None
        #: Why making them failed (the page then draws the end-effector frames only).
        self.error: str | None = None

    def start(self) -> None:
        """Start making them (once; later calls do nothing)."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="limbtree-skeletons", daemon=True).start()

    def _run(self) -> None:
        try:
            self._result = self._build(self._robots)
        except Exception as exc:  # a broken install: no skeletons, the rest of the page works
            self.error = f"{type(exc).__name__}: {exc}"
            _LOG.warning("the 3D view has no skeletons: %s", self.error)
            self._result = Skeletons({})
        finally:
            self._done.set()

    def result(self) -> Skeletons | None:
        """The skeletons, or None while they are being made (or before :meth:`start`)."""
        return self._result if self._done.is_set() else None

    def wait(self, timeout_s: float | None = None) -> Skeletons | None:
        """Start them if needed and wait for them at most ``timeout_s`` [s]."""
        self.start()
        self._done.wait(timeout_s)
        return self.result()


def _load(description: str) -> RobotSpec | None:
    from limbtree.robots import RobotsError, load_robot

    try:
        return load_robot(description)
    except (RobotsError, OSError):
        return None


def _chain(spec: RobotSpec, limb: str, chain: str) -> KinematicChain | None:
    """The chain of ``limb``.

    Its header's ``chain``, else the robot's only limb, else the part of ``ROBOT.LIMB``
    after the dot, else the limb's own name.
    """
    names = spec.limb_names
    if chain not in names:
        if len(names) == 1:
            chain = names[0]
        elif "." in limb and limb.split(".", 1)[1] in names:
            chain = limb.split(".", 1)[1]
        elif limb in names:
            chain = limb
        else:
            return None
    try:
        return spec.chain(chain)
    except Exception:  # a description rtb cannot load: no skeleton, the frames still show
        return None


__all__ = ["SkeletonLoader", "Skeletons"]
