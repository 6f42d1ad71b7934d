"""A planned stop loses no step, in each training mode, at the task level: real TensorFlow
processes on loopback ports with TF_CONFIG written by hand, as tfmesos starts them. The test
stands in for the executor and the scheduler only where the notice contract says they act
(docs/developers/architecture.md, "Planned stop: the notice"): it writes the notice file of each
task told, sends SIGTERM to the process group of each task stopped, then, once the job has saved
and stopped, starts the same processes again.

Every process appends the steps it ran to a log (tests/e2e/planned/steplog.py). Per task:
- a step ran **twice** when it appears more than once in that task's log, over both starts;
- a step is **missing** when it never appears, in range(steps the job trains).
MultiWorkerMirroredStrategy: each worker logs the steps it ran (a step is every worker's).
ParameterServerStrategy: the chief logs the steps it scheduled, once it has waited for them (the
workers are servers running no Python); a count of the updates applied on the ps proves each was
applied once: restored, it equals the steps logged before the stop; at the end, the steps trained.
"""
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

import pytest

from tests.e2e.harness import eventually
from tests.test_examples_direct import free_ports
from tfmesos.task import notice

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "planned"
START_TIMEOUT_S = 120
SAVE_TIMEOUT_S = 60
RUN_TIMEOUT_S = 300

pytestmark = [pytest.mark.e2e, pytest.mark.tensorflow]

Key = tuple[str, int]


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
                argv = ([sys.executable, "-m", "tfmesos.task.tfserver"] if role in servers
                        else [sys.executable, str(SCRIPTS / script)])
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
            raise AssertionError(f"{key} still running after {timeout} s:\n{self.output(key)}") from None

    def output(self, key: Key) -> str:
        return self.outputs[key].read_text(errors="replace")[-4000:]

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
    assert found, job.output(key)
    return int(found.group(1))


def applied_steps(job: Job, key: Key, said: str) -> int:
    found = re.search(said + r" (\d+)", job.output(key))
    assert found, job.output(key)
    return int(found.group(1))


@pytest.fixture
def work(tmp_path: Path):
    jobs: list[Job] = []
    yield tmp_path, jobs
    for job in jobs:
        job.stop()


def _mwms(work, script: str, env: dict[str, str], total: int, stop_after: int) -> None:
    """Two workers; worker 1 is stopped (notice, then SIGTERM) after it ran ``stop_after`` steps;
    worker 0 gets the notice too, as the scheduler tells the whole gang of a job it moves."""
    tmp, jobs = work
    log = tmp / "steps.log"
    env = {**env, "TFMESOS_CHECKPOINT_DIR": str(tmp / "checkpoints"), "STEP_LOG": str(log)}
    cluster = {"worker": [f"127.0.0.1:{port}" for port in free_ports(2)]}
    workers = [("worker", 0), ("worker", 1)]

    first = Job(tmp, script, cluster, set(), env, run=1)
    jobs.append(first)
    eventually(lambda: len(steps_by_task(log)[("worker", 1)]) >= stop_after, START_TIMEOUT_S,
               f"worker 1 to run {stop_after} steps")
    told = first.tell(("worker", 1), "agent 127.0.0.1 draining")
    first.sigterm(("worker", 1))
    codes = {key: first.wait(key, SAVE_TIMEOUT_S) for key in workers}
    print(f"{script}: notice to exit {time.time() - told:.1f} s")
    assert codes == {key: notice.PLANNED_EXIT for key in workers}, {k: first.output(k) for k in workers}
    ran = steps_by_task(log)
    saved = len(ran[("worker", 0)])
    assert len(ran[("worker", 1)]) == saved and stop_after <= saved < total, ran  # the same step, mid-training

    second = Job(tmp, script, cluster, set(), env, run=2)
    jobs.append(second)
    assert {key: second.wait(key, RUN_TIMEOUT_S) for key in workers} == {key: 0 for key in workers}, \
        {k: second.output(k) for k in workers}
    assert [started_at(second, key) for key in workers] == [saved, saved]
    for key, steps in steps_by_task(log).items():
        assert (twice(steps), missing(steps, total)) == ([], []), key


def test_mwms_custom_loop_with_tensorflows_handler_saves_at_the_agreed_step_and_resumes_there(work) -> None:
    _mwms(work, "mwms_handler.py", {"TRAIN_STEPS": "300", "STEPS_PER_EPOCH": "50"}, total=300, stop_after=60)


def test_keras_mwms_fit_with_tfmesos_backup_saves_every_worker_at_the_same_batch(work) -> None:
    _mwms(work, "keras_mwms.py", {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50"},
          total=300, stop_after=60)


def _pss(work, script: str, env: dict[str, str], total: int, leaving: Key) -> None:
    """Chief, 2 workers, 1 ps (servers). ``leaving`` is stopped (notice, then SIGTERM); the chief
    is told too. Once the chief has saved and exited 42, the rest of the job is stopped (a second
    SIGTERM for a server lingering after its notice) and the whole job started again."""
    tmp, jobs = work
    log = tmp / "steps.log"
    env = {**env, "TFMESOS_CHECKPOINT_DIR": str(tmp / "checkpoints"), "STEP_LOG": str(log)}
    ports = iter(free_ports(4))
    cluster = {role: [f"127.0.0.1:{next(ports)}" for _ in range(count)]
               for role, count in (("chief", 1), ("worker", 2), ("ps", 1))}
    chief = ("chief", 0)
    servers = [("worker", 0), ("worker", 1), ("ps", 0)]

    first = Job(tmp, script, cluster, {"worker", "ps"}, env, run=1)
    jobs.append(first)
    eventually(lambda: len(steps_by_task(log)[chief]) >= total // 5, START_TIMEOUT_S, "the chief to run a fifth")
    told = first.tell(leaving, "agent 127.0.0.1 draining")
    if leaving != chief:
        first.tell(chief, f"{leaving[0]}:{leaving[1]}'s agent 127.0.0.1 draining")
    first.sigterm(leaving)
    assert first.wait(chief, SAVE_TIMEOUT_S) == notice.PLANNED_EXIT, first.output(chief)
    print(f"{script}: notice to the chief's exit {time.time() - told:.1f} s")
    if leaving != chief:  # a server told and stopped serves on until the chief has saved
        assert first.procs[leaving].poll() is None, first.output(leaving)
        assert "serving until" in first.output(leaving)
    for key in servers:
        first.sigterm(key)
        assert first.wait(key, SAVE_TIMEOUT_S) == 0, first.output(key)
    saved = len(steps_by_task(log)[chief])
    assert total // 5 <= saved < total

    second = Job(tmp, script, cluster, {"worker", "ps"}, env, run=2)
    jobs.append(second)
    assert second.wait(chief, RUN_TIMEOUT_S) == 0, second.output(chief)
    assert applied_steps(second, chief, "restored applied steps") == saved
    assert applied_steps(second, chief, "trained \\d+ steps; applied steps") == total
    steps = steps_by_task(log)[chief]
    assert (twice(steps), missing(steps, total)) == ([], [])


def test_keras_pss_fit_chief_saves_at_the_batch_when_a_worker_leaves(work) -> None:
    _pss(work, "keras_pss.py", {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": "6", "STEPS_PER_EPOCH": "50",
                                "STEPS_PER_EXECUTION": "5"}, total=300, leaving=("worker", 1))


def test_pss_custom_loop_chief_saves_at_the_step_when_its_own_agent_drains(work) -> None:
    _pss(work, "pss_loop.py", {"TRAIN_STEPS": "300", "CHECKPOINT_EVERY": "100"}, total=300, leaving=("chief", 0))
