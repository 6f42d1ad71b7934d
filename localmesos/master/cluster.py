"""What the master knows: its agents, frameworks and offers, the roles' settings, and planned
change (agents deactivated or draining, the machines' unavailability).

One record shared by the master's parts; the allocator reads it through its ``AllocatorView``.
"""
from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..agent.agent import Agent
from ..config import MasterConfig, QuotaConfig
from ..resources import Resources
from .framework import Framework, Offer, Task


@dataclass(eq=False)
class AgentRecord:
    """The master's view of a registered agent (Mesos ``Slave``)."""

    agent: Agent
    total: Resources
    available: Resources  # neither offered nor used (unallocated form)
    offered: Resources = field(default_factory=Resources)
    used: Resources = field(default_factory=Resources)
    tasks: dict[tuple[str, str], Task] = field(default_factory=dict)
    executors: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    offers: set[str] = field(default_factory=set)
    registered_time: float = field(default_factory=time.time)
    missed_pings: int = 0
    ping_pending: bool = False  # the last ping found the agent stopped

    @classmethod
    def of(cls, agent: Agent) -> "AgentRecord":
        return cls(agent, agent.total, agent.total.copy())

    def take(self, resources: Resources) -> None:
        self.available = self.available - resources

    def give_back(self, resources: Resources) -> None:
        self.available = self.available + resources

    def hold(self, resources: Resources) -> None:
        """A task's or executor's resources, used from now on."""
        self.used = self.used + resources
        self.take(resources)

    def release(self, resources: Resources) -> None:
        self.used = self.used - resources
        self.give_back(resources)


@dataclass
class DrainInfo:
    """Mesos' DrainInfo of an agent: DRAINING until every task on it is gone (its terminal update
    acknowledged), then DRAINED; the config as DRAIN_AGENT gave it."""

    state: str  # DRAINING | DRAINED
    max_grace_period_ns: int | None
    mark_gone: bool
    started: float  # estimated_drain_start_time (seconds since the epoch)

    def config_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.max_grace_period_ns is not None:
            config["max_grace_period"] = {"nanoseconds": self.max_grace_period_ns}
        config["mark_gone"] = self.mark_gone
        return {"state": self.state, "config": config}


@dataclass
class Cluster:
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    # Marked unreachable (missed their pings), with when: their tasks wait for them here.
    unreachable_agents: dict[str, tuple[AgentRecord, float]] = field(default_factory=dict)
    gone_agents: dict[str, float] = field(default_factory=dict)  # MARK_AGENT_GONE, with when
    frameworks: dict[str, Framework] = field(default_factory=dict)
    completed_frameworks: deque[Framework] = field(default_factory=deque)
    offers: dict[str, Offer] = field(default_factory=dict)
    # Multi-team settings; the operator API changes them at run time.
    weights: dict[str, float] = field(default_factory=dict)
    quotas: dict[str, QuotaConfig] = field(default_factory=dict)
    # Planned change, by agent id (kept while an agent is unreachable, as Mesos' registry keeps it):
    # deactivated agents get no offers; draining ones are deactivated too; an agent of a machine in
    # the maintenance schedule has that machine's Unavailability (JSON), which its offers carry.
    deactivated: set[str] = field(default_factory=set)
    draining: dict[str, DrainInfo] = field(default_factory=dict)
    unavailable: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_config(cls, config: MasterConfig) -> "Cluster":
        return cls(completed_frameworks=deque(maxlen=config.tuning.max_completed_frameworks),
                   weights=dict(config.weights), quotas=dict(config.quotas))

    def connected_frameworks(self) -> list[Framework]:
        return [framework for framework in self.frameworks.values() if framework.connected]


def post(loop: asyncio.AbstractEventLoop, function: Callable[..., Any], *args: Any) -> None:
    """A message to an agent (or a later step of our own), after the caller's: the asynchronous
    order of real Mesos (master -> agent -> master). A stopped agent gets it once it continues."""
    agent = getattr(function, "__self__", None)
    if isinstance(agent, Agent):
        loop.call_soon(agent.deliver, function, *args)
    else:
        loop.call_soon(function, *args)
