"""What the clock decides: kills retried while finishing, the job's deadlines (active, placement,
queue), startup timeouts, a partial gang given back, backoffs that end, and explicit reconciliation
asked again with backoff; and when the next of these is due (the shell sleeps until then)."""
from __future__ import annotations

from .. import phase
from ..actions import Action, Decline, Kill, Persist
from ..phase import FAILED, FINISHING, PLACING
from ..placement import offer_hold, offer_interest
from ..placement.offer_interest import REFUSE_WHILE_PENDING
from ..placement.queue import queue_timed_out
from ..state import notices, tasks
from ..state.record import JobState, Transient
from ..task_state import PENDING, STARTING_UP, TASK_FAILED, EndKind, StatusUpdate
from . import reconciliation
from .finishing import finish, maybe_done
from .gang import explain_unplaced, hold_for, note_no_offer
from .recovery import ended

KILL_RETRY_SECONDS = 5.0
FINISH_GRACE_SECONDS = 30.0


def finish_grace(job: JobState) -> float:
    """How long FINISHING waits for its kills: at least the tasks' stop grace (they may save first)."""
    return max(FINISH_GRACE_SECONDS, job.spec.policies.stop_grace_seconds + KILL_RETRY_SECONDS)


def start(job: JobState, tr: Transient) -> list[Action]:
    """First actions after (re)subscribing: ask for offers, reconcile what we launched."""
    live = tuple(r.task_id for r in job.tasks.values() if r.live)
    notices.subscribed(tr)
    # The framework id may be new: REVIVE whatever was suppressed or filtered before.
    return [Persist(), *offer_interest.revive_now(tr.interest), *reconciliation.start(tr, live)]


def tick(job: JobState, tr: Transient, now: float) -> list[Action]:
    actions: list[Action] = []
    pol = job.spec.policies
    if job.phase == FINISHING:
        for rec in job.tasks.values():
            if rec.live and now - rec.killing_since >= KILL_RETRY_SECONDS:
                tasks.kill_sent(rec, now)
                actions.append(Kill(rec.task_id, rec.agent_id))
        if now - job.finishing_since >= finish_grace(job):
            actions += maybe_done(job, tr, now, force=True)
        return actions
    if job.terminal:
        return actions
    if pol.active_deadline_seconds and now - job.started_at >= pol.active_deadline_seconds:
        return finish(job, tr, FAILED, f"active_deadline_seconds ({pol.active_deadline_seconds:g}s) exceeded", now)
    if job.phase == PLACING and (why := queue_timed_out(tr.queued_since, now, pol.queue_timeout_seconds)):
        return finish(job, tr, FAILED, why, now)
    if job.phase == PLACING and now - job.placing_since >= pol.placement_timeout_seconds:
        if tr.queued_since is None:
            return finish(job, tr, FAILED, explain_unplaced(job, tr), now)
        phase.move(job, PLACING, now, "queued: this attempt ends, the next one gathers again")
    note_no_offer(job, tr, now)
    if tr.hold.held and now - tr.hold.held_since >= hold_for(tr, now):
        # Give a partial gang back so a competing job can complete; try again after a jittered pause.
        actions.append(Decline(offer_hold.release_all(tr.hold), REFUSE_WHILE_PENDING + tr.rng.random() * 3))
        offer_hold.new_limit(tr.hold, tr.rng)
    for rec in list(job.tasks.values()):
        if rec.state in STARTING_UP and not rec.relaunch_after_kill and (
            now - rec.launched_at >= pol.startup_timeout_seconds
        ):
            task_id, agent_id = rec.task_id, rec.agent_id
            actions.append(Kill(task_id, agent_id))
            actions += ended(
                job, tr, rec,
                StatusUpdate(task_id, TASK_FAILED, message=f"startup timeout: not RUNNING after {pol.startup_timeout_seconds:g}s",
                             kind=EndKind.STARTUP_TIMEOUT),
                now,
            )
        elif rec.relaunch_after_kill and rec.live and now - rec.killing_since >= KILL_RETRY_SECONDS:
            tasks.kill_sent(rec, now)
            actions.append(Kill(rec.task_id, rec.agent_id))
    actions += reconciliation.again(job, tr, now)
    if any(r.state == PENDING and r.not_before <= now for r in job.tasks.values()):
        # Offers refused while backing off: REVIVE clears that filter at once.
        actions += offer_interest.backoff_over(tr.interest)
    return actions


def next_deadline(job: JobState, tr: Transient, now: float) -> float:
    """When ``tick`` has something to do next (the shell sleeps until then, or an event)."""
    pol = job.spec.policies
    times = [now + 5.0]
    if pol.active_deadline_seconds:
        times.append(job.started_at + pol.active_deadline_seconds)
    if job.phase == PLACING:
        times.append(job.placing_since + pol.placement_timeout_seconds)
    if tr.hold.held:
        times.append(tr.hold.held_since + hold_for(tr, now))
    if tr.queued_since is not None and pol.queue_timeout_seconds:
        times.append(tr.queued_since + pol.queue_timeout_seconds)
    if job.phase == FINISHING:
        times.append(job.finishing_since + finish_grace(job))
    if (asked := reconciliation.deadline(tr)) is not None:
        times.append(asked)
    for rec in job.tasks.values():
        if rec.state == PENDING and rec.not_before > now:
            times.append(rec.not_before)
        elif rec.state in STARTING_UP:
            times.append(rec.launched_at + pol.startup_timeout_seconds)
    return max(now, min(times))
