"""The pymesos scheduler: translates Mesos events into calls on the core ``Job`` and the
core's actions back into Mesos calls. All decisions live in ``tfmesos.core``.

Thread model: pymesos delivers events on its IO thread; the runner's thread waits for the
next deadline and calls ``tick``. Both go through one lock. A callback never raises into
pymesos, which would tear the framework (and the job) down.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
import time
from typing import Any, Callable

from .core import actions as act
from .core.job import FINISHING, LIVE, PLACING, Job, StatusUpdate
from .core.offers import parse_offer
from .core.quota import quota_shortfall
from .mesos.taskinfo import ExecutorSettings, OfferLedger, build_task_info, decode
from .spec import JobSpec
from .state_store import StateStore

log = logging.getLogger("tfmesos.scheduler")

QUOTA_PROBE_EVERY = 1.0  # seconds between quota questions to the master while placement waits
# Permanent refusals: no re-subscription changes them (a role the ACLs refuse: trace 09-authz).
FATAL_ERRORS = ("Framework has been removed", "Framework failed over", "Not authorized to register framework")


def options_digest(options: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:16]


def _guard(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(self: "JobScheduler", *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception:  # noqa: BLE001 - a raise here would make pymesos TEARDOWN the framework
            log.exception("error in %s (the job goes on)", method.__name__)
    return wrapper


def parse_status(status: dict[str, Any]) -> StatusUpdate:
    exit_code, log_tail = None, ""
    if status.get("data"):
        try:
            data = decode(status["data"])
            exit_code, log_tail = data.get("exit_code"), data.get("log_tail", "")
        except (ValueError, TypeError, AttributeError):
            pass
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
    ):
        self.job, self.spec, self.options, self.settings = job, spec, options, settings
        self.store = store
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
        self._events_seen = len(job.events)  # the job's notable events already shown

    # ------------------------------------------------------------------ persistence
    def persist(self) -> None:
        if self.store is None or self.framework_id is None:
            return
        self.store.save(
            {
                "framework_id": self.framework_id,
                "options_digest": options_digest(self.options),
                "options": self.options,
                "job": self.job.to_dict(),
            }
        )

    # ------------------------------------------------------------------ applying actions
    def _apply(self, actions: list[act.Action], durable: bool = True) -> None:
        """Persist first, then act: a task id is on disk before Mesos hears of it.

        ``durable=False`` skips the write for events a restarted scheduler learns again anyway
        (a task becoming RUNNING: reconciliation reports it), unless they led to a launch, kill
        or the end. Writing the whole job on every event would cost O(tasks) per event.
        """
        if durable or any(isinstance(a, (act.Launch, act.Kill, act.Done)) for a in actions):
            self.persist()
        for text in self.job.events[self._events_seen:]:
            self.on_event(text)
        self._events_seen = len(self.job.events)
        for a in actions:
            try:
                self._apply_one(a)
            except Exception:  # noqa: BLE001 - e.g. not connected; the core retries via tick/reconcile
                log.exception("could not carry out %s", type(a).__name__)
        self.cond.notify_all()

    def _apply_one(self, a: act.Action) -> None:
        d = self.driver
        if isinstance(a, act.Launch):
            raw = self.raw_offers.pop(a.offer_id)
            ledger = OfferLedger(raw, self.spec.service.revocable)
            infos = [build_task_info(self.spec, t, a.agent_id, ledger, self.settings) for t in a.tasks]
            for t in a.tasks:
                self.on_event(f"launch {t.key} as {t.task_id} on {a.hostname}:{t.port}")
            d.launchTasks([{"value": a.offer_id}], infos, {"refuse_seconds": 2.0})
        elif isinstance(a, act.Decline):
            ids = [{"value": oid} for oid in a.offer_ids]
            for oid in a.offer_ids:
                self.raw_offers.pop(oid, None)
            if ids:
                d.declineOffer(ids, {"refuse_seconds": a.refuse_seconds})
        elif isinstance(a, act.Kill):
            d.killTask({"value": a.task_id})
        elif isinstance(a, act.SendClusterSpec):
            from pymesos import encode_data

            d.sendFrameworkMessage(
                {"value": a.task_id}, {"value": a.agent_id}, encode_data(json.dumps(a.message).encode())
            )
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
            self.framework_id = framework_id["value"]
            self.on_event(f"registered as framework {self.framework_id} with {master_info.get('hostname')}:{master_info.get('port')}")
            self._apply(self.job.start())

    @_guard
    def reregistered(self, driver: Any, master_info: dict[str, Any]) -> None:
        with self.cond:
            self.driver, self.connected = driver, True
            self.framework_id = driver.framework_id
            self.on_event(f"re-registered as framework {self.framework_id}; reconciling")
            self._apply(self.job.start())

    @_guard
    def disconnected(self, driver: Any) -> None:
        with self.cond:
            self.connected = False
            self.raw_offers.clear()
            for oid in list(self.job.held):
                self.job.rescinded(oid)

    @_guard
    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        with self.cond:
            parsed = []
            for raw in offers:
                o = parse_offer(raw, self.spec.service.revocable)
                self.raw_offers[o.id] = raw
                parsed.append(o)
            self._apply(self.job.offers(parsed, self.clock()), durable=False)

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
            # While finishing, the end itself (Done) is what a restart needs; each task's last
            # update need not be written (that would be O(tasks) per update, O(tasks^2) per job).
            durable = update.state not in LIVE and self.job.phase != FINISHING
            self._apply(self.job.status(update, self.clock()), durable=durable)

    @_guard
    def frameworkMessage(self, driver: Any, executor_id: dict, agent_id: dict, data: str) -> None:  # noqa: N802
        msg = decode(data)
        if msg.get("type") == "output":
            self.on_output(msg.get("task_id", ""), list(msg.get("lines", [])))
            return
        if msg.get("type") == "need_spec":
            with self.cond:
                self._apply(self.job.executor_asks_spec(msg["task_id"]), durable=False)

    @_guard
    def slaveLost(self, driver: Any, agent_id: dict) -> None:  # noqa: N802
        self.on_event(f"agent {agent_id.get('value')} lost")

    @_guard
    def executorLost(self, driver: Any, executor_id: dict, agent_id: dict, status: int) -> None:  # noqa: N802
        log.info("executor %s on %s exited with status %s", executor_id.get("value"), agent_id.get("value"), status)

    @_guard
    def error(self, driver: Any, message: str) -> None:
        self.on_event(f"error from the master: {message}")
        if any(text in message for text in FATAL_ERRORS):
            with self.cond:
                self.result = act.Done(False, f"Mesos master: {message}")
                self.done.set()
                self.cond.notify_all()

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802
        pass

    # ------------------------------------------------------------------ the clock
    def run_until_done(self, stop_requested: threading.Event | None = None) -> act.Done:
        """Drive timers until the job reaches its end (or the master gives up on us)."""
        aborting = False
        with self.cond:
            while not self.done.is_set():
                now = self.clock()
                if stop_requested is not None and stop_requested.is_set() and not aborting:
                    aborting = True
                    self._apply(self.job.abort("stopped on request", now))
                    continue
                if self.connected:
                    self._check_quota(now)
                    self._apply(self.job.tick(now), durable=False)
                if self.done.is_set():
                    break
                self.cond.wait(timeout=max(0.05, min(self.job.next_deadline(now) - now, 1.0)))
        assert self.result is not None
        return self.result

    def _check_quota(self, now: float) -> None:
        """Near the placement timeout, ask the master whether the role's quota holds us back:
        then the job waits (and says so) instead of failing for want of offers."""
        job = self.job
        timeout = self.spec.policies.placement_timeout_seconds
        if self.quota_probe is None or job.phase != PLACING or now - job.placing_since < timeout * 0.8:
            return
        if now - self._quota_probed_at < QUOTA_PROBE_EVERY:
            return
        self._quota_probed_at = now
        role = self.spec.service.role
        answer = self.quota_probe(role)
        shortfall = None if answer is None else quota_shortfall(role, answer[0], answer[1], job.held_totals(),
                                                                job.pending_demand())
        if shortfall is not None:
            job.defer_placement(shortfall, now)
        elif self._quota_waiting:
            # The quota has room again: a full placement window to gather the offers.
            job.defer_placement(f"role {role}'s quota has room again: placing the job", now)
        else:
            return
        self._quota_waiting = shortfall is not None
        self._apply([], durable=False)

    def request_stop(self) -> None:
        with self.cond:
            self.cond.notify_all()

    def snapshot(self) -> dict[str, Any]:
        with self.cond:
            snap = self.job.snapshot()
            snap["framework_id"] = self.framework_id
            snap["connected"] = self.connected
            return snap
