"""The runner's I/O: stepping the agents in lockstep, and injecting scheduled faults.

The runner talks to agents, not limbs: one :class:`SteppedAgent` per agent process (one
plant), whichever limbs it serves. :class:`PlantAgent` adapts an
:class:`~limbtree.transport.AgentClient` (wire v2: one agent, every limb of its plant) to it;
:class:`OneLimbAgent` a lone :class:`~limbtree.transport.LimbClient`.

A step's problems split in two:

* the limb is gone (disassembled: ``unavailable``) or its agent is silent (no reply in
  time): the limb's state goes stale, the skills over it hold or recover, the run goes on
  (DESIGN.md, "Reliability");
* the agent answered with an error (its driver raised, it refused the step): that is a bug
  or a misconfiguration, so the run stops at once with an :class:`~limbtree.trees.errors.AgentError`
  naming the limb(s); nothing is swallowed.

One refusal is met instead: an agent restarted during the run (started again by hand, say)
starts at t = 0, and refuses a step more than :data:`MAX_STEP_SPAN_S` ahead. It is caught up
to the run's time in steps of at most that (:func:`catch_up`), and the run goes on with it,
as with an agent restarted earlier in the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from limbtree.transport.agent_client import AgentDescription
from limbtree.transport.driver import LimbDescription
from limbtree.transport.errors import (
    AgentUnreachableError,
    LimbUnavailableError,
    RemoteError,
    RequestTimeoutError,
    TransportError,
)
from limbtree.transport.plant import BaseState
from limbtree.transport.schema import MAX_STEP_SPAN_S, ErrorCode
from limbtree.trees.errors import AgentError

#: How long each step that catches a restarted agent up may take [s]: a ``mujoco`` plant
#: steps its physics through the whole span (about 2.5 s of CPU per minute of it, measured).
CATCH_UP_TIMEOUT_S: Final = 30.0


class SteppedAgent(Protocol):
    """One agent process (one plant) as the runner steps it (``docs/brief`` contract)."""

    limbs: tuple[str, ...]

    @property
    def restarts(self) -> int:
        """How many times the agent restarted (a new session) since the run began."""

    def poll(self) -> object:
        """Take in streamed states, never blocks."""

    def send_step(self, t: float, timeout_s: float) -> None:
        """Ask the agent to advance to ``t`` [s], without waiting."""

    def finish_step(self) -> object:
        """Wait (bounded) for the step's reply; raises TransportError naming the limb(s)."""

    def fault(self, limb: str, kind: str, timeout_s: float, **params: Any) -> object:
        """Inject a fault into one of its limbs (simulated agents)."""

    def describe(self, timeout_s: float) -> Mapping[str, LimbDescription]:
        """Ask the agent what it drives now: the mission's limb name -> its description.

        A limb it no longer serves is missing.

        Raises:
            TransportError: no answer in time, or an error reply.
        """


class SteppedLink(Protocol):
    """What :class:`OneLimbAgent` needs of a one-limb client (a ``LimbClient``)."""

    @property
    def restarts(self) -> int:
        """How many times its agent restarted."""

    def poll(self) -> object:
        """Take in whatever the agent sent, without blocking."""

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Sim clock: ask the agent to advance to ``t``, without waiting."""

    def finish_step(self) -> object:
        """Sim clock: wait (bounded) for the step's reply and take the state."""

    def fault(self, kind: str, timeout_s: float = 1.0, **params: Any) -> object:
        """Inject a fault (simulated agents)."""

    def describe(self, timeout_s: float = 1.0) -> AgentDescription:
        """Ask the agent what it serves (the result's ``limb`` is this limb's)."""


class OneLimbAgent:
    """A one-limb agent (today's wire: one agent per limb) behind :class:`SteppedAgent`.

    Args:
        limb: the mission's name of the limb.
        link: its client.
    """

    def __init__(self, limb: str, link: SteppedLink) -> None:
        self.limbs: tuple[str, ...] = (limb,)
        self.link = link

    @property
    def restarts(self) -> int:
        """How many times the agent restarted."""
        return self.link.restarts

    def poll(self) -> object:
        """Take in the streamed states."""
        return self.link.poll()

    def send_step(self, t: float, timeout_s: float) -> None:
        """Send ``step(t)``."""
        self.link.send_step(t, timeout_s)

    def finish_step(self) -> object:
        """Collect the step's reply."""
        return self.link.finish_step()

    def fault(self, limb: str, kind: str, timeout_s: float, **params: Any) -> object:
        """Inject a fault.

        Raises:
            ValueError: when ``limb`` is not this agent's limb.
        """
        if limb != self.limbs[0]:
            raise ValueError(f"this agent serves limb {self.limbs[0]}, not {limb}")
        return self.link.fault(kind, timeout_s, **params)

    def describe(self, timeout_s: float) -> Mapping[str, LimbDescription]:
        """What the agent drives now, under the mission's name of the limb."""
        return {self.limbs[0]: self.link.describe(timeout_s).limb}


class PlantClient(Protocol):
    """What :class:`PlantAgent` needs of a client of a whole plant (an ``AgentClient``)."""

    @property
    def restarts(self) -> int:
        """How many times the agent restarted."""

    def poll(self) -> object:
        """Take in whatever the agent sent, without blocking."""

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Sim clock: ask the agent to advance every limb to ``t``, without waiting."""

    def finish_step(self) -> object:
        """Sim clock: wait (bounded) for the step's reply and take every limb's state."""

    def fault(self, limb: str | None, kind: str, timeout_s: float = 1.0, **params: Any) -> object:
        """Inject a fault into one of the plant's limbs (its own name for it)."""

    def describe(self, timeout_s: float = 1.0) -> AgentDescription:
        """Ask the agent what it serves."""

    @property
    def base(self) -> BaseState | None:
        """The plant's latest base state in the world, or None before the first."""


class PlantAgent:
    """One agent serving a whole plant (wire v2) behind :class:`SteppedAgent`.

    Args:
        client: the client of the agent.
        limbs: the mission's name of each limb -> the agent's name for it
            (``quad.leg_0`` -> ``leg_0``), in the order the runner lists them.
        robot: the mission's name of the robot (the plant), under which the tick stream
            reports its base; empty: the base is not reported.
    """

    def __init__(self, client: PlantClient, limbs: Mapping[str, str], robot: str = "") -> None:
        self.client = client
        self.limbs: tuple[str, ...] = tuple(limbs)
        self.robot = robot
        self._names = dict(limbs)

    @property
    def base(self) -> BaseState | None:
        """The plant's latest base state in the world (from the last step or stream)."""
        return self.client.base

    @property
    def restarts(self) -> int:
        """How many times the agent restarted."""
        return self.client.restarts

    def poll(self) -> object:
        """Take in the streamed states of every limb."""
        return self.client.poll()

    def send_step(self, t: float, timeout_s: float) -> None:
        """Send ``step(t)``: one request for every limb of the plant."""
        self.client.send_step(t, timeout_s)

    def finish_step(self) -> object:
        """Collect the step's reply: every limb's state and the base."""
        return self.client.finish_step()

    def fault(self, limb: str, kind: str, timeout_s: float, **params: Any) -> object:
        """Inject a fault into one limb, named as the mission names it.

        Raises:
            ValueError: when ``limb`` is not one of this agent's limbs.
        """
        try:
            name = self._names[limb]
        except KeyError:
            raise ValueError(
                f"this agent serves limbs {', '.join(self.limbs)}, not {limb}"
            ) from None
        return self.client.fault(name, kind, timeout_s, **params)

    def describe(self, timeout_s: float) -> Mapping[str, LimbDescription]:
        """What the agent drives now, under the mission's names of the limbs it still serves."""
        plant = self.client.describe(timeout_s).plant
        return {
            limb: plant.limb(name).description
            for limb, name in self._names.items()
            if name in plant.limb_names
        }


def one_limb_agents(links: Mapping[str, SteppedLink]) -> list[OneLimbAgent]:
    """One :class:`OneLimbAgent` per limb client, in name order."""
    return [OneLimbAgent(name, links[name]) for name in sorted(links)]


def goes_stale(exc: TransportError) -> bool:
    """Whether a step's error only makes the limb stale (gone or silent), not the run fail."""
    # Any other RemoteError is an answer: the agent is alive and says it failed. Anything
    # else from the transport is a client-side bug (a step already in flight, a closed client).
    return isinstance(exc, LimbUnavailableError | RequestTimeoutError | AgentUnreachableError)


def too_far_ahead(exc: TransportError, t: float) -> bool:
    """Whether ``exc`` is an agent's refusal of a step to ``t`` [s] as too far ahead of it.

    The agent was restarted (it starts at t = 0): a run steps its agents every tick, so an
    agent it has been stepping is never more than a tick behind.
    """
    return (
        isinstance(exc, RemoteError)
        and exc.code == ErrorCode.BAD_VALUE
        and exc.field == "t"
        and t > MAX_STEP_SPAN_S
    )


def catch_up(agent: SteppedAgent, t: float, timeout_s: float = CATCH_UP_TIMEOUT_S) -> None:
    """Step a restarted sim-clock agent from t = 0 to ``t`` [s], at most a minute at a time.

    Its limbs hold their start meanwhile (nothing commands them); the last step is to ``t``,
    so the agent's states are those of the run's tick.

    Raises:
        TransportError: as a step does (the run then stops, or the limb goes stale).
    """
    done = MAX_STEP_SPAN_S
    while done < t:
        agent.send_step(done, timeout_s)
        agent.finish_step()
        done += MAX_STEP_SPAN_S
    agent.send_step(t, timeout_s)
    agent.finish_step()


def agent_error(agent: SteppedAgent, t: float, exc: Exception) -> AgentError:
    """The error that ends the run when ``agent`` failed its step to ``t``."""
    limbs = ", ".join(agent.limbs)
    noun = "limb" if len(agent.limbs) == 1 else "limbs"
    what = "answered the step" if isinstance(exc, RemoteError) else "failed the step"
    return AgentError(
        tuple(agent.limbs),
        f"{noun} {limbs}: the agent {what} to t={t:.3f} s with an error: {exc} "
        "(the agent's log says more: the record's agents/ folder holds the logs of the "
        "agents this run started; one started by hand logs where it was started)",
    )


class Lockstep:
    """Steps every agent to each tick's time, pipelined: send all, collect all later.

    Args:
        agents: the agents to step.
        timeout_s: how long a step may wait for each agent [s].
    """

    def __init__(self, agents: Sequence[SteppedAgent], timeout_s: float) -> None:
        self.agents = list(agents)
        self.timeout_s = timeout_s
        self.t = 0.0
        self._in_flight: list[TransportError | None] | None = None

    @property
    def started(self) -> bool:
        """Whether a step is in flight."""
        return self._in_flight is not None

    def begin(self, t: float) -> None:
        """Send ``step(t)`` to every agent without waiting: they compute in parallel."""
        in_flight: list[TransportError | None] = []
        for agent in self.agents:
            try:
                agent.send_step(t, self.timeout_s)
                in_flight.append(None)
            except TransportError as exc:
                in_flight.append(exc)
        self.t = t
        self._in_flight = in_flight

    def finish(self) -> list[tuple[SteppedAgent, TransportError]]:
        """Collect the replies of the step in flight.

        Returns:
            The agents whose limbs go stale this tick, with what went wrong.

        Raises:
            AgentError: when an agent answered with an error (naming its limbs).
        """
        in_flight, self._in_flight = self._in_flight or [], None
        stale: list[tuple[SteppedAgent, TransportError]] = []
        failure: AgentError | None = None
        for agent, problem in zip(self.agents, in_flight, strict=False):
            if problem is None:
                try:
                    agent.finish_step()
                except TransportError as exc:
                    problem = exc
            if problem is not None and too_far_ahead(problem, self.t):
                try:
                    catch_up(agent, self.t)
                except TransportError:
                    pass  # (not an agent that starts again at t = 0: its refusal stands)
                else:
                    problem = None
            if problem is None:
                continue
            if goes_stale(problem):
                stale.append((agent, problem))
            elif failure is None:
                failure = agent_error(agent, self.t, problem)
        if failure is not None:
            raise failure
        return stale


__all__ = [
    "CATCH_UP_TIMEOUT_S",
    "Lockstep",
    "OneLimbAgent",
    "PlantAgent",
    "PlantClient",
    "SteppedAgent",
    "SteppedLink",
    "agent_error",
    "catch_up",
    "goes_stale",
    "one_limb_agents",
    "too_far_ahead",
]
