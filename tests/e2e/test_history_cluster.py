"""Jobs run by tfmesos.cluster() and tfrun are kept as `tfmesos run`'s are: while they run,
`tfmesos status NAME` finds their API by the live marker; once they have ended,
`tfmesos jobs` lists them and `tfmesos status NAME` / `tfmesos logs NAME ROLE:INDEX` answer from
the record (the embedded master, and its sandboxes, are gone by then)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.harness import ROOT, TFMESOS, LineProcess, wait_gone

PYTHON = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{os.path.dirname(PYTHON)}:{os.environ.get('PATH', '')}")


def tfmesos(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(TFMESOS + list(args), capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**ENV, **(env or {})})
    return done, time.monotonic() - started


def test_a_cluster_block_left_normally_is_listed_and_answered_from_its_record(tmp_path: Path) -> None:
    name, state = "hist-cluster", tmp_path / "state"
    run = LineProcess([PYTHON, str(ROOT / "tests" / "e2e" / "history_cluster.py"), name, str(state)], env=ENV)
    assert run.wait(180) == 0, run.output[-3000:]
    assert "SERVING grpc://127.0.0.1:" in run.output and "LEFT" in run.output
    live = json.loads(re.search(r"^LIVE (.*)$", run.output, re.M).group(1))
    assert live["code"] == 0 and f"job {name}  phase RUNNING" in live["out"], live
    assert re.search(r"worker:0 +127\.0\.0\.1:\d+ +TASK_RUNNING", live["out"]), live
    assert not wait_gone(name, timeout=10)
    assert not list((state / "live").iterdir()), "the cluster withdrew where its API was"

    where = ["--state-dir", str(state)]
    jobs, _ = tfmesos("jobs", *where)
    assert jobs.returncode == 0, jobs.stderr
    assert re.search(rf"^{name} +CLOSED +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d +\S+ +1: 1 killed", jobs.stdout, re.M), \
        jobs.stdout
    status, took = tfmesos("status", name, *where)
    assert status.returncode == 0, status.stderr
    assert f"job {name}  CLOSED: cluster closed" in status.stdout and "from its record" in status.stdout, status.stdout
    assert re.search(r"worker:0 +127\.0\.0\.1:\d+ +TASK_KILLED", status.stdout), status.stdout
    assert took < 10, f"status took {took:.1f} s: it looked for a scheduler instead of the record"
    # The embedded master left with the block, its sandboxes too: the log's end kept in the record.
    logs, _ = tfmesos("logs", name, "worker:0", *where)
    assert logs.returncode == 0 and "listening on" in logs.stdout, logs.stdout + logs.stderr


def test_a_tfrun_job_is_kept_with_how_worker_0_ended(tmp_path: Path) -> None:
    home = tmp_path / "home"  # tfrun has no --state-dir: its ends go to ~/.tfmesos/state
    home.mkdir()
    name = "hist-tfrun"
    run = LineProcess(
        [PYTHON, "-m", "tfmesos.client.tfrun", "-w", "1", "-s", "1", "-n", name, "-Cs", "0.2", "-Ms", "128",
         "--", "test", "{job_name}", "=", "worker", "&&", "exit", "3;", "sleep", "600"],
        env=dict(ENV, HOME=str(home)))
    assert run.wait(180) == 3, run.output[-3000:]  # worker 0's own exit code
    assert not wait_gone(name, timeout=10)

    where = ["--state-dir", str(home / ".tfmesos" / "state")]
    jobs, _ = tfmesos("jobs", *where)
    assert re.search(rf"^{name} +FAILED +.* 1: 1 killed", jobs.stdout, re.M), jobs.stdout + jobs.stderr  # worker 0 exited 3
    status, _ = tfmesos("status", name, env={"HOME": str(home)})  # the default state directory
    assert status.returncode == 0, status.stderr
    assert f"job {name}  FAILED: worker:0 (run here by tfrun) exited 3" in status.stdout, status.stdout
    assert re.search(r"ps:0 +127\.0\.0\.1:\d+ +TASK_KILLED", status.stdout), status.stdout
