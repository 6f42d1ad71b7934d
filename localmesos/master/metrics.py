"""``GET /metrics/snapshot``: the few master and allocator metrics the embedded master keeps,
under the names real Mesos uses (flat keys, numbers; timers in milliseconds)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .master import Master


def metrics_snapshot(master: "Master") -> dict[str, float]:
    allocator = master.allocator
    runs = allocator.rounds
    cluster = master.cluster
    return {
        "master/slaves_active": float(sum(1 for agent_id in cluster.agents if agent_id not in cluster.deactivated)),
        "master/frameworks_active": float(sum(1 for f in cluster.frameworks.values() if f.active)),
        "master/outstanding_offers": float(len(cluster.offers)),
        "allocator/mesos/allocation_runs": float(runs),
        "allocator/mesos/allocation_run_ms": allocator.last_round_seconds * 1e3,
        "allocator/mesos/allocation_run_ms/count": float(runs),
        "allocator/mesos/allocation_run_ms/max": allocator.max_round_seconds * 1e3,
        "allocator/mesos/allocation_run_ms/mean": allocator.total_round_seconds * 1e3 / runs if runs else 0.0,
    }
