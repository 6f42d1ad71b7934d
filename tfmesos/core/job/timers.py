"""What the clock decides: kills retried while finishing, the job's deadlines (active, placement,
queue), startup timeouts, a partial gang given back, backoffs that end, and explicit reconciliation
asked again with backoff; and when the next of these is due (the shell sleeps until then)."""
from __future__ import annotations

from ..actions import Action, Decline, Kill, Persist, Reconcile, Revive
from ..placement.fit import no_offer_hint
from ..placement.offer_interest import REFUSE_WHILE_PENDING, revive
from ..placement.queue import queue_timed_out
from .. import phase
from ..phase import FAILED, FINISHING, PLACING
from ..state.record import RECONCILE_RETRY_SECONDS, JobState, Transient
from ..task_state import PENDING, STARTING_UP, TASK_FAILED, EndKind, StatusUpdate
from .finishing import finish, maybe_done
from .gang import explain_unplaced, hold_for, jittered_hold
from .recovery import ended

KILL_RETRY_SECONDS = 5.0
RECONCILE_RETRY_MAX_SECONDS = 240.0
NO_OFFER_NOTE_SECONDS = 15.0  # no offer at all by then: say why that may be, long before the placement timeout
FINISH_GRACE_SECONDS = 30.0


def start(job: JobState, tr: Transient) -> list[Action]:
    """First actions after (re)subscribing: ask for offers, reconcile what we launched."""
    live = tuple(r.task_id for r in job.tasks.values() if r.live)
    actions: list[Action] = [Persist(), Revive()]  # the framework id may be new
    tr.suppressed = False
    if live:
        actions += [Reconcile(live), Reconcile(())]
    tr.unreconciled, tr.reconcile_at, tr.reconcile_delay = set(live), None, RECONCILE_RETRY_SECONDS
    return actions


def tick(job: JobState, tr: Transient, now: float) -> list[Action]:
    actions: list[Action] = []
    pol = job.spec.policies
    if job.phase == FINISHING:
        for rec in job.tasks.values():
            if rec.live and now - rec.killing_since >= KILL_RETRY_SECONDS:
                rec.killing_since = now
                actions.append(Kill(rec.task_id, rec.agent_id))
        if now - job.finishing_since >= FINISH_GRACE_SECONDS:
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
    if job.phase == PLACING and tr.largest_seen is None and not tr.no_offer_noted and (
            now - job.placing_since >= NO_OFFER_NOTE_SECONDS):
        tr.no_offer_noted = True
        job.note(f"still waiting after {NO_OFFER_NOTE_SECONDS:g} s: " + no_offer_hint(job.spec.gpus_needed))
    if tr.held and now - tr.held_since >= hold_for(tr, now):
        # Give a partial gang back so a competing job can complete; try again after a jittered pause.
        actions.append(Decline(tuple(tr.held), REFUSE_WHILE_PENDING + tr.rng.random() * 3))
        tr.held.clear()
        tr.held_since = 0.0
        tr.hold_limit = jittered_hold(tr.rng)
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
            rec.killing_since = now
            actions.append(Kill(rec.task_id, rec.agent_id))
    actions += _reconcile_again(job, tr, now)
    if any(r.state == PENDING and r.not_before <= now for r in job.tasks.values()):
        if tr.declined_in_backoff:
            # Offers were refused while backing off: REVIVE clears that filter at once.
            tr.declined_in_backoff = False
            tr.suppressed = False
            actions.append(Revive())
        else:
            actions += revive(tr)
    return actions


def _reconcile_again(job: JobState, tr: Transient, now: float) -> list[Action]:
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


def next_deadline(job: JobState, tr: Transient, now: float) -> float:
    """When ``tick`` has something to do next (the shell sleeps until then, or an event)."""
    pol = job.spec.policies
    times = [now + 5.0]
    if pol.active_deadline_seconds:
        times.append(job.started_at + pol.active_deadline_seconds)
    if job.phase == PLACING:
        times.append(job.placing_since + pol.placement_timeout_seconds)
    if tr.held:
        times.append(tr.held_since + hold_for(tr, now))
    if tr.queued_since is not None and pol.queue_timeout_seconds:
        times.append(tr.queued_since + pol.queue_timeout_seconds)
    if job.phase == FINISHING:
        times.append(job.finishing_since + FINISH_GRACE_SECONDS)
    if tr.unreconciled and tr.reconcile_at is not None:
        times.append(tr.reconcile_at)
    for rec in job.tasks.values():
        if rec.state == PENDING and rec.not_before > now:
            times.append(rec.not_before)
        elif rec.state in STARTING_UP:
            times.append(rec.launched_at + pol.startup_timeout_seconds)
    return max(now, min(times))
