"""Batch allocation rounds, like Mesos' hierarchical allocator (simplified).

Rounds run every ``allocation_interval`` and right after a framework
subscribes, an agent registers or a REVIVE.  Per agent, everything that is
neither used nor offered goes, as one offer, to the least-served framework
(role) that may have it: not suppressed, not filtered by an earlier decline
of a superset, GPU-capable if the agent has GPUs, and only if the resources
reach the minimum allocatable size (``cpus:0.01|mem:32``).

A round is one pass over the agents with O(1) work for an agent that has
nothing to offer, so 1,000 idle agents cost well under a millisecond.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Iterable

from .framework import Framework, OfferFilter
from .resources import Resources, to_fixed

if TYPE_CHECKING:
    from .master import Master

log = logging.getLogger(__name__)

MIN_CPUS = to_fixed(0.01)
MIN_MEM = to_fixed(32.0)
MAX_REFUSE_SECONDS = 365 * 24 * 3600.0
DEFAULT_REFUSE_SECONDS = 5.0
_SHARE_RESOURCES = ("cpus", "mem", "disk", "gpus")


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
    def __init__(self, master: "Master", loop: asyncio.AbstractEventLoop, interval: float) -> None:
        self._master = master
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
        master = self._master
        candidates = [
            (framework, role)
            for framework in master.frameworks.values()
            if framework.active and framework.connected
            for role in framework.roles
            if role not in framework.suppressed_roles
        ]
        if candidates:
            self._allocate(master, candidates)
        self.rounds += 1
        self.last_round_seconds = time.perf_counter() - started
        self.max_round_seconds = max(self.max_round_seconds, self.last_round_seconds)
        self.total_round_seconds += self.last_round_seconds

    def _allocate(self, master: "Master", candidates: list[tuple[Framework, str]]) -> None:
        now = time.monotonic()
        shares = {framework.id: 0.0 for framework, _ in candidates}
        totals: dict[str, float] = {}
        allocations: dict[str, dict[str, float]] = {}
        if len(shares) > 1:
            totals = master.cluster_totals()  # O(agents): only when there are shares to compare
            # Computed once per round and then updated per offer: no O(n^2).
            for framework, _ in candidates:
                allocations[framework.id] = master.framework_allocation(framework)
                shares[framework.id] = _dominant_share(allocations[framework.id], totals)
        batches: dict[str, list] = {}
        for record in master.agents.values():
            available = record.available
            if available.empty():
                continue
            if not _allocatable(available):
                continue
            if len(shares) > 1:
                candidates.sort(key=lambda c: shares[c[0].id])
            for framework, role in candidates:
                if record.agent.has_gpus and not framework.has_capability("GPU_RESOURCES"):
                    continue
                if self._filtered(framework, role, record.agent.id, available, now):
                    continue
                offer = master.create_offer(framework, record, role, available)
                batches.setdefault(framework.id, []).append(offer)
                if len(shares) > 1:
                    allocation = allocations[framework.id]
                    for name in _SHARE_RESOURCES:
                        allocation[name] = allocation.get(name, 0.0) + offer.resources.scalar(name)
                    shares[framework.id] = _dominant_share(allocation, totals)
                break
        for framework_id, offers in batches.items():
            master.send_offers(framework_id, offers)


def _allocatable(resources: Resources) -> bool:
    """min_allocatable_resources 'cpus:0.01|mem:32': either quantity suffices."""
    return to_fixed(resources.scalar("cpus")) >= MIN_CPUS or to_fixed(resources.scalar("mem")) >= MIN_MEM


def _dominant_share(allocation: dict[str, float], totals: dict[str, float]) -> float:
    return max((allocation.get(name, 0.0) / totals[name] for name in _SHARE_RESOURCES if totals.get(name)),
               default=0.0)

