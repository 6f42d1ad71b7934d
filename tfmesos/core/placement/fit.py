"""Can a job ever fit the cluster as it is built, and if it can, what holds it back now?

Plain data in (the agents' totals, usage and reservations as the master's ``/state`` reports them,
the job's tasks' needs), a sentence or None out. A job that can never fit fails at once, naming
the resource; one that fits an empty cluster but not the busy one waits (core/placement/queue.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .offers import Offer
from .matching import Demand, place
from ..spec import Resources, TaskKey, add

_UNITS = {"mem": " MB", "disk": " MB"}  # how Mesos counts them; every other scalar is a plain count
_EPS = 1e-9

Amounts = Mapping[str, float]


_SHOWN_FIRST = ("cpus", "mem")  # every task has them (its executor too)


def names_of(*maps: Amounts) -> list[str]:
    """Every resource named with an amount in ``maps``, as a person reads them: cpus, mem, then by name."""
    names = sorted({name for m in maps for name, value in m.items() if value})
    return [n for n in _SHOWN_FIRST if n in names] + [n for n in names if n not in _SHOWN_FIRST]


@dataclass(frozen=True)
class Agent:
    """One agent: what it has, what tasks use, what is offered, and its reservations per Mesos role."""
    id: str
    hostname: str
    total: Amounts
    used: Amounts = field(default_factory=dict)
    offered: Amounts = field(default_factory=dict)
    reserved: Mapping[str, Amounts] = field(default_factory=dict)  # Mesos role -> amounts reserved to it
    leaving: str = ""  # "draining" or "deactivated": nothing is placed here; "": in use

    def usable(self, roles: Iterable[str]) -> dict[str, float]:
        """What a framework of ``roles`` may ever get here: all but the reservations for other roles."""
        ours = set(roles)
        out = dict(self.total)
        for role, amounts in self.reserved.items():
            if role not in ours:
                add(out, amounts, -1.0)
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


def amounts(values: Amounts, names: Iterable[str] | None = None, zeros: bool = False) -> str:
    """'cpus 0.8, mem 256 MB': the names given (default: all of ``values``), zeros left out unless ``zeros``."""
    names = names_of(values) if names is None else names
    shown = [f"{n} {figure(values.get(n, 0.0))}{_UNITS.get(n, '')}" for n in names
             if zeros or values.get(n, 0.0) > _EPS]
    return ", ".join(shown) or "nothing"


def figure(value: float) -> str:
    """A scalar as Mesos keeps it (three decimals): sums of offers leave float dust, and 1.9 - 1.9 + 0.1 - 0.1
    must read "0", not "8.32667e-17"."""
    return f"{round(value, 3) + 0.0:g}"


def total_need(needs: Iterable[Need]) -> dict[str, float]:
    out: dict[str, float] = {}
    for need in needs:
        add(out, need.each, need.count)
    return out


def never_fits(needs: list[Need], agents: list[Agent], roles: Iterable[str]) -> str | None:
    """Why the job cannot fit these agents even when they are idle, or None when it may.

    Checked, for every resource alike: one asked for where no agent has any (gpus, fpgas, ...); a
    task larger than every agent (each resource, then all of them on one agent); the whole gang
    larger than all the agents together. No agent at all says nothing (agents may still register):
    the placement timeout covers that case.
    """
    if not agents:
        return None
    roles = tuple(roles)
    wanted = [n for n in needs if n.count > 0]
    if not any(n.each.get("gpus", 0.0) > 0 for n in wanted):
        # Mesos offers agents with GPUs only to frameworks that can use them (GPU_RESOURCES).
        agents = [a for a in agents if a.total.get("gpus", 0.0) <= 0] or agents
    usable = [(agent, agent.usable(roles)) for agent in agents]
    names = names_of(*(n.each for n in wanted))

    def largest(name: str) -> float:
        return max(u.get(name, 0.0) for _, u in usable)

    for name in names:
        if largest(name) <= _EPS:
            askers = ", ".join(n.role for n in wanted if n.each.get(name, 0.0) > 0)
            return (f"the job can never fit this cluster: {askers} ask(s) for {name}, and none of its "
                    f"{len(agents)} agent(s) has any {name}")
    for need in wanted:
        short = [name for name in names if need.each.get(name, 0.0) > largest(name) + _EPS]
        if short:
            most = {name: largest(name) for name in short}
            return (f"the job can never fit this cluster: one {need.role} task needs "
                    f"{amounts(need.each, short)} (executor included), and the largest of its {len(agents)} "
                    f"agent(s) has {amounts(most, short, zeros=True)}")
        each = Resources.of(need.each)
        if not any(each.fits_in(u) for _, u in usable):
            return (f"the job can never fit this cluster: one {need.role} task needs {amounts(need.each)} "
                    f"(executor included) on one agent, and no agent has all of that together")
    whole = total_need(wanted)
    capacity = {name: sum(u.get(name, 0.0) for _, u in usable) for name in names}
    short = [name for name in names if whole.get(name, 0.0) > capacity[name] + _EPS]
    if short:
        return (f"the job can never fit this cluster: its {sum(n.count for n in wanted)} tasks need "
                f"{amounts(whole, short)} together, and all {len(agents)} agent(s) together have "
                f"{amounts(capacity, short)}")
    # Each resource fits in sum: would the placer itself pack the whole gang onto the idle agents?
    unplaced = left_over_when_idle(wanted, [(a.id, a.hostname, u) for a, u in usable])
    if unplaced:
        return (f"the job can never fit this cluster: its {sum(n.count for n in wanted)} tasks "
                f"({amounts(whole)} together) do not pack onto its {len(agents)} agent(s) even when they are "
                f"idle: {len(unplaced)} task(s) left over, first {unplaced[0]}")
    return None


def left_over_when_idle(needs: Iterable[Need], agents: Iterable[tuple[str, str, Amounts]]) -> tuple[TaskKey, ...]:
    """The tasks the placer leaves over when every agent (id, hostname, what it has) is idle."""
    demands = [Demand(TaskKey(n.role, i), Resources.of(n.each)) for n in needs for i in range(n.count)]
    idle = [Offer(f"idle-{id_}", id_, hostname, Resources.of(has), ((1, 65535),)) for id_, hostname, has in agents]
    return place(demands, idle).unplaced


def holders(agents: list[Agent], roles: Iterable[str], held: Amounts,
            frameworks: Iterable[Framework] = (), own: Amounts | None = None) -> dict[str, object]:
    """The cluster's figures for a waiting job: usable total, free now, and what holds the rest.

    ``held`` is what the job itself holds in offers (counted as free for it); ``frameworks`` are the
    other frameworks, the largest named first; ``own``: what the job's own framework holds as the
    master says (used + offered; None: unknown, only ``held`` is its own). What it holds beyond its
    offers (its tasks: running, or still ending in a whole-job restart) is neither free nor
    another's: ``own_ending``. Every resource any agent has, by name.
    """
    roles = tuple(roles)
    usable: dict[str, float] = {}
    taken: dict[str, float] = {}
    other_reserved: dict[str, float] = {}
    for agent in agents:
        add(usable, agent.usable(roles))
        for role, reserved in agent.reserved.items():
            if role not in roles:
                add(other_reserved, reserved)
        add(taken, agent.used)
        add(taken, agent.offered)
    names = names_of(usable, taken, other_reserved)
    mine = {name: max(held.get(name, 0.0), (own or {}).get(name, 0.0)) for name in names}
    others = {name: max(0.0, taken.get(name, 0.0) - mine[name]) for name in names}
    ending = {name: max(0.0, mine[name] - held.get(name, 0.0)) for name in names}
    free = {name: max(0.0, usable.get(name, 0.0) - others[name] - ending[name]) for name in names}
    top = sorted(frameworks, key=lambda f: (-f.holds.get("cpus", 0.0), f.name))
    return {"usable": {n: usable.get(n, 0.0) for n in names}, "free": free, "others": others, "own_ending": ending,
            "reserved_for_others": {n: other_reserved.get(n, 0.0) for n in names},
            "frameworks": [(f.name, f.role, dict(f.holds)) for f in top if any(v > _EPS for v in f.holds.values())]}


def no_offer_hint(gpus_needed: bool) -> str:
    """Why a job may have received no offer at all."""
    text = "no offer was received: is any agent registered, and does its Mesos role match service.role?"
    if gpus_needed:
        return text
    return (text + " This job asks for no GPUs, so Mesos offers it no agent that has GPUs (they go only to "
            "frameworks with GPU_RESOURCES, which tfmesos asks for when a TensorFlow role wants \"gpus\"): it needs "
            "agents without GPUs")
