"""A job's state as plain data: the record persisted whole, and the transient state kept apart.

``JobState`` is what the job store writes (``core/job/codec.py``) and a restarted scheduler reads
back; ``Transient`` is what lives only as long as the scheduler's process: offers held, placement
diagnostics, caches, the reconciliation in flight. The decision modules (``core/job/``: ``gang``,
``recovery``, ``timers``, ``finishing``, ``cluster_spec_sync``, ``view``) take both and return the
actions the shell carries out; ``core/job/job.py`` binds them into the ``Job`` the shell uses.
The phases and their moves are ``phase.py``'s.
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..placement.offers import Offer
from ..spec import JobSpec, TaskKey
from ..task_state import LIVE, PENDING, TaskState
from ..phase import ENDED_PHASES, PLACING, JobPhase
from .series import ProgressSeries

# How long a partial gang placement may sit on offers before giving them back (with jitter),
# so that two jobs that each hold half of a cluster cannot block each other forever.
HOLD_SECONDS = 8.0
# Explicit reconciliation is asked again for the tasks Mesos has not answered about, with backoff:
# after a master failover it answers nothing for an agent that has not re-registered, and only a
# later ask learns that its tasks are lost (Mesos' reconciliation guide).
RECONCILE_RETRY_SECONDS = 15.0


def job_seed(name: str) -> int:
    """Seed of a job's backoff jitter: the same in every process (str hash() is salted per process)."""
    return zlib.crc32(name.encode()) & 0xFFFF


@dataclass
class TaskRecord:
    key: TaskKey
    state: TaskState = PENDING
    task_id: str = ""
    agent_id: str = ""
    hostname: str = ""
    port: int = 0
    restarts: int = 0
    not_before: float = 0.0
    launched_at: float = 0.0
    spec_version_sent: int = 0
    killing_since: float = 0.0
    relaunch_after_kill: bool = False
    avoid_agent: str = ""
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    log_tail: str = ""
    exception: str = ""  # the exception line of the traceback that ended its last attempt (core/tracebacks.py)
    requested_restarts: int = 0  # asked for by a person: no failure, no restart limit used

    @property
    def live(self) -> bool:
        return self.state in LIVE

    @property
    def endpoint(self) -> str:
        return f"{self.hostname}:{self.port}" if self.hostname else ""


class NoSuchTask(ValueError):
    """A task asked for by name (ROLE:INDEX) that the job does not have, or a name that is not one."""


def task_names(tasks: Iterable[TaskKey], shown: int = 8) -> str:
    """Task names for a message naming what was expected: the first ``shown`` and how many more."""
    names = [str(key) for key in tasks]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return "one of " + ", ".join(names[:shown]) + more if names else "none (the job has no task)"


@dataclass
class JobState:
    """What the job store persists, whole (core/job_codec.py): a restarted scheduler goes on from it."""

    spec: JobSpec
    tasks: dict[TaskKey, TaskRecord] = field(default_factory=dict)
    phase: JobPhase = PLACING
    started_at: float = 0.0
    placing_since: float = 0.0
    finishing_since: float = 0.0
    job_restarts: int = 0
    spec_version: int = 0
    launch_seq: int = 0
    succeeded: bool | None = None
    ending: JobPhase | None = None  # the phase FINISHING leads to: SUCCEEDED, FAILED, KILLED or CLOSED
    cause: str = ""
    events: list[str] = field(default_factory=list)
    series: ProgressSeries = field(default_factory=ProgressSeries)  # the lead task's step and loss over time
    by_task_id: dict[str, TaskKey] = field(default_factory=dict)  # every attempt's task id (the record's task_ids)

    @property
    def mode(self) -> str:
        """What the job is, in its framework's words (TensorFlow: parameter_server or collective)."""
        return self.spec.profile.mode(self.spec)

    @property
    def terminal(self) -> bool:
        return self.phase in ENDED_PHASES

    def note(self, text: str) -> None:
        self.events.append(text)


@dataclass
class Transient:
    """What lives only as long as the scheduler's process: never persisted, rebuilt after a restart."""

    # Offers held while gathering a gang, and placement diagnostics.
    held: dict[str, Offer] = field(default_factory=dict)
    held_since: float = 0.0
    hold_limit: float = HOLD_SECONDS
    largest_seen: Offer | None = None
    no_offer_noted: bool = False
    last_unplaced: tuple[TaskKey, ...] = ()
    # Written in the record for its readers, but a loaded job asks for offers again (False).
    suppressed: bool = False
    declined_in_backoff: bool = False
    done_emitted: bool = False
    placement_wait: float | None = None  # seconds the last gang placement took
    queued_since: float | None = None  # when the placing job was found queued (core/queue.py)
    queued: str = ""  # why it is queued, with the figures; "" when it is not
    behind: str = ""  # an older job still being placed, which this one gives its offers to
    reports: dict[TaskKey, dict[str, Any]] = field(default_factory=dict)  # tfmesos.report() values
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    spec_cache: dict[str, Any] | None = None  # the ClusterSpec message of spec_version
    # Success keys not seen TASK_FINISHED (a cache, rebuilt whenever it says none are left but a
    # scan disagrees): "all workers finished?" per update was O(tasks), a 1,000-worker job O(n^2).
    unfinished_success: set[TaskKey] | None = None
    # Task ids asked about in the last explicit reconciliation that no update has answered yet.
    unreconciled: set[str] = field(default_factory=set)
    reconcile_at: float | None = None  # when to ask again (set at the first tick after start)
    reconcile_delay: float = RECONCILE_RETRY_SECONDS
    # Set when one event changed tasks other than its own (a whole-job restart, peers restarted):
    # the journal's one-task entry would lose those changes, so the next write is the whole job.
    others_changed: bool = False
