"""Mesos offers reduced to the plain numbers placement needs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PortRange = tuple[int, int]


@dataclass(frozen=True)
class Offer:
    id: str
    agent_id: str
    hostname: str
    cpus: float = 0.0
    mem: float = 0.0
    disk: float = 0.0
    gpus: int = 0
    ports: tuple[PortRange, ...] = ()
    role: str = "*"

    @property
    def port_count(self) -> int:
        return sum(end - begin + 1 for begin, end in self.ports)


def parse_offer(raw: dict[str, Any]) -> Offer:
    """Sum the offer's resources by name; revocable resources are left alone (they can vanish)."""
    totals = {"cpus": 0.0, "mem": 0.0, "disk": 0.0, "gpus": 0.0}
    ports: list[PortRange] = []
    for res in raw.get("resources", ()):
        if "revocable" in res:
            continue
        name = res.get("name")
        if name in totals and res.get("type", "SCALAR") == "SCALAR":
            totals[name] += float(res.get("scalar", {}).get("value", 0.0))
        elif name == "ports" and res.get("type") == "RANGES":
            ports.extend((int(r["begin"]), int(r["end"])) for r in res.get("ranges", {}).get("range", ()))
    return Offer(
        id=raw["id"]["value"],
        agent_id=raw["agent_id"]["value"],
        hostname=raw.get("hostname", ""),
        cpus=totals["cpus"],
        mem=totals["mem"],
        disk=totals["disk"],
        gpus=int(totals["gpus"]),
        ports=tuple(sorted(ports)),
        role=raw.get("allocation_info", {}).get("role", "*"),
    )
