"""The real-Mesos suite side by side: every task ports range a test writes within 31000-33999
moves into the xdist worker's own slice, parts of a thousand too (the drain and maintenance
cases' agents take [31000-31099], [31100-31199], ...). TensorFlow's servers bind their port on
every address, so two clusters handing out the same port clash even with agents on IPs of their
own: a drain case beside the maintenance case failed "Could not start gRPC server" on 31100."""
from __future__ import annotations

import re

import pytest

from tests.e2e import real_mesos


def _ranges(resources: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in re.findall(r"\[(\d+)-(\d+)\]", resources)]


def _drain_agents(count: int) -> str:
    return ";".join(f"ports:[{31000 + 100 * i}-{31099 + 100 * i}]" for i in range(count))


@pytest.mark.parametrize("workers", [2, 3])
def test_part_ranges_of_every_worker_move_apart_and_stay_apart_within_a_cluster(monkeypatch, workers):
    monkeypatch.setattr(real_mesos, "WORKERS", workers)
    seen: list[tuple[int, int]] = []
    for worker in range(workers):
        monkeypatch.setattr(real_mesos, "WORKER", worker)
        mine = _ranges(real_mesos.worker_ports(_drain_agents(5))) + _ranges(
            real_mesos.worker_ports("ports:[32000-32999]"))
        assert all(last - first == 99 for first, last in mine[:5]), mine
        seen += mine
    seen.sort()
    assert all(a[1] < b[0] for a, b in zip(seen, seen[1:])), seen
    assert 10000 <= seen[0][0] and seen[-1][1] < 20000


def test_a_serial_run_and_ranges_elsewhere_keep_their_ports(monkeypatch):
    monkeypatch.setattr(real_mesos, "WORKER", None)
    assert real_mesos.worker_ports(_drain_agents(3)) == _drain_agents(3)
    monkeypatch.setattr(real_mesos, "WORKERS", 2)
    monkeypatch.setattr(real_mesos, "WORKER", 1)
    assert real_mesos.worker_ports("cpus:8;ports:[8050-8999]") == "cpus:8;ports:[8050-8999]"  # the images' cluster


def test_a_range_that_would_not_move_whole_is_refused(monkeypatch):
    monkeypatch.setattr(real_mesos, "WORKERS", 8)  # 1250 ports a worker: 416 an agent
    monkeypatch.setattr(real_mesos, "WORKER", 1)
    with pytest.raises(ValueError, match=r"ports \[31900-31999\]"):
        real_mesos.worker_ports("ports:[31900-31999]")
    with pytest.raises(ValueError, match=r"ports \[31500-32500\]"):
        real_mesos.worker_ports("ports:[31500-32500]")
