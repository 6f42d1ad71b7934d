"""The pymesos scheduler: translates Mesos events into calls on the core ``Job`` and the
core's actions back into Mesos calls. All decisions live in ``tfmesos.core``.

Thread model: pymesos delivers events on its IO thread; the runner's thread waits for the
next deadline and calls ``tick``. Both go through one lock. A callback never raises into
pymesos, which would tear the framework (and the job) down.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import logging
import threading
import time
from typing import Any, Callable

from ..core import actions as act
from ..core.job import FAILED, FINISHING, KILLED, LIVE, PLACING, Job, StatusUpdate
from ..mesos.offers import parse_offer
from ..masking import mask_options
from ..options.load import without_defaults
from ..core.quota import ask_about_quota, quota_shortfall
from ..client.logs import Attempt, TaskLogs, agent_address_from_master, agent_address_from_offer
from ..mesos.messages import (
    ClusterSpecMessage,
    NeedSpec,
    OutputLines,
    Progress,
    ProtocolMismatch,
    TaskResult,
    decode,
    encode,
)
from ..mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info
from .metrics import JobMetrics
from ..core.spec import JobSpec, TaskKey
from ..core.status import StatusSnapshot
from ..store.format import journal_entry, record
from ..store.state_store import StateStore

log = logging.getLogger("tfmesos.scheduler.job_scheduler")

LOST_MASTER_NOTE_EVERY = 30.0  # seconds between "still waiting for the master" lines
# The record is rewritten whole once its journal holds as many entries as the job has tasks
# (at least this many): appends stay O(1) amortised and loading replays a bounded journal.
JOURNAL_MIN = 16
RESUBSCRIBE_BACKOFF_MAX = 15.0  # what the Mesos docs advise; pymesos reconnects at once
LAUNCH_FILTERS = {"refuse_seconds": 2.0}
TICK_MIN_INTERVAL = 0.05  # seconds: the core's timers are acted on at most this late
QUOTA_PROBE_EVERY = 1.0  # seconds between quota questions to the master while placement waits


DIGEST_PREFIX = "d2-"  # digests of the options without their defaults (tfmesos 0.1.0 hashed them all)


def options_digest(options: dict[str, Any]) -> str:
    """Which options a recorded job ran with: schema defaults left out, so that a newer tfmesos
    with more options resumes a job an older one recorded."""
    chosen = json.dumps(without_defaults(options), sort_keys=True)
    return DIGEST_PREFIX + hashlib.sha256(chosen.encode()).hexdigest()[:16]


def resumable_with(saved: dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether a recorded job is the one these options describe."""
    digest = saved.get("options_digest") or ""
    if digest.startswith(DIGEST_PREFIX):
        return digest == options_digest(options)
    # Recorded by 0.1.0, whose digest covered every default of its own schema: compare the options
    # it kept (env values hidden on both sides), defaults left out.
    kept = saved.get("options")
    return kept is not None and without_defaults(kept) == without_defaults(mask_options(options))


def _guard(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(self: "JobScheduler", *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as exc:  # noqa: BLE001 - a raise here would make pymesos TEARDOWN the framework
            # One line for the user; the traceback with -v.
            log.error("error in %s (the job goes on): %s: %s", method.__name__, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))
    return wrapper


def parse_status(status: dict[str, Any]) -> StatusUpdate:
    exit_code, log_tail = None, ""
    if status.get("data"):
        try:
            data = decode(status["data"], "the executor")
            if isinstance(data, TaskResult):
                exit_code, log_tail = data.exit_code, data.log_tail
        except (ValueError, TypeError):
            pass  # not ours (a command executor's) or another protocol: the state and message still count
    return StatusUpdate(
        task_id=status["task_id"]["value"],
        state=status["state"],
        reason=status.get("reason", ""),
        message=status.get("message", ""),
        agent_id=status.get("agent_id", {}).get("value", ""),
        exit_code=exit_code,
        log_tail=log_tail,
    )


class JobScheduler:
    """pymesos Scheduler callbacks (duck-typed) around one ``Job``."""

    def __init__(
        self,
        job: Job,
        spec: JobSpec,
        options: dict[str, Any],
        settings: ExecutorSettings,
        store: StateStore | None = None,
        framework_id: str | None = None,
        on_output: Callable[[str, list[str]], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
        quota_probe: Callable[[str], tuple[dict[str, float], dict[str, float]] | None] | None = None,
        on_progress: Callable[[str, dict[str, Any]], None] | None = None,
        keep_finished: bool = False,
    ):
        self.job, self.spec, self.options, self.settings = job, spec, options, settings
        self._digest = options_digest(options)  # written with every record: computed once
        self.store = store
        self.keep_finished = keep_finished  # record the end rather than have it cleared (Marathon)
        self.framework_id = framework_id
        self.on_output = on_output or (lambda task, lines: None)
        self.on_event = on_event or (lambda text: None)
        self.clock = clock
        self.quota_probe = quota_probe  # role -> (quota limits, role allocation), from the master
        self._quota_probed_at = float("-inf")
        self._quota_waiting = False
        self.cond = threading.Condition()
        self.driver: Any = None
        self.raw_offers: dict[str, dict[str, Any]] = {}
        self.done = threading.Event()
        self.result: act.Done | None = None
        self.connected = False
        self.subscribed_once = False
        # An ERROR event: Mesos sends it only for what no retry fixes (a refused subscription,
        # "Framework failed over", "Framework has been removed") and closes the stream after it.
        self.refusal: str | None = None
        self.persist_error: str | None = None
        self.disconnected_at: float | None = None
        self._lost_noted = 0.0
        self._quick_drops = 0
        self._subscribed_at = time.monotonic()  # drops before the first SUBSCRIBED back off too (503)
        self.released = threading.Event()  # set by the runner before it stops the driver
        self.stop_cause: str | None = None  # why a person asked the job to stop (request_stop)
        self.stop_end = KILLED  # and the end it asked for
        self._events_seen = len(job.events)  # the job's notable events already shown
        self._encoded_spec: tuple[Any, str] = (None, "")  # (ClusterSpec message, its encoding)
        self.on_progress = on_progress or (lambda task, progress: None)
        # For logs: where each attempt ran, and each agent's address (from its offers' URL).
        self.attempt_agents: dict[str, str] = {}
        self.agent_addresses: dict[str, str] = {}
        self.logs = TaskLogs(self._attempts, self._agent_address, lambda: self.framework_id)
        self.metrics = JobMetrics(self.snapshot)
        self._launched: dict[TaskKey, int] = {}  # restarts count at each task's last launch
        self._requested: set[TaskKey] = set()
        self._spec_sent = False
        # The journal (state_format 3): the generation of the last whole record, the task ids it
        # knew (launch_seq), entries since, events written; _changed: the task the update is about.
        self._generations = itertools.count(time.time_ns()).__next__  # unique across restarts
        self._journal_gen: int | None = None
        self._saved_seq = -1
        self._journal_len = 0
        self._events_saved = 0
        self._changed: TaskKey | None = None

    # ------------------------------------------------------------------ persistence
    def persist(self) -> None:
        """Write the job's record. Once the job is over (the core persists with its Done) and
        finished jobs are kept, the record says finished: it is on disk before the runner tears
        the framework down, so a scheduler restarted in between serves the end instead of finding
        its framework removed and running the job again."""
        if self.store is None or self.framework_id is None:
            return
        job = self.job
        changed = self._changed
        if (changed is not None and self._journal_gen is not None and job.launch_seq == self._saved_seq
                and not job.terminal and self._journal_len < max(JOURNAL_MIN, len(job.tasks))):
            # One task ended and no task id is new: O(1) on disk instead of every task again.
            self.store.append(journal_entry(self._journal_gen, job.own_fields(),
                                            job.events[self._events_saved:], job.task_dict(changed)))
            self._journal_len += 1
        else:
            self._journal_gen = self._generations()
            # env values stay out of the state (masked options)
            self.store.save(record(self.framework_id, self._digest, mask_options(self.options), job.to_dict(),
                                   finished=self.keep_finished and job.terminal, journal_gen=self._journal_gen))
            self._saved_seq, self._journal_len = job.launch_seq, 0
        self._events_saved = len(job.events)

    # ------------------------------------------------------------------ applying actions
    def _apply(self, actions: list[act.Action]) -> None:
        """Persist first, then act: a task id is on disk before Mesos hears of it. The core says
        when (a Persist action leads the list); the shell just obeys."""
        if any(isinstance(a, act.Persist) for a in actions):
            try:
                self.persist()
            except Exception as exc:  # noqa: BLE001 - any store failure (disk full, ZooKeeper gone)
                # Nothing is launched that a restarted scheduler could not find again: stop here.
                self.persist_error = f"cannot save the job's state in {self.store.where}: {type(exc).__name__}: {exc}"  # type: ignore[union-attr]
                self.result = act.Done(FAILED, self.persist_error)
                self.done.set()
                self.cond.notify_all()
                return
        for text in self.job.events[self._events_seen:]:
            self.on_event(text)
        self._events_seen = len(self.job.events)
        # Looked up on the class: test doubles answer every attribute through __getattr__.
        launch_many = self.driver.launch_many if hasattr(type(self.driver), "launch_many") else None
        for launching, run in itertools.groupby(actions, lambda a: isinstance(a, act.Launch)):
            group = list(run)
            if launching and launch_many is not None and len(group) > 1:  # a gang: its ACCEPTs pipelined
                self._carry_out("Launch", self._launch_together, group, launch_many)
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
        infos = [build_task_info(self.spec, t, a.agent_id, ledger, self.settings, a.spec) for t in a.tasks]
        for t in a.tasks:
            self.on_event(f"launch {t.key} as {t.task_id} on {a.hostname}:{t.port}")
            self._count_launch(t.key, t.restarts)
            self.attempt_agents[t.task_id] = a.agent_id
        return infos

    def _launch_together(self, launches: list[act.Launch], launch_many: Callable[..., None]) -> None:
        """A gang's launches, handed to the driver's sender: this thread goes back to events."""
        calls = [(a.offer_id, self._task_infos(a), LAUNCH_FILTERS) for a in launches]

        def answered(result: list[str | None] | Exception) -> None:
            if isinstance(result, Exception):  # the tasks never start: their startup timeout relaunches them
                log.error("could not carry out %d Launches: %s: %s", len(launches), type(result).__name__, result)
                return
            for a, refused in zip(launches, result):
                if refused is not None:
                    log.error("could not carry out Launch of %s: %s", ", ".join(str(t.key) for t in a.tasks), refused)

        launch_many(calls, answered)

    def _apply_one(self, a: act.Action) -> None:
        d = self.driver
        if isinstance(a, act.Launch):
            d.launchTasks([{"value": a.offer_id}], self._task_infos(a), LAUNCH_FILTERS)
        elif isinstance(a, act.Decline):
            ids = [{"value": oid} for oid in a.offer_ids]
            self.metrics.offers_declined.inc(len(ids))
            for oid in a.offer_ids:
                self.raw_offers.pop(oid, None)
            if ids:
                d.declineOffer(ids, {"refuse_seconds": a.refuse_seconds})
        elif isinstance(a, act.Kill):
            d.killTask({"value": a.task_id})
        elif isinstance(a, act.SendClusterSpec):
            if not self._spec_sent:
                self._spec_sent = True
                self.metrics.set_gauge("time_to_clusterspec_seconds", self.clock() - self.job.started_at)
            if self._encoded_spec[0] is not a.message:  # the core hands out one message per version
                self._encoded_spec = (a.message, encode(ClusterSpecMessage(a.message["version"], a.message["cluster"])))
            d.sendFrameworkMessage({"value": a.task_id}, {"value": a.agent_id}, self._encoded_spec[1])
        elif isinstance(a, act.Revive):
            d.reviveOffers()
        elif isinstance(a, act.Suppress):
            d.suppressOffers()
        elif isinstance(a, act.Reconcile):
            d.reconcileTasks([{"task_id": {"value": t}} for t in a.task_ids])
        elif isinstance(a, act.Done):
            self.result = a
            self.done.set()

    # ------------------------------------------------------------------ pymesos callbacks
    @_guard
    def registered(self, driver: Any, framework_id: dict[str, str], master_info: dict[str, Any]) -> None:
        with self.cond:
            self.driver, self.connected = driver, True
            self._subscribed(driver)
            self.framework_id = framework_id["value"]
            self.on_event(f"registered as framework {self.framework_id} with {master_info.get('hostname')}:{master_info.get('port')}")
            self._apply(self.job.start())

    @_guard
    def reregistered(self, driver: Any, master_info: dict[str, Any]) -> None:
        with self.cond:
            self.driver, self.connected = driver, True
            self._subscribed(driver)
            self.framework_id = driver.framework_id
            self.on_event(f"re-registered as framework {self.framework_id}; reconciling")
            self._apply(self.job.start())

    def _subscribed(self, driver: Any) -> None:
        if self.disconnected_at is not None and self.subscribed_once:
            self.on_event(f"the Mesos master is back after {self.clock() - self.disconnected_at:.0f} s")
        self.subscribed_once, self.disconnected_at, self._subscribed_at = True, None, time.monotonic()

    @_guard
    def disconnected(self, driver: Any) -> None:
        with self.cond:
            self.connected = False
            if self.disconnected_at is None:
                self.disconnected_at, self._lost_noted = self.clock(), self.clock()
            self.raw_offers.clear()
            for oid in list(self.job.held):
                self.job.rescinded(oid)
            self.cond.notify_all()
            # pymesos reconnects the moment this returns. After a refusal there is nothing to
            # retry; after a stream that dropped at once, back off as the Mesos docs advise.
            if self.refusal is not None or self.done.is_set():
                delay = RESUBSCRIBE_BACKOFF_MAX
            elif time.monotonic() - self._subscribed_at < RESUBSCRIBE_BACKOFF_MAX:
                self._quick_drops += 1
                delay = min(0.5 * 2 ** (self._quick_drops - 1), RESUBSCRIBE_BACKOFF_MAX)
            else:
                self._quick_drops, delay = 0, 0.0
        if delay:
            self.released.wait(delay)  # the IO thread waits here; the runner's stop releases it

    @_guard
    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        with self.cond:
            parsed = []
            for raw in offers:
                o = parse_offer(raw, self.spec.service.revocable)
                self.raw_offers[o.id] = raw
                address = agent_address_from_offer(raw)
                if address:
                    self.agent_addresses[o.agent_id] = address
                parsed.append(o)
            self.metrics.offers_received.inc(len(parsed))
            self._apply(self.job.offers(parsed, self.clock()))

    def inverseOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        pass  # maintenance windows: not acted on

    @_guard
    def offerRescinded(self, driver: Any, offer_id: dict[str, str]) -> None:  # noqa: N802
        with self.cond:
            self.raw_offers.pop(offer_id["value"], None)
            self.job.rescinded(offer_id["value"])

    @_guard
    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:  # noqa: N802
        # pymesos acknowledges after we return: the new state is persisted by then.
        with self.cond:
            update = parse_status(status)
            key = self.job.key_of(update.task_id)
            if key is not None and update.task_id == self.job.tasks[key].task_id:
                detail = update.message if update.state != "TASK_RUNNING" else ""
                self.on_event(f"{key} {update.state}{' (' + update.reason + ')' if update.reason else ''}"
                              f"{': ' + detail if detail else ''}")
                rec = self.job.tasks[key]
                if update.agent_id:
                    self.attempt_agents[update.task_id] = update.agent_id
                if (update.state not in LIVE and update.state != "TASK_FINISHED" and rec.live
                        and not rec.relaunch_after_kill and self.job.phase != FINISHING):
                    self.metrics.tasks_failed.labels(key.role, update.reason or update.state).inc()
            self._changed = key
            try:
                self._apply(self.job.status(update, self.clock()))
            finally:
                self._changed = None

    @_guard
    def frameworkMessage(self, driver: Any, executor_id: dict, agent_id: dict, data: str) -> None:  # noqa: N802
        try:
            msg = decode(data, f"executor {executor_id.get('value')}")
        except ProtocolMismatch as exc:
            # A tfmesos of another protocol on an agent: it would wait for peers it cannot be told
            # of, so the job stops with the reason rather than hanging half-started.
            log.error("framework message refused: %s", exc)
            with self.cond:
                if not self.job.terminal:
                    self._apply(self.job.abort(str(exc), self.clock()))
            return
        except ValueError as exc:
            log.warning("framework message refused: %s", exc)
            return
        if isinstance(msg, OutputLines):
            self.on_output(msg.task_id, list(msg.lines))
            return
        if isinstance(msg, NeedSpec):
            with self.cond:
                self._apply(self.job.executor_asks_spec(msg.task_id))
        if isinstance(msg, Progress) and isinstance(msg.values, dict):
            with self.cond:
                self.job.report(msg.task_id, msg.values, self.clock())
                key = self.job.key_of(msg.task_id)
                progress = self.job.reports.get(key) if key else None
            if key is not None and progress is not None:
                self.on_progress(str(key), progress)

    @_guard
    def slaveLost(self, driver: Any, agent_id: dict) -> None:  # noqa: N802
        self.on_event(f"agent {agent_id.get('value')} lost")

    @_guard
    def executorLost(self, driver: Any, executor_id: dict, agent_id: dict, status: int) -> None:  # noqa: N802
        log.info("executor %s on %s exited with status %s", executor_id.get("value"), agent_id.get("value"), status)

    @_guard
    def error(self, driver: Any, message: str) -> None:
        with self.cond:
            if self.refusal is not None:
                return  # the run is already ending for the first one
            self.refusal = message
            self.on_event(f"error from the master: {message}")
            self.result = act.Done(FAILED, f"Mesos master: {message}")
            self.done.set()
            self.cond.notify_all()

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802
        pass

    # ------------------------------------------------------------------ the clock
    def run_until_done(self) -> act.Done:
        """Drive timers until the job reaches its end (or the master gives up on us)."""
        stopping = False
        tick_at = last_tick = float("-inf")
        with self.cond:
            while not self.done.is_set():
                now = self.clock()
                if self.stop_cause is not None and not stopping:
                    stopping = True
                    self._apply(self.job.stop(self.stop_cause, now, self.stop_end))
                    continue
                if now >= tick_at:
                    if self.connected:
                        self._check_quota(now)
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

    def _master_lost(self, now: float) -> None:
        """Wait for the master as long as failover_timeout keeps the job alive on its side."""
        away, limit = now - self.disconnected_at, self.spec.service.failover_timeout  # type: ignore[operator]
        if away > limit:
            self.result = act.Done(FAILED, f"the Mesos master did not come back within service.failover_timeout ({limit:g} s)")
            self.done.set()
        elif now - self._lost_noted >= LOST_MASTER_NOTE_EVERY:
            self._lost_noted = now
            self.on_event(f"no Mesos master for {away:.0f} s; waiting for it up to service.failover_timeout ({limit:g} s)")
    def _check_quota(self, now: float) -> None:
        """Once placement is held back, ask the master whether the role's quota explains it: then
        the job says so at once, and waits instead of failing for want of offers."""
        job = self.job
        if self.quota_probe is None or job.phase != PLACING or not ask_about_quota(now - job.placing_since,
                                                                                   bool(job.last_unplaced)):
            return
        if now - self._quota_probed_at < QUOTA_PROBE_EVERY:
            return
        self._quota_probed_at = now
        # A job of several roles is held back by quota only when every one of its roles is.
        held, demand = job.held_totals(), job.pending_demand()
        shortfalls = []
        for role in self.spec.service.mesos_roles:
            answer = self.quota_probe(role)
            shortfalls.append(None if answer is None else quota_shortfall(role, answer[0], answer[1], held, demand))
        shortfall = "; ".join(shortfalls) if all(shortfalls) else None  # type: ignore[arg-type]
        if shortfall is not None:
            job.defer_placement(shortfall, now)
        elif self._quota_waiting:
            # The quota has room again: a full placement window to gather the offers.
            job.defer_placement(f"role {self.spec.service.mesos_role}'s quota has room again: placing the job", now)
        else:
            return
        self._quota_waiting = shortfall is not None
        self._apply([])

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
            master = getattr(self.driver, "master", None) if self.driver is not None else None
            return dataclasses.replace(self.job.snapshot(), framework_id=self.framework_id, connected=self.connected,
                                       now=self.clock(), master=master if isinstance(master, str) else None)

    # ------------------------------------------------------------------ operating the job
    def restart(self, task: str) -> str:
        """``tfmesos restart ROLE:INDEX``: raises ValueError naming why it cannot be done."""
        key = parse_task_key(task)
        with self.cond:
            self._apply(self.job.restart_task(key, self.clock()))
            self._requested.add(key)
        return f"{key} is being killed and will be relaunched"

    def _count_launch(self, key: TaskKey, restarts: int) -> None:
        self.metrics.tasks_launched.labels(key.role).inc()
        if key in self._launched:
            why = ("failure" if restarts > self._launched[key]
                   else "requested" if key in self._requested else "with_peers")
            self.metrics.tasks_relaunched.labels(key.role, why).inc()
        self._launched[key] = restarts
        self._requested.discard(key)

    def _attempts(self, task: str) -> list[Attempt]:
        key = parse_task_key(task)
        with self.cond:
            current = self.job.tasks.get(key)
            # Attempts launched before a scheduler restart ran, most likely, where the task runs now.
            fallback = current.agent_id if current else ""
            return [Attempt(tid, self.attempt_agents.get(tid, fallback)) for tid in self.job.attempts(key)]

    def _agent_address(self, agent_id: str) -> str | None:
        known = self.agent_addresses.get(agent_id)
        if known:
            return known
        master = getattr(self.driver, "master", None)
        if isinstance(master, str) and master:
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
    if not sep or not index.isdigit() or not role:
        raise ValueError(f"task: {text!r}: expected ROLE:INDEX, e.g. worker:1")
    return TaskKey(role, int(index))
