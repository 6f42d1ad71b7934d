"""How a job ends: FINISHING kills what is left, and the end (Done) comes once no task is live,
or at the grace's end (core/job/timers.py). A success's cause names the tasks whose end decided it,
as the success rule counts them ('chief:0 finished', 'all 3 workers finished'), never one task of
several."""
from __future__ import annotations

from typing import Sequence

from ..actions import Action, Decline, Done, Kill, Suppress
from ..placement.offer_interest import REFUSE_WHEN_IDLE
from ..spec import TaskKey
from .. import phase
from ..phase import CLOSED, ENDED_PHASES, FAILED, FINISHING, KILLED, SUCCEEDED, JobPhase
from ..state.record import JobState, Transient

# The event that says how the job is ending. A stop on request is no failure: its cause says it
# all ("stopped by SIGINT (Ctrl-C)", "cluster closed").
END_NOTES = {SUCCEEDED: "succeeded: ", FAILED: "failed: ", KILLED: "", CLOSED: ""}


def end_note(job: JobState) -> str | None:
    """The event that said how the job is ending (None before it ends): a front-end that
    prints the end in its summary leaves this one out (one line per end)."""
    return END_NOTES[job.ending] + job.cause if job.ending else None


def finish(job: JobState, tr: Transient, end: JobPhase, cause: str, now: float) -> list[Action]:
    if job.phase == FINISHING or job.phase in ENDED_PHASES:
        return []
    phase.move(job, FINISHING, now, f"to end {end}: {cause}")
    job.ending, job.succeeded, job.cause = end, end == SUCCEEDED, cause
    job.note(END_NOTES[end] + cause)
    actions: list[Action] = []
    if tr.held:
        actions.append(Decline(tuple(tr.held), REFUSE_WHEN_IDLE))
        tr.held.clear()
    for rec in job.tasks.values():
        if rec.live:
            rec.killing_since = now
            actions.append(Kill(rec.task_id, rec.agent_id))
    if not tr.suppressed:
        tr.suppressed = True
        actions.append(Suppress())
    return actions + maybe_done(job, tr, now)


def maybe_done(job: JobState, tr: Transient, now: float, force: bool = False) -> list[Action]:
    if job.phase != FINISHING or (not force and any(r.live for r in job.tasks.values())):
        return []
    assert job.ending is not None  # FINISHING is entered with the end it leads to
    phase.move(job, job.ending, now, job.cause)
    if tr.done_emitted:
        return []
    tr.done_emitted = True
    return [Done(job.ending, job.cause)]


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
