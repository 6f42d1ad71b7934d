"""An offer as placement sees it: plain numbers (tfmesos.mesos.offers reads the Mesos JSON)."""
from __future__ import annotations

from dataclasses import dataclass

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
    mesos_role: str = "*"  # the Mesos role it is allocated to (never a TensorFlow role)
    reserved: float = 0.0  # cpus reserved to that Mesos role: such offers are used before the shared pool

    @property
    def port_count(self) -> int:
        return sum(end - begin + 1 for begin, end in self.ports)
