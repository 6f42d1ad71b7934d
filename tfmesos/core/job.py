"""The job's lifecycle as a state machine over plain data.

Every method takes an event (offers, a status update, the clock) and returns the actions
the shell must carry out; nothing here does I/O, so the whole lifecycle (gang placement,
relaunch, whole-job restart, success and failure) is tested and benchmarked without Mesos.

Phases: PLACING (gathering offers for every pending task at once) -> RUNNING -> FINISHING
(killing what is left) -> SUCCEEDED | FAILED | KILLED (stopped on request: not a failure) | CLOSED
(a ``cluster()`` block left normally).
A whole-job restart goes back to PLACING.
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from .spec import TENSORBOARD, JobSpec, TaskKey
from . import restart
from .actions import (
    Action,
    Decline,
    Done,
    Kill,
    Launch,
    Persist,
    Reconcile,
    Revive,
    SendClusterSpec,
    Suppress,
    TaskLaunch,
)
from .hints import no_offer_hint
from .offers import Offer
from .fit import add, amounts, names_of
from .placement import Demand, Placement, place
from .queue import BEHIND_REFUSE_SECONDS, hold_limit, queue_timed_out
from .series import ProgressSeries
from .success import success_cause
from .status import Progress, StatusSnapshot, TaskStatus

PENDING = "PENDING"
LIVE = frozenset({"TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_UNREACHABLE"})
REPORTED = frozenset({"TASK_STARTING", "TASK_RUNNING"})

PLACING, RUNNING, FINISHING, SUCCEEDED, FAILED = "PLACING", "RUNNING", "FINISHING", "SUCCEEDED", "FAILED"
KILLED = "KILLED"  # stopped on request (tfmesos kill, a signal): not a failure
CLOSED = "CLOSED"  # a cluster() block closed normally: its servers' work was the caller's, done
ENDED_PHASES = (SUCCEEDED, FAILED, KILLED, CLOSED)  # a job in one of these is over
PHASES = (PLACING, RUNNING, FINISHING, *ENDED_PHASES)

# Offer filters: short while we still need resources (so they come back soon), long otherwise.
REFUSE_WHILE_PENDING = 2.0
REFUSE_WHEN_IDLE = 3600.0
KILL_RETRY_SECONDS = 5.0
# Explicit reconciliation is asked again for the tasks Mesos has not answered about, with backoff:
# after a master failover it answers nothing for an agent that has not re-registered, and only a
# later ask learns that its tasks are lost (Mesos' reconciliation guide).
RECONCILE_RETRY_SECONDS = 15.0
RECONCILE_RETRY_MAX_SECONDS = 240.0
NO_OFFER_NOTE_SECONDS = 15.0  # no offer at all by then: say why that may be, long before the placement timeout
EVENTS_KEPT = 200  # the newest events a persisted record keeps
FINISH_GRACE_SECONDS = 30.0
# How long a partial gang placement may sit on offers before giving them back (with jitter),
# so that two jobs that each hold half of a cluster cannot block each other forever.
HOLD_SECONDS = 8.0


def job_seed(name: str) -> int:
    """Seed of a job's backoff jitter: the same in every process (str hash() is salted per process)."""
    return zlib.crc32(name.encode()) & 0xFFFF


@dataclass
class TaskRecord:
    key: TaskKey
    state: str = PENDING
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


@dataclass(frozen=True)
class StatusUpdate:
    task_id: str
    state: str
    reason: str = ""
    message: str = ""
    agent_id: str = ""
    exit_code: int | None = None
    log_tail: str = ""
    exception: str = ""
    kind: restart.EndKind = restart.EndKind.REPORTED  # an end the scheduler decided says so here, not in its text


class NoSuchTask(ValueError):
    """A task asked for by name (ROLE:INDEX) that the job does not have, or a name that is not one."""


def task_names(tasks: Iterable[TaskKey], shown: int = 8) -> str:
    """Task names for a message naming what was expected: the first ``shown`` and how many more."""
    names = [str(key) for key in tasks]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return "one of " + ", ".join(names[:shown]) + more if names else "none (the job has no task)"


@dataclass
class Job:
    spec: JobSpec
    tasks: dict[TaskKey, TaskRecord] = field(default_factory=dict)
    phase: str = PLACING
    started_at: float = 0.0
    placing_since: float = 0.0
    finishing_since: float = 0.0
    job_restarts: int = 0
    spec_version: int = 0
    launch_seq: int = 0
    succeeded: bool | None = None
    ending: str = ""  # the phase FINISHING leads to: SUCCEEDED, FAILED or KILLED
    cause: str = ""
    events: list[str] = field(default_factory=list)
    # Transient (not persisted): offers held while gathering a gang, and placement diagnostics.
    held: dict[str, Offer] = field(default_factory=dict)
    held_since: float = 0.0
    hold_limit: float = HOLD_SECONDS
    largest_seen: Offer | None = None
    no_offer_noted: bool = False
    last_unplaced: tuple[TaskKey, ...] = ()
    suppressed: bool = False
    declined_in_backoff: bool = False
    done_emitted: bool = False
    placement_wait: float | None = None  # seconds the last gang placement took
    queued_since: float | None = None  # when the placing job was found queued (core/queue.py)
    queued: str = ""  # why it is queued, with the figures; "" when it is not
    behind: str = ""  # an older job still being placed, which this one gives its offers to
    reports: dict[TaskKey, dict[str, Any]] = field(default_factory=dict)  # tfmesos.report() values
    series: ProgressSeries = field(default_factory=ProgressSeries)  # the lead task's step and loss over time
    _by_task_id: dict[str, TaskKey] = field(default_factory=dict)
    _rng: random.Random = field(default_factory=lambda: random.Random(0))
    _spec_cache: dict[str, Any] | None = None  # the ClusterSpec message of spec_version
    # Success keys not seen TASK_FINISHED (a cache, rebuilt whenever it says none are left but a
    # scan disagrees): "all workers finished?" per update was O(tasks), a 1,000-worker job O(n^2).
    _unfinished_success: set[TaskKey] | None = None
    # Task ids asked about in the last explicit reconciliation that no update has answered yet.
    _unreconciled: set[str] = field(default_factory=set)
    _reconcile_at: float | None = None  # when to ask again (set at the first tick after start)
    _reconcile_delay: float = RECONCILE_RETRY_SECONDS
    # Set when one event changed tasks other than its own (a whole-job restart, peers restarted):
    # the journal's one-task entry would lose those changes, so the next write is the whole job.
    _others_changed: bool = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def new(cls, spec: JobSpec, now: float, seed: int = 0) -> "Job":
        job = cls(spec=spec, started_at=now, placing_since=now)
        job.tasks = {key: TaskRecord(key) for key in spec.task_keys()}
        job._rng = random.Random(seed)
        job.hold_limit = job._jittered_hold()
        return job

    def _jittered_hold(self) -> float:
        """Hold limits differ between jobs and attempts, so competing jobs do not release in step."""
        return HOLD_SECONDS * (0.5 + self._rng.random())

    @staticmethod
    def _durable(actions: list[Action], always: bool = False) -> list[Action]:
        """Persist first when the actions create what Mesos would not tell a restarted scheduler
        (a task id, a kill, the end), or when the caller's transition is such (``always``).
        Writing on every event would cost O(tasks) per event: RUNNING etc. are learnt again by
        reconciliation."""
        if always or any(isinstance(a, (Launch, Kill, Done)) for a in actions):
            return [Persist(), *actions]
        return actions

    def start(self) -> list[Action]:
        """First actions after (re)subscribing: ask for offers, reconcile what we launched."""
        live = tuple(r.task_id for r in self.tasks.values() if r.live)
        actions: list[Action] = [Persist(), Revive()]  # the framework id may be new
        self.suppressed = False
        if live:
            actions += [Reconcile(live), Reconcile(())]
        self._unreconciled, self._reconcile_at, self._reconcile_delay = set(live), None, RECONCILE_RETRY_SECONDS
        return actions

    @property
    def mode(self) -> str:
        """What the job is, in its framework's words (TensorFlow: parameter_server or collective)."""
        return self.spec.profile.mode(self.spec)

    @property
    def terminal(self) -> bool:
        return self.phase in ENDED_PHASES

    def end_note(self) -> str | None:
        """The event that said how the job is ending (None before it ends): a front-end that
        prints the end in its summary leaves this one out (one line per end)."""
        return _END_NOTES[self.ending] + self.cause if self.ending else None

    def _note(self, text: str) -> None:
        self.events.append(text)

    def _new_task_id(self, key: TaskKey) -> str:
        self.launch_seq += 1
        return f"{self.spec.service.name.replace('/', '_')}.{key.role}.{key.index}.{self.launch_seq}"

    # ------------------------------------------------------------------ offers
    def offers(self, offers: Iterable[Offer], now: float) -> list[Action]:
        return self._durable(self._offers(offers, now))

    def _offers(self, offers: Iterable[Offer], now: float) -> list[Action]:
        offers = list(offers)
        for o in offers:
            if self.largest_seen is None or (o.scalars.cpus, o.scalars.mem, o.scalars.gpus) > (
                self.largest_seen.scalars.cpus, self.largest_seen.scalars.mem, self.largest_seen.scalars.gpus
            ):
                self.largest_seen = o
        if self.phase == FINISHING or self.phase in ENDED_PHASES:
            return [Decline(tuple(o.id for o in offers), REFUSE_WHEN_IDLE)]
        if self.phase == PLACING and self.behind:
            # Submission order: an older job is still being placed; the offers go back to it.
            release, self.held = tuple(self.held) + tuple(o.id for o in offers), {}
            return [Decline(release, BEHIND_REFUSE_SECONDS)]
        if self.phase == PLACING:
            return self._gang(offers, now)
        return self._relaunch(offers, now)

    def rescinded(self, offer_id: str) -> None:
        self.held.pop(offer_id, None)

    def _demands(self, records: Iterable[TaskRecord]) -> list[Demand]:
        out = []
        for rec in records:
            role = self.spec.role(rec.key.role)
            assert role is not None
            prefer = rec.agent_id if rec.agent_id and rec.agent_id != rec.avoid_agent else None
            out.append(Demand(rec.key, role.demand, prefer, rec.port if prefer else None, rec.avoid_agent or None))
        return out

    def _gang(self, offers: list[Offer], now: float) -> list[Action]:
        waiting = [r for r in self.tasks.values() if r.state == PENDING]
        busy = any(r.live for r in self.tasks.values())
        if busy or not waiting or any(r.not_before > now for r in waiting):
            # Still killing the previous generation, or backing off: nothing to gather yet.
            # (tick revives when the backoff ends, which clears this short filter at once.)
            self.declined_in_backoff = bool(waiting)
            return [Decline(tuple(o.id for o in offers), REFUSE_WHILE_PENDING)]
        for o in offers:
            self.held[o.id] = o
        if not self.held_since:
            self.held_since = now
        placement = place(self._demands(waiting), self.held.values())
        if placement.complete:
            actions = self._launch(placement, now)
            used = placement.offers_used()
            unused = tuple(oid for oid in self.held if oid not in used)
            self.held.clear()
            self.held_since = 0.0
            self.phase = RUNNING
            self.placement_wait = now - min(self.placing_since, self.queued_since or now)
            self.queued_since, self.queued = None, ""
            if unused:
                actions.append(Decline(unused, REFUSE_WHEN_IDLE))
            actions += self._suppress_if_idle()
            return actions
        self.last_unplaced = placement.unplaced
        keep = placement.offers_used()
        release = tuple(oid for oid in self.held if oid not in keep)
        for oid in release:
            del self.held[oid]
        if not self.held:
            self.held_since = 0.0
        return [Decline(release, REFUSE_WHILE_PENDING)] if release else []

    def _relaunch(self, offers: list[Offer], now: float) -> list[Action]:
        pending = [r for r in self.tasks.values() if r.state == PENDING]
        ready = [r for r in pending if r.not_before <= now]
        if not ready:
            # Backing off: a short filter, or these offers would be gone when the backoff ends.
            refuse = REFUSE_WHILE_PENDING if pending else REFUSE_WHEN_IDLE
            self.declined_in_backoff = bool(pending)
            return [Decline(tuple(o.id for o in offers), refuse)] + self._suppress_if_idle()
        placement = place(self._demands(ready), offers)
        actions = self._launch(placement, now)
        used = placement.offers_used()
        unused = tuple(o.id for o in offers if o.id not in used)
        if unused:
            actions.append(Decline(unused, REFUSE_WHILE_PENDING if placement.unplaced else REFUSE_WHEN_IDLE))
        return actions + self._suppress_if_idle()

    def _launch(self, placement: Placement, now: float) -> list[Action]:
        per_offer: dict[str, list[TaskLaunch]] = {}
        offer_of: dict[str, tuple[str, str]] = {}
        moved: list[TaskKey] = []
        for a in placement.assignments:
            rec = self.tasks[a.key]
            old_endpoint = rec.endpoint
            rec.task_id = self._new_task_id(a.key)
            self._by_task_id[rec.task_id] = a.key
            rec.state, rec.agent_id, rec.hostname, rec.port = "TASK_STAGING", a.agent_id, a.hostname, a.port
            rec.launched_at, rec.spec_version_sent, rec.killing_since = now, 0, 0.0
            rec.avoid_agent = ""
            # The previous attempt's end is not this one's: shown again only once this one has ended.
            rec.exit_code, rec.reason, rec.message, rec.log_tail, rec.exception = None, "", "", "", ""
            if rec.endpoint != old_endpoint:
                moved.append(a.key)
            per_offer.setdefault(a.offer_id, []).append(TaskLaunch(a.key, rec.task_id, a.port, a.resources, rec.restarts))
            offer_of[a.offer_id] = (a.agent_id, a.hostname)
        if moved:
            self.spec_version += 1
        # Every address known now (the normal gang placement): the ClusterSpec goes in the TaskInfo,
        # which Mesos delivers with the task, unlike a best-effort framework message.
        spec = self.spec_message()
        if spec is not None:
            for launches in per_offer.values():
                for t in launches:
                    self.tasks[t.key].spec_version_sent = self.spec_version
        actions: list[Action] = [
            Launch(oid, offer_of[oid][0], offer_of[oid][1], tuple(ts), spec) for oid, ts in per_offer.items()
        ]
        if self.phase == RUNNING:
            # Relaunched tasks at new addresses: the framework says which running peers cannot use
            # them before they restart themselves (TensorFlow: a parameter-server job's chief).
            relaunched = [k for k in moved if self.tasks[k].restarts or self.tasks[k].requested_restarts]
            for peer in self.spec.profile.restart_when_moved(self.spec, relaunched) if relaunched else ():
                actions += self._restart_for_peer(peer.role, now, peer.why)
        return actions + self._sync_specs()

    def _suppress_if_idle(self) -> list[Action]:
        if self.suppressed or any(r.state == PENDING for r in self.tasks.values()) or self.held:
            return []
        self.suppressed = True
        return [Suppress()]

    # ------------------------------------------------------------------ cluster spec
    def cluster(self) -> dict[str, list[str]] | None:
        endpoints = {k: r.endpoint for k, r in self.tasks.items() if r.endpoint}
        if len(endpoints) < len(self.tasks):
            return None
        return self.spec.profile.cluster(endpoints | dict(self.spec.external))

    def spec_message(self) -> dict[str, Any] | None:
        # Endpoints only change in _launch, which then bumps spec_version: one message per version
        # (building it is O(tasks); per status update that would make a job O(tasks^2)).
        if self._spec_cache is not None and self._spec_cache["version"] == self.spec_version:
            return self._spec_cache
        cluster = self.cluster()
        if cluster is None:
            return None
        self._spec_cache = {"type": "clusterspec", "version": self.spec_version, "cluster": cluster}
        return self._spec_cache

    def _sync_specs(self, only: TaskRecord | None = None) -> list[Action]:
        """ClusterSpec messages for reported tasks behind the current version: every task after a
        launch; only the task that changed state after its status update (O(1) per update)."""
        message = self.spec_message()
        if message is None:
            return []
        actions: list[Action] = []
        for rec in (only,) if only is not None else self.tasks.values():
            if rec.state in REPORTED and rec.spec_version_sent < self.spec_version:
                rec.spec_version_sent = self.spec_version
                actions.append(SendClusterSpec(rec.task_id, rec.agent_id, message))
        return actions

    def executor_asks_spec(self, task_id: str) -> list[Action]:
        """An executor that has not heard of the ClusterSpec asks again (messages are best effort)."""
        key = self._by_task_id.get(task_id)
        message = self.spec_message()
        if key is None or message is None or self.tasks[key].task_id != task_id:
            return []
        rec = self.tasks[key]
        rec.spec_version_sent = self.spec_version
        return [SendClusterSpec(task_id, rec.agent_id, message)]

    # ------------------------------------------------------------------ status updates
    def key_of(self, task_id: str) -> TaskKey | None:
        return self._by_task_id.get(task_id)

    def attempts(self, key: TaskKey) -> list[str]:
        """Task ids of every launch of this task, oldest first (ids end with the launch sequence)."""
        ids = [tid for tid, k in self._by_task_id.items() if k == key]
        return sorted(ids, key=lambda tid: int(tid.rsplit(".", 1)[1]))

    def status(self, update: StatusUpdate, now: float) -> list[Action]:
        # A task's end is durable; while finishing only the end itself (Done) is: each task's last
        # update written would be O(tasks) per update, O(tasks^2) per job.
        terminal = update.state not in LIVE and self.phase != FINISHING
        return self._durable(self._status(update, now), terminal)

    def _status(self, update: StatusUpdate, now: float) -> list[Action]:
        self._unreconciled.discard(update.task_id)
        key = self._by_task_id.get(update.task_id)
        if key is None or self.tasks[key].task_id != update.task_id or self.tasks[key].state == PENDING:
            # An earlier attempt, or a task we never launched: make sure it does not linger.
            if update.state in LIVE and update.agent_id:
                return [Kill(update.task_id, update.agent_id)]
            return []
        rec = self.tasks[key]
        if rec.state not in LIVE:
            return []  # already terminal: a duplicate or a reconciliation echo
        if update.state in LIVE:
            rec.state = update.state
            if update.agent_id:
                rec.agent_id = update.agent_id
            return self._sync_specs(rec)
        return self._ended(rec, update, now)

    def _ended(self, rec: TaskRecord, update: StatusUpdate, now: float) -> list[Action]:
        staged = rec.state == "TASK_STAGING"  # its executor never started it (in an image: the image is at fault)
        rec.state = update.state
        rec.exit_code, rec.reason, rec.message, rec.exception = (update.exit_code, update.reason, update.message,
                                                                 update.exception)
        rec.log_tail = update.log_tail or rec.log_tail
        if self.phase == FINISHING:
            return self._maybe_done(now)
        if rec.relaunch_after_kill:
            rec.relaunch_after_kill = False
            rec.state = PENDING
            return self._revive()
        key = rec.key
        if update.state == "TASK_FINISHED" and self.spec.decides_success(key):
            if self._all_success_keys_finished(key):
                return self._finish(SUCCEEDED, success_cause(self.spec.success_keys), now)
            return []
        role = self.spec.role(key.role)
        assert role is not None
        ending = restart.Ending(update.state, update.reason, update.exit_code, kind=update.kind,
                                image=self.spec.image if staged else "", staged=staged)
        whole_job = self._restarts_whole_job(key)
        decision = restart.decide(
            role.restart_policy, ending, self._whole_job_restarts() if whole_job else rec.restarts, role.max_restarts,
            self.job_restarts, self.spec.policies.max_job_restarts, self.spec.policies.backoff_seconds,
            self.spec.policies.backoff_max_seconds, whole_job,
        )
        if not decision.retry:
            if ending.succeeded:
                return []  # e.g. MultiWorkerMirrored worker 1 done before worker 0
            if not self.spec.profile.essential(self.spec, key):  # e.g. TensorBoard: the training goes on
                self._note(f"{self._describe_failure(rec, decision.why)}; the job goes on without it")
                return []
            return self._finish(FAILED, self._describe_failure(rec, decision.why), now)
        return self._recover(rec, ending, decision.delay, now)

    def _describe_failure(self, rec: TaskRecord, why: str) -> str:
        parts = [f"{rec.key} ({rec.task_id}) ended {rec.state}"]
        if rec.exit_code is not None:
            parts.append(f"exit code {rec.exit_code}")
        if rec.reason:
            parts.append(rec.reason)
        if rec.exception or rec.message:  # the exception says why; the executor's message only how
            parts.append(rec.exception or repr(rec.message[:200]))
        return ", ".join(parts) + f"; not relaunched: {why}"

    # ------------------------------------------------------------------ recovery
    def _recover(self, rec: TaskRecord, ending: restart.Ending, delay: float, now: float) -> list[Action]:
        self.job_restarts += 1
        whole_job = self._restarts_whole_job(rec.key)
        number = (self._whole_job_restarts() if whole_job else rec.restarts) + 1
        self._note(
            f"{rec.key} {rec.state}{' ' + rec.reason if rec.reason else ''}"
            f"{'' if rec.exit_code is None else f' exit {rec.exit_code}'}"
            f"{f' ({rec.exception})' if rec.exception else ''}: "
            + (f"its launch never reached an agent: placed again in {delay:.1f}s" if ending.never_launched
               else f"relaunch #{number} in {delay:.1f}s")
            + (" with the whole job from its checkpoint" if whole_job else "")
        )
        self._requeue(rec, now + delay, avoid=ending.agent_lost, counted=not ending.never_launched)
        actions = self._restart_all_but(rec, now, now + delay) if whole_job else []
        return actions + self._revive()

    def _restarts_whole_job(self, key: TaskKey) -> bool:
        """A task whose loss the others cannot outlive (TensorFlow: all-reduce peers, parameter servers)."""
        return self.spec.profile.restarts_whole_job(self.spec, key)

    def _whole_job_restarts(self) -> int:
        """The whole-job restarts failures caused: each counted once, on the task that failed."""
        return sum(r.restarts for r in self.tasks.values() if self._restarts_whole_job(r.key))

    def _restart_all_but(self, rec: TaskRecord, now: float, not_before: float) -> list[Action]:
        """Back to PLACING with every other task: the whole job restarts from its checkpoint."""
        actions: list[Action] = []
        for other in self.tasks.values():
            if other is rec:
                continue
            other.not_before = not_before
            if other.live:
                actions += self._kill_for_relaunch(other, now)
            elif other.state != PENDING:
                other.state = PENDING  # e.g. a worker that had already finished
                self._others_changed = True
        self.phase = PLACING
        self.placing_since = now
        self.held_since = 0.0
        return actions

    def restart_task(self, key: TaskKey, now: float) -> list[Action]:
        return self._durable(self._restart_task(key, now), always=True)

    def _restart_task(self, key: TaskKey, now: float) -> list[Action]:
        """A person asked for this task to restart (``tfmesos restart``): kill it and relaunch it
        at once. Not a failure: no backoff, and neither restart limit is used. Where the task's
        loss takes the whole job down, the whole job restarts from its checkpoint.
        Raises ValueError (naming why) when the task cannot be restarted now."""
        rec = self.tasks.get(key)
        if rec is None:
            raise NoSuchTask(f"{key}: no such task in this job: expected {task_names(self.tasks)}")
        if self.phase != RUNNING:
            raise ValueError(f"the job is {self.phase}: only a task of a RUNNING job can be restarted")
        if not rec.live or rec.relaunch_after_kill:
            raise ValueError(f"{key} is {rec.state}{' (already restarting)' if rec.relaunch_after_kill else ''}: "
                             "only a running task can be restarted")
        rec.requested_restarts += 1
        whole_job = self._restarts_whole_job(key)
        self._note(f"{key}: restart asked for by a person"
                   f"{' (the whole job restarts from its checkpoint)' if whole_job else ''}")
        actions = self._kill_for_relaunch(rec, now)
        if whole_job:
            actions += self._restart_all_but(rec, now, now)
        return actions

    def report(self, task_id: str, values: dict[str, Any], now: float) -> None:
        """Progress a task reported (tfmesos.report): the latest values of its current attempt."""
        key = self._by_task_id.get(task_id)
        if key is not None and self.tasks[key].task_id == task_id:
            self.reports[key] = {**self.reports.get(key, {}), **values, "at": now}
            if not self.spec.success_keys or key == self.spec.success_keys[0]:  # the task progress() shows
                self.series.add(now, self.reports[key])

    def progress(self) -> dict[str, Any] | None:
        """The job's progress: what the task that decides success reported, else the latest report."""
        keys = self.spec.success_keys  # none for a cluster of servers (tfmesos.cluster)
        lead = self.reports.get(keys[0]) if keys else None
        if lead is None and self.reports:
            lead = max(self.reports.values(), key=lambda r: r["at"])
        if lead is None:
            return None
        out = dict(lead)
        step, total = out.get("step"), out.get("total_steps")
        if isinstance(step, (int, float)) and isinstance(total, (int, float)) and total > 0:
            out["fraction"] = min(1.0, step / total)
        return out

    def _requeue(self, rec: TaskRecord, not_before: float, avoid: bool, counted: bool = True) -> None:
        rec.restarts += counted
        rec.state = PENDING
        rec.not_before = not_before
        rec.avoid_agent = rec.agent_id if avoid else ""

    def _kill_for_relaunch(self, rec: TaskRecord, now: float) -> list[Action]:
        self._others_changed = True  # for the journal: conservative (the event's own task too)
        rec.relaunch_after_kill = True
        rec.killing_since = now
        return [Kill(rec.task_id, rec.agent_id)]

    def _restart_for_peer(self, role: str, now: float, why: str) -> list[Action]:
        actions: list[Action] = []
        for rec in self.tasks.values():
            if rec.key.role == role and rec.live and not rec.relaunch_after_kill:
                self._note(f"{rec.key}: restarting from its checkpoint because {why}")
                actions += self._kill_for_relaunch(rec, now)
        return actions

    def _revive(self) -> list[Action]:
        if self.suppressed:
            self.suppressed = False
            return [Revive()]
        return []

    # ------------------------------------------------------------------ the end
    def _finish(self, end: str, cause: str, now: float) -> list[Action]:
        if self.phase == FINISHING or self.phase in ENDED_PHASES:
            return []
        self.phase, self.finishing_since = FINISHING, now
        self.ending, self.succeeded, self.cause = end, end == SUCCEEDED, cause
        self._note(_END_NOTES[end] + cause)
        actions: list[Action] = []
        if self.held:
            actions.append(Decline(tuple(self.held), REFUSE_WHEN_IDLE))
            self.held.clear()
        for rec in self.tasks.values():
            if rec.live:
                rec.killing_since = now
                actions.append(Kill(rec.task_id, rec.agent_id))
        if not self.suppressed:
            self.suppressed = True
            actions.append(Suppress())
        return actions + self._maybe_done(now)

    def _all_success_keys_finished(self, finished: TaskKey) -> bool:
        left = self._unfinished_success
        if left is not None:
            left.discard(finished)
            if left:
                return False
        left = self._unfinished_success = {k for k in self.spec.success_keys if self.tasks[k].state != "TASK_FINISHED"}
        return not left

    def _maybe_done(self, now: float, force: bool = False) -> list[Action]:
        if self.phase != FINISHING or (not force and any(r.live for r in self.tasks.values())):
            return []
        self.phase = self.ending
        if self.done_emitted:
            return []
        self.done_emitted = True
        return [Done(self.ending, self.cause)]

    def abort(self, why: str, now: float) -> list[Action]:
        """End the job as FAILED for a reason outside its tasks (e.g. an executor of another
        protocol): kill everything."""
        return self._durable(self._finish(FAILED, why, now), always=True)

    def stop(self, why: str, now: float, end: str = KILLED) -> list[Action]:
        """Stop the job on request (tfmesos kill, a signal, a closed cluster()): kill everything,
        end KILLED, or the end the caller knows (tfrun: how worker 0, run outside Mesos, ended).
        A job already ending keeps the end it has."""
        if end not in ENDED_PHASES:
            raise ValueError(f"a job ends {', '.join(ENDED_PHASES)}, not {end!r}")
        return self._durable(self._finish(end, why, now), always=True)

    def waiting_for(self) -> str:
        """What a stopping job still waits for, for a person who asks again (a second Ctrl-C)."""
        if self.phase in ENDED_PHASES:
            return "nothing of the job: it has ended"
        live = [f"{r.key} {r.state}" for r in self.tasks.values() if r.live]
        if not live:
            return "nothing of the job: no task is running"
        shown = ", ".join(live[:5]) + (f" and {len(live) - 5} more" if len(live) > 5 else "")
        return f"{len(live)} task(s) to end: {shown}"

    # ------------------------------------------------------------------ the clock
    def tick(self, now: float) -> list[Action]:
        return self._durable(self._tick(now))

    def _tick(self, now: float) -> list[Action]:
        actions: list[Action] = []
        pol = self.spec.policies
        if self.phase == FINISHING:
            for rec in self.tasks.values():
                if rec.live and now - rec.killing_since >= KILL_RETRY_SECONDS:
                    rec.killing_since = now
                    actions.append(Kill(rec.task_id, rec.agent_id))
            if now - self.finishing_since >= FINISH_GRACE_SECONDS:
                actions += self._maybe_done(now, force=True)
            return actions
        if self.terminal:
            return actions
        if pol.active_deadline_seconds and now - self.started_at >= pol.active_deadline_seconds:
            return self._finish(FAILED, f"active_deadline_seconds ({pol.active_deadline_seconds:g}s) exceeded", now)
        if self.phase == PLACING and (why := queue_timed_out(self.queued_since, now, pol.queue_timeout_seconds)):
            return self._finish(FAILED, why, now)
        if self.phase == PLACING and now - self.placing_since >= pol.placement_timeout_seconds:
            if self.queued_since is None:
                return self._finish(FAILED, self.explain_unplaced(), now)
            self.placing_since = now  # queued: this attempt ends, the next one gathers again
        if self.phase == PLACING and self.largest_seen is None and not self.no_offer_noted and (
                now - self.placing_since >= NO_OFFER_NOTE_SECONDS):
            self.no_offer_noted = True
            self._note(f"still waiting after {NO_OFFER_NOTE_SECONDS:g} s: " + no_offer_hint(self.spec.gpus_needed))
        if self.held and now - self.held_since >= self._hold_for(now):
            # Give a partial gang back so a competing job can complete; try again after a jittered pause.
            actions.append(Decline(tuple(self.held), REFUSE_WHILE_PENDING + self._rng.random() * 3))
            self.held.clear()
            self.held_since = 0.0
            self.hold_limit = self._jittered_hold()
        for rec in list(self.tasks.values()):
            if rec.state in ("TASK_STAGING", "TASK_STARTING") and not rec.relaunch_after_kill and (
                now - rec.launched_at >= pol.startup_timeout_seconds
            ):
                task_id, agent_id = rec.task_id, rec.agent_id
                actions.append(Kill(task_id, agent_id))
                actions += self._ended(
                    rec,
                    StatusUpdate(task_id, "TASK_FAILED", message=f"startup timeout: not RUNNING after {pol.startup_timeout_seconds:g}s",
                                 kind=restart.EndKind.STARTUP_TIMEOUT),
                    now,
                )
            elif rec.relaunch_after_kill and rec.live and now - rec.killing_since >= KILL_RETRY_SECONDS:
                rec.killing_since = now
                actions.append(Kill(rec.task_id, rec.agent_id))
        actions += self._reconcile_again(now)
        if any(r.state == PENDING and r.not_before <= now for r in self.tasks.values()):
            if self.declined_in_backoff:
                # Offers were refused while backing off: REVIVE clears that filter at once.
                self.declined_in_backoff = False
                self.suppressed = False
                actions.append(Revive())
            else:
                actions += self._revive()
        return actions

    def _reconcile_again(self, now: float) -> list[Action]:
        """Ask again about the live tasks Mesos has not answered about since ``start``."""
        if not self._unreconciled:
            return []
        if self._reconcile_at is None:
            self._reconcile_at = now + self._reconcile_delay
            return []
        if now < self._reconcile_at:
            return []
        live = {r.task_id for r in self.tasks.values() if r.live}
        self._unreconciled &= live
        if not self._unreconciled:
            return []
        self._reconcile_delay = min(self._reconcile_delay * 2, RECONCILE_RETRY_MAX_SECONDS)
        self._reconcile_at = now + self._reconcile_delay
        return [Reconcile(tuple(sorted(self._unreconciled)))]

    def next_deadline(self, now: float) -> float:
        """When ``tick`` has something to do next (the shell sleeps until then, or an event)."""
        pol = self.spec.policies
        times = [now + 5.0]
        if pol.active_deadline_seconds:
            times.append(self.started_at + pol.active_deadline_seconds)
        if self.phase == PLACING:
            times.append(self.placing_since + pol.placement_timeout_seconds)
        if self.held:
            times.append(self.held_since + self._hold_for(now))
        if self.queued_since is not None and pol.queue_timeout_seconds:
            times.append(self.queued_since + pol.queue_timeout_seconds)
        if self.phase == FINISHING:
            times.append(self.finishing_since + FINISH_GRACE_SECONDS)
        if self._unreconciled and self._reconcile_at is not None:
            times.append(self._reconcile_at)
        for rec in self.tasks.values():
            if rec.state == PENDING and rec.not_before > now:
                times.append(rec.not_before)
            elif rec.state in ("TASK_STAGING", "TASK_STARTING"):
                times.append(rec.launched_at + pol.startup_timeout_seconds)
        return max(now, min(times))

    # ------------------------------------------------------------------ held back by quota
    def pending_demand(self) -> dict[str, float]:
        """Every resource of the tasks waiting for a placement, by name (executors included)."""
        total: dict[str, float] = {}
        for rec in self.tasks.values():
            if rec.state == PENDING:
                role = self.spec.role(rec.key.role)
                assert role is not None
                add(total, role.demand)
        return total

    def held_totals(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for o in self.held.values():
            add(total, o.scalars)
        return total

    def queue(self, reason: str, now: float) -> None:
        """The placing job fits the cluster but waits for room (core/queue.py): say so when it starts
        waiting or why changes kind, and keep the figures for the status."""
        if self.phase != PLACING:
            return
        if self.queued_since is None or reason.split(":")[0] != self.queued.split(":")[0]:
            self._note(reason)
        self.queued_since = now if self.queued_since is None else self.queued_since
        self.queued = reason

    def wait_behind(self, older: str) -> list[Action]:
        """Give offers back while ``older`` (a job submitted earlier) is being placed ("": none);
        when it no longer is, REVIVE clears the filters of the offers given back."""
        was, self.behind = self.behind, older if self.phase == PLACING else ""
        if was and not self.behind:
            self.suppressed = False
            return [Revive()]
        return []

    def _hold_for(self, now: float) -> float:
        return hold_limit(self.hold_limit, now - self.queued_since if self.queued_since is not None else 0.0)

    # ------------------------------------------------------------------ reporting
    def explain_unplaced(self) -> str:
        waiting = [r.key for r in self.tasks.values() if r.state == PENDING]
        unplaced = self.last_unplaced or tuple(waiting)
        lines = [f"job cannot be placed within placement_timeout_seconds ({self.spec.policies.placement_timeout_seconds:g}s)"]
        per_role: dict[str, int] = {}
        for key in unplaced:
            per_role[key.role] = per_role.get(key.role, 0) + 1
        for role_name in self.spec.profile.role_order:
            if role_name in per_role:
                role = self.spec.role(role_name)
                assert role is not None
                d = role.demand
                lines.append(
                    f"{role_name}: {per_role[role_name]} of {role.count} task(s) unplaced, each needs "
                    f"{amounts(d)}, 1 port (executor included)"
                )
        o = self.largest_seen
        if o is None:
            lines.append(no_offer_hint(self.spec.gpus_needed))
        else:
            lines.append(
                f"largest offer seen: agent {o.agent_id} ({o.hostname}) "
                f"{amounts(o.scalars, names_of(o.scalars, *(r.demand for r in self.spec.roles)), zeros=True)}, "
                f"{o.port_count} ports"
            )
        return "; ".join(lines)

    def snapshot(self) -> StatusSnapshot:
        progress = self.progress()
        same_name = {f: getattr(self, f) for f in ("phase", "mode", "succeeded", "cause", "job_restarts", "started_at",
                                                   "placement_wait", "queued", "queued_since")}
        rank = self.spec.profile.rank
        ordered = sorted(self.tasks.values(), key=lambda r: (rank(r.key.role), r.key.index))
        return StatusSnapshot(
            name=self.spec.service.name, clusterspec_version=self.spec_version, **same_name,
            progress=Progress.from_json(progress) if progress is not None else None,
            series=tuple((at, step, loss) for at, step, loss in self.series.to_list()),
            tasks=tuple(self._task_status(r) for r in ordered), tensorboard=self._tensorboard(),
            events=tuple(self.events[-50:]))

    def _task_status(self, r: TaskRecord) -> TaskStatus:
        report = self.reports.get(r.key)
        return TaskStatus(role=r.key.role, index=r.key.index, task_id=r.task_id, endpoint=r.endpoint,
                          agent_id=r.agent_id, state=r.state, restarts=r.restarts,
                          requested_restarts=r.requested_restarts, exit_code=r.exit_code, reason=r.reason,
                          message=r.message, exception=r.exception,
                          progress=Progress.from_json(report) if report is not None else None)

    def _tensorboard(self) -> str | None:
        rec = self.tasks.get(TaskKey(TENSORBOARD, 0))
        return rec.endpoint if rec is not None and rec.state == "TASK_RUNNING" else None

    # ------------------------------------------------------------------ persistence
    def take_others_changed(self) -> bool:
        """Whether tasks besides the one an event was about changed since the last call (the job
        store's journal policy asks before appending a one-task entry)."""
        changed, self._others_changed = self._others_changed, False
        return changed

    def own_fields(self) -> dict[str, Any]:
        """The job's fields but its tasks, task ids and events (what a journal entry carries)."""
        return {
            "phase": self.phase,
            "started_at": self.started_at,
            "placing_since": self.placing_since,
            "finishing_since": self.finishing_since,
            "job_restarts": self.job_restarts,
            "spec_version": self.spec_version,
            "launch_seq": self.launch_seq,
            "succeeded": self.succeeded,
            "ending": self.ending,
            "cause": self.cause,
            "suppressed": self.suppressed,
        }

    def task_dict(self, key: TaskKey) -> dict[str, Any]:
        # Every field but the key is a plain value: a shallow copy (asdict deep-copies, and this
        # runs on every durable event: 18 ms of a 1,000-task job's write went there).
        rec = self.tasks[key]
        return {**vars(rec), "key": [rec.key.role, rec.key.index]}

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.own_fields(),
            "events": self.events[-EVENTS_KEPT:],
            "tasks": [self.task_dict(key) for key in self.tasks],
            "task_ids": {tid: [k.role, k.index] for tid, k in self._by_task_id.items()},
            "series": self.series.to_list(),
        }

    @classmethod
    def from_dict(cls, spec: JobSpec, data: dict[str, Any], seed: int = 0) -> "Job":
        job = cls.new(spec, data["started_at"], seed)
        for name in ("phase", "placing_since", "finishing_since", "job_restarts", "spec_version", "launch_seq",
                     "succeeded", "cause", "events"):
            setattr(job, name, data[name])
        for raw in data["tasks"]:
            key = TaskKey(raw["key"][0], raw["key"][1])
            if key in job.tasks:
                job.tasks[key] = TaskRecord(**{**raw, "key": key})
        job._by_task_id = {tid: TaskKey(k[0], k[1]) for tid, k in data["task_ids"].items()}
        # Records written before KILLED existed have no "ending": theirs followed "succeeded".
        job.ending = data.get("ending") or (SUCCEEDED if job.succeeded else FAILED if job.succeeded is False else "")
        # Offers never survive a reconnection, and after a restart we must ask again.
        job.suppressed = False
        job.series = ProgressSeries.from_list(data.get("series"))  # records before format 4 have none
        return job


# The event that says how the job is ending. A stop on request is no failure: its cause says it
# all ("stopped by SIGINT (Ctrl-C)", "cluster closed").
_END_NOTES = {SUCCEEDED: "succeeded: ", FAILED: "failed: ", KILLED: "", CLOSED: ""}
