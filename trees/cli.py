"""The ``limbtree`` command line (DESIGN.md, "Command line").

Each subcommand is a small function over the library; heavy imports happen inside them so
that ``limbtree --help`` answers at once. Exit status 0 means success; every error prints one
clear line (or ``file:line:column`` lines for missions) and exits non-zero.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import limbtree
from limbtree.errors import LimbtreeError

if TYPE_CHECKING:
    import zmq

    from limbtree.transport.driver import LimbState
    from limbtree.transport.exposure import ShutdownPolicy
    from limbtree.transport.plant import Plant
    from limbtree.trees.app import WebOptions
    from limbtree.trees.interrupts import AbortSignals
    from limbtree.trees.mission import Mission

Handler = Callable[[argparse.Namespace], int]


def _robots(args: argparse.Namespace) -> int:
    from limbtree.robots import format_robot_table, load_robot, robot_names

    names = list(dict.fromkeys(args.names)) or list(robot_names())  # (each named once)
    print(format_robot_table([load_robot(name) for name in names]))
    return 0


def _key_values(items: Sequence[str], flag: str, what: str = "KEY") -> dict[str, str]:
    """``KEY=VALUE`` arguments of a repeated ``flag`` as a dict (LimbtreeError when malformed).

    Spaces around KEY are dropped (``--set 'side_mm = 100'``); VALUE is kept as given. A
    KEY given twice is refused: which value was meant is not known (a script that appends
    its own ``--set`` to a user's would otherwise win silently).
    """
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        key = name.strip()
        if not sep or not key:
            raise LimbtreeError(f"{flag} wants {what}=VALUE, got {item!r}")
        if key in values:
            raise LimbtreeError(
                f"{flag} {key} is given twice ({key}={values[key]} and {key}={value}); give it once"
            )
        values[key] = value
    return values


#: ``limbtree agent --rate``'s default [Hz].
DEFAULT_STREAM_RATE_HZ = 100.0
#: The slowest real-clock update a hardware driver's agent takes [Hz]: each update sends a
#: setpoint up to ``max_speed / rate`` from the last, and a position servo covers that jump
#: at its own speed, so slow updates would let a joint outrun its limit.
MIN_HARDWARE_RATE_HZ = 20.0
#: The fastest real-clock update an agent takes [Hz] (its loop polls without sleeping above
#: about 1000 Hz already).
MAX_STREAM_RATE_HZ = 10_000.0


def _agent(args: argparse.Namespace) -> int:
    import logging

    from limbtree.transport import serve_forever

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    _check_exposure(args)
    serve_forever(
        _plant_of(args),
        args.bind,
        clock=args.clock,
        stream_rate_hz=args.rate,
        keys_dir=args.keys,
        publish_on_step=not args.quiet_steps,
        parent_pid=args.parent_pid,
        insecure=args.insecure,
        shutdown=_shutdown_policy(args.allow_remote_shutdown),
        name=args.name,
    )
    return 0


def _plant_of(args: argparse.Namespace) -> Plant:
    """The plant a ``limbtree agent`` command line describes."""
    from limbtree.kinematics import Pose
    from limbtree.robots.factory import make_plant, world_from_json
    from limbtree.robots.sim import SimConfig

    options = _key_values(args.sim_option, "--sim-option")
    config = SimConfig.from_options(options) if options else None
    world = world_from_json(args.world) if args.world else None
    base = None
    if args.base:
        try:
            base = Pose.from_array([float(part) for part in args.base.split(",")])
        except ValueError as exc:
            raise SystemExit(
                f"limbtree: --base wants x,y,z,qx,qy,qz,qw (metres, unit quaternion): {exc}"
            ) from None
    return make_plant(
        args.robot,
        [args.limb] if args.limb else None,
        driver=args.driver,
        seed=0 if args.seed is None else args.seed,
        config=config,
        world=world,
        options=_key_values(args.driver_option, "--driver-option"),
        base=base,
        plant=args.plant,
        physics=args.physics,
    )


def _agents(args: argparse.Namespace) -> int:
    import logging
    import shlex

    from limbtree.transport import PlantAgent
    from limbtree.transport.host import serve_hosted_forever

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    each = []
    for text in args.each:
        try:
            words = shlex.split(text)
        except ValueError as exc:  # an unbalanced quote or a trailing backslash
            raise SystemExit(
                f"limbtree agents: --each {text!r} cannot be split into arguments "
                f"({str(exc).lower()}): quote it as for a shell"
            ) from None
        try:
            one = args.agent_parser.parse_args(words)
        except SystemExit:
            raise SystemExit(
                f"limbtree agents: --each {text!r} is not a valid limbtree agent command line "
                "(see limbtree agent --help)"
            ) from None
        for flag, value, why in (
            (
                "the real clock",
                one.clock == "real",
                "only sim-clock agents share a loop (the real clock is limbtree agent's "
                "default: add --clock sim)",
            ),
            ("--keys", one.keys is not None, "a CURVE agent needs its own process"),
            ("--parent-pid", one.parent_pid is not None, "give it to limbtree agents itself"),
        ):
            if value:
                raise SystemExit(f"limbtree agents: --each {text!r} has {flag}: {why}")
        _check_exposure(one)
        each.append(one)
    _check_distinct_binds(args.each, each)

    def make(context: zmq.Context[zmq.Socket[bytes]]) -> list[PlantAgent]:
        agents: list[PlantAgent] = []
        try:
            for one in each:
                agents.append(
                    PlantAgent(
                        _plant_of(one),
                        one.bind,
                        clock=one.clock,
                        stream_rate_hz=one.rate,
                        publish_on_step=not one.quiet_steps,
                        insecure=one.insecure,
                        shutdown=_shutdown_policy(one.allow_remote_shutdown),
                        name=one.name,
                        context=context,
                    )
                )
        except BaseException:
            for agent in agents:
                agent.close()
            raise
        return agents

    serve_hosted_forever(make, parent_pid=args.parent_pid)
    return 0


def _check_distinct_binds(texts: Sequence[str], each: Sequence[argparse.Namespace]) -> None:
    """Refuse two agents of one ``limbtree agents`` on one address, before any binds.

    (The second one's bind failed after the first's, an ``ipc://`` path naming this very
    process as the other agent that holds it.)
    """
    from limbtree.transport.endpoint import agent_endpoints

    taken: dict[str, str] = {}
    for text, one in zip(texts, each, strict=True):
        for address in agent_endpoints(one.bind):
            if address in taken:
                raise LimbtreeError(
                    f"--each {text!r} binds {address}, as --each {taken[address]!r} does: "
                    "give each agent its own address (tcp://HOST:N takes ports N and N+1, "
                    "ipc://PATH takes PATH and PATH.state)"
                )
            taken[address] = text


def _check_exposure(args: argparse.Namespace) -> None:
    """Refuse an exposed bind without keys before loading anything (the agent checks again).

    Also refuse flags that would do nothing with the others (a user who gave them expects
    them to act), and fill in ``--rate``'s default.
    """
    from limbtree.transport.exposure import check_exposure

    for given, why in (
        (args.rate is not None and args.clock == "sim",
         "--rate sets the real clock's state stream; a sim-clock agent publishes on each step"),
        (args.quiet_steps and args.clock == "real",
         "--quiet-steps is for the sim clock (a real-clock agent is not stepped)"),
        (args.insecure and args.keys is not None,
         "--insecure is for an agent without --keys (with keys, clients need an authorised key)"),
        (args.seed is not None and args.driver != "sim",
         f"--seed seeds the simulated limbs' noise; --driver {args.driver} drives a real limb"),
    ):  # fmt: skip
        if given:
            raise LimbtreeError(f"{why}: drop it")
    if args.rate is None:
        args.rate = DEFAULT_STREAM_RATE_HZ
    if args.driver != "sim" and args.rate < MIN_HARDWARE_RATE_HZ:
        raise LimbtreeError(
            f"--rate {args.rate:g} Hz is too slow for a hardware driver: each update moves a "
            "joint's setpoint by up to its speed limit times the period "
            f"({1.0 / args.rate:.3g} s), a jump a position servo covers at its own speed, "
            f"faster than the limit; give --rate {MIN_HARDWARE_RATE_HZ:g} or more (the default "
            f"is {DEFAULT_STREAM_RATE_HZ:g})"
        )
    check_exposure(args.bind, curve=args.keys is not None, insecure=args.insecure)


def _shutdown_policy(allow_remote: bool) -> ShutdownPolicy:
    """Who may stop this agent: anyone, or the runner whose token is in the environment."""
    import os

    from limbtree.transport.exposure import SHUTDOWN_TOKEN_ENV, ShutdownPolicy

    return ShutdownPolicy(allow_remote, os.environ.get(SHUTDOWN_TOKEN_ENV) or None)


def _ping(args: argparse.Namespace) -> int:
    from limbtree.transport import AgentUnreachableError, ping_endpoint
    from limbtree.transport.client import watch_states
    from limbtree.transport.clock import ClockMode
    from limbtree.trees.connection import probe, unresolved

    not_found = unresolved(args.endpoint)
    if not_found is not None:  # (said now, not after --timeout)
        raise LimbtreeError(f"{args.endpoint}: {not_found}")
    try:
        rtt, description = ping_endpoint(args.endpoint, timeout_s=args.timeout, keys_dir=args.keys)
    except AgentUnreachableError as exc:
        # What a plain connection finds tells a dead port from another program on it.
        raise LimbtreeError(f"{exc}\n  found: {probe(args.endpoint)}") from None
    plant = description.plant
    versions = ", ".join(str(v) for v in description.versions)
    print(f"{args.endpoint}: round trip {rtt * 1e3:.3f} ms (protocol version {versions})")
    base = "floating" if plant.floating_base else "fixed"
    print(
        f"  robot {plant.robot} ({plant.kind} plant, {base} base), {description.clock.value} clock"
    )
    for limb in plant.limbs:
        info = limb.description
        print(f"  limb {limb.name} ({info.driver} driver)")
        print(f"    joints: {', '.join(j.name for j in info.joints)}")
        print(f"    end-effectors: {', '.join(info.end_effectors)}")
        print(f"    command modes: {', '.join(m.value for m in info.command_modes)}")
    curve = "required" if description.curve else "off"
    print(f"  CURVE {curve}; bad requests rejected: {dict(description.errors_received) or 0}")
    if description.clock is not ClockMode.REAL:
        return 0  # (a sim-clock agent publishes states only when stepped)
    # An agent can answer while a limb publishes no state at all (its driver's first read
    # fails): say so here, not as a mission's "no state from ... is its agent running?".
    names = [limb.name for limb in plant.limbs]
    listen_s = min(args.timeout, max(2.0, 10.0 / description.stream_rate_hz))
    states = watch_states(args.endpoint, names, timeout_s=listen_s, keys_dir=args.keys)
    print("  states:")
    for name, state in states.items():
        print(f"    {name}: {_state_text(state, listen_s)}")
    silent = [name for name, state in states.items() if state is None]
    if silent:
        raise LimbtreeError(
            f"{args.endpoint} answers, but limb {', '.join(silent)} published no state in "
            f"{listen_s:g} s: the agent cannot update it (its log says why: a driver whose "
            "read_joints raises or returns the wrong number of joints or NaN), or the limb is "
            "disassembled; a mission cannot use it"
        )
    return 0


def _seconds(value: object) -> str:
    """A time [s] from a state's ``detail`` to 0.01 s, or as it came when not a number."""
    return f"{value:.2f}" if isinstance(value, int | float) else str(value)


def _state_text(state: LimbState | None, listen_s: float) -> str:
    """One limb's latest state for ``limbtree ping``: its time and health, and what fails."""
    from limbtree.robots.driver import BUS_FAULT_DETAIL_KEY
    from limbtree.trees.display import health_text

    if state is None:
        return f"no state in {listen_s:g} s"
    text = f"t = {state.t:.2f} s, health {health_text(int(state.health))}"
    bus = state.detail.get(BUS_FAULT_DETAIL_KEY) if isinstance(state.detail, dict) else None
    if isinstance(bus, dict):
        text += (
            f" ({bus.get('call')} fails since t = {_seconds(bus.get('since'))} s: "
            f"{bus.get('error')}; "
            "commands are refused)"
        )
    return text


def _keys(args: argparse.Namespace) -> int:
    from limbtree.transport import generate_keys

    files = generate_keys(args.dir, overwrite=args.overwrite)
    print(f"CURVE keys written in {files.directory}:")
    print(f"  agent:  {files.agent_public} (public), {files.agent_secret} (secret)")
    print(f"  client: {files.client_public} (public), {files.client_secret} (secret)")
    print(f"  agents accept the client keys in {files.authorized}/")
    print("Run agents with --keys DIR; copy DIR (without agent.key_secret) to the mission's side.")
    return 0


def _overrides(items: Sequence[str]) -> dict[str, str]:
    return _key_values(items, "--set", "NAME")


def _positive(flag: str, wants: str, finite: bool = True) -> Callable[[str], float]:
    """An argparse type for ``flag``: a number > 0 (``wants`` says what it wants)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} wants {wants}, got {text!r}") from None
        if not value > 0 or (finite and value == math.inf):
            bound = "a finite number > 0" if finite else "> 0"
            raise argparse.ArgumentTypeError(f"{flag} must be {bound}, got {text!r}")
        return value

    return parse


_timeout = _positive("--timeout", "a number of seconds")
_rate_number = _positive("--rate", "a number of updates a second")


def _rate(text: str) -> float:
    value = _rate_number(text)
    if value > MAX_STREAM_RATE_HZ:
        raise argparse.ArgumentTypeError(
            f"--rate must be at most {MAX_STREAM_RATE_HZ:g} Hz (faster, the agent's loop only "
            f"spins), got {text!r}"
        )
    return value


_speed_number = _positive("--speed", "a number or 'max'", finite=False)


def _speed(text: str) -> float | None:
    return None if text == "max" else _speed_number(text)


def _whole_number(
    flag: str, low: int, high: int | None = None, note: str = ""
) -> Callable[[str], int]:
    """An argparse type for ``flag``: a whole number from ``low`` to ``high`` (or more)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} wants a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            span = f"{low} or more" if high is None else f"{low} to {high}"
            raise argparse.ArgumentTypeError(f"{flag} must be {span}{note}, got {text!r}")
        return value

    return parse


_port = _whole_number("--port", 0, 65535, " (0 picks a free one)")
_seed = _whole_number("--seed", 0)
_parent_pid = _whole_number("--parent-pid", 1, note=" (a process id)")


def _web_options(args: argparse.Namespace) -> WebOptions:
    from limbtree.trees.app import WebOptions
    from limbtree.trees.web.server import DEFAULT_PORT

    port = DEFAULT_PORT if args.port is None else args.port
    return WebOptions(host=args.host, port=port, token=args.token, insecure=args.insecure)


def _run(args: argparse.Namespace) -> int:
    from limbtree.trees.interrupts import signals_abort

    # SIGTERM and Ctrl-C are noted from now on, while the libraries import (seconds on a
    # cold start): the run then stops at its first safe point, its record ABORTED, instead
    # of the process dying with nothing written.
    with signals_abort() as early:
        return _run_noting(args, early)


def _run_noting(args: argparse.Namespace, signals: AbortSignals) -> int:
    """``limbtree run``, the signals that abort it noted in ``signals``."""
    from limbtree.trees.app import RunRequest, run_mission
    from limbtree.trees.runner import RunOutcome

    if args.view != "web":
        given = [
            flag
            for flag, unset in (("port", None), ("host", "127.0.0.1"), ("token", None))
            if getattr(args, flag) != unset
        ] + (["insecure"] if args.insecure else [])
        if given:
            raise LimbtreeError(f"--{given[0]} is for the web view: add --view web")

    outcome = run_mission(
        RunRequest(
            mission=Path(args.mission),
            clock=args.clock,
            speed=args.speed,
            seed=args.seed,
            overrides=_overrides(args.set),
            record=Path(args.record) if args.record else None,
            headless=args.headless,
            auto_confirm=args.auto_confirm,
            web=_web_options(args) if args.view == "web" else None,
            stop_with=_stop_with(),
            signals=signals,
        )
    )
    return 0 if outcome is RunOutcome.SUCCESS else 1


def _stop_with() -> int | None:
    """The process id in ``LIMBTREE_STOP_WITH`` (a sweep sets it for its runs), or None."""
    from limbtree.trees.interrupts import STOP_WITH_ENV

    text = os.environ.get(STOP_WITH_ENV, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) <= 0:
        raise LimbtreeError(
            f"{STOP_WITH_ENV}={text!r}: it must be a process id (a sweep sets it for its "
            "runs); unset it"
        )
    return int(text)


def _view(args: argparse.Namespace) -> int:
    from limbtree.trees.web.server import PageState, WebServer, check_binding
    from limbtree.trees.web.store import load_record

    check_binding(args.host, args.token, args.insecure)
    directory = Path(args.dir)
    store = load_record(directory)
    if store.damage is not None:
        print(f"limbtree view: note: {store.damage}; showing the ticks before it", flush=True)
    if store.writing:
        print(
            "limbtree view: note: a run is still writing this record; showing its ticks so far "
            "(view it again for more; limbtree run --view web follows a run live)",
            flush=True,
        )
    server = WebServer(
        PageState(store=store),
        args.host,
        args.port,
        args.token,
        token_for_reads=bool(args.token),
    )
    print(
        f"limbtree view: {store.header.get('mission') or directory} ({store.ticks} ticks) at "
        f"{server.url}\n(Ctrl-C stops serving it)",
        flush=True,
    )
    server.serve_forever()
    return 0


def _add_web_flags(parser: argparse.ArgumentParser, port_default: int | None) -> None:
    from_port = "8765" if port_default is None else str(port_default)
    parser.add_argument(
        "--port", type=_port, default=port_default, metavar="P",
        help=f"the web page's port (default {from_port}; 0 picks a free one)",
    )  # fmt: skip
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="ADDRESS",
        help="the address to serve on (default 127.0.0.1: this machine only)",
    )  # fmt: skip
    parser.add_argument(
        "--token", default=None, metavar="SECRET",
        help="a token every request must carry (needed to serve a non-loopback --host)",
    )  # fmt: skip
    parser.add_argument(
        "--insecure", action="store_true",
        help="serve a non-loopback --host without a token (control still needs one)",
    )  # fmt: skip


def _on_robots(mission: Mission) -> str:
    """`` on 3 robots`` when a robot has several limbs; empty when every limb is alone."""
    if len(mission.robots) == len(mission.limbs):
        return ""
    return f" on {_count(len(mission.robots), 'robot')}"


def _count(n: int, noun: str) -> str:
    """``1 limb``, ``2 limbs``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _check(args: argparse.Namespace) -> int:
    from limbtree.trees.app import check_fault_clock, faults_text, load
    from limbtree.trees.mission.loops import mission_warnings

    mission = load(Path(args.mission), _overrides(args.set), args.seed)
    check_fault_clock(mission, args.clock)
    print(
        f"{args.mission}: OK: mission {mission.name}, {_count(len(mission.limbs), 'limb')}"
        f"{_on_robots(mission)}, "
        f"{_count(sum(1 for _ in mission.root.walk()), 'node')}, "
        f"{faults_text(mission)}"
    )
    for warning in mission_warnings(mission):
        print(warning)
    return 0


def _tree(args: argparse.Namespace) -> int:
    from limbtree.trees.app import offline_tree
    from limbtree.trees.export import render_tree

    text = render_tree(offline_tree(Path(args.mission), _overrides(args.set)), args.format)
    print(text, end="" if text.endswith("\n") else "\n")
    return 0


def _nodes(args: argparse.Namespace) -> int:
    from limbtree.trees.nodes import builtin_registry, default_registry
    from limbtree.trees.nodes.reference import (
        reference_json,
        reference_markdown,
        reference_text,
    )

    registry = builtin_registry() if args.builtin else default_registry()
    render = {"text": reference_text, "json": reference_json, "markdown": reference_markdown}
    print(render[args.format](registry), end="")
    return 0


def _report(args: argparse.Namespace) -> int:
    from limbtree.trees.report import make_report

    result = make_report(Path(args.dir))
    print(result.text)
    for image in result.images:
        print(f"  {image}")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from limbtree.trees.sweep import SweepRequest, sweep

    report = sweep(
        SweepRequest(
            mission=Path(args.mission),
            settings=args.set,
            seeds=args.seed,
            jobs=args.jobs,
            out=Path(args.out) if args.out else None,
            ray=args.ray,
            clock=args.clock,
            metric=args.metric,
            by=[n.strip() for n in args.by.split(",")] if args.by else None,
        )
    )
    return report.result.exit_code


class _Version(argparse.Action):
    """``--version``: the installed package's version, read only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"limbtree {limbtree.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="limbtree",
        description="Behaviour-tree missions for modular, multi-limbed space robots.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run a mission file (simulated limbs by default)",
        description="Validate a mission, start its simulated agents, connect the remote ones, "
        "and tick its tree until it ends. Exit status 0 only when the mission succeeds. In a "
        "terminal, space pauses and resumes, q aborts, y / n answer an operator gate; from any "
        "other stdin (a pipe, a script), one command per line: p or pause, r or resume, a, "
        "abort or q, and y or n with --view web (without a terminal or the page, a mission "
        "with operator gates needs --auto-confirm). SIGTERM aborts too.",
    )
    run.add_argument("mission", metavar="MISSION", help="the mission file (YAML)")
    run.add_argument("--clock", choices=["sim", "real"], help="override the mission's clock")
    run.add_argument(
        "--speed", type=_speed, default=None, metavar="X|max",
        help="sim clock pace: X times real time, or max (default) for as fast as possible",
    )  # fmt: skip
    run.add_argument(
        "--seed", type=_seed, default=0, help="seed of simulated noise and faults (0 or more)"
    )
    run.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="override a mission parameter (repeatable)",
    )  # fmt: skip
    run.add_argument("--record", metavar="DIR", help="write summary.json and log.msgpack here")
    run.add_argument("--headless", action="store_true", help="plain progress lines, no live tree")
    run.add_argument(
        "--auto-confirm", action="store_true", help="operator gates pass by themselves"
    )
    run.add_argument(
        "--view", choices=["web"], default=None,
        help="web: serve a live web debugger of the run (prints its URL)",
    )  # fmt: skip
    _add_web_flags(run, None)
    run.set_defaults(handler=_run)

    sweep = commands.add_parser(
        "sweep",
        help="many recorded runs of a mission over settings and seeds, one table",
        description="Run the product of the settings' values (each a normal recorded run, "
        "limbtree run --headless --auto-confirm --record OUT/RUN, in its own process), "
        "on local processes or a Ray cluster; a run finished by an earlier sweep with the "
        "same settings is kept. Writes OUT/sweep.csv (one row per run), prints a table "
        "grouped by the swept settings and draws OUT/sweep.png. Exit status 0 when every "
        "run finished, whatever its outcome; 1 when some could not run; 130 on Ctrl-C, "
        "143 on SIGTERM.",
    )
    sweep.add_argument("mission", metavar="MISSION", help="the mission file (YAML)")
    sweep.add_argument(
        "--set", action="append", default=[], metavar="NAME=V1,V2|NAME=A..B",
        help="a mission parameter and its values: a list, or an integer range with both "
        "ends (repeatable; the runs are the product)",
    )  # fmt: skip
    sweep.add_argument(
        "--seed", default="0", metavar="N|N1,N2|A..B",
        help="the runs' seeds: one, a list or a range (default 0)",
    )  # fmt: skip
    sweep.add_argument(
        "--jobs", type=int, default=None, metavar="N",
        help="runs at a time (default 1; with --ray, as many as the cluster has CPUs)",
    )  # fmt: skip
    sweep.add_argument(
        "--out", metavar="DIR", help="the sweep's folder (default runs/sweep-MISSION)"
    )
    sweep.add_argument(
        "--ray", metavar="ADDRESS",
        help="run on an existing Ray cluster (HOST:PORT of its head, auto, or "
        "ray://HOST:PORT); needs pip install 'limbtree[cluster]'",
    )  # fmt: skip
    sweep.add_argument("--clock", choices=["sim", "real"], help="override the mission's clock")
    sweep.add_argument(
        "--metric", metavar="NAME",
        help="the figure sweep.png compares across groups (a metric such as "
        "align.final_dd_mm, or a column such as sim_time_s; default the first metric)",
    )  # fmt: skip
    sweep.add_argument(
        "--by", metavar="NAME,...",
        help="group the table and plot by these settings (default: the swept settings "
        "that are not seeds, i.e. not seed or *_seed)",
    )  # fmt: skip
    sweep.set_defaults(handler=_sweep)

    check = commands.add_parser(
        "check",
        help="validate a mission file without moving anything",
        description="Validate a mission; every problem is printed as file:line:column.",
    )
    check.add_argument("mission", metavar="MISSION")
    check.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE",
        help="override a mission parameter (repeatable), as run does",
    )  # fmt: skip
    check.add_argument(
        "--clock", choices=["sim", "real"],
        help="check for this clock instead of the mission's (as run --clock)",
    )  # fmt: skip
    check.add_argument(
        "--seed", type=_seed, default=0,
        help="seed of the faults drawn by random_faults (as run --seed; default 0)",
    )  # fmt: skip
    check.set_defaults(handler=_check)

    tree = commands.add_parser(
        "tree",
        help="print a mission's behaviour tree (ascii, dot, svg, or BehaviorTree.CPP xml)",
        description="Build a mission's tree without starting any agent and print it. "
        "xml is BehaviorTree.CPP v4, which Groot2 opens.",
    )
    tree.add_argument("mission", metavar="MISSION")
    tree.add_argument("--format", choices=["ascii", "dot", "svg", "xml"], default="ascii")
    tree.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    tree.set_defaults(handler=_tree)

    nodes = commands.add_parser(
        "nodes",
        help="list the node types mission trees may use, with their parameters",
        description="List every node type (limbtree's and those of installed packages, "
        "entry-point group limbtree.nodes): kind, parameters with units and defaults, and "
        "the parameters naming the limbs it commands.",
    )
    nodes.add_argument(
        "--format", choices=["text", "json", "markdown"], default="text",
        help="text (default), json for tools, or markdown (docs/nodes.md)",
    )  # fmt: skip
    nodes.add_argument("--builtin", action="store_true", help="only limbtree's own node types")
    nodes.set_defaults(handler=_nodes)

    agent = commands.add_parser(
        "agent",
        help="serve a robot (one plant) or one of its limbs over ZeroMQ",
        description="Run an agent: the robot's limbs as one plant (or one limb with --limb); "
        "requests on PORT, state stream on PORT+1, one topic per limb (or, bound on "
        "ipc://PATH for a runner on the same computer: requests on PATH, state on PATH.state).",
    )
    agent.add_argument("--robot", required=True, help="robot name (see limbtree robots)")
    agent.add_argument(
        "--limb", help="serve only this limb of the robot (a limb on its own computer)"
    )
    agent.add_argument(
        "--base", metavar="X,Y,Z,QX,QY,QZ,QW",
        help="the base in the world [m, unit quaternion]; gravity acts in the world (a "
        "first value below zero needs the = form: --base=-1,0,0,0,0,0,1)",
    )  # fmt: skip
    agent.add_argument(
        "--bind", required=True, metavar="tcp://HOST:PORT",
        help="where to serve: tcp://HOST:PORT, or ipc://PATH (this computer only)",
    )  # fmt: skip
    agent.add_argument(
        "--driver", default="sim",
        help="sim (default), a driver registered under limbtree.drivers, or "
        "package.module:ClassName (a HardwareDriver subclass)",
    )  # fmt: skip
    agent.add_argument(
        "--driver-option", action="append", default=[], metavar="KEY=VALUE",
        help="hardware driver: a keyword argument (text) of its constructor (repeatable)",
    )  # fmt: skip
    agent.add_argument("--keys", metavar="DIR", help="require CURVE with the keys in DIR")
    agent.add_argument(
        "--insecure", action="store_true",
        help="allow a non-loopback --bind without --keys (anyone who reaches it can move "
        "the limbs; a warning is printed)",
    )  # fmt: skip
    agent.add_argument(
        "--allow-remote-shutdown", action="store_true",
        help="let any client stop the agent with a shutdown request (default: only the "
        "runner that started it, by the token in LIMBTREE_AGENT_TOKEN)",
    )  # fmt: skip
    agent.add_argument("--clock", choices=["real", "sim"], default="real")
    agent.add_argument(
        "--rate", type=_rate, default=None,
        help=f"real clock: state stream rate [Hz] (default {DEFAULT_STREAM_RATE_HZ:g})",
    )  # fmt: skip
    agent.add_argument(
        "--seed", type=_seed, default=None,
        help="sim: seed of the simulated limbs' noise (0 or more; default 0)",
    )  # fmt: skip
    agent.add_argument("--name", help="a label for logs (the mission's limb name)")
    agent.add_argument(
        "--parent-pid", type=_parent_pid, metavar="PID",
        help="stop when process PID (the runner that started this agent) is gone; "
        "limbtree run passes it, an agent started by hand needs none",
    )  # fmt: skip
    agent.add_argument(
        "--quiet-steps", action="store_true",
        help="sim clock: do not also publish stepped states on the stream",
    )  # fmt: skip
    agent.add_argument(
        "--sim-option", action="append", default=[], metavar="KEY=VALUE",
        help="simulated driver setting, e.g. joint_noise_rad=0.001 (repeatable)",
    )  # fmt: skip
    agent.add_argument(
        "--plant", choices=["kinematic", "mujoco"], default="kinematic",
        help="sim: kinematic (joints track commands at their speed limits; default) or "
        "mujoco (rigid-body dynamics at 1 kHz with latching and seed 003's torque loop)",
    )  # fmt: skip
    agent.add_argument(
        "--physics", metavar="JSON",
        help='mujoco plant: {"timestep_s", "gravity": [x, y, z], "latched": {FRAME: '
        '"MODULE/GRASP"}, "postures": {LIMB: NAME}, "gains": {...}}',
    )  # fmt: skip
    agent.add_argument(
        "--world", metavar="JSON",
        help='sim: modules in the limb base frame, [{"name", "module", "pose": [7]}]',
    )  # fmt: skip
    agent.set_defaults(handler=_agent)

    agents = commands.add_parser(
        "agents",
        help="serve several sim-clock agents from one process (limbtree run's way)",
        description="Serve several sim-clock agents from one loop in one process, each on "
        "its own ports with its own plant: what limbtree run starts for its simulated "
        "agents (one such process per core). Each --each is the arguments "
        "of one limbtree agent command line.",
    )
    agents.add_argument(
        "--each", action="append", required=True, metavar="ARGS",
        help='one agent\'s limbtree agent arguments, e.g. "--robot light_limb --bind '
        'tcp://127.0.0.1:5555 --clock sim" (repeatable)',
    )  # fmt: skip
    agents.add_argument(
        "--parent-pid", type=_parent_pid, metavar="PID",
        help="stop every agent when process PID (the runner) is gone",
    )  # fmt: skip
    agents.set_defaults(handler=_agents, agent_parser=agent)

    ping = commands.add_parser(
        "ping",
        help="check that an agent answers; print its round trip and description",
    )
    ping.add_argument("endpoint", metavar="ENDPOINT", help="tcp://HOST:PORT or ipc://PATH")
    ping.add_argument("--timeout", type=_timeout, default=3.0, help="give up after this [s], > 0")
    ping.add_argument("--keys", metavar="DIR", help="client keys for a CURVE agent")
    ping.set_defaults(handler=_ping)

    robots = commands.add_parser(
        "robots",
        help="list the robots limbtree knows, with joints, speed limits and end-effectors",
        description="List the robots limbtree knows (built in, and on LIMBTREE_ROBOT_PATH).",
    )
    robots.add_argument("names", nargs="*", metavar="NAME", help="only these robots")
    robots.set_defaults(handler=_robots)

    report = commands.add_parser(
        "report", help="plots and a text summary from a run record (--record DIR)"
    )
    report.add_argument("dir", metavar="DIR")
    report.set_defaults(handler=_report)

    view = commands.add_parser(
        "view",
        help="a web debugger on a run record (--record DIR): tree, timeline, limbs in 3D",
        description="Serve a run record (layouts 1 and 2) in the web debugger and print its "
        "URL; Ctrl-C stops serving it.",
    )
    view.add_argument("dir", metavar="DIR")
    _add_web_flags(view, 8765)
    view.set_defaults(handler=_view)

    keys = commands.add_parser("keys", help="CURVE key management")
    key_commands = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    generate = key_commands.add_parser("generate", help="make agent and client key pairs")
    generate.add_argument("dir", metavar="DIR")
    generate.add_argument(
        "--overwrite", action="store_true",
        help="replace the key files DIR holds (every agent and client then needs the new keys)",
    )  # fmt: skip
    generate.set_defaults(handler=_keys)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("limbtree: interrupted", file=sys.stderr)
        return 130
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except LimbtreeError as exc:
        from limbtree.trees.mission.errors import MissionError  # (an agent starts without it)

        if not isinstance(exc, MissionError):
            print(f"limbtree {args.command}: {exc}", file=sys.stderr)
            return 1
        # One file:line:column line per problem, as editors and CI problem matchers read
        # them, then what they add up to.
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        where = getattr(args, "mission", None) or "the mission"
        print(
            f"limbtree {args.command}: {_count(len(exc.problems), 'problem')} in {where}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(f"limbtree {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``limbtree nodes | head``): stop quietly, as a
        # shell tool does (Python's documented way: stdout to devnull, so the interpreter's
        # own flush at exit does not fail again).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
