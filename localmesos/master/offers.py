"""Offers: made from the allocator's grants, sent as OFFERS, and ended (used, declined, rescinded).

An offer holds its agent's resources from when it is made until it ends; what it did not use goes
back to the agent, behind a decline filter when the framework asked for one.
"""
from __future__ import annotations

from typing import Any

from ..ids import IdGenerator
from ..resources import Resources
from .allocator import Allocator, Grant
from .cluster import AgentRecord, Cluster
from .framework import Framework, Offer


class OfferBook:
    def __init__(self, cluster: Cluster, ids: IdGenerator) -> None:
        self._cluster = cluster
        self._ids = ids

    def make(self, grants: list[Grant]) -> None:
        """The allocator's sink: one offer per grant, one OFFERS event per framework."""
        batches: dict[str, list[Offer]] = {}
        for grant in grants:
            offer = self._create(grant.framework, grant.agent, grant.role, grant.resources)
            batches.setdefault(grant.framework.id, []).append(offer)
        for framework_id, offers in batches.items():
            self._send(self._cluster.frameworks[framework_id], offers)

    def _create(self, framework: Framework, record: AgentRecord, role: str, resources: Resources) -> Offer:
        offer = Offer(self._ids.offer_id(), framework.id, record.agent.id, role, resources.allocate(role))
        record.take(resources)
        record.offered = record.offered + resources
        record.offers.add(offer.id)
        framework.offers[offer.id] = offer
        self._cluster.offers[offer.id] = offer
        return offer

    def _send(self, framework: Framework, offers: list[Offer]) -> None:
        style = "refined" if framework.has_capability("RESERVATION_REFINEMENT") else "offer"
        rendered = []
        for offer in offers:
            record = self._cluster.agents[offer.agent_id]
            entry: dict[str, Any] = {
                "id": {"value": offer.id},
                "framework_id": {"value": framework.id},
                "agent_id": {"value": offer.agent_id},
                "hostname": record.agent.hostname,
                "url": record.agent.url(),
                "resources": offer.resources.to_json(style),
            }
            executors = record.executors.get(framework.id)
            if executors:
                entry["executor_ids"] = [{"value": e} for e in executors]
            unavailability = self._cluster.unavailable.get(offer.agent_id)
            if unavailability is not None:  # its machine is in the maintenance schedule (trace 16)
                entry["unavailability"] = unavailability
            entry["allocation_info"] = {"role": offer.role}
            rendered.append(entry)
        framework.send({"type": "OFFERS", "offers": {"offers": rendered}})

    def forget(self, offer: Offer) -> None:
        """Drop the offer record; its resources stay with the caller."""
        cluster = self._cluster
        cluster.offers.pop(offer.id, None)
        framework = cluster.frameworks.get(offer.framework_id)
        if framework is not None:
            framework.offers.pop(offer.id, None)
        record = cluster.agents.get(offer.agent_id)
        if record is not None:
            record.offers.discard(offer.id)
            record.offered = record.offered - offer.resources.unallocate()

    def remove(self, offer: Offer, rescind: bool, filter_timeout: float = 0.0) -> None:
        """End the offer: its resources go back to the agent (RESCIND first when ``rescind``)."""
        self.forget(offer)
        framework = self._cluster.frameworks.get(offer.framework_id)
        record = self._cluster.agents.get(offer.agent_id)
        if rescind and framework is not None:
            framework.send({"type": "RESCIND", "rescind": {"offer_id": {"value": offer.id}}})
        if record is not None:
            self.recover(record, offer.resources.unallocate(), framework, offer.role, filter_timeout)

    def remove_all(self, offer_ids: set[str] | list[str], rescind: bool) -> None:
        for offer_id in list(offer_ids):
            self.remove(self._cluster.offers[offer_id], rescind)

    @staticmethod
    def recover(record: AgentRecord, resources: Resources, framework: Framework | None, role: str,
                filter_timeout: float) -> None:
        """Unused resources back to the agent; a framework that asked keeps them filtered a while."""
        if resources.empty():
            return
        record.give_back(resources)
        if framework is not None and filter_timeout > 0:
            Allocator.add_filter(framework, role, record.agent.id, resources, filter_timeout)
