"""Offer matching: which task goes on which offer, and on which port.

Linear in tasks + offers x distinct demands: tasks of one TensorFlow role share a demand, so we place a
whole group into an offer at once instead of scanning every offer for every task. GPU tasks
go only where GPUs are; CPU tasks use GPU agents last, so the GPUs stay free for GPU tasks.
Offers holding resources reserved to the job's Mesos role are filled before the shared pool.
A task that ran before asks for its old agent and port first (a relaunched TensorFlow task
at the same host:port is found again by its peers without a new ClusterSpec).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from ..spec import Resources, TaskKey
from .offers import Offer

_EPS = 1e-6
_FIRST = ("gpus", "cpus", "mem")  # the sort's leading keys (see larger_first)


@dataclass(frozen=True)
class Demand:
    key: TaskKey
    resources: Resources  # the task plus its executor
    prefer_agent: str | None = None
    prefer_port: int | None = None
    avoid_agent: str | None = None  # e.g. the agent it was lost on: elsewhere if at all possible


@dataclass(frozen=True)
class Assignment:
    key: TaskKey
    offer_id: str
    agent_id: str
    hostname: str
    port: int
    resources: Resources


@dataclass(frozen=True)
class Placement:
    assignments: tuple[Assignment, ...]
    unplaced: tuple[TaskKey, ...]

    @property
    def complete(self) -> bool:
        return not self.unplaced

    def offers_used(self) -> set[str]:
        return {a.offer_id for a in self.assignments}


class _Room:
    """What is left of one offer while we fill it."""

    __slots__ = ("offer", "left", "_ranges", "_taken")

    def __init__(self, offer: Offer):
        self.offer = offer
        self.left = dict(offer.scalars.items())  # every scalar alike, by name
        self._ranges = [list(r) for r in offer.ports]  # [next_free, end], consumed from the front
        self._taken: set[int] = set()

    def fits(self, need: Resources) -> int:
        """How many tasks of this demand still fit (ports included)."""
        count = self.port_count()
        left = self.left
        for name, want in need.items():
            if want > 0:
                count = min(count, int((left.get(name, 0.0) + _EPS) // want))
        return max(0, count)

    def port_count(self) -> int:
        return sum(end - nxt + 1 for nxt, end in self._ranges) - len(self._taken)

    def take(self, need: Resources, port: int | None = None) -> int:
        left = self.left
        for name, want in need.items():
            left[name] = left.get(name, 0.0) - want
        if port is not None:
            self._taken.add(port)
            return port
        for rng in self._ranges:
            while rng[0] <= rng[1]:
                candidate = rng[0]
                rng[0] += 1
                if candidate not in self._taken:
                    return candidate
                self._taken.discard(candidate)  # consumed from the front now: no longer tracked apart
        raise RuntimeError("no port left; fits() should have prevented this")

    def has_port(self, port: int) -> bool:
        return port not in self._taken and any(nxt <= port <= end for nxt, end in self._ranges)


def larger_first(need: Resources) -> tuple[float, ...]:
    """GPU demands first (they have the fewest places), then by cpus, mem, then the rest by name."""
    rest = tuple(-value for name, value in need.items() if name not in _FIRST)
    return (-need.gpus, -need.cpus, -need.mem, *rest)


def _assign(room: _Room, demand: Demand, port: int | None = None) -> Assignment:
    o = room.offer
    chosen = room.take(demand.resources, port)
    return Assignment(demand.key, o.id, o.agent_id, o.hostname, chosen, demand.resources)


def place(demands: Sequence[Demand], offers: Iterable[Offer]) -> Placement:
    offers = list(offers)
    rooms: dict[str, _Room] = {}  # made lazily: a big cluster's offers are mostly never visited

    def room_of(o: Offer) -> _Room:
        room = rooms.get(o.id)
        if room is None:
            room = rooms[o.id] = _Room(o)
        return room

    by_agent: dict[str, list[Offer]] = {}
    if any(d.prefer_agent for d in demands):
        for o in offers:
            by_agent.setdefault(o.agent_id, []).append(o)

    assignments: list[Assignment] = []
    rest: list[Demand] = []
    # 1. Tasks that ran before: their old agent and port if offered (or anywhere but the agent
    #    they were lost with), else anywhere below.
    for d in demands:
        placed = False
        for o in by_agent.get(d.prefer_agent or "", ()):
            room = room_of(o)
            if room.fits(d.resources) >= 1:
                port = d.prefer_port if d.prefer_port is not None and room.has_port(d.prefer_port) else None
                assignments.append(_assign(room, d, port))
                placed = True
                break
        if not placed and d.avoid_agent:
            # Rare (only tasks lost with their agent): a scan of the offers is fine here.
            o = next((o for o in offers if o.agent_id != d.avoid_agent and room_of(o).fits(d.resources) >= 1), None)
            if o is not None:
                assignments.append(_assign(room_of(o), d))
                placed = True
        if not placed:
            rest.append(d)

    # 2. Group by demand; GPU groups first, then larger demands first.
    groups: dict[Resources, list[Demand]] = {}
    for d in rest:
        groups.setdefault(d.resources, []).append(d)
    order = sorted(groups, key=larger_first)
    # The Mesos role's reserved resources first (they are ours alone), then the shared pool.
    by_reserved = sorted(offers, key=lambda o: -o.reserved) if any(o.reserved for o in offers) else offers
    gpu_offers = [o for o in by_reserved if o.scalars.gpus > 0]
    cpu_first = [o for o in by_reserved if o.scalars.gpus == 0] + gpu_offers if groups else []

    unplaced: list[TaskKey] = []
    for need in order:
        queue = groups[need]
        candidates = gpu_offers if need.gpus > 0 else cpu_first
        i = 0
        for o in candidates:
            if i == len(queue):
                break
            room = room_of(o)
            n = min(room.fits(need), len(queue) - i)
            for d in queue[i : i + n]:
                assignments.append(_assign(room, d))
            i += n
        unplaced.extend(d.key for d in queue[i:])
    return Placement(tuple(assignments), tuple(unplaced))
