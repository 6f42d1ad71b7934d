"""What the job tells a person, composed here and nowhere else. Each notice goes to the front-end
once (``take``: the console of ``tfmesos run``, ``cluster()``'s events); those that are the job's
events are kept in its record too (``JobState.events``: the status page, ``tfmesos status``, the
history), with the same text.

A task's status is told from the one event the core makes of it: a live state, or an echo of an
end already told, as Mesos said it (``task_update``: the front-end only; a reconciliation answer
once per task since the scheduler subscribed, as explicit and implicit reconciliation both
answer); a task's end with what the job made of it (``TaskEnd``, ``task_ended``): relaunched, or
not and the job goes on without it (one of the job's events), or the job's end (its cause:
finishing.py tells it, as the end); or nothing decided (the front-end only). One line per end.

The one module that writes ``JobState.events`` and the notices not yet taken.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

from ..phase import CLOSED, FAILED, KILLED, SUCCEEDED, JobPhase
from ..spec import TaskKey
from ..task_state import TASK_KILLED, TASK_RUNNING, StatusUpdate

if TYPE_CHECKING:
    from .record import JobState, Transient

RECONCILIATION = "REASON_RECONCILIATION"
# How the job's end is said. A stop on request is no failure: its cause says it all ("stopped by
# SIGINT (Ctrl-C)", "cluster closed").
END_NOTES = {SUCCEEDED: "succeeded: ", FAILED: "failed: ", KILLED: "", CLOSED: ""}


# The signals a killed task's process ends by, by the exit code the executor reports (128 + the number).
_SIGNALS = {129: "SIGHUP", 130: "SIGINT", 134: "SIGABRT", 137: "SIGKILL", 143: "SIGTERM"}


def killed_exit(code: int) -> str:
    """How a killed task's process ended, said the same wherever it is shown (its end, the task
    table): 'exit 143 (killed by SIGTERM)', or 'exit 0 (ended when asked to stop)' for a process
    that handles the kill's SIGTERM itself (TensorFlow's server does)."""
    if code >= 128:
        return f"exit {code} (killed by {_SIGNALS.get(code, f'signal {code - 128}')})"
    return f"exit {code} (ended when asked to stop)"


class Notice(NamedTuple):  # a tuple: one is made per status update (a 1,000-task job: 3,000)
    text: str
    recorded: bool = True  # one of the job's events (kept in its record); else for the front-end only
    end: JobPhase | None = None  # it says how the job ends (a front-end may say that in its summary instead)


class Outcome(Enum):
    """What the job made of a task's end."""

    NOTHING = "nothing"  # no decision: while finishing, killed to be relaunched, a finish that decides nothing alone
    RELAUNCHED = "relaunched"  # launched again after its backoff, alone or with the whole job
    NEVER_LAUNCHED = "never launched"  # its launch never reached an agent: placed again
    GOES_ON = "goes on"  # not relaunched, and the job goes on without it (a task it does not need)
    FAILS_JOB = "fails the job"  # not relaunched: the job fails, this is its cause


@dataclass(frozen=True)
class TaskEnd:
    """A task's end as Mesos (or the clock) said it, and what the job made of it."""

    key: TaskKey
    update: StatusUpdate
    outcome: Outcome = Outcome.NOTHING
    why: str = ""  # why it is not relaunched (the retry policy's reason)
    delay: float = 0.0  # before it is launched again
    number: int = 0  # which relaunch this is (of the task, or of the whole job)
    whole_job: bool = False  # the whole job restarts with it, from its checkpoint


def _said(key: TaskKey, u: StatusUpdate, message: bool = True) -> str:
    """A task's state as Mesos said it: 'worker:0 TASK_FAILED (REASON_...): process ended with exit code 1';
    a kill with its exit code as the task table shows it: 'worker:0 TASK_KILLED: exit 143 (killed by SIGTERM)'."""
    said = f"{key} {u.state}" + (f" ({u.reason})" if u.reason else "")
    if message and u.state == TASK_KILLED and u.exit_code is not None:
        return f"{said}: {killed_exit(u.exit_code)}"
    return said + (f": {u.message}" if message and u.message and u.state != TASK_RUNNING else "")


def text(end: TaskEnd) -> str:
    """The one line a task's end is told in."""
    u, outcome = end.update, end.outcome
    if outcome is Outcome.NOTHING:
        return _said(end.key, u)
    if outcome in (Outcome.GOES_ON, Outcome.FAILS_JOB):
        parts = [f"{end.key} ({u.task_id}) ended {u.state}"]
        if u.exit_code is not None:
            parts.append(f"exit code {u.exit_code}")
        if u.reason:
            parts.append(u.reason)
        if u.exception or u.message:  # the exception says why; the executor's message only how
            parts.append(u.exception or repr(u.message[:200]))
        told = ", ".join(parts) + f"; not relaunched: {end.why}"
        return told + ("; the job goes on without it" if outcome is Outcome.GOES_ON else "")
    said = _said(end.key, u, message=False)
    if u.exit_code is not None:
        said += f" exit {u.exit_code}"
    if u.exception or (u.message and u.exit_code is None):  # the message says why only when nothing else does
        said += f" ({u.exception or u.message[:200]})"
    again = (f"its launch never reached an agent: placed again in {end.delay:.1f}s"
             if outcome is Outcome.NEVER_LAUNCHED else f"relaunch #{end.number} in {end.delay:.1f}s")
    return f"{said}: {again}" + (" with the whole job from its checkpoint" if end.whole_job else "")


# What tfmesos' task helpers say on stderr before a planned exit (tfmesos/task/notice.py's exit_planned).
_SAVED_AT = re.compile(r"tfmesos: planned stop \(.*\): saved at ([^;\n]+); exiting")


def saved_at(log_tail: str) -> str:
    """Where the task said it saved ("step 4,210", "epoch 3, batch 20"), or "" when it did not say."""
    found = _SAVED_AT.findall(log_tail or "")
    return re.sub(r"\d{4,}", lambda m: f"{int(m.group()):,}", found[-1]) if found else ""


@dataclass(frozen=True)
class PlannedEnd:
    """A task's end in a planned stop (core/job/planned_stop.py), and what the job made of it."""

    key: TaskKey
    update: StatusUpdate
    why: str  # the planned stop: "agent h1 draining"
    leaving: bool  # the task itself leaves (its agent drains, it is updated); else a peer that saved with it
    whole_job: bool  # the whole job is placed again, from the saved step
    number: int  # the task's planned stops so far, this one included


def planned_text(end: PlannedEnd) -> str:
    """The one line a planned stop's end is told in: 'agent h1 draining: worker:1 saved at step 4,210, moving'."""
    code, where = end.update.exit_code, saved_at(end.update.log_tail)
    if code == 143:
        how = "stopped without saving (exit 143): it resumes from its last checkpoint"
    elif code == 0:
        how = "stopped cleanly"
    elif where:
        how = f"saved at {where}"
    else:
        how = "saved" if code is not None else f"ended {end.update.state} before it ran"
    if end.leaving:
        told = f"{end.why}: {end.key} {how}, moving"
    else:
        told = f"{end.key} {how} for the planned stop ({end.why})"
    if end.whole_job:
        told += "; the whole job is placed again"
    return told + f" (planned stop #{end.number}, not counted against max_restarts)"


def planned_ended(job: JobState, tr: Transient, end: PlannedEnd) -> None:
    """Tell a planned stop's end: the leaving task's is one of the job's events, a peer's only the front-end's."""
    if end.leaving:
        note(job, tr, planned_text(end))
    else:
        tr.told.append(Notice(planned_text(end), recorded=False))


def task_ended(job: JobState, tr: Transient, end: TaskEnd) -> None:
    """Tell a task's end (a job it fails tells it as its end: finishing.py)."""
    if end.update.reason == RECONCILIATION:
        tr.reconciliation_told.add(end.update.task_id)
    if end.outcome is Outcome.NOTHING:
        tr.told.append(Notice(text(end), recorded=False))
    elif end.outcome is not Outcome.FAILS_JOB:
        note(job, tr, text(end))


def task_update(tr: Transient, key: TaskKey, update: StatusUpdate) -> None:
    """Tell a live state, or an echo of an end, as Mesos said it (composed when taken: a job of
    1,000 tasks has 3,000 such updates)."""
    if update.reason == RECONCILIATION:
        if update.task_id in tr.reconciliation_told:
            return
        tr.reconciliation_told.add(update.task_id)
    tr.told.append((key, update))


def note(job: JobState, tr: Transient, text: str) -> None:
    """One of the job's events."""
    job.events.append(text)
    tr.told.append(Notice(text))


def end_text(end: JobPhase, cause: str) -> str:
    """How the job's end is said: 'failed: worker:0 (...) ended TASK_FAILED, ...'."""
    return END_NOTES[end] + cause


def job_ends(job: JobState, tr: Transient, end: JobPhase, cause: str) -> None:
    """The event that says how the job ends."""
    told = end_text(end, cause)
    job.events.append(told)
    tr.told.append(Notice(told, end=end))


def subscribed(tr: Transient) -> None:
    """The scheduler (re)subscribed: reconciliation answers every task again, each told once."""
    tr.reconciliation_told.clear()


def take(tr: Transient) -> list[Notice]:
    """The notices not yet taken, oldest first."""
    told, tr.told = tr.told, []
    return [n if n.__class__ is Notice else Notice(_said(*n), False) for n in told]
