"""Bring-up overhead, training overhead and footprint: the main example under tfmesos against the
same four processes started by hand (``benchmarks.handlaunch``), in interleaved pairs.

One run of each arm gives:
  * servers_up_s  launch start -> the last of ps:0, worker:0, worker:1 printing
                  ``tfmesos.task.tfserver: ... serving on ...`` (tfmesos: the mtime of the line in the
                  task's sandbox stdout; by hand: when the launcher read it from the pipe)
  * first_step_s  launch start -> the chief's first training step done (``first step at <unix
                  time>``, printed by train.py when FIRST_STEP_MARK=1, in both arms)
  * training_s    the chief's ``training took X s`` for TRAIN_STEPS steps -> steps/s
tfmesos runs also give the scheduler's own timeline (registered, launched, TASK_RUNNING: the
ClusterSpec delivered and the process started) and the footprint (psutil, once training runs).
"""
from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    PYTHON,
    BenchError,
    CpuMonitor,
    StampedRun,
    ensure_gone,
    job_options,
    launched,
    log,
    pinned,
    rss_mib,
    sandbox_root,
    summary,
    wait_sandbox_line,
)
from benchmarks.handlaunch import HandJob
from tests.e2e.harness import find_task_process

SERVERS = ("ps:0", "worker:0", "worker:1")
TASKS = ("chief:0",) + SERVERS


def job_env(steps: int, extra: tuple[str, ...] = ()) -> list[str]:
    return [f"TRAIN_STEPS={steps}", "CHECKPOINT_EVERY=100", "FIRST_STEP_MARK=1", *extra]


def tfmesos_arm(tmp: Path, name: str, steps: int, pin: set[int] | None = None, env: tuple[str, ...] = ()) -> dict[str, Any]:
    opts = job_options(tmp / f"{name}.json", name, job_env(steps, env))
    run = StampedRun(["run", str(opts), "--api-port", "0"], pin=pin)
    t0 = run.started_at
    cpu = CpuMonitor(lambda: [run.proc.pid])
    try:
        root = sandbox_root(run)
        _, t_registered, _ = run.find(r"registered as framework", 60)
        for key in TASKS:
            run.find(rf"launch {key} as ", 120)
        tasks = launched(run)
        t_launched = max(tasks[k]["stamp"] for k in TASKS)
        running = {k: run.find(rf"\] {k} TASK_RUNNING", 120)[1] for k in TASKS}
        serving = {k: wait_sandbox_line(root, tasks[k]["task_id"], r"serving on", 300,
                                        abort=lambda k=k: run.failed(k)) for k in SERVERS}
        first_step = float(run.find(r"chief:0 \| first step at (\S+)", 300)[2].group(1))
        time.sleep(1.0)  # footprint while training runs
        footprint = {"scheduler_with_embedded_master": rss_mib(run.proc.pid)}
        executor = find_task_process(name, "worker", 0, executor=True)
        server = find_task_process(name, "ps", 0)
        footprint["executor"] = rss_mib(executor.pid) if executor else None
        footprint["tfserver_ps"] = rss_mib(server.pid) if server else None
        took = float(run.find(r"chief:0 \| training took (\S+) s", 900)[2].group(1))
        code = run.wait(120)
        if code != 0:
            raise BenchError(f"tfmesos run exited {code}:\n" + run.output[-3000:])
    finally:
        cpu.stop()
        run.stop()
        left = ensure_gone(name)
        (tmp / f"{name}.log").write_text(run.output)  # the stamped console, kept for inspection
    rusage = run.rusage()
    footprint["scheduler_cpu_s"] = rusage.get("cpu_s")
    whole = _whole_job_cpu(cpu, run.proc.pid, rusage.get("cpu_s"))
    footprint["scheduler_peak_rss_mib"] = cpu.peak_rss_mib(run.proc.pid)
    return {
        "arm": "tfmesos",
        "servers_up_s": max(serving.values()) - t0,
        "first_step_s": first_step - t0,
        "training_s": took,
        "steps_per_s": steps / took,
        "timeline_s": {
            "registered": t_registered - t0,
            "all_launched": t_launched - t0,
            "all_task_running": max(running.values()) - t0,
            "servers_up": max(serving.values()) - t0,
            "first_step": first_step - t0,
        },
        **_cpu_figures(cpu, t0, first_step, took, steps),
        # tfmesos' own processes (the scheduler with the embedded master, the executors) while training
        "tfmesos_processes_cpu_s_per_1000_steps": _own_cpu(cpu, run.proc.pid, first_step, took, steps),
        # The whole job, start to exit: tfmesos' own processes against every process of the job.
        **whole,
        # Per task, the scheduler's launch -> its TASK_RUNNING (executor started, ClusterSpec in hand,
        # the task's process started): the four executors start at once on 2 cores.
        "executor_start_s": summary(running[k] - tasks[k]["stamp"] for k in TASKS)["median"],
        "ports": {k: tasks[k]["port"] for k in TASKS},
        "footprint": footprint,
        "leftover_processes": left,
    }


def hand_arm(tmp: Path, name: str, steps: int, ports: dict[str, int], own_sessions: bool = False,
             pin: set[int] | None = None, env: tuple[str, ...] = ()) -> dict[str, Any]:
    opts = job_options(tmp / f"{name}.json", name, job_env(steps, env))
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp))
    with pinned(pin):
        job = HandJob(opts, ports, work, own_sessions)
    t0 = job.started_at
    cpu = CpuMonitor(lambda: [t.proc.pid for t in job.tasks.values()])
    try:
        serving = {k: job.tasks[k].find(r"serving on", 300)[0] for k in SERVERS}
        chief = job.tasks["chief:0"]
        first_step = float(chief.find(r"first step at (\S+)", 300)[1].group(1))
        took = float(chief.find(r"training took (\S+) s", 900)[1].group(1))
        code = chief.proc.wait(120)
        if code != 0:
            raise BenchError(f"hand-launched chief exited {code}")
    finally:
        cpu.stop()
        job.stop()
    return {
        "arm": "hand",
        "servers_up_s": max(serving.values()) - t0,
        "first_step_s": first_step - t0,
        "training_s": took,
        "steps_per_s": steps / took,
        **_cpu_figures(cpu, t0, first_step, took, steps),
        "job_cpu_s": cpu.series[-1][1] if cpu.series else None,
    }


def _whole_job_cpu(cpu: CpuMonitor, scheduler_pid: int, scheduler_cpu: float | None) -> dict[str, float | None]:
    """CPU seconds of the whole job (every process, last sample; the scheduler's own from its
    getrusage at exit, which the sampling cannot miss) and the share of tfmesos' processes: the
    scheduler with the embedded master in it, and the executors."""
    if not cpu.by_pid or scheduler_cpu is None:
        return {"job_cpu_s": None, "tfmesos_cpu_s": None, "tfmesos_cpu_share": None}
    last = dict(cpu.by_pid[-1][1])
    last[scheduler_pid] = max(scheduler_cpu, last.get(scheduler_pid, 0.0))
    own = sum(c for pid, c in last.items() if pid == scheduler_pid or _tfmesos_own(cpu.cmdlines.get(pid, "")))
    total = sum(last.values())
    return {"job_cpu_s": total, "tfmesos_cpu_s": own, "tfmesos_cpu_share": own / total if total else None}


def _own_cpu(cpu: CpuMonitor, scheduler_pid: int, first_step: float, took: float, steps: int) -> float | None:
    window = 0.8 * took
    used = cpu.cpu_of(first_step, first_step + window,
                      lambda pid, cmd: pid == scheduler_pid or _tfmesos_own(cmd))
    return None if used is None else used / (steps * window / took) * 1000


def _cpu_figures(cpu: CpuMonitor, t0: float, first_step: float, took: float, steps: int) -> dict[str, float | None]:
    """CPU seconds of every process of the job: up to the first step, and per 1000 steps of training
    (over most of the training window; contention from other users changes these far less than wall
    times), and the cores other processes on the machine kept busy meanwhile."""
    at_first = cpu.at(first_step)
    window = 0.8 * took
    at_end = cpu.at(first_step + window)
    per_1000 = (at_end - at_first) / (steps * window / took) * 1000 if at_first is not None and at_end is not None else None
    return {"bringup_cpu_s": at_first, "training_cpu_s_per_1000_steps": per_1000,
            "foreign_cores_bringup": cpu.foreign_cores(t0, first_step),
            "foreign_cores_training": cpu.foreign_cores(first_step, first_step + window)}


def import_tensorflow() -> float:
    t = time.monotonic()
    subprocess.run([PYTHON, "-c", "import tensorflow"], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=300)
    return time.monotonic() - t


def run(tmp: Path, pairs: int = 3, steps: int = 2000, imports_per_pair: int = 2, own_sessions: bool = False,
        pin: set[int] | None = None, label: str = "bring-up/training", env: tuple[str, ...] = ()) -> dict[str, Any]:
    """``pairs`` interleaved pairs; ``pin``: both arms' processes on those CPUs only (taskset);
    ``env``: more job environment, the same for both arms."""
    results: dict[str, list[dict[str, Any]]] = {"tfmesos": [], "hand": []}
    imports: list[float] = []
    failures: list[str] = []
    ports: dict[str, int] | None = None
    for i in range(pairs):
        order = ("tfmesos", "hand") if i % 2 == 0 or ports is None else ("hand", "tfmesos")
        for arm in order:
            name = f"bench-up{steps}-{i}-{arm}{'-pin' if pin else ''}"
            for attempt in range(2):  # one retry: other people's jobs may hold a port for a moment
                try:
                    log(f"{label} pair {i + 1}/{pairs}: {arm} (TRAIN_STEPS={steps}{f', CPUs {sorted(pin)}' if pin else ''})")
                    if arm == "tfmesos":
                        r = tfmesos_arm(tmp, f"{name}{attempt or ''}", steps, pin, env)
                        ports = ports or r["ports"]
                    else:
                        assert ports is not None
                        r = hand_arm(tmp, f"{name}{attempt or ''}", steps, ports, own_sessions, pin, env)
                    r["pair"] = i
                    results[arm].append(r)
                    log(f"  {arm}: servers up {r['servers_up_s']:.2f}s, first step {r['first_step_s']:.2f}s, "
                        f"training {r['training_s']:.1f}s")
                    break
                except Exception as exc:  # noqa: BLE001 - recorded, and retried once
                    failures.append(f"{name} attempt {attempt + 1}: {exc}"[:2000])
                    log(f"  {arm} failed: {str(exc)[:300]}")
        for _ in range(imports_per_pair):
            imports.append(import_tensorflow())
            log(f"  python -c 'import tensorflow': {imports[-1]:.2f}s")
    return _summarise(results, imports, failures)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _summarise(results: dict[str, list[dict[str, Any]]], imports: list[float], failures: list[str]) -> dict[str, Any]:
    tm, hd = results["tfmesos"], results["hand"]
    by_pair = {r["pair"]: r for r in hd}
    paired = [(r, by_pair[r["pair"]]) for r in tm if r["pair"] in by_pair]
    out: dict[str, Any] = {"runs": results, "failures": failures}
    for metric in ("servers_up_s", "first_step_s", "steps_per_s", "training_s", "bringup_cpu_s",
                   "training_cpu_s_per_1000_steps", "foreign_cores_bringup", "foreign_cores_training", "job_cpu_s"):
        out[metric] = {"tfmesos": summary(r[metric] for r in tm), "hand": summary(r[metric] for r in hd)}
        # The ratio of each pair (taken side by side), then the median of those ratios.
        out[metric]["pair_ratios"] = summary(_ratio(a[metric], b[metric]) for a, b in paired)
        out[metric]["ratio_of_medians"] = _ratio(out[metric]["tfmesos"]["median"], out[metric]["hand"]["median"])
    out["import_tensorflow_s"] = summary(imports)
    out["timeline_s"] = {k: summary(r["timeline_s"][k] for r in tm) for k in (tm[0]["timeline_s"] if tm else {})}
    fp: dict[str, Any] = {}
    for part in ("scheduler_with_embedded_master", "executor", "tfserver_ps"):
        samples = [r["footprint"].get(part) for r in tm if r["footprint"].get(part)]
        fp[part] = {"rss_mib": summary(s["rss_mib"] for s in samples), "uss_mib": summary(s["uss_mib"] for s in samples)}
    fp["scheduler_peak_rss_mib"] = summary(r["footprint"].get("scheduler_peak_rss_mib") for r in tm)
    out["footprint"] = fp
    out["tfmesos_processes_cpu_s_per_1000_steps"] = summary(r.get("tfmesos_processes_cpu_s_per_1000_steps") for r in tm)
    out["scheduler_cpu_s"] = summary(r["footprint"].get("scheduler_cpu_s") for r in tm)
    for key in ("tfmesos_cpu_s", "tfmesos_cpu_share", "executor_start_s"):
        out[key] = summary(r.get(key) for r in tm)
    return out


def _tfmesos_own(cmdline: str) -> bool:
    """An executor, or the embedded agent's fork server (the warm interpreter executors are forked from)."""
    return "tfmesos.executor" in cmdline or "localmesos/agent/zygote.py" in cmdline
