"""The scheduler's side of Mesos, for one job's shell, whichever driver runs it.

- ``MesosAdapter``: a Scheduler in pymesos' callback interface (what both tfmesos' own driver,
  ``scheduler_driver.py``, and pymesos' ``MesosSchedulerDriver``, ``pymesos_driver.py``, call). It
  turns the callbacks into the plain events of ``events.py`` (never raising into the driver), and
  the shell's calls into driver calls (public driver methods only).
- The FrameworkInfo a job subscribes with, waiting for SUBSCRIBED with a deadline, stopping, and
  the option behind each refusal the master gives.
"""
from __future__ import annotations

import functools
import getpass
import logging
import socket
import time
from typing import Any, Callable, Protocol

from ..core.placement.maintenance import InverseOffer
from ..core.task_state import StatusUpdate
from ..core.spec import JobSpec
from ..errors import UnreachableError
from .operator import QUEUE_LABEL
from .events import OffersArrived, Subscribed, offers_arrived, parse_status, protocol_mismatch_of, ref, value_of
from .messages import ProtocolMismatch, decode
from .offers import parse_inverse_offer

log = logging.getLogger("tfmesos.mesos.driver")

LAUNCH_FILTERS = {"refuse_seconds": 2.0}


class JobEvents(Protocol):
    """What the adapter tells the job's shell (scheduler/job_shell.py), under no lock of its own."""

    def subscribed(self, event: Subscribed) -> None: ...
    def disconnected(self) -> bool: ...  # True: the run is ending, nothing to re-subscribe for
    def offers_arrived(self, event: OffersArrived) -> None: ...
    def offer_rescinded(self, offer_id: str) -> None: ...
    def inverse_offers(self, offers: list[InverseOffer]) -> None: ...
    def inverse_offer_rescinded(self, inverse_offer_id: str) -> None: ...
    def status_update(self, update: StatusUpdate) -> None: ...
    def executor_said(self, message: Any) -> None: ...  # a decoded messages.* from an executor
    def protocol_mismatch(self, reason: str) -> None: ...
    def agent_lost(self, agent_id: str) -> None: ...
    def master_error(self, message: str) -> None: ...


def _guard(method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(self: "MesosAdapter", *args: Any) -> Any:
        try:
            return method(self, *args)
        except Exception as exc:  # noqa: BLE001 - a raise here would make pymesos TEARDOWN the framework
            # One line for the user; the traceback with -v.
            log.error("error in %s (the job goes on): %s: %s", method.__name__, type(exc).__name__, exc,
                      exc_info=log.isEnabledFor(logging.DEBUG))
    return wrapper


class MesosAdapter:
    """pymesos' Scheduler callbacks (duck-typed) as events for ``shell``, and the shell's way to
    the master: one method per Mesos call it makes (public driver methods only)."""

    def __init__(self, shell: JobEvents, revocable: bool = False) -> None:
        self.shell, self.revocable = shell, revocable
        self.driver: Any = None

    # ------------------------------------------------------------------ the callbacks
    @_guard
    def registered(self, driver: Any, framework_id: dict[str, str], master_info: dict[str, Any]) -> None:
        self.driver = driver
        self.shell.subscribed(Subscribed(value_of(framework_id),
                                         f"{master_info.get('hostname')}:{master_info.get('port')}"))

    @_guard
    def reregistered(self, driver: Any, master_info: dict[str, Any]) -> None:
        self.driver = driver
        self.shell.subscribed(Subscribed(driver.framework_id,
                                         f"{master_info.get('hostname')}:{master_info.get('port')}", again=True))

    @_guard
    def disconnected(self, driver: Any) -> bool:
        """The stream is lost; True when the run is ending (nothing to re-subscribe for)."""
        return self.shell.disconnected()

    @_guard
    def resourceOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        self.shell.offers_arrived(offers_arrived(offers, self.revocable))

    @_guard
    def inverseOffers(self, driver: Any, offers: list[dict[str, Any]]) -> None:  # noqa: N802
        """A maintenance window ahead on these agents (core/job/maintenance.py decides)."""
        parsed = [o for o in map(parse_inverse_offer, offers) if o is not None]
        if parsed:
            self.shell.inverse_offers(parsed)

    @_guard
    def inverseOfferRescinded(self, driver: Any, offer_id: dict[str, str]) -> None:  # noqa: N802
        """Withdrawn: the schedule changed (a new one follows) or the agent was removed."""
        self.shell.inverse_offer_rescinded(value_of(offer_id))

    def operationStatusUpdate(self, driver: Any, status: dict[str, Any]) -> None:  # noqa: N802
        pass  # only for operations given an id, which tfmesos never gives

    @_guard
    def offerRescinded(self, driver: Any, offer_id: dict[str, str]) -> None:  # noqa: N802
        self.shell.offer_rescinded(value_of(offer_id))

    @_guard
    def statusUpdate(self, driver: Any, status: dict[str, Any]) -> None:  # noqa: N802
        mismatch = protocol_mismatch_of(status)
        if mismatch:  # as for a framework message: stop with the reason rather than relaunch in vain
            log.error("status update refused: %s", mismatch)
            self.shell.protocol_mismatch(mismatch)
        # pymesos acknowledges after we return: the new state is persisted by then.
        self.shell.status_update(parse_status(status))

    @_guard
    def frameworkMessage(self, driver: Any, executor_id: dict, agent_id: dict, data: str) -> None:  # noqa: N802
        try:
            msg = decode(data, f"executor {value_of(executor_id)}")
        except ProtocolMismatch as exc:
            # A tfmesos of another protocol on an agent: it would wait for peers it cannot be told
            # of, so the job stops with the reason rather than hanging half-started.
            log.error("framework message refused: %s", exc)
            self.shell.protocol_mismatch(str(exc))
            return
        except ValueError as exc:
            log.warning("framework message refused: %s", exc)
            return
        self.shell.executor_said(msg)

    @_guard
    def slaveLost(self, driver: Any, agent_id: dict) -> None:  # noqa: N802
        self.shell.agent_lost(value_of(agent_id))

    @_guard
    def executorLost(self, driver: Any, executor_id: dict, agent_id: dict, status: int) -> None:  # noqa: N802
        log.info("executor %s on %s exited with status %s", value_of(executor_id), value_of(agent_id), status)

    @_guard
    def error(self, driver: Any, message: str) -> None:
        self.shell.master_error(message)

    def processHeartBeat(self, driver: Any) -> None:  # noqa: N802
        pass

    # ------------------------------------------------------------------ calls to the master
    @property
    def master(self) -> str | None:
        """The master's host:port as the driver knows it (None before there is one)."""
        master = getattr(self.driver, "master", None) if self.driver is not None else None
        return master if isinstance(master, str) else None

    @property
    def pipelines_launches(self) -> bool:
        # Looked up on the class: test doubles answer every attribute through __getattr__.
        return hasattr(type(self.driver), "launch_many")

    def launch(self, offer_id: str, task_infos: list[dict[str, Any]]) -> None:
        self.driver.launchTasks([ref(offer_id)], task_infos, LAUNCH_FILTERS)

    def launch_many(self, launches: list[tuple[str, list[dict[str, Any]]]],
                    answer: Callable[[list[str | None] | Exception], None]) -> None:
        """A gang's LAUNCHes, (offer id, task infos) each, pipelined by the driver's sender."""
        self.driver.launch_many([(offer_id, infos, LAUNCH_FILTERS) for offer_id, infos in launches], answer)

    def accept_inverse_offers(self, inverse_offer_ids: list[str]) -> None:
        """The job gives these agents back for their windows (ACCEPT_INVERSE_OFFERS: advisory)."""
        self.driver.acceptInverseOffers([ref(oid) for oid in inverse_offer_ids])

    def decline(self, offer_ids: list[str], refuse_seconds: float) -> None:
        self.driver.declineOffer([ref(oid) for oid in offer_ids], {"refuse_seconds": refuse_seconds})

    def kill(self, task_id: str) -> None:
        self.driver.killTask(ref(task_id))

    def send(self, task_id: str, agent_id: str, data: str) -> None:
        """A framework message to the executor of ``task_id`` (tfmesos' executor id is its task's):
        pipelined off the event thread where the driver can (tfmesos' own)."""
        if hasattr(type(self.driver), "send_message_pipelined"):  # on the class: test doubles answer any name
            self.driver.send_message_pipelined(ref(task_id), ref(agent_id), data)
        else:
            self.driver.sendFrameworkMessage(ref(task_id), ref(agent_id), data)

    def revive(self) -> None:
        self.driver.reviveOffers()

    def suppress(self) -> None:
        self.driver.suppressOffers()

    def reconcile(self, task_ids: list[str]) -> None:
        self.driver.reconcileTasks([{"task_id": ref(t)} for t in task_ids])


def framework_info(spec: JobSpec, framework_id: str | None, webui_url: str) -> dict[str, Any]:
    svc = spec.service
    info: dict[str, Any] = {
        "user": svc.user or getpass.getuser(),
        "name": svc.name,
        "roles": list(svc.mesos_roles),
        # Offers name their role (allocation_info) and carry reservations in the refined form;
        # TASK_KILLING_STATE: a kill (a drain's included) says TASK_KILLING at once, with its reason;
        # GPU_RESOURCES only for a job that wants GPUs, so CPU jobs never hold GPU agents.
        "capabilities": [{"type": c} for c in ("MULTI_ROLE", "RESERVATION_REFINEMENT", "TASK_KILLING_STATE")]
        + ([{"type": "GPU_RESOURCES"}] if spec.gpus_needed else [])
        + ([{"type": "REVOCABLE_RESOURCES"}] if svc.revocable else []),
        "failover_timeout": svc.failover_timeout,
        "checkpoint": True,
        "hostname": socket.gethostname(),
        # Marks a tfmesos job in the master's state: younger jobs wait behind an older one that is
        # still being placed (core/queue.py's ``older_waiting``).
        "labels": {"labels": [{"key": QUEUE_LABEL, "value": "1"}]},
    }
    if webui_url:
        info["webui_url"] = webui_url
    if svc.principal:
        info["principal"] = svc.principal
    if framework_id:
        info["id"] = {"value": framework_id}
    return info


def refusal_hint(message: str) -> str:
    """The option behind a refusal the master gives (its exact texts: tests/data/mesos-traces)."""
    text = message.lower()
    if "not authorized" in text or "principal" in text or "authenticat" in text:
        return "check service.principal, the MESOS_SECRET variable and the master's ACLs for service.role"
    if "role" in text:
        return "check service.role (the master's --roles and the framework's capabilities)"
    if "user" in text or "root" in text:
        return "check service.user (root needs the master's --root_submissions)"
    if "failover_timeout" in text or "failover timeout" in text:
        return "check service.failover_timeout"
    if "failed over" in text:
        return "another scheduler took the job over with the same framework id; this one steps aside"
    if "removed" in text:
        return "the framework was torn down; start the job again (or remove its recorded state)"
    return "the master will refuse every retry: fix the option it names"


def stop_driver(sched: Any, driver: Any, failover: bool) -> None:
    release = getattr(driver, "release", None)  # pymesos' thread out of a back-off wait
    if release is not None:
        release()
    driver.stop(failover=failover)
    driver.join()


def await_subscription(sched: Any, driver: Any, master: str, timeout: float, spec: JobSpec) -> None:
    """Wait up to ``timeout`` for SUBSCRIBED (or a refusal); the drivers themselves retry for ever."""
    deadline = time.monotonic() + timeout
    with sched.cond:
        while not sched.subscribed_once and not sched.done.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sched.cond.wait(min(left, 0.5))
        if sched.subscribed_once or sched.done.is_set():
            return
    stop_driver(sched, driver, failover=True)  # never subscribed: there is nothing to tear down
    hint = " or service.principal and MESOS_SECRET" if spec.service.principal else ""
    raise UnreachableError(f"cannot subscribe to the Mesos master at {master}",
                           f"no SUBSCRIBED within {timeout:g} s", f"check --master{hint} and the master's log")
