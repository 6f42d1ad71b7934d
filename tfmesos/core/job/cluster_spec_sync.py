"""Which task gets which ClusterSpec, and when: built once per version (the addresses change only
when a launch moves a task, which bumps the version), carried in the launch when every address is
known, else sent to each reported task that is behind."""
from __future__ import annotations

from typing import Any

from ..actions import Action, SendClusterSpec
from ..state.record import JobState, TaskRecord, Transient
from ..task_state import REPORTED


def cluster(job: JobState) -> dict[str, list[str]] | None:
    endpoints = {k: r.endpoint for k, r in job.tasks.items() if r.endpoint}
    if len(endpoints) < len(job.tasks):
        return None
    return job.spec.profile.cluster(endpoints | dict(job.spec.external))


def spec_message(job: JobState, tr: Transient) -> dict[str, Any] | None:
    # Endpoints only change in a launch, which then bumps spec_version: one message per version
    # (building it is O(tasks); per status update that would make a job O(tasks^2)).
    if tr.spec_cache is not None and tr.spec_cache["version"] == job.spec_version:
        return tr.spec_cache
    spec = cluster(job)
    if spec is None:
        return None
    tr.spec_cache = {"type": "clusterspec", "version": job.spec_version, "cluster": spec}
    return tr.spec_cache


def sync_specs(job: JobState, tr: Transient, only: TaskRecord | None = None) -> list[Action]:
    """ClusterSpec messages for reported tasks behind the current version: every task after a
    launch; only the task that changed state after its status update (O(1) per update)."""
    message = spec_message(job, tr)
    if message is None:
        return []
    actions: list[Action] = []
    for rec in (only,) if only is not None else job.tasks.values():
        if rec.state in REPORTED and rec.spec_version_sent < job.spec_version:
            rec.spec_version_sent = job.spec_version
            actions.append(SendClusterSpec(rec.task_id, rec.agent_id, message))
    return actions


def executor_asks_spec(job: JobState, tr: Transient, task_id: str) -> list[Action]:
    """An executor that has not heard of the ClusterSpec asks again (messages are best effort)."""
    key = job.by_task_id.get(task_id)
    message = spec_message(job, tr)
    if key is None or message is None or job.tasks[key].task_id != task_id:
        return []
    rec = job.tasks[key]
    rec.spec_version_sent = job.spec_version
    return [SendClusterSpec(task_id, rec.agent_id, message)]
