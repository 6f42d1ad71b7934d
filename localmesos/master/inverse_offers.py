"""Inverse offers: the maintenance half of the allocator (Mesos' ``generateInverseOffers`` and the
master's inverse offer records), as traces 16 and 17 show it.

An agent of a machine in the maintenance schedule has an unavailability. After each allocation
round, every active, connected framework that holds something on such an agent (a task, an
executor, an offer) and has no inverse offer for it out gets one, in one ``INVERSE_OFFERS`` event
per framework. It is not repeated while unanswered. ACCEPT_INVERSE_OFFERS / DECLINE_INVERSE_OFFERS
record the answer (``/maintenance/status`` shows it: it is advisory, nothing else changes) and
filter the agent's next inverse offer for ``refuse_seconds`` (5 s by default), after which the next
round sends a new one. A changed unavailability, a deactivated or removed agent rescind them.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..ids import IdGenerator
from .allocator import DEFAULT_REFUSE_SECONDS, MAX_REFUSE_SECONDS
from .cluster import AgentRecord, Cluster


@dataclass
class InverseOffer:
    id: str
    framework_id: str
    agent_id: str
    unavailability: dict[str, Any]


@dataclass
class AgentMaintenance:
    """What the allocator keeps for an agent with an unavailability (Mesos' ``Slave::Maintenance``)."""

    unavailability: dict[str, Any]
    outstanding: set[str] = field(default_factory=set)  # frameworks with an inverse offer out
    statuses: dict[str, dict[str, Any]] = field(default_factory=dict)  # framework id -> its last answer


class InverseOfferBook:
    def __init__(self, cluster: Cluster, ids: IdGenerator) -> None:
        self._cluster = cluster
        self._ids = ids
        self.offers: dict[str, InverseOffer] = {}
        self._agents: dict[str, AgentMaintenance] = {}
        self._filters: dict[tuple[str, str], float] = {}  # (framework id, agent id) -> monotonic expiry

    def set_unavailability(self, agent_id: str, unavailability: dict[str, Any] | None) -> None:
        """The agent's machine got a new unavailability (None: none any more): its inverse offers
        are rescinded, the frameworks' filters for it and their answers forgotten."""
        self.rescind_agent(agent_id)
        for key in [k for k in self._filters if k[1] == agent_id]:
            del self._filters[key]
        if unavailability is None:
            self._agents.pop(agent_id, None)
            self._cluster.unavailable.pop(agent_id, None)
        else:
            self._agents[agent_id] = AgentMaintenance(unavailability)
            self._cluster.unavailable[agent_id] = unavailability

    def statuses(self, agent_id: str) -> list[dict[str, Any]]:
        """The frameworks' answers for the agent, as ``/maintenance/status`` lists them."""
        maintenance = self._agents.get(agent_id)
        return list(maintenance.statuses.values()) if maintenance is not None else []

    # -- sending --------------------------------------------------------------------
    def send(self) -> None:
        """After an allocation round: inverse offers to whoever holds something on an agent with an
        unavailability and has none out for it (nor a filter)."""
        if not self._agents:
            return
        cluster = self._cluster
        now = time.monotonic()
        batches: dict[str, list[InverseOffer]] = {}
        for agent_id, maintenance in self._agents.items():
            record = cluster.agents.get(agent_id)
            if record is None or agent_id in cluster.deactivated:
                continue
            for framework_id in _holders(record, cluster):
                framework = cluster.frameworks.get(framework_id)
                if framework is None or not framework.active or not framework.connected:
                    continue
                if framework_id in maintenance.outstanding or self._filters.get((framework_id, agent_id), 0) > now:
                    continue
                offer = InverseOffer(self._ids.offer_id(), framework_id, agent_id, maintenance.unavailability)
                self.offers[offer.id] = offer
                maintenance.outstanding.add(framework_id)
                batches.setdefault(framework_id, []).append(offer)
        for framework_id, offers in batches.items():
            rendered = [{"id": {"value": o.id}, "url": cluster.agents[o.agent_id].agent.url(),
                         "framework_id": {"value": framework_id}, "agent_id": {"value": o.agent_id},
                         "unavailability": o.unavailability} for o in offers]
            cluster.frameworks[framework_id].send({"type": "INVERSE_OFFERS",
                                                   "inverse_offers": {"inverse_offers": rendered}})

    # -- answers (ACCEPT_INVERSE_OFFERS, DECLINE_INVERSE_OFFERS) -----------------------
    def answer(self, ids: list[str], accepted: bool, filters: dict[str, Any] | None) -> None:
        """Unknown ids are ignored (the call is 202 all the same), as Mesos ignores them."""
        for offer_id in ids:
            offer = self.offers.pop(offer_id, None)
            if offer is None:
                continue
            maintenance = self._agents.get(offer.agent_id)
            if maintenance is not None and offer.framework_id in maintenance.outstanding:
                maintenance.outstanding.discard(offer.framework_id)
                maintenance.statuses[offer.framework_id] = {
                    "status": "ACCEPT" if accepted else "DECLINE",
                    "framework_id": {"value": offer.framework_id},
                    "timestamp": {"nanoseconds": time.time_ns()}}
            timeout = _refuse_seconds(filters)
            if timeout > 0:
                self._filters[(offer.framework_id, offer.agent_id)] = time.monotonic() + timeout

    # -- ending them ------------------------------------------------------------------
    def rescind_agent(self, agent_id: str) -> None:
        """The agent's inverse offers end with RESCIND_INVERSE_OFFER (unavailability changed, agent
        deactivated or removed)."""
        for offer in [o for o in self.offers.values() if o.agent_id == agent_id]:
            self._remove(offer)
            framework = self._cluster.frameworks.get(offer.framework_id)
            if framework is not None:
                framework.send({"type": "RESCIND_INVERSE_OFFER",
                                "rescind_inverse_offer": {"inverse_offer_id": {"value": offer.id}}})

    def drop_framework(self, framework_id: str) -> None:
        """The framework disconnected, failed over or ended: its inverse offers go, unrescinded."""
        for offer in [o for o in self.offers.values() if o.framework_id == framework_id]:
            self._remove(offer)

    def _remove(self, offer: InverseOffer) -> None:
        self.offers.pop(offer.id, None)
        maintenance = self._agents.get(offer.agent_id)
        if maintenance is not None:
            maintenance.outstanding.discard(offer.framework_id)


def _holders(record: AgentRecord, cluster: Cluster) -> list[str]:
    """Frameworks with resources offered or allocated on the agent, each once."""
    holders = {task.framework_id: None for task in record.tasks.values() if not task.terminal}
    holders.update((framework_id, None) for framework_id in record.executors)
    holders.update((cluster.offers[offer_id].framework_id, None) for offer_id in record.offers)
    return list(holders)


def _refuse_seconds(filters: dict[str, Any] | None) -> float:
    """The inverse offer filter (HierarchicalAllocatorProcess::updateInverseOffer): unlike an offer
    filter, not stretched to the allocation interval."""
    seconds = (filters or {}).get("refuse_seconds", DEFAULT_REFUSE_SECONDS)
    if seconds != seconds or seconds < 0:
        seconds = DEFAULT_REFUSE_SECONDS
    return min(seconds, MAX_REFUSE_SECONDS)
