"""A long-lived shared ``tfmesos local-master`` (issue 31): ``jobs`` small jobs (two workers running
``true``) one after another, then as many again ``parallel`` at a time, each a whole ``tfmesos run
--master``. After every sequential job and every parallel batch, the master process' RSS, open file
descriptors and threads, and what its work dir holds (agents' framework directories, files), are
sampled: the curve. Bars: every job SUCCEEDED; after the warm-up (the first ``warmup`` jobs, while
the master fills its bounded lists of ended frameworks) RSS grows by at most ``RSS_SLOPE_BAR_KIB``
a job and fds and threads not at all; the work dir keeps no more framework sandboxes per agent than
the garbage-collection policy (``--max-completed-frameworks``) allows. The slope is taken apart for
each phase, after its warm-up (``derived``).
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.common import ROOT, BenchError, log

RSS_SLOPE_BAR_KIB = 8.0  # KiB a job after the warm-up (noise of the allocator; 84 KiB a job before the bound)
KEPT = 50  # the master's --max-completed-frameworks (Mesos' default), the agents' bound too


def _sample(pid: int, work_dir: Path, done: int) -> dict[str, Any]:
    p = psutil.Process(pid)
    frameworks = list(work_dir.glob("agents/*/frameworks/*"))
    return {"jobs": done, "rss_kib": p.memory_info().rss // 1024, "fds": p.num_fds(), "threads": p.num_threads(),
            "framework_dirs": len(frameworks), "files": sum(1 for _ in work_dir.rglob("*"))}


def _start(options: Path, master: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tfmesos.client.cli", "run", str(options), "--master", master, "-q",
                             "--state-dir", str(options.parent / "state")], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _slope_kib(points: list[dict[str, Any]]) -> float | None:
    """Least-squares RSS KiB per job over the points."""
    if len(points) < 3:
        return None
    xs, ys = [p["jobs"] for p in points], [p["rss_kib"] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else None


def run(tmp: Path, jobs: int = 200, parallel: int = 20, warmup: int = 60, kept: int = KEPT) -> dict[str, Any]:
    work = tmp / "long-master"
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    master = subprocess.Popen([sys.executable, "-m", "tfmesos.client.cli", "local-master", "--port", "0", "--agents", "2",
                               "--first-port", "0", "--ports-per-agent", "200", "--work-dir", str(work / "master"),
                               "--max-completed-frameworks", str(kept)],
                              cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert master.stdout is not None
        address = None
        for line in master.stdout:
            m = re.search(r"listening on (\S+)", line)
            if m:
                address = m.group(1)
                break
        if address is None:
            raise BenchError("the local-master did not start")
        curve: list[dict[str, Any]] = []
        failed: list[str] = []
        started = time.monotonic()

        def job(i: int) -> Path:
            path = work / f"job-{i}.json"
            path.write_text(json.dumps({"service": {"name": f"long-{i}"}, "job": {"command": "true"},
                                        "roles": {"worker": {"count": 2, "cpus": 0.1, "mem": 32}}}))
            return path

        def ended(i: int, proc: subprocess.Popen) -> None:
            out, _ = proc.communicate(timeout=300)
            if proc.returncode != 0 or f"job long-{i} SUCCEEDED" not in out:
                failed.append(f"long-{i}: exit {proc.returncode}: {out[-300:]}")

        log(f"longmaster: {jobs} jobs one after another through one local-master")
        for i in range(jobs):
            ended(i, _start(job(i), address, env))
            curve.append(_sample(master.pid, work / "master", i + 1))
        sequential_s = time.monotonic() - started
        log(f"longmaster: {jobs} jobs {parallel} at a time")
        t = time.monotonic()
        for first in range(jobs, 2 * jobs, parallel):
            batch = [(i, _start(job(i), address, env)) for i in range(first, min(first + parallel, 2 * jobs))]
            for i, proc in batch:
                ended(i, proc)
            curve.append(_sample(master.pid, work / "master", batch[-1][0] + 1))
        parallel_s = time.monotonic() - t
    finally:
        master.terminate()
        try:
            master.wait(30)
        except subprocess.TimeoutExpired:
            master.kill()
    return {"jobs": 2 * jobs, "parallel": parallel, "warmup": warmup, "kept": kept, "failed": failed,
            "sequential_s": round(sequential_s, 1), "parallel_s": round(parallel_s, 1),
            "slope_bar_kib": RSS_SLOPE_BAR_KIB, "curve": curve} | derived(curve, jobs, warmup)


def derived(curve: list[dict[str, Any]], jobs: int, warmup: int) -> dict[str, Any]:
    """The figures of the curve. The warm-up lasts while the agents fill their bounded lists of
    ended frameworks (the sandboxes they keep): in the sequential phase the first ``warmup`` jobs;
    in the parallel one (whose jobs reach the other agent too) until the work dir holds its most."""
    sequential_after = [p for p in curve if warmup < p["jobs"] <= jobs]
    parallel = [p for p in curve if p["jobs"] > jobs]
    full = max((p["framework_dirs"] for p in parallel), default=0)
    parallel_after = [p for p in parallel if p["framework_dirs"] >= full]
    after = sequential_after + parallel_after
    flat = {key: (min(p[key] for p in after), max(p[key] for p in after)) for key in ("fds", "threads")} if after else {}
    return {
        "rss_kib_first": curve[0]["rss_kib"] if curve else None, "rss_kib_last": curve[-1]["rss_kib"] if curve else None,
        "rss_slope_kib_per_job_after_warmup": _slope_kib(sequential_after),
        "rss_slope_kib_per_job_parallel": _slope_kib(parallel_after),
        "parallel_warm_from_job": parallel_after[0]["jobs"] if parallel_after else None,
        "fds_range_after_warmup": flat.get("fds"), "threads_range_after_warmup": flat.get("threads"),
        "framework_dirs_max": max((p["framework_dirs"] for p in curve), default=None),
    }
