"""A planned stop at the task level, per training mode: seconds from the notice to the exit of the
task(s) that save, seconds from the restart to the first step trained again, steps lost (run twice
or missing); and what TensorFlow's GCP probe costs with and without ``GCE_METADATA_IP``.

    .venv/bin/python -m benchmarks.planned_stop [--samples N] [--out benchmarks/planned_stop/results.json]

The processes are the tests' (tests/e2e/planned_job.py: real TensorFlow on loopback ports, TF_CONFIG
by hand; the benchmark writes the notice and sends SIGTERM as the executor will, then restarts the
job as the scheduler will). No Mesos, executor or scheduler: their share (the Kill, the status
updates, the relaunch's placement and bring-up) comes with the scheduler side of issue 38.

- *notice to exit*: the notice written (then SIGTERM to the leaving task) to the exit of the last
  task that saves (MWMS: both workers; PSS: the chief). It holds the agreement on a step, the step
  itself, the save and the process' exit.
- *restart to resumed*: the processes started again to the first step logged after the stop (the
  import of TensorFlow, the cluster coming up, the restore, one step).
- *GCP probe*: ``failure_handling_util.on_gcp()``, what PreemptionCheckpointHandler asks before
  anything else, in one process, many times: unset (a lookup of ``metadata.google.internal``), and
  ``127.0.0.1:0`` (what tfmesos gives tasks).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import environment, log
from tests.e2e import planned_job
from tests.e2e.planned_job import Job, missing, twice

STEPS = 300
MODES: dict[str, dict[str, Any]] = {
    "mwms_handler": {"kind": "mwms", "script": "mwms_handler.py", "stopped": "worker:1",
                     "env": {"TRAIN_STEPS": str(STEPS), "STEPS_PER_EPOCH": "50"}},
    "keras_mwms": {"kind": "mwms", "script": "keras_mwms.py", "stopped": "worker:1",
                   "env": {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50"}},
    "keras_pss": {"kind": "pss", "script": "keras_pss.py", "leaving": ("worker", 1), "stopped": "worker:1",
                  "env": {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50",
                          "STEPS_PER_EXECUTION": "5"}},
    "pss_loop": {"kind": "pss", "script": "pss_loop.py", "leaving": ("chief", 0), "stopped": "chief:0",
                 "env": {"TRAIN_STEPS": str(STEPS), "CHECKPOINT_EVERY": "100"}},
}
PROBE = """
import json, os, sys, time
from tensorflow.python.distribute.failure_handling import failure_handling_util as util
samples = []
for _ in range(int(sys.argv[1])):
    started = time.perf_counter()
    util.on_gcp()
    samples.append(time.perf_counter() - started)
print(json.dumps(samples))
"""


def one_stop(tmp: Path, mode: dict[str, Any]) -> dict[str, Any]:
    jobs: list[Job] = []
    try:
        if mode["kind"] == "mwms":
            outcome = planned_job.mwms(tmp, jobs, mode["script"], mode["env"], stop_after=60)
        else:
            outcome = planned_job.pss(tmp, jobs, mode["script"], mode["env"], stop_after=60, leaving=mode["leaving"])
    finally:
        for job in jobs:
            job.stop()
    return {"notice_to_exit_s": round(outcome.notice_to_exit_s, 3),
            "restart_to_resumed_s": round(outcome.start_to_resumed_s, 3),
            "saved_at": sorted(set(outcome.saved.values())),
            "exit_codes": sorted(set(outcome.first_codes.values())),
            "steps_twice": sum(len(twice(s)) for s in outcome.steps.values()),
            "steps_missing": sum(len(missing(s, STEPS)) for s in outcome.steps.values())}


def probe(samples: int, address: str | None) -> list[float]:
    env = {**os.environ}
    env.pop("GCE_METADATA_IP", None)
    if address is not None:
        env["GCE_METADATA_IP"] = address
    done = subprocess.run([planned_job.PYTHON, "-c", PROBE, str(samples)], env=env, capture_output=True, text=True,
                          timeout=600, check=True)
    return [round(x, 5) for x in json.loads(done.stdout.strip().splitlines()[-1])]


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 4), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 4),
            "max": round(ordered[-1], 4), "over_1s": sum(v > 1 for v in ordered)}


def run(tmp: Path, samples: int = 3, probes: int = 100) -> dict[str, Any]:
    results: dict[str, Any] = {"steps": STEPS, "modes": {}}
    for name, mode in MODES.items():
        rows = []
        for sample in range(samples):
            folder = tmp / f"{name}-{sample}"
            folder.mkdir()
            rows.append(one_stop(folder, mode))
            log(f"planned stop {name} #{sample + 1}: {rows[-1]}")
        results["modes"][name] = {
            "stopped": mode["stopped"], "samples": rows,
            "notice_to_exit_s": _stats([r["notice_to_exit_s"] for r in rows]),
            "restart_to_resumed_s": _stats([r["restart_to_resumed_s"] for r in rows]),
            "steps_lost": sum(r["steps_twice"] + r["steps_missing"] for r in rows)}
    results["gcp_probe_s"] = {"unset": _stats(probe(probes, None)), "127.0.0.1:0": _stats(probe(probes, "127.0.0.1:0"))}
    log(f"GCP probe: {results['gcp_probe_s']}")
    return results


def render(results: dict[str, Any]) -> str:
    out = ["# Planned stop, task level (issue 38)", "",
           f"{results['environment']['date']}, {results['environment']['cpu_count']} CPUs, "
           f"TensorFlow {results['environment'].get('tensorflow_version')}, load {results['environment'].get('load_average_at_start')}; {results['steps']} steps a job, "
           f"{len(next(iter(results['modes'].values()))['samples'])} samples a mode; medians (max).", "",
           "| Mode | Stopped | Notice to exit (s) | Restart to resumed (s) | Steps lost |",
           "|---|---|---|---|---|"]
    for name, mode in results["modes"].items():
        n, r = mode["notice_to_exit_s"], mode["restart_to_resumed_s"]
        out.append(f"| {name} | {mode['stopped']} | {n['median']} ({n['max']}) | {r['median']} ({r['max']}) | "
                   f"{mode['steps_lost']} |")
    out += ["", "| GCE_METADATA_IP | GCP probe median (s) | p90 | max | over 1 s |", "|---|---|---|---|---|"]
    for name, p in results["gcp_probe_s"].items():
        out.append(f"| {name} | {p['median']} | {p['p90']} | {p['max']} | {p['over_1s']} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planned_stop", description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--probes", type=int, default=100)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/planned_stop/results.json"))
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="tfmesos-bench-planned-"))
    started = time.monotonic()
    try:
        results = {"environment": environment(), **run(tmp, args.samples, args.probes)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["total_s"] = round(time.monotonic() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")
    (args.out.parent / "RESULTS.md").write_text(render(results))
    log(f"wrote {args.out} and {args.out.parent / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
