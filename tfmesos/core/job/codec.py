"""The job's persisted record as JSON-ready data: the whole ``JobState``, and the parts the job
store's journal writes alone (``own_fields``, ``task_dict``). The format's version and upgrades
are tfmesos/store/format.py's; this is what one version of it holds."""
from __future__ import annotations

from typing import Any

from ..phase import FAILED, SUCCEEDED, JobPhase
from ..state.record import JobState, TaskRecord, Transient
from ..task_state import TaskState
from ..state.series import ProgressSeries
from ..spec import TaskKey

EVENTS_KEPT = 200  # the newest events a persisted record keeps


def own_fields(job: JobState, tr: Transient) -> dict[str, Any]:
    """The job's fields but its tasks, task ids and events (what a journal entry carries)."""
    return {
        "phase": job.phase,
        "started_at": job.started_at,
        "placing_since": job.placing_since,
        "finishing_since": job.finishing_since,
        "job_restarts": job.job_restarts,
        "spec_version": job.spec_version,
        "launch_seq": job.launch_seq,
        "succeeded": job.succeeded,
        "ending": job.ending or "",
        "cause": job.cause,
        "suppressed": tr.suppressed,  # written for the record's readers; a loaded job asks for offers again
    }


def task_dict(job: JobState, key: TaskKey) -> dict[str, Any]:
    # Every field but the key is a plain value: a shallow copy (asdict deep-copies, and this
    # runs on every durable event: 18 ms of a 1,000-task job's write went there).
    rec = job.tasks[key]
    return {**vars(rec), "key": [rec.key.role, rec.key.index]}


def to_dict(job: JobState, tr: Transient) -> dict[str, Any]:
    return {
        **own_fields(job, tr),
        "events": job.events[-EVENTS_KEPT:],
        "tasks": [task_dict(job, key) for key in job.tasks],
        "task_ids": {tid: [k.role, k.index] for tid, k in job.by_task_id.items()},
        "series": job.series.to_list(),
    }


def restore(job: JobState, tr: Transient, data: dict[str, Any]) -> None:
    """Fill a new job (its tasks PENDING, started at ``data["started_at"]``) from its record."""
    for name in ("placing_since", "finishing_since", "job_restarts", "spec_version", "launch_seq",
                 "succeeded", "cause", "events"):
        setattr(job, name, data[name])
    job.phase = JobPhase(data["phase"])
    for raw in data["tasks"]:
        key = TaskKey(raw["key"][0], raw["key"][1])
        if key in job.tasks:
            job.tasks[key] = TaskRecord(**{**raw, "key": key, "state": TaskState(raw["state"])})
    job.by_task_id = {tid: TaskKey(k[0], k[1]) for tid, k in data["task_ids"].items()}
    # Records written before KILLED existed have no "ending": theirs followed "succeeded".
    ending = data.get("ending") or (SUCCEEDED if job.succeeded else FAILED if job.succeeded is False else None)
    job.ending = JobPhase(ending) if ending else None
    # Offers never survive a reconnection, and after a restart we must ask again.
    tr.suppressed = False
    job.series = ProgressSeries.from_list(data.get("series"))  # records before format 4 have none
