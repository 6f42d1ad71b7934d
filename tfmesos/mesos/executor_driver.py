"""pymesos' executor driver, made to follow the v1 executor API's recovery rules.

When the agent goes away (a restart with ``--recover=reconnect``), an executor of a checkpointing
framework must re-subscribe within the agent's ``--executor_reregistration_timeout`` (2 s by
default), carrying every update the agent has not acknowledged and every task it has not seen an
update of. pymesos breaks this in five ways: it backs off 2 s doubling to 15 s between connects
(ignoring ``MESOS_SUBSCRIPTION_BACKOFF_MAX``); it retries a closed stream (the recovering agent's
503) at once and without end; it aborts on the 404 a starting agent answers; it holds the driver's
lock through each call, so a call hanging on the restarting agent stalls the re-subscription; and
it never remembers an update, so one sent while the agent is down is lost. Here: each retry waits
a random time up to ``MESOS_SUBSCRIPTION_BACKOFF_MAX``, as Mesos' own executor library does; any
refusal of SUBSCRIBE is retried; calls take a lock of their own; updates are kept until the agent
acknowledges them and go with the next SUBSCRIBE; after ``MESOS_RECOVERY_TIMEOUT`` without an
agent the executor is shut down.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import random
import re
import threading
import time
import uuid
from typing import Any

from pymesos import MesosExecutorDriver, process

from .calls_http import CallConnection

log = logging.getLogger("tfmesos.executor")


class _SubscribeConnection(process.Connection):  # type: ignore[misc]
    """pymesos' event-stream connection. For a driver that sets ``retry_refused``, an answer other
    than 200 to SUBSCRIBE ends the stream like a 503 (retried after the backoff) instead of
    aborting the driver: an agent that is starting answers 404 before its executor endpoint is
    installed (seen on Mesos 1.12), 503 while it recovers. Other drivers see no change."""

    def read(self) -> bool:
        try:
            return bool(super().read())
        except RuntimeError as exc:
            if getattr(self._callback, "retry_refused", False) and str(exc).startswith("Failed with HTTP"):
                log.warning("the agent refused SUBSCRIBE for now (%s); retrying", exc)
                return False
            raise


process.Connection = _SubscribeConnection  # pymesos' loop looks the class up in its module

# stout's Duration units (what Mesos writes in MESOS_* variables: "2secs", "15mins", "100ms").
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "secs": 1.0, "mins": 60.0, "hrs": 3600.0, "days": 86400.0,
          "weeks": 604800.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*(ns|us|ms|secs|mins|hrs|days|weeks)\s*")

DEFAULT_BACKOFF_MAX = 2.0  # the agent's EXECUTOR_REREGISTRATION_RETRY_INTERVAL_MAX
DEFAULT_RECOVERY_TIMEOUT = 900.0  # the agent's --recovery_timeout


def parse_duration(text: str, default: float) -> float:
    """A stout duration ("2secs", "15mins", "1.5hrs") in seconds; ``default`` for anything else.
    The whole unit must match: "2mins" is 120 s, never 2 ns."""
    match = _DURATION.fullmatch(text or "")
    return float(match.group(1)) * _UNITS[match.group(2)] if match else default


def _uuid_key(value: str) -> bytes:
    """An update's uuid as bytes: the agent may echo it in another base64 spelling."""
    return base64.b64decode(value)


class RecoveringExecutorDriver(MesosExecutorDriver):  # type: ignore[misc]
    retry_refused = True  # see _SubscribeConnection

    def __init__(self, executor: Any) -> None:
        super().__init__(executor, use_addict=False)  # reads the MESOS_* variables of os.environ
        env = os.environ
        self.backoff_max = parse_duration(env.get("MESOS_SUBSCRIPTION_BACKOFF_MAX", ""), DEFAULT_BACKOFF_MAX)
        self.recovery_timeout = parse_duration(env.get("MESOS_RECOVERY_TIMEOUT", ""), DEFAULT_RECOVERY_TIMEOUT)
        self._acknowledged = threading.Condition(self._lock)
        self._call_lock = threading.Lock()
        self._recovery_timer: threading.Timer | None = None

    # -- status updates: kept until the agent acknowledges them
    def sendStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802 (pymesos API)
        status = {"timestamp": time.time(), "uuid": base64.b64encode(uuid.uuid4().bytes).decode(),
                  "source": "SOURCE_EXECUTOR", **status}
        with self._lock:
            self.updates[_uuid_key(status["uuid"])] = {"status": status}
        body = {"type": "UPDATE", "executor_id": self.executor_id, "framework_id": self.framework_id,
                "update": {"status": status}}
        try:
            self._send(body)
        except Exception as exc:  # noqa: BLE001 - the agent is away: the next SUBSCRIBE carries it
            log.warning("%s of %s not delivered yet (%s); kept for the agent", status.get("state"),
                        status["task_id"]["value"], exc)

    def on_acknowledged(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.updates.pop(_uuid_key(event["uuid"]), None)
            self.tasks.pop(event["task_id"]["value"], None)
            self._acknowledged.notify_all()

    def wait_acknowledged(self) -> bool:
        """Block until the agent has every update (True), or the driver stopped (False)."""
        with self._lock:
            while self.updates and self._started:
                self._acknowledged.wait(1.0)
            return not self.updates

    # -- reconnecting
    def on_subscribed(self, info: dict[str, Any]) -> None:
        with self._lock:
            if self._recovery_timer is not None:
                self._recovery_timer.cancel()
                self._recovery_timer = None
        super().on_subscribed(info)

    def on_close(self) -> None:
        super().on_close()  # without checkpointing this stops the driver and shuts the executor down
        if not self.checkpoint or self.aborted:
            return
        with self._lock:
            if self._recovery_timer is None:
                self._recovery_timer = threading.Timer(self.recovery_timeout, self._recovery_expired)
                self._recovery_timer.daemon = True
                self._recovery_timer.start()
        # Every retry, after a refused connect or a closed stream (a recovering agent answers 503),
        # waits a random time up to the agent's maximum: it retries often enough to be back within
        # the agent's re-registration timeout, and agents' executors do not retry in step.
        time.sleep(random.uniform(0.0, self.backoff_max))

    def _backoff(self, num_conn_retry: int) -> float:
        return 0.0  # on_close has waited already (pymesos' own is 2 s doubling to 15 s)

    def _recovery_expired(self) -> None:
        with self._lock:
            if self._recovery_timer is None or self.connected:
                return
        log.error("no agent for %s (MESOS_RECOVERY_TIMEOUT): shutting down", self.recovery_timeout)
        self.executor.shutdown(self)
        self.abort()
        with self._lock:
            self._acknowledged.notify_all()

    def _get_conn(self) -> CallConnection | None:  # its calls on a light connection (calls_http.py)
        if not self.connected:
            return None
        if self._conn is None:  # made once per agent address (pymesos resets it on a reconnect)
            host, port = self.master.split(":", 2)  # pymesos names the agent "master"
            self._conn = CallConnection(host, int(port), timeout=self._http_timeout)
        return self._conn

    def _send(self, body: dict[str, Any], path: str = "/api/v1/executor", method: str = "POST",
              headers: dict[str, str] | None = None) -> dict[str, Any]:
        """A call (UPDATE, MESSAGE). pymesos holds the driver's lock for the whole call, so a call
        hanging on a restarting agent (up to the HTTP timeout) stalls the event thread, which needs
        that lock to re-subscribe: past the agent's 2 s. Calls take a lock of their own."""
        with self._call_lock:
            conn = self._get_conn()
            if conn is None:
                raise RuntimeError("Not connected yet")
            try:
                conn.request(method, path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
            except Exception:
                conn.close()
                with self._lock:
                    if self._conn is conn:
                        self._conn = None
                raise
            if not 200 <= resp.status < 300:
                raise RuntimeError(f"the agent refused the call: HTTP {resp.status}: {resp.read()!r}")
            resp.read()
            return {}
