"""The embedded master at cluster scale: ``tfmesos local-master --agents N`` for N up to 10,000.

Per size (one run each): seconds from starting the process to its ``listening on`` line, its RSS
idle, seconds from a framework's SUBSCRIBE call to its first OFFERS event and how many offers that
event carried (one per agent: the allocator offers every agent in one round, one event), the RSS
with those N offers outstanding, and the allocation round times the master reports under Mesos'
metric names (``/metrics/snapshot``, ``allocator/mesos/allocation_run_ms``): the round that
offered every agent (the slowest round) and an idle round (every agent's resources out on offer,
so nothing to do), then again after DECLINE of every offer with ``refuse_seconds: 0`` (all
resources back: the next round offers every agent again).
"""
from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from tests.e2e.harness import LocalMaster

from benchmarks.common import log, rss_mib

from tests.localmesos.scheduler_client import RawScheduler  # the protocol tests' raw v1 HTTP scheduler


def _metrics(address: str) -> dict[str, float]:
    with urllib.request.urlopen(f"http://{address}/metrics/snapshot", timeout=30) as resp:
        return json.load(resp)


def _wait_metric(address: str, key: str, predicate, timeout: float = 30.0) -> dict[str, float]:
    deadline = time.monotonic() + timeout
    while True:
        m = _metrics(address)
        if predicate(m[key]) or time.monotonic() > deadline:
            return m
        time.sleep(0.2)


def one_size(tmp: Path, agents: int) -> dict[str, Any]:
    t0 = time.monotonic()
    # Two offered ports per agent: 10,000 agents need 20,000 distinct ports on one host.
    master = LocalMaster(tmp / f"master-scale-{agents}", agents=agents,
                         extra=["--first-port", "20000", "--ports-per-agent", "2"])
    started_s = time.monotonic() - t0
    try:
        time.sleep(1.0)
        idle = rss_mib(master.proc.pid) or {}
        scheduler = RawScheduler(master.address)
        proc = psutil.Process(master.proc.pid)
        cpu0, t = sum(proc.cpu_times()[:2]), time.monotonic()
        scheduler.subscribe({"user": "bench", "name": "master-scale"})
        offers = scheduler.next_offers(timeout=60)
        first_offers_s = time.monotonic() - t
        # CPU the master spent from SUBSCRIBE to the offers (under load the wall time is longer).
        first_offers_cpu_s = sum(proc.cpu_times()[:2]) - cpu0
        # The offering round is over; wait for one idle tick after it (allocation_interval 1 s).
        m = _metrics(master.address)
        runs = m["allocator/mesos/allocation_runs"]
        m = _wait_metric(master.address, "allocator/mesos/allocation_runs", lambda v: v >= runs + 1)
        offering_round_ms, idle_round_ms = m["allocator/mesos/allocation_run_ms/max"], m["allocator/mesos/allocation_run_ms"]
        with_offers = rss_mib(master.proc.pid) or {}
        ids = [{"value": o["id"]["value"]} for o in offers]
        t = time.monotonic()
        scheduler.framework_call("DECLINE", {"offer_ids": ids, "filters": {"refuse_seconds": 0}})
        again = scheduler.next_offers(timeout=60)
        reoffer_s = time.monotonic() - t
        scheduler.teardown()
        scheduler.close()
        return {"agents": agents, "started_s": started_s, "rss_idle_mib": idle.get("rss_mib"),
                "first_offers_s": first_offers_s, "first_offers_master_cpu_s": first_offers_cpu_s,
                "offers_in_first_event": len(offers), "load_average_1min": os.getloadavg()[0],
                "offering_round_ms": offering_round_ms, "idle_round_ms": idle_round_ms,
                "rss_with_offers_mib": with_offers.get("rss_mib"), "decline_all_to_reoffer_s": reoffer_s,
                "offers_after_decline": len(again), "rounds": m["allocator/mesos/allocation_runs"]}
    finally:
        master.stop()


def run(tmp: Path, sizes: tuple[int, ...] = (1000, 10000)) -> dict[str, Any]:
    out: dict[str, Any] = {"sizes": [], "failures": []}
    for agents in sizes:
        log(f"master: tfmesos local-master --agents {agents}")
        try:
            r = one_size(tmp, agents)
            out["sizes"].append(r)
            log(f"  up in {r['started_s']:.2f}s, {r['rss_idle_mib']:.0f} MiB idle; {r['offers_in_first_event']} offers "
                f"{r['first_offers_s']:.2f}s after SUBSCRIBE ({r['first_offers_master_cpu_s']:.2f} CPU s); round {r['offering_round_ms']:.0f} ms (offering), "
                f"{r['idle_round_ms']:.2f} ms (idle)")
        except Exception as exc:  # noqa: BLE001 - recorded; the next size still runs
            out["failures"].append(f"{agents} agents: {type(exc).__name__}: {exc}"[:2000])
            log(f"  failed: {str(exc)[:300]}")
    return out
