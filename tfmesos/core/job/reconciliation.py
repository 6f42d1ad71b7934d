"""Explicit reconciliation: which live tasks Mesos has not answered about since the scheduler
(re)subscribed, asked again with backoff (after a master failover Mesos answers nothing for an
agent that has not re-registered, and only a later ask learns that its tasks are lost). The one
module that writes the reconciliation in flight."""
from __future__ import annotations

from ..actions import Action, Reconcile
from ..state.record import RECONCILE_RETRY_SECONDS, JobState, Transient

RECONCILE_RETRY_MAX_SECONDS = 240.0


def start(tr: Transient, live: tuple[str, ...]) -> list[Action]:
    """Ask about the ``live`` tasks (and implicitly about every other); forget earlier asks."""
    tr.unreconciled, tr.reconcile_at, tr.reconcile_delay = set(live), None, RECONCILE_RETRY_SECONDS
    return [Reconcile(live), Reconcile(())] if live else []


def answered(tr: Transient, task_id: str) -> None:
    """An update about ``task_id`` came: it is answered."""
    tr.unreconciled.discard(task_id)


def again(job: JobState, tr: Transient, now: float) -> list[Action]:
    """Ask again about the live tasks Mesos has not answered about since ``start``."""
    if not tr.unreconciled:
        return []
    if tr.reconcile_at is None:
        tr.reconcile_at = now + tr.reconcile_delay
        return []
    if now < tr.reconcile_at:
        return []
    live = {r.task_id for r in job.tasks.values() if r.live}
    tr.unreconciled &= live
    if not tr.unreconciled:
        return []
    tr.reconcile_delay = min(tr.reconcile_delay * 2, RECONCILE_RETRY_MAX_SECONDS)
    tr.reconcile_at = now + tr.reconcile_delay
    return [Reconcile(tuple(sorted(tr.unreconciled)))]


def deadline(tr: Transient) -> float | None:
    """When ``again`` has something to do, if it waits for a time."""
    return tr.reconcile_at if tr.unreconciled and tr.reconcile_at is not None else None
