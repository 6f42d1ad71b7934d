"""The whole scheduler at scale: ``tfmesos run --master`` against ``tfmesos local-master`` with
hundreds or a thousand logical agents, for a job of trivial tasks (``sleep``).

The master's agents have 1 cpu each and every task needs 0.5 (+0.1 for its executor), so every
task lands on its own agent: the scheduler gets one offer per agent, places the gang, and sends
one launch per agent. Measured (seconds from the scheduler's SUBSCRIBED, from its stamped console):
  * all_launched   every ``launch`` call made (offers received, parsed and placed, TaskInfos built)
  * all_running    every task TASK_RUNNING (executor processes spawned and subscribed, ClusterSpec
                   delivered, ``sleep`` started): bounded by spawning one Python executor per task
and the CPU seconds and peak RSS of the scheduler process (no master in it here), the RSS of the
master process while the job runs, and of the idle master.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from tests.e2e.harness import LocalMaster

from benchmarks.common import (
    BenchError,
    CpuMonitor,
    process_start_wall,
    StampedRun,
    ensure_gone,
    log,
    rss_mib,
    summary,
    write_options,
)

# A few offered ports per agent from a fixed block: the tasks here bind no port, so the block need
# not be free (a free block of a thousand agents' ports is often not to be had on a busy machine).
PORTS = ["--first-port", "33000", "--ports-per-agent", "5"]


def idle_master(tmp: Path, agents: int) -> dict[str, Any]:
    master = LocalMaster(tmp / f"idle-master-{agents}", agents=agents, extra=PORTS)
    try:
        time.sleep(2.0)
        return {"agents": agents, **(rss_mib(master.proc.pid) or {})}
    finally:
        master.stop()


def inode_cpu_us(tmp: Path, count: int = 200) -> float:
    """CPU microseconds to create one inode (a directory and a file in it, ``count`` of each) where
    the master's work dir is: each task of a gang makes ~16 (the sandbox's layout, the agent's
    record, the executor's ``tmp``, FIFO and ClusterSpec file), and on a file system without a
    journal whose recently deleted inodes are many (other suites' temporary files) ext4 scans them
    for each new one: ~260 us against ~5 on tmpfs, seen on this machine."""
    probe = tmp / f"inode-probe-{os.getpid()}-{time.monotonic_ns()}"
    probe.mkdir(parents=True)
    start = time.process_time()
    for i in range(count):
        folder = probe / str(i)
        folder.mkdir()
        os.close(os.open(folder / "f", os.O_WRONLY | os.O_CREAT, 0o644))
    spent = time.process_time() - start
    for i in range(count):
        os.unlink(probe / str(i) / "f")
        (probe / str(i)).rmdir()
    probe.rmdir()
    return spent / (2 * count) * 1e6


def one_run(tmp: Path, agents: int, tasks: int, name: str) -> dict[str, Any]:
    inode_us = inode_cpu_us(tmp)
    master = LocalMaster(tmp / f"master-{name}", agents=agents, extra=["--cpus", "1", "--mem", "1024"] + PORTS)
    try:
        opts = write_options(
            tmp / f"{name}.json", service={"name": name}, job={"command": "exec sleep 3"},
            roles={"worker": {"count": tasks, "cpus": 0.5, "mem": 32, "restart_policy": "Never"}},
            policies={"success": "all_workers", "placement_timeout_seconds": 120},
        )
        run = StampedRun(["run", str(opts), "--master", master.address, "--api-port", "0"], first_port=None)
        monitor = CpuMonitor(lambda: [run.proc.pid], trees=False)  # its peak RSS only
        try:
            _, t_sub, _ = run.find(r"registered as framework", 60)
            deadline = time.monotonic() + 600
            master_rss = None
            launches: list = []
            runs: list = []
            seen = 0
            while True:
                # Only the lines added since the last look: this loop shares the 2 cores with the job.
                upto, before = len(run.lines), seen
                launches += run.all(r"launch worker:\d+ as ", seen, upto)
                runs += run.all(r"\] worker:\d+ TASK_RUNNING", seen, upto)
                seen = upto
                if master_rss is None and len(launches) == tasks:
                    master_rss = rss_mib(master.proc.pid)
                if len(runs) >= tasks:
                    break
                why = run.failed(r"worker:\d+", before)
                if why or time.monotonic() > deadline:
                    raise BenchError(f"{name}: {len(launches)} launched, {len(runs)} running of {tasks}: {why or 'timeout'}")
                time.sleep(0.2)
            sched_rss = rss_mib(run.proc.pid)
            code = run.wait(600)
            if code != 0:
                raise BenchError(f"{name}: the job ended with exit {code}:\n" + run.output[-2000:])
            try:
                t = psutil.Process(master.proc.pid).cpu_times()
                master_cpu = t.user + t.system
            except psutil.Error:
                master_cpu = None
            executors_cpu = _reaped_children_cpu(master.proc.pid, "zygote.py")
        finally:
            monitor.stop()
            run.stop()
            ensure_gone(name)
        offers_seen = len({m.group(1) for _, _, m in run.all(r"launch worker:\d+ as \S+ on (\S+)")})
        return {
            "agents": agents, "tasks": tasks,
            "workdir_inode_cpu_us": round(inode_us, 1),
            "first_launch_s": min(ts for _, ts, _ in launches) - t_sub,
            "all_launched_s": max(ts for _, ts, _ in launches) - t_sub,
            "all_running_s": max(ts for _, ts, _ in runs) - t_sub,
            "scheduler_cpu_s": run.rusage().get("cpu_s"),
            "scheduler_peak_rss_mib": monitor.peak_rss_mib(run.proc.pid),
            "scheduler_rss_mib": (sched_rss or {}).get("rss_mib"),
            "master_rss_mib": (master_rss or {}).get("rss_mib"),
            "master_cpu_s": master_cpu,
            # Every executor and its task, all reaped by the fork server's zygote by now (the job is
            # over): their CPU, to the clock tick per process, summed over the job.
            "executors_cpu_s": executors_cpu,
            "distinct_agents_used": offers_seen,
            # Status updates the scheduler saw more than once: the agents re-send those not acknowledged
            # within 10 s, so these count how far the scheduler's event handling fell behind.
            "status_updates_resent": _repeats(run.all(r"\] (worker:\d+) (TASK_STARTING|TASK_RUNNING)")),
        }
    finally:
        master.stop()


def _reaped_children_cpu(master_pid: int, marker: str) -> float | None:
    """CPU seconds of the reaped children of the master's child whose command line holds
    ``marker`` (cutime + cstime: the executors forked by the zygote, their tasks included)."""
    try:
        for child in psutil.Process(master_pid).children(recursive=True):
            if any(marker in part for part in child.cmdline()):
                with open(f"/proc/{child.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # stat(5) 16, 17
    except (psutil.Error, OSError, IndexError, ValueError):
        return None
    return None


def _repeats(hits: list) -> int:
    """Lines that repeat an earlier (task, state) line."""
    return len(hits) - len({(m.group(1), m.group(2)) for _, _, m in hits})


class _NullDriver:
    """Stands in for pymesos' driver: every call is accepted and dropped."""

    def __getattr__(self, name: str):  # launchTasks, sendFrameworkMessage, ...
        return lambda *args, **kwargs: None


def event_cost(tmp: Path, tasks: int, samples: int = 20) -> dict[str, Any]:
    """CPU and wall time of the scheduler's handling of one status update (``MesosAdapter.statusUpdate`` into ``JobShell``:
    parse, core ``Job.status``, persistence, the ClusterSpec message), live (TASK_STARTING after the
    launch) and terminal (TASK_KILLED while the job is torn down), for a job of ``tasks`` tasks,
    with the state store ``tfmesos run --master`` uses (a ``DirStore`` file) and without one (the
    embedded master's case). The real scheduler object; only the driver is a null object."""
    import random
    import statistics

    from tfmesos.core.job.job import Job
    from tfmesos.mesos.offers import parse_offer
    from tfmesos.mesos.taskinfo import ExecutorSettings
    from tfmesos.scheduler.job_shell import JobShell
    from tfmesos.store.job_store import JobStore
    from tfmesos.store.state_store import DirStore

    from benchmarks.placement import job_of, synthetic_raw_offer

    out: dict[str, Any] = {"tasks": tasks}
    spec = job_of(tasks)
    rng = random.Random(7)
    offers = [parse_offer(synthetic_raw_offer(i, rng)) for i in range(max(100, tasks * 10))]
    # live: a task reporting TASK_STARTING right after the gang launch (the ClusterSpec goes out);
    # terminal: a task reporting TASK_KILLED while the job is being torn down (the end of every job).
    for kind, state in (("live", "TASK_STARTING"), ("terminal", "TASK_KILLED")):
        for label, store in (("with_state_store", DirStore(tmp / "state", f"bench-events-{tasks}")), ("no_state_store", None)):
            job = Job.new(spec, 0.0)
            job.offers(offers, 0.0)  # the whole gang launched: every task TASK_STAGING with an id
            if kind == "terminal":
                job.abort("benchmark", 0.0)  # FINISHING: every task being killed
            sched = JobShell(job, ExecutorSettings(python=sys.executable), JobStore(store, {"service": {"name": "bench"}}),
                             framework_id="bench-framework")
            sched.driver, sched.connected = _NullDriver(), True
            recs = list(job.tasks.values())[:samples]
            cpu, wall = [], []
            for rec in recs:
                status = {"task_id": {"value": rec.task_id}, "state": state, "agent_id": {"value": rec.agent_id}}
                c0, w0 = time.process_time(), time.perf_counter()
                sched.mesos.statusUpdate(sched.driver, status)
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)
            out.setdefault(kind, {})[label] = {"cpu_ms": statistics.median(cpu) * 1e3,
                                               "wall_ms": statistics.median(wall) * 1e3}
            if store is not None:
                store.clear()
    return out


def executor_probe(tmp: Path, name: str, steady_s: float = 5.0) -> dict[str, Any]:
    """One task (``sleep``) on an idle 2-agent master: the executor's start (the agent spawns it ->
    its task's TASK_RUNNING, as the scheduler prints it; and from the scheduler's launch), its CPU
    seconds until then, and its CPU while the task runs (steady state: a polling loop would show)."""
    from tests.e2e.harness import find_task_process

    master = LocalMaster(tmp / f"master-{name}", agents=2, extra=PORTS)
    try:
        opts = write_options(
            tmp / f"{name}.json", service={"name": name}, job={"command": f"exec sleep {steady_s + 4:g}"},
            roles={"worker": {"count": 1, "cpus": 0.5, "mem": 32, "restart_policy": "Never"}},
            policies={"success": "all_workers"})
        run = StampedRun(["run", str(opts), "--master", master.address, "--api-port", "0"], first_port=None)
        try:
            _, t_launch, _ = run.find(r"launch worker:0 as ", 60)
            _, t_running, _ = run.find(r"\] worker:0 TASK_RUNNING", 60)
            executor = find_task_process(name, "worker", 0, executor=True)
            if executor is None:
                raise BenchError(f"{name}: no executor process found")
            spawned = process_start_wall(executor.pid)  # clock ticks: 10 ms resolution
            t = executor.cpu_times()
            start_cpu = t.user + t.system
            time.sleep(1.0)
            t = executor.cpu_times()
            cpu1, w1 = t.user + t.system, time.monotonic()
            time.sleep(steady_s)
            t = executor.cpu_times()
            cpu2, w2 = t.user + t.system, time.monotonic()
            rss = rss_mib(executor.pid)
            code = run.wait(60)
            if code != 0:
                raise BenchError(f"{name}: the job ended with exit {code}:\n" + run.output[-2000:])
        finally:
            run.stop()
            ensure_gone(name)
        return {"launch_to_running_s": t_running - t_launch, "spawn_to_running_s": t_running - spawned,
                "startup_cpu_s": start_cpu, "steady_cpu_fraction": (cpu2 - cpu1) / (w2 - w1),
                "executor_rss_mib": (rss or {}).get("rss_mib")}
    finally:
        master.stop()


def run(tmp: Path, configs: tuple[tuple[int, int, int], ...] = ((1000, 10, 2), (1000, 100, 2), (1000, 1000, 1)),
        event_sizes: tuple[int, ...] = (10, 100, 1000), probes: int = 3) -> dict[str, Any]:
    """``configs``: (agents, tasks, repeats); rounds interleave the configs that still have repeats."""
    rows, failures = [], []
    for rep in range(max(r for _, _, r in configs)):
        for agents, tasks, repeats in configs:  # interleaved: one of each per round
            if rep >= repeats:
                continue
            name = f"bench-scale-{agents}-{tasks}-{rep}"
            log(f"scale: {tasks} tasks on {agents} agents (round {rep + 1}/{repeats}); load {os.getloadavg()[0]:.2f}")
            try:
                r = one_run(tmp, agents, tasks, name)
                rows.append(r)
                log(f"  all launched +{r['all_launched_s']:.3f}s, all running +{r['all_running_s']:.2f}s after SUBSCRIBED; "
                    f"scheduler {r['scheduler_cpu_s']:.2f} CPU s")
            except Exception as exc:  # noqa: BLE001 - recorded; the other runs go on
                failures.append(f"{name}: {type(exc).__name__}: {exc}"[:2000])
                log(f"  failed: {str(exc)[:300]}")
    out: dict[str, Any] = {"runs": rows, "failures": failures, "configs": []}
    for agents, tasks, _ in configs:
        sel = [r for r in rows if r["agents"] == agents and r["tasks"] == tasks]
        out["configs"].append({"agents": agents, "tasks": tasks, **{
            k: summary(r[k] for r in sel)
            for k in ("first_launch_s", "all_launched_s", "all_running_s", "status_updates_resent", "scheduler_cpu_s", "scheduler_peak_rss_mib",
                      "master_rss_mib", "master_cpu_s", "executors_cpu_s")}})
    out["idle_master"] = [idle_master(tmp, n) for n in (2, max(a for a, _, _ in configs))]
    probes_out = []
    for i in range(probes):
        log(f"scale: executor start and steady-state CPU, one task on an idle master ({i + 1}/{probes})")
        try:
            probes_out.append(executor_probe(tmp, f"bench-exec-{i}"))
        except Exception as exc:  # noqa: BLE001 - recorded
            failures.append(f"bench-exec-{i}: {type(exc).__name__}: {exc}"[:2000])
    out["executor"] = {k: summary(p[k] for p in probes_out) for k in (
        "launch_to_running_s", "spawn_to_running_s", "startup_cpu_s", "steady_cpu_fraction", "executor_rss_mib")}
    log("scale: one status update's handling in the scheduler, by job size")
    out["per_event"] = [event_cost(tmp, n) for n in event_sizes]
    return out

