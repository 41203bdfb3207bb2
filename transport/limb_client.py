"""One limb of an agent: the surface behaviours and the wave-1 runner use (wire v2).

A :class:`LimbClient` is one limb of an agent with the wave-1 surface behaviours use
(:attr:`~LimbClient.state`, :attr:`~LimbClient.is_stale`, :meth:`~LimbClient.send_command`,
:meth:`~LimbClient.send_gripper`, :meth:`~LimbClient.describe`, ...). Made from an endpoint it
opens its own connection (a limb on its own computer); :meth:`AgentClient.link` gives the
links of one agent's limbs over the agent's single connection.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from limbtree.transport.agent_client import AgentClient, AgentDescription
from limbtree.transport.driver import CommandMode, GripperAction, LimbState
from limbtree.transport.errors import ConfigError, LimbUnavailableError, RemoteError
from limbtree.transport.schema import ErrorCode, StateSample


class LimbClient:
    """One limb of an agent: the surface behaviours and the wave-1 runner use.

    Made from an endpoint, it opens its own connection to that agent (a limb on its own
    computer; every keyword of :class:`AgentClient` applies). Made by
    :meth:`AgentClient.link`, it shares its agent's connection.

    Args:
        endpoint: the agent's request endpoint ``tcp://HOST:N``; None with ``agent``.
        limb: the limb's name in the agent's plant; None for the agent's only limb (learnt
            from ``describe`` or the stream).
        agent: an existing agent client to share (then ``endpoint`` and the keywords are
            not used).
        **options: :class:`AgentClient`'s keywords.

    Raises:
        ConfigError: for a malformed endpoint, or neither an endpoint nor an agent.
        KeysError: when ``keys_dir`` lacks the client's keys.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        limb: str | None = None,
        agent: AgentClient | None = None,
        **options: Any,
    ) -> None:
        self._owns_agent = agent is None
        if agent is None:
            if endpoint is None:
                raise ConfigError("a LimbClient needs an endpoint or an AgentClient")
            agent = AgentClient(endpoint, limbs=None if limb is None else (limb,), **options)
            agent._links[limb or ""] = self
        self._agent = agent
        self._limb = limb
        self._commands_sent = 0
        self._last_command_seq = 0
        self._commands_dropped = 0
        self._command_errors = 0
        self._last_error: RemoteError | None = None

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def agent(self) -> AgentClient:
        """The agent client underneath."""
        return self._agent

    @property
    def limb(self) -> str | None:
        """The limb's name in the agent's plant (None until learnt, for an only limb)."""
        if self._limb is None and len(self._agent.limbs) == 1:
            self._limb = self._agent.limbs[0]
        return self._limb

    @property
    def endpoint(self) -> str:
        """The agent's request endpoint."""
        return self._agent.endpoint

    @property
    def state_endpoint(self) -> str:
        """The agent's state stream endpoint."""
        return self._agent.state_endpoint

    def _name(self) -> str | None:
        name = self.limb
        if name is None and len(self._agent._samples) == 1:
            name = next(iter(self._agent._samples))
        return name

    @property
    def state(self) -> LimbState | None:
        """The latest state received, or None before the first one."""
        name = self._name()
        return None if name is None else self._agent.state(name)

    @property
    def sample(self) -> StateSample | None:
        """The latest state with its agent sequence number and agent time, or None."""
        name = self._name()
        return None if name is None else self._agent.sample(name)

    @property
    def received_at(self) -> float | None:
        """When (by the client's clock) the latest state arrived [s], or None."""
        name = self._name()
        return None if name is None else self._agent.received_at(name)

    @property
    def is_stale(self) -> bool:
        """True when no state has arrived for ``stale_after_s`` (or none ever has)."""
        name = self._name()
        return name is None or self._agent.is_stale(name)

    @property
    def disassembled(self) -> bool:
        """Whether the agent's last step said this limb is disassembled (sim clock)."""
        name = self._name()
        return name is not None and self._agent.is_disassembled(name)

    @property
    def stale_after_s(self) -> float:
        """The staleness threshold [s]."""
        return self._agent.stale_after_s

    @property
    def commands_sent(self) -> int:
        """How many commands went out."""
        return self._commands_sent

    @property
    def last_command_seq(self) -> int:
        """The ``seq`` of the latest command that went out (0 before any)."""
        return self._last_command_seq

    @property
    def commands_dropped(self) -> int:
        """How many commands were dropped: no connection to the agent, or the queue was full."""
        return self._commands_dropped

    @property
    def command_errors(self) -> int:
        """How many commands (and claims) the agent refused (see :attr:`last_error`)."""
        return self._command_errors

    @property
    def last_error(self) -> RemoteError | None:
        """The latest error reply to a command, gripper action or claim sent, or None."""
        return self._last_error

    @property
    def stale_replies(self) -> int:
        """Replies discarded because their request had timed out or was unknown."""
        return self._agent.stale_replies

    @property
    def bad_messages(self) -> int:
        """Messages from the agent that could not be decoded (and were ignored)."""
        return self._agent.bad_messages

    @property
    def restarts(self) -> int:
        """How many times the agent was seen restarting (its state ``session`` changed)."""
        return self._agent.restarts

    def clear_error(self) -> None:
        """Forget :attr:`last_error`."""
        self._last_error = None

    # ----------------------------------------------------------------------------------------
    # Non-blocking side

    def poll(self) -> bool:
        """Take in whatever the agent sent, without blocking (call once per tick)."""
        return self._agent.poll()

    def send_command(self, mode: CommandMode | str, **fields: Any) -> bool:
        """Send a command without waiting (see :meth:`AgentClient.send_command`)."""
        return self._agent.send_command(self.limb, mode, _link=self, **fields)

    def send_gripper(self, action: GripperAction | str) -> bool:
        """Ask for the gripper to open or close, without waiting."""
        return self._agent.send_gripper(self.limb, action, _link=self)

    def send_claim(self) -> bool:
        """Renew this client's command of the limb without waiting, moving nothing.

        See :meth:`AgentClient.send_claim`; a refusal shows in :attr:`last_error`.
        """
        return self._agent.send_claim(self.limb, _link=self)

    # ----------------------------------------------------------------------------------------
    # Request/reply helpers (blocking up to a timeout)

    def describe(self, timeout_s: float = 1.0) -> AgentDescription:
        """Ask the agent what it serves; the result's ``limb`` is this limb's description.

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: when the agent answered with an error (or has no such limb).
            ProtocolError: when the reply is malformed.
        """
        description = self._agent.describe(timeout_s)
        name = self.limb or description.plant.limbs[0].name
        if len(description.plant.limbs) > 1 and self.limb is None:
            raise RemoteError(
                ErrorCode.UNKNOWN_LIMB,
                f"this agent serves limbs {', '.join(description.plant.limb_names)}: "
                "give the LimbClient a limb",
                endpoint=self.endpoint,
                field="limb",
            )
        try:
            description.plant.limb(name)
        except Exception as exc:
            raise RemoteError(
                ErrorCode.UNKNOWN_LIMB, str(exc), endpoint=self.endpoint, field="limb"
            ) from None
        self._limb = name
        return dataclasses.replace(description, limb_name=name)

    def ping(self, timeout_s: float = 1.0) -> float:
        """Measure the round trip to the agent [s]."""
        return self._agent.ping(timeout_s)

    def step(self, t: float, timeout_s: float = 1.0) -> LimbState:
        """Advance a sim-clock agent to ``t`` and return this limb's state (lockstep).

        Raises:
            RequestTimeoutError: when no reply came in time.
            LimbUnavailableError: when the limb is disassembled.
            RemoteError: for other refusals (``wrong_clock``, ``bad_value``, ...).
        """
        self.send_step(t, timeout_s)
        return self.finish_step()

    def send_step(self, t: float, timeout_s: float = 1.0) -> None:
        """Send ``step(t)`` to the agent without waiting (one limb per agent only)."""
        self._agent.send_step(t, timeout_s)

    def finish_step(self) -> LimbState:
        """Collect the step's reply and return this limb's state.

        Raises:
            LimbUnavailableError: when the limb is disassembled.
            TransportError: as :meth:`AgentClient.finish_step`.
        """
        step = self._agent.finish_step()
        name = self.limb
        if name is None and len(step.states) == 1:
            name = next(iter(step.states))
            self._limb = name
        state = None if name is None else step.states.get(name)
        if state is None:
            raise LimbUnavailableError(
                ErrorCode.UNAVAILABLE,
                f"limb {name!r} is disassembled",
                endpoint=self.endpoint,
            )
        return state

    def fault(self, kind: str, timeout_s: float = 1.0, **params: Any) -> None:
        """Inject a fault into the simulated limb (see :meth:`AgentClient.fault`)."""
        self._agent.fault(self.limb, kind, timeout_s, **params)

    def gripper(self, action: GripperAction | str, timeout_s: float = 1.0) -> None:
        """Open or close the gripper and wait for the agent to accept it."""
        self._agent.gripper(self.limb, action, timeout_s)

    def command(self, mode: CommandMode | str, timeout_s: float = 1.0, **fields: Any) -> None:
        """Send a command and wait for the agent to accept it (setup and tests)."""
        self._agent.command(self.limb, mode, timeout_s, **fields)

    def claim(self, timeout_s: float = 1.0) -> list[str]:
        """Become the limb's commander, moving nothing (see :meth:`AgentClient.claim`).

        Returns:
            The limbs claimed (this one).

        Raises:
            RequestTimeoutError: when no reply came in time.
            RemoteError: ``commanded_elsewhere`` when another client commands the limb.
        """
        return self._agent.claim(self.limb, timeout_s)

    def shutdown(self, timeout_s: float = 1.0, token: str | None = None) -> None:
        """Ask the agent process to stop serving (``token``: its owner token, if any)."""
        self._agent.shutdown(timeout_s, token)

    # ----------------------------------------------------------------------------------------
    # Life cycle

    def close(self) -> None:
        """Close the connection when this link made it. Idempotent."""
        if self._owns_agent:
            self._agent.close()

    def __enter__(self) -> LimbClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
