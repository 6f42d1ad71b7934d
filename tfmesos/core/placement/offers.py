"""An offer as placement sees it: plain numbers (tfmesos.mesos.offers reads the Mesos JSON)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..spec import Resources
from .maintenance import Window

PortRange = tuple[int, int]


@dataclass(frozen=True)
class Offer:
    id: str
    agent_id: str
    hostname: str
    scalars: Resources = field(default_factory=Resources)  # every scalar offered, by name
    ports: tuple[PortRange, ...] = ()
    mesos_role: str = "*"  # the Mesos role it is allocated to (never a TensorFlow role)
    reserved: float = 0.0  # cpus reserved to that Mesos role: such offers are used before the shared pool
    unavailability: Window | None = None  # its machine's next maintenance window (core/placement/maintenance.py)

    @property
    def port_count(self) -> int:
        return sum(end - begin + 1 for begin, end in self.ports)

    @property
    def gpus(self) -> int:
        """GPU agents are special to Mesos (GPU_RESOURCES) and to placement (used last)."""
        return self.scalars.gpus
