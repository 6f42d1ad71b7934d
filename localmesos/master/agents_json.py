"""The operator API's ``GET_AGENTS``, in the shape of Mesos 1.12's answer (traces 13 and 15), and the
planned-change fields an agent shows there and in ``/state``."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..resources import Resources
from .state_json import AGENT_CAPABILITIES, VERSION, drain_fields

if TYPE_CHECKING:
    from .cluster import AgentRecord, Cluster
    from .master import Master


def get_agents(master: "Master") -> dict[str, Any]:
    cluster = master.cluster
    agents = [_agent(record, cluster) for record in cluster.agents.values()]
    return {"type": "GET_AGENTS", "get_agents": {"agents": agents, "recovered_agents": []}}


def _agent(record: "AgentRecord", cluster: "Cluster") -> dict[str, Any]:
    agent = record.agent
    deactivated = agent.id in cluster.deactivated
    entry: dict[str, Any] = {
        "agent_info": {"hostname": agent.hostname, "port": agent.port,
                       "resources": record.total.to_json("agent", order="agent"), "id": {"value": agent.id},
                       "checkpoint": True},
        "active": not deactivated,
        "deactivated": deactivated,
        "version": VERSION,
        "pid": agent.pid,
        "registered_time": {"nanoseconds": int(record.registered_time * 1e9)},
        "total_resources": record.total.to_json("offer", order="agent"),
    }
    allocated = Resources()
    for task in record.tasks.values():
        if not task.terminal:
            allocated = allocated + task.resources
    for executors in record.executors.values():
        for info in executors.values():
            allocated = allocated + Resources.from_json(info.get("resources", []))
    if not allocated.empty():
        entry["allocated_resources"] = allocated.to_json("offer", order="agent")
    offered = Resources()
    for offer_id in record.offers:
        offered = offered + cluster.offers[offer_id].resources
    if not offered.empty():
        entry["offered_resources"] = offered.to_json("offer", order="offer")
    entry["capabilities"] = [{"type": c} for c in AGENT_CAPABILITIES]
    entry.update(drain_fields(agent.id, cluster, time_info=True))
    return entry
