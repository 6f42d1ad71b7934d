"""A job's processes started by hand for planned-stop tests and benchmarks: each task its own
process group, TF_CONFIG, notice file and sandbox, as tfmesos' executor starts them, on loopback
ports; and the step logs they leave (tests/e2e/planned/steplog.py), read per task."""
from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from dataclasses import dataclass, field

from tests.e2e.harness import eventually, free_ports
from tfmesos.task import notice

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "planned"
# The tasks' interpreter: the test's own, or another's with its TensorFlow (e.g. a venv with
# TensorFlow 2.16 and tf-keras 2.16: it needs no more than those and scikit-learn).
PYTHON = os.environ.get("PLANNED_STOP_PYTHON") or sys.executable

Key = tuple[str, int]
START_TIMEOUT_S = 120
SAVE_TIMEOUT_S = 60
RUN_TIMEOUT_S = 300


class Job:
    """One start of a job's processes: each task its own process group, TF_CONFIG, notice file
    and sandbox, as tfmesos' executor starts them (a server role runs tfmesos' tfserver)."""

    def __init__(self, work: Path, script: str, cluster: dict[str, list[str]], servers: set[str],
                 env: dict[str, str], run: int):
        self.procs: dict[Key, subprocess.Popen[bytes]] = {}
        self.outputs: dict[Key, Path] = {}
        self.notices: dict[Key, str] = {}
        for role, addresses in cluster.items():
            for index in range(len(addresses)):
                key = (role, index)
                sandbox = work / f"run{run}-{role}{index}"
                sandbox.mkdir()
                self.notices[key] = str(sandbox / "notice.json")
                task_env = {**os.environ, **env, "PYTHONPATH": str(ROOT), "TMPDIR": str(sandbox),
                            "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": role, "index": index}})}
                task_env.update(notice.task_env(self.notices[key], env))
                argv = ([PYTHON, "-m", "tfmesos.task.tfserver"] if role in servers
                        else [PYTHON, str(SCRIPTS / script)])
                self.outputs[key] = sandbox / "output"
                with open(self.outputs[key], "wb") as out:
                    self.procs[key] = subprocess.Popen(argv, cwd=sandbox, env=task_env, stdout=out,
                                                       stderr=subprocess.STDOUT, start_new_session=True)

    def tell(self, key: Key, reason: str) -> float:
        """Write the task's notice (the executor's write: atomic); returns when."""
        notice.write(self.notices[key], notice.Notice(reason, "drain", time.time() + 60))
        return time.time()

    def sigterm(self, key: Key) -> None:
        os.killpg(self.procs[key].pid, signal.SIGTERM)

    def wait(self, key: Key, timeout: float) -> int:
        try:
            return self.procs[key].wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{key} still running after {timeout} s:\n{self.tail(key)}") from None

    def output(self, key: Key) -> str:
        return self.outputs[key].read_text(errors="replace")

    def tail(self, key: Key) -> str:
        return self.output(key)[-3000:]

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def steps_by_task(log: Path) -> dict[Key, collections.Counter[int]]:
    found: dict[Key, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    if log.exists():
        for line in log.read_text().splitlines():
            role, index, step = line.split()
            found[(role, int(index))][int(step)] += 1
    return found


def twice(steps: collections.Counter[int]) -> list[int]:
    return sorted(step for step, count in steps.items() if count > 1)


def missing(steps: collections.Counter[int], total: int) -> list[int]:
    return sorted(set(range(total)) - set(steps))


def started_at(job: Job, key: Key) -> int:
    found = re.search(r"starting at step (\d+)", job.output(key))
    assert found, job.tail(key)
    return int(found.group(1))


def applied_steps(job: Job, key: Key, said: str) -> int:
    found = re.search(said + r" (\d+)", job.output(key))
    assert found, job.tail(key)
    return int(found.group(1))


@dataclass
class Outcome:
    """What one planned stop and resume did: exit codes, steps per task, seconds."""

    first_codes: dict[Key, int]  # the tasks that save, after the notice
    saved: dict[Key, int]  # steps each had logged when it stopped
    second_codes: dict[Key, int]
    started_at: dict[Key, int]  # the step each resumed at
    steps: dict[Key, collections.Counter[int]]
    notice_to_exit_s: float  # notice written to the last saving task's exit
    start_to_resumed_s: float  # second start to the first step logged after the stop
    outputs: dict[str, str] = field(default_factory=dict)  # tails, for assertion messages
    server_codes: dict[Key, int] = field(default_factory=dict)
    lingered: bool | None = None  # a server told and stopped served on until its second SIGTERM
    applied: tuple[int, int] | None = None  # PSS: updates applied, restored and at the end


def _first_new_step(log: Path, before: int) -> bool:
    return log.exists() and len(log.read_text().splitlines()) > before


def mwms(work: Path, jobs: list[Job], script: str, env: dict[str, str], stop_after: int) -> Outcome:
    """Two workers; worker 1 is stopped (notice, then SIGTERM) once it ran ``stop_after`` steps;
    worker 0 is told too, as the scheduler tells every task a planned stop will restart. Once both
    have exited, both are started again."""
    log = work / "steps.log"
    env = {**env, "TFMESOS_CHECKPOINT_DIR": str(work / "checkpoints"), "STEP_LOG": str(log)}
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    workers = [("worker", 0), ("worker", 1)]
    first = Job(work, script, cluster, set(), env, run=1)
    jobs.append(first)
    eventually(lambda: len(steps_by_task(log)[("worker", 1)]) >= stop_after, START_TIMEOUT_S,
               f"worker 1 to run {stop_after} steps\n{first.tail(('worker', 1))}")
    told = first.tell(("worker", 1), "agent 127.0.0.1 draining")
    first.tell(("worker", 0), "worker:1's agent 127.0.0.1 draining")
    first.sigterm(("worker", 1))
    first_codes = {key: first.wait(key, SAVE_TIMEOUT_S) for key in workers}
    notice_to_exit = time.time() - told
    saved = {key: len(steps) for key, steps in steps_by_task(log).items()}
    lines = len(log.read_text().splitlines())
    second = Job(work, script, cluster, set(), env, run=2)
    jobs.append(second)
    started = time.time()
    eventually(lambda: _first_new_step(log, lines) or second.procs[workers[0]].poll() is not None,
               START_TIMEOUT_S, "a step after the resume")
    resumed = time.time() - started
    second_codes = {key: second.wait(key, RUN_TIMEOUT_S) for key in workers}
    return Outcome(first_codes, saved, second_codes, {key: started_at(second, key) for key in workers},
                   steps_by_task(log), notice_to_exit, resumed,
                   {f"{run} {key}": job.tail(key) for run, job in (("first", first), ("second", second))
                    for key in workers})


def pss(work: Path, jobs: list[Job], script: str, env: dict[str, str], stop_after: int, leaving: Key) -> Outcome:
    """Chief, 2 workers, 1 ps (servers). ``leaving`` is stopped (notice, then SIGTERM) once the
    chief logged ``stop_after`` steps; the chief is told too. Once the chief has saved and exited,
    the servers are stopped (a second SIGTERM for one lingering after its notice) and the whole
    job started again."""
    log = work / "steps.log"
    env = {**env, "TFMESOS_CHECKPOINT_DIR": str(work / "checkpoints"), "STEP_LOG": str(log)}
    ports = iter(free_ports(4))
    cluster = {role: [f"127.0.0.1:{next(ports)}" for _ in range(count)]
               for role, count in (("chief", 1), ("worker", 2), ("ps", 1))}
    chief = ("chief", 0)
    servers = [("worker", 0), ("worker", 1), ("ps", 0)]
    first = Job(work, script, cluster, {"worker", "ps"}, env, run=1)
    jobs.append(first)
    eventually(lambda: len(steps_by_task(log)[chief]) >= stop_after, START_TIMEOUT_S,
               f"the chief to run {stop_after} steps\n{first.tail(chief)}")
    told = first.tell(leaving, "agent 127.0.0.1 draining")
    if leaving != chief:
        first.tell(chief, f"{leaving[0]}:{leaving[1]}'s agent 127.0.0.1 draining")
    first.sigterm(leaving)
    first_codes = {chief: first.wait(chief, SAVE_TIMEOUT_S)}
    notice_to_exit = time.time() - told
    lingered = None
    if leaving != chief:
        lingered = first.procs[leaving].poll() is None and "serving until" in first.output(leaving)
    server_codes = {}
    for key in servers:
        first.sigterm(key)
        server_codes[key] = first.wait(key, SAVE_TIMEOUT_S)
    saved = {chief: len(steps_by_task(log)[chief])}
    lines = len(log.read_text().splitlines())
    second = Job(work, script, cluster, {"worker", "ps"}, env, run=2)
    jobs.append(second)
    started = time.time()
    eventually(lambda: _first_new_step(log, lines) or second.procs[chief].poll() is not None,
               START_TIMEOUT_S, "a step after the resume")
    resumed = time.time() - started
    second_codes = {chief: second.wait(chief, RUN_TIMEOUT_S)}
    outputs = {"first chief": first.tail(chief), "second chief": second.tail(chief)}
    applied = (applied_steps(second, chief, "restored applied steps"),
               applied_steps(second, chief, r"trained \d+ steps; applied steps"))
    return Outcome(first_codes, saved, second_codes, {chief: started_at(second, chief)}, steps_by_task(log),
                   notice_to_exit, resumed, outputs, server_codes, lingered, applied)
