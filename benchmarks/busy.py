"""A busy cluster: many jobs submitted at once queue, none fails, none starves (issue 31).

``tfmesos local-master --agents 2 --cpus 1 --mem 1024`` and several ``tfmesos run`` of ``sleep``
jobs (no TensorFlow), all submitted at the same moment:

- *four*: four jobs of one 0.8-cpu task (0.9 with its executor: one agent each), so the cluster
  fits two at a time;
- *mixed*: a gang of four 0.4-cpu tasks (the whole cluster) submitted first, then twenty small
  jobs of one 0.4-cpu task from three Mesos roles (team-a, team-b, team-c): the cluster fits four
  small ones at a time, and the gang only once they have all stepped aside.

Per job: its wait (submitted -> ``launch`` line) and run (``launch`` -> exit), and whether it
SUCCEEDED. The same jobs are then run one after another on the idle cluster (each alone: its
bring-up and run without any wait); the *ideal queue* is those solo times laid out in submission
order on the cluster's slots (two jobs at a time for *four*; for *mixed*, the gang alone, then
the small ones four at a time). Reported: the makespan of the busy run against the ideal queue's
(the ratio), against all jobs one after another, each job's wait, and the submission order
against the launch order.

    .venv/bin/python -m benchmarks.busy --out benchmarks/busy_results.json [--quick]
"""
from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import BenchError, StampedRun, environment, log, summary
from tests.e2e.harness import LocalMaster, write_options

SLEEP_S = 8.0
SMALL_SLEEP_S = 3.0


def _job(tmp: Path, name: str, command: str, count: int, cpus: float, role: str = "*") -> Path:
    return write_options(tmp / f"{name}.json", service={"name": name, "role": role, "state_dir": str(tmp / "state")},
                         job={"command": command},
                         roles={"chief": {"count": 1, "cpus": cpus, "mem": 64},
                                "worker": {"count": count - 1, "cpus": cpus, "mem": 64}},
                         policies={"placement_timeout_seconds": 10})


def _submit(master: LocalMaster, jobs: list[Path], gap: float = 0.0) -> list[dict[str, Any]]:
    """Start every job (``gap`` seconds apart), wait for all; each one's submit, launch and end times."""
    runs = []
    for opts in jobs:
        runs.append(StampedRun(["run", str(opts), "--master", master.address], first_port=None))
        if gap:
            time.sleep(gap)
    out = []
    for opts, run in zip(jobs, runs):
        try:
            code = run.wait(900)
        except Exception:  # noqa: BLE001 - a job that hangs is a result too
            code = run.stop()
        launch = run.all(r"launch chief:0 ")
        ended = time.time() if run.proc.returncode is None else None
        end_lines = run.all(r"job \S+ (SUCCEEDED|FAILED|KILLED)")
        end_at = end_lines[-1][1] if end_lines else ended
        out.append({"name": opts.stem, "exit": code, "submitted": run.started_at,
                    "launched": launch[0][1] if launch else None, "ended": end_at,
                    "end": end_lines[-1][2].group(1) if end_lines else None,
                    "queued_said": bool(run.all(r"queued \(the cluster fits the job"))})
    for job in out:
        job["wait_s"] = job["launched"] - job["submitted"] if job["launched"] else None
        job["run_s"] = job["ended"] - job["launched"] if job["launched"] and job["ended"] else None
    return out


def ideal_makespan(solo: list[float], slots: list[int], capacity: int) -> float:
    """Makespan of the jobs' solo times, started in submission order as soon as their slots are free
    (job i takes ``slots[i]`` of ``capacity``): the ideal queue."""
    running: list[tuple[float, int]] = []
    used, now, end = 0, 0.0, 0.0
    for length, need in zip(solo, slots):
        while used + need > capacity:
            finish, freed = heapq.heappop(running)
            now, used = max(now, finish), used - freed
        heapq.heappush(running, (now + length, need))
        used += need
        end = max(end, now + length)
    return end


def scenario(tmp: Path, name: str, specs: list[tuple[str, int, float, str, float, int]], capacity: int) -> dict[str, Any]:
    """specs: (job name, tasks, cpus each, Mesos role, sleep s, slots taken)."""
    master = LocalMaster(tmp / f"master-{name}", agents=2, extra=["--cpus", "1", "--mem", "1024"])
    try:
        opts = [_job(tmp, n, f"sleep {s:g}", count, cpus, role) for n, count, cpus, role, s, _ in specs]
        log(f"busy/{name}: {len(opts)} jobs at once on 2 agents of 1 cpu")
        t0 = time.time()
        busy = _submit(master, opts, gap=0.05)
        makespan = max(j["ended"] for j in busy if j["ended"]) - t0
        log(f"busy/{name}: the same jobs one after another")
        solo = [_submit(master, [o])[0] for o in opts]
    finally:
        master.stop()
    bad = [j["name"] for j in solo if j["end"] != "SUCCEEDED" or not j["ended"]]
    if bad:
        raise BenchError(f"busy/{name}: run alone, {', '.join(bad)} did not succeed: {solo}")
    solo_s = [j["ended"] - j["submitted"] for j in solo]
    ideal = ideal_makespan(solo_s, [s[5] for s in specs], capacity)
    launch_order = [j["name"] for j in sorted(busy, key=lambda j: j["launched"] or float("inf"))]
    return {
        "jobs": busy, "solo": solo,
        "succeeded": sum(j["end"] == "SUCCEEDED" for j in busy), "count": len(busy),
        "queued_said": sum(j["queued_said"] for j in busy),
        "makespan_s": makespan, "ideal_queue_s": ideal, "one_after_another_s": sum(solo_s),
        "ratio_to_ideal": makespan / ideal if ideal else None,
        "ratio_to_one_after_another": makespan / sum(solo_s),
        "wait_s": summary(j["wait_s"] for j in busy), "run_s": summary(j["run_s"] for j in busy),
        "launch_order": launch_order, "submit_order": [j["name"] for j in busy],
    }


def run(tmp: Path, small_jobs: int = 20) -> dict[str, Any]:
    four = [(f"busy-four-{i}", 1, 0.8, "*", SLEEP_S, 1) for i in range(4)]
    mixed = [("busy-gang", 4, 0.4, "*", SLEEP_S, 4)]
    mixed += [(f"busy-small-{i}", 1, 0.4, f"team-{'abc'[i % 3]}", SMALL_SLEEP_S, 1) for i in range(small_jobs)]
    return {"four": scenario(tmp, "four", four, 2), "mixed": scenario(tmp, "mixed", mixed, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.busy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/busy_results.json"))
    parser.add_argument("--quick", action="store_true", help="eight small jobs instead of twenty")
    args = parser.parse_args(argv)
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="tfmesos-busy-"))
    results = {"environment": environment(), "busy": run(tmp, small_jobs=8 if args.quick else 20)}
    args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    for name, r in results["busy"].items():
        log(f"busy/{name}: {r['succeeded']}/{r['count']} SUCCEEDED, {r['queued_said']} said queued; makespan "
            f"{r['makespan_s']:.1f} s, ideal queue {r['ideal_queue_s']:.1f} s (ratio {r['ratio_to_ideal']:.2f}), "
            f"one after another {r['one_after_another_s']:.1f} s; launch order {r['launch_order']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
