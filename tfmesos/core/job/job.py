"""The job's lifecycle as a state machine over plain data: the ``Job`` the shell drives.

Every method takes an event (offers, a status update, the clock) and returns the actions the
shell must carry out; nothing here does I/O, so the whole lifecycle (gang placement, relaunch,
whole-job restart, success and failure) is tested and benchmarked without Mesos.

A ``Job`` is its persisted record (``core/job_state.JobState``) plus its ``transient`` state, and
each method hands both to the module that decides: ``gang`` (offers), ``recovery`` (status
updates, restarts), ``timers`` (the clock, reconciliation), ``ending``, ``spec_sync`` (the
ClusterSpec), ``job_view`` (progress, the snapshot) and ``job_codec`` (the record). What is left
here is when a decision is made durable (``_durable``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from . import cluster_spec_sync, codec, finishing, gang, recovery, timers, view
from ..actions import Action, Done, Kill, Launch, Persist
from ..phase import FAILED, FINISHING, KILLED, JobPhase
from ..state.record import JobState, TaskRecord, Transient
from ..task_state import LIVE, StatusUpdate
from ..placement.offers import Offer
from ..spec import JobSpec, TaskKey
from ..status import StatusSnapshot


@dataclass
class Job(JobState):
    transient: Transient = field(default_factory=Transient)

    @classmethod
    def new(cls, spec: JobSpec, now: float, seed: int = 0) -> "Job":
        job = cls(spec=spec, started_at=now, placing_since=now)
        job.tasks = {key: TaskRecord(key) for key in spec.task_keys()}
        job.transient.rng = random.Random(seed)
        job.transient.hold_limit = gang.jittered_hold(job.transient.rng)
        return job

    @staticmethod
    def _durable(actions: list[Action], always: bool = False) -> list[Action]:
        """Persist first when the actions create what Mesos would not tell a restarted scheduler
        (a task id, a kill, the end), or when the caller's transition is such (``always``).
        Writing on every event would cost O(tasks) per event: RUNNING etc. are learnt again by
        reconciliation."""
        if always or any(isinstance(a, (Launch, Kill, Done)) for a in actions):
            return [Persist(), *actions]
        return actions

    # ------------------------------------------------------------------ events
    def start(self) -> list[Action]:
        """First actions after (re)subscribing: ask for offers, reconcile what we launched."""
        return timers.start(self, self.transient)

    def offers(self, offers: Iterable[Offer], now: float) -> list[Action]:
        return self._durable(gang.offers(self, self.transient, offers, now))

    def rescinded(self, offer_id: str) -> None:
        gang.rescinded(self.transient, offer_id)

    def status(self, update: StatusUpdate, now: float) -> list[Action]:
        # A task's end is durable; while finishing only the end itself (Done) is: each task's last
        # update written would be O(tasks) per update, O(tasks^2) per job.
        terminal = update.state not in LIVE and self.phase != FINISHING
        return self._durable(recovery.status(self, self.transient, update, now), terminal)

    def tick(self, now: float) -> list[Action]:
        return self._durable(timers.tick(self, self.transient, now))

    def next_deadline(self, now: float) -> float:
        """When ``tick`` has something to do next (the shell sleeps until then, or an event)."""
        return timers.next_deadline(self, self.transient, now)

    def restart_task(self, key: TaskKey, now: float) -> list[Action]:
        """A person's restart of one task (recovery.restart_task says what it does and refuses)."""
        return self._durable(recovery.restart_task(self, self.transient, key, now), always=True)

    def abort(self, why: str, now: float) -> list[Action]:
        """End the job as FAILED for a reason outside its tasks (e.g. an executor of another
        protocol): kill everything."""
        return self._durable(finishing.finish(self, self.transient, FAILED, why, now), always=True)

    def stop(self, why: str, now: float, end: str = KILLED) -> list[Action]:
        """Stop the job on request (tfmesos kill, a signal, a closed cluster()): kill everything,
        end KILLED, or the end the caller knows (tfrun: how worker 0, run outside Mesos, ended).
        A job already ending keeps the end it has."""
        return self._durable(finishing.stop(self, self.transient, why, now, end), always=True)

    def executor_asks_spec(self, task_id: str) -> list[Action]:
        return cluster_spec_sync.executor_asks_spec(self, self.transient, task_id)

    def report(self, task_id: str, values: dict[str, Any], now: float) -> None:
        view.report(self, self.transient, task_id, values, now)

    # ------------------------------------------------------------------ held back by quota
    def pending_demand(self) -> dict[str, float]:
        return gang.pending_demand(self)

    def held_totals(self) -> dict[str, float]:
        return gang.held_totals(self.transient)

    def queue(self, reason: str, now: float) -> None:
        gang.queue(self, self.transient, reason, now)

    def wait_behind(self, older: str) -> list[Action]:
        return gang.wait_behind(self, self.transient, older)

    # ------------------------------------------------------------------ questions
    def end_note(self) -> str | None:
        return finishing.end_note(self)

    def waiting_for(self) -> str:
        return finishing.waiting_for(self)

    def explain_unplaced(self) -> str:
        return gang.explain_unplaced(self, self.transient)

    def cluster(self) -> dict[str, list[str]] | None:
        return cluster_spec_sync.cluster(self)

    def spec_message(self) -> dict[str, Any] | None:
        return cluster_spec_sync.spec_message(self, self.transient)

    def key_of(self, task_id: str) -> TaskKey | None:
        return self.by_task_id.get(task_id)

    def attempts(self, key: TaskKey) -> list[str]:
        """Task ids of every launch of this task, oldest first (ids end with the launch sequence)."""
        ids = [tid for tid, k in self.by_task_id.items() if k == key]
        return sorted(ids, key=lambda tid: int(tid.rsplit(".", 1)[1]))

    def progress(self) -> dict[str, Any] | None:
        return view.progress(self, self.transient)

    def snapshot(self) -> StatusSnapshot:
        return view.snapshot(self, self.transient)

    # ------------------------------------------------------------------ persistence
    def take_others_changed(self) -> bool:
        """Whether tasks besides the one an event was about changed since the last call (the job
        store's journal policy asks before appending a one-task entry)."""
        changed, self.transient.others_changed = self.transient.others_changed, False
        return changed

    def own_fields(self) -> dict[str, Any]:
        return codec.own_fields(self, self.transient)

    def task_dict(self, key: TaskKey) -> dict[str, Any]:
        return codec.task_dict(self, key)

    def to_dict(self) -> dict[str, Any]:
        return codec.to_dict(self, self.transient)

    @classmethod
    def from_dict(cls, spec: JobSpec, data: dict[str, Any], seed: int = 0) -> "Job":
        job = cls.new(spec, data["started_at"], seed)
        codec.restore(job, job.transient, data)
        return job
