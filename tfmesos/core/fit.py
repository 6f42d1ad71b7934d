"""Can a job ever fit the cluster as it is built, and if it can, what holds it back now?

Plain data in (the agents' totals, usage and reservations as the master's ``/state`` reports them,
the job's tasks' needs), a sentence or None out. A job that can never fit fails at once, naming
the resource; one that fits an empty cluster but not the busy one waits (core/queue.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .offers import Offer
from .placement import Demand, place
from .spec import Resources, TaskKey

NAMES = ("cpus", "mem", "disk", "gpus")
_UNITS = {"mem": " MB", "disk": " MB"}
_EPS = 1e-9

Amounts = Mapping[str, float]


@dataclass(frozen=True)
class Agent:
    """One agent: what it has, what tasks use, what is offered, and its reservations per Mesos role."""
    id: str
    hostname: str
    total: Amounts
    used: Amounts = field(default_factory=dict)
    offered: Amounts = field(default_factory=dict)
    reserved: Mapping[str, Amounts] = field(default_factory=dict)  # Mesos role -> amounts reserved to it

    def usable(self, roles: Iterable[str]) -> dict[str, float]:
        """What a framework of ``roles`` may ever get here: all but the reservations for other roles."""
        ours = set(roles)
        out = {name: self.total.get(name, 0.0) for name in NAMES}
        for role, amounts in self.reserved.items():
            if role not in ours:
                for name in NAMES:
                    out[name] -= amounts.get(name, 0.0)
        return out


@dataclass(frozen=True)
class Framework:
    """Another framework as the master's state shows it."""
    id: str
    name: str
    role: str
    holds: Amounts  # used + offered
    registered: float = 0.0
    placing: bool = False  # a live tfmesos job (its FrameworkInfo label) with no task yet


@dataclass(frozen=True)
class Need:
    """One TensorFlow role's tasks: how many, and what each takes (executor included)."""
    role: str
    count: int
    each: Amounts


def amounts(values: Amounts, names: Iterable[str] = NAMES, zeros: bool = False) -> str:
    """'cpus 0.8, mem 256 MB': the names given, zeros left out unless ``zeros``."""
    shown = [f"{n} {values.get(n, 0.0):g}{_UNITS.get(n, '')}" for n in names if zeros or values.get(n, 0.0) > _EPS]
    return ", ".join(shown) or "nothing"


def total_need(needs: Iterable[Need]) -> dict[str, float]:
    out = {name: 0.0 for name in NAMES}
    for need in needs:
        for name in NAMES:
            out[name] += need.count * need.each.get(name, 0.0)
    return out


def never_fits(needs: list[Need], agents: list[Agent], roles: Iterable[str]) -> str | None:
    """Why the job cannot fit these agents even when they are idle, or None when it may.

    Checked: GPUs asked for where no agent has any; a task larger than every agent (each resource,
    then all of them on one agent); the whole gang larger than all the agents together. No agent at
    all says nothing (agents may still register): the placement timeout covers that case.
    """
    if not agents:
        return None
    roles = tuple(roles)
    wanted = [n for n in needs if n.count > 0]
    if not any(n.each.get("gpus", 0.0) > 0 for n in wanted):
        # Mesos offers agents with GPUs only to frameworks that can use them (GPU_RESOURCES).
        agents = [a for a in agents if a.total.get("gpus", 0.0) <= 0] or agents
    usable = [(agent, agent.usable(roles)) for agent in agents]
    if any(n.each.get("gpus", 0.0) > 0 for n in wanted) and not any(u["gpus"] > 0 for _, u in usable):
        gpu_roles = ", ".join(n.role for n in wanted if n.each.get("gpus", 0.0) > 0)
        return (f"the job can never fit this cluster: {gpu_roles} ask(s) for gpus, and none of its "
                f"{len(agents)} agent(s) has any GPU")
    for need in wanted:
        short = [name for name in NAMES if need.each.get(name, 0.0) > max(u[name] for _, u in usable) + _EPS]
        if short:
            largest = {name: max(u[name] for _, u in usable) for name in short}
            return (f"the job can never fit this cluster: one {need.role} task needs "
                    f"{amounts(need.each, short)} (executor included), and the largest of its {len(agents)} "
                    f"agent(s) has {amounts(largest, short) if any(largest.values()) else ', '.join(f'{n} 0' for n in short)}")
        if not any(all(need.each.get(n, 0.0) <= u[n] + _EPS for n in NAMES) for _, u in usable):
            return (f"the job can never fit this cluster: one {need.role} task needs {amounts(need.each)} "
                    f"(executor included) on one agent, and no agent has all of that together")
    whole = total_need(wanted)
    capacity = {name: sum(u[name] for _, u in usable) for name in NAMES}
    short = [name for name in NAMES if whole[name] > capacity[name] + _EPS]
    if short:
        return (f"the job can never fit this cluster: its {sum(n.count for n in wanted)} tasks need "
                f"{amounts(whole, short)} together, and all {len(agents)} agent(s) together have "
                f"{amounts(capacity, short)}")
    # Each resource fits in sum: would the placer itself pack the whole gang onto the idle agents?
    demands = [Demand(TaskKey(n.role, i), Resources(n.each.get("cpus", 0.0), n.each.get("mem", 0.0),
                                                     n.each.get("disk", 0.0), int(n.each.get("gpus", 0))))
               for n in wanted for i in range(n.count)]
    idle = [Offer(f"idle-{a.id}", a.id, a.hostname, u["cpus"], u["mem"], u["disk"], int(u["gpus"]),
                  ((1, 65535),)) for a, u in usable]
    unplaced = place(demands, idle).unplaced
    if unplaced:
        return (f"the job can never fit this cluster: its {len(demands)} tasks ({amounts(whole)} together) "
                f"do not pack onto its {len(agents)} agent(s) even when they are idle: "
                f"{len(unplaced)} task(s) left over, first {unplaced[0]}")
    return None


def holders(agents: list[Agent], roles: Iterable[str], held: Amounts,
            frameworks: Iterable[Framework] = ()) -> dict[str, object]:
    """The cluster's figures for a waiting job: usable total, free now, and what holds the rest.

    ``held`` is what the job itself holds in offers (counted as free for it); ``frameworks`` are the
    other frameworks, the largest named first.
    """
    roles = tuple(roles)
    usable = {name: 0.0 for name in NAMES}
    taken = {name: 0.0 for name in NAMES}
    other_reserved = {name: 0.0 for name in NAMES}
    for agent in agents:
        for name, value in agent.usable(roles).items():
            usable[name] += value
        for role, reserved in agent.reserved.items():
            if role not in roles:
                for name in NAMES:
                    other_reserved[name] += reserved.get(name, 0.0)
        for name in NAMES:
            taken[name] += agent.used.get(name, 0.0) + agent.offered.get(name, 0.0)
    others = {name: max(0.0, taken[name] - held.get(name, 0.0)) for name in NAMES}
    free = {name: max(0.0, usable[name] - others[name]) for name in NAMES}
    top = sorted(frameworks, key=lambda f: (-f.holds.get("cpus", 0.0), f.name))
    return {"usable": usable, "free": free, "others": others, "reserved_for_others": other_reserved,
            "frameworks": [(f.name, f.role, dict(f.holds)) for f in top if any(v > _EPS for v in f.holds.values())]}
