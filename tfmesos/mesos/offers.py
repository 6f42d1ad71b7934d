"""Mesos offers in: the resources JSON of an offer reduced to the core's plain Offer, and a
maintenance window (an offer's or an inverse offer's ``unavailability``) to the core's Window."""
from __future__ import annotations

from typing import Any

from ..core.placement.maintenance import InverseOffer, Window
from ..core.placement.offers import Offer, PortRange
from ..core.spec import Resources


def is_reserved(res: dict[str, Any]) -> bool:
    """Reserved (static or dynamic) in either the pre- or the post-refinement format."""
    return bool(res.get("reservations")) or res.get("role", "*") != "*"


# Disk sources a piece cannot be cut from: a MOUNT disk (or a CSI volume) is taken whole or not at
# all, and tfmesos' tasks take small pieces.
_WHOLE_DISKS = frozenset({"MOUNT", "BLOCK", "RAW"})


def usable(res: dict[str, Any], revocable: bool = False) -> bool:
    """Whether tfmesos may carve a task's resources out of this offered entry. Revocable ones can
    vanish under a task: used only when the job says so. Not a persistent volume or a shared
    resource (another framework's data), nor a disk that is used whole (``_WHOLE_DISKS``)."""
    if "revocable" in res and not revocable:
        return False
    disk = res.get("disk") or {}
    if "shared" in res or disk.get("persistence") or (disk.get("source") or {}).get("type") in _WHOLE_DISKS:
        return False
    return True


def parse_offer(raw: dict[str, Any], revocable: bool = False) -> Offer:
    """Sum the offer's scalars by name (every one: cpus, fpgas, ...), reserved and unreserved alike
    (a task may mix both); ports are ranges."""
    totals: dict[str, float] = {}
    ports: list[PortRange] = []
    reserved = 0.0
    for res in raw.get("resources", ()):
        if not usable(res, revocable):
            continue
        name = res.get("name")
        if name and res.get("type", "SCALAR") == "SCALAR":
            amount = float(res.get("scalar", {}).get("value", 0.0))
            totals[name] = totals.get(name, 0.0) + amount
            if name == "cpus" and is_reserved(res):
                reserved += amount
        elif name == "ports" and res.get("type") == "RANGES":
            ports.extend((int(r["begin"]), int(r["end"])) for r in res.get("ranges", {}).get("range", ()))
    return Offer(
        id=raw["id"]["value"],
        agent_id=raw["agent_id"]["value"],
        hostname=raw.get("hostname", ""),
        scalars=Resources.of(totals),
        ports=tuple(sorted(ports)),
        mesos_role=raw.get("allocation_info", {}).get("role", "*"),
        reserved=reserved,
        unavailability=parse_window(raw.get("unavailability")),
    )


def parse_window(raw: dict[str, Any] | None) -> Window | None:
    """Mesos' Unavailability (``{start: {nanoseconds}, duration: {nanoseconds}}``; int64 as JSON
    strings or numbers) as unix seconds; no duration: unavailable until further notice."""
    if not raw or "start" not in raw:
        return None
    duration = raw.get("duration")
    return Window(int(raw["start"]["nanoseconds"]) / 1e9,
                  int(duration["nanoseconds"]) / 1e9 if duration and "nanoseconds" in duration else None)


def parse_inverse_offer(raw: dict[str, Any]) -> InverseOffer | None:
    """An INVERSE_OFFERS entry for an agent (None: one for a whole machine's resources with no
    agent, which a framework holding tasks never gets from Mesos 1.12)."""
    window = parse_window(raw.get("unavailability"))
    agent = (raw.get("agent_id") or {}).get("value")
    if window is None or not agent:
        return None
    address = (raw.get("url") or {}).get("address") or {}
    return InverseOffer(raw["id"]["value"], agent, address.get("hostname") or address.get("ip") or "", window)
