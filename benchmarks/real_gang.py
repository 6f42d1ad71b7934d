"""The 100-task gang on three real Mesos agents (``realgang``), with a profile of where the time goes.

Three arms on the same cluster, interleaved (A B C, C B A, ...), a fresh cluster per round:

* ``tfmesos``: ``tfmesos run --master`` of the gang of tests/e2e/test_scenarios.py's ``run_gang``
  (100 workers of 0.01 cpus and 32 MB, plus tfmesos' executor: 0.1 cpus and 64 MB, each waiting
  for a gate file); seconds from its ``registered as framework`` console line to the 100th
  ``TASK_RUNNING`` line (benchmarks/stamped.py's wall-clock stamps).
* ``command``: Mesos' own command executor: a minimal v1 HTTP framework (``RawGang``) launching
  100 command tasks (no ExecutorInfo; the same 0.01 cpus and 32 MB, the same gate loop); seconds
  from SUBSCRIBED to the 100th TASK_RUNNING it reads.
* ``floor``: the same framework with the least custom executor there is (floor_executor.py, run as
  ``python3 -S -I``: SUBSCRIBE, TASK_RUNNING); tfmesos' executor resources. What the agents' own
  launch path costs: the floor the issue's 1.2x bar is measured against.

The profile (``profile_arm``) reads the master's and agents' GLOG lines of each arm (one clock:
the same machine) and gives, per phase, the moment the last task passed it (seconds after the
framework's SUBSCRIBE at the master) and the median per-task time of the phase.

Needs Apache Mesos (``mesos-master`` on PATH or in /usr/local/sbin) and the start scripts of
TFMESOS_REAL_MESOS (default ``../shared/tools/real-mesos``); without them the part is skipped,
with the reason in the results. ``REAL_MESOS_LOCK=/tmp/real-mesos.lock`` takes that flock while
each round's cluster runs (a shared machine's other real-Mesos users); the master listens on
TFMESOS_REAL_MESOS_PORT (default 5050), the agents on the three ports after it.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import re
import shlex
import shutil
import statistics
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil

from benchmarks.common import PYTHON, StampedRun, log
from tests.e2e.harness import ROOT, write_options

TOOLS_DEFAULT = ROOT.parent / "shared" / "tools" / "real-mesos"
AGENTS = [f"cpus:4;mem:4096;disk:4000;ports:[{31000 + 1000 * i}-{31999 + 1000 * i}]" for i in range(3)]
TASK_CPUS, TASK_MEM = 0.01, 32.0
EXECUTOR_CPUS, EXECUTOR_MEM = 0.1, 64.0  # tfmesos' (mesos/taskinfo.py), also given to the floor executor
COMMAND_EXECUTOR_CPUS, COMMAND_EXECUTOR_MEM = 0.1, 32.0  # what the agent adds for a command task
GATE_LOOP = 'while [ ! -e "$GATE" ]; do sleep 0.5; done'
ARMS = ("tfmesos", "command", "floor")


def tools() -> Path:
    return Path(os.environ.get("TFMESOS_REAL_MESOS") or TOOLS_DEFAULT).resolve()


def unavailable() -> str | None:
    """Why the part cannot run here (None: it can)."""
    if not (shutil.which("mesos-master") or Path("/usr/local/sbin/mesos-master").exists()):
        return "Apache Mesos is not installed (no mesos-master on PATH or in /usr/local/sbin)"
    if not (tools() / "start-agent.sh").exists():
        return f"no real-Mesos start scripts in {tools()} (set TFMESOS_REAL_MESOS)"
    return None


@contextlib.contextmanager
def _cluster(home: Path) -> Iterator[Any]:
    os.environ["TFMESOS_REAL_MESOS"] = str(tools())  # tests.e2e.real_mesos reads it at import
    from tests.e2e.real_mesos import BASE_PORT, RealMesos

    lock = os.environ.get("REAL_MESOS_LOCK")
    with open(lock, "a") if lock else contextlib.nullcontext() as held:
        if held:
            fcntl.flock(held, fcntl.LOCK_EX)
        with RealMesos(home, AGENTS, base_port=BASE_PORT) as master:
            yield master


# ---------------------------------------------------------------- the arms


def _python_on(tree: Path, tmp: Path) -> str:
    """An interpreter that imports tfmesos from ``tree`` first (job.python for an executor of another commit)."""
    wrapper = tmp / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(tree))} exec {shlex.quote(PYTHON)} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def run_tfmesos(tmp: Path, master: Any, tasks: int, at_all_running: Callable[[], None],
                executor_tree: Path | None = None) -> dict[str, Any]:
    """``executor_tree``: the executors import tfmesos from there (the scheduler is this tree's)."""
    name = "gang"
    gate = tmp / "gate"
    job: dict[str, Any] = {"command": GATE_LOOP, "env": [f"GATE={gate}"]}
    if executor_tree is not None:
        job["python"] = _python_on(executor_tree, tmp)
    opts = write_options(
        tmp / "gang.json", service={"name": name}, job=job,
        roles={"worker": {"count": tasks, "cpus": TASK_CPUS, "mem": TASK_MEM, "restart_policy": "Never"}},
        policies={"success": "all_workers", "placement_timeout_seconds": 300})
    run = StampedRun(["run", str(opts), "--master", master.address, "--state-dir", str(tmp / "state")], first_port=None)
    try:
        _, registered, _ = run.find(r"registered as framework", 120)
        deadline = time.monotonic() + 300
        while len(running := run.all(r"\] (worker:\d+) TASK_RUNNING")) < tasks:
            if time.monotonic() > deadline or run.all(r"TASK_(FAILED|LOST|KILLED|ERROR)"):
                raise RuntimeError("not all RUNNING:\n" + "\n".join(run.lines[-30:]))
            time.sleep(0.2)
        last = max(stamp for _, stamp, _ in running)
        at_all_running()
        gate.touch()
        code = run.wait(300)
        if code != 0:
            raise RuntimeError(f"tfmesos run exited {code}:\n" + "\n".join(run.lines[-30:]))
    finally:
        gate.touch()
        run.stop()
    return {"seconds": round(last - registered, 3), "registered_at": registered, "scheduler_cpu_s": run.rusage().get("cpu_s")}


class RawGang:
    """A minimal v1 HTTP framework: one ACCEPT per offer with every task that fits it, acks sent
    from a thread of their own (they never hold up reading the event stream)."""

    def __init__(self, address: str, tasks: int, executor: dict[str, Any] | None, gate: Path,
                 at_all_running: Callable[[], None]) -> None:
        from tests.localmesos.scheduler_client import RawScheduler

        self.sched = RawScheduler(address)
        self.tasks, self.executor, self.gate, self.at_all_running = tasks, executor, gate, at_all_running
        self.launched = 0
        self.running: dict[str, float] = {}
        self.finished: set[str] = set()
        self._acks: queue.Queue = queue.Queue()

    def _task(self, index: int, agent_id: dict[str, str]) -> dict[str, Any]:
        task_id = f"gang.{index}"
        task: dict[str, Any] = {
            "name": task_id, "task_id": {"value": task_id}, "agent_id": agent_id,
            "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": TASK_CPUS}},
                          {"name": "mem", "type": "SCALAR", "scalar": {"value": TASK_MEM}}]}
        if self.executor is None:
            task["command"] = {"shell": True, "value": GATE_LOOP,
                               "environment": {"variables": [{"name": "GATE", "value": str(self.gate)}]}}
        else:
            task["executor"] = dict(self.executor, executor_id={"value": task_id})
            command = f"GATE={shlex.quote(str(self.gate))}; {GATE_LOOP}"
            task["data"] = base64.b64encode(command.encode()).decode()
        return task

    def _fits(self, offer: dict[str, Any]) -> int:
        have = {r["name"]: r["scalar"]["value"] for r in offer["resources"] if r.get("type") == "SCALAR"}
        cpus, mem = ((EXECUTOR_CPUS, EXECUTOR_MEM) if self.executor else (COMMAND_EXECUTOR_CPUS, COMMAND_EXECUTOR_MEM))
        return int(min((have.get("cpus", 0) + 1e-9) // (TASK_CPUS + cpus), have.get("mem", 0) // (TASK_MEM + mem)))

    def _ack_loop(self) -> None:
        while (status := self._acks.get()) is not None:
            with contextlib.suppress(Exception):  # the framework torn down meanwhile
                self.sched.acknowledge(status)

    def run(self) -> dict[str, Any]:
        threading.Thread(target=self._ack_loop, daemon=True).start()
        self.sched.subscribe({"user": "root", "name": "gang-raw", "roles": ["*"], "checkpoint": True,
                              "capabilities": [{"type": "MULTI_ROLE"}]})
        registered = time.time()
        stream = self.sched.stream
        try:
            while len(self.finished) < self.tasks:
                event = stream.next(timeout=300)
                if event is None:
                    raise RuntimeError("the master closed the stream")
                if event["type"] == "OFFERS":
                    for offer in event["offers"]["offers"]:
                        count = min(self._fits(offer), self.tasks - self.launched)
                        infos = [self._task(self.launched + i, offer["agent_id"]) for i in range(count)]
                        self.launched += count
                        self.sched.framework_call("ACCEPT", {
                            "offer_ids": [offer["id"]], "filters": {"refuse_seconds": 2.0 if count else 300.0},
                            "operations": [{"type": "LAUNCH", "launch": {"task_infos": infos}}] if infos else []})
                elif event["type"] == "UPDATE":
                    status = event["update"]["status"]
                    task, state = status["task_id"]["value"], status["state"]
                    if "uuid" in status:
                        self._acks.put(status)
                    if state == "TASK_RUNNING":
                        self.running.setdefault(task, time.time())
                        if len(self.running) == self.tasks and not self.gate.exists():
                            self.at_all_running()
                            self.gate.touch()
                    elif state == "TASK_FINISHED":
                        self.finished.add(task)
                    elif state != "TASK_STARTING":
                        raise RuntimeError(f"{task} {state}: {status.get('message', '')}")
        finally:
            self.gate.touch()
            self._acks.put(None)
            with contextlib.suppress(Exception):
                self.sched.teardown()
            self.sched.close()
        return {"seconds": round(max(self.running.values()) - registered, 3), "registered_at": registered}


def run_raw(tmp: Path, master: Any, tasks: int, floor: bool, at_all_running: Callable[[], None]) -> dict[str, Any]:
    executor = None
    if floor:
        script = Path(__file__).with_name("floor_executor.py")
        executor = {"type": "CUSTOM", "name": "floor executor",
                    "command": {"shell": True, "value": f"exec {PYTHON} -S -I {script}"},
                    "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": EXECUTOR_CPUS}},
                                  {"name": "mem", "type": "SCALAR", "scalar": {"value": EXECUTOR_MEM}}]}
    return RawGang(master.address, tasks, executor, tmp / "gate", at_all_running).run()


# ---------------------------------------------------------------- the profile

_GLOG = re.compile(r"^[IWE](\d{8} \d\d:\d\d:\d\d\.\d+) +\d+ \S+\] (.*)$")
# (phase, pattern on an agent's line: group 1 the task's or executor's id (the same in every arm))
AGENT_MARKS = (
    ("assigned", r"Got assigned task '([^']+)'"),
    ("executor launching", r"Launching executor '([^']+)'"),
    ("container launching", r"Launching container \S+ for executor '([^']+)'"),
    ("forked", r"Checkpointing container's forked pid \d+ to '.*/executors/([^/]+)/runs/"),
    ("executor subscribed", r"(?:Received Subscribe request for HTTP executor|Got registration for executor) '([^']+)'"),
    ("task sent", r"(?:Sending queued task|Flushing queued task) '([^']+)'"),
    ("RUNNING at agent", r"Handling status update TASK_RUNNING .* for task (\S+) of"),
    ("RUNNING forwarded", r"Forwarding the update TASK_RUNNING .* for task (\S+) of"),
)
MASTER_MARKS = (
    ("master launched", r"Launching task (\S+) of framework"),
    ("RUNNING at master", r"Forwarding status update TASK_RUNNING .* for task (\S+) of"),
)


def _stamp(text: str) -> float:
    return datetime.strptime(text, "%Y%m%d %H:%M:%S.%f").timestamp()


def _lines(path: Path, offset: int) -> Iterator[tuple[float, str]]:
    with open(path, "rb") as f:
        f.seek(offset)
        for raw in f:
            m = _GLOG.match(raw.decode("utf-8", "replace"))
            if m:
                yield _stamp(m.group(1)), m.group(2)


def log_offsets(master: Any) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in (master.home / "logs").glob("*.out")}


def profile_arm(master: Any, offsets: dict[str, int]) -> dict[str, Any]:
    """Per phase: when the last task passed it (s after the master's SUBSCRIBE of the framework) and
    the median per-task seconds since the phase before; plus the offer cycle and the ACCEPTs."""
    logs = master.home / "logs"
    marks: dict[str, dict[str, float]] = {}
    subscribed = offers = None
    accepts: list[float] = []
    for t, text in _lines(logs / "master.out", offsets.get("master.out", 0)):
        if subscribed is None and re.search(r"Subscribing framework", text):
            subscribed = t
        elif offers is None and text.startswith("Sending offers"):
            offers = t
        elif text.startswith("Processing ACCEPT call"):
            accepts.append(t)
        for phase, pattern in MASTER_MARKS:
            if m := re.search(pattern, text):
                marks.setdefault(phase, {}).setdefault(m.group(1), t)
    for path in sorted(logs.glob("agent-*.out")):
        for t, text in _lines(path, offsets.get(path.name, 0)):
            for phase, pattern in AGENT_MARKS:
                if m := re.search(pattern, text):
                    marks.setdefault(phase, {}).setdefault(m.group(1), t)
    if subscribed is None:
        return {}
    order = ["master launched"] + [p for p, _ in AGENT_MARKS] + ["RUNNING at master"]
    # The agent's first phases are per executor for the executors and per task for the tasks: one id each here.
    phases: list[dict[str, Any]] = [
        {"phase": "offer cycle (SUBSCRIBE -> offers sent)", "last_s": _rel(offers, subscribed)},
        {"phase": "scheduler's first ACCEPT (at the master)", "last_s": _rel(min(accepts, default=None), subscribed)},
    ]
    before = None
    for phase in order:
        seen = marks.get(phase, {})
        if not seen:
            continue
        row: dict[str, Any] = {"phase": phase, "tasks": len(seen), "last_s": _rel(max(seen.values()), subscribed)}
        if before:
            gaps = [seen[k] - before[k] for k in seen if k in before]
            if gaps:
                row["median_step_s"] = round(statistics.median(gaps), 3)
                row["max_step_s"] = round(max(gaps), 3)
        phases.append(row)
        before = seen
    return {"phases": phases}


def _rel(t: float | None, zero: float) -> float | None:
    return None if t is None else round(t - zero, 3)


# ---------------------------------------------------------------- rounds


def _cpu(master: Any) -> dict[str, float]:
    """CPU seconds so far of the master and the agents (their own threads, not the executors)."""
    pids = {"master": int((master.home / "run" / "master.pid").read_text()) if (master.home / "run" / "master.pid").exists() else None}
    for i in range(len(master.agents)):
        pids[f"agent{i}"] = master.agent_pid(i)
    out = {}
    for name, pid in pids.items():
        with contextlib.suppress(psutil.Error, TypeError):
            t = psutil.Process(pid).cpu_times()
            out[name] = t.user + t.system
            if name != "master":  # the executors it reaped, with their tasks (and containerizer launchers)
                out[name + "_children"] = t.children_user + t.children_system
    return out


def _cpu_now(master: Any, before: dict[str, float]) -> dict[str, float]:
    """CPU seconds since ``before`` at this moment (all tasks RUNNING): the master, the agents, and
    the live executors with their tasks (processes in the cluster's sandboxes, the reaped children
    of each counted by it)."""
    now = _cpu(master)
    out = {"master": now.get("master", 0.0) - before.get("master", 0.0),
           "agents": sum(now[k] - before.get(k, 0.0) for k in now if k.startswith("agent") and "_" not in k)}
    total = 0.0
    for proc in master.leftovers():
        with contextlib.suppress(psutil.Error):
            t = proc.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    out["executors_and_tasks"] = total
    return {k: round(v, 2) for k, v in out.items()}


def _busy() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def run(tmp: Path, rounds: int = 3, tasks: int = 100, arms: tuple[str, ...] = ARMS) -> dict[str, Any]:
    reason = unavailable()
    if reason:
        log(f"realgang: skipped: {reason}")
        return {"skipped": reason}
    # REALGANG_BASELINE=DIR (a tree of another commit: git archive REF | tar -x -C DIR): a fourth arm,
    # "tfmesos-base", whose executors import tfmesos from DIR (both tfmesos arms then start their
    # executors through the same one-line sh wrapper): the before/after of an executor change.
    baseline = Path(os.environ["REALGANG_BASELINE"]) if os.environ.get("REALGANG_BASELINE") else None
    if baseline and "tfmesos-base" not in arms:
        arms = ("tfmesos-base",) + tuple(arms)
    samples: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    for r in range(rounds):
        order = arms if r % 2 == 0 else tuple(reversed(arms))
        home = tmp / f"realgang-{r}"
        with _cluster(home / "mesos") as master:
            for arm in order:
                work = home / arm
                work.mkdir(parents=True)
                offsets, cpu0, busy0, load = log_offsets(master), _cpu(master), _busy(), os.getloadavg()[0]
                t0 = time.monotonic()
                snapshot: dict[str, float] = {}
                at_all_running = lambda: snapshot.update(_cpu_now(master, cpu0))  # noqa: E731
                try:
                    if arm.startswith("tfmesos"):
                        tree = (baseline if arm == "tfmesos-base" else ROOT) if baseline else None
                        sample = run_tfmesos(work, master, tasks, at_all_running, tree)
                    else:
                        sample = run_raw(work, master, tasks, floor=arm == "floor", at_all_running=at_all_running)
                except Exception as exc:  # noqa: BLE001 - recorded; the other arms still run
                    log(f"realgang round {r} {arm}: {exc}")
                    samples[arm].append({"error": str(exc)[-2000:]})
                    continue
                _wait_idle(master)
                cpu1 = _cpu(master)
                sample["wall_s"] = round(time.monotonic() - t0, 1)
                sample["load_average"] = round(load, 2)
                sample["machine_busy_cpu_s"] = round(_busy() - busy0, 1)
                sample["mesos_cpu_s"] = {k: round(cpu1[k] - cpu0.get(k, 0.0), 2) for k in cpu1}
                sample["cpu_to_all_running_s"] = snapshot
                sample["profile"] = profile_arm(master, offsets)
                samples[arm].append(sample)
                log(f"realgang round {r} {arm}: all {tasks} RUNNING {sample['seconds']:.2f} s after registration "
                    f"(load {load:.1f}); CPU s: {sample['mesos_cpu_s']}")
    return summarize(samples, tasks)


def _wait_idle(master: Any, timeout: float = 120.0) -> None:
    """Until the agents have every resource back (the arm's executors are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = master.state()
        if all(not any(v for k, v in s.get("used_resources", {}).items() if k in ("cpus", "mem")) for s in state["slaves"]):
            return
        time.sleep(0.5)


def summarize(samples: dict[str, list[dict[str, Any]]], tasks: int) -> dict[str, Any]:
    out: dict[str, Any] = {"tasks": tasks, "agents": AGENTS, "samples": samples, "median_s": {}}
    for arm, rows in samples.items():
        good = [s["seconds"] for s in rows if "seconds" in s]
        out["median_s"][arm] = round(statistics.median(good), 2) if good else None
        cpu = [_cpu_split(s) for s in rows if "mesos_cpu_s" in s]
        out.setdefault("median_cpu_s", {})[arm] = {k: round(statistics.median(c[k] for c in cpu), 2) for k in cpu[0]} if cpu else None
        snap = [s["cpu_to_all_running_s"] for s in rows if s.get("cpu_to_all_running_s")]
        out.setdefault("median_cpu_to_all_running_s", {})[arm] = (
            {k: round(statistics.median(c[k] for c in snap), 2) for k in snap[0]} if snap else None)
    med = out["median_s"]
    if med.get("tfmesos") and med.get("floor"):
        out["tfmesos_over_floor"] = round(med["tfmesos"] / med["floor"], 2)
    for arm in ("tfmesos", "tfmesos-base", "command"):  # per round, then the median: the interleaved ratio
        pairs = [a["seconds"] / b["seconds"] for a, b in zip(samples.get(arm, []), samples.get("floor", []))
                 if "seconds" in a and "seconds" in b]
        if pairs:
            out.setdefault("median_ratio_to_floor", {})[arm] = round(statistics.median(pairs), 2)
    if med.get("tfmesos-base") and med.get("floor"):
        out["tfmesos_base_over_floor"] = round(med["tfmesos-base"] / med["floor"], 2)
    if med.get("tfmesos") and med.get("command"):
        out["tfmesos_over_command"] = round(med["tfmesos"] / med["command"], 2)
    out["profile"] = {arm: median_profile([s["profile"] for s in rows if s.get("profile")]) for arm, rows in samples.items()}
    return out


def _cpu_split(sample: dict[str, Any]) -> dict[str, float]:
    """CPU seconds of an arm by who used them: the master, the agents, what the agents started
    (containerizer launchers, executors, tasks), the scheduler (tfmesos' only: the raw framework
    is this process)."""
    cpu = sample["mesos_cpu_s"]
    out = {"master": cpu.get("master", 0.0), "agents": sum(v for k, v in cpu.items() if k.startswith("agent") and "_" not in k),
           "executors_and_tasks": sum(v for k, v in cpu.items() if k.endswith("_children"))}
    if sample.get("scheduler_cpu_s") is not None:
        out["scheduler"] = sample["scheduler_cpu_s"]
    return out


def median_profile(profiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each phase's figures, medians over the rounds."""
    rows: dict[str, dict[str, list[float]]] = {}
    for p in profiles:
        for row in p.get("phases", []):
            acc = rows.setdefault(row["phase"], {})
            for key, value in row.items():
                if key != "phase" and isinstance(value, (int, float)):
                    acc.setdefault(key, []).append(value)
    return [{"phase": phase} | {k: round(statistics.median(v), 3) for k, v in acc.items()} for phase, acc in rows.items()]


if __name__ == "__main__":  # one quick round: python -m benchmarks.real_gang [ROUNDS]
    import sys
    import tempfile

    result = run(Path(tempfile.mkdtemp(prefix="realgang-")), rounds=int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    Path(os.environ.get("REALGANG_OUT", "/dev/null")).write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
