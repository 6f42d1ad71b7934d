"""Which task gets which ClusterSpec, and when: built once per version (the addresses change only
when a launch moves a task, which bumps the version) and sent once per executor: in a small
gang's TaskInfos (``inline_cluster_spec``: the task starts at once), else to a new executor when it
asks (it has its task and no ClusterSpec: a framework message from it, repeated until the answer
comes, since messages are best effort), and to each reported task that is behind after a launch
moved a peer. Never in a big gang's TaskInfos: there its launch grew with its square. The one
writer of the ClusterSpec's version and of its message's cache."""
from __future__ import annotations

from typing import Any, Iterable

from ..actions import Action, SendClusterSpec
from ..state import tasks
from ..state.record import JobState, Transient
from ..state.tasks import TaskRecord
from ..task_state import REPORTED


# A cluster of at most this many addresses rides in each TaskInfo, deflated: the executor starts
# its task without the ask's round trip. 128 addresses add 0.6-1.6 kB to a TaskInfo (the dry run's
# one host: 0.6; 128 hosts of long names: 1.6), so at most ~210 kB to a whole gang, whose
# TaskInfos are ~1.8 kB each without it. Above it every executor asks: TaskInfo bytes stay linear.
INLINE_MAX_ADDRESSES = 128


def cluster(job: JobState) -> dict[str, list[str]] | None:
    endpoints = {k: r.endpoint for k, r in job.tasks.items() if r.endpoint}
    if len(endpoints) < len(job.tasks):
        return None
    return job.spec.profile.cluster(endpoints | dict(job.spec.external))


def addresses_changed(job: JobState) -> None:
    """A launch moved a task to a new address: every task must hear of a new ClusterSpec."""
    job.cluster_spec_version += 1


def cluster_spec_message(job: JobState, tr: Transient) -> dict[str, Any] | None:
    # Endpoints only change in a launch, which then bumps the version: one message per version
    # (building it is O(tasks); per status update that would make a job O(tasks^2)).
    if tr.cluster_spec_cache is not None and tr.cluster_spec_cache["version"] == job.cluster_spec_version:
        return tr.cluster_spec_cache
    spec = cluster(job)
    if spec is None:
        return None
    tr.cluster_spec_cache = {"type": "clusterspec", "version": job.cluster_spec_version, "cluster": spec}
    return tr.cluster_spec_cache


def address_count(message: dict[str, Any]) -> int:
    return sum(len(addresses) for addresses in message["cluster"].values())


def inline_cluster_spec(job: JobState, tr: Transient, launched: Iterable[TaskRecord]) -> dict[str, Any] | None:
    """The ClusterSpec message the TaskInfos of ``launched`` carry, marked sent to them (a later
    version still goes to each, ``sync_cluster_specs``; an executor that asks anyway, of an older
    tfmesos, is answered); None where the cluster is above INLINE_MAX_ADDRESSES: they ask."""
    message = cluster_spec_message(job, tr)
    if message is None or address_count(message) > INLINE_MAX_ADDRESSES:
        return None
    for rec in launched:
        tasks.cluster_spec_sent(rec, job.cluster_spec_version)
    return message


def sync_cluster_specs(job: JobState, tr: Transient, only: TaskRecord | None = None) -> list[Action]:
    """ClusterSpec messages for reported tasks behind the current version: every task after a
    launch; only the task that changed state after its status update (O(1) per update)."""
    message = cluster_spec_message(job, tr)
    if message is None:
        return []
    actions: list[Action] = []
    for rec in (only,) if only is not None else job.tasks.values():
        if rec.state in REPORTED and rec.cluster_spec_version_sent < job.cluster_spec_version:
            tasks.cluster_spec_sent(rec, job.cluster_spec_version)
            actions.append(SendClusterSpec(rec.task_id, rec.agent_id, message))
    return actions


def executor_asks_cluster_spec(job: JobState, tr: Transient, task_id: str) -> list[Action]:
    """An executor without the ClusterSpec asks: at once when its task arrives, then again until it
    has it (the answer may be lost). Answered with the current version whenever asked: an answer
    may have been lost. A newer version made while it was not yet reported goes to it with its
    first status update (``sync_cluster_specs``)."""
    key = job.by_task_id.get(task_id)
    message = cluster_spec_message(job, tr)
    if key is None or message is None or job.tasks[key].task_id != task_id:
        return []
    rec = job.tasks[key]
    tasks.cluster_spec_sent(rec, job.cluster_spec_version)
    return [SendClusterSpec(task_id, rec.agent_id, message)]
