"""The job's lifecycle as a state machine over plain data: the ``Job`` the shell drives.

Every method takes an event (offers, a status update, the clock) and returns the actions the
shell must carry out; nothing here does I/O, so the whole lifecycle (gang placement, relaunch,
whole-job restart, success and failure) is tested and benchmarked without Mesos.

A ``Job`` holds its persisted record (``core/state/record.py``'s ``JobState``) and its transient
state, and each method hands both to the module that decides: ``gang`` (offers), ``recovery``
(status updates, restarts), ``timers`` (the clock), ``reconciliation``, ``finishing`` (the end),
``cluster_spec_sync`` (the ClusterSpec), ``view`` (progress, the snapshot) and ``codec`` (the
record). What is left here is when a decision is made durable (``_durable``), and the questions
the shell, the store and the front-ends ask: they read the job through these, and write nothing
of it (tests/test_state_owners.py).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..actions import Action, Done, Kill, Launch, Persist
from ..phase import FAILED, FINISHING, KILLED, JobPhase
from ..placement import offer_hold
from ..placement.maintenance import InverseOffer
from ..placement.offers import Offer
from ..spec import JobSpec, TaskKey
from ..state import notices, record
from ..state.record import JobState, Transient
from ..state.tasks import TaskRecord
from ..status import StatusSnapshot
from ..task_state import LIVE, StatusUpdate
from . import cluster_spec_sync, codec, finishing, gang, maintenance, planned_stop, recovery, timers, update, view
from .spec_diff import SpecDiff


class Job:
    """One job: its record and transient state, the events that change them, the questions about them."""

    __slots__ = ("_state", "_tr")

    def __init__(self, state: JobState, transient: Transient):
        self._state, self._tr = state, transient

    @classmethod
    def new(cls, spec: JobSpec, now: float, seed: int = 0) -> "Job":
        return cls(*record.new(spec, now, seed))

    @classmethod
    def from_dict(cls, spec: JobSpec, data: dict[str, Any], seed: int = 0) -> "Job":
        return cls(codec.restore(spec, data), record.new_transient(seed))

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
        return timers.start(self._state, self._tr)

    def offers(self, offers: Iterable[Offer], now: float) -> list[Action]:
        return self._durable(gang.offers(self._state, self._tr, offers, now))

    def rescinded(self, offer_id: str) -> None:
        offer_hold.rescind(self._tr.hold, offer_id)

    def offers_gone(self) -> None:
        """The connection to the master dropped: no held offer can be used any more."""
        offer_hold.release_all(self._tr.hold)

    def status(self, update: StatusUpdate, now: float) -> list[Action]:
        # A task's end is durable; while finishing only the end itself (Done) is: each task's last
        # update written would be O(tasks) per update, O(tasks^2) per job.
        terminal = update.state not in LIVE and self._state.phase != FINISHING
        return self._durable(recovery.status(self._state, self._tr, update, now), terminal)

    def tick(self, now: float) -> list[Action]:
        return self._durable(timers.tick(self._state, self._tr, now) + self._maintenance(
            maintenance.tick(self._state, self._tr, now)))

    def next_deadline(self, now: float) -> float:
        """When ``tick`` has something to do next (the shell sleeps until then, or an event)."""
        deadline = timers.next_deadline(self._state, self._tr, now)
        window = maintenance.next_deadline(self._state, self._tr, now)
        return deadline if window is None else min(deadline, window)

    def inverse_offers(self, offers: Iterable[InverseOffer], now: float) -> list[Action]:
        """Mesos wants machines back for maintenance windows (core/job/maintenance.py): the job's
        tasks there move at a checkpoint once the window is within the margin; a machine the job
        has left is given back."""
        return self._durable(self._maintenance(maintenance.inverse_offers(self._state, self._tr, offers, now)))

    def inverse_offer_rescinded(self, inverse_offer_id: str) -> None:
        maintenance.rescinded(self._tr, inverse_offer_id)

    def _maintenance(self, actions: list[Action]) -> list[Action]:
        if any(isinstance(a, Kill) for a in actions):  # a planned stop told peers too: write the whole job
            recovery.changed_others(self._tr)
        return actions

    def restart_task(self, key: TaskKey, now: float) -> list[Action]:
        """A person's restart of one task (recovery.restart_task says what it does and refuses)."""
        return self._durable(recovery.restart_task(self._state, self._tr, key, now), always=True)

    def update(self, spec: JobSpec, now: float) -> tuple[SpecDiff, list[Action]]:
        """Run ``spec`` from now on (tfmesos update): what it changes, and the actions; raises
        ``update.UpdateRefused`` naming each field that cannot change, or why not now."""
        diff, actions = update.update(self._state, self._tr, spec, now)
        return diff, self._durable(actions, always=True)

    def plan_update(self, spec: JobSpec) -> SpecDiff:
        """What ``update`` would change and restart, changing nothing (tfmesos update --dry-run)."""
        return update.plan(self._state, spec)

    def stop_gracefully(self, keys: Iterable[TaskKey], why: str, now: float, kind: str = planned_stop.UPDATE
                        ) -> list[Action]:
        """Stop these tasks at a checkpoint and relaunch them, no failure counted (``tfmesos
        update``, a graceful restart): each is told, then killed with its stop grace; the peers
        its mode needs are told too and save with it (core/job/planned_stop.py). Raises ValueError
        (naming why) when the job is not RUNNING or a task is not live."""
        actions = planned_stop.stop_gracefully(self._state, self._tr, keys, why, now, kind)
        recovery.changed_others(self._tr)
        return self._durable(actions, always=True)

    def agents_leaving(self, leaving: Mapping[str, tuple[str, str]], now: float) -> list[Action]:
        """The master's agents that are draining or deactivated now (agent id -> (hostname,
        "draining" or "deactivated")): nothing is placed on them; the job's tasks on a draining one
        stop at a checkpoint (Mesos kills them), the peers their mode needs are told."""
        actions = planned_stop.agents_leaving(self._state, self._tr, leaving, now)
        if actions:
            recovery.changed_others(self._tr)
        return self._durable(actions, always=bool(actions))

    @property
    def leaving_agents(self) -> Mapping[str, str]:
        """The agents nothing is placed on (agent id -> why)."""
        return self._tr.leaving

    def abort(self, why: str, now: float) -> list[Action]:
        """End the job as FAILED for a reason outside its tasks (e.g. an executor of another
        protocol): kill everything."""
        return self._durable(finishing.finish(self._state, self._tr, FAILED, why, now), always=True)

    def stop(self, why: str, now: float, end: JobPhase | str = KILLED) -> list[Action]:
        """Stop the job on request (tfmesos kill, a signal, a closed cluster()): kill everything,
        end KILLED, or the end the caller knows (tfrun: how worker 0, run outside Mesos, ended).
        A job already ending keeps the end it has."""
        return self._durable(finishing.stop(self._state, self._tr, why, now, end), always=True)

    def executor_asks_cluster_spec(self, task_id: str) -> list[Action]:
        return cluster_spec_sync.executor_asks_cluster_spec(self._state, self._tr, task_id)

    def report(self, task_id: str, values: dict[str, Any], now: float) -> None:
        view.report(self._state, self._tr, task_id, values, now)

    # ------------------------------------------------------------------ held back by quota
    def pending_demand(self) -> dict[str, float]:
        return gang.pending_demand(self._state)

    def held_totals(self) -> dict[str, float]:
        return offer_hold.totals(self._tr.hold)

    def queue(self, reason: str, now: float) -> None:
        gang.queue(self._state, self._tr, reason, now)

    def wait_behind(self, older: str) -> list[Action]:
        return gang.wait_behind(self._state, self._tr, older)

    # ------------------------------------------------------------------ questions
    @property
    def spec(self) -> JobSpec:
        return self._state.spec

    @property
    def phase(self) -> JobPhase:
        return self._state.phase

    @property
    def terminal(self) -> bool:
        return self._state.terminal

    @property
    def tasks(self) -> Mapping[TaskKey, TaskRecord]:
        """Every task's record, in the job's order (read them; state/tasks.py changes them)."""
        return self._state.tasks

    @property
    def events(self) -> Sequence[str]:
        """The job's events, oldest first."""
        return self._state.events

    @property
    def mode(self) -> str:
        """What the job is, in its framework's words (TensorFlow: parameter_server or collective)."""
        return self._state.mode

    @property
    def succeeded(self) -> bool | None:
        """Whether the job succeeded (None before it ends)."""
        return self._state.succeeded

    @property
    def cause(self) -> str:
        """Why the job ends ("" before it does)."""
        return self._state.cause

    @property
    def ending(self) -> JobPhase | None:
        """The end FINISHING leads to (None before the job ends)."""
        return self._state.ending

    @property
    def started_at(self) -> float:
        return self._state.started_at

    @property
    def placing_since(self) -> float:
        return self._state.placing_since

    @property
    def launch_seq(self) -> int:
        """How many attempts were launched, all tasks together (0: nothing ever was)."""
        return self._state.launch_seq

    @property
    def job_restarts(self) -> int:
        return self._state.job_restarts

    @property
    def cluster_spec_version(self) -> int:
        """The version of the ClusterSpec the tasks are told (a new one whenever a launch moved a task)."""
        return self._state.cluster_spec_version

    @property
    def last_unplaced(self) -> tuple[TaskKey, ...]:
        """The tasks the last placement round could not place (none tried yet: empty)."""
        return self._tr.last_unplaced

    @property
    def behind(self) -> str:
        """The older job being placed that this one gives its offers to ("": none)."""
        return self._tr.behind

    def progress_of(self, key: TaskKey) -> dict[str, Any] | None:
        """What the task last reported (tfmesos.report), merged over its reports."""
        return self._tr.reports.get(key)

    def end_note(self) -> str | None:
        """The event that says how the job ends (None before it does)."""
        ending = self._state.ending
        return notices.end_text(ending, self._state.cause) if ending is not None else None

    def take_notices(self) -> list[notices.Notice]:
        """What the job has told since the last call, for the front-end, oldest first: each of
        its events, and each task's state as Mesos said it (notices.py composes them all)."""
        return notices.take(self._tr)

    def waiting_for(self) -> str:
        return finishing.waiting_for(self._state)

    def explain_unplaced(self) -> str:
        return gang.explain_unplaced(self._state, self._tr)

    def cluster(self) -> dict[str, list[str]] | None:
        return cluster_spec_sync.cluster(self._state)

    def cluster_spec_message(self) -> dict[str, Any] | None:
        return cluster_spec_sync.cluster_spec_message(self._state, self._tr)

    def key_of(self, task_id: str) -> TaskKey | None:
        return self._state.by_task_id.get(task_id)

    def attempts(self, key: TaskKey) -> list[str]:
        """Task ids of every launch of this task, oldest first (ids end with the launch sequence)."""
        ids = [tid for tid, k in self._state.by_task_id.items() if k == key]
        return sorted(ids, key=lambda tid: int(tid.rsplit(".", 1)[1]))

    def progress(self) -> dict[str, Any] | None:
        return view.progress(self._state, self._tr)

    def snapshot(self) -> StatusSnapshot:
        return view.snapshot(self._state, self._tr)

    # ------------------------------------------------------------------ persistence
    def take_others_changed(self) -> bool:
        """Whether tasks besides the one an event was about changed since the last call (the job
        store's journal policy asks before appending a one-task entry)."""
        return recovery.take_others_changed(self._tr)

    def own_fields(self) -> dict[str, Any]:
        return codec.own_fields(self._state, self._tr)

    def task_dict(self, key: TaskKey) -> dict[str, Any]:
        return codec.task_dict(self._state, key)

    def to_dict(self) -> dict[str, Any]:
        return codec.to_dict(self._state, self._tr)

    # ------------------------------------------------------------------ for the core's tests
    @property
    def state(self) -> JobState:
        """The record itself, for tests of the core (outside the core, the questions above)."""
        return self._state

    @property
    def transient(self) -> Transient:
        """The transient state itself, for tests of the core (outside the core, the questions above)."""
        return self._tr
