"""The executor's end of the Mesos v1 executor HTTP API, following its recovery rules.

The agent starts a cold ``python -m tfmesos.executor`` for every task, so this driver is written
on the standard library's ``json`` and ``_socket`` (``tcp.py``) alone: pymesos' executor driver
costs ~60 ms of CPU to import (``http.client``, ``email``, ``ssl``, ``six``, ``addict``,
``http_parser``, its scheduler and operator drivers), twice the interpreter's own start. It
keeps pymesos' executor interface (the callbacks ``registered``, ``reregistered``,
``disconnected``, ``launchTask``, ``killTask``, ``frameworkMessage``, ``shutdown``, ``error``;
``sendStatusUpdate``, ``sendFrameworkMessage``, ``start``/``stop``/``abort``/``join``/``run``)
and its reading of the agent's ``MESOS_*`` variables.

Recovery (an agent restarted with ``--recover=reconnect``): an executor of a checkpointing
framework must re-subscribe within the agent's ``--executor_reregistration_timeout`` (2 s by
default), carrying every update the agent has not acknowledged and every task it has not seen an
update of. Each retry waits a random time up to ``MESOS_SUBSCRIPTION_BACKOFF_MAX``, as Mesos' own
executor library does; any refusal of SUBSCRIBE is retried (a starting agent answers 404 before
its executor endpoint is up, a recovering one 503); calls (UPDATE, MESSAGE) take a lock of their
own, so a call hanging on the restarting agent cannot stall the re-subscription; updates are kept
until the agent acknowledges them and go with the next SUBSCRIBE; after
``MESOS_RECOVERY_TIMEOUT`` without an agent the executor is shut down. Without checkpointing, a
lost agent shuts the executor down at once.

An agent that no restart can ever recover (the embedded master's, whose work directory goes with
its process: ``tfmesos run``'s, or ``tfmesos local-master`` without ``--work-dir``) says so in
``LOCALMESOS_AGENT_PROCESS`` ("PID START": its process and when that started). The executor then
watches that process (a pidfd: the kernel's word, whatever ends it, ``kill -9`` and the OOM killer
too; the start time tells a reused pid apart) and shuts down as soon as it is gone, instead of
waiting ``MESOS_RECOVERY_TIMEOUT`` (15 minutes) for an agent that cannot come back. Real Mesos
never sets it: there, and with ``local-master --work-dir``, the recovery rules above hold.
"""
from __future__ import annotations

import binascii
import json
import os
import sys
import threading
import time

from . import recordio, tcp
from .calls_http import CallConnection, address

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_BACKOFF_MAX = 2.0  # the agent's EXECUTOR_REREGISTRATION_RETRY_INTERVAL_MAX
DEFAULT_RECOVERY_TIMEOUT = 900.0  # the agent's --recovery_timeout
# "PID START" of an embedded agent's process that no restart can recover (localmesos' agent sets it).
AGENT_PROCESS_ENV = "LOCALMESOS_AGENT_PROCESS"
AGENT_POLL_SECONDS = 1.0  # where there are no pidfds: how often the agent's process is looked at
CALL_TIMEOUT = 10.0  # an UPDATE or MESSAGE call (pymesos' http_timeout)
# An UPDATE whose call failed while the stream stays up (a starved agent that did not read it in
# CALL_TIMEOUT: seen with 1,000 executors on three real agents, 30 tasks left STAGING) is sent
# again, same uuid (the agent acknowledges a duplicate and keeps one), after a random wait up to
# UPDATE_RETRY_MIN, then doubling up to UPDATE_RETRY_MAX: the agent's own retry intervals toward
# the master. A broken stream needs none of it: the next SUBSCRIBE carries the update.
UPDATE_RETRY_MIN, UPDATE_RETRY_MAX = 10.0, 600.0
CONNECT_TIMEOUT = 10.0
API = "/api/v1/executor"

# stout's Duration units (what Mesos writes in MESOS_* variables: "2secs", "15mins", "100ms").
_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "secs": 1.0, "mins": 60.0, "hrs": 3600.0, "days": 86400.0,
          "weeks": 604800.0}


class LazyLogger:
    """``logging.getLogger(name)``, imported on first use: an executor whose task runs without a
    hitch logs nothing but ``note``'s lines, and ``logging``'s import with its ``basicConfig`` is
    ~30M instructions (~5 ms) of every cold executor's CPU. ``configure(**basicConfig)`` is
    applied then, where the process set nothing up itself."""

    def __init__(self, name: str) -> None:
        self._name, self._config, self._logger = name, None, None

    def configure(self, **config: Any) -> None:
        self._config = config

    def note(self, msg: str, *args: Any) -> None:
        """An INFO line of the happy path (a small gang's executor says where its ClusterSpec came
        from), written on stderr as ``configure``'s format and level would have logging write it,
        without importing logging while nothing else has; through logging otherwise."""
        config = self._config or {}
        form = config.get("format", "")
        rest = form
        for field in _NOTE_FIELDS:
            rest = rest.replace(f"%({field})s", "")
        if self._logger is not None or "logging" in sys.modules or config.get("level") != "INFO" or not form \
                or "%" in rest:
            self.info(msg, *args)
            return
        now = time.time()
        line = form.replace("%(asctime)s", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
                            + f",{int(now % 1 * 1000):03d}")
        line = line.replace("%(name)s", self._name).replace("%(levelname)s", "INFO")
        sys.stderr.write(line.replace("%(message)s", msg % args if args else msg) + "\n")
        sys.stderr.flush()

    def __getattr__(self, attr: str) -> Any:  # debug, info, warning, error, exception, ...
        if self._logger is None:
            import logging

            if self._config is not None:
                logging.basicConfig(**self._config)
            self._logger = logging.getLogger(self._name)
        return getattr(self._logger, attr)


# The fields ``LazyLogger.note`` writes itself (a format with any other: through logging).
_NOTE_FIELDS = ("asctime", "name", "levelname", "message")


log = LazyLogger("tfmesos.executor")


def parse_duration(text: str, default: float) -> float:
    """A stout duration ("2secs", "15mins", "1.5hrs") in seconds; ``default`` for anything else.
    The whole unit must match: "2mins" is 120 s, never 2 ns. (Read without a regex: each
    compiled pattern is ~0.25 ms of a cold executor.)"""
    text = (text or "").strip()
    for unit in sorted(_UNITS, key=len, reverse=True):  # "mins" before "ns"
        if text.endswith(unit):
            number = _stout_number(text[:-len(unit)].rstrip())
            if number is not None:
                return number * _UNITS[unit]
    return default


def _stout_number(text: str) -> float | None:
    """Digits with an optional fraction and exponent ("3", "1.5", "1e2"), else None (no sign)."""
    body, e, exponent = text.replace("E", "e").partition("e")
    whole, _, fraction = body.partition(".")
    if not whole.isdecimal() or (fraction and not fraction.isdecimal()):
        return None
    if e and not (exponent[1:] if exponent[:1] in ("+", "-") else exponent).isdecimal():
        return None
    return float(text)


def _up_to(seconds: float) -> float:
    """A random wait in [0, seconds): executors that retry together do not retry in step."""
    return seconds * int.from_bytes(os.urandom(4), "big") / 2**32


def _uuid_key(value: str) -> bytes:
    """An update's uuid as bytes: the agent may echo it in another base64 spelling."""
    return binascii.a2b_base64(value)


def _new_uuid() -> str:
    """A random (version 4) UUID's 16 bytes in base64, as Mesos carries them."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return binascii.b2a_base64(bytes(raw), newline=False).decode()


class SubscribeRefused(Exception):
    """The agent answered SUBSCRIBE with something other than 200: retried after the backoff."""


class RecoveringExecutorDriver:
    def __init__(self, executor: Any) -> None:
        env = os.environ
        self.agent = env["MESOS_AGENT_ENDPOINT"]
        framework_id = env["MESOS_FRAMEWORK_ID"]
        assert framework_id
        self.framework_id = {"value": framework_id}
        self.executor_id = {"value": env["MESOS_EXECUTOR_ID"]}
        self.grace_shutdown_period = parse_duration(env.get("MESOS_EXECUTOR_SHUTDOWN_GRACE_PERIOD", ""), 0.0)
        self.checkpoint = bool(env.get("MESOS_CHECKPOINT"))
        self.local = bool(env.get("MESOS_LOCAL"))
        self.backoff_max = parse_duration(env.get("MESOS_SUBSCRIPTION_BACKOFF_MAX", ""), DEFAULT_BACKOFF_MAX)
        self.recovery_timeout = parse_duration(env.get("MESOS_RECOVERY_TIMEOUT", ""), DEFAULT_RECOVERY_TIMEOUT)
        self.agent_process = _agent_process(env.get(AGENT_PROCESS_ENV, ""))  # (pid, start): one that cannot recover
        self.executor = executor
        self.executor_info: dict[str, Any] | None = None
        self.framework_info: dict[str, Any] | None = None
        self.tasks: dict[str, dict[str, Any]] = {}  # launched, no update of theirs acknowledged yet
        self.updates: dict[bytes, dict[str, Any]] = {}  # sent, not acknowledged yet
        self.connected = False  # subscribed: the event stream is open
        self.failed = False  # the event thread ended on an error
        self._started = False
        self._lock = threading.RLock()
        self._acknowledged = threading.Condition(self._lock)
        self._stopping = threading.Event()  # wakes a backoff wait
        self._call_lock = threading.Lock()
        self._conn: CallConnection | None = None
        self._stream: tcp.Socket | None = None
        self._thread: threading.Thread | None = None
        self._recovery_timer: threading.Timer | None = None

    # -- the driver's life
    @property
    def running(self) -> bool:
        return self._started

    @property
    def aborted(self) -> bool:
        return not self._started

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="tfmesos-executor-driver", daemon=True)
        self._thread.start()
        if self.agent_process is not None:
            threading.Thread(target=self._watch_agent_process, name="tfmesos-executor-agent-watch",
                             daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            self._started = False
            self._acknowledged.notify_all()
            stream = self._stream
        self._stopping.set()
        if stream is not None:  # wakes the event thread's read
            try:
                stream.shutdown(tcp.SHUT_RDWR)
            except OSError:
                pass

    abort = stop

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def run(self) -> None:
        self.start()
        self.join()

    # -- calls
    def sendStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802 (pymesos' API)
        """Sent now if the agent is there, and kept until it acknowledges it: the next SUBSCRIBE
        carries what it has not."""
        status = {"timestamp": time.time(), "uuid": _new_uuid(), "source": "SOURCE_EXECUTOR", **status}
        key = _uuid_key(status["uuid"])
        with self._lock:
            self.updates[key] = {"status": status}
        body = {"type": "UPDATE", "executor_id": self.executor_id, "framework_id": self.framework_id,
                "update": {"status": status}}
        self._send_update(key, body, 0.0)

    def _send_update(self, key: bytes, body: dict[str, Any], waited: float) -> None:
        """Send the update ``key`` unless the agent has it by now; on a failed call, again later."""
        with self._lock:
            if key not in self.updates or not self._started:
                return  # acknowledged (the failed call had reached it after all), or stopped
        status = body["update"]["status"]
        try:
            self._send(body)
        except Exception as exc:  # noqa: BLE001 - sent again below, or with the next SUBSCRIBE
            with self._lock:
                connected = self.connected
            if not connected:
                log.warning("%s of %s not delivered yet (%s); kept for the agent", status.get("state"),
                            status["task_id"]["value"], exc)
                return
            wait = min(max(2 * waited, UPDATE_RETRY_MIN), UPDATE_RETRY_MAX)
            log.warning("%s of %s not delivered yet (%s); sending it again within %.0f s", status.get("state"),
                        status["task_id"]["value"], exc, wait)
            timer = threading.Timer(_up_to(wait), self._send_update, (key, body, wait))
            timer.daemon = True
            timer.start()

    def sendFrameworkMessage(self, data: str) -> None:  # noqa: N802 (pymesos' API)
        self._send({"type": "MESSAGE", "executor_id": self.executor_id, "framework_id": self.framework_id,
                    "message": {"data": data}})

    def wait_acknowledged(self) -> bool:
        """Block until the agent has every update (True), or the driver stopped (False)."""
        with self._lock:
            while self.updates and self._started:
                self._acknowledged.wait(1.0)
            return not self.updates

    def _send(self, body: dict[str, Any]) -> None:
        """A call on a connection of its own, under a lock of its own: a call hanging on a
        restarting agent (up to the timeout) must not hold up the re-subscription."""
        with self._call_lock:
            with self._lock:
                if not self.connected:
                    raise RuntimeError("Not connected yet")
                if self._conn is None:  # one per agent address, dropped when the stream closes
                    host, port = self.agent.rsplit(":", 1)
                    self._conn = CallConnection(host, int(port), timeout=CALL_TIMEOUT)
                conn = self._conn
            try:
                conn.request("POST", API, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
            except Exception:
                conn.close()
                with self._lock:
                    if self._conn is conn:
                        self._conn = None
                raise
            if not 200 <= resp.status < 300:
                raise RuntimeError(f"the agent refused the call: HTTP {resp.status}: {resp.read()!r}")

    # -- the event thread
    def _run(self) -> None:
        try:
            while self._started:
                try:
                    self._subscribe()
                except SubscribeRefused as exc:
                    log.warning("the agent refused SUBSCRIBE for now (%s); retrying", exc)
                except OSError:
                    pass  # no agent (yet), or the stream broke
                if self._started:
                    self._lost()
        except Exception:  # noqa: BLE001 - e.g. a callback failed: the executor ends (exit 1)
            log.exception("the executor driver stopped on an error")
            self.failed = True
            self.stop()

    def _subscribe(self) -> None:
        """Connect, SUBSCRIBE, and handle the events until the stream ends."""
        host, port = self.agent.rsplit(":", 1)
        sock = tcp.connect(address(host, int(port)), CONNECT_TIMEOUT)
        try:
            sock.settimeout(None)
            with self._lock:
                if not self._started:
                    return
                self._stream = sock
                body = json.dumps({"type": "SUBSCRIBE", "framework_id": self.framework_id,
                                   "executor_id": self.executor_id,
                                   "subscribe": {"unacknowledged_tasks": list(self.tasks.values()),
                                                 "unacknowledged_updates": list(self.updates.values())}}).encode()
            sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                         % (API.encode(), self.agent.encode(), len(body), body))
            reader = tcp.reader(sock)
            status, headers = recordio.response_head(reader)
            if status != 200:
                raise SubscribeRefused(f"HTTP {status}")
            if not recordio.is_chunked(headers):
                raise RuntimeError("the agent's event stream is not chunked")
            with self._lock:
                self.connected = True
            for event in recordio.events(reader):
                if not self._started:
                    break
                self._on_event(event)
        finally:
            with self._lock:
                self._stream = None
                self.connected = False
                conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
            sock.close()

    def _lost(self) -> None:
        """The agent is away (refused, closed, or not there yet)."""
        self.executor.disconnected(self)
        if not self.checkpoint:  # the agent will not recover us: end now
            if not self.local:
                self._delay_kill()
            self.executor.shutdown(self)
            self.abort()
            return
        with self._lock:
            if self._recovery_timer is None:
                self._recovery_timer = threading.Timer(self.recovery_timeout, self._recovery_expired)
                self._recovery_timer.daemon = True
                self._recovery_timer.start()
        # A random wait up to the agent's maximum: back within its re-registration timeout, and
        # the agent's executors do not retry in step.
        self._stopping.wait(_up_to(self.backoff_max))

    def _watch_agent_process(self) -> None:
        """Shut down once the agent's process is gone: no agent will ever recover this executor."""
        assert self.agent_process is not None
        pid, start = self.agent_process
        wait_process_end(pid, start)
        with self._lock:
            if not self._started:
                return
        log.error("the agent's process (pid %d) is gone, and its work directory with it: no agent can recover "
                  "this executor; shutting down", pid)
        if not self.local:
            self._delay_kill()
        self.executor.shutdown(self)
        self.abort()

    def _recovery_expired(self) -> None:
        with self._lock:
            if self._recovery_timer is None or self.connected or not self._started:
                return
        log.error("no agent for %s (MESOS_RECOVERY_TIMEOUT): shutting down", self.recovery_timeout)
        self.executor.shutdown(self)
        self.abort()

    def _delay_kill(self) -> None:
        """The whole process group SIGKILLed after the grace period, should shutting down hang."""
        def kill() -> None:
            import signal

            time.sleep(self.grace_shutdown_period)
            os.killpg(0, signal.SIGKILL)

        threading.Thread(target=kill, name="tfmesos-executor-kill", daemon=True).start()

    # -- events
    def _on_event(self, event: dict[str, Any]) -> None:
        kind = str(event.get("type", "")).lower()
        if kind == "heartbeat":
            return
        if kind == "shutdown":
            if not self.local:
                self._delay_kill()
            self.executor.shutdown(self)
            # The executor kills its task and reports TASK_KILLED, which needs the agent: the driver
            # stays until the executor stops it, or the grace period ends (aborting at once lost
            # the update, and the agent then failed the task: REASON_EXECUTOR_TERMINATED).
            timer = threading.Timer(self.grace_shutdown_period, self.abort)
            timer.daemon = True
            timer.start()
            return
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None or kind not in event:
            log.error("unexpected event from the agent: %.300s", event)
            return
        handler(event[kind])

    def _on_subscribed(self, info: dict[str, Any]) -> None:
        assert info["executor_info"]["executor_id"] == self.executor_id
        assert info["framework_info"]["id"] == self.framework_id
        with self._lock:
            if self._recovery_timer is not None:
                self._recovery_timer.cancel()
                self._recovery_timer = None
        if self.executor_info is None:
            self.executor_info, self.framework_info = info["executor_info"], info["framework_info"]
            self.executor.registered(self, self.executor_info, self.framework_info, info["agent_info"])
        else:
            self.executor.reregistered(self, info["agent_info"])

    def _on_launch(self, event: dict[str, Any]) -> None:
        task = event["task"]
        with self._lock:
            assert task["task_id"]["value"] not in self.tasks
            self.tasks[task["task_id"]["value"]] = task
        self.executor.launchTask(self, task)

    def _on_kill(self, event: dict[str, Any]) -> None:
        # The KILL's kill_policy (a grace period between SIGTERM and SIGKILL) overrides the task's.
        self.executor.killTask(self, event["task_id"], event.get("kill_policy"))

    def _on_acknowledged(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.updates.pop(_uuid_key(event["uuid"]), None)
            self.tasks.pop(event["task_id"]["value"], None)
            self._acknowledged.notify_all()

    def _on_message(self, event: dict[str, Any]) -> None:
        self.executor.frameworkMessage(self, event["data"])

    def _on_error(self, event: dict[str, Any]) -> None:
        self.executor.error(self, event["message"])


def _agent_process(text: str) -> tuple[int, int | None] | None:
    """LOCALMESOS_AGENT_PROCESS's "PID START" (START may be missing), or None."""
    words = text.split()
    try:
        return (int(words[0]), int(words[1]) if len(words) > 1 else None) if words else None
    except ValueError:
        return None


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (/proc/PID/stat's 22nd field, clock ticks after boot); None when
    there is none, or it has ended (a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def wait_process_end(pid: int, start: int | None) -> None:
    """Return once process ``pid`` (the one that started at ``start``) has ended: at once when it
    is not there (or that pid is another process' by now)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        # Checked after the pidfd is open: from then on the pidfd is that process, whoever gets the pid.
        if process_start(pid) is None or (start is not None and process_start(pid) != start):
            return
        if pidfd is not None:
            import select

            select.select([pidfd], [], [])  # readable once the process has ended
            return
        while process_start(pid) == start or (start is None and process_start(pid) is not None):
            time.sleep(AGENT_POLL_SECONDS)
    finally:
        if pidfd is not None:
            os.close(pidfd)
