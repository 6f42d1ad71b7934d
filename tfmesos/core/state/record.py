"""A job's state as plain data: the record persisted whole, and the transient state kept apart;
each field with the one core module that writes it.

``JobState`` is what the job store writes (``core/job/codec.py``) and a restarted scheduler reads
back; ``Transient`` is what lives only as long as the scheduler's process: offers held, placement
diagnostics, caches, the reconciliation in flight. The decision modules (``core/job/``: ``gang``,
``recovery``, ``timers``, ``finishing``, ``cluster_spec_sync``, ``reconciliation``, ``view``) take
both and return the actions the shell carries out; ``core/job/job.py`` binds them into the ``Job``
the shell uses.

Owners: every field names the module that writes it (``owned``; a record of one owner says so
once, ``OWNER``), and nothing else writes it: the others ask that module (a function there) to.
``tests/test_state_owners.py`` finds any write elsewhere. A field without a writer is set when the
state is made (``new``, ``core/job/codec.py``'s ``restore``) and never after.
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ..phase import ENDED_PHASES, PLACING, JobPhase
from ..placement import offer_hold
from ..placement.offer_hold import OfferHold
from ..placement.offer_interest import OfferInterest
from ..placement.maintenance import InverseOffer
from ..placement.offers import Offer
from ..spec import JobSpec, TaskKey
from .series import ProgressSeries
from .tasks import TaskRecord

if TYPE_CHECKING:
    from ..task_state import StatusUpdate
    from .notices import Notice

# Explicit reconciliation is asked again for the tasks Mesos has not answered about, with backoff:
# after a master failover it answers nothing for an agent that has not re-registered, and only a
# later ask learns that its tasks are lost (Mesos' reconciliation guide).
RECONCILE_RETRY_SECONDS = 15.0

MADE = "state.record"  # written when the state is made, never after


def owned(by: str, **default: Any) -> Any:
    """A field written by the core module ``by`` alone (``job.gang``: tfmesos/core/job/gang.py)."""
    return field(metadata={"owner": by}, **default)


def job_seed(name: str) -> int:
    """Seed of a job's backoff jitter: the same in every process (str hash() is salted per process)."""
    return zlib.crc32(name.encode()) & 0xFFFF


class NoSuchTask(ValueError):
    """A task asked for by name (ROLE:INDEX) that the job does not have, or a name that is not one."""


def task_names(tasks: Iterable[TaskKey], shown: int = 8) -> str:
    """Task names for a message naming what was expected: the first ``shown`` and how many more."""
    names = [str(key) for key in tasks]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return "one of " + ", ".join(names[:shown]) + more if names else "none (the job has no task)"


@dataclass
class JobState:
    """What the job store persists, whole (core/job/codec.py): a restarted scheduler goes on from it."""

    spec: JobSpec = owned("job.update")  # tfmesos update: the options the job runs with now
    tasks: dict[TaskKey, TaskRecord] = owned("job.update", default_factory=dict)  # which; each record's fields: state/tasks.py
    phase: JobPhase = owned("phase", default=PLACING)
    started_at: float = owned(MADE, default=0.0)
    placing_since: float = owned("phase", default=0.0)
    finishing_since: float = owned("phase", default=0.0)
    job_restarts: int = owned("job.recovery", default=0)
    cluster_spec_version: int = owned("job.cluster_spec_sync", default=0)  # persisted as spec_version
    launch_seq: int = owned("state.tasks", default=0)
    succeeded: bool | None = owned("job.finishing", default=None)
    ending: JobPhase | None = owned("job.finishing", default=None)  # the end FINISHING leads to
    cause: str = owned("job.finishing", default="")
    events: list[str] = owned("state.notices", default_factory=list)
    series: ProgressSeries = owned("job.view", default_factory=ProgressSeries)  # the lead task's step and loss over time
    by_task_id: dict[str, TaskKey] = owned("state.tasks", default_factory=dict)  # every attempt's task id

    @property
    def mode(self) -> str:
        """What the job is, in its framework's words (TensorFlow: parameter_server or collective)."""
        return self.spec.profile.mode(self.spec)

    @property
    def terminal(self) -> bool:
        return self.phase in ENDED_PHASES


@dataclass
class Transient:
    """What lives only as long as the scheduler's process: never persisted, rebuilt after a restart."""

    hold: OfferHold = owned(MADE, default_factory=OfferHold)  # offers held while gathering a gang
    interest: OfferInterest = owned(MADE, default_factory=OfferInterest)  # SUPPRESS, REVIVE, filters
    rng: random.Random = owned(MADE, default_factory=lambda: random.Random(0))
    # Placement diagnostics, and the queue.
    largest_seen: Offer | None = owned("job.gang", default=None)
    no_offer_noted: bool = owned("job.gang", default=False)
    last_unplaced: tuple[TaskKey, ...] = owned("job.gang", default=())
    placement_wait: float | None = owned("job.gang", default=None)  # seconds the last gang placement took
    queued_since: float | None = owned("job.gang", default=None)  # when the placing job was found queued
    queued: str = owned("job.gang", default="")  # why it is queued, with the figures; "" when it is not
    behind: str = owned("job.gang", default="")  # an older job still being placed, which this one gives way to
    done_emitted: bool = owned("job.finishing", default=False)
    live_while_finishing: set[TaskKey] | None = owned("job.finishing", default=None)  # a cache: the tasks to end
    # What the job has told that the front-end has not taken yet (a task's state as Mesos said it
    # is kept as it came, composed when taken), and the reconciliation answers told since subscribing.
    told: list[Notice | tuple[TaskKey, StatusUpdate]] = owned("state.notices", default_factory=list)
    reconciliation_told: set[str] = owned("state.notices", default_factory=set)
    reports: dict[TaskKey, dict[str, Any]] = owned("job.view", default_factory=dict)  # tfmesos.report() values
    cluster_spec_cache: dict[str, Any] | None = owned("job.cluster_spec_sync", default=None)  # of cluster_spec_version
    # Success keys not seen TASK_FINISHED (a cache, rebuilt whenever it says none are left but a
    # scan disagrees): "all workers finished?" per update was O(tasks), a 1,000-worker job O(n^2).
    unfinished_success: set[TaskKey] | None = owned("job.recovery", default=None)
    # Set when one event changed tasks other than its own (a whole-job restart, peers restarted):
    # the journal's one-task entry would lose those changes, so the next write is the whole job.
    others_changed: bool = owned("job.recovery", default=False)
    # Task ids asked about in the last explicit reconciliation that no update has answered yet.
    unreconciled: set[str] = owned("job.reconciliation", default_factory=set)
    reconcile_at: float | None = owned("job.reconciliation", default=None)  # when to ask again
    reconcile_delay: float = owned("job.reconciliation", default=RECONCILE_RETRY_SECONDS)
    # Mesos' inverse offers (a machine wanted back for a maintenance window), the newest per agent id,
    # until the job has left that machine and accepted it.
    inverse_offers: dict[str, InverseOffer] = owned("job.maintenance", default_factory=dict)
    # Agents leaving the cluster (draining, deactivated): agent id -> why ("agent h1 draining").
    # Nothing is placed on them; learnt from the tasks' updates and the master's agents.
    leaving: dict[str, str] = owned("job.planned_stop", default_factory=dict)


def new(spec: JobSpec, now: float, seed: int = 0) -> tuple[JobState, Transient]:
    """A job that starts now: every task pending, its jitter seeded with ``seed``."""
    state = JobState(spec=spec, tasks={key: TaskRecord(key) for key in spec.task_keys()}, started_at=now,
                     placing_since=now)
    return state, new_transient(seed)


def new_transient(seed: int) -> Transient:
    """The transient state of a job (new, or loaded after a restart): nothing held, nothing known."""
    rng = random.Random(seed)
    hold = OfferHold()
    offer_hold.new_limit(hold, rng)
    return Transient(hold=hold, rng=rng)
