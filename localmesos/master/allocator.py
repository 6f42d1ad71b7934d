"""Batch allocation rounds, like Mesos' hierarchical allocator (simplified).

Rounds run every ``allocation_interval`` and right after a framework
subscribes, an agent registers or a REVIVE.  Per agent, everything that is
neither used nor offered goes, as one offer, to the least-served framework
(role) that may have it: not suppressed, not filtered by an earlier decline
of a superset, GPU-capable if the agent has GPUs, and only if the resources
reach the minimum allocatable size (``cpus:0.01|mem:32``).

A round is one pass over the agents with O(1) work for an agent that has
nothing to offer, so 1,000 idle agents cost well under a millisecond. An agent's
resources reserved to a role go only to that role's frameworks; its unreserved
resources may go to several frameworks, one offer each (``FairOrder`` decides who
is first: quota guarantees, weighted DRF among roles, DRF within a role). A deactivated or
draining agent is offered nothing; after each round, ``after_round`` sends the inverse offers.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Callable, Iterable, Mapping, Protocol

from ..config import QuotaConfig
from .framework import Framework, OfferFilter
from ..resources import Resources, to_fixed
from .usage import (SHARE_RESOURCES, cluster_totals, framework_allocation, role_allocations,
                    unallocated_reservations, unreserved_available)

if TYPE_CHECKING:
    from .cluster import AgentRecord

log = logging.getLogger(__name__)

MIN_CPUS = to_fixed(0.01)
MIN_MEM = to_fixed(32.0)
MAX_REFUSE_SECONDS = 365 * 24 * 3600.0
DEFAULT_REFUSE_SECONDS = 5.0


class AllocatorView(Protocol):
    """What an allocation round reads of the master (``cluster.Cluster`` is one). The allocator
    changes none of it but its own state on the frameworks: offer filters and suppressed roles."""

    @property
    def agents(self) -> Mapping[str, "AgentRecord"]: ...

    @property
    def frameworks(self) -> Mapping[str, Framework]: ...

    @property
    def weights(self) -> Mapping[str, float]: ...

    @property
    def quotas(self) -> Mapping[str, QuotaConfig]: ...

    @property
    def deactivated(self) -> AbstractSet[str]: ...  # agent ids offered nothing (deactivated, draining)


@dataclass(frozen=True)
class Grant:
    """One offer a round decided: ``resources`` (unallocated) of ``agent`` to ``framework`` as ``role``."""

    framework: Framework
    role: str
    agent: "AgentRecord"
    resources: Resources


# What the master does with a round's decisions: make the offers and send them.
OfferSink = Callable[[list[Grant]], None]


def refuse_timeout(filters: dict | None, allocation_interval: float) -> float:
    """Seconds a DECLINE/ACCEPT filter lasts (0 = no filter), as recoverResources()."""
    seconds = (filters or {}).get("refuse_seconds", DEFAULT_REFUSE_SECONDS)
    if seconds != seconds or seconds < 0:  # NaN or negative: default
        seconds = DEFAULT_REFUSE_SECONDS
    seconds = min(seconds, MAX_REFUSE_SECONDS)
    if seconds == 0:
        return 0.0
    # The filter must survive until the next allocation (MESOS-4302).
    return max(seconds, allocation_interval)


class Allocator:
    def __init__(self, view: AllocatorView, make_offers: OfferSink, loop: asyncio.AbstractEventLoop,
                 interval: float, after_round: Callable[[], None] = lambda: None) -> None:
        self._view = view
        self._make_offers = make_offers
        self._after_round = after_round  # the maintenance half: inverse offers
        self._loop = loop
        self._interval = interval
        self._tick: asyncio.TimerHandle | None = None
        self._pending = False
        self.rounds = 0
        self.last_round_seconds = 0.0
        self.max_round_seconds = 0.0  # with rounds/last: Mesos' allocation_run_ms timer
        self.total_round_seconds = 0.0

    def start(self) -> None:
        self._schedule_tick()

    def stop(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None

    def trigger(self) -> None:
        """Run a round soon (coalesced), outside the caller's stack."""
        if not self._pending:
            self._pending = True
            self._loop.call_soon(self._triggered)

    def _triggered(self) -> None:
        self._pending = False
        self.allocate()

    def _schedule_tick(self) -> None:
        self._tick = self._loop.call_later(self._interval, self._on_tick)

    def _on_tick(self) -> None:
        self._schedule_tick()
        self.allocate()

    # -- filters ------------------------------------------------------------
    @staticmethod
    def add_filter(framework: Framework, role: str, agent_id: str, refused: Resources, timeout: float) -> None:
        if timeout <= 0 or refused.empty():
            return
        framework.filters.setdefault((role, agent_id), []).append(
            OfferFilter(refused.unallocate(), time.monotonic() + timeout))

    @staticmethod
    def _filtered(framework: Framework, role: str, agent_id: str, resources: Resources, now: float) -> bool:
        filters = framework.filters.get((role, agent_id))
        if not filters:
            return False
        live = [f for f in filters if f.expires_at > now]
        if len(live) != len(filters):
            if live:
                framework.filters[(role, agent_id)] = live
            else:
                del framework.filters[(role, agent_id)]
        return any(f.refused.contains(resources) for f in live)

    def revive(self, framework: Framework, roles: Iterable[str]) -> None:
        roles = set(roles)
        framework.suppressed_roles -= roles
        for key in [k for k in framework.filters if k[0] in roles]:
            del framework.filters[key]
        self.trigger()

    # -- the round ----------------------------------------------------------
    def allocate(self) -> None:
        started = time.perf_counter()
        view = self._view
        candidates = [
            (framework, role)
            for framework in view.frameworks.values()
            if framework.active and framework.connected
            for role in framework.roles
            if role not in framework.suppressed_roles
        ]
        if candidates:
            self._allocate(view, candidates)
        self._after_round()
        self.rounds += 1
        self.last_round_seconds = time.perf_counter() - started
        self.max_round_seconds = max(self.max_round_seconds, self.last_round_seconds)
        self.total_round_seconds += self.last_round_seconds

    def _allocate(self, view: AllocatorView, candidates: list[tuple[Framework, str]]) -> None:
        now = time.monotonic()
        order = FairOrder(view, candidates)
        grants: list[Grant] = []
        deactivated = view.deactivated
        for record in view.agents.values():
            available = record.available
            if available.empty() or not _allocatable(available) or (deactivated and record.agent.id in deactivated):
                continue
            reserved = bool(available.reserved_roles())
            for framework, role in order.sorted():
                if record.agent.has_gpus and not framework.has_capability("GPU_RESOURCES"):
                    continue
                # A role gets its own reservations and the shared pool, never another role's.
                offerable = available.allocatable_to(role) if reserved else available
                offerable = order.within_limit(role, offerable)
                if offerable.empty() or not _allocatable(offerable):
                    continue
                if self._filtered(framework, role, record.agent.id, offerable, now):
                    continue
                grants.append(Grant(framework, role, record, offerable))
                order.charge(framework, role, offerable)
                available = available - offerable
                if available.empty() or not _allocatable(available):
                    break
                reserved = bool(available.reserved_roles())
        if grants:
            self._make_offers(grants)


class FairOrder:
    """Who is offered first, as Mesos' hierarchical allocator decides it.

    Roles with an unmet quota guarantee come first; then roles by weighted dominant share
    (DRF: the largest fraction of any cluster resource the role holds, divided by its weight),
    then, within a role, frameworks by their own dominant share. Quota limits cap what a role
    is offered (its allocation plus its unallocated reservations never exceed the limit).
    Headroom, as Mesos keeps it: the unreserved resources nobody holds never fall below the
    roles' unmet guarantees, so a role is offered from the shared pool only what exceeds the
    other roles' unmet guarantees (its own count as its to take). Shares, the free pool and
    consumption are computed once per round and updated per offer: no O(n^2).
    """

    def __init__(self, view: AllocatorView, candidates: list[tuple[Framework, str]]) -> None:
        self._candidates = candidates
        self._weights = view.weights
        self._quotas = {role: q for role, q in view.quotas.items() if q.guarantees or q.limits}
        roles = {role for _, role in candidates}
        self._rank = len(candidates) > 1
        self._totals = cluster_totals(view.agents.values()) if self._rank else {}
        self._framework_alloc: dict[str, dict[str, float]] = {}
        self._role_alloc: dict[str, dict[str, float]] = {}
        self._consumed: dict[str, dict[str, float]] = {}
        if self._rank:
            for framework, _ in candidates:
                self._framework_alloc[framework.id] = framework_allocation(framework)
        if self._rank and len(roles) > 1 or self._quotas:
            self._role_alloc = role_allocations(view.frameworks)
        self._guarantees = {role: q.guarantees for role, q in self._quotas.items() if q.guarantees}
        self._free = unreserved_available(view.agents.values()) if self._guarantees else {}
        if self._quotas:
            unallocated = unallocated_reservations(view.agents.values(), set(self._quotas))
            for role in self._quotas:
                allocated = self._role_alloc.get(role, {})
                reserved = unallocated.get(role, {})
                self._consumed[role] = {name: allocated.get(name, 0.0) + reserved.get(name, 0.0)
                                        for name in set(allocated) | set(reserved)}

    def sorted(self) -> list[tuple[Framework, str]]:
        if self._rank:
            self._candidates.sort(key=self._key)
        return self._candidates

    def _key(self, candidate: tuple[Framework, str]) -> tuple[int, float, float]:
        framework, role = candidate
        return (0 if self._below_guarantee(role) else 1,
                _dominant_share(self._role_alloc.get(role, {}), self._totals) / self._weights.get(role, 1.0),
                _dominant_share(self._framework_alloc.get(framework.id, {}), self._totals))

    def _below_guarantee(self, role: str) -> bool:
        quota = self._quotas.get(role)
        if quota is None or not quota.guarantees:
            return False
        consumed = self._consumed.get(role, {})
        return any(consumed.get(name, 0.0) < amount for name, amount in quota.guarantees.items())

    def _unmet(self, role: str) -> dict[str, float]:
        consumed = self._consumed.get(role, {})
        return {name: max(0.0, amount - consumed.get(name, 0.0))
                for name, amount in self._guarantees.get(role, {}).items()}

    def within_limit(self, role: str, offerable: Resources) -> Resources:
        """What ``role`` may be offered of ``offerable``: its quota limit and the others' headroom."""
        quota = self._quotas.get(role)
        if (quota is None or not quota.limits) and not self._guarantees:
            return offerable
        # Reservations already count against the limit and are nobody else's headroom: only the
        # shared pool is cut down.
        unreserved = offerable.unreserved()
        reserved = offerable - unreserved
        consumed = self._consumed.get(role, {})
        for name, limit in (quota.limits.items() if quota is not None else ()):
            unreserved = unreserved.cap_scalar(name, limit - consumed.get(name, 0.0))
        if self._guarantees:
            headroom: dict[str, float] = {}
            for other in self._guarantees:
                if other != role:
                    for name, amount in self._unmet(other).items():
                        headroom[name] = headroom.get(name, 0.0) + amount
            for name, amount in headroom.items():
                unreserved = unreserved.cap_scalar(name, self._free.get(name, 0.0) - amount)
        return reserved + unreserved

    def charge(self, framework: Framework, role: str, offered: Resources) -> None:
        amounts = offered.scalars()
        for book in (self._framework_alloc.setdefault(framework.id, {}) if self._rank else None,
                     self._role_alloc.setdefault(role, {}) if self._role_alloc or self._quotas else None):
            if book is not None:
                for name, amount in amounts.items():
                    book[name] = book.get(name, 0.0) + amount
        if role in self._consumed or self._free:
            from_pool = offered.unreserved().scalars()
            consumed = self._consumed.get(role)
            for name, amount in from_pool.items():
                if consumed is not None:
                    consumed[name] = consumed.get(name, 0.0) + amount
                if name in self._free:
                    self._free[name] -= amount


def _allocatable(resources: Resources) -> bool:
    """min_allocatable_resources 'cpus:0.01|mem:32': either quantity suffices."""
    return to_fixed(resources.scalar("cpus")) >= MIN_CPUS or to_fixed(resources.scalar("mem")) >= MIN_MEM


def _dominant_share(allocation: dict[str, float], totals: dict[str, float]) -> float:
    return max((allocation.get(name, 0.0) / totals[name] for name in SHARE_RESOURCES if totals.get(name)),
               default=0.0)

