"""The core's decisions alone, without Mesos: ``Job.offers`` placing a 1,000-task gang on 1,000
agents, and a 1,000-task job's whole lifecycle (the gang placed, every task STARTING then RUNNING
with the clock ticking, ten workers failed and relaunched, a snapshot and the record written, the
chief's success, every other task killed, the end). CPU seconds, the best of ``--rounds``.

``python -m benchmarks.core_lifecycle --against CHECKOUT --out FILE`` measures this checkout and
another (e.g. main's, to show a change of the core is no slower) in turns, ``--pairs`` times, each
in a process of its own; the measuring code is this file's, the code measured each checkout's (it
imports the ``Job`` from before the core's subpackages too).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

GPUS = {"name": "gpus", "type": "SCALAR", "scalar": {"value": 4.0}, "role": "*"}


def _core() -> tuple[Any, Any, Any]:
    """Job, StatusUpdate and a task state's maker, wherever the checkout measured keeps them."""
    try:
        from tfmesos.core.job.job import Job
        from tfmesos.core.task_state import StatusUpdate, TaskState
        return Job, StatusUpdate, TaskState
    except ImportError:  # before core/ had subpackages: states were strings
        from tfmesos.core.job import Job  # type: ignore[no-redef]
        from tfmesos.core.job_state import StatusUpdate  # type: ignore[no-redef]
        return Job, StatusUpdate, str


def _offers(first: int, count: int, seed: int) -> list[Any]:
    from benchmarks.placement import synthetic_raw_offer
    from tfmesos.mesos.offers import parse_offer

    rng = random.Random(seed)
    raws = [synthetic_raw_offer(first + i, rng) for i in range(count)]
    for raw in raws:  # every agent with GPUs enough for the GPU workers: the whole gang is placed
        if not any(r["name"] == "gpus" for r in raw["resources"]):
            raw["resources"].append(dict(GPUS))
    return [parse_offer(raw) for raw in raws]


def _spec(tasks: int) -> Any:
    from tfmesos.options.jobspec import job_spec_from_options
    from tfmesos.options.load import resolve_options

    ps = max(1, tasks // 10)
    return job_spec_from_options(resolve_options({
        "service": {"name": "bench"}, "job": {"command": "python train.py"},
        "roles": {"ps": {"count": ps, "cpus": 4, "mem": 16384},
                  "worker": {"count": tasks - ps - 1, "cpus": 2, "mem": 8192, "gpus": 1,
                             "restart_policy": "OnFailure", "max_restarts": 5},
                  "chief": {"count": 1, "cpus": 2, "mem": 8192}},
        "policies": {"max_job_restarts": 100, "backoff_seconds": 0.0},
    }))


def offers_once(spec: Any, offers: list[Any]) -> float:
    Job, _, _ = _core()
    gc.collect()
    start = time.process_time()
    job = Job.new(spec, 0.0)
    actions = job.offers(offers, 0.0)
    took = time.process_time() - start
    assert sum(len(a.tasks) for a in actions if hasattr(a, "tasks")) == len(job.tasks)
    return took


def lifecycle_once(spec: Any, offers: list[Any], more: list[Any]) -> float:
    Job, StatusUpdate, state = _core()
    gc.collect()
    start = time.process_time()
    job = Job.new(spec, 0.0)
    job.start()
    launched = [t for a in job.offers(offers, 1.0) if hasattr(a, "tasks") for t in a.tasks]
    for name in ("TASK_STARTING", "TASK_RUNNING"):
        for i, t in enumerate(launched):
            job.status(StatusUpdate(t.task_id, state(name), agent_id="S"), 1.0)
            if i % 100 == 0:
                job.tick(1.0)
    job.snapshot()
    for t in [t for t in launched if t.key.role == "worker"][:10]:
        job.status(StatusUpdate(t.task_id, state("TASK_FAILED"), agent_id="S", exit_code=137), 1.0)
    job.tick(2.0)
    for t in [t for a in job.offers(more, 2.0) if hasattr(a, "tasks") for t in a.tasks]:
        job.status(StatusUpdate(t.task_id, state("TASK_RUNNING"), agent_id="S2"), 2.0)
    job.snapshot()
    job.to_dict()
    chief = next(t for t in launched if t.key.role == "chief")
    job.status(StatusUpdate(chief.task_id, state("TASK_FINISHED"), agent_id="S"), 3.0)
    for rec in list(job.tasks.values()):
        if rec.live:
            job.status(StatusUpdate(rec.task_id, state("TASK_KILLED"), agent_id="S"), 3.0)
    job.tick(3.0)
    took = time.process_time() - start
    assert job.terminal, job.phase
    return took


def measure(rounds: int = 5, tasks: int = 1000, agents: int = 1000) -> dict[str, float]:
    spec, offers, more = _spec(tasks), _offers(0, agents, 42), _offers(10 * agents, 50, 43)
    return {"offers_cpu_s": min(offers_once(spec, offers) for _ in range(rounds)),
            "lifecycle_cpu_s": min(lifecycle_once(spec, offers, more) for _ in range(rounds))}


def compare(against: Path, pairs: int, rounds: int) -> dict[str, Any]:
    """This checkout and ``against`` in turns (A B, B A, ...), each in a process of its own."""
    here = Path(__file__).resolve().parents[1]
    arms: dict[str, list[dict[str, float]]] = {"this": [], "against": []}
    for i in range(pairs):
        order = [("this", here), ("against", against)]
        for name, root in order if i % 2 == 0 else order[::-1]:
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", "--rounds", str(rounds)],
                                 cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True,
                                 check=True)
            arms[name].append(json.loads(out.stdout))
    best = {name: {k: min(s[k] for s in samples) for k in samples[0]} for name, samples in arms.items()}
    return {"pairs": pairs, "rounds_per_sample": rounds, "against": str(against), "samples": arms, "best": best,
            "ratio_this_to_against": {k: best["this"][k] / best["against"][k] for k in best["this"]}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.core_lifecycle", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="samples per measure; the best is kept")
    parser.add_argument("--pairs", type=int, default=5, help="with --against: measures of each checkout, in turns")
    parser.add_argument("--against", type=Path, help="another checkout to measure in turns with this one")
    parser.add_argument("--measure", action="store_true", help="measure the code importable here, print JSON")
    parser.add_argument("--out", type=Path, help="write the results here (JSON)")
    args = parser.parse_args(argv)
    if args.measure or args.against is None:
        sys.path.insert(0, os.getcwd())  # the checkout measured: its benchmarks.placement and its tfmesos
        result: dict[str, Any] = measure(args.rounds)
    else:
        result = compare(args.against.resolve(), args.pairs, args.rounds)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
