"""A finished job, looked at after its scheduler left: how long ``tfmesos status NAME`` (pointed at
the gone API too, which it must not wait for), ``tfmesos jobs`` and ``tfmesos logs NAME ROLE:INDEX``
take, each a whole command as a person runs it (Python's start-up included). Bar: status < 2 s.

One small real job (one task, a shell command) on the embedded master keeps its record in a
state directory of the benchmark's own; each command is then timed ``samples`` times.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, BenchError, log, summary

STATUS_BAR_S = 2.0
NAME = "bench-history"


def _timed(args: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    took = time.monotonic() - started
    if done.returncode != 0:
        raise BenchError(f"tfmesos {' '.join(args)} exited {done.returncode}: {done.stderr[-500:]}")
    return took


def run(tmp: Path, samples: int = 5) -> dict[str, Any]:
    state = tmp / "history-state"
    options = tmp / "history-job.json"
    options.write_text(json.dumps({"service": {"name": NAME},
                                   "job": {"command": "for i in $(seq 1 200); do echo line $i; done"},
                                   "roles": {"chief": {"count": 1, "cpus": 0.1, "mem": 64}}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log("history: one small job, then status/jobs/logs from its kept record")
    ran = subprocess.run([sys.executable, "-m", "tfmesos.client.cli", "run", str(options), "--state-dir", str(state)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    api = re.search(r"status page on http://(\S+)/", ran.stdout)
    if ran.returncode != 0 or not api:
        raise BenchError(f"the job did not succeed ({ran.returncode}): {ran.stdout[-1000:]}")
    where = ["--state-dir", str(state)]
    gone_api = {**env, "TFMESOS_API": api.group(1)}  # the scheduler that served there has left
    out = {"status_s": [], "status_gone_api_s": [], "jobs_s": [], "logs_s": []}
    for _ in range(samples):
        out["status_s"].append(_timed(["status", NAME, *where], env))
        out["status_gone_api_s"].append(_timed(["status", NAME, *where], gone_api))
        out["jobs_s"].append(_timed(["jobs", *where], env))
        out["logs_s"].append(_timed(["logs", NAME, "chief:0", "--tail", "5", *where], env))
    return {key: summary(values) for key, values in out.items()} | {"bar_s": STATUS_BAR_S}
