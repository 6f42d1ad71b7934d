"""Each task's record, and every change to one: launched, reported, ended, killed, queued again.
The one module that writes a ``TaskRecord`` (and the job's task ids: ``launch_seq``, ``by_task_id``),
so a task's life reads in one place; the decision modules say which change, and when."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..spec import TaskKey
from ..task_state import LIVE, PENDING, TASK_STAGING, StatusUpdate, TaskState

if TYPE_CHECKING:
    from .record import JobState


@dataclass
class TaskRecord:
    OWNER: ClassVar[str] = "state.tasks"  # the one module that writes its fields (tests/test_state_owners.py)

    key: TaskKey
    state: TaskState = PENDING
    task_id: str = ""
    agent_id: str = ""
    hostname: str = ""
    port: int = 0
    restarts: int = 0
    not_before: float = 0.0
    launched_at: float = 0.0
    cluster_spec_version_sent: int = 0  # persisted as spec_version_sent (core/job/codec.py)
    killing_since: float = 0.0
    relaunch_after_kill: bool = False
    avoid_agent: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    log_tail: str = ""
    exception: str = ""  # the exception line of the traceback that ended its last attempt (core/tensorflow/tracebacks.py)
    requested_restarts: int = 0  # asked for by a person: no failure, no restart limit used
    restarts_with_job: int = 0  # whole-job restarts another task's failure relaunched it in (shown with restarts)
    failed_with: str = ""  # the exception line of the failure that relaunched it last (its own, or the whole job's)
    planned_stops: int = 0  # relaunches after a planned stop (a drain, an update): no failure, no restart limit used
    stopping: str = ""  # the planned stop it was told of (why: "agent h1 draining"); "" when none

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def endpoint(self) -> str:
        return f"{self.hostname}:{self.port}" if self.hostname else ""


def launch(job: JobState, rec: TaskRecord, agent_id: str, hostname: str, port: int, now: float) -> bool:
    """A new attempt of ``rec``'s task, with a new task id, at agent:port; whether its address moved."""
    old_endpoint = rec.endpoint
    job.launch_seq += 1
    rec.task_id = f"{job.spec.service.name.replace('/', '_')}.{rec.key.role}.{rec.key.index}.{job.launch_seq}"
    job.by_task_id[rec.task_id] = rec.key
    rec.state, rec.agent_id, rec.hostname, rec.port = TASK_STAGING, agent_id, hostname, port
    rec.launched_at, rec.cluster_spec_version_sent, rec.killing_since = now, 0, 0.0
    rec.avoid_agent, rec.stopping = "", ""
    # The previous attempt's end is not this one's: shown again only once this one has ended.
    rec.exit_code, rec.reason, rec.message, rec.log_tail, rec.exception = None, "", "", "", ""
    return rec.endpoint != old_endpoint


def reported(rec: TaskRecord, update: StatusUpdate) -> None:
    """A live state of the current attempt (STARTING, RUNNING, ...)."""
    rec.state = update.state
    if update.agent_id:
        rec.agent_id = update.agent_id


def ended(rec: TaskRecord, update: StatusUpdate) -> None:
    """The current attempt ended: its state and what it said."""
    rec.state = update.state
    rec.exit_code, rec.reason, rec.message, rec.exception = update.exit_code, update.reason, update.message, update.exception
    rec.log_tail = update.log_tail or rec.log_tail


def cluster_spec_sent(rec: TaskRecord, version: int) -> None:
    rec.cluster_spec_version_sent = version


def kill_sent(rec: TaskRecord, now: float) -> None:
    """A kill was sent (again, while it lives on): the next retry waits from now."""
    rec.killing_since = now


def kill_for_relaunch(rec: TaskRecord, now: float) -> None:
    """Killed to be launched again (a person's restart, a peer's, the whole job's): its end is no
    failure. ``now``: when the kill was sent (later: when it is due, for a task left to end by itself)."""
    rec.relaunch_after_kill = True
    rec.killing_since = now


def killed_for_relaunch(rec: TaskRecord) -> None:
    """The kill for a relaunch is confirmed: it waits for a placement."""
    rec.relaunch_after_kill = False
    rec.state = PENDING


def requeue(rec: TaskRecord, not_before: float, avoid: bool, counted: bool = True) -> None:
    """Relaunched after its end, not before ``not_before`` (``avoid``: elsewhere than its last agent;
    ``counted``: against its restart limit, a failure's relaunch, whose exception line it keeps)."""
    rec.restarts += counted
    if counted:
        rec.failed_with = rec.exception
    rec.state = PENDING
    rec.not_before = not_before
    rec.avoid_agent = rec.agent_id if avoid else ""


def hold_back(rec: TaskRecord, not_before: float) -> bool:
    """A whole-job restart: not launched before ``not_before``; an ended task waits again. Whether
    its state changed."""
    rec.not_before = not_before
    if not rec.live and rec.state != PENDING:
        rec.state = PENDING  # e.g. a worker that had already finished
        return True
    return False


def restarted_with_job(rec: TaskRecord, failed_with: str) -> None:
    """Relaunched in a whole-job restart that another task's failure (ending with ``failed_with``) caused."""
    rec.restarts_with_job += 1
    rec.failed_with = failed_with


def restart_asked(rec: TaskRecord) -> None:
    """A person asked for this task to restart (``tfmesos restart``)."""
    rec.requested_restarts += 1


def stop_planned(rec: TaskRecord, why: str) -> None:
    """Told of a planned stop (core/job/planned_stop.py): its end that follows is no failure."""
    rec.stopping = why


def planned_end(rec: TaskRecord, avoid: bool, now: float) -> None:
    """Its planned stop is over: launched again at once, counted apart (``avoid``: elsewhere than
    its last agent, which leaves)."""
    rec.planned_stops += 1
    rec.state, rec.not_before, rec.stopping, rec.relaunch_after_kill = PENDING, now, "", False
    rec.avoid_agent = rec.agent_id if avoid else ""


def forget(job: JobState, keys: set[TaskKey]) -> None:
    """Tasks an update removed: their attempts' ids are the job's no more (a late update of one
    finds no task, and a live attempt is killed, core/job/recovery.py)."""
    for task_id in [tid for tid, key in job.by_task_id.items() if key in keys]:
        del job.by_task_id[task_id]
