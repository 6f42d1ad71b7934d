"""The scheduler's pymesos driver, adapted: the one module that reaches into pymesos' private
attributes (``_get_conn``, ``_conn``, ``_timeout``, ``_basic_credential``, ``_framework``,
``stream_id``; the executor's side is ``executor_driver``).

Here: the FrameworkInfo a job subscribes with, the driver class (our choice of capabilities,
calls on a kept-alive ``CallConnection``, pipelined gang ACCEPTs), waiting for SUBSCRIBED with a
deadline, stopping, and the option behind each refusal the master gives.
"""
from __future__ import annotations

import getpass
import json
import socket
import time
from typing import Any, Callable

from ..core.spec import JobSpec
from ..errors import UnreachableError
from .calls_http import CallConnection, CallResponse, CallSender


def connection_for(driver: Any, timeout: float | None) -> CallConnection | None:
    """pymesos' ``_get_conn``: the driver's connection to its master (or agent), made once."""
    if not driver.connected:
        return None
    if driver._conn is None:
        host, port = driver.master.split(":", 2)
        driver._conn = CallConnection(host, int(port), timeout=timeout)
    return driver._conn


def framework_info(spec: JobSpec, framework_id: str | None, webui_url: str) -> dict[str, Any]:
    svc = spec.service
    info: dict[str, Any] = {
        "user": svc.user or getpass.getuser(),
        "name": svc.name,
        "roles": list(svc.mesos_roles),
        # Offers name their role (allocation_info) and carry reservations in the refined form;
        # GPU_RESOURCES only for a job that wants GPUs, so CPU jobs never hold GPU agents.
        "capabilities": [{"type": c} for c in ("MULTI_ROLE", "RESERVATION_REFINEMENT")]
        + ([{"type": "GPU_RESOURCES"}] if spec.gpus_needed else [])
        + ([{"type": "REVOCABLE_RESOURCES"}] if svc.revocable else []),
        "failover_timeout": svc.failover_timeout,
        "checkpoint": True,
        "hostname": socket.gethostname(),
    }
    if webui_url:
        info["webui_url"] = webui_url
    if svc.principal:
        info["principal"] = svc.principal
    if framework_id:
        info["id"] = {"value": framework_id}
    return info


def driver_class(base: type) -> type:
    """pymesos adds GPU_RESOURCES to every framework on Mesos >= 1.0; keep our own choice. Calls
    go out on a ``CallConnection`` (mesos/calls_http.py): four per task in a big gang."""

    class Driver(base):  # type: ignore[misc, valid-type]
        def _get_conn(self) -> CallConnection | None:
            return connection_for(self, self._timeout)

        _sender: CallSender | None = None

        def launch_many(self, launches: list[tuple[str, list[dict[str, Any]], dict[str, Any]]],
                        answer: Callable[[list[str | None] | Exception], None]) -> None:
            """One ACCEPT (LAUNCH) per (offer id, task infos, filters), as pymesos' launchTasks
            builds it, pipelined by a ``CallSender``; ``answer`` gets, per call, None or why it was
            refused (or the exception that stopped them all)."""
            if not self.connected or self.framework_id is None:
                raise RuntimeError("Not connected yet")
            framework = {"value": self.framework_id}
            bodies = [json.dumps({"type": "ACCEPT", "framework_id": framework, "accept": {
                "offer_ids": [{"value": offer_id}],
                "operations": [{"type": "LAUNCH", "launch": {"task_infos": infos}}],
                "filters": filters}}).encode() for offer_id, infos, filters in launches]
            headers = {"Content-Type": "application/json"}
            if self.stream_id:
                headers["Mesos-Stream-Id"] = self.stream_id
            if self._basic_credential:
                headers["Authorization"] = self._basic_credential
            if self._sender is None:
                self._sender = CallSender("tfmesos-launches")

            def answered(result: list[CallResponse] | Exception) -> None:
                answer(result if isinstance(result, Exception) else [
                    None if 200 <= r.status < 300 else f"{r.status} {r.read()[:300].decode(errors='replace')}"
                    for r in result])

            self._sender.submit(self.master, "/api/v1/scheduler", bodies, headers, answered)

        def stop(self, *args: Any, **kwargs: Any) -> Any:
            if self._sender is not None:
                self._sender.close()
                self._sender = None
            return super().stop(*args, **kwargs)

        @property
        def framework(self) -> dict[str, Any]:
            info = super().framework
            wanted = self._framework.get("capabilities", [])
            if not any(c.get("type") == "GPU_RESOURCES" for c in wanted):
                kept = [c for c in info.get("capabilities", []) if c.get("type") != "GPU_RESOURCES"]
                info["capabilities"] = kept
            return info

    return Driver


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
    sched.released.set()  # let pymesos' IO thread out of a back-off wait
    driver.stop(failover=failover)
    driver.join()


def await_subscription(sched: Any, driver: Any, master: str, timeout: float, spec: JobSpec) -> None:
    """Wait up to ``timeout`` for SUBSCRIBED (or a refusal); pymesos itself would retry for a day."""
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
