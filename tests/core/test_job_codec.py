"""The persisted record: a job written by the code before core/job.py was split loads, round-trips
byte for byte, and goes on deciding what that code decided (tests/data/job/, written by it)."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tfmesos.core.job import Job
from tfmesos.core.job_state import StatusUpdate

from tests.core.helpers import offer, spec_of

DATA = Path(__file__).parent.parent / "data" / "job"
PSS = dict(ps={"count": 1}, worker={"count": 2, "server": True, "restart_policy": "OnFailure", "max_restarts": 2},
           chief={"count": 1})


def drive(job: Job) -> list:
    """Events after the reload: reconciliation, the chief's kill and relaunch, its success, the end.
    Each step's actions (resources left out: their shape is not this record's) and next deadline."""
    chief = job.tasks[next(k for k in job.tasks if k.role == "chief")]
    w0 = job.tasks[next(k for k in job.tasks if k.role == "worker" and k.index == 0)]
    steps = [
        lambda: job.start(),
        lambda: job.status(StatusUpdate(w0.task_id, "TASK_RUNNING", agent_id="S3"), 123.0),
        lambda: job.tick(130.0),
        lambda: job.status(StatusUpdate(chief.task_id, "TASK_KILLED", agent_id="S2"), 131.0),
        lambda: job.tick(133.0),
        lambda: job.offers([offer(4, cpus=8, mem=16384)], 134.0),
        lambda: job.tick(160.0),
        lambda: job.status(StatusUpdate(chief.task_id, "TASK_FINISHED", agent_id="S4"), 170.0),
        lambda: job.tick(171.0),
    ]
    trace: list = []
    for step in steps:
        trace.append([re.sub(r"resources=\w+\([^)]*\)", "resources=...", repr(a)) for a in step()])
        trace.append(job.next_deadline(171.0))
    return trace


def test_a_record_the_old_code_wrote_round_trips_identically():
    for name in ("before-split-running.json", "before-split-stopped.json"):
        old = json.loads((DATA / name).read_text())
        again = Job.from_dict(spec_of(**PSS), old, seed=7).to_dict()
        # "suppressed" is written but never read: offers do not survive a reconnection, a loaded job asks again.
        assert json.dumps(again, sort_keys=True) == json.dumps({**old, "suppressed": False}, sort_keys=True), name


def test_a_reloaded_job_decides_what_the_old_code_decided():
    job = Job.from_dict(spec_of(**PSS), json.loads((DATA / "before-split-running.json").read_text()), seed=7)
    want = json.loads((DATA / "before-split-continued.json").read_text())
    assert drive(job) == want["trace"]
    assert job.to_dict() == want["record"]
    assert job.snapshot().to_json() == want["snapshot"]


if __name__ == "__main__":  # how tests/data/job/before-split-continued.json was written
    job = Job.from_dict(spec_of(**PSS), json.loads((DATA / "before-split-running.json").read_text()), seed=7)
    trace = drive(job)
    json.dump({"trace": trace, "record": job.to_dict(), "snapshot": job.snapshot().to_json()},
              open(sys.argv[1], "w"), indent=1, sort_keys=True)
