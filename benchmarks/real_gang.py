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
from datetime import datetime, timezone
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
# The 1,000-task gang (issue 40, ``python -m benchmarks.real_gang big``): three agents declaring
# room for it (declared, not the machine's: a task and its executor need ~1 MB and ~12 MB), tasks
# of ``sleep`` polling the gate every 5 s (not 0.5: 1,000 of them would fork 2,000 sleeps a second),
# tfmesos' job a parameter-server one: 2 ps and 998 workers. Only tfmesos and the floor.
BIG_TASKS = 1000
# 40 cpus and 36 GB declared: 363 tasks with their executors (0.11 cpus, 96 MB) fit one agent, so the
# gang spreads over the three (with cpus:400 one agent's offer holds all 1,000).
BIG_AGENTS = [f"cpus:40;mem:36000;disk:4000;ports:[{31000 + 1000 * i}-{31999 + 1000 * i}]" for i in range(3)]
BIG_GATE_LOOP = 'while [ ! -e "$GATE" ]; do sleep 5; done'
BIG_ARMS = ("tfmesos", "floor")
# What broke first with 1,000 tasks on this 2-core machine (load ~30): the agents' executor
# registration timeout (1 minute by default). An executor forked at 19:00:47 subscribed at 19:02:16;
# 916 of tfmesos' 1,000 executors were terminated unregistered. The agents get 10 minutes.
BIG_AGENT_FLAGS = ["--executor_registration_timeout=10mins"]
BIG_PS = 2
# What broke next (21:55, load ~35): tfmesos' own startup timeout (300 s by default): at 300 s about
# 115 tasks were RUNNING, the rest subscribed or still being launched, and the job failed them. The
# big gang's job gets as long as the agents' registration timeout.
BIG_STARTUP_TIMEOUT_S = 600.0
# Stop an arm (and say so in the results) when the machine's available memory falls below this:
# 1,000 executors on a machine shared with other people's tests.
MIN_AVAILABLE_MIB = 3072


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
def _cluster(home: Path, agents: list[str] = AGENTS, agent_flags: list[str] = ()) -> Iterator[Any]:
    os.environ["TFMESOS_REAL_MESOS"] = str(tools())  # tests.e2e.real_mesos reads it at import
    from tests.e2e.real_mesos import BASE_PORT, RealMesos

    lock = os.environ.get("REAL_MESOS_LOCK")
    with open(lock, "a") if lock else contextlib.nullcontext() as held:
        if held:
            fcntl.flock(held, fcntl.LOCK_EX)
        with RealMesos(home, agents, agent_flags=list(agent_flags), base_port=BASE_PORT) as master:
            yield master


# ---------------------------------------------------------------- the arms


def _python_on(tree: Path, tmp: Path) -> str:
    """An interpreter that imports tfmesos from ``tree`` first (job.python for an executor of another commit)."""
    wrapper = tmp / "python"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={shlex.quote(str(tree))} exec {shlex.quote(PYTHON)} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def executor_python(tmp: Path, tree: Path | None) -> str:
    """job.python of a tfmesos arm: the interpreter its executors run on, importing tfmesos from
    ``tree`` (None: this checkout, as installed). ``REALGANG_EXECUTOR_VENV`` unset or "editable":
    this venv's, with the checkout's editable install, whose ``site`` imports the editable finder's
    pathlib, urllib.parse and ipaddress in every process (~23M instructions of an executor), and
    for another tree a one-line sh wrapper setting PYTHONPATH. "plain": a venv with nothing
    installed and the tree as a path line in a .pth file, as the image's ``pip install`` (or a
    ``editable_mode=compat`` install) finds tfmesos: site reads the line and imports nothing."""
    mode = os.environ.get("REALGANG_EXECUTOR_VENV", "editable")
    if mode == "editable":
        return PYTHON if tree is None else _python_on(tree, tmp)
    if mode != "plain":
        raise ValueError(f"REALGANG_EXECUTOR_VENV={mode!r}: expected editable or plain")
    tree = (tree or ROOT).resolve()
    venv = tmp / "plain-venv"
    if not venv.exists():
        import subprocess
        import sys

        subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
        [site_packages] = (venv / "lib").glob("python3*/site-packages")
        (site_packages / "tfmesos-tree.pth").write_text(f"{tree}\n")
    return str(venv / "bin" / "python")


def run_tfmesos(tmp: Path, master: Any, tasks: int, at_all_running: Callable[[], None],
                executor_tree: Path | None = None, gate_loop: str = GATE_LOOP, ps: int = 0,
                startup_timeout: float | None = None) -> dict[str, Any]:
    """``executor_tree``: the executors import tfmesos from there (the scheduler is this tree's);
    ``ps`` of the ``tasks`` are parameter servers (running the gate loop too), the rest workers."""
    name = "gang"
    gate = tmp / "gate"
    job: dict[str, Any] = {"command": gate_loop, "env": [f"GATE={gate}"]}
    if executor_tree is not None or os.environ.get("REALGANG_EXECUTOR_VENV", "editable") != "editable":
        job["python"] = executor_python(tmp, executor_tree)
    roles: dict[str, Any] = {"worker": {"count": tasks - ps, "cpus": TASK_CPUS, "mem": TASK_MEM, "restart_policy": "Never"}}
    if ps:
        roles = {"ps": {"count": ps, "cpus": TASK_CPUS, "mem": TASK_MEM, "server": False, "restart_policy": "Never"}} | roles
    policies: dict[str, Any] = {"success": "all_workers", "placement_timeout_seconds": 600}
    if startup_timeout is not None:
        policies["startup_timeout_seconds"] = startup_timeout
    opts = write_options(tmp / "gang.json", service={"name": name}, job=job, roles=roles, policies=policies)
    run = StampedRun(["run", str(opts), "--master", master.address, "--state-dir", str(tmp / "state")], first_port=None)
    try:
        _, registered, _ = run.find(r"registered as framework", 120)
        deadline = time.monotonic() + 900
        while len(running := run.all(r"\] ((?:worker|ps):\d+) TASK_RUNNING")) < tasks:
            if time.monotonic() > deadline or run.all(r"TASK_(FAILED|LOST|KILLED|ERROR)"):
                raise RuntimeError(f"not all RUNNING: {len(running)} of {tasks} at {time.time() - registered:.0f} s "
                                   "after registration:\n" + "\n".join(run.lines[-30:]))
            time.sleep(0.2)
        last = max(stamp for _, stamp, _ in running)
        at_all_running()
        gate.touch()
        code = run.wait(900)
        if code != 0:
            raise RuntimeError(f"tfmesos run exited {code}:\n" + "\n".join(run.lines[-30:]))
        ended = [line for line in run.lines[-40:] if "SUCCEEDED" in line]
    finally:
        gate.touch()
        run.stop()
    return {"seconds": round(last - registered, 3), "registered_at": registered, "scheduler_cpu_s": run.rusage().get("cpu_s"),
            "ended": ended[-1][-200:] if ended else ""}


class RawGang:
    """A minimal v1 HTTP framework: one ACCEPT per offer with every task that fits it, acks sent
    from a thread of their own (they never hold up reading the event stream)."""

    def __init__(self, address: str, tasks: int, executor: dict[str, Any] | None, gate: Path,
                 at_all_running: Callable[[], None], gate_loop: str = GATE_LOOP) -> None:
        from tests.localmesos.scheduler_client import RawScheduler

        self.sched = RawScheduler(address)
        self.tasks, self.executor, self.gate, self.at_all_running = tasks, executor, gate, at_all_running
        self.gate_loop = gate_loop
        self.accept_bytes: list[int] = []  # each ACCEPT that launched tasks: its body's JSON bytes
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
            task["command"] = {"shell": True, "value": self.gate_loop,
                               "environment": {"variables": [{"name": "GATE", "value": str(self.gate)}]}}
        else:
            task["executor"] = dict(self.executor, executor_id={"value": task_id})
            command = f"GATE={shlex.quote(str(self.gate))}; {self.gate_loop}"
            task["data"] = base64.b64encode(command.encode()).decode()
        return task

    def _accept(self, accept: dict[str, Any]) -> None:
        """The ACCEPT, waiting as long as the master takes: it answers once it has launched the
        offer's tasks (a -O0 master: a minute for a few hundred on a loaded machine)."""
        from tests.localmesos.scheduler_client import http_call

        body = {"framework_id": {"value": self.sched.framework_id}, "type": "ACCEPT", "accept": accept}
        reply = http_call(self.sched.address, "POST", "/api/v1/scheduler", body,
                          self.sched._headers({"Mesos-Stream-Id": self.sched.stream_id or ""}), timeout=600)
        if reply.status != 202:
            raise RuntimeError(f"ACCEPT refused: {reply.status} {str(reply.body)[:300]}")

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
                        accept = {"offer_ids": [offer["id"]], "filters": {"refuse_seconds": 2.0 if count else 300.0},
                                  "operations": [{"type": "LAUNCH", "launch": {"task_infos": infos}}] if infos else []}
                        if infos:
                            self.accept_bytes.append(len(json.dumps(accept)))
                        self._accept(accept)
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
        return {"seconds": round(max(self.running.values()) - registered, 3), "registered_at": registered,
                "accept_bytes": self.accept_bytes}


def run_raw(tmp: Path, master: Any, tasks: int, floor: bool, at_all_running: Callable[[], None],
            gate_loop: str = GATE_LOOP) -> dict[str, Any]:
    executor = None
    if floor:
        script = Path(__file__).with_name("floor_executor.py")
        executor = {"type": "CUSTOM", "name": "floor executor",
                    "command": {"shell": True, "value": f"exec {PYTHON} -S -I {script}"},
                    "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": EXECUTOR_CPUS}},
                                  {"name": "mem", "type": "SCALAR", "scalar": {"value": EXECUTOR_MEM}}]}
    return RawGang(master.address, tasks, executor, tmp / "gate", at_all_running, gate_loop).run()


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
        try:
            state = master.state()
        except OSError:  # a -O0 master busy with 1,000 tasks answers /state after its 10 s (URLError, timeouts)
            continue
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


# ---------------------------------------------------------------- the 1,000-task gang (issue 40)


class Memory:
    """Samples every 0.5 s, in a thread, the RSS of the master and of each agent (their peaks) and
    the machine's available memory; below MIN_AVAILABLE_MIB it touches the arm's gate (every task
    ends) and says so: 1,000 executors share this machine with other people's tests."""

    def __init__(self, master: Any, gate: Path) -> None:
        pids = {"master": int((master.home / "run" / "master.pid").read_text())}
        pids |= {f"agent{i}": master.agent_pid(i) for i in range(len(master.agents))}
        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.peak_mib = {name: 0.0 for name in pids}
        self.min_available_mib = psutil.virtual_memory().available / 2**20
        self.stopped = ""
        self.gate = gate
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            for name, proc in self.procs.items():
                with contextlib.suppress(psutil.Error):
                    self.peak_mib[name] = max(self.peak_mib[name], proc.memory_info().rss / 2**20)
            available = psutil.virtual_memory().available / 2**20
            self.min_available_mib = min(self.min_available_mib, available)
            if available < MIN_AVAILABLE_MIB and not self.stopped:
                self.stopped = f"stopped: the machine's available memory fell to {available:.0f} MiB"
                self.gate.touch()

    def close(self) -> dict[str, Any]:
        self._done.set()
        self._thread.join()
        return {"peak_rss_mib": {k: round(v, 1) for k, v in self.peak_mib.items()},
                "min_available_mib": round(self.min_available_mib), **({"stopped": self.stopped} if self.stopped else {})}


def sandbox_memory(master: Any) -> dict[str, Any]:
    """The cluster's sandbox processes now (executors, their tasks, the tasks' sleeps): how many,
    their RSS and USS (memory only they hold) in all, and the executors' median USS."""
    rss = uss = 0.0
    executors: list[float] = []
    count = 0
    for proc in master.leftovers():
        with contextlib.suppress(psutil.Error):
            info = proc.memory_full_info()
            count += 1
            rss, uss = rss + info.rss, uss + info.uss
            if "executor" in " ".join(proc.cmdline()):
                executors.append(info.uss / 2**20)
    return {"processes": count, "rss_mib": round(rss / 2**20), "uss_mib": round(uss / 2**20),
            "executors": len(executors), "executor_median_uss_mib": round(statistics.median(executors), 2) if executors else None}


def checkpointed(master: Any, since: float) -> dict[str, Any]:
    """What the agents checkpointed of this arm's tasks and executors (TaskInfo and ExecutorInfo
    as protobuf, the files Mesos writes under meta/ before it launches)."""
    sizes: dict[str, dict[str, int]] = {"task.info": {}, "executor.info": {}}
    per_agent: dict[str, int] = {}
    for name, found in sizes.items():
        for path in master.sandboxes().glob(f"agent-*-work/meta/slaves/*/frameworks/*/executors/**/{name}"):
            with contextlib.suppress(OSError):
                real = os.path.realpath(path)  # runs/latest links to the run: each file once
                if real not in found and path.stat().st_mtime >= since:
                    found[real] = path.stat().st_size
                    if name == "task.info":
                        agent = path.relative_to(master.sandboxes()).parts[0]
                        per_agent[agent] = per_agent.get(agent, 0) + 1
    out: dict[str, Any] = {name.replace(".", "_"): {"files": len(v), "bytes": sum(v.values()), "max_bytes": max(v.values(), default=0)}
                           for name, v in sizes.items()}
    return out | {"tasks_per_agent": per_agent}


def tfmesos_taskinfo_bytes(options: Path) -> int:
    """The largest TaskInfo (JSON, as in the ACCEPT) of the job in ``options``, built by the dry run."""
    from tfmesos.client.dry_run import dry_run
    from tfmesos.options.jobspec import job_spec_from_options
    from tfmesos.options.load import resolve_options

    plan = dry_run(job_spec_from_options(resolve_options(json.loads(options.read_text()))))
    return max(len(json.dumps(info)) for info in plan.task_infos)


def run_big(tmp: Path, arms: tuple[str, ...] = BIG_ARMS, tasks: int = BIG_TASKS) -> dict[str, Any]:
    """One round: the arms one after another on one fresh cluster of BIG_AGENTS."""
    reason = unavailable()
    if reason:
        return {"skipped": reason}
    out: dict[str, Any] = {"tasks": tasks, "agents": BIG_AGENTS, "gate_loop": BIG_GATE_LOOP, "ps": BIG_PS, "samples": {}}
    out["agent_flags"] = BIG_AGENT_FLAGS
    with _cluster(tmp / "mesos", BIG_AGENTS, BIG_AGENT_FLAGS) as master:
        for arm in arms:
            work = tmp / arm
            work.mkdir(parents=True)
            offsets, cpu0, load, since = log_offsets(master), _cpu(master), os.getloadavg()[0], time.time()
            memory = Memory(master, work / "gate")
            snapshot: dict[str, Any] = {}

            def at_all_running() -> None:
                snapshot["cpu"] = _cpu_now(master, cpu0)
                snapshot["sandboxes"] = sandbox_memory(master)
                snapshot["checkpointed"] = checkpointed(master, since)
                snapshot["available_mib"] = round(psutil.virtual_memory().available / 2**20)

            t0 = time.monotonic()
            try:
                if arm == "tfmesos":
                    # The executors import tfmesos from this tree (ROOT), not the venv's editable
                    # install: a run from a snapshot (git archive) is not changed by edits meanwhile.
                    sample = run_tfmesos(work, master, tasks, at_all_running, executor_tree=ROOT,
                                         gate_loop=BIG_GATE_LOOP, ps=BIG_PS, startup_timeout=BIG_STARTUP_TIMEOUT_S)
                else:
                    sample = run_raw(work, master, tasks, floor=True, at_all_running=at_all_running, gate_loop=BIG_GATE_LOOP)
            except Exception as exc:  # noqa: BLE001 - recorded: what broke first is the finding
                sample = {"error": str(exc)[-3000:]}
            sample |= memory.close()
            log(f"realgang big {arm}: {sample.get('seconds', sample.get('error', '')[:300])}")
            _wait_idle(master, 30 if "error" in sample else 300)  # a failed arm's framework is gone, its tasks linger
            sample |= {"wall_s": round(time.monotonic() - t0, 1), "load_average": round(load, 2),
                       "at_all_running": snapshot, "mesos_cpu_s": {k: round(v - cpu0.get(k, 0.0), 2) for k, v in _cpu(master).items()},
                       "profile": profile_arm(master, offsets), "load_average_after": round(os.getloadavg()[0], 2)}
            if arm == "tfmesos" and (work / "gang.json").exists():
                # One ACCEPT per offer, one offer per agent: its TaskInfos' bytes (the dry run's).
                per = tfmesos_taskinfo_bytes(work / "gang.json")
                counts = snapshot.get("checkpointed", {}).get("tasks_per_agent", {})
                sample["taskinfo_bytes"] = per
                sample["accept_bytes_from_dry_run"] = [per * n for n in counts.values()]
            out["samples"][arm] = sample
    t, f = out["samples"].get("tfmesos", {}), out["samples"].get("floor", {})
    if "seconds" in t and "seconds" in f:
        out["tfmesos_over_floor"] = round(t["seconds"] / f["seconds"], 2)
    return out


if __name__ == "__main__":  # one quick round: python -m benchmarks.real_gang [ROUNDS]; the 1,000-task gang: ... big [ARM ...]
    import sys
    import tempfile

    if sys.argv[1:2] == ["big"]:
        # One arm per run (``big tfmesos``, then ``big floor``) where both at once do not fit the machine.
        chosen = tuple(sys.argv[2:]) or BIG_ARMS
        if unknown := set(chosen) - set(BIG_ARMS):
            sys.exit(f"real_gang big: unknown arm(s) {sorted(unknown)}; expected some of {list(BIG_ARMS)}")
        result = run_big(Path(tempfile.mkdtemp(prefix="realgang-big-")), arms=chosen)
        Path(os.environ.get("REALGANG_OUT", "/dev/null")).write_text(json.dumps(result, indent=1))
        print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
        sys.exit(0)
    # REALGANG_ARMS=tfmesos,floor: the rounds without the command executor's arm (the bar is the floor).
    arms = tuple(a for a in os.environ.get("REALGANG_ARMS", ",".join(ARMS)).split(",") if a)
    if unknown := set(arms) - set(ARMS):
        sys.exit(f"REALGANG_ARMS: unknown arm(s) {sorted(unknown)}; expected some of {list(ARMS)}")
    result = run(Path(tempfile.mkdtemp(prefix="realgang-")), rounds=int(sys.argv[1]) if len(sys.argv) > 1 else 1, arms=arms)
    result["executor_venv"] = os.environ.get("REALGANG_EXECUTOR_VENV", "editable")
    Path(os.environ.get("REALGANG_OUT", "/dev/null")).write_text(json.dumps(result, indent=1))
    if os.environ.get("REALGANG_RECORD"):  # what was measured, in words: into results.json's "realgang"
        from benchmarks.common import record  # (or REALGANG_RECORD_KEY's)

        record(os.environ.get("REALGANG_RECORD_KEY", "realgang"), result,
               f"{datetime.now(timezone.utc):%Y-%m-%dT%H:%M}Z: {os.environ['REALGANG_RECORD']}")
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
