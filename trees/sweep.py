"""``limbtree sweep``: many recorded runs of one mission, one table (issue 15).

A sweep is the product of the values of some mission parameters (``--set NAME=V1,V2``,
``--set NAME=A..B``) and of some seeds (``--seed A..B``). Each point of the product is a
normal recorded run, ``limbtree run MISSION --headless --auto-confirm --record OUT/RUN
--seed N --set NAME=VALUE ...``, in its own process, so a run that crashes is one failed row
and the others go on. ``OUT/RUN`` is named from the run's settings
(``planner=ramp,terrain_seed=03``).

1. Plan (:func:`parse_settings`, :func:`parse_seeds`, :func:`plan_sweep`, pure) and check it
   against the mission (:func:`check_plan`): an unknown parameter, a bad range, an empty
   product or a value the mission refuses is an error before anything starts.
2. Run (:func:`run_sweep`) on local processes (:class:`LocalBackend`, ``--jobs N`` at a
   time) or on an existing Ray cluster (:class:`RayBackend`, ``--ray ADDRESS``: one remote
   task per run, executing the same command, its record sent back). A run whose directory
   holds a complete ``summary.json`` of the same settings (from an earlier sweep) is kept
   and not run again, so an interrupted sweep resumes where it stopped. Ctrl-C (or SIGTERM)
   stops the sweep: the runs in progress are aborted (each closes its record ABORTED) and
   marked ``interrupted``, the ones not started ``not_run``.
3. Tabulate (:func:`sweep_table`): ``OUT/sweep.csv`` has one row per run (the settings,
   the status, outcome, ``sim_time_s``, ``wall_time_s``, the summary's counts, and every
   numeric metric flattened as ``metrics.a.b``); :func:`format_table` prints the runs
   grouped by the swept settings (mean ± standard deviation), and :func:`draw_plot` draws
   ``OUT/sweep.png``, one metric per group.

Ray is an optional extra (``pip install 'limbtree[cluster]'``); nothing here imports it
unless ``--ray`` is given.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TextIO

from limbtree.trees.errors import TreesError
from limbtree.trees.interrupts import STOP_WITH_ENV, signals_abort
from limbtree.trees.launcher import PROCESSES_ENV, agent_processes
from limbtree.trees.recorder import RECORD_FILES, lock_record_dir

if TYPE_CHECKING:
    from limbtree.trees.mission import Mission

#: The command that starts a run: this Python's ``limbtree``.
LIMBTREE: Final = (sys.executable, "-m", "limbtree")
#: How long the runs in progress get to close their records after Ctrl-C [s]; then killed.
STOP_GRACE_S: Final = 30.0
#: The file of each run's directory that says which settings it ran and how it ended.
RUN_FILE: Final = "sweep_run.json"
#: The run's output (stdout and stderr of ``limbtree run``) in its directory.
OUTPUT_FILE: Final = "run.log"
#: What ``pip`` installs for ``--ray``.
CLUSTER_EXTRA: Final = "pip install 'limbtree[cluster]'"
#: The outcomes a complete ``summary.json`` may have.
OUTCOMES: Final = ("SUCCESS", "FAILURE", "ABORTED")
#: The summary's counts and figures that go into the table besides the metrics.
SUMMARY_NUMBERS: Final = (
    "ticks",
    "faults_injected",
    "faults_recovered",
    "recoveries",
    "max_command_state_distance",
)
#: The printed table shows at most this many metric columns (the CSV has them all)...
MAX_TABLE_METRICS: Final = 8
#: ... or, when it has one column per group, this many metric lines.
MAX_TALL_METRICS: Final = 24
#: The printed table has one line per group when that fits in this many characters.
TABLE_WIDTH: Final = 120
#: The longest value kept as is in a run's directory name [characters].
_MAX_NAME_VALUE: Final = 40
_RANGE: Final = re.compile(r"^(-?\d+)\.\.(-?\d+)$")
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._+-]+")
_INTEGER: Final = re.compile(r"^\d+$")


class SweepError(TreesError):
    """A sweep cannot be planned or run as asked (bad ``--set``, ``--seed``, ``--jobs``...)."""


# Planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One ``--set NAME=...``: a mission parameter and the values it takes.

    Attributes:
        name: the parameter's name.
        values: its values as given (text, read as YAML by ``limbtree run --set``).
    """

    name: str
    values: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise SweepError(f"--set {self.name}: no values; the product of the settings is empty")


#: What makes two runs the same run (:meth:`PlannedRun.identity`, in each ``sweep_run.json``).
IDENTITY_KEYS: Final = ("mission", "settings", "seed", "clock")
#: The ``sweep_run.json`` key of the mission files' digest (:func:`mission_digest`).
DIGEST_KEY: Final = "mission_sha256"
#: The ``sweep_run.json`` key of every parameter's value as the mission read it
#: (:meth:`PlannedRun.identity`): two runs of the same values are the same run, however
#: their ``--set`` flags wrote them.
PARAMETERS_KEY: Final = "parameters"


@dataclass(frozen=True)
class PlannedRun:
    """One point of the product: a run to do.

    Attributes:
        name: its directory's name in the sweep's folder.
        settings: (parameter, value) pairs, in ``--set`` order.
        seed: its ``--seed``.
    """

    name: str
    settings: tuple[tuple[str, str], ...]
    seed: int

    @property
    def overrides(self) -> dict[str, str]:
        """Its ``--set`` pairs as a dict."""
        return dict(self.settings)

    def identity(self, plan: SweepPlan) -> dict[str, Any]:
        """What makes two runs the same run: the mission file, settings, seed and clock.

        The clock is the one the run takes (``--clock``, else the mission's), so a sweep
        that names the mission's own clock finds the runs of one that did not. Once the
        plan was checked against its mission (:func:`check_plan`), it also holds every
        parameter's value as the mission reads it (``parameters``), by which runs are
        compared: ``--set rock_mm=100`` and ``rock_mm=100.0`` are then the same run as the
        default 100 (:func:`_canonical`).
        """
        clock = plan.clock or plan.mission_clock
        values = (str(plan.mission.resolve()), self.overrides, self.seed, clock)
        identity = dict(zip(IDENTITY_KEYS, values, strict=True))
        if plan.defaults is not None:
            read = {name: plan.read[name][text] for name, text in self.settings}
            identity[PARAMETERS_KEY] = _canonical({**plan.defaults, **read})
        return identity


@dataclass(frozen=True)
class SweepPlan:
    """The runs of a sweep, before anything starts.

    Attributes:
        mission: the mission file.
        settings: the ``--set`` settings, in order.
        seeds: the seeds (``--seed``).
        clock: ``--clock`` (None: the mission's).
        runs: the product, first setting slowest, seeds fastest.
        mission_clock: the mission's own clock, once it was read (None before).
        digest: the SHA-256 of the mission's files (:func:`mission_digest`), once it was
            read: a run made from other files is not kept.
        defaults: the mission's parameters at their defaults, once it was read.
        read: each setting's values as the mission reads them (name -> text -> value),
            once it was read.
    """

    mission: Path
    settings: tuple[Setting, ...]
    seeds: tuple[int, ...]
    clock: str | None
    runs: tuple[PlannedRun, ...]
    mission_clock: str | None = None
    digest: str | None = None
    defaults: Mapping[str, Any] | None = None
    read: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        """The settings' names, then ``seed``: the CSV's setting columns."""
        return tuple(s.name for s in self.settings) + ("seed",)

    @property
    def swept(self) -> tuple[str, ...]:
        """The names that take more than one value (``seed`` when several seeds)."""
        names = tuple(s.name for s in self.settings if len(s.values) > 1)
        return names + (("seed",) if len(self.seeds) > 1 else ())

    def default_by(self) -> tuple[str, ...]:
        """The table's default groups: the swept settings that are not seeds.

        A seed (``--seed`` or a parameter named ``seed`` or ``..._seed``) repeats a condition
        rather than changing it, so its runs are pooled into their condition's row.
        """
        return tuple(name for name in self.swept if not _is_seed(name))


def _is_seed(name: str) -> bool:
    return name == "seed" or name.endswith("_seed")


def _shown(value: Any) -> str:
    """A canonical parameter value as a person writes it (``100``, not ``100.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if not isinstance(value, str) else value


def _canonical(value: Any) -> Any:
    """A parameter value in one form per value: numbers as floats (``100`` is ``100.0``).

    Text stays text, even text a number-typed key would read as a number (``1e2``, which
    YAML calls text): a text parameter given ``1e2`` is not the one given ``100``.
    """
    if isinstance(value, str | bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_canonical(v) for v in value]
    return str(value)


def split_values(text: str) -> list[str]:
    """Split ``text`` at its commas, except inside brackets, braces or quotes.

    ``"1,2"`` is two values, ``"[1, 2],[3, 4]"`` two YAML lists, ``"'a,b'"`` one string.
    """
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    quote: str | None = None
    for char in text:
        if quote is not None:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def parse_values(flag: str, text: str) -> tuple[str, ...]:
    """The values of one sweep flag: ``V1,V2,...``, integer ranges ``A..B`` (both ends in).

    Args:
        flag: the flag as the messages name it (``--set planner``, ``--seed``).
        text: what follows ``=`` (or the flag's argument).

    Returns:
        The values as text, in order.

    Raises:
        SweepError: no value, an empty value, a bad range, or a value given twice.
    """
    if not text.strip():
        raise SweepError(
            f"{flag}: no values, so the product of the settings is empty; give V1,V2,... "
            "or a range A..B"
        )
    values: list[str] = []
    for item in split_values(text):
        value = item.strip()
        if not value:
            raise SweepError(f"{flag}={text}: an empty value between two commas; remove it")
        if ".." in value and value[0] not in "'\"[{":
            match = _RANGE.match(value.replace(" ", ""))
            if match is None:
                raise SweepError(
                    f"{flag}={text}: bad range {value!r}: a range is A..B with integers "
                    "A <= B, both ends included, e.g. 0..19 (quote a value that holds '..')"
                )
            start, end = int(match[1]), int(match[2])
            if end < start:
                raise SweepError(
                    f"{flag}={text}: bad range {value!r}: it ends ({end}) before it starts "
                    f"({start}); write {end}..{start}"
                )
            values.extend(str(i) for i in range(start, end + 1))
        else:
            values.append(value)
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise SweepError(f"{flag}={text}: the value {value} is given twice; give it once")
        seen.add(value)
    return tuple(values)


def parse_settings(items: Sequence[str]) -> tuple[Setting, ...]:
    """The ``--set NAME=VALUES`` arguments of ``limbtree sweep``.

    Raises:
        SweepError: an argument without ``NAME=``, a name given twice, or bad values
            (:func:`parse_values`).
    """
    settings: list[Setting] = []
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise SweepError(f"--set wants NAME=V1,V2,... or NAME=A..B, got {item!r}")
        if any(s.name == name for s in settings):
            raise SweepError(
                f"--set {name} is given twice; give all its values at once: --set {name}=V1,V2"
            )
        settings.append(Setting(name, parse_values(f"--set {name}", text)))
    return tuple(settings)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seed N``, ``--seed N1,N2`` or ``--seed A..B``: the runs' seeds.

    Raises:
        SweepError: a seed that is not an integer >= 0, one given twice (``00,0`` too: the
            same seed, which would run twice into one folder), or bad values
            (:func:`parse_values`).
    """
    seeds: list[int] = []
    for value in parse_values("--seed", text):
        if not _INTEGER.match(value):
            raise SweepError(f"--seed {text}: {value!r} is not a seed; seeds are integers >= 0")
        if int(value) in seeds:
            raise SweepError(f"--seed {text}: the seed {int(value)} is given twice; give it once")
        seeds.append(int(value))
    return tuple(seeds)


def plan_sweep(
    mission: Path,
    settings: Sequence[Setting],
    seeds: Sequence[int] = (0,),
    clock: str | None = None,
    naming: Sequence[str] | None = None,
) -> SweepPlan:
    """The product of the settings' values and the seeds, each run named from its settings.

    A run's directory is ``NAME=VALUE,NAME=VALUE`` over the ``--set`` settings, in the order
    of ``naming`` (the mission's parameters, for ``limbtree sweep``: the same sweep written
    with its ``--set`` flags in another order then finds, and keeps, the same folders; the
    command line's order when None), then ``seed=N`` when several seeds are swept (``run``
    when there is nothing to name it by).
    Integers of one setting are zero-padded to one width, so the folders sort in order;
    characters other than letters, digits and ``._+-`` become ``_``, and a name that would
    then be ambiguous, or a long value, gets a short hash of the value.

    Raises:
        SweepError: no seed; a setting named ``seed``.
    """
    if not seeds:
        raise SweepError("--seed: no seeds, so the product of the settings is empty")
    for setting in settings:
        if setting.name == "seed":
            raise SweepError(
                "--set seed: the runs' seed is given by --seed N1,N2 or --seed A..B, not by "
                "--set (a mission parameter named seed cannot be swept: the table's seed "
                "column is the runs' seed)"
            )
    parts = [_name_parts(s.name, s.values) for s in settings]
    rank = {name: i for i, name in enumerate(naming or ())}
    order = sorted(range(len(settings)), key=lambda i: rank.get(settings[i].name, len(rank)))
    seed_parts = _name_parts("seed", [str(seed) for seed in seeds]) if len(seeds) > 1 else None
    runs: list[PlannedRun] = []
    for combination in itertools.product(*(range(len(s.values)) for s in settings)):
        pairs = tuple((s.name, s.values[i]) for s, i in zip(settings, combination, strict=True))
        label = [parts[k][combination[k]] for k in order]
        for k, seed in enumerate(seeds):
            name = ",".join(label + ([seed_parts[k]] if seed_parts else [])) or "run"
            runs.append(PlannedRun(name, pairs, seed))
    return SweepPlan(mission, tuple(settings), tuple(seeds), clock, tuple(runs))


def _name_parts(name: str, values: Sequence[str]) -> list[str]:
    """``NAME=VALUE`` for each value, safe in a file name and distinct from each other."""
    width = max(len(v) for v in values) if all(_INTEGER.match(v) for v in values) else 0
    safe = [_UNSAFE.sub("_", v.zfill(width) if width else v) for v in values]
    parts = []
    for value, text in zip(values, safe, strict=True):
        if safe.count(text) > 1 or len(text) > _MAX_NAME_VALUE:
            text = f"{text[:_MAX_NAME_VALUE]}-{hashlib.sha1(value.encode()).hexdigest()[:8]}"
        parts.append(f"{_UNSAFE.sub('_', name)}={text}")
    return parts


def check_plan(plan: SweepPlan) -> tuple[SweepPlan, Mission]:
    """Check the plan against its mission before anything runs.

    Every ``--set`` name must be a parameter of the mission, and the mission must load with
    each value of each setting (the other settings at their first value); a mission with
    scheduled faults needs the sim clock.

    Returns:
        The plan as the mission reads it (its folders named in the order of the mission's
        parameters, its clock, its files' digest, its parameters' defaults and each
        setting's values as read), and the mission.

    Raises:
        MissionError: the mission file itself is wrong (``file:line:column`` lines).
        SweepError: naming an unknown parameter (and listing the mission's), or the value
            the mission refused and why.
    """
    from limbtree.trees.app import load
    from limbtree.trees.mission.errors import MissionError

    mission = load(plan.mission)
    declared = list(mission.parameters)
    for setting in plan.settings:
        if setting.name not in declared:
            listed = ", ".join(declared) if declared else "none (it has no parameters: section)"
            raise SweepError(
                f"--set {setting.name}: mission {mission.name} ({plan.mission}) has no "
                f"parameter {setting.name}; its parameters: {listed}"
            )
    first = {s.name: s.values[0] for s in plan.settings}
    trials = [first] + [{**first, s.name: value} for s in plan.settings for value in s.values[1:]]
    read: dict[str, dict[str, Any]] = {s.name: {} for s in plan.settings}
    for overrides in trials if plan.settings else []:
        try:
            loaded = load(plan.mission, overrides)
        except MissionError as exc:
            given = " ".join(f"--set {n}={v}" for n, v in overrides.items())
            raise SweepError(f"{given}: the mission does not load with it:\n{exc}") from None
        for name, text in overrides.items():
            read[name][text] = loaded.parameters[name]
    for setting in plan.settings:
        _refuse_the_same_value_twice(setting, read[setting.name])
    if (plan.clock or mission.clock) == "real" and mission.faults:
        raise SweepError(
            f"{plan.mission}: scheduled faults need the sim clock; sweep with --clock sim"
        )
    checked = dataclasses.replace(
        plan_sweep(plan.mission, plan.settings, plan.seeds, plan.clock, list(mission.parameters)),
        mission_clock=mission.clock,
        digest=mission_digest(mission.sources),
        defaults=dict(mission.parameters),
        read=read,
    )
    return checked, mission


def _refuse_the_same_value_twice(setting: Setting, read: Mapping[str, Any]) -> None:
    """Refuse two values of ``setting`` the mission reads as one (``10`` and ``10.0``).

    They would be one run planned twice: run twice (or kept twice from one folder) and
    counted as two groups of the table.

    Args:
        setting: the ``--set`` setting.
        read: its values as the mission reads them, by their text.

    Raises:
        SweepError: naming both texts and the value they stand for.
    """
    seen: dict[str, str] = {}
    for text in setting.values:
        value = read[text]
        key = json.dumps(_canonical(value), sort_keys=True)
        if key in seen:
            raise SweepError(
                f"--set {setting.name}={','.join(setting.values)}: {seen[key]} and {text} are "
                f"the same value of {setting.name} ({_shown(_canonical(value))}) for the "
                "mission; give it once"
            )
        seen[key] = text


def check_jobs(jobs: int | None) -> None:
    """Refuse ``--jobs`` below 1.

    Raises:
        SweepError: naming the value.
    """
    if jobs is not None and jobs < 1:
        raise SweepError(f"--jobs must be at least 1 (runs at a time), got {jobs}")


def run_arguments(plan: SweepPlan, run: PlannedRun) -> list[str]:
    """The ``limbtree run`` flags of one run, without the mission and ``--record``."""
    arguments = ["--headless", "--auto-confirm", "--seed", str(run.seed)]
    if plan.clock is not None:
        arguments += ["--clock", plan.clock]
    for name, value in run.settings:
        arguments += ["--set", f"{name}={value}"]
    return arguments


# Running -------------------------------------------------------------------------------


class RunStatus(Enum):
    """How a run of a sweep ended, as far as the sweep is concerned."""

    #: it ran in this sweep and finished (whatever its outcome)
    DONE = "done"
    #: it had finished in an earlier sweep (same settings): kept, not run again
    KEPT = "kept"
    #: it could not run: its process ended without a complete ``summary.json``
    ERROR = "error"
    #: it was running when the sweep was interrupted: aborted
    INTERRUPTED = "interrupted"
    #: the sweep was interrupted before it started
    NOT_RUN = "not_run"

    @property
    def finished(self) -> bool:
        """Whether the run has a complete record of a run that ended by itself."""
        return self in (RunStatus.DONE, RunStatus.KEPT)


@dataclass(frozen=True)
class RunResult:
    """One run of a sweep: its settings, status and summary.

    Attributes:
        run: the planned run.
        status: how it ended for the sweep.
        summary: its ``summary.json`` (None when it has none).
        exit_code: the exit status of ``limbtree run`` (None when kept or not run).
        message: why it failed or could not run (its summary's ``failure``, or the last
            lines of its output), or None.
        host: the machine it ran on (Ray), or None.
    """

    run: PlannedRun
    status: RunStatus
    summary: Mapping[str, Any] | None = None
    exit_code: int | None = None
    message: str | None = None
    host: str | None = None

    @property
    def outcome(self) -> str | None:
        """The run's outcome (SUCCESS, FAILURE, ABORTED), or None."""
        if self.summary is None:
            return None
        outcome = self.summary.get("outcome")
        return str(outcome) if outcome is not None else None


@dataclass(frozen=True)
class Finished:
    """What a backend reports about one run it started and that has ended.

    Attributes:
        index: the run's index in the plan.
        exit_code: the exit status of ``limbtree run`` (None: it never started or was
            killed before it reported one).
        output: its output (stdout and stderr), or the reason it could not start.
        interrupted: whether the sweep stopped it.
        host: the machine it ran on, or None.
    """

    index: int
    exit_code: int | None
    output: str
    interrupted: bool = False
    host: str | None = None


@dataclass(frozen=True)
class Job:
    """A run handed to a backend.

    Attributes:
        index: its index in the plan.
        directory: its record directory (``OUT/RUN``).
        arguments: its ``limbtree run`` flags without the mission and ``--record``.
    """

    index: int
    directory: Path
    arguments: tuple[str, ...]


class Backend(Protocol):
    """Where runs execute: local processes or a Ray cluster."""

    #: where the runs go, for the first progress line (``local processes``)
    description: str

    def capacity(self, jobs: int | None) -> int:
        """How many runs may be in flight at once, given ``--jobs`` (None: the default)."""
        ...

    def submit(self, job: Job) -> None:
        """Start a run; its record goes to ``job.directory`` (made, cleared of earlier runs)."""
        ...

    def wait(self, timeout_s: float) -> list[Finished]:
        """The runs that ended, waiting up to ``timeout_s`` [s] for one."""
        ...

    def stop(self, grace_s: float, signum: int = signal.SIGINT) -> list[Finished]:
        """Abort every run in flight (each closes its record); they are ``interrupted``.

        ``signum`` is the signal the sweep received (the runs get it too, where they can).
        """
        ...

    def close(self) -> None:
        """Release what the backend holds (processes, a cluster connection)."""
        ...


class LocalBackend:
    """Runs as local processes: ``limbtree run`` in a child process each.

    Args:
        mission: the mission file as the child is given it.
        command: the command that starts ``limbtree`` (this Python's, by default).
    """

    def __init__(self, mission: Path, command: Sequence[str] = LIMBTREE) -> None:
        self.mission = mission
        self.command = tuple(command)
        self.description = "local processes"
        self._running: dict[int, tuple[subprocess.Popen[bytes], Path]] = {}
        self._not_started: list[Finished] = []
        self._jobs = 1

    def capacity(self, jobs: int | None) -> int:
        """``--jobs`` (1 by default), which :meth:`submit` also uses to share the cores."""
        self._jobs = 1 if jobs is None else jobs
        return self._jobs

    def submit(self, job: Job) -> None:
        """Start ``limbtree run`` for the job; its output goes to ``run.log``.

        Each run's sim-clock agents share the machine's cores with the other runs' (one
        process per core and run, ``LIMBTREE_AGENT_PROCESSES``, unless it is set already).
        Each run aborts by itself if this process dies (``LIMBTREE_STOP_WITH``).
        """
        output = job.directory / OUTPUT_FILE
        command = [
            *self.command, "run", str(self.mission), *job.arguments,
            "--record", str(job.directory),
        ]  # fmt: skip
        env = {**os.environ, STOP_WITH_ENV: str(os.getpid())}
        if PROCESSES_ENV not in os.environ:
            env[PROCESSES_ENV] = str(max(1, agent_processes() // self._jobs))
        with output.open("wb") as sink:
            try:
                process = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                    env=env,
                )  # fmt: skip
            except OSError as exc:
                sink.write(f"cannot start {command[0]}: {exc}\n".encode())
                process = None
        if process is None:
            self._not_started.append(Finished(job.index, None, output.read_text()))
            return
        self._running[job.index] = (process, output)

    def wait(self, timeout_s: float) -> list[Finished]:
        """Poll the children until one ends or ``timeout_s`` passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            done = self._collect(interrupted=False)
            if done or time.monotonic() >= deadline or not self._running:
                return done
            time.sleep(min(0.05, timeout_s))

    def stop(self, grace_s: float, signum: int = signal.SIGINT) -> list[Finished]:
        """``signum`` to every child (each aborts, closes its record), then kill stragglers."""
        for process, _ in self._running.values():
            _signal(process, signum)
        deadline = time.monotonic() + grace_s
        while any(p.poll() is None for p, _ in self._running.values()):
            if time.monotonic() >= deadline:
                for process, _ in self._running.values():
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                break
            time.sleep(0.05)
        return self._collect(interrupted=True)

    def close(self) -> None:
        """Kill any child still running (only after :meth:`stop` failed to end it)."""
        for process, _ in self._running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
        self._running.clear()

    def _collect(self, *, interrupted: bool) -> list[Finished]:
        done, self._not_started = self._not_started, []
        for index, (process, output) in list(self._running.items()):
            code = process.poll()
            if code is None:
                continue
            del self._running[index]
            text = output.read_text(errors="replace") if output.exists() else ""
            done.append(Finished(index, code, text, interrupted=interrupted))
        return done


def _signal(process: subprocess.Popen[bytes], signum: int) -> None:
    """Send ``signum`` to a child that may have ended already."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)


@dataclass
class SweepResult:
    """A sweep's runs and how it ended.

    Attributes:
        plan: the plan.
        out: the sweep's folder.
        results: one per planned run, in plan order.
        interrupted: the signal that stopped the sweep (``Ctrl-C``, ``SIGTERM``), or None.
        elapsed_s: the sweep's wall time [s].
    """

    plan: SweepPlan
    out: Path
    results: list[RunResult]
    interrupted: str | None = None
    elapsed_s: float = 0.0

    def count(self, status: RunStatus) -> int:
        """How many runs ended with ``status``."""
        return sum(1 for r in self.results if r.status is status)

    @property
    def exit_code(self) -> int:
        """0 when every run finished (whatever its outcome), else 1.

        When a signal stopped the sweep: 128 + its number, as a shell reports it (130 on
        Ctrl-C, 143 on SIGTERM).
        """
        if self.interrupted is not None:
            return 128 + _signal_named(self.interrupted)
        return 0 if all(r.status.finished for r in self.results) else 1


def run_sweep(
    plan: SweepPlan,
    out: Path,
    *,
    jobs: int | None = None,
    backend: Backend | None = None,
    stream: TextIO | None = None,
    grace_s: float = STOP_GRACE_S,
) -> SweepResult:
    """Run the plan's runs into ``out`` (``out/RUN`` each), skipping those done before.

    SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the sweep: the runs in flight are aborted (they
    get ``grace_s`` to close their records, then are killed) and marked interrupted.

    Args:
        plan: the runs (:func:`plan_sweep`, checked by :func:`check_plan`).
        out: the sweep's folder (made if missing).
        jobs: runs at a time (None: the backend's default: 1 locally, all on Ray).
        backend: where runs execute; None: :class:`LocalBackend`.
        stream: where progress goes (a bar on a terminal, plain lines otherwise);
            ``sys.stdout`` when None.
        grace_s: how long aborted runs get to close their records [s].

    Returns:
        Every run's result, in plan order.

    Raises:
        SweepError: ``jobs`` below 1, or ``out`` cannot be written.
    """
    check_jobs(jobs)
    stream = sys.stdout if stream is None else stream
    backend = LocalBackend(plan.mission) if backend is None else backend
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {out} is a file, not a folder: give a folder for the sweep")
    record = [name for name in RECORD_FILES if (out / name).is_file()]
    if record:  # (its runs' folders and table would go in among a run's own files)
        raise SweepError(
            f"--out {out} is a run's record (it holds {' and '.join(record)}), not a sweep's "
            "folder: give another --out"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SweepError(f"--out {out}: cannot make the sweep's folder: {exc}") from None
    results: dict[int, RunResult] = {}
    earlier: dict[str, Path] | None = None
    for index, run in enumerate(plan.runs):
        kept = kept_result(plan, run, out / run.name)
        if kept is None:  # the same run, in a folder another sweep named (--seed 1 after 0..3)
            earlier = _runs_by_identity(plan, out) if earlier is None else earlier
            keys = _identity_keys(run.identity(plan))
            folder = next((earlier[key] for key in keys if key in earlier), None)
            if folder is not None and folder.name != run.name:
                kept = kept_result(plan, run, folder)
                if kept is not None:  # its row names the folder that holds it
                    kept = dataclasses.replace(kept, run=dataclasses.replace(run, name=folder.name))
        if kept is not None:
            results[index] = kept
    pending = [i for i in range(len(plan.runs)) if i not in results]
    taken = [
        (plan.runs[i].name, why)
        for i in pending
        if (why := other_run(plan, plan.runs[i], out / plan.runs[i].name)) is not None
    ]
    if taken:  # (before anything runs: the sweep would have to clear them)
        listed = "; ".join(f"{out / name}: {why}" for name, why in taken[:5])
        more = f"; and {len(taken) - 5} more" if len(taken) > 5 else ""
        one = len(taken) == 1
        raise SweepError(
            f"--out {out}: {len(taken)} of this sweep's run folders "
            f"{'holds' if one else 'hold'} another finished run, which it will not clear: "
            f"{listed}{more}. Sweep into another --out, or remove "
            f"{'that folder to run it' if one else 'those folders to run them'} here"
        )
    capacity = backend.capacity(jobs)
    progress = SweepProgress(stream, len(plan.runs), len(results))
    progress.start(plan, out, len(pending), capacity, backend.description)
    started = time.monotonic()
    interrupted: str | None = None
    in_flight: set[int] = set()
    try:
        with signals_abort() as signals:
            while pending or in_flight:
                if signals.received is not None:
                    interrupted = signals.received
                    break
                while pending and len(in_flight) < capacity:
                    index = pending.pop(0)
                    problem = _submit(plan, out, index, backend)
                    if problem is None:
                        in_flight.add(index)
                        progress.running(len(in_flight))
                    else:
                        results[index] = problem
                        progress.finished(problem, len(in_flight))
                progress.refresh()
                for finished in backend.wait(0.25):
                    in_flight.discard(finished.index)
                    # A Ctrl-C at the terminal reaches the runs too: one that ends ABORTED
                    # after it came was interrupted, not finished.
                    result = _result(plan, out, finished, signals.received is not None)
                    results[finished.index] = result
                    progress.finished(result, len(in_flight))
            if interrupted is not None:
                progress.message(
                    f"{interrupted}: stopping the {_plural(len(in_flight), 'run')} in progress"
                )
                for finished in backend.stop(grace_s, _signal_named(interrupted)):
                    in_flight.discard(finished.index)
                    results[finished.index] = _result(plan, out, finished)
    finally:
        backend.close()
        progress.close()
    for index in in_flight | set(pending):
        status = RunStatus.INTERRUPTED if index in in_flight else RunStatus.NOT_RUN
        results[index] = RunResult(plan.runs[index], status)
    return SweepResult(
        plan,
        out,
        [results[i] for i in range(len(plan.runs))],
        interrupted,
        time.monotonic() - started,
    )


def _signal_named(name: str) -> signal.Signals:
    """The signal :class:`~limbtree.trees.interrupts.AbortSignals` noted as ``name``."""
    return signal.SIGINT if name == "Ctrl-C" else signal.Signals[name]


def _identity_keys(identity: Mapping[str, Any]) -> list[str]:
    """The keys a run is found by: by its parameters' values when known, then as written.

    (A ``sweep_run.json`` written before the values were kept has only the settings as
    written.)
    """
    same = {key: identity.get(key) for key in IDENTITY_KEYS if key != "settings"}
    keys = []
    if identity.get(PARAMETERS_KEY) is not None:
        keys.append(json.dumps({**same, PARAMETERS_KEY: identity[PARAMETERS_KEY]}, sort_keys=True))
    keys.append(json.dumps({**same, "settings": identity.get("settings")}, sort_keys=True))
    return keys


def mission_digest(sources: Sequence[Path]) -> str:
    """The SHA-256 of a mission's files (the mission file, then its includes), in hex."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(str(source).encode() + b"\0")
        with contextlib.suppress(OSError):  # (read a moment ago: gone, it counts as empty)
            digest.update(Path(source).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def _marker_identity(plan: SweepPlan, marker: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``sweep_run.json`` says its run was.

    A marker without a clock (``--clock`` not given) ran the mission's.
    """
    identity = {key: marker.get(key) for key in (*IDENTITY_KEYS, PARAMETERS_KEY)}
    identity["clock"] = identity["clock"] or plan.mission_clock
    return identity


def _runs_by_identity(plan: SweepPlan, out: Path) -> dict[str, Path]:
    """The run folders under ``out`` by what their ``sweep_run.json`` says they ran."""
    found: dict[str, Path] = {}
    for marker_path in sorted(out.glob(f"*/{RUN_FILE}")):
        marker = _read_json(marker_path)
        if marker is None:
            continue
        identity = _marker_identity(plan, marker)
        found.setdefault(_identity_keys(identity)[0], marker_path.parent)
    return found


def _finished_summary(directory: Path) -> dict[str, Any] | None:
    """The summary of the finished run recorded in ``directory``, or None."""
    summary = _read_json(directory / "summary.json")
    return summary if summary is not None and summary.get("outcome") in OUTCOMES else None


def other_run(plan: SweepPlan, run: PlannedRun, directory: Path) -> str | None:
    """What finished run ``directory`` holds other than ``run``, or None (none, or ``run``).

    A sweep clears a run's folder before it runs it there: that is for an attempt that did
    not finish, never for another finished run (another sweep's, of another mission, other
    settings or clock, or of the mission's files before they changed).
    """
    if _finished_summary(directory) is None:
        return None
    return _other_than(plan, run, _read_json(directory / RUN_FILE))


def _other_than(plan: SweepPlan, run: PlannedRun, marker: Mapping[str, Any] | None) -> str | None:
    """How the finished run a ``sweep_run.json`` describes differs from ``run``, or None."""
    if marker is None:
        return "a finished record limbtree sweep did not make (no sweep_run.json)"
    theirs, ours = _marker_identity(plan, marker), run.identity(plan)
    if theirs["mission"] != ours["mission"]:
        return f"a run of another mission ({theirs['mission']})"
    by_value = theirs[PARAMETERS_KEY] is not None and ours.get(PARAMETERS_KEY) is not None
    compared = [k for k in IDENTITY_KEYS if k != "settings" or not by_value]
    differs = [key for key in compared if theirs[key] != ours[key]]
    given = [f"{key} {theirs[key]}" for key in differs]
    if by_value and theirs[PARAMETERS_KEY] != ours[PARAMETERS_KEY]:
        mine, other = ours[PARAMETERS_KEY], theirs[PARAMETERS_KEY]
        changed = sorted(n for n in {*mine, *other} if mine.get(n) != other.get(n))
        differs.append("settings")
        given.append(", ".join(f"{n}={_shown(other.get(n))}" for n in changed))
    if differs:
        return f"a run of other {' and '.join(differs)} ({', '.join(given)})"
    digest = marker.get(DIGEST_KEY)
    if digest is not None and plan.digest is not None and digest != plan.digest:
        return "a run of the mission's files as they were before they changed"
    return None


def kept_result(plan: SweepPlan, run: PlannedRun, directory: Path) -> RunResult | None:
    """The run's earlier result, when its directory holds a finished run of its settings."""
    marker = _read_json(directory / RUN_FILE)
    summary = _finished_summary(directory)
    if marker is None or summary is None:
        return None
    if marker.get("status") != RunStatus.DONE.value or _other_than(plan, run, marker):
        return None
    return RunResult(
        run,
        RunStatus.KEPT,
        summary,
        marker.get("exit"),
        summary.get("failure"),
        marker.get("host"),
    )


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when it is missing, cut short or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _submit(plan: SweepPlan, out: Path, index: int, backend: Backend) -> RunResult | None:
    """Clear the run's directory of an earlier attempt, mark it running, start it.

    Returns:
        None, or the run's error row when its directory cannot be written.
    """
    run = plan.runs[index]
    directory = out / run.name
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = lock_record_dir(directory)
        if lock is None:
            return RunResult(
                run,
                RunStatus.ERROR,
                message=f"{directory}: a run is still writing its record there (another "
                "sweep's, or one a killed sweep left); left alone: run the sweep again once "
                "it has ended",
            )
        os.close(lock)  # (the run takes it again)
        for name in ("summary.json", "log.msgpack", OUTPUT_FILE, RUN_FILE):
            (directory / name).unlink(missing_ok=True)
        for log in (directory / "agents").glob("*.log"):
            log.unlink()
        for image in directory.glob("*.png"):  # (limbtree report's, of the attempt)
            image.unlink()
        _write_marker(plan, run, directory, "running", None, None)
    except OSError as exc:
        return RunResult(run, RunStatus.ERROR, message=f"cannot write {directory}: {exc}")
    backend.submit(Job(index, directory, tuple(run_arguments(plan, run))))
    return None


def _write_marker(
    plan: SweepPlan,
    run: PlannedRun,
    directory: Path,
    status: str,
    exit_code: int | None,
    host: str | None,
) -> None:
    marker = {
        "v": 1,
        **run.identity(plan),  # (with the parameters' values once the plan was checked)
        DIGEST_KEY: plan.digest,
        "status": status,
        "exit": exit_code,
        "host": host,
    }
    (directory / RUN_FILE).write_text(json.dumps(marker, indent=2) + "\n")


def _result(plan: SweepPlan, out: Path, finished: Finished, signalled: bool = False) -> RunResult:
    """A run's result from its directory and what the backend said.

    ``signalled``: the sweep received a signal; a run that then ended ABORTED (or without a
    summary) was interrupted by it.
    """
    run = plan.runs[finished.index]
    directory = out / run.name
    summary = _read_json(directory / "summary.json")
    if summary is not None and summary.get("outcome") not in OUTCOMES:
        summary = None
    aborted = summary is None or summary.get("outcome") == "ABORTED"
    # A run that ended its mission (SUCCESS or FAILURE) before the signal reached it is
    # done, even when the sweep reaped it while stopping: it is kept, not run again.
    if aborted and (finished.interrupted or signalled):
        status = RunStatus.INTERRUPTED
    elif summary is None:
        status = RunStatus.ERROR
    else:
        status = RunStatus.DONE
    if summary is not None and summary.get("failure") and status is not RunStatus.ERROR:
        message: str | None = str(summary["failure"])
    elif status is RunStatus.ERROR:
        message = _last_lines(finished.output) or f"exit status {finished.exit_code}"
    else:
        message = None
    _write_marker(plan, run, directory, status.value, finished.exit_code, finished.host)
    return RunResult(run, status, summary, finished.exit_code, message, finished.host)


def _last_lines(output: str, count: int = 3) -> str:
    """Why a run could not run, from its output, joined by `` | ``.

    ``limbtree run``'s error (its line ``limbtree run: ...`` and the lines after it), or
    else the last ``count`` lines (a traceback's exception, a crash's message).
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith("limbtree run:")]
    return " | ".join(lines[starts[-1] :] if starts else lines[-count:])


# Progress ------------------------------------------------------------------------------


class SweepProgress:
    """A progress bar on a terminal; plain lines (one per run) otherwise.

    Args:
        stream: where to print.
        total: runs in the sweep.
        kept: runs kept from an earlier sweep.
    """

    def __init__(self, stream: TextIO, total: int, kept: int) -> None:
        self.stream = stream
        self.total = total
        self.done = kept
        self.errors = 0
        self.in_flight = 0
        self.tty = _isatty(stream)
        self._started = time.monotonic()
        self._ran = 0
        self._bar_shown = False
        self._drawn = self._started

    def start(self, plan: SweepPlan, out: Path, to_run: int, capacity: int, where: str) -> None:
        """The first line: how many runs, how many kept, where."""
        kept = self.done
        text = f"sweep: {_plural(self.total, 'run')} of {plan.mission} into {out}"
        if kept:
            text += f" ({kept} finished before: kept)"
        if to_run:
            text += f"; {_plural(to_run, 'run')} to do, up to {capacity} at a time on {where}"
        self.message(text)

    def running(self, in_flight: int) -> None:
        """A run started."""
        self.in_flight = in_flight
        self._bar()

    def finished(self, result: RunResult, in_flight: int) -> None:
        """A run ended: its line, then the bar."""
        self.done += 1
        self._ran += 1
        self.in_flight = in_flight
        if result.status is RunStatus.ERROR:
            self.errors += 1
        width = len(str(self.total))
        self.message(f"[{self.done:>{width}}/{self.total}] {result.run.name}: {_run_text(result)}")

    def message(self, text: str) -> None:
        """A line (above the bar on a terminal)."""
        if self.tty and self._bar_shown:
            self.stream.write("\r\x1b[K")
        print(text, file=self.stream, flush=True)
        self._bar()

    def refresh(self) -> None:
        """Redraw the bar once a second (its clock and estimate move between runs)."""
        if self.tty and time.monotonic() - self._drawn >= 1.0:
            self._bar()

    def close(self) -> None:
        """Clear the bar."""
        if self.tty and self._bar_shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._bar_shown = False

    def _bar(self) -> None:
        if not self.tty or self.done >= self.total:
            return
        width = 30
        filled = round(width * self.done / self.total) if self.total else width
        elapsed = time.monotonic() - self._started
        text = (
            f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total}, "
            f"{self.in_flight} running"
        )
        if self.errors:
            text += f", {self.errors} could not run"
        text += f", {_clock(elapsed)}"
        if self._ran and self.done < self.total:
            left = elapsed / self._ran * (self.total - self.done)
            text += f", ~{_clock(left)} left"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self._bar_shown = True
        self._drawn = time.monotonic()


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    """``1:05`` or ``1:02:03``."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _run_text(result: RunResult) -> str:
    """``SUCCESS in 12.0 s mission time (3.1 s wall)``, or why it could not run."""
    if result.status is RunStatus.ERROR:
        why = result.message or ""
        why = why if len(why) <= 300 else why[:300] + "... (see its run.log)"
        if result.exit_code is None:  # (no process ran: the folder was refused)
            return f"could not run: {why}"
        return f"could not run (exit status {result.exit_code}): {why}"
    summary = result.summary or {}
    if result.status is RunStatus.INTERRUPTED:
        return "interrupted" + (f" ({summary.get('outcome')})" if summary else "")
    text = (
        f"{result.outcome} in {_number(summary.get('sim_time_s'))} s mission time "
        f"({_number(summary.get('wall_time_s'))} s wall)"
    )
    if result.host:
        text += f" on {result.host}"
    if result.message:
        text += f": {result.message}"
    return text


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "?"


# The table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepTable:
    """The sweep's rows, as ``sweep.csv`` holds them.

    Attributes:
        columns: the column names, in order: ``run``, the settings, ``status``,
            ``outcome``, ``exit``, ``sim_time_s``, ``wall_time_s``, the summary's counts,
            ``metrics.*``, ``failure``.
        rows: one map per run, column -> value (absent: empty).
        numeric: the columns that hold numbers (the figures the table and plot may show).
        settings: the setting columns (the ``--set`` names, then ``seed``).
    """

    columns: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]
    numeric: tuple[str, ...]
    settings: tuple[str, ...]

    @property
    def metrics(self) -> tuple[str, ...]:
        """The numeric ``metrics.*`` columns."""
        return tuple(c for c in self.numeric if c.startswith("metrics."))

    def metric(self, name: str | None) -> str:
        """The column ``--metric name`` means: the first metric when None.

        ``name`` may be a column (``metrics.align.final_dd_mm``, ``sim_time_s``) or a metric
        without its ``metrics.`` prefix. Without any metric, ``sim_time_s``.

        Raises:
            SweepError: ``name`` is no numeric column (the valid ones listed).
        """
        if name is None:
            return self.metrics[0] if self.metrics else "sim_time_s"
        for candidate in (name, f"metrics.{name}"):
            if candidate in self.numeric:
                return candidate
        listed = ", ".join(self.numeric) or "none"
        raise SweepError(f"--metric {name}: no run has that figure; the numeric columns: {listed}")


def flatten_numbers(value: Any, prefix: str) -> Iterator[tuple[str, int | float]]:
    """Every number in a nest of maps and lists, keyed ``prefix.key.0.key``.

    Booleans, text and nulls are left out.
    """
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        yield prefix, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from flatten_numbers(item, f"{prefix}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from flatten_numbers(item, f"{prefix}.{i}")


def sweep_table(result: SweepResult) -> SweepTable:
    """The sweep's rows (``sweep.csv``): one per run, in plan order."""
    settings = result.plan.names
    head = ("run", *settings, "status", "outcome", "exit", "sim_time_s", "wall_time_s")
    numeric: dict[str, None] = {"sim_time_s": None, "wall_time_s": None}
    numeric.update(dict.fromkeys(SUMMARY_NUMBERS))
    metrics: dict[str, None] = {}
    rows: list[dict[str, Any]] = []
    for run_result in result.results:
        run = run_result.run
        row: dict[str, Any] = {"run": run.name, **run.overrides, "seed": run.seed}
        row["status"] = run_result.status.value
        row["outcome"] = run_result.outcome
        row["exit"] = run_result.exit_code
        summary = run_result.summary or {}
        for key in ("sim_time_s", "wall_time_s", *SUMMARY_NUMBERS):
            value = summary.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                row[key] = value
        for key, value in flatten_numbers(summary.get("metrics") or {}, "metrics"):
            row[key] = value
            metrics.setdefault(key, None)
        row["failure"] = run_result.message
        rows.append(row)
    columns = (*head, *SUMMARY_NUMBERS, *metrics, "failure")
    return SweepTable(columns, tuple(rows), (*numeric, *metrics), settings)


def tabled_runs(path: Path) -> dict[str, str]:
    """Each run of a sweep table at ``path`` and its ``status``; empty when none can be read."""
    try:
        with path.open(newline="") as source:
            return {
                row["run"]: row.get("status") or ""
                for row in csv.DictReader(source)
                if row.get("run")
            }
    except (OSError, UnicodeDecodeError, csv.Error, KeyError):
        return {}


def replaced_table_note(csv_path: Path, tabled: Mapping[str, str], ours: Iterable[str]) -> str:
    """What a sweep says when ``csv_path`` held another sweep's table (empty when it did not).

    ``tabled`` is the old table's runs and statuses; ``ours`` this sweep's runs. Only the
    old sweep's finished runs have records its command keeps: the others (errors,
    interrupted, not run) it runs again.
    """
    replaced = sorted(set(tabled) - set(ours))
    if not replaced:
        return ""
    finished = {RunStatus.DONE.value, RunStatus.KEPT.value}
    kept = sum(1 for name in replaced if tabled[name] in finished)

    def listing(names: Sequence[str]) -> str:
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return ", ".join(names[:3]) + more

    if kept == len(replaced):
        then = (
            "those runs' records are kept in the folder, and that sweep's command writes its "
            "table again without running them"
        )
    elif kept == 0:
        then = "those runs had not finished: that sweep's command runs them"
    else:
        then = (
            f"{_plural(kept, 'run')} of them finished and {'is' if kept == 1 else 'are'} kept "
            "in the folder, and that sweep's command runs only the "
            f"{len(replaced) - kept} that had not"
        )
    return (
        f"note: {csv_path} and sweep.png held another sweep's table ({listing(replaced)}, not "
        f"in this one); {then}"
    )


def write_csv(table: SweepTable, path: Path) -> Path:
    """Write the table as CSV (empty cells for missing values); returns ``path``.

    Raises:
        SweepError: the file cannot be written.
    """
    try:
        with path.open("w", newline="") as sink:
            writer = csv.writer(sink)
            writer.writerow(table.columns)
            for row in table.rows:
                writer.writerow(["" if row.get(c) is None else row[c] for c in table.columns])
    except OSError as exc:
        raise SweepError(f"cannot write {path}: {exc}") from None
    return path


@dataclass(frozen=True)
class Group:
    """The runs of one condition: the rows whose ``by`` settings have these values.

    Attributes:
        key: the values of the ``by`` settings (text), in order.
        rows: its rows, in plan order.
    """

    key: tuple[str, ...]
    rows: tuple[Mapping[str, Any], ...]

    def label(self, by: Sequence[str]) -> str:
        """``planner=ramp, rock_mm=100``, or ``all runs``."""
        return ", ".join(f"{n}={v}" for n, v in zip(by, self.key, strict=True)) or "all runs"

    def values(self, column: str) -> list[float]:
        """The column's numbers over the group's finished runs."""
        return [
            float(row[column])
            for row in self.rows
            if row.get("status") in (RunStatus.DONE.value, RunStatus.KEPT.value)
            and isinstance(row.get(column), int | float)
            and math.isfinite(float(row[column]))
        ]


def check_by(by: Sequence[str], plan: SweepPlan) -> tuple[str, ...]:
    """The ``--by`` names, each a setting of the sweep, each once.

    Raises:
        SweepError: an empty name (``--by a,,b``), a name given twice, or a name that is
            not a setting (the settings listed).
    """
    given = ",".join(by)
    for index, name in enumerate(by):
        if not name:
            raise SweepError(f"--by {given}: an empty name between two commas; remove it")
        if name in by[:index]:
            raise SweepError(f"--by {given}: {name} is given twice; give it once")
        if name not in plan.names:
            raise SweepError(
                f"--by {name}: not a setting of this sweep; its settings: {', '.join(plan.names)}"
            )
    return tuple(by)


def group_rows(table: SweepTable, by: Sequence[str]) -> list[Group]:
    """The rows grouped by the values of ``by``, groups in order of first appearance."""
    groups: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for row in table.rows:
        groups.setdefault(tuple(str(row[name]) for name in by), []).append(row)
    return [Group(key, tuple(rows)) for key, rows in groups.items()]


def table_columns(
    table: SweepTable, metric: str | None = None, most: int = MAX_TABLE_METRICS
) -> tuple[list[str], int]:
    """The figures the printed table shows, and how many metric columns it leaves out.

    ``sim_time_s`` and ``wall_time_s``; the summary's counts that are not 0 in every run
    (faults, recoveries, the command-state distance); the chosen ``metric`` first, then
    the other metrics, at most ``most`` of them.
    """
    shown = ["sim_time_s", "wall_time_s"]
    for key in SUMMARY_NUMBERS[1:]:
        if any(row.get(key) not in (None, 0) for row in table.rows):
            shown.append(key)
    metrics = list(table.metrics)
    if metric is not None and metric in metrics:
        metrics.remove(metric)
        metrics.insert(0, metric)
    elif metric is not None and metric not in shown:
        shown.append(metric)
    return shown + metrics[:most], max(0, len(metrics) - most)


def format_table(
    table: SweepTable, by: Sequence[str], metric: str | None = None, width: int = TABLE_WIDTH
) -> str:
    """The printed table of the groups, each figure as mean ± standard deviation.

    One line per group when that fits in ``width`` characters: the ``by`` settings,
    ``runs`` (how many), ``outcomes`` (``3 SUCCESS``, ``1 FAILURE``, ``1 could not
    run``...), then each figure of :func:`table_columns` over the group's finished runs
    (``mean ± sd``, the sample standard deviation; the mean alone for one run; ``(n=k)``
    when only k runs have it). Otherwise one column per group and one line per figure
    (up to :data:`MAX_TALL_METRICS` metrics). Metrics are named without ``metrics.``.
    """
    groups = group_rows(table, by)
    figures, left_out = table_columns(table, metric)
    wide = _wide_table(groups, by, figures)
    if max(len(line) for line in wide) > width:
        figures, left_out = table_columns(table, metric, MAX_TALL_METRICS)
        tall = _tall_table(groups, by, figures)
        if max(len(line) for line in tall) < max(len(line) for line in wide):
            wide = tall
    if left_out:
        wide.append(f"({_plural(left_out, 'more metric column')} in sweep.csv)")
    return "\n".join(wide)


def _group_cells(group: Group, figures: Sequence[str]) -> list[str]:
    """``runs``, ``outcomes`` and each figure's mean ± sd, for one group."""
    finished = sum(1 for r in group.rows if r.get("status") in ("done", "kept"))
    cells = [str(len(group.rows)), _outcomes(group)]
    return cells + [_mean_sd(group.values(column), finished) for column in figures]


def _short(column: str) -> str:
    return column.removeprefix("metrics.")


def _wide_table(groups: Sequence[Group], by: Sequence[str], figures: Sequence[str]) -> list[str]:
    """One line per group."""
    header = [*by, "runs", "outcomes", *(_short(f) for f in figures)]
    lines = [[*group.key, *_group_cells(group, figures)] for group in groups]
    right = {len(by)} | set(range(len(by) + 2, len(header)))  # counts and figures
    return _render([header, *lines], right, rule=True)


def _tall_table(groups: Sequence[Group], by: Sequence[str], figures: Sequence[str]) -> list[str]:
    """One column per group, one line per figure."""
    columns = [_group_cells(group, figures) for group in groups]
    names = ["runs", "outcomes", *(_short(f) for f in figures)]
    header = ["", *(group.label(by) for group in groups)]
    lines = [[name, *(column[i] for column in columns)] for i, name in enumerate(names)]
    return _render([header, *lines], set(range(1, len(header))), rule=True)


def _render(rows: Sequence[Sequence[str]], right: set[int], *, rule: bool) -> list[str]:
    """Aligned columns two spaces apart; ``right``: the columns aligned right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]

    def render(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    lines = [render(row) for row in rows]
    if rule:
        lines.insert(1, render(["-" * w for w in widths]))
    return lines


def _outcomes(group: Group) -> str:
    """``3 SUCCESS, 1 FAILURE, 1 could not run``."""
    counts: dict[str, int] = {}
    for row in group.rows:
        status = row.get("status")
        if status in (RunStatus.DONE.value, RunStatus.KEPT.value):
            what = str(row.get("outcome"))
        elif status == RunStatus.ERROR.value:
            what = "could not run"
        elif status == RunStatus.NOT_RUN.value:
            what = "not run"
        else:
            what = str(status)
        counts[what] = counts.get(what, 0) + 1
    return ", ".join(f"{n} {what}" for what, n in counts.items())


def _mean_sd(values: Sequence[float], finished: int) -> str:
    """``12.3 ± 0.4``; the mean alone for one value; ``-`` for none."""
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        text = _fmt(mean)
    else:
        sd = statistics.stdev(values)
        # Rounding noise of equal values (1 ± 2.8e-16) is no spread.
        text = _rounded(mean, sd) if sd > 1e-12 * max(1.0, abs(mean)) else f"{_fmt(mean)} ± 0"
    if len(values) < finished:
        text += f" (n={len(values)})"
    return text


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _rounded(mean: float, sd: float) -> str:
    """``mean ± sd``, the sd to two significant figures and the mean to the same place.

    ``0.023 ± 0.017``, not ``0.023 ± 0.01705``; ``12350 ± 230``. Figures too small or too
    large for that in plain decimals keep four significant figures each.
    """
    places = 1 - math.floor(math.log10(sd))  # (decimal places of the sd's second figure)
    if not -6 <= places <= 8:
        return f"{_fmt(mean)} ± {_fmt(sd)}"
    if places > 0:
        return f"{mean:.{places}f} ± {sd:.{places}f}"
    return f"{round(mean, places):.0f} ± {round(sd, places):.0f}"


#: Units of metric names by their ending (the project's names carry their unit last).
_METRIC_UNITS: Final = (
    ("_m_s2", "m/s²"),
    ("_kg_m2_s", "kg m²/s"),
    ("_kg_m_s", "kg m/s"),
    ("_mm_s", "mm/s"),
    ("_deg_s", "deg/s"),
    ("_mm", "mm"),
    ("_deg", "deg"),
    ("_rad", "rad"),
    ("_m3", "m³"),
    ("_ms", "ms"),
    ("_hz", "Hz"),
    ("_nm", "N m"),
    ("_n", "N"),
    ("_j", "J"),
    ("_m", "m"),
    ("_s", "s"),
)


def metric_unit(metric: str) -> str:
    """The unit a metric's name ends in (``metrics.climb.max_grip_force_n``: N), or ``""``."""
    name = metric.rsplit(".", 1)[-1].lower()
    return next((unit for ending, unit in _METRIC_UNITS if name.endswith(ending)), "")


def draw_plot(
    table: SweepTable, by: Sequence[str], metric: str, path: Path, title: str
) -> Path | None:
    """Draw ``metric`` per group: a box over the group's runs and each run as a point.

    Runs that did not succeed are drawn as red crosses. Nothing is drawn (None returned)
    when no finished run has the metric.

    Raises:
        SweepError: the image cannot be written.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = plot_figure(table, by, metric, title)
    if figure is None:
        return None
    FigureCanvasAgg(figure)
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise SweepError(f"cannot write {path}: {exc}") from None
    return path


def plot_figure(table: SweepTable, by: Sequence[str], metric: str, title: str) -> Any:
    """:func:`draw_plot`'s matplotlib Figure, or None when no finished run has ``metric``."""
    from matplotlib.figure import Figure

    groups = group_rows(table, by)
    if not any(group.values(metric) for group in groups):
        return None
    figure = Figure(figsize=(max(6.0, 1.2 * len(groups) + 2.0), 4.5), layout="constrained")
    axes = figure.subplots()
    data = [group.values(metric) for group in groups]
    positions = list(range(1, len(groups) + 1))
    drawn = [(p, d) for p, d in zip(positions, data, strict=True) if d]
    axes.boxplot(
        [d for _, d in drawn],
        positions=[p for p, _ in drawn],
        widths=0.5,
        showfliers=False,
        medianprops={"color": "#1565c0"},
    )
    labelled: set[str] = set()
    for position, group in zip(positions, groups, strict=True):
        rows = [
            row
            for row in group.rows
            if row.get("status") in ("done", "kept") and isinstance(row.get(metric), int | float)
        ]
        for k, row in enumerate(rows):
            offset = 0.0 if len(rows) == 1 else -0.18 + 0.36 * k / (len(rows) - 1)
            good = row.get("outcome") == "SUCCESS"
            label = "SUCCESS" if good else "FAILURE or ABORTED"
            axes.plot(
                position + offset,
                float(row[metric]),
                marker="o" if good else "x",
                color="#2e7d32" if good else "#c62828",
                alpha=0.8,
                ms=5,
                lw=0,
                label=None if label in labelled else label,
            )
            labelled.add(label)
    if labelled:  # (a cross or a dot says what it is, even when all runs are alike)
        axes.legend(loc="best", fontsize="small")
    labels = [f"{g.label(by)}\n(n={len(g.values(metric))})" for g in groups]
    # Side by side, labels longer than their slot run into each other: slant them.
    slanted = max(len(g.label(by)) for g in groups) > 16 and len(groups) > 3
    axes.set_xticks(positions, labels, fontsize="small")
    if slanted:
        axes.tick_params(axis="x", labelrotation=30)
        for tick in axes.get_xticklabels():
            tick.set_horizontalalignment("right")
            tick.set_rotation_mode("anchor")
    axes.set_xlim(0.4, len(groups) + 0.6)
    unit = metric_unit(metric)
    axes.set_ylabel(f"{metric} [{unit}]" if unit else metric)
    axes.grid(True, axis="y", alpha=0.3)
    axes.set_title(title, fontsize="medium")
    return figure


# Ray -----------------------------------------------------------------------------------


def mission_bundle(mission: Mission) -> tuple[dict[str, bytes], str]:
    """The mission's files (it and its includes) by path under their common folder.

    Returns:
        relative path -> contents, and the mission file's relative path.
    """
    sources = [Path(source).resolve() for source in mission.sources]
    root = Path(os.path.commonpath([source.parent for source in sources]))
    files = {str(source.relative_to(root)): source.read_bytes() for source in sources}
    return files, str(sources[0].relative_to(root))


def ray_run(
    files: Mapping[str, bytes], mission: str, arguments: Sequence[str], grace_s: float
) -> dict[str, Any]:
    """A Ray task: one ``limbtree run`` in a scratch folder of the worker; its record back.

    The mission files are written under the scratch folder (their layout kept, so includes
    resolve) and the run records into it; the task returns the record's files. When the
    task is cancelled (``ray.cancel`` raises ``KeyboardInterrupt`` in it), the run gets
    SIGTERM (a Ray worker blocks SIGINT, and its children inherit that), aborts and closes
    its record, which is returned all the same.

    Args:
        files: the mission's files (:func:`mission_bundle`).
        mission: the mission file's path among them.
        arguments: the run's flags without the mission and ``--record``.
        grace_s: when the task is cancelled, how long the run gets to close its record [s].

    Returns:
        ``{"exit", "output", "files": {relative path: bytes}, "host", "interrupted"}``.
    """
    import socket

    with tempfile.TemporaryDirectory(prefix="limbtree-sweep-") as scratch:
        root = Path(scratch) / "mission"
        for name, contents in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(contents)
        record = Path(scratch) / "record"
        output = Path(scratch) / OUTPUT_FILE
        command = [*LIMBTREE, "run", mission, *arguments, "--record", str(record)]
        with output.open("wb") as sink:
            process = subprocess.Popen(
                command, cwd=root, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT
            )
        interrupted = False
        try:
            _wait_interruptibly(process)
        except KeyboardInterrupt:
            interrupted = True
            _end(process, signal.SIGTERM, grace_s)
        produced = {
            str(path.relative_to(record)): path.read_bytes()
            for path in sorted(record.rglob("*"))
            if path.is_file()
        }
        return {
            "exit": process.returncode,
            "output": output.read_text(errors="replace"),
            "files": produced,
            "host": socket.gethostname(),
            "interrupted": interrupted,
        }


def _wait_interruptibly(process: subprocess.Popen[bytes]) -> None:
    """Wait for ``process`` in short waits, so that an asynchronous KeyboardInterrupt lands."""
    while True:
        try:
            process.wait(0.2)
            return
        except subprocess.TimeoutExpired:
            continue


def _end(process: subprocess.Popen[bytes], signum: int, grace_s: float) -> None:
    """Send ``signum``, give the process ``grace_s`` [s] to end, then kill it."""
    _signal(process, signum)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _import_ray() -> Any:
    """The ``ray`` module (untyped here: it is optional, and absent where mypy runs in CI).

    Raises:
        SweepError: Ray is not installed; how to install it.
    """
    import importlib

    try:
        return importlib.import_module("ray")
    except ImportError:
        raise SweepError(
            f"--ray needs Ray, an optional extra of limbtree: {CLUSTER_EXTRA}"
        ) from None


#: The signals whose handlers ``ray.init`` may replace in the driver.
RAY_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
#: How long the cluster's head gets to accept a connection before ``ray.init`` [s].
RAY_CONNECT_TIMEOUT_S: Final = 5.0


def _check_reachable(address: str) -> None:
    """Refuse a cluster address where nothing listens (``ray.init`` would retry for minutes).

    ``auto`` and addresses without a port are left to Ray.

    Raises:
        SweepError: naming the address and how to start or find the cluster.
    """
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise SweepError(
            f"--ray {address}: no Ray cluster answers there ({exc}); start one with "
            "`ray start --head` (its address is HOST:6379 by default; `ray status` on the "
            "head prints it), or give ray://HOST:10001 for a Ray client server"
        ) from None


class RayBackend:
    """Runs as Ray tasks on an existing cluster: one task per run (``--ray ADDRESS``).

    Each task executes the same ``limbtree run`` command on a worker (which needs limbtree
    installed, and any robot descriptions or node packages the mission uses) and sends the
    run's record back, written into the run's directory here.

    Args:
        address: the cluster (``ray.init(address=...)``: ``HOST:PORT`` of its head, ``auto``,
            or ``ray://HOST:PORT``). When this process is already connected to Ray, that
            connection is used.
        mission: the mission (its files are sent with each task).
        cpus: CPUs each task reserves.

    Raises:
        SweepError: Ray is not installed (how to install it), or the cluster cannot be
            reached.
    """

    def __init__(self, address: str, mission: Mission, cpus: float = 1.0) -> None:
        ray = _import_ray()
        self._ray = ray
        self._owns_connection = False
        # ray.init installs its own SIGTERM handler in this process; close() puts ours back.
        self._handlers = {sig: signal.getsignal(sig) for sig in RAY_SIGNALS}
        if not ray.is_initialized():
            import logging

            _check_reachable(address)
            try:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
            except Exception as exc:  # Ray raises ConnectionError, ValueError, RuntimeError
                self._restore_handlers()
                raise SweepError(f"--ray {address}: cannot connect to the cluster: {exc}") from None
            self._owns_connection = True
        self._task = ray.remote(num_cpus=cpus, max_retries=0)(ray_run)
        self._files, self._mission = mission_bundle(mission)
        self._files_ref = ray.put(self._files)
        self._refs: dict[Any, Job] = {}
        cluster_cpus = int(ray.cluster_resources().get("CPU", 1))
        self._cpus = max(1, int(cluster_cpus // cpus))
        self.description = f"the Ray cluster at {address} ({_plural(cluster_cpus, 'CPU')})"

    def capacity(self, jobs: int | None) -> int:
        """``--jobs``, by default as many runs as the cluster has CPUs for."""
        return self._cpus if jobs is None else jobs

    def submit(self, job: Job) -> None:
        """Send the run to the cluster."""
        ref = self._task.remote(self._files_ref, self._mission, list(job.arguments), STOP_GRACE_S)
        self._refs[ref] = job

    def wait(self, timeout_s: float) -> list[Finished]:
        """The tasks that ended within ``timeout_s``; their records written here."""
        if not self._refs:
            return []
        ready, _ = self._ray.wait(list(self._refs), num_returns=len(self._refs), timeout=timeout_s)
        return [self._gather(ref, interrupted=False) for ref in ready]

    def stop(self, grace_s: float, signum: int = signal.SIGINT) -> list[Finished]:
        """Cancel every task in flight: each aborts its run (SIGTERM) and sends its record."""
        for ref in self._refs:
            self._ray.cancel(ref)
        refs = list(self._refs)
        if refs:
            self._ray.wait(refs, num_returns=len(refs), timeout=grace_s + 5.0)
        return [self._gather(ref, interrupted=True) for ref in refs]

    def close(self) -> None:
        """Disconnect from the cluster when this backend connected to it."""
        for ref in self._refs:
            self._ray.cancel(ref, force=True)
        self._refs.clear()
        if self._owns_connection:
            self._ray.shutdown()
            self._restore_handlers()

    def _restore_handlers(self) -> None:
        for sig, handler in self._handlers.items():
            if handler is not None:
                signal.signal(sig, handler)

    def _gather(self, ref: Any, *, interrupted: bool) -> Finished:
        job = self._refs.pop(ref)
        try:
            reply = self._ray.get(ref, timeout=0.1 if interrupted else None)
        except Exception as exc:  # a task error, cancelled, the worker died
            text = f"{type(exc).__name__}: {exc}"
            (job.directory / OUTPUT_FILE).write_text(text + "\n")
            return Finished(job.index, None, text, interrupted=interrupted)
        for name, contents in reply["files"].items():
            target = job.directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(contents)
        (job.directory / OUTPUT_FILE).write_text(reply["output"])
        return Finished(
            job.index,
            reply["exit"],
            reply["output"],
            interrupted=interrupted or bool(reply.get("interrupted")),
            host=reply["host"],
        )


# The command ---------------------------------------------------------------------------


@dataclass
class SweepRequest:
    """What ``limbtree sweep`` was asked (its flags).

    Attributes:
        mission: the mission file.
        settings: the ``--set NAME=VALUES`` arguments.
        seeds: the ``--seed`` argument (``N``, ``N1,N2`` or ``A..B``).
        jobs: ``--jobs`` (None: 1 locally, the cluster's CPUs on Ray).
        out: ``--out`` (None: ``runs/sweep-MISSION``).
        ray: ``--ray ADDRESS``, or None for local processes.
        clock: ``--clock`` (None: the mission's).
        metric: ``--metric`` (None: the first numeric metric).
        by: ``--by`` (None: the swept settings that are not seeds).
        command: the command that starts ``limbtree`` for local runs.
    """

    mission: Path
    settings: Sequence[str] = ()
    seeds: str = "0"
    jobs: int | None = None
    out: Path | None = None
    ray: str | None = None
    clock: str | None = None
    metric: str | None = None
    by: Sequence[str] | None = None
    command: Sequence[str] = LIMBTREE


@dataclass(frozen=True)
class SweepReport:
    """What ``limbtree sweep`` made.

    Attributes:
        result: the runs.
        table: the rows.
        csv: ``OUT/sweep.csv``.
        plot: ``OUT/sweep.png``, or None when no run has the metric.
        text: the printed table.
    """

    result: SweepResult
    table: SweepTable
    csv: Path
    plot: Path | None
    text: str


def sweep(request: SweepRequest, stream: TextIO | None = None) -> SweepReport:
    """``limbtree sweep``: plan, check, run, then the CSV, the printed table and the plot.

    Args:
        request: the flags.
        stream: where progress and the table go (``sys.stdout`` when None).

    Returns:
        The runs, the table and the files written.

    Raises:
        SweepError: bad flags (nothing was started), or a bad ``--metric`` (after the runs:
            the CSV and the table are written; run again with another ``--metric`` and
            every run is kept).
        MissionError: the mission file is wrong (nothing was started).
    """
    stream = sys.stdout if stream is None else stream
    check_jobs(request.jobs)
    plan = plan_sweep(
        request.mission,
        parse_settings(request.settings),
        parse_seeds(request.seeds),
        request.clock,
    )
    by = check_by(request.by, plan) if request.by is not None else plan.default_by()
    plan, mission = check_plan(plan)
    out = request.out or Path("runs") / f"sweep-{request.mission.stem}"
    backend: Backend
    if request.ray is not None:
        backend = RayBackend(request.ray, mission)
    else:
        backend = LocalBackend(request.mission, request.command)
    result = run_sweep(plan, out, jobs=request.jobs, backend=backend, stream=stream)
    table = sweep_table(result)
    tabled = tabled_runs(out / "sweep.csv")
    csv_path = write_csv(table, out / "sweep.csv")
    # (another sweep's table: its runs' records stay, the table is rewritten)
    note = replaced_table_note(csv_path, tabled, (str(row["run"]) for row in table.rows))
    if note:
        print(note, file=stream, flush=True)
    try:
        metric = table.metric(request.metric)
    except SweepError:  # the table first (the runs are kept: a rerun is quick), then why
        _print_table(result, table, by, None, csv_path, stream)
        raise
    text = _print_table(result, table, by, metric, csv_path, stream)
    title = f"{mission.name}: {metric}" + (f" by {', '.join(by)}" if by else "")
    plot = draw_plot(table, by, metric, out / "sweep.png", title)
    if plot is not None:
        print(f"plot: {plot} ({metric})", file=stream, flush=True)
    else:
        print(f"plot: none (no finished run has {metric})", file=stream, flush=True)
    return SweepReport(result, table, csv_path, plot, text)


def _print_table(
    result: SweepResult,
    table: SweepTable,
    by: Sequence[str],
    metric: str | None,
    csv_path: Path,
    stream: TextIO,
) -> str:
    """Print the closing line, the table and where the CSV is; returns the table."""
    text = format_table(table, by, metric)
    print(_closing(result), file=stream)
    print(text, file=stream)
    print(f"table: {csv_path}", file=stream, flush=True)
    return text


def _closing(result: SweepResult) -> str:
    """The sweep's closing line: how its runs ended."""
    finished = [r for r in result.results if r.status.finished]
    outcomes: dict[str, int] = {}
    for r in finished:
        outcomes[str(r.outcome)] = outcomes.get(str(r.outcome), 0) + 1
    parts = [
        f"{len(finished)}/{_plural(len(result.results), 'run')} finished"
        + (f" ({', '.join(f'{n} {o}' for o, n in outcomes.items())})" if outcomes else ""),
    ]
    if result.count(RunStatus.KEPT):
        parts.append(f"{result.count(RunStatus.KEPT)} kept from before")
    if result.count(RunStatus.ERROR):
        parts.append(f"{result.count(RunStatus.ERROR)} could not run (see their run.log)")
    text = "sweep: " + "; ".join(parts) + f"; {_clock(result.elapsed_s)} wall"
    if result.interrupted is not None:
        text += (
            f"\nsweep interrupted ({result.interrupted}): "
            f"{_plural(result.count(RunStatus.INTERRUPTED), 'run')} aborted, "
            f"{result.count(RunStatus.NOT_RUN)} not started; the same command resumes it"
        )
    return text


__all__ = [
    "CLUSTER_EXTRA",
    "Backend",
    "Finished",
    "Group",
    "Job",
    "LocalBackend",
    "PlannedRun",
    "RayBackend",
    "RunResult",
    "RunStatus",
    "Setting",
    "SweepError",
    "SweepPlan",
    "SweepReport",
    "SweepRequest",
    "SweepResult",
    "SweepTable",
    "check_by",
    "check_jobs",
    "check_plan",
    "draw_plot",
    "flatten_numbers",
    "format_table",
    "group_rows",
    "kept_result",
    "metric_unit",
    "mission_bundle",
    "mission_digest",
    "other_run",
    "parse_seeds",
    "parse_settings",
    "parse_values",
    "plan_sweep",
    "plot_figure",
    "ray_run",
    "replaced_table_note",
    "run_arguments",
    "run_sweep",
    "sweep",
    "sweep_table",
    "table_columns",
    "write_csv",
]
