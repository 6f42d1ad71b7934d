"""A task's state, typed: Mesos' task states (parsed once, at the edge: ``tfmesos/mesos/events.py``),
and ``PENDING``, ours, for a task waiting for a placement; the ``StatusUpdate`` that brings one.

Values are Mesos' own names, so a state reads, prints and persists as Mesos writes it
(``TaskState`` is a ``StrEnum``: ``"TASK_RUNNING" == TaskState.TASK_RUNNING``).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class TaskState(StrEnum):
    PENDING = "PENDING"  # ours, not Mesos': waiting for a placement (never launched, or to be launched again)
    TASK_STAGING = "TASK_STAGING"  # launched; no agent has said anything yet
    TASK_STARTING = "TASK_STARTING"
    TASK_RUNNING = "TASK_RUNNING"
    TASK_KILLING = "TASK_KILLING"
    TASK_UNREACHABLE = "TASK_UNREACHABLE"  # its agent is partitioned away: it may come back
    TASK_FINISHED = "TASK_FINISHED"
    TASK_FAILED = "TASK_FAILED"
    TASK_KILLED = "TASK_KILLED"
    TASK_ERROR = "TASK_ERROR"  # the task was invalid
    TASK_LOST = "TASK_LOST"
    TASK_DROPPED = "TASK_DROPPED"
    TASK_GONE = "TASK_GONE"
    TASK_GONE_BY_OPERATOR = "TASK_GONE_BY_OPERATOR"
    TASK_UNKNOWN = "TASK_UNKNOWN"  # the master does not know it (reconciliation)

    @property
    def live(self) -> bool:
        return self in LIVE


# The states as module constants too: ``TaskState.X`` goes through the enum's class on every
# access (about 0.2 us in Python 3.11), and the core compares states per task, per event.
PENDING = TaskState.PENDING
TASK_STAGING, TASK_STARTING, TASK_RUNNING = TaskState.TASK_STAGING, TaskState.TASK_STARTING, TaskState.TASK_RUNNING
TASK_KILLING, TASK_UNREACHABLE = TaskState.TASK_KILLING, TaskState.TASK_UNREACHABLE
TASK_FINISHED, TASK_FAILED, TASK_KILLED = TaskState.TASK_FINISHED, TaskState.TASK_FAILED, TaskState.TASK_KILLED
TASK_ERROR, TASK_LOST, TASK_DROPPED = TaskState.TASK_ERROR, TaskState.TASK_LOST, TaskState.TASK_DROPPED
TASK_GONE, TASK_GONE_BY_OPERATOR = TaskState.TASK_GONE, TaskState.TASK_GONE_BY_OPERATOR

# A task in one of these may still run (or come back: UNREACHABLE); any other state but PENDING is an end.
LIVE = frozenset({TASK_STAGING, TASK_STARTING, TASK_RUNNING, TASK_KILLING, TASK_UNREACHABLE})
REPORTED = frozenset({TASK_STARTING, TASK_RUNNING})  # its executor runs: it can be told the ClusterSpec
STARTING_UP = frozenset({TASK_STAGING, TASK_STARTING})  # launched, not RUNNING yet: the startup timeout runs


class EndKind(StrEnum):
    """Who said that a task ended."""

    REPORTED = "reported"  # Mesos: a status update (from the executor, the agent or the master)
    STARTUP_TIMEOUT = "startup_timeout"  # the scheduler: not RUNNING within startup_timeout_seconds


@dataclass(frozen=True)
class StatusUpdate:
    task_id: str
    state: TaskState
    reason: str = ""
    message: str = ""
    agent_id: str = ""
    exit_code: int | None = None
    log_tail: str = ""
    exception: str = ""
    kind: EndKind = EndKind.REPORTED  # an end the scheduler decided says so here, not in its text
