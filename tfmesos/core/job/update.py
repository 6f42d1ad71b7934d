"""A running job given new options under the same name (``tfmesos update``): the one writer of
the job's spec and of which tasks it has. ``spec_diff`` says what changes, what that restarts and
what cannot change; this stops the live tasks it restarts (and those it removes) at a planned stop
(core/job/planned_stop.py: each told, then killed with its stop grace, its end counted apart from
failures), then swaps the spec, adds and removes tasks, and, where the whole job restarts, has
recovery place it again whole (PLACING) once they have saved and stopped."""
from __future__ import annotations

from ..actions import Action
from ..phase import PLACING, RUNNING
from ..spec import JobSpec
from ..state import notices, tasks
from ..state.record import JobState, Transient
from ..state.tasks import TaskRecord
from . import planned_stop, recovery, spec_diff
from .spec_diff import SpecDiff


class UpdateRefused(ValueError):
    """An update this job cannot take: ``problems`` name each field and why (as OptionsError's
    do); ``now`` is True when only the job's phase refuses it (409), False for the options (400)."""

    def __init__(self, problems: list[str], now: bool = False):
        super().__init__("\n".join(problems))
        self.problems, self.now = problems, now


def plan(job: JobState, new: JobSpec) -> SpecDiff:
    """What ``new`` would change and restart (``--dry-run``); UpdateRefused when it cannot be taken."""
    diff = spec_diff.diff(job.spec, new)
    if diff.refused:
        raise UpdateRefused(list(diff.refused))
    if job.phase not in (PLACING, RUNNING):
        raise UpdateRefused([f"the job is {job.phase}: only a job placing or running takes an update"], now=True)
    return diff


def update(job: JobState, tr: Transient, new: JobSpec, now: float) -> tuple[SpecDiff, list[Action]]:
    """Run ``new`` in place of the job's spec: what changed, and the actions (kills) it takes."""
    diff = plan(job, new)
    why = "tfmesos update" + ("" if diff.changes else " (a graceful restart)")
    stopping = [key for key in (*diff.restarts, *diff.removed) if job.tasks[key].live]
    # Told and stopped under the spec they run (a collective job's removed workers save with the rest).
    actions: list[Action] = (planned_stop.stop_gracefully(job, tr, stopping, why, now, planned_stop.UPDATE)
                             if stopping and job.phase == RUNNING else [])
    tasks.forget(job, set(diff.removed))  # their ends are no task's: nothing relaunches them
    job.spec = new
    job.tasks = {key: job.tasks.get(key) or TaskRecord(key) for key in new.task_keys()}
    notices.note(job, tr, "updated: " + "; ".join(diff.lines()))
    return diff, actions + recovery.restart_for_update(job, tr, set(diff.restarts), diff.whole_job, now)
