"""What every behaviour of a running mission shares: limbs, clock, operator, telemetry.

One :class:`MissionContext` per tree (no global state): the runner builds it, the builder
hands it to each behaviour, and the runner puts the telemetry it collects each tick into
the tick's snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from limbtree.kinematics import Pose
from limbtree.skills.telemetry import SkillTelemetry
from limbtree.trees.claims import LimbClaims
from limbtree.trees.errors import TreeBuildError
from limbtree.trees.limbs import LimbHandle

if TYPE_CHECKING:
    from limbtree.robots.terrain import Terrain


class Operator(Protocol):
    """Someone who confirms gates: a person at the terminal, or ``--auto-confirm``."""

    def confirm(self, key: str, prompt: str) -> bool | None:
        """Ask (once per ``key``) and answer without blocking.

        Returns:
            True when confirmed, False when refused, None while no answer has come.
        """

    def withdraw(self, key: str) -> None:
        """Forget the question ``key`` (its gate was interrupted)."""

    def waiting(self) -> bool:
        """Whether a gate asked and no answer has come yet (the ``sim`` clock stops meanwhile).

        Optional: the runner treats an operator without it as never waiting.
        """

    def take_answers(self) -> list[tuple[str, str]]:
        """The answers given since the last call: (gate key, ``yes (from WHO)``).

        Optional: the record keeps each answer as a ``gate_answered`` event.
        """


class AnswerLog:
    """The answers an operator gave, until the runner takes them (:meth:`Operator.take_answers`)."""

    def __init__(self) -> None:
        self._answers: list[tuple[str, str]] = []

    def note_answer(self, key: str, answer: bool, by: str) -> None:
        """Gate ``key`` was answered (``by``: who, as the record says it: ``the terminal``)."""
        self._answers.append((key, f"{'yes' if answer else 'no'} ({by})"))

    def take_answers(self) -> list[tuple[str, str]]:
        """See :meth:`Operator.take_answers`."""
        answers, self._answers = self._answers, []
        return answers


class AutoConfirm(AnswerLog):
    """The operator of ``--auto-confirm``: every gate passes at once."""

    def confirm(self, key: str, prompt: str) -> bool | None:
        """Always True."""
        self.note_answer(key, True, "--auto-confirm")
        return True

    def withdraw(self, key: str) -> None:
        """Nothing to forget."""

    def waiting(self) -> bool:
        """Never: every gate is answered at once."""
        return False


@dataclass
class Telemetry:
    """Skill figures collected over a run, for the record and the summary.

    Attributes:
        tick: per node id, this tick's skill telemetry (mode, t, distance, message, ...).
        recoveries: how many recovery episodes skills went through.
        max_command_state_distance: largest metric distance between a clamped command and
            the state it was clamped around (the hypersphere's: ``<= 1``).
        clamped: whether a skill clamped a command at all (the distance means something).
        nominal_limbs: limbs that a skill drove on its trajectory (not recovering) this tick.
        metrics: skill figures for ``summary.json`` (``metrics.align.final_dd_mm``, ...).
        targets: per limb, the world pose a skill drives it to this tick (a synchronized
            move's segment end, an alignment's goal, ...), for the record's target frames;
            set with :meth:`set_target`.
    """

    tick: dict[str, SkillTelemetry] = field(default_factory=dict)
    recoveries: int = 0
    max_command_state_distance: float = 0.0
    clamped: bool = False
    nominal_limbs: set[str] = field(default_factory=set)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    targets: dict[str, Pose] = field(default_factory=dict)
    _target_setters: dict[str, str] = field(default_factory=dict, repr=False)

    def set_target(self, node: str, limb: str, pose: Pose) -> None:
        """Node ``node`` (its id) drives ``limb`` toward ``pose`` (world) this tick."""
        self.targets[limb] = pose
        self._target_setters[limb] = node

    def drop_targets(self, node: str) -> None:
        """Forget this tick's targets set by ``node``: it failed, was refused or was halted."""
        for limb in [name for name, setter in self._target_setters.items() if setter == node]:
            del self.targets[limb]
            del self._target_setters[limb]

    def note_clamp(self, distance: float) -> None:
        """A command was clamped around its state at this (hypersphere) distance."""
        self.clamped = True
        self.max_command_state_distance = max(self.max_command_state_distance, distance)

    def new_tick(self) -> None:
        """Forget the previous tick's per-tick figures."""
        self.tick = {}
        self.nominal_limbs = set()
        self.targets = {}
        self._target_setters = {}


@dataclass
class MissionContext:
    """The shared state of one running mission.

    Attributes:
        limbs: the mission's limbs by name.
        clock: the tick time [s] (sim or real, as the runner's clock says).
        operator: who confirms operator gates.
        telemetry: what skills report for the record.
        last_valid: per limb, the last command a synchronized move sent on its trajectory
            (world frame), for ``recover_to_last_valid``.
        claims: which node owns each limb (one commander per limb,
            :mod:`limbtree.trees.claims`); given to every limb handle of :attr:`limbs`.
        grasp_points: ``MODULE/GRASP_POINT`` -> its pose in the world, for every grasp point
            of the mission's ``world`` (the map a walking robot steps by).
        terrain: the ground of the mission's ``world`` (seed 004), or None: its ``height(x,
            y)`` [m] is what a climbing leaf plans footholds and eq. 1 over.
        physics: the ``mujoco`` plant's settings (``limbtree agent --physics``, as a map:
            gravity, the grippers' contact law, ...), empty without one.
        models: models that leaves build from the robots' descriptions, kept for the run so
            that every node of the same legs shares one (a climbing robot's floating tree
            and legs take ~0.2 s to build); keyed by what built them.
    """

    limbs: Mapping[str, LimbHandle]
    clock: Callable[[], float]
    operator: Operator = field(default_factory=AutoConfirm)
    telemetry: Telemetry = field(default_factory=Telemetry)
    last_valid: dict[str, Pose] = field(default_factory=dict)
    grasp_points: Mapping[str, Pose] = field(default_factory=dict)
    terrain: Terrain | None = None
    physics: Mapping[str, Any] = field(default_factory=dict)
    models: dict[Hashable, Any] = field(default_factory=dict)
    claims: LimbClaims = field(init=False)

    def __post_init__(self) -> None:
        self.claims = LimbClaims(self.clock)
        for handle in self.limbs.values():
            handle.claims = self.claims

    def limb(self, name: str) -> LimbHandle:
        """The limb called ``name``.

        Raises:
            TreeBuildError: naming the mission's limbs.
        """
        try:
            return self.limbs[name]
        except KeyError:
            raise TreeBuildError(
                f"unknown limb {name!r}; the mission declares {', '.join(sorted(self.limbs))}"
            ) from None
