"""The job's phases, and the one function that moves a job from one to another (``move``), by
the table of allowed moves (``MOVES``); any other move is an ``IllegalMove`` naming from, to and why.

    PLACING ──the gang placed──> RUNNING ──a whole-job restart──> PLACING
       │  └─a new attempt (queued; a whole-job restart)─┘ │
       └──────────── the job ends ─────────> FINISHING <──┘
                                                │ no task live (or the grace is over)
                                                v
                               SUCCEEDED | FAILED | KILLED | CLOSED

PLACING gathers offers for every pending task at once; RUNNING relaunches tasks one by one;
FINISHING kills what is left; the four ends are final (KILLED: stopped on request, not a failure;
CLOSED: a ``cluster()`` block left normally). Entering PLACING or FINISHING stamps when.
"""
from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state.record import JobState


class JobPhase(StrEnum):
    PLACING = "PLACING"
    RUNNING = "RUNNING"
    FINISHING = "FINISHING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    KILLED = "KILLED"  # stopped on request (tfmesos kill, a signal): not a failure
    CLOSED = "CLOSED"  # a cluster() block closed normally: its servers' work was the caller's, done

    @property
    def ended(self) -> bool:
        return self in ENDED_PHASES


# Module constants too: an enum member looked up on its class costs about 0.2 us (Python 3.11),
# and phases are compared on every event.
PLACING, RUNNING, FINISHING = JobPhase.PLACING, JobPhase.RUNNING, JobPhase.FINISHING
SUCCEEDED, FAILED, KILLED, CLOSED = JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.KILLED, JobPhase.CLOSED
ENDED_PHASES = (SUCCEEDED, FAILED, KILLED, CLOSED)  # a job in one of these is over
PHASES = tuple(JobPhase)

_ENDS = "no task is live any more (or FINISHING's grace is over): the end FINISHING was for"
MOVES: dict[tuple[JobPhase, JobPhase], str] = {
    (PLACING, RUNNING): "the gang is placed: every pending task launched at once",
    (PLACING, PLACING): "a new placement attempt: a queued job past placement_timeout_seconds, or a whole-job "
                        "restart while placing",
    (RUNNING, PLACING): "a whole-job restart: every task placed again, from the checkpoint",
    (PLACING, FINISHING): "the job ends while placing (a timeout, a failure, a stop): what is left is killed",
    (RUNNING, FINISHING): "the job ends (success, failure, a stop): what is left is killed",
    (FINISHING, SUCCEEDED): _ENDS,
    (FINISHING, FAILED): _ENDS,
    (FINISHING, KILLED): _ENDS,
    (FINISHING, CLOSED): _ENDS,
}


class IllegalMove(ValueError):
    """A move the table does not allow: a bug in the caller, reported with what it tried."""

    def __init__(self, from_: JobPhase, to: JobPhase, reason: str):
        allowed = sorted(str(b) for a, b in MOVES if a == from_)
        super().__init__(f"the job cannot move from {from_} to {to} ({reason}): from {from_} it moves to "
                         + (", ".join(allowed) if allowed else "nothing (it has ended)"))
        self.from_, self.to, self.reason = from_, to, reason


def move(job: JobState, to: JobPhase, now: float, reason: str) -> None:
    """Move ``job`` to ``to`` because of ``reason``; entering PLACING or FINISHING stamps ``now``."""
    if (job.phase, to) not in MOVES:
        raise IllegalMove(job.phase, to, reason)
    job.phase = to
    if to == PLACING:
        job.placing_since = now
    elif to == FINISHING:
        job.finishing_since = now
