"""The scheduler's shell around one core ``Job``: Mesos events (plain, from ``mesos.driver``'s
adapter) and the clock go in, under one lock; the core decides; its actions go out to Mesos
through the adapter, after the job is recorded in its store when the core asks for it. Besides
obeying the core, the shell keeps two policies of its own: how long it waits for a lost master
(service.failover_timeout) and when it asks the master whether a held-back job can ever fit and
what holds it (queue_watch.py; core/placement's fit.py, queue.py and quota.py judge the answer).

``JobShell`` holds what its parts share (the job, its lock, the connection, the result) and takes
a person's requests; each concern is a module of its own:

- ``shell_events.py``: Mesos events in (the adapter's ``JobEvents``);
- ``shell_actions.py``: the core's actions out, the job recorded first;
- ``shell_clock.py``: the loop that drives the core's timers, the lost master, the loop's health;
- ``output_catchup.py``: the streamed task's output, every line once;
- ``task_places.py``: where each attempt ran and where each agent is (for the logs).

Thread model: pymesos delivers events on its IO thread; the runner's thread waits for the
next deadline and calls ``tick``. Both go through one lock, ``cond``.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..core import actions as act
from ..core.job.job import Job
from ..core.job.spec_diff import SpecDiff
from ..core.phase import KILLED, JobPhase
from ..core.spec import JobSpec, TaskKey
from ..core.state.record import NoSuchTask, task_names
from ..core.status import StatusSnapshot
from ..mesos.driver import MesosAdapter
from ..mesos.taskinfo import ExecutorSettings
from ..store.job_store import JobStore
from ..store.state_store import ZK_AUTH_ENV
from . import shell_clock
from .metrics import JobMetrics
from .output_catchup import StreamedOutput
from .queue_watch import ClusterProbe, QueueWatch, QuotaProbe
from .shell_actions import ActionRunner
from .shell_events import MesosEvents
from .task_logs import Attempt, TaskLogs
from .task_places import TaskPlaces

# /v1/health fails once the loop that drives the job (run_until_done) has not turned for this long:
# it turns at least every second unless something holds the job's lock (a wedged callback).
LOOP_STALE_SECONDS = 30.0


def ignore(*_: Any) -> None:
    """A hook that does nothing."""


@dataclass(frozen=True)
class Hooks:
    """What the shell tells its front-end: notable events, a task's output lines (the task that
    decides success streams them), a task's reported progress."""

    event: Callable[[str], None] = ignore
    output: Callable[[str, list[str]], None] = ignore
    progress: Callable[[str, dict[str, Any]], None] = ignore
    # The event saying how the job ends, with that end (None: an event like the others).
    end_note: Callable[[str, str], None] | None = None


class JobShell:
    """One job's imperative shell: ``mesos`` (the adapter pymesos calls) brings events in,
    ``run_until_done`` drives the clock, ``request_stop``/``restart`` are a person's requests."""

    def __init__(self, job: Job, settings: ExecutorSettings, store: JobStore,
                 framework_id: str | None = None, hooks: Hooks = Hooks(), clock: Callable[[], float] = time.time,
                 quota_probe: QuotaProbe | None = None, cluster_probe: ClusterProbe | None = None):
        self.job, self.settings, self.store, self.framework_id = job, settings, store, framework_id
        self.hooks, self.clock = hooks, clock
        service = job.spec.service
        self.queue = (QueueWatch(quota_probe, cluster_probe, service.mesos_roles, lambda: self.framework_id)
                      if quota_probe or cluster_probe else None)
        self.cond = threading.Condition()  # the job's lock: every event, the clock and a person's request take it
        self.done = threading.Event()
        self.result: act.Done | None = None
        # The master: subscribed now, ever, lost since when; an ERROR it sent (Mesos sends one
        # only for what no retry fixes, and closes the stream after it).
        self.connected = self.subscribed_once = False
        self.disconnected_at: float | None = None
        self.lost_noted = 0.0  # when "no Mesos master for ..." was said last
        self.refusal: str | None = None
        self.persist_error: str | None = None
        self.stop_cause: str | None = None  # why a person asked the job to stop (request_stop)
        self.stop_end: JobPhase | str = KILLED  # and the end it asked for
        self.loop_turned: float | None = None  # time.monotonic() of the loop's last turn (None: not started)
        self.loop_stale_seconds = LOOP_STALE_SECONDS
        # The parts, each a concern of its own (see the module).
        self.actions = ActionRunner(self)
        self.events = MesosEvents(self)
        self.mesos = MesosAdapter(self.events, service.revocable)
        self.places = TaskPlaces(lambda: self.mesos.master)
        self.attempt_agents, self.agent_addresses = self.places.attempt_agents, self.places.agent_addresses
        self.logs = TaskLogs(self._attempts, self.places.agent_address, lambda: self.framework_id)
        self.output = StreamedOutput(self)
        self.metrics = JobMetrics(self.snapshot)

    @property
    def spec(self) -> JobSpec:
        return self.job.spec

    @property
    def driver(self) -> Any:
        """The pymesos driver the adapter calls (set by whoever starts it, or by SUBSCRIBED)."""
        return self.mesos.driver

    @driver.setter
    def driver(self, driver: Any) -> None:
        self.mesos.driver = driver

    def finish(self, result: act.Done) -> None:
        """The run ends with ``result`` (the job's end, or the shell's: the master, the store). Under the lock."""
        self.result = result
        self.done.set()
        self.cond.notify_all()

    def lost_master(self, now: float) -> None:
        """The connection to the master dropped (shell_clock waits for it). Under the lock."""
        self.connected = False
        if self.disconnected_at is None:
            self.disconnected_at = self.lost_noted = now

    # ------------------------------------------------------------------ the clock (shell_clock.py)
    def run_until_done(self) -> act.Done:
        """Drive timers until the job reaches its end (or the master gives up on us)."""
        return shell_clock.run_until_done(self)

    def loop_health(self) -> tuple[bool, str]:
        """(healthy, why not) for /v1/health."""
        return shell_clock.loop_health(self)

    # ------------------------------------------------------------------ a person's requests
    def request_stop(self, why: str, end: JobPhase | str = KILLED) -> None:
        """Stop the job (it ends ``end``, KILLED by default, unless it is ending already); the first
        reason given stays."""
        with self.cond:
            if self.stop_cause is None:
                self.stop_cause, self.stop_end = why, end
            self.cond.notify_all()

    def snapshot(self) -> StatusSnapshot:
        """The job's status with what only the scheduler knows (GET /v1/status serves it)."""
        with self.cond:
            return dataclasses.replace(self.job.snapshot(), framework_id=self.framework_id, connected=self.connected,
                                       now=self.clock(), master=self.mesos.master)

    def restart(self, task: str) -> str:
        """``tfmesos restart ROLE:INDEX``: raises ValueError naming why it cannot be done."""
        key = parse_task_key(task)
        with self.cond:
            self.actions.apply(self.job.restart_task(key, self.clock()))
            self.metrics.restart_requested(key)
        return f"{key} is being killed and will be relaunched"

    def update(self, spec: JobSpec, options: dict[str, Any], dry_run: bool = False) -> SpecDiff:
        """``tfmesos update``: run the job with ``spec`` (from ``options``) from now on, recorded
        first; raises ``UpdateRefused`` naming each option that cannot change, or why not now.
        ``dry_run``: only what it would change and restart."""
        with self.cond:
            if dry_run:
                return self.job.plan_update(spec)
            self.job.plan_update(spec)  # refused: nothing recorded
            self.store.updated(options)
            if spec.python != self.spec.python and spec.python:
                self.settings = dataclasses.replace(self.settings, python=spec.python)
            diff, actions = self.job.update(spec, self.clock())
            self.actions.apply(actions)
            if self.store.persists and not self.store.env_kept and any(c.field.endswith(".env") for c in diff.changes):
                self.hooks.event(f"the update's env values are not kept ({ZK_AUTH_ENV} is not set, and an open node "
                                 "would hand them to anyone): a scheduler restarted with the first options will not "
                                 "resume the job; restart it with the update's options")
            return diff

    def _attempts(self, task: str) -> list[Attempt]:
        key = parse_task_key(task)
        with self.cond:
            current = self.job.tasks.get(key)
            if current is None:
                raise NoSuchTask(f"{key}: no such task in this job: expected {task_names(self.job.tasks)}")
            # Attempts launched before a scheduler restart ran, most likely, where the task runs now.
            return [Attempt(tid, self.places.agent_of(tid, current.agent_id)) for tid in self.job.attempts(key)]


def parse_task_key(text: str) -> TaskKey:
    """ROLE:INDEX, e.g. worker:1."""
    role, sep, index = text.partition(":")
    if not sep or not (index.isascii() and index.isdigit()) or not role:
        raise NoSuchTask(f"task: {text!r}: expected ROLE:INDEX, e.g. worker:1")
    return TaskKey(role, int(index))
