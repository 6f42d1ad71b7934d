"""Recovery: what a task's status update decides. A live state is noted; an end relaunches the task
(with backoff: the retry policy, core/job/retry_policy.py, says whether and when), restarts the
whole job from its checkpoint, or ends the job (core/job/finishing.py). A person's restart
(``tfmesos restart``) and a peer's restart after a task moved come here too. The one writer of the
job's restart count and of what those decisions cache."""
from __future__ import annotations

from .. import phase
from ..actions import Action, Kill
from ..phase import ENDED_PHASES, FAILED, FINISHING, PLACING, RUNNING, SUCCEEDED
from ..placement import offer_interest
from ..spec import TaskKey
from ..state import notices, tasks
from ..state.notices import Outcome, TaskEnd
from ..state.record import JobState, NoSuchTask, Transient, task_names
from ..state.tasks import TaskRecord
from ..task_state import LIVE, PENDING, TASK_FINISHED, TASK_STAGING, StatusUpdate
from . import planned_stop, reconciliation, retry_policy
from .cluster_spec_sync import sync_cluster_specs
from .finishing import finish, maybe_done, success_cause


def status(job: JobState, tr: Transient, update: StatusUpdate, now: float) -> list[Action]:
    reconciliation.answered(tr, update.task_id)
    key = job.by_task_id.get(update.task_id)
    rec = job.tasks[key] if key is not None else None
    if rec is None or rec.task_id != update.task_id or rec.state == PENDING:
        if rec is not None and rec.task_id == update.task_id:
            notices.task_update(tr, rec.key, update)  # about an attempt that ended, its task queued again
        # An earlier attempt, or a task we never launched: make sure it does not linger.
        if update.state in LIVE and update.agent_id:
            return [Kill(update.task_id, update.agent_id)]
        return []
    if rec.state not in LIVE:
        notices.task_update(tr, rec.key, update)
        return []  # already terminal: a duplicate or a reconciliation echo
    if update.state in LIVE:
        tasks.reported(rec, update)
        notices.task_update(tr, rec.key, update)
        actions = sync_cluster_specs(job, tr, rec)
        if planned_stop.draining(update) and rec.agent_id not in tr.leaving:  # TASK_KILLING: its agent drains
            tr.others_changed = True  # the peers told change too
            actions += planned_stop.agent_leaving(job, tr, rec.agent_id,
                                                  planned_stop.agent_why(rec.hostname, rec.agent_id), now)
        return actions
    return ended(job, tr, rec, update, now)


def ended(job: JobState, tr: Transient, rec: TaskRecord, update: StatusUpdate, now: float) -> list[Action]:
    """The current attempt of ``rec``'s task ended so: what the job does about it, told once (notices.py)."""
    staged = rec.state == TASK_STAGING  # its executor never started it (in an image: the image is at fault)
    tasks.ended(rec, update)
    key = rec.key
    if job.phase == FINISHING or job.phase in ENDED_PHASES:
        # Ending, or ended (FINISHING's grace was over before every kill was confirmed): no more decisions.
        notices.task_ended(job, tr, TaskEnd(key, update))
        return maybe_done(job, tr, now, ended=key)
    planned = planned_stop.planned_end(job, tr, rec, update, now, _restart_whole_job_now)
    if planned is not None:  # no failure: no restart limit used (planned_stop.py)
        tr.others_changed = True
        return planned + offer_interest.revive(tr.interest)
    if rec.relaunch_after_kill:
        notices.task_ended(job, tr, TaskEnd(key, update))
        tasks.killed_for_relaunch(rec)
        return offer_interest.revive(tr.interest)
    if update.state == TASK_FINISHED and job.spec.decides_success(key):
        if _all_success_keys_finished(job, tr, key):  # the job's end says it
            return finish(job, tr, SUCCEEDED, success_cause(job.spec.success_keys), now)
        notices.task_ended(job, tr, TaskEnd(key, update))
        return []
    role = job.spec.role(key.role)
    assert role is not None
    ending = retry_policy.Ending(update.state, update.reason, update.exit_code, kind=update.kind,
                                 image=job.spec.image if staged else "", staged=staged,
                                 repeats=_repeated_failure(job, rec, update))
    whole_job = _restarts_whole_job(job, key)
    decision = retry_policy.decide(
        role.restart_policy, ending, _whole_job_restarts(job) if whole_job else rec.restarts, role.max_restarts,
        job.job_restarts, job.spec.policies.max_job_restarts, job.spec.policies.backoff_seconds,
        job.spec.policies.backoff_max_seconds, whole_job,
    )
    if not decision.retry:
        if ending.succeeded:  # e.g. MultiWorkerMirrored worker 1 done before worker 0
            notices.task_ended(job, tr, TaskEnd(key, update))
            return []
        if not job.spec.profile.essential(job.spec, key):  # e.g. TensorBoard: the training goes on
            notices.task_ended(job, tr, TaskEnd(key, update, Outcome.GOES_ON, decision.why))
            return []
        failed = TaskEnd(key, update, Outcome.FAILS_JOB, decision.why)
        notices.task_ended(job, tr, failed)
        return finish(job, tr, FAILED, notices.text(failed), now)  # its end says it
    return _recover(job, tr, rec, update, ending, decision.delay, now)


def _recover(job: JobState, tr: Transient, rec: TaskRecord, update: StatusUpdate, ending: retry_policy.Ending,
             delay: float, now: float) -> list[Action]:
    job.job_restarts += 1
    whole_job = _restarts_whole_job(job, rec.key)
    number = (_whole_job_restarts(job) if whole_job else rec.restarts) + 1
    outcome = Outcome.NEVER_LAUNCHED if ending.never_launched else Outcome.RELAUNCHED
    notices.task_ended(job, tr, TaskEnd(rec.key, update, outcome, delay=delay, number=number, whole_job=whole_job))
    tasks.requeue(rec, now + delay, avoid=ending.agent_lost, counted=not ending.never_launched)
    failure = None if ending.never_launched else update.exception
    actions = _restart_all_but(job, tr, rec, now, now + delay, failure) if whole_job else []
    return actions + offer_interest.revive(tr.interest)


def _repeated_failure(job: JobState, rec: TaskRecord, update: StatusUpdate) -> str:
    """The exception line ``update`` repeats from the failure that relaunched ``rec`` last, or "":
    a script that raised (exit code 1-127) the same exception twice in a row, not one the framework
    says a peer or the network causes."""
    line, code = update.exception, update.exit_code
    if not line or line != rec.failed_with or code is None or not 1 <= code <= 127:
        return ""
    return "" if job.spec.profile.transient_failure(line) else line


def _restart_whole_job_now(job: JobState, tr: Transient, rec: TaskRecord, now: float) -> list[Action]:
    """A planned stop's whole-job restart: every other task placed again with ``rec``, at once."""
    return _restart_all_but(job, tr, rec, now, now, spare_told=True)


def changed_others(tr: Transient) -> None:
    """An event changed tasks besides its own (a planned stop told its peers): the journal writes the whole job."""
    tr.others_changed = True


def _restarts_whole_job(job: JobState, key: TaskKey) -> bool:
    """A task whose loss the others cannot outlive (TensorFlow: all-reduce peers, parameter servers)."""
    return job.spec.profile.restarts_whole_job(job.spec, key)


def _whole_job_restarts(job: JobState) -> int:
    """The whole-job restarts failures caused: each counted once, on the task that failed."""
    return sum(r.restarts for r in job.tasks.values() if _restarts_whole_job(job, r.key))


def _restart_all_but(job: JobState, tr: Transient, rec: TaskRecord, now: float, not_before: float,
                     failure: str | None = None, spare_told: bool = False) -> list[Action]:
    """Back to PLACING with every other task: the whole job restarts from its checkpoint. ``failure``:
    the exception line of the failure that restarts it (None: a person asked, or a planned stop),
    which every task keeps. With ``spare_told`` (a planned stop), a task told of it is saving and
    ends by itself: it is killed only if it still runs after the stop grace (timers.py retries the
    kill from then)."""
    actions: list[Action] = []
    for other in job.tasks.values():
        if other is rec:
            continue
        if failure is not None:
            tasks.restarted_with_job(other, failure)
            tr.others_changed = True  # its record changed: the journal's next write is the whole job
        if tasks.hold_back(other, not_before):
            tr.others_changed = True
        elif other.live and spare_told and other.stopping:
            tr.others_changed = True
            tasks.kill_for_relaunch(other, now + job.spec.policies.stop_grace_seconds)
        elif other.live:
            actions += _kill_for_relaunch(tr, other, now)
    phase.move(job, PLACING, now, "a whole-job restart")
    return actions


def restart_task(job: JobState, tr: Transient, key: TaskKey, now: float) -> list[Action]:
    """A person asked for this task to restart (``tfmesos restart``): kill it and relaunch it
    at once. Not a failure: no backoff, and neither restart limit is used. Where the task's
    loss takes the whole job down, the whole job restarts from its checkpoint.
    Raises ValueError (naming why) when the task cannot be restarted now."""
    rec = job.tasks.get(key)
    if rec is None:
        raise NoSuchTask(f"{key}: no such task in this job: expected {task_names(job.tasks)}")
    if job.phase != RUNNING:
        raise ValueError(f"the job is {job.phase}: only a task of a RUNNING job can be restarted")
    if not rec.live or rec.relaunch_after_kill:
        raise ValueError(f"{key} is {rec.state}{' (already restarting)' if rec.relaunch_after_kill else ''}: "
                         "only a running task can be restarted")
    tasks.restart_asked(rec)
    whole_job = _restarts_whole_job(job, key)
    notices.note(job, tr, f"{key}: restart asked for by a person"
             f"{' (the whole job restarts from its checkpoint)' if whole_job else ''}")
    actions = _kill_for_relaunch(tr, rec, now)
    if whole_job:
        actions += _restart_all_but(job, tr, rec, now, now)
    return actions


def restart_for_peer(job: JobState, tr: Transient, role: str, now: float, why: str,
                     skip: set[TaskKey] | frozenset[TaskKey] = frozenset()) -> list[Action]:
    """Restart the live tasks of ``role`` from their checkpoint (but those in ``skip``: launched with the change)."""
    actions: list[Action] = []
    for rec in job.tasks.values():
        if rec.key.role == role and rec.live and not rec.relaunch_after_kill and rec.key not in skip:
            notices.note(job, tr, f"{rec.key}: restarting from its checkpoint because {why}")
            actions += _kill_for_relaunch(tr, rec, now)
    return actions


def _kill_for_relaunch(tr: Transient, rec: TaskRecord, now: float) -> list[Action]:
    tr.others_changed = True  # for the journal: conservative (the event's own task too)
    tasks.kill_for_relaunch(rec, now)
    return [Kill(rec.task_id, rec.agent_id)]


def take_others_changed(tr: Transient) -> bool:
    """Whether tasks besides the one an event was about changed since the last call (the job
    store's journal policy asks before appending a one-task entry)."""
    changed, tr.others_changed = tr.others_changed, False
    return changed


def _all_success_keys_finished(job: JobState, tr: Transient, finished: TaskKey) -> bool:
    left = tr.unfinished_success
    if left is not None:
        left.discard(finished)
        if left:
            return False
    left = tr.unfinished_success = {k for k in job.spec.success_keys if job.tasks[k].state != TASK_FINISHED}
    return not left


def restart_for_update(job: JobState, tr: Transient, keys: set[TaskKey], whole_job: bool, now: float) -> list[Action]:
    """An update (core/job/update.py) has told ``keys`` that live to stop at a checkpoint
    (planned_stop.py relaunches each once it has saved); those that do not live wait for the
    new spec too. The whole job: back to PLACING, every task placed again together, from the
    checkpoint. Asked for, not a failure: no backoff, no restart limit used."""
    tr.unfinished_success = None  # the success keys may be others now
    tr.others_changed = True
    for rec in job.tasks.values():
        if rec.key in keys and not rec.live:
            tasks.hold_back(rec, now)
    if whole_job:
        phase.move(job, PLACING, now, "an update: every task placed again, from the checkpoint")
    return offer_interest.revive(tr.interest)
