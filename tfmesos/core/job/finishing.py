"""How a job ends: FINISHING kills what is left, and the end (Done) comes once no task is live,
or at the grace's end (core/job/timers.py). A success's cause names the tasks whose end decided it,
as the success rule counts them ('chief:0 finished', 'all 3 workers finished'), never one task of
several."""
from __future__ import annotations

from typing import Sequence

from .. import phase
from ..actions import Action, Decline, Done, Kill
from ..phase import ENDED_PHASES, FINISHING, SUCCEEDED, JobPhase
from ..placement import offer_hold, offer_interest
from ..placement.offer_interest import REFUSE_WHEN_IDLE
from ..spec import TaskKey
from ..state import notices, tasks
from ..state.record import JobState, Transient


def finish(job: JobState, tr: Transient, end: JobPhase, cause: str, now: float) -> list[Action]:
    if job.phase == FINISHING or job.phase in ENDED_PHASES:
        return []
    phase.move(job, FINISHING, now, f"to end {end}: {cause}")
    job.ending, job.succeeded, job.cause = end, end == SUCCEEDED, cause
    notices.job_ends(job, tr, end, cause)
    actions: list[Action] = []
    if tr.hold.held:
        actions.append(Decline(offer_hold.release_all(tr.hold), REFUSE_WHEN_IDLE))
    live = tr.live_while_finishing = set()
    for rec in job.tasks.values():
        if rec.live:
            live.add(rec.key)
            tasks.kill_sent(rec, now)
            actions.append(Kill(rec.task_id, rec.agent_id))
    actions += offer_interest.suppress(tr.interest)
    return actions + maybe_done(job, tr, now)


def maybe_done(job: JobState, tr: Transient, now: float, force: bool = False,
               ended: TaskKey | None = None) -> list[Action]:
    """The end, once no task is live (``ended``: the task whose end was just told), or ``force``d."""
    if job.phase != FINISHING or (not force and _any_live(job, tr, ended)):
        return []
    assert job.ending is not None  # FINISHING is entered with the end it leads to
    phase.move(job, job.ending, now, job.cause)
    if tr.done_emitted:
        return []
    tr.done_emitted = True
    return [Done(job.ending, job.cause)]


def _any_live(job: JobState, tr: Transient, ended: TaskKey | None) -> bool:
    """Whether a task still lives, O(1) per end: the tasks live when FINISHING began, less each end
    told, confirmed by a scan once that says none are left (a scan per end made a 1,000-task
    job's end O(tasks^2): 0.5 s of CPU)."""
    left = tr.live_while_finishing
    if left is None:  # a job loaded while it was finishing
        left = tr.live_while_finishing = set()
    elif ended is not None:
        left.discard(ended)
    if not left:
        left.update(key for key, rec in job.tasks.items() if rec.live)
    return bool(left)


def stop(job: JobState, tr: Transient, why: str, now: float, end: JobPhase | str) -> list[Action]:
    """Stop the job on request: kill everything, end ``end``. A job already ending keeps its end."""
    if end not in ENDED_PHASES:
        raise ValueError(f"a job ends {', '.join(ENDED_PHASES)}, not {end!r}")
    return finish(job, tr, JobPhase(end), why, now)


def waiting_for(job: JobState) -> str:
    """What a stopping job still waits for, for a person who asks again (a second Ctrl-C)."""
    if job.phase in ENDED_PHASES:
        return "nothing of the job: it has ended"
    live = [f"{r.key} {r.state}" for r in job.tasks.values() if r.live]
    if not live:
        return "nothing of the job: no task is running"
    shown = ", ".join(live[:5]) + (f" and {len(live) - 5} more" if len(live) > 5 else "")
    return f"{len(live)} task(s) to end: {shown}"


def success_cause(keys: Sequence[TaskKey]) -> str:
    """The cause of a success decided by ``keys`` (the spec's success tasks, all finished)."""
    roles: dict[str, list[int]] = {}
    for key in keys:
        roles.setdefault(key.role, []).append(key.index)
    parts = [f"{role}:{indexes[0]}" if len(indexes) == 1 else f"{len(indexes)} {role}s"
             for role, indexes in roles.items()]
    return ("all " if len(parts) == 1 and len(keys) > 1 else "") + " and ".join(parts) + " finished"
