"""The operator's DRAIN_AGENT, DEACTIVATE_AGENT and REACTIVATE_AGENT, as Mesos 1.12 answers them
(``Master::Http::_drainAgent`` and its neighbours; traces 13-15).

A deactivated agent gets no offers (its open ones are rescinded at once) and its tasks run on. A
draining agent is deactivated too, and told to kill every task (``Agent.drain``: the cap on the kill
policy, REASON_AGENT_DRAINING); it is DRAINING until no task is left on it, that is until every
terminal update is acknowledged, then DRAINED (or marked gone, with ``mark_gone``). It stays
deactivated until REACTIVATE_AGENT, which Mesos refuses while it is still DRAINING. Nothing is said
to the frameworks but the tasks' updates: they read ``GET_AGENTS`` or ``/state``.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable

from ..agent.agent import Agent
from .cluster import AgentRecord, Cluster, DrainInfo, post
from .inverse_offers import InverseOfferBook
from .offers import OfferBook


class Drains:
    def __init__(self, cluster: Cluster, loop: asyncio.AbstractEventLoop, offers: OfferBook,
                 inverse_offers: InverseOfferBook, scheduled_machine: Callable[[Agent], dict[str, str] | None],
                 mark_gone: Callable[[str], Any]) -> None:
        self._cluster = cluster
        self._loop = loop
        self._offers = offers
        self._inverse_offers = inverse_offers
        self._scheduled_machine = scheduled_machine
        self._mark_gone = mark_gone

    def drain(self, agent_id: str, max_grace_period_ns: int | None, mark_gone: bool) -> tuple[int, str]:
        """(HTTP status, Mesos' refusal text)."""
        cluster = self._cluster
        record = cluster.agents.get(agent_id)
        if record is not None:
            machine = self._scheduled_machine(record.agent)
            if machine is not None:
                return 400, f"Agent {agent_id} is part of a maintenance schedule under Machine {describe(machine)}"
        elif agent_id not in cluster.unreachable_agents:
            return 400, "Unknown agent"
        cluster.draining[agent_id] = DrainInfo("DRAINING", max_grace_period_ns, mark_gone, time.time())
        cluster.deactivated.add(agent_id)
        if record is not None:
            self._deactivate(record)
            self._tell(record)
        return 200, ""

    def deactivate(self, agent_id: str) -> tuple[int, str]:
        cluster = self._cluster
        record = cluster.agents.get(agent_id)
        if record is None and agent_id not in cluster.unreachable_agents:
            return 400, "Unknown agent"
        cluster.deactivated.add(agent_id)
        if record is not None:
            self._deactivate(record)
        return 200, ""

    def reactivate(self, agent_id: str) -> tuple[int, str]:
        """Offers from the agent again from the next allocation round (Mesos' allocator does not
        run one for it)."""
        cluster = self._cluster
        if agent_id not in cluster.deactivated:
            return 400, "Agent is not deactivated"
        drain = cluster.draining.get(agent_id)
        if drain is not None and drain.state == "DRAINING":
            return 400, "Agent is still in the DRAINING state"
        cluster.draining.pop(agent_id, None)
        cluster.deactivated.discard(agent_id)
        if agent_id not in cluster.agents:
            return 409, "Agent removed while processing the call"
        return 200, ""

    def check_drained(self, record: AgentRecord) -> None:
        """Master::checkAndTransitionDrainingAgent: a task left the agent's books."""
        drain = self._cluster.draining.get(record.agent.id)
        if drain is None or drain.state != "DRAINING" or record.tasks:
            return
        if drain.mark_gone:
            self._loop.call_soon(self._mark_gone, record.agent.id)  # after the registry, as Mesos does
        else:
            drain.state = "DRAINED"

    def reregistered(self, record: AgentRecord) -> None:
        """An agent back from unreachable is told its drain again (Mesos resends the DrainConfig)."""
        if record.agent.id in self._cluster.draining:
            self._tell(record)

    def _tell(self, record: AgentRecord) -> None:
        drain = self._cluster.draining[record.agent.id]
        post(self._loop, record.agent.drain, drain.max_grace_period_ns, drain.mark_gone)
        self.check_drained(record)

    def _deactivate(self, record: AgentRecord) -> None:
        """Master::deactivate(Slave*): its offers and inverse offers are rescinded."""
        self._offers.remove_all(record.offers, rescind=True)
        self._inverse_offers.rescind_agent(record.agent.id)


def describe(machine: dict[str, str]) -> str:
    """A MachineID as Mesos prints it: ``host (ip)``, ``host`` or ``(ip)``."""
    if "hostname" in machine and "ip" in machine:
        return f"{machine['hostname']} ({machine['ip']})"
    return machine["hostname"] if "hostname" in machine else f"({machine['ip']})"

