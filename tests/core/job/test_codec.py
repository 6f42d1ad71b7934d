"""The persisted record: a job written by the code before core/job.py was split loads, round-trips
byte for byte, and goes on deciding what that code decided (tests/data/job/, written by it)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tfmesos.core import actions as act
from tfmesos.core.job.job import Job
from tfmesos.core.task_state import StatusUpdate, TaskState

from tests.core.helpers import offer, spec_of

DATA = Path(__file__).resolve().parents[2] / "data" / "job"
PSS = dict(ps={"count": 1}, worker={"count": 2, "server": True, "restart_policy": "OnFailure", "max_restarts": 2},
           chief={"count": 1})


def running_job() -> Job:
    """How before-split-running.json was made: a partial gang, a failed worker relaunched at a new
    address, the chief killed to restart for it, progress reported."""
    job = Job.new(spec_of(**PSS), 100.0, seed=7)
    job.start()
    job.tick(101.0)
    job.offers([offer(0, cpus=1), offer(1, cpus=0.05)], 102.0)  # a partial gang, one offer given back
    actions = job.offers([offer(2, cpus=8, mem=16384)], 103.0)
    launched = {t.key: t for l in actions if isinstance(l, act.Launch) for t in l.tasks}
    for t in launched.values():
        job.status(StatusUpdate(t.task_id, TaskState.TASK_STARTING, agent_id="S2"), 104.0)
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S2"), 105.0)
    chief = next(t for k, t in launched.items() if k.role == "chief")
    job.report(chief.task_id, {"step": 10, "total_steps": 100, "loss": 0.5}, 106.0)
    job.report(chief.task_id, {"step": 20, "total_steps": 100, "loss": 0.25}, 107.0)
    worker = next(t for k, t in launched.items() if k.role == "worker")
    job.status(StatusUpdate(worker.task_id, TaskState.TASK_FAILED, exit_code=3, message="boom", agent_id="S2",
                            exception="RuntimeError: boom"), 108.0)
    job.tick(120.0)
    asks(job, job.offers([offer(3, cpus=8, mem=16384)], 121.0))
    job.tick(122.0)
    return job


def asks(job: Job, actions: list) -> list:
    """The actions, then what the executors of the tasks they launch without the ClusterSpec (a
    big gang's) are sent when they ask for it (protocol 4)."""
    launched = [t.task_id for a in actions if isinstance(a, act.Launch) and a.cluster_spec is None for t in a.tasks]
    return actions + [sent for task_id in launched for sent in job.executor_asks_cluster_spec(task_id)]


def old_trace(trace: list) -> list:
    """The old code's trace as this code says it: a Launch's ClusterSpec (``spec=``) went with the
    tasks; a small gang's (this one's) still does, named ``cluster_spec``."""
    return [[re.sub(r"^(Launch\(.*\)), spec=(\{.*\})\)$", r"\1, cluster_spec=\2)", a) for a in step]
            if isinstance(step, list) else step for step in trace]


def stopped_job() -> Job:
    """How before-split-stopped.json was made: every task running, then SIGINT, then the grace over."""
    job = Job.new(spec_of(**PSS), 0.0, seed=7)
    for t in [t for l in job.offers([offer(0, cpus=8, mem=16384)], 1.0) if isinstance(l, act.Launch) for t in l.tasks]:
        job.status(StatusUpdate(t.task_id, TaskState.TASK_RUNNING, agent_id="S0"), 2.0)
    job.stop("stopped by SIGINT (Ctrl-C)", 3.0)
    job.tick(40.0)
    return job


def drive(job: Job) -> list:
    """Events after the reload: reconciliation, the chief's kill and relaunch, its success, the end.
    Each step's actions (resources left out: their shape is not this record's) and next deadline."""
    chief = job.tasks[next(k for k in job.tasks if k.role == "chief")]
    w0 = job.tasks[next(k for k in job.tasks if k.role == "worker" and k.index == 0)]
    steps = [
        lambda: job.start(),
        lambda: job.status(StatusUpdate(w0.task_id, TaskState.TASK_RUNNING, agent_id="S3"), 123.0),
        lambda: job.tick(130.0),
        lambda: job.status(StatusUpdate(chief.task_id, TaskState.TASK_KILLED, agent_id="S2"), 131.0),
        lambda: job.tick(133.0),
        lambda: asks(job, job.offers([offer(4, cpus=8, mem=16384)], 134.0)),
        lambda: job.tick(160.0),
        lambda: job.status(StatusUpdate(chief.task_id, TaskState.TASK_FINISHED, agent_id="S4"), 170.0),
        lambda: job.tick(171.0),
    ]
    trace: list = []
    for step in steps:
        trace.append([re.sub(r"resources=\w+\([^)]*\)", "resources=...", repr(a)) for a in step()])
        trace.append(job.next_deadline(171.0))
    return trace


# Task fields added since those records were written, at their defaults (issue 38: planned stops).
ADDED_TASK_FIELDS = {"planned_stops": 0, "stopping": ""}


def _with_added_fields(record: dict) -> dict:
    return {**record, "tasks": [{**t, **ADDED_TASK_FIELDS} for t in record["tasks"]]}


def test_a_record_the_old_code_wrote_round_trips_identically():
    for name in ("before-split-running.json", "before-split-stopped.json"):
        old = _with_added_fields(json.loads((DATA / name).read_text()))
        again = Job.from_dict(spec_of(**PSS), old, seed=7).to_dict()
        # "suppressed" is written but never read: offers do not survive a reconnection, a loaded job asks again.
        assert json.dumps(again, sort_keys=True) == json.dumps({**old, "suppressed": False}, sort_keys=True), name


def test_the_same_events_write_the_same_record_as_the_old_code():
    for name, job in (("before-split-running.json", running_job()), ("before-split-stopped.json", stopped_job())):
        record = job.to_dict()
        # Kept since (issue 39): the exception line of the failure that relaunched a task, written only when set.
        new = [t.pop("failed_with", None) for t in record["tasks"]]
        assert record == _with_added_fields(json.loads((DATA / name).read_text())), name
        assert new == ([None, None, "RuntimeError: boom", None] if name.endswith("running.json") else [None] * 4)


def test_a_reloaded_job_decides_what_the_old_code_decided():
    job = Job.from_dict(spec_of(**PSS), json.loads((DATA / "before-split-running.json").read_text()), seed=7)
    want = json.loads((DATA / "before-split-continued.json").read_text())
    assert drive(job) == old_trace(want["trace"])
    assert job.to_dict() == _with_added_fields(want["record"])
    snapshot = want["snapshot"]
    snapshot["tasks"] = [{**t, "planned_stops": 0} for t in snapshot["tasks"]]  # added since (issue 38)
    assert job.snapshot().to_json() == snapshot


if __name__ == "__main__":  # how tests/data/job/before-split-continued.json was written
    job = Job.from_dict(spec_of(**PSS), json.loads((DATA / "before-split-running.json").read_text()), seed=7)
    trace = drive(job)
    json.dump({"trace": trace, "record": job.to_dict(), "snapshot": job.snapshot().to_json()},
              open(sys.argv[1], "w"), indent=1, sort_keys=True)
