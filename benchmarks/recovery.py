"""Recovery time: kill -9 of a worker, then of the parameter server, in one running job.

Each run trains the main example with TRAIN_STEPS large enough not to end on its own, then:
  1. at ``step 200``: kill -9 of worker:1's TensorFlow server. Timestamps (from the scheduler's
     stamped console and the new sandbox): TASK_FAILED seen by the scheduler, the relaunch
     (``launch worker:1 as ...``), TASK_RUNNING (the executor has the ClusterSpec and has started
     the process), and the new server's ``serving on`` line.
     Then, while the job trains on, one ``python -m tfmesos.task.tfserver`` is started by hand (no
     Mesos) and timed to ``serving on``: the physical limit for that replacement, which imports
     TensorFlow on the same 2 cores as the running job.
  2. once the chief has reported another step: kill -9 of ps:0, which restarts the whole job from
     its checkpoint: TASK_FAILED, every task relaunched, all TASK_RUNNING, the servers serving,
     the chief's ``resumed from step N`` and its first training step (``first step at <unix time>``).
All times are seconds from the kill. The run is then stopped (SIGTERM: the scheduler kills the job).
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

from tests.e2e.harness import find_task_process

from benchmarks.common import (
    BenchError,
    StampedRun,
    ensure_gone,
    job_options,
    launched,
    log,
    sandbox_root,
    summary,
    wait_sandbox_line,
)
from benchmarks.handlaunch import probe_tfserver

SERVERS = ("ps:0", "worker:0", "worker:1")


def _kill(name: str, role: str, index: int) -> float:
    proc = find_task_process(name, role, index)
    if proc is None:
        raise BenchError(f"no process for {role}:{index} of {name}")
    t = time.time()
    proc.send_signal(signal.SIGKILL)
    return t


def one_run(tmp: Path, name: str) -> dict[str, Any]:
    opts = job_options(tmp / f"{name}.json", name, ["TRAIN_STEPS=1000000", "CHECKPOINT_EVERY=100", "FIRST_STEP_MARK=1"])
    run = StampedRun(["run", str(opts), "--api-port", "0"])
    out: dict[str, Any] = {}
    try:
        root = sandbox_root(run)
        run.find(r"chief:0 \| step 200 ", 300)

        # 1. a worker
        start = len(run.lines)
        t_kill = _kill(name, "worker", 1)
        i_failed, t_failed, _ = run.find(r"\] worker:1 TASK_FAILED", 60, start)
        i_launch, t_launch, m = run.find(r"launch worker:1 as (\S+)", 120, i_failed)
        _, t_running, _ = run.find(r"\] worker:1 TASK_RUNNING", 120, i_launch)
        t_serving = wait_sandbox_line(root, m.group(1), r"serving on", 300, abort=lambda: run.failed("worker:1", i_launch))
        out["worker"] = {
            "task_failed": t_failed - t_kill,
            "relaunched": t_launch - t_kill,
            "task_running": t_running - t_kill,
            "serving": t_serving - t_kill,
        }
        log(f"  worker:1 killed: FAILED +{t_failed - t_kill:.2f}s, relaunched +{t_launch - t_kill:.2f}s, "
            f"RUNNING +{t_running - t_kill:.2f}s, serving +{t_serving - t_kill:.2f}s")
        run.find(r"chief:0 \| step \d+ ", 300, len(run.lines))
        # The physical limit under the same load: a TensorFlow server started by hand next to the
        # training job (the replacement worker's TF import competes with it for the same cores).
        out["worker"]["tfserver_by_hand_under_load"] = probe_tfserver(tmp / f"{name}-probe")
        log(f"  a TF server started by hand while the job trains: serving after "
            f"{out['worker']['tfserver_by_hand_under_load']:.2f}s")
        run.find(r"chief:0 \| step \d+ ", 300, len(run.lines))

        # 2. the parameter server: the whole job restarts from its checkpoint
        start = len(run.lines)
        t_kill = _kill(name, "ps", 0)
        i_failed, t_failed, _ = run.find(r"\] ps:0 TASK_FAILED", 60, start)
        for key in ("chief:0",) + SERVERS:
            run.find(rf"launch {key} as ", 180, i_failed)
        tasks = launched(run, i_failed)
        i_first_launch = min(t["line"] for t in tasks.values())
        killed = [ts for i, ts, _ in run.all(r"\] (chief:0|worker:\d) TASK_(KILLED|FAILED)") if start <= i < i_first_launch]
        running = [run.find(rf"\] {k} TASK_RUNNING", 180, tasks[k]["line"])[1] for k in tasks]
        serving = [wait_sandbox_line(root, tasks[k]["task_id"], r"serving on", 300,
                                     abort=lambda k=k: run.failed(k, tasks[k]["line"])) for k in SERVERS]
        _, t_resumed, m_resumed = run.find(r"chief:0 \| resumed from step (\d+)", 300, start)
        first_step = float(run.find(r"chief:0 \| first step at (\S+)", 300, start)[2].group(1))
        out["ps"] = {
            "task_failed": t_failed - t_kill,
            "others_ended": (max(killed) - t_kill) if killed else None,
            "relaunched": max(t["stamp"] for t in tasks.values()) - t_kill,
            "task_running": max(running) - t_kill,
            "servers_up": max(serving) - t_kill,
            "resumed": t_resumed - t_kill,  # as forwarded to the console (batched by 0.3 s)
            "first_step": first_step - t_kill,
            "resumed_from_step": int(m_resumed.group(1)),
        }
        log(f"  ps:0 killed: FAILED +{t_failed - t_kill:.2f}s, relaunched +{out['ps']['relaunched']:.2f}s, "
            f"servers up +{out['ps']['servers_up']:.2f}s, resumed from step {m_resumed.group(1)} "
            f"+{out['ps']['resumed']:.2f}s, first step +{out['ps']['first_step']:.2f}s")
    finally:
        run.stop()
        ensure_gone(name)
        (tmp / f"{name}.log").write_text(run.output)  # the stamped console, kept for inspection
    return out


def run(tmp: Path, runs: int = 3) -> dict[str, Any]:
    results, failures = [], []
    for i in range(runs):
        name = f"bench-rec-{i}"
        for attempt in range(2):
            log(f"recovery run {i + 1}/{runs}")
            try:
                results.append(one_run(tmp, f"{name}{attempt or ''}"))
                break
            except Exception as exc:  # noqa: BLE001 - recorded, and retried once
                failures.append(f"{name} attempt {attempt + 1}: {exc}"[:2000])
                log(f"  failed: {str(exc)[:300]}")
    out: dict[str, Any] = {"runs": results, "failures": failures}
    for what in ("worker", "ps"):
        keys = results[0][what].keys() if results else ()
        out[what] = {k: summary(r[what][k] for r in results) for k in keys}
    return out
