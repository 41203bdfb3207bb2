"""A mission's declarations: its robots (plants), its limbs and the modules of its world.

:class:`Declarations` reads the ``robots``, ``limbs`` and ``world`` sections for one load of
a mission file, and keeps the names they declare (``ROBOT.LIMB`` for a robot's limbs, the
key for a lone limb, and a one-limb robot's own name as an alias), so that the tree and the
faults read after them can be checked against those names.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from limbtree.robots.registry import ROBOT_PATH_ENV
from limbtree.robots.sim import SIM_OPTION_LIMITS
from limbtree.trees.mission.model import (
    LimbDecl,
    PlantKind,
    RobotDecl,
    WorldDecl,
)
from limbtree.trees.mission.source import (
    INVALID,
    NAME,
    Entry,
    Item,
    Reader,
    did_you_mean,
    unknown,
)
from limbtree.trees.mission.units import DEG, HZ, MM, NONE, S, Unit
from limbtree.trees.mission.values import (
    REQUIRED,
    SIM_AGENT,
    Agent,
    Choice,
    ParamSpec,
    PoseSpec,
    Quantity,
    Text,
    TextMap,
    ValueContext,
    read_fields,
)
from limbtree.trees.mission.world_values import (
    CONTACT_SPECS,
    SERVO_SPECS,
    TERRAIN_SPECS,
    Fields,
    contact_mapping,
    servo_mapping,
    terrain_mapping,
)

_T = TypeVar("_T")


def _sim_quantity(unit: Unit, option: str) -> Quantity:
    """A simulator option's value type, within the simulator's own limits, in the file's unit.

    The limits have one definition, :data:`limbtree.robots.sim.SIM_OPTION_LIMITS`: a mission
    is refused exactly where the simulator would refuse it.
    """
    limit = SIM_OPTION_LIMITS[option]
    high = None if limit.high is None else limit.high / unit.to_si
    return Quantity(
        unit,
        low=limit.low / unit.to_si,
        low_open=limit.low_open,
        high=high,
        high_open=high is not None,
    )


#: The keys of one limb of ``limbs``.
LIMB_SPECS: Final = (
    ParamSpec("robot", Text(), REQUIRED, "the robot description (limbtree robots)"),
    ParamSpec("limb", Text(), None, "which limb of the robot; none: its first"),
    ParamSpec("agent", Agent(), SIM_AGENT, "sim, or the agent's tcp://HOST:PORT or ipc://PATH"),
    ParamSpec("keys", Text(), None, "CURVE keys directory, relative to the mission file"),
    ParamSpec("base", PoseSpec(), None, "the limb base in the world frame; none: identity"),
    # Non-idealities of a simulated limb (seed 002); ignored for real agents.
    ParamSpec(
        "backlash",
        _sim_quantity(DEG, "backlash_rad"),
        None,
        "sim: joint backlash (seed 002: <= 10 deg)",
    ),
    ParamSpec(
        "flex", _sim_quantity(NONE, "flex"), None, "sim: link flex [1/m] (seed 002: <= 10 cm)"
    ),
    ParamSpec(
        "joint_noise", _sim_quantity(DEG, "joint_noise_rad"), None, "sim: joint sensor noise"
    ),
    ParamSpec("latency", _sim_quantity(S, "latency_s"), None, "sim: command latency"),
    ParamSpec(
        "vibration",
        _sim_quantity(HZ, "vibration_hz"),
        None,
        "sim: the arm's bending mode (0: rigid)",
    ),
    ParamSpec(
        "vibration_damping",
        _sim_quantity(NONE, "vibration_damping"),
        None,
        "sim: damping ratio of that mode, in (0, 1)",
    ),
    ParamSpec(
        "mocap_noise",
        _sim_quantity(MM, "mocap_noise_m"),
        None,
        "sim world: capture position noise (0.3 mm)",
    ),
    ParamSpec(
        "mocap_rot_noise",
        _sim_quantity(DEG, "mocap_rot_noise_rad"),
        None,
        "sim world: capture rotation noise (0.1 deg)",
    ),
)

#: The keys of one robot of ``robots``: a limb's keys, with the plant kind instead of the
#: limb (a robot brings all its limbs); simulator settings apply to every limb.
ROBOT_SPECS: Final = (
    LIMB_SPECS[0],
    ParamSpec(
        "plant",
        Choice(tuple(kind.value for kind in PlantKind)),
        PlantKind.KINEMATIC.value,
        "what moves the robot (kinematic: joints track commands at their speed limits; "
        "mujoco: rigid-body dynamics at 1 kHz with latching)",
    ),
    *LIMB_SPECS[2:],
    ParamSpec(
        "latched",
        TextMap("interface (LIMB.END) -> MODULE/GRASP_POINT of the world"),
        None,
        "mujoco: the interfaces latched at the start; the first places the robot",
    ),
    ParamSpec("posture", Text(), None, "mujoco: the named posture its limbs start in (home)"),
    ParamSpec("servo", Fields(SERVO_SPECS, "servo"), None, "mujoco: the joint_position PD"),
)

#: A robot key's model name -> its key in mission files (with its unit).
_FILE_KEYS: Final = {spec.name: spec.key for spec in ROBOT_SPECS}

#: Simulator options of a limb, and the mission keys (model names) they come from.
_SIM_KEYS: Final = (
    ("backlash", "backlash_rad"),
    ("flex", "flex"),
    ("joint_noise", "joint_noise_rad"),
    ("latency", "latency_s"),
    ("vibration", "vibration_hz"),
    ("vibration_damping", "vibration_damping"),
    ("mocap_noise", "mocap_noise_m"),
    ("mocap_rot_noise", "mocap_rot_noise_rad"),
)

#: Simulator options of the world's motion capture, and their mission keys.
CAPTURE_KEYS: Final = (
    ("mocap_noise_m", "mocap_noise_mm"),
    ("mocap_rot_noise_rad", "mocap_rot_noise_deg"),
)

#: The keys of one module of ``world``.
WORLD_SPECS: Final = (
    ParamSpec("module", Text(), REQUIRED, "the module (limbtree modules)"),
    ParamSpec("pose", PoseSpec(), REQUIRED, "where it is, in the world frame"),
)


#: Keys of ``world`` that are not modules: the ground and the grippers' contact law.
PHYSICAL_KEYS: Final = {
    "terrain": (TERRAIN_SPECS, "terrain"),
    "contact": (CONTACT_SPECS, "contact"),
}


def _all_or_none(items: Iterable[_T | None]) -> tuple[_T, ...] | None:
    """Every item (each one made, so each reports its problems), or None if one failed."""
    made = list(items)
    return None if any(item is None for item in made) else tuple(i for i in made if i is not None)


#: What a client of a CURVE agent needs in its keys directory (limbtree keys generate).
_CLIENT_KEY_FILES = ("client.key_secret", "agent.key")


def _keys_problem(agent: object, directory: Path | None) -> str | None:
    """Why ``keys`` cannot serve the agent: a simulated one, or a folder without the keys."""
    if directory is None:
        return None
    if agent == SIM_AGENT:
        return (
            "keys are for a remote agent that requires CURVE (agent: tcp://HOST:PORT); the "
            "run's own simulated agents (agent: sim) listen on loopback without keys: drop it"
        )
    if not directory.is_dir():
        return (
            f"keys: {directory} is not a directory; give the folder limbtree keys generate "
            "made (copied from the agent's computer without agent.key_secret)"
        )
    missing = [name for name in _CLIENT_KEY_FILES if not (directory / name).is_file()]
    if missing:
        return (
            f"keys: {directory} has no {' and no '.join(missing)}; a client of a CURVE agent "
            "needs both: copy them from the folder limbtree keys generate made for the agent "
            "(keys generated anew here would not match the agent's)"
        )
    return None


def _keys_path(ctx: ValueContext, keys: str | None) -> Path | None:
    """A CURVE keys directory, relative to the file that names it."""
    if keys is None:
        return None
    return Path(os.path.normpath(os.path.join(ctx.base_dir, os.path.expanduser(keys))))


def _sim_options(values: Mapping[str, Any]) -> dict[str, float]:
    """The simulator options of a limb's or robot's read fields (model names)."""
    return {option: values[key] for key, option in _SIM_KEYS if values[key] is not None}


class Declarations:
    """The robots, limbs and world of one load of a mission file.

    Args:
        reader: the load's reader, which collects every problem.
        robots: robot name -> the names of its limbs (kinematic chains), first the default.
        modules: the module names ``world`` may place; None: any.

    Attributes:
        declared: every limb name declared so far (valid or not), for the tree and faults.
        aliases: other names of declared limbs -> their names.
        robot_limbs: robot (mission name) -> its limbs' declarations.
    """

    def __init__(
        self,
        reader: Reader,
        robots: Mapping[str, Sequence[str]],
        modules: Sequence[str] | None = None,
    ) -> None:
        self.reader = reader
        self.robots = robots
        self.modules = None if modules is None else tuple(modules)
        self.declared: tuple[str, ...] = ()
        self.aliases: dict[str, str] = {}
        self.robot_limbs: dict[str, tuple[LimbDecl, ...]] = {}
        self.terrain: dict[str, Any] | None = None
        self.contact: dict[str, float] | None = None

    def read_limbs(
        self, ctx: ValueContext, top: Item, entry: Entry | None
    ) -> tuple[LimbDecl, ...] | None:
        """The declared limbs; adds every name, valid or not, to :attr:`declared`."""
        entries = self._section_entries(top, entry, "limbs (a map name -> limb)", "limb")
        if entries is None or not entries:
            return entries
        item, listed = entries
        self.declared += tuple(e.key for e in listed)
        return _all_or_none(self._limb(ctx, item, e) for e in listed)

    def _section_entries(
        self, top: Item, entry: Entry | None, what: str, noun: str
    ) -> tuple[Item, Sequence[Entry]] | tuple[()] | None:
        """A section's map and its entries; ``()`` when absent, None when it is no map."""
        if entry is None:
            return ()
        item = self.reader.child(top, entry.node)
        listed = None if item is None else self.reader.entries(item, what, noun=noun)
        if item is None or listed is None:
            return None
        return item, listed

    def _declaration(
        self, ctx: ValueContext, parent: Item, entry: Entry, noun: str, specs: Sequence[ParamSpec]
    ) -> tuple[Item, dict[str, Any], dict[str, Entry]] | None:
        """One entry of ``limbs`` or ``robots``: its map, read fields and field entries."""
        reader = self.reader
        if not NAME.match(entry.key):
            reader.report(entry.at, f"{noun} name {entry.key!r} must be letters, digits, _")
            return None
        item = reader.child(parent, entry.node)
        fields = None if item is None else reader.entries(item, f"{noun} {entry.key}")
        if item is None or fields is None:
            return None
        what = f"{noun} {entry.key}"
        values = read_fields(ctx, item, fields, specs, what=what, at=entry.at)
        given = {f.key: f for f in fields}
        keys = values.get("keys")
        if keys is not None and keys is not INVALID:
            problem = _keys_problem(values.get("agent"), _keys_path(ctx, keys))
            if problem is not None:
                self._value_error(item, given["keys"], problem)
                values["keys"] = INVALID
        return item, values, given

    def _limb(self, ctx: ValueContext, parent: Item, entry: Entry) -> LimbDecl | None:
        reader = self.reader
        name = entry.key
        read = self._declaration(ctx, parent, entry, "limb", LIMB_SPECS)
        if read is None:
            return None
        item, values, given = read
        robot, chain = values["robot"], values["limb"]
        ok = INVALID not in values.values()
        if robot is not INVALID and robot not in self.robots:
            self._value_error(item, given["robot"], _unknown_robot(robot, self.robots))
            ok = False
        elif robot is not INVALID:
            chains = tuple(self.robots[robot])
            if chain is None and not chains:
                reader.report(entry.at, f"robot {robot} has no limbs")
                ok = False
            elif chain is not None and chain is not INVALID and chain not in chains:
                label = f"limbs of {robot}"
                self._value_error(item, given["limb"], unknown("limb", chain, chains, label))
                ok = False
            elif chain is None:
                chain = chains[0]
        if not ok:
            return None
        return LimbDecl(
            name,
            robot,
            chain,
            values["agent"],
            _keys_path(ctx, values["keys"]),
            values["base"],
            entry.at,
            _sim_options(values),
        )

    def read_robots(
        self, ctx: ValueContext, top: Item, entry: Entry | None
    ) -> tuple[RobotDecl, ...] | None:
        """The declared robots (``robots``); their limbs are kept in :attr:`robot_limbs`.

        Adds every limb name, ``ROBOT.LIMB``, to :attr:`declared`, and to :attr:`aliases`
        the robot's name for a one-limb robot.
        """
        entries = self._section_entries(top, entry, "robots (a map name -> robot)", "robot")
        if entries is None or not entries:
            return entries
        item, listed = entries
        return _all_or_none(self._robot(ctx, item, e) for e in listed)

    def _robot(self, ctx: ValueContext, parent: Item, entry: Entry) -> RobotDecl | None:
        reader = self.reader
        name = entry.key
        read = self._declaration(ctx, parent, entry, "robot", ROBOT_SPECS)
        if read is None:
            return None
        item, values, given = read
        robot = values["robot"]
        if robot is INVALID:
            return None
        if robot not in self.robots:
            self._value_error(item, given["robot"], _unknown_robot(robot, self.robots))
            return None
        chains = tuple(self.robots[robot])
        if not chains:
            reader.report(entry.at, f"robot {robot} has no limbs")
            return None
        # Declared even when another of its fields is wrong: nodes naming its limbs are
        # then checked, not reported as unknown limbs too.
        names = tuple(f"{name}.{chain}" for chain in chains)
        self.declared += names
        if len(chains) == 1:
            self.aliases[name] = names[0]
        if INVALID in values.values():
            return None
        plant = PlantKind(values["plant"])
        if plant is not PlantKind.MUJOCO:
            for key in ("latched", "posture", "servo"):
                if values[key] is not None:
                    self._value_error(
                        item, given[key], f"{key} sets a mujoco plant's start; add plant: mujoco"
                    )
                    return None
        else:
            for key, _ in _SIM_KEYS:
                if values[key] is not None:
                    self._value_error(
                        item,
                        given[_FILE_KEYS[key]],
                        f"{key} is a non-ideality of the kinematic simulator; the mujoco plant "
                        "has none: drop it",
                    )
                    return None
        keys, sim = _keys_path(ctx, values["keys"]), _sim_options(values)
        self.robot_limbs[name] = tuple(
            LimbDecl(limb, robot, chain, values["agent"], keys, values["base"], entry.at, sim, name)
            for limb, chain in zip(names, chains, strict=True)
        )
        return RobotDecl(
            name,
            robot,
            plant,
            values["agent"],
            keys,
            values["base"],
            names,
            entry.at,
            latched=dict(values["latched"] or {}),
            posture=values["posture"],
            servo=None if values["servo"] is None else servo_mapping(values["servo"]),
        )

    def join(
        self, robots: tuple[RobotDecl, ...] | None, lone: tuple[LimbDecl, ...] | None
    ) -> tuple[LimbDecl, ...] | None:
        """Every limb: the robots' limbs, then the ``limbs`` entries; names must not clash."""
        if robots is None or lone is None:
            return None
        taken = {robot.name: robot for robot in robots}
        ok = True
        for limb in lone:
            if limb.name in taken:
                self.reader.report(
                    limb.location,
                    f"limb {limb.name}: robot {limb.name} (declared at "
                    f"{taken[limb.name].location}) already has that name; rename one of them",
                )
                ok = False
        ok = self._one_plant_per_agent(robots, lone) and ok
        grouped = [limb for robot in robots for limb in self.robot_limbs[robot.name]]
        return (*grouped, *lone) if ok else None

    def _one_plant_per_agent(
        self, robots: tuple[RobotDecl, ...], lone: tuple[LimbDecl, ...]
    ) -> bool:
        """Whether every running agent (an address, not ``sim``) is named by one entry only.

        Two entries on one address would be two clients of one agent: its second commander
        is refused (one commander per limb), which the run could only report as another
        client's.
        """
        first: dict[str, str] = {}
        ok = True
        declared = [("robot", r.name, r.agent, r.location) for r in robots]
        declared += [("limb", limb.name, limb.agent, limb.location) for limb in lone]
        for noun, name, agent, location in declared:
            if not isinstance(agent, str) or agent == SIM_AGENT:
                continue
            if agent not in first:
                first[agent] = f"{noun} {name} (declared at {location})"
                continue
            self.reader.report(
                location,
                f"{noun} {name}: agent {agent} is also {first[agent]}'s: an agent serves one "
                "plant to one run, and the run would be two clients of it (the second refused "
                "as another commander); give each its own agent, or declare the limbs once, "
                "as one robot under robots:",
            )
            ok = False
        return ok

    @staticmethod
    def plants(robots: tuple[RobotDecl, ...], limbs: tuple[LimbDecl, ...]) -> tuple[RobotDecl, ...]:
        """Every plant: the declared robots, then one per ``limbs`` entry."""
        lone = tuple(
            RobotDecl(
                limb.name,
                limb.robot,
                PlantKind.KINEMATIC,
                limb.agent,
                limb.keys,
                limb.base_pose,
                (limb.name,),
                limb.location,
                declared=False,
            )
            for limb in limbs
            if limb.plant is None
        )
        return (*robots, *lone)

    def read_world(
        self, ctx: ValueContext, top: Item, entry: Entry | None
    ) -> tuple[WorldDecl, ...]:
        """The modules placed in the world (``world``), checked against the known modules."""
        reader = self.reader
        if entry is None:
            return ()
        item = reader.child(top, entry.node)
        entries = None if item is None else reader.entries(item, "world (a map name -> module)")
        if item is None or entries is None:
            return ()
        out = []
        for module_entry in entries:
            if module_entry.key in PHYSICAL_KEYS:
                self._physical(ctx, item, module_entry)
                continue
            child = reader.child(item, module_entry.node)
            fields = None if child is None else reader.entries(child, f"module {module_entry.key}")
            if child is None or fields is None:
                continue
            values = read_fields(
                ctx, child, fields, WORLD_SPECS, what=f"module {module_entry.key}",
                at=module_entry.at,
            )  # fmt: skip
            if INVALID in values.values():
                continue
            if self.modules is not None and values["module"] not in self.modules:
                given = {f.key: f for f in fields}
                self._value_error(
                    child, given["module"], unknown("module", values["module"], self.modules)
                )
                continue
            decl = WorldDecl(module_entry.key, values["module"], values["pose"], module_entry.at)
            out.append(decl)
        return tuple(out)

    def _physical(self, ctx: ValueContext, item: Item, entry: Entry) -> None:
        """``world.terrain`` or ``world.contact`` (seed 004's ground and grippers)."""
        child = self.reader.child(item, entry.node)
        if child is None:
            return
        specs, what = PHYSICAL_KEYS[entry.key]
        values = Fields(specs, what).read(ctx, child, f"world.{entry.key}")
        if values is INVALID:
            return
        if entry.key == "terrain":
            self.terrain = terrain_mapping(values)
        else:
            self.contact = contact_mapping(values)

    def _value_error(self, item: Item, entry: Entry, message: str) -> None:
        value = self.reader.child(item, entry.node)
        if value is not None:
            self.reader.error(value, message)


def _unknown_robot(robot: str, robots: Mapping[str, Any]) -> str:
    """``unknown robot X; valid robots: ...``, and where robots come from unless X is a typo.

    A name close to none of the robots is most likely a robot of the user's own that this
    process cannot see: ``LIMBTREE_ROBOT_PATH`` set on the limb's computer for its agent but
    not where ``limbtree check`` or ``run`` runs.
    """
    message = unknown("robot", robot, sorted(robots))
    if did_you_mean(robot, robots) is not None:
        return message
    path = os.environ.get(ROBOT_PATH_ENV, "")
    now = f"it is {path!r}" if path else "it is not set"
    return (
        f"{message}; a robot of your own must be in a directory on {ROBOT_PATH_ENV} in the "
        f"environment of this command ({now}; docs/robots.md, 'Adding your own robot')"
    )
