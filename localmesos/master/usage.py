"""What the cluster holds and who holds it: the numbers of DRF, quota and ``GET_ROLES``.

Plain functions over the master's records, read by the allocator (once per round) and the operator
API; they change nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from ..resources import Resources

if TYPE_CHECKING:
    from .cluster import AgentRecord
    from .framework import Framework

SHARE_RESOURCES = ("cpus", "mem", "disk", "gpus")


def cluster_totals(agents: Iterable["AgentRecord"]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for record in agents:
        for name in SHARE_RESOURCES:
            totals[name] = totals.get(name, 0.0) + record.total.scalar(name)
    return totals


def role_allocations(frameworks: Mapping[str, "Framework"]) -> dict[str, dict[str, float]]:
    """Scalars offered to or used by each role (tasks, executors, outstanding offers)."""
    allocated: dict[str, Resources] = {}
    for framework in frameworks.values():
        pieces = [o.resources for o in framework.offers.values()]
        pieces += [t.resources for t in framework.tasks.values() if not t.terminal]
        pieces += [Resources.from_json(info.get("resources", [])) for info in framework.executors.values()]
        for resources in pieces:
            for role in resources.allocation_roles() - {None}:
                mine = resources.filter(lambda k, role=role: k.allocation_role == role)
                allocated[role] = allocated.get(role, Resources()) + mine  # type: ignore[index]
    return {role: resources.scalars() for role, resources in allocated.items()}


def unreserved_available(agents: Iterable["AgentRecord"]) -> dict[str, float]:
    """Unreserved scalars neither used nor offered, over every agent (quota headroom)."""
    free: dict[str, float] = {}
    for record in agents:
        for name, amount in record.available.unreserved().scalars().items():
            free[name] = free.get(name, 0.0) + amount
    return free


def unallocated_reservations(agents: Iterable["AgentRecord"], roles: set[str]) -> dict[str, dict[str, float]]:
    """Reserved scalars of ``roles`` that nobody holds (they count against quota)."""
    result: dict[str, dict[str, float]] = {}
    for record in agents:
        for role in record.available.reserved_roles() & roles:
            book = result.setdefault(role, {})
            for name, amount in record.available.filter(lambda k, role=role: k.role == role).scalars().items():
                book[name] = book.get(name, 0.0) + amount
    return result


def framework_allocation(framework: "Framework") -> dict[str, float]:
    allocated = framework.used_resources() + framework.offered_resources()
    return {name: allocated.scalar(name) for name in SHARE_RESOURCES}
