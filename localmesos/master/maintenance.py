"""The maintenance schedule and the machines' modes (Mesos' maintenance primitives; traces 16, 17).

A machine is a hostname and an IP; an agent belongs to the machine of its hostname and address
(the embedded agents share 127.0.0.1 and so one machine, unless each has its own address:
``MasterConfig.machine_per_agent``). A machine in the schedule is DRAINING: its agents' offers carry
its unavailability and whoever holds something there gets inverse offers. ``/machine/down`` takes a
DRAINING machine DOWN: its agents are removed (their tasks TASK_LOST, ``Agent <host> removed:
Operator initiated 'Machine DOWN'``) and shut down. ``/machine/up`` brings a DOWN machine UP and
out of the schedule. Every change of the schedule rescinds the offers of every machine it touches,
which is every known machine (trace 16).
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any, Callable

from ..agent.agent import Agent
from .cluster import AgentRecord, Cluster
from .inverse_offers import InverseOfferBook
from .offers import OfferBook

MachineKey = tuple  # (hostname lowercased or None, ip or None): MachineID equality


@dataclass
class Machine:
    id: dict[str, str]  # the MachineID as given
    mode: str  # DRAINING | DOWN (UP machines are not kept)
    unavailability: dict[str, Any] | None


class MaintenanceError(ValueError):
    """A refused request, with Mesos' words (HTTP 400)."""


def agent_machine(agent: Agent) -> dict[str, str]:
    """Mesos' machine of an agent: its hostname and the IP of its address."""
    return {"hostname": agent.hostname, "ip": agent.hostname}


def key_of(machine: dict[str, str]) -> MachineKey:
    hostname = machine.get("hostname")
    return (hostname.lower() if hostname is not None else None, machine.get("ip"))


def machine_json(machine: dict[str, str]) -> str:
    """``stringify(JSON::protobuf(MachineID))``, as Mesos' messages quote it."""
    return json.dumps({k: machine[k] for k in ("hostname", "ip") if k in machine}, separators=(",", ":"))


class Maintenance:
    def __init__(self, cluster: Cluster, offers: OfferBook, inverse_offers: InverseOfferBook,
                 trigger: Callable[[], None], remove_agent: Callable[[AgentRecord, str], None]) -> None:
        self._cluster = cluster
        self._offers = offers
        self._inverse_offers = inverse_offers
        self._trigger = trigger
        self._remove_agent = remove_agent
        self._machines: dict[MachineKey, Machine] = {}
        self._windows: list[dict[str, Any]] = []

    # -- reading --------------------------------------------------------------------
    def schedule(self) -> dict[str, Any]:
        return {"windows": self._windows} if self._windows else {}

    def status(self) -> dict[str, Any]:
        """ClusterStatus: DRAINING machines with the frameworks' answers, DOWN machines."""
        draining, down = [], []
        for key, machine in self._machines.items():
            if machine.mode == "DOWN":
                down.append(machine.id)
                continue
            entry: dict[str, Any] = {"id": machine.id}
            statuses = [s for record in self._agents_of(key) for s in self._inverse_offers.statuses(record.agent.id)]
            if statuses:
                entry["statuses"] = statuses
            draining.append(entry)
        status: dict[str, Any] = {}
        if draining:
            status["draining_machines"] = draining
        if down:
            status["down_machines"] = down
        return status

    def scheduled_machine(self, agent: Agent) -> dict[str, str] | None:
        """The schedule's machine the agent belongs to (DRAIN_AGENT refuses such an agent)."""
        key = key_of(agent_machine(agent))
        for window in self._windows:
            for machine in window["machine_ids"]:
                if key_of(machine) == key:
                    return machine
        return None

    # -- the schedule (___updateMaintenanceSchedule) ------------------------------------
    def update_schedule(self, schedule: dict[str, Any]) -> None:
        windows = _windows(schedule)
        wanted: dict[MachineKey, tuple[dict[str, str], dict[str, Any]]] = {}
        for window in windows:
            for machine in window["machine_ids"]:
                wanted[key_of(machine)] = (machine, window["unavailability"])
        for key, machine in self._machines.items():
            if machine.mode == "DOWN" and key not in wanted:
                raise MaintenanceError(f"Machine '{machine_json(machine.id)}' is deactivated and cannot be removed "
                                       "from the schedule")
        for key in self._known():
            current = self._machines.get(key)
            if key in wanted:
                if current is not None:  # from UP to DRAINING is the next loop's
                    current.unavailability = wanted[key][1]
                    self._unavailable(key, wanted[key][1])
                continue
            self._machines.pop(key, None)  # back UP
            self._unavailable(key, None)
        for key, (machine, unavailability) in wanted.items():
            if key not in self._machines:
                self._machines[key] = Machine(machine, "DRAINING", unavailability)
                self._unavailable(key, unavailability)
        self._windows = windows

    # -- machines down and up (_startMaintenance, _stopMaintenance) ------------------------
    def down(self, machines: list[dict[str, str]]) -> None:
        keys = self._check(machines, "DRAINING", "is not in DRAINING mode and cannot be brought down")
        for key in keys:
            for record in self._agents_of(key):
                self._remove_agent(record, "Operator initiated 'Machine DOWN'")
            self._machines[key].mode = "DOWN"

    def up(self, machines: list[dict[str, str]]) -> None:
        keys = set(self._check(machines, "DOWN", "is not in DOWN mode and cannot be brought up"))
        for key in keys:
            self._machines.pop(key)
        windows = []
        for window in self._windows:
            left = [m for m in window["machine_ids"] if key_of(m) not in keys]
            if left:
                windows.append({**window, "machine_ids": left})
        self._windows = windows

    def _check(self, machines: list[dict[str, str]], mode: str, refusal: str) -> list[MachineKey]:
        ids = _machine_list(machines)
        keys = []
        known = self._known()
        for machine in ids:
            key = key_of(machine)
            if key not in known:
                raise MaintenanceError(f"Machine '{machine_json(machine)}' is not part of a maintenance schedule")
            current = self._machines.get(key)
            if (current.mode if current is not None else "UP") != mode:
                raise MaintenanceError(f"Machine '{machine_json(machine)}' {refusal}")
            keys.append(key)
        return keys

    # -- helpers ----------------------------------------------------------------------
    def _known(self) -> list[MachineKey]:
        """Every machine the master knows: its agents' (UP unless scheduled) and the scheduled ones."""
        keys = {key_of(agent_machine(record.agent)): None for record in self._cluster.agents.values()}
        keys.update((key, None) for key in self._machines)
        return list(keys)

    def _agents_of(self, key: MachineKey) -> list[AgentRecord]:
        return [r for r in self._cluster.agents.values() if key_of(agent_machine(r.agent)) == key]

    def _unavailable(self, key: MachineKey, unavailability: dict[str, Any] | None) -> None:
        """Master::updateUnavailability: the machine's agents' offers and inverse offers are
        rescinded, then the allocator offers them again with the new unavailability."""
        for record in self._agents_of(key):
            self._offers.remove_all(record.offers, rescind=True)
            self._inverse_offers.set_unavailability(record.agent.id, unavailability)
        self._trigger()

    def add_agent(self, record: AgentRecord) -> None:
        """An agent (back) on a scheduled machine has its unavailability."""
        machine = self._machines.get(key_of(agent_machine(record.agent)))
        if machine is not None and machine.unavailability is not None:
            self._inverse_offers.set_unavailability(record.agent.id, machine.unavailability)


def _windows(schedule: dict[str, Any]) -> list[dict[str, Any]]:
    """maintenance::validation::schedule over a parsed ``Schedule``."""
    windows, seen = [], set()
    for window in schedule.get("windows", []):
        if not window.get("machine_ids"):
            raise MaintenanceError("List of machines in the maintenance window is empty")
        unavailability = window["unavailability"]
        if unavailability.get("duration", {}).get("nanoseconds", 0) < 0:
            raise MaintenanceError("Unavailability 'duration' is negative")
        for machine in window["machine_ids"]:
            _check_machine(machine)
            if key_of(machine) in seen:
                raise MaintenanceError(f"Machine '{machine_json(machine)}' appears more than once in the schedule")
            seen.add(key_of(machine))
        windows.append({"machine_ids": window["machine_ids"], "unavailability": unavailability})
    return windows


def _machine_list(machines: list[dict[str, str]]) -> list[dict[str, str]]:
    """maintenance::validation::machines over parsed MachineIDs."""
    if not machines:
        raise MaintenanceError("List of machines is empty")
    seen = set()
    for machine in machines:
        _check_machine(machine)
        if key_of(machine) in seen:
            raise MaintenanceError(f"Machine '{machine_json(machine)}' appears more than once in the schedule")
        seen.add(key_of(machine))
    return machines


def _check_machine(machine: dict[str, str]) -> None:
    if not machine.get("hostname") and not machine.get("ip"):
        raise MaintenanceError("Both 'hostname' and 'ip' for a machine are empty")
    if machine.get("ip"):
        try:
            ipaddress.IPv4Address(machine["ip"])
        except ValueError:
            raise MaintenanceError(f"Failed to parse IP '{machine['ip']}': not an IPv4 address") from None
