"""The job's persisted record as JSON-ready data: the whole ``JobState``, and the parts the job
store's journal writes alone (``own_fields``, ``task_dict``). The format's version and upgrades
are tfmesos/store/format.py's; this is what one version of it holds. The record keeps its JSON
names where the code's changed: ``spec_version`` is the ClusterSpec's version
(``cluster_spec_version``), as is a task's ``spec_version_sent``."""
from __future__ import annotations

import dataclasses
from typing import Any

from ..phase import FAILED, SUCCEEDED, JobPhase
from ..spec import JobSpec, TaskKey
from ..state.record import JobState, Transient
from ..state.series import ProgressSeries
from ..state.tasks import TaskRecord
from ..task_state import TaskState

EVENTS_KEPT = 200  # the newest events a persisted record keeps

# A task's fields as the record names them, in the order TaskRecord declares them (vars() gives them so).
_TASK_KEYS = tuple("spec_version_sent" if f.name == "cluster_spec_version_sent" else f.name
                   for f in dataclasses.fields(TaskRecord))
_TASK_FIELDS = {"spec_version_sent": "cluster_spec_version_sent"}
# Fields written only when set: a record of a job without them reads as the older code wrote it.
_TASK_IF_SET = ("restarts_with_job", "failed_with")


def own_fields(job: JobState, tr: Transient) -> dict[str, Any]:
    """The job's fields but its tasks, task ids and events (what a journal entry carries)."""
    return {
        "phase": job.phase,
        "started_at": job.started_at,
        "placing_since": job.placing_since,
        "finishing_since": job.finishing_since,
        "job_restarts": job.job_restarts,
        "spec_version": job.cluster_spec_version,
        "launch_seq": job.launch_seq,
        "succeeded": job.succeeded,
        "ending": job.ending or "",
        "cause": job.cause,
        "suppressed": tr.interest.suppressed,  # written for the record's readers; a loaded job asks for offers again
    }


def task_dict(job: JobState, key: TaskKey) -> dict[str, Any]:
    # Every field but the key is a plain value: a shallow copy, renamed by position (asdict
    # deep-copies, and this runs on every durable event: 18 ms of a 1,000-task job's write went there).
    rec = job.tasks[key]
    out = dict(zip(_TASK_KEYS, vars(rec).values()))
    out["key"] = [rec.key.role, rec.key.index]  # first, as TaskRecord declares it
    for name in _TASK_IF_SET:
        if not out[name]:
            del out[name]
    return out


def to_dict(job: JobState, tr: Transient) -> dict[str, Any]:
    return {
        **own_fields(job, tr),
        "events": job.events[-EVENTS_KEPT:],
        "tasks": [task_dict(job, key) for key in job.tasks],
        "task_ids": {tid: [k.role, k.index] for tid, k in job.by_task_id.items()},
        "series": job.series.to_list(),
    }


def restore(spec: JobSpec, data: dict[str, Any]) -> JobState:
    """The job a record holds, for ``spec``: its tasks as recorded (a task the spec no longer has is
    left out, one the record lacks waits PENDING)."""
    tasks = {key: TaskRecord(key) for key in spec.task_keys()}
    for raw in data["tasks"]:
        key = TaskKey(raw["key"][0], raw["key"][1])
        if key in tasks:
            fields = {_TASK_FIELDS.get(name, name): value for name, value in raw.items()}
            tasks[key] = TaskRecord(**{**fields, "key": key, "state": TaskState(raw["state"])})
    # Records written before KILLED existed have no "ending": theirs followed "succeeded".
    ending = data.get("ending") or (SUCCEEDED if data["succeeded"] else FAILED if data["succeeded"] is False else None)
    return JobState(
        spec=spec, tasks=tasks, phase=JobPhase(data["phase"]), started_at=data["started_at"],
        placing_since=data["placing_since"], finishing_since=data["finishing_since"],
        job_restarts=data["job_restarts"], cluster_spec_version=data["spec_version"], launch_seq=data["launch_seq"],
        succeeded=data["succeeded"], ending=JobPhase(ending) if ending else None, cause=data["cause"],
        events=data["events"], series=ProgressSeries.from_list(data.get("series")),  # none before format 4
        by_task_id={tid: TaskKey(k[0], k[1]) for tid, k in data["task_ids"].items()},
    )
