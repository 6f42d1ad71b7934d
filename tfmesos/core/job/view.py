"""What a person sees of a job: the progress its tasks report (``tfmesos.report``) and the
``StatusSnapshot`` the status page, the CLI and the history show."""
from __future__ import annotations

from typing import Any

from ..spec import TENSORBOARD, TaskKey
from ..state.record import JobState, Transient
from ..state.tasks import TaskRecord
from ..status import Progress, StatusSnapshot, TaskStatus
from ..task_state import TASK_RUNNING


def report(job: JobState, tr: Transient, task_id: str, values: dict[str, Any], now: float) -> None:
    """Progress a task reported (tfmesos.report): the latest values of its current attempt."""
    key = job.by_task_id.get(task_id)
    if key is not None and job.tasks[key].task_id == task_id:
        tr.reports[key] = {**tr.reports.get(key, {}), **values, "at": now}
        if not job.spec.success_keys or key == job.spec.success_keys[0]:  # the task progress() shows
            job.series.add(now, tr.reports[key])


def progress(job: JobState, tr: Transient) -> dict[str, Any] | None:
    """The job's progress: what the task that decides success reported, else the latest report."""
    keys = job.spec.success_keys  # none for a cluster of servers (tfmesos.cluster)
    lead = tr.reports.get(keys[0]) if keys else None
    if lead is None and tr.reports:
        lead = max(tr.reports.values(), key=lambda r: r["at"])
    if lead is None:
        return None
    out = dict(lead)
    step, total = out.get("step"), out.get("total_steps")
    if isinstance(step, (int, float)) and isinstance(total, (int, float)) and total > 0:
        out["fraction"] = min(1.0, step / total)
    return out


def snapshot(job: JobState, tr: Transient) -> StatusSnapshot:
    lead = progress(job, tr)
    same_name = {f: getattr(job, f) for f in ("phase", "mode", "succeeded", "cause", "job_restarts", "started_at")}
    same_name |= {f: getattr(tr, f) for f in ("placement_wait", "queued", "queued_since")}
    rank = job.spec.profile.rank
    ordered = sorted(job.tasks.values(), key=lambda r: (rank(r.key.role), r.key.index))
    return StatusSnapshot(
        name=job.spec.service.name, clusterspec_version=job.cluster_spec_version, **same_name,
        progress=Progress.from_json(lead) if lead is not None else None,
        series=tuple((at, step, loss) for at, step, loss in job.series.to_list()),
        tasks=tuple(_task_status(tr, r) for r in ordered), tensorboard=_tensorboard(job),
        events=tuple(job.events[-50:]))


def _task_status(tr: Transient, r: TaskRecord) -> TaskStatus:
    report = tr.reports.get(r.key)
    return TaskStatus(role=r.key.role, index=r.key.index, task_id=r.task_id, endpoint=r.endpoint,
                      agent_id=r.agent_id, state=r.state, restarts=r.restarts + r.restarts_with_job,
                      requested_restarts=r.requested_restarts, planned_stops=r.planned_stops,
                      exit_code=r.exit_code, reason=r.reason,
                      message=r.message, exception=r.exception,
                      progress=Progress.from_json(report) if report is not None else None)


def _tensorboard(job: JobState) -> str | None:
    rec = job.tasks.get(TaskKey(TENSORBOARD, 0))
    return rec.endpoint if rec is not None and rec.state == TASK_RUNNING else None
