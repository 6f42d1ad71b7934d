"""Placement at scale: the scheduler's own offer path (``Job.offers`` -> ``place``) fed synthetic offers.

Jobs of 10, 100 and 1,000 tasks (ps, workers, a chief; a quarter of the workers want a GPU)
against 100, 1,000 and 10,000 agents with realistic resources, port ranges and attributes.
Reported: CPU seconds per full placement (median of repeats) and per offer, and the growth
factor per 10x agents, which must stay near 10 (linear), not 100 (quadratic).
"""
from __future__ import annotations

import gc
import random
import statistics
import time
from typing import Any

from tfmesos.core.job.job import Job
from tfmesos.core.placement.offers import Offer
from tfmesos.mesos.offers import parse_offer
from tfmesos.options.load import resolve_options
from tfmesos.core.spec import JobSpec
from tfmesos.options.jobspec import job_spec_from_options


def synthetic_raw_offer(i: int, rng: random.Random) -> dict[str, Any]:
    """One agent's offer as a Mesos master sends it (parsed by the same code as real offers)."""
    cpus = rng.choice([8, 16, 32, 64])
    gpus = rng.choice([0, 0, 0, 4, 8])
    res = [
        {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": 31000, "end": 32000}]}, "role": "*"},
        {"name": "cpus", "type": "SCALAR", "scalar": {"value": float(cpus)}, "role": "*"},
        {"name": "mem", "type": "SCALAR", "scalar": {"value": float(cpus * 4096)}, "role": "*"},
        {"name": "disk", "type": "SCALAR", "scalar": {"value": 200000.0}, "role": "*"},
    ]
    if gpus:
        res.append({"name": "gpus", "type": "SCALAR", "scalar": {"value": float(gpus)}, "role": "*"})
    return {
        "id": {"value": f"M-O{i}"}, "framework_id": {"value": "M-0000"}, "agent_id": {"value": f"M-S{i}"},
        "hostname": f"agent{i}.cluster", "allocation_info": {"role": "*"}, "resources": res,
        "attributes": [{"name": "rack", "type": "TEXT", "text": {"value": f"r{i % 40}"}}],
    }


def job_of(tasks: int) -> JobSpec:
    ps = max(1, tasks // 10)
    workers = tasks - ps - 1
    gpu_workers = workers // 4
    # Two worker flavours are expressed as roles worker (GPU) and evaluator-free CPU workers; the schema has one
    # worker role, so GPU demand is modelled on the workers and CPU demand on ps/chief.
    options = {
        "service": {"name": "bench"},
        "job": {"command": "python train.py"},
        "roles": {
            "ps": {"count": ps, "cpus": 4, "mem": 16384},
            "worker": {"count": workers, "cpus": 2, "mem": 8192, "gpus": 1 if gpu_workers else 0},
            "chief": {"count": 1, "cpus": 2, "mem": 8192},
        },
    }
    return job_spec_from_options(resolve_options(options))


def one_placement(spec: JobSpec, raw_offers: list[dict[str, Any]]) -> tuple[float, int]:
    """CPU seconds for parsing every offer and placing the whole gang, as the scheduler does it."""
    gc.collect()  # start each sample from the same heap state; the collector stays on
    start = time.process_time()
    offers: list[Offer] = [parse_offer(r) for r in raw_offers]
    job = Job.new(spec, 0.0)
    actions = job.offers(offers, 0.0)
    elapsed = time.process_time() - start
    launched = sum(len(a.tasks) for a in actions if hasattr(a, "tasks"))
    return elapsed, launched


def run(task_sizes=(10, 100, 1000), agent_sizes=(100, 1000, 10000), repeats: int = 5) -> dict[str, Any]:
    rng = random.Random(42)
    offers_by_size = {n: [synthetic_raw_offer(i, rng) for i in range(n)] for n in agent_sizes}
    rows = []
    for tasks in task_sizes:
        spec = job_of(tasks)
        for agents in agent_sizes:
            samples, placed = [], 0
            for _ in range(repeats):
                t, placed = one_placement(spec, offers_by_size[agents])
                samples.append(t)
            median = statistics.median(samples)
            rows.append({
                "tasks": tasks, "agents": agents, "placed": placed,
                "cpu_s_per_placement": median, "cpu_us_per_offer": median / agents * 1e6,
            })
    growth = []
    for tasks in task_sizes:
        series = [r for r in rows if r["tasks"] == tasks]
        for a, b in zip(series, series[1:]):
            growth.append({"tasks": tasks, "agents": f"{a['agents']}->{b['agents']}",
                           "growth": b["cpu_s_per_placement"] / a["cpu_s_per_placement"]})
    return {"rows": rows, "growth_per_10x_agents": growth}


if __name__ == "__main__":
    import json

    print(json.dumps(run(repeats=3), indent=1))
