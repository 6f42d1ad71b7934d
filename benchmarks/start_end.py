"""A whole ``tfmesos run`` of a tiny job on the embedded master, timed from outside: how long the
command takes to launch its first task, and how long it takes to exit once the job is done.

- *start*: the command's start (just before the benchmark starts it) to the scheduler's
  ``launch chief:0`` line. Python's start-up, the imports, the options, the embedded master, the
  API, SUBSCRIBE and the first offer are all in it. Bar (issue 20): <= 0.2 s.
- *end*: the chief's exit (its command ends with ``date +%s.%N`` into a file, the last thing it
  does) to the command's exit (the benchmark's ``wait`` returns). The status update, the teardown,
  the summary, the job's final record (kept in the options' state directory), the API and the
  embedded master stopping, the interpreter's exit are all in it. Bar (issue 20): <= 0.3 s.

The phases in between come from the command's own lines (``benchmarks.stamped`` stamps each with
the wall-clock time it was written): when the master was up, the framework registered, the
chief's end seen, the summary printed. No TensorFlow: the chief is a shell command.
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

START_BAR_S = 0.2
END_BAR_S = 0.3
NAME = "bench-start-end"
# The command's lines whose stamps split the two figures into phases.
MARKS = {
    "master_up": r"embedded Mesos master",
    "registered": r"registered as framework",
    "launch": r"launch chief:0 ",
    "chief_finished": r"chief:0 TASK_FINISHED",
    "summary": rf"job {NAME} SUCCEEDED",
}
_STAMPED = re.compile(r"^(\d+\.\d+) (.*)$")


def one_run(tmp: Path) -> dict[str, float]:
    """One run of the tiny job: the figures and phases of this run, in seconds."""
    chief_exit = tmp / "chief-exit"
    chief_exit.unlink(missing_ok=True)
    options = tmp / "start-end-job.json"
    options.write_text(json.dumps({
        "service": {"name": NAME, "state_dir": str(tmp / "start-end-state")},
        "job": {"command": f"date +%s.%N > {chief_exit}", "workdir": str(tmp)},
        "roles": {"chief": {"count": 1, "cpus": 0.1, "mem": 64}},
    }))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BENCH_FIRST_PORT", None)  # the run as a user starts it: no port patching in benchmarks.stamped
    # The warm run writes the .pyc files of sources edited since the last run (a shell with
    # PYTHONDONTWRITEBYTECODE=1 would recompile them in every sample, ~0.1 s after a big edit).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.stamped", "run", str(options)], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=120)
    exited = time.time()
    if proc.returncode != 0 or not chief_exit.exists():
        raise BenchError(f"the tiny job did not succeed (exit {proc.returncode}): {out[-1500:]}")
    stamps: dict[str, float] = {}
    cpu = re.search(r"@bench rusage user=(\S+) sys=(\S+)", out)
    for line in out.splitlines():
        m = _STAMPED.match(line)
        if m:
            for mark, pattern in MARKS.items():
                if mark not in stamps and re.search(pattern, m.group(2)):
                    stamps[mark] = float(m.group(1))
    missing = set(MARKS) - set(stamps)
    if missing:
        raise BenchError(f"no line for {', '.join(sorted(missing))} in: {out[-1500:]}")
    ended = float(chief_exit.read_text().strip())
    return {
        "start_s": stamps["launch"] - started,
        "end_s": exited - ended,
        "total_s": exited - started,
        "master_up_s": stamps["master_up"] - started,
        "registered_s": stamps["registered"] - started,
        "finished_seen_s": stamps["chief_finished"] - ended,
        "summary_s": stamps["summary"] - ended,
        "scheduler_cpu_s": float(cpu.group(1)) + float(cpu.group(2)) if cpu else float("nan"),
    }


def run(tmp: Path, samples: int = 5) -> dict[str, Any]:
    log(f"start-end: a tiny job on the embedded master, {samples} run(s): command start -> first launch, "
        "chief exit -> command exit")
    one_run(tmp)  # warm: the page cache and the .pyc files, as for a person's second run
    runs = [one_run(tmp) for _ in range(samples)]
    return {key: summary(r[key] for r in runs) for key in runs[0]} | {"start_bar_s": START_BAR_S, "end_bar_s": END_BAR_S}
