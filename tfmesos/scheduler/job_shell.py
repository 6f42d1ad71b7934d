"""The scheduler's shell around one core ``Job``: Mesos events (plain, from ``mesos.driver``'s
adapter) and the clock go in, under one lock; the core decides; its actions go out to Mesos
through the adapter, after the job is recorded in its store when the core asks for it. Besides
obeying the core, the shell keeps two policies of its own: how long it waits for a lost master
(service.failover_timeout) and when it asks the master whether a held-back job can ever fit and
what holds it (queue_watch.py; core/fit.py, core/queue.py and core/quota.py judge the answer).

Thread model: pymesos delivers events on its IO thread; the runner's thread waits for the
next deadline and calls ``tick``. Both go through one lock.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..core import actions as act
from ..core.job.job import Job
from ..core.phase import FAILED, FINISHING, KILLED
from ..core.state.record import NoSuchTask, task_names
from ..core.task_state import TASK_FAILED, TASK_FINISHED, TASK_KILLED, TASK_RUNNING, StatusUpdate
from ..core.spec import JobSpec, TaskKey
from ..core.status import StatusSnapshot
from ..mesos.agent_files import agent_address_from_master, agent_address_from_offer
from .output_catchup import OutputCatchUp
from .task_logs import Attempt, TaskLogs
from ..mesos.driver import MesosAdapter
from ..mesos.events import OffersArrived, Subscribed
from ..mesos.messages import ClusterSpecMessage, NeedSpec, OutputLines, Progress, encode
from ..mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from ..store.job_store import JobStore
from .metrics import JobMetrics
from .queue_watch import ClusterProbe, QueueWatch, QuotaProbe

log = logging.getLogger("tfmesos.scheduler.job_shell")

RECONCILIATION = "REASON_RECONCILIATION"
# /v1/health fails once the loop that drives the job (run_until_done) has not turned for this long:
# it turns at least every second unless something holds the job's lock (a wedged callback).
LOOP_STALE_SECONDS = 30.0
LOST_MASTER_NOTE_EVERY = 30.0  # seconds between "still waiting for the master" lines
TICK_MIN_INTERVAL = 0.05  # seconds: the core's timers are acted on at most this late


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


# The ends its agent reported, so its sandbox answers: a task LOST, UNREACHABLE or GONE is on an
# agent the master cannot reach, whose files API would only hold this thread (and the relaunch).
ENDS_AN_AGENT_REPORTS = frozenset({TASK_FINISHED, TASK_FAILED, TASK_KILLED})


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
        self.mesos = MesosAdapter(self, job.spec.service.revocable)
        self.cond = threading.Condition()
        self.done = threading.Event()
        self.result: act.Done | None = None
        self.raw_offers: dict[str, dict[str, Any]] = {}
        # The master: subscribed now, ever, lost since when; an ERROR it sent (Mesos sends one
        # only for what no retry fixes, and closes the stream after it).
        self.connected = self.subscribed_once = False
        self.disconnected_at: float | None = None
        self.refusal: str | None = None
        self.persist_error: str | None = None
        self.stop_cause: str | None = None  # why a person asked the job to stop (request_stop)
        self.stop_end = KILLED  # and the end it asked for
        self._lost_noted = 0.0
        self._events_seen = len(job.events)  # the job's notable events already shown
        self._encoded_spec: tuple[Any, str] = (None, "")  # (ClusterSpec message, its encoding)
        self._changed: TaskKey | None = None  # the task the event being applied is about
        # For logs: where each attempt ran, and each agent's address (from its offers' URL).
        self.attempt_agents: dict[str, str] = {}
        self.agent_addresses: dict[str, str] = {}
        self.logs = TaskLogs(self._attempts, self._agent_address, lambda: self.framework_id)
        self.output = OutputCatchUp(self._sandbox_of, hooks.output, self._progress_read_back)
        self._reconciled_shown: set[str] = set()  # task ids whose reconciliation answer was shown since subscribing
        self.metrics = JobMetrics(self.snapshot)
        self.loop_turned: float | None = None  # time.monotonic() of the loop's last turn (None: not started)
        self.loop_stale_seconds = LOOP_STALE_SECONDS

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

    # ------------------------------------------------------------------ applying actions
    def _apply(self, actions: list[act.Action]) -> None:
        """Persist first, then act: a task id is on disk before Mesos hears of it. The core says
        when (a Persist action leads the list); the shell just obeys."""
        if any(isinstance(a, act.Persist) for a in actions) and self.store.persists and self.framework_id:
            try:
                # Once the job is over and finished jobs are kept, the record says finished: it is on
                # disk before the framework is torn down, so a scheduler restarted in between serves
                # the end instead of finding its framework removed and running the job again.
                self.store.record(self.job, self.framework_id, self._changed)
            except Exception as exc:  # noqa: BLE001 - any store failure (disk full, ZooKeeper gone)
                # Nothing is launched that a restarted scheduler could not find again: stop here.
                self.persist_error = f"cannot save the job's state in {self.store.where}: {type(exc).__name__}: {exc}"
                self.result = act.Done(FAILED, self.persist_error)
                self.done.set()
                self.cond.notify_all()
                return
        end_note = self.job.end_note()
        for text in self.job.events[self._events_seen:]:
            if text == end_note and self.hooks.end_note is not None:
                self.hooks.end_note(self.job.ending, text)
            else:
                self.hooks.event(text)
        self._events_seen = len(self.job.events)
        for launching, run in itertools.groupby(actions, lambda a: isinstance(a, act.Launch)):
            group = list(run)
            if launching and self.mesos.pipelines_launches and len(group) > 1:  # a gang: its ACCEPTs pipelined
                self._carry_out("Launch", self._launch_together, group)
            else:
                for a in group:
                    self._carry_out(type(a).__name__, self._apply_one, a)
        self.cond.notify_all()

    @staticmethod
    def _carry_out(what: str, do: Callable[..., None], *args: Any) -> None:
        try:
            do(*args)
        except Exception as exc:  # noqa: BLE001 - e.g. not connected; the core retries via tick/reconcile
            log.error("could not carry out %s: %s: %s", what, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))

    def _task_infos(self, a: act.Launch) -> list[dict[str, Any]]:
        raw = self.raw_offers.pop(a.offer_id)
        ledger = OfferLedger(raw, self.spec.service.revocable)
        infos = [build_task_info(self.spec, t, a.agent_id, ledger, self.settings, a.cluster_spec) for t in a.tasks]
        for t in a.tasks:
            self.hooks.event(f"launch {t.key} as {t.task_id} on {a.hostname}:{t.port}")
            self.metrics.launched(t.key, t.restarts)
            self.attempt_agents[t.task_id] = a.agent_id
        return infos

    def _launch_together(self, launches: list[act.Launch]) -> None:
        """A gang's launches, handed to the driver's sender: this thread goes back to events."""
        calls = [(a.offer_id, self._task_infos(a)) for a in launches]

        def answered(result: list[str | None] | Exception) -> None:
            if isinstance(result, Exception):  # the tasks never start: their startup timeout relaunches them
                log.error("could not carry out %d Launches: %s: %s", len(launches), type(result).__name__, result)
                return
            for a, refused in zip(launches, result):
                if refused is not None:
                    log.error("could not carry out Launch of %s: %s", ", ".join(str(t.key) for t in a.tasks), refused)

        self.mesos.launch_many(calls, answered)

    def _apply_one(self, a: act.Action) -> None:
        mesos = self.mesos
        if isinstance(a, act.Launch):
            mesos.launch(a.offer_id, self._task_infos(a))
        elif isinstance(a, act.Decline):
            self.metrics.offers_declined.inc(len(a.offer_ids))
            for oid in a.offer_ids:
                self.raw_offers.pop(oid, None)
            if a.offer_ids:
                mesos.decline(list(a.offer_ids), a.refuse_seconds)
        elif isinstance(a, act.Kill):
            mesos.kill(a.task_id)
        elif isinstance(a, act.SendClusterSpec):
            self.metrics.clusterspec_sent(self.clock() - self.job.started_at)
            if self._encoded_spec[0] is not a.message:  # the core hands out one message per version
                self._encoded_spec = (a.message, encode(ClusterSpecMessage(a.message["version"], a.message["cluster"])))
            mesos.send(a.task_id, a.agent_id, self._encoded_spec[1])
        elif isinstance(a, act.Revive):
            mesos.revive()
        elif isinstance(a, act.Suppress):
            mesos.suppress()
        elif isinstance(a, act.Reconcile):
            mesos.reconcile(list(a.task_ids))
        elif isinstance(a, act.Done):
            self.result = a
            self.done.set()

    # ------------------------------------------------------------------ Mesos events (mesos.driver.JobEvents)
    def subscribed(self, event: Subscribed) -> None:
        with self.cond:
            self.connected = True
            if self.disconnected_at is not None and self.subscribed_once:
                self.hooks.event(f"the Mesos master is back after {self.clock() - self.disconnected_at:.0f} s")
            self.subscribed_once, self.disconnected_at = True, None
            self.framework_id = event.framework_id
            self._reconciled_shown.clear()
            if event.again:
                self.hooks.event(f"re-registered as framework {self.framework_id}; reconciling")
            else:
                self.hooks.event(f"registered as framework {self.framework_id} with {event.master}")
            self._apply(self.job.start())
            streamed = self._streamed_task_ids() if event.again else []
        if streamed:  # messages sent while the master (or this scheduler) was away are lost: read them back
            threading.Thread(target=self._catch_up, args=(streamed,), name="tfmesos-catch-up", daemon=True).start()

    def disconnected(self) -> bool:
        with self.cond:
            self.connected = False
            if self.disconnected_at is None:
                self.disconnected_at, self._lost_noted = self.clock(), self.clock()
            self.raw_offers.clear()
            self.job.offers_gone()
            self.cond.notify_all()
            return self.refusal is not None or self.done.is_set()

    def offers_arrived(self, event: OffersArrived) -> None:
        with self.cond:
            self.raw_offers.update(event.raw)
            for o in event.offers:
                address = agent_address_from_offer(event.raw[o.id])
                if address:
                    self.agent_addresses[o.agent_id] = address
            self.metrics.offers_received.inc(len(event.offers))
            self._apply(self.job.offers(list(event.offers), self.clock()))

    def offer_rescinded(self, offer_id: str) -> None:
        with self.cond:
            self.raw_offers.pop(offer_id, None)
            self.job.rescinded(offer_id)

    def status_update(self, update: StatusUpdate) -> None:
        if update.state in ENDS_AN_AGENT_REPORTS and update.task_id in self._streamed_task_ids():
            self.output.catch_up(update.task_id)  # its last lines before its end (and the job's)
        with self.cond:
            key = self.job.key_of(update.task_id)
            if key is not None and update.task_id == self.job.tasks[key].task_id and self._announce(update):
                detail = update.message if update.state != TASK_RUNNING else ""
                self.hooks.event(f"{key} {update.state}{' (' + update.reason + ')' if update.reason else ''}"
                                 f"{': ' + detail if detail else ''}")
                rec = self.job.tasks[key]
                if update.agent_id:
                    self.attempt_agents[update.task_id] = update.agent_id
                self.metrics.task_ended(key, update.state, update.reason,
                                        counts=rec.live and not rec.relaunch_after_kill and self.job.phase != FINISHING)
            self._changed = key
            try:
                self._apply(self.job.status(update, self.clock()))
            finally:
                self._changed = None

    def protocol_mismatch(self, reason: str) -> None:
        with self.cond:
            if not self.job.terminal:
                self._apply(self.job.abort(reason, self.clock()))

    def _announce(self, update: StatusUpdate) -> bool:
        """Whether the console shows the update: a reconciliation answer once per task since
        subscribing (explicit and implicit reconciliation each answer for every task)."""
        if update.reason != RECONCILIATION:
            return True
        seen = update.task_id in self._reconciled_shown
        self._reconciled_shown.add(update.task_id)
        return not seen

    def _streamed_task_ids(self) -> list[str]:
        """The current attempts of the tasks that stream their output (launched ones)."""
        with self.cond:
            return [rec.task_id for key in self.spec.streamed_keys
                    if (rec := self.job.tasks.get(key)) is not None and rec.task_id]

    def _catch_up(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self.output.catch_up(task_id)

    def _sandbox_of(self, task_id: str) -> tuple[str, str]:
        with self.cond:
            key = self.job.key_of(task_id)
            rec = self.job.tasks.get(key) if key is not None else None
            agent_id = self.attempt_agents.get(task_id) or (rec.agent_id if rec else "")
        return self.logs.sandbox(Attempt(task_id, agent_id))

    def _progress_read_back(self, task_id: str, values: dict[str, Any]) -> None:
        self.executor_said(Progress(task_id, values))

    def executor_said(self, message: Any) -> None:
        if isinstance(message, OutputLines):
            self.output.message(message)
            return
        if isinstance(message, NeedSpec):
            with self.cond:
                self._apply(self.job.executor_asks_cluster_spec(message.task_id))
        if isinstance(message, Progress) and isinstance(message.values, dict):
            with self.cond:
                self.job.report(message.task_id, message.values, self.clock())
                key = self.job.key_of(message.task_id)
                progress = self.job.progress_of(key) if key else None
            if key is not None and progress is not None:
                self.hooks.progress(str(key), progress)

    def agent_lost(self, agent_id: str) -> None:
        self.hooks.event(f"agent {agent_id} lost")

    def master_error(self, message: str) -> None:
        with self.cond:
            if self.refusal is not None:
                return  # the run is already ending for the first one
            self.refusal = message
            self.hooks.event(f"error from the master: {message}")
            self.result = act.Done(FAILED, f"Mesos master: {message}")
            self.done.set()
            self.cond.notify_all()

    # ------------------------------------------------------------------ the clock
    def run_until_done(self) -> act.Done:
        """Drive timers until the job reaches its end (or the master gives up on us)."""
        stopping = False
        tick_at = last_tick = float("-inf")
        with self.cond:
            while not self.done.is_set():
                self.loop_turned = time.monotonic()
                now = self.clock()
                if self.stop_cause is not None and not stopping:
                    stopping = True
                    self._apply(self.job.stop(self.stop_cause, now, self.stop_end))
                    continue
                if now >= tick_at:
                    if self.connected:
                        if self.queue is not None and self.queue.due(self.job, now):
                            self.cond.release()  # the master's answer may take a while: events go on
                            try:
                                answers = self.queue.ask()
                            finally:
                                self.cond.acquire()
                            queued = self.queue.judge(self.job, self.clock(), answers)
                            if queued is not None:
                                self._apply(queued)
                            now = self.clock()
                        self._apply(self.job.tick(now))
                    elif self.disconnected_at is not None:
                        self._master_lost(now)
                    if self.done.is_set():
                        break
                    last_tick = now
                    tick_at = now + max(TICK_MIN_INTERVAL, min(self.job.next_deadline(now) - now, 1.0))
                if self.cond.wait(timeout=max(0.0, tick_at - now)):
                    # An event may have brought a deadline forward. Tick and next_deadline walk every
                    # task: after a burst of events (a big gang's updates) tick once, not per event.
                    tick_at = min(tick_at, max(self.clock(), last_tick + TICK_MIN_INTERVAL))
        assert self.result is not None
        return self.result

    def loop_health(self) -> tuple[bool, str]:
        """(healthy, why not) for /v1/health: whether the loop that drives the job still turns.
        Read without the job's lock, which a wedge holds."""
        turned = self.loop_turned
        if turned is None or self.done.is_set():
            return True, ""
        age = time.monotonic() - turned
        if age <= self.loop_stale_seconds:
            return True, ""
        return False, (f"the scheduler's loop has not turned for {age:.0f} s (more than {self.loop_stale_seconds:g} s): "
                       "it is wedged")

    def _master_lost(self, now: float) -> None:
        """Wait for the master as long as failover_timeout keeps the job alive on its side."""
        away, limit = now - self.disconnected_at, self.spec.service.failover_timeout  # type: ignore[operator]
        if away > limit:
            self.result = act.Done(FAILED, f"the Mesos master did not come back within service.failover_timeout ({limit:g} s)")
            self.done.set()
        elif now - self._lost_noted >= LOST_MASTER_NOTE_EVERY:
            self._lost_noted = now
            self.hooks.event(f"no Mesos master for {away:.0f} s; waiting for it up to service.failover_timeout ({limit:g} s)")

    def request_stop(self, why: str, end: str = KILLED) -> None:
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

    # ------------------------------------------------------------------ operating the job
    def restart(self, task: str) -> str:
        """``tfmesos restart ROLE:INDEX``: raises ValueError naming why it cannot be done."""
        key = parse_task_key(task)
        with self.cond:
            self._apply(self.job.restart_task(key, self.clock()))
            self.metrics.restart_requested(key)
        return f"{key} is being killed and will be relaunched"

    def _attempts(self, task: str) -> list[Attempt]:
        key = parse_task_key(task)
        with self.cond:
            current = self.job.tasks.get(key)
            if current is None:
                raise NoSuchTask(f"{key}: no such task in this job: expected {task_names(self.job.tasks)}")
            # Attempts launched before a scheduler restart ran, most likely, where the task runs now.
            fallback = current.agent_id if current else ""
            return [Attempt(tid, self.attempt_agents.get(tid, fallback)) for tid in self.job.attempts(key)]

    def _agent_address(self, agent_id: str) -> str | None:
        known = self.agent_addresses.get(agent_id)
        if known:
            return known
        master = self.mesos.master
        if master:
            try:
                found = agent_address_from_master(master, agent_id)
            except (OSError, ValueError) as exc:
                log.info("cannot ask the master %s for agent %s: %s", master, agent_id, exc)
                return None
            if found:
                self.agent_addresses[agent_id] = found
            return found
        return None


def parse_task_key(text: str) -> TaskKey:
    """ROLE:INDEX, e.g. worker:1."""
    role, sep, index = text.partition(":")
    if not sep or not (index.isascii() and index.isdigit()) or not role:
        raise NoSuchTask(f"task: {text!r}: expected ROLE:INDEX, e.g. worker:1")
    return TaskKey(role, int(index))
