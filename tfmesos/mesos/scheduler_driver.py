"""tfmesos' own driver for the Mesos v1 scheduler HTTP API: the default (``--driver own``).

It drives a scheduler written to pymesos' ``Scheduler`` interface (``registered``,
``reregistered``, ``disconnected``, ``resourceOffers``, ``inverseOffers``, ``offerRescinded``,
``inverseOfferRescinded``, ``statusUpdate``, ``operationStatusUpdate``, ``frameworkMessage``,
``slaveLost``, ``executorLost``, ``error``, ``processHeartBeat``) with pymesos' driver methods, so
``mesos/driver.py``'s ``MesosAdapter`` runs on either. This module is the I/O edge only: the
decisions (where the master is, what an answer means, how long to back off, when a silent stream
is dead, which callback an event goes to) are ``subscription.py``'s plain functions.

- One thread reads the SUBSCRIBE stream (``recordio``) and calls the scheduler, in the events'
  order; status updates that carry a uuid are acknowledged once ``statusUpdate`` returns (the
  ACKNOWLEDGE queued, with framework messages, for a sender of their own: pipelined).
- Calls go out on a kept-alive ``CallConnection`` (``calls_http``) with the stream's
  ``Mesos-Stream-Id`` and HTTP basic credentials; a gang's ACCEPTs pipelined by a ``CallSender``.
- The master: HOST:PORT, a 307's ``Location`` (a master that does not lead), or the leader a
  ``zk://`` URL names (``master_detector``), followed when it changes.
- Resubscribing keeps the framework id (failover); after a stream that failed or dropped at once
  it backs off (0.5 s doubling to 15 s, jittered); a stream silent for five heartbeats is dead.
- What no retry fixes ends the driver, never the framework: a refused SUBSCRIBE (400, 401, 403...)
  or an ERROR event goes to ``error`` and nothing is subscribed again. Only ``stop()`` (without
  failover) sends TEARDOWN.

Where pymesos differs, by design: no ``GET /version`` (the scheduler chooses its capabilities),
no SIGINT handler, a callback's exception is logged instead of ending the driver.
"""
from __future__ import annotations

import base64
import json
import logging
import os
import socket
import threading
import time
from typing import Any, Callable

from . import recordio, subscription as sub
from .calls_http import CallConnection, CallResponse, CallSender

log = logging.getLogger("tfmesos.mesos.scheduler_driver")

API = "/api/v1/scheduler"
CONNECT_TIMEOUT = 10.0  # to connect, and for the answer to SUBSCRIBE to begin
CALL_TIMEOUT = 30.0
# A pipelined call is answered once the master has handled it and every call before it: a -O0
# Mesos 1.12 master on a loaded machine took 6 s to parse a 363-task ACCEPT and ~65 s to launch its
# tasks, so with 30 s the second and third ACCEPTs of a 1,000-task gang were dropped with the
# connection (issue 40). A master that is gone ends the subscription stream long before this.
PIPELINED_CALL_TIMEOUT = 600.0


class StreamEnded(Exception):
    """The stream ended: ``kind`` is one of subscription's answers (RETRY, REDIRECT, REFUSED)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class SchedulerDriver:
    """pymesos' ``MesosSchedulerDriver``'s constructor and methods, on the v1 HTTP API (see the
    module). ``failover`` is taken for pymesos' signature only: pymesos tears the framework down
    when its thread fails unless it is set; this driver never tears down but on ``stop()``."""

    def __init__(self, sched: Any, framework: dict[str, Any], master_uri: str, use_addict: bool = False,
                 implicit_acknowledgements: bool = True, principal: str | None = None,
                 secret: str | None = None, failover: bool = False,
                 heartbeat_misses: int = sub.HEARTBEAT_MISSES) -> None:
        if use_addict:
            raise ValueError("use_addict: tfmesos' driver hands plain dicts to the scheduler")
        self.sched = sched
        self.url = sub.parse_master(master_uri)
        self.framework_info = dict(framework)
        self.framework_id: str | None = (framework.get("id") or {}).get("value")
        self.implicit_acknowledgements = implicit_acknowledgements
        self.failover = failover
        self.heartbeat_misses = heartbeat_misses
        self._credential = (
            "Basic " + base64.b64encode(f"{principal}:{secret}".encode()).decode() if principal and secret else None)
        self.master: str | None = self.url.address or None  # HOST:PORT of the master now talked to
        self.connected = False  # subscribed: the stream is open
        self.stream_id: str | None = None
        self.version: str | None = None  # the master's, from SUBSCRIBED
        self.heartbeat_interval: float | None = None
        self._registered_once = self.framework_id is not None  # pymesos: reregistered() when given an id
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._started = self._stopping = False
        self._closing = False  # stop() closes the stream (after its TEARDOWN)
        self._ended_on_error = False
        self._redirect: str | None = None
        self._detected: str | None = None
        self._detector: Any = None
        self._stream: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._call_lock = threading.Lock()
        self._conn: CallConnection | None = None
        self._sender: CallSender | None = None  # a gang's ACCEPTs
        self._messages: CallSender | None = None  # framework messages (the ClusterSpec's answers), acknowledgements

    # ------------------------------------------------------------------ the driver's life
    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started, self._stopping, self._closing = True, False, False
        if self.url.detected:
            from .master_detector import ZkMasterDetector

            self._detector = ZkMasterDetector(self.url.zk_hosts, self.url.zk_path, self._leader_changed)
            self._detector.start()
        self._thread = threading.Thread(target=self._run, name="tfmesos-scheduler-driver", daemon=True)
        self._thread.start()

    def stop(self, failover: bool = False) -> None:
        """Stop the stream; unless ``failover``, TEARDOWN first (Mesos then kills the framework's
        tasks and forgets it), as pymesos' ``stop``."""
        with self._lock:
            if self._stopping:
                return
            # First: the stream the master closes after TEARDOWN must not be subscribed to again.
            self._stopping = True
            self._wake.notify_all()
            teardown = not failover and self.connected and self.framework_id
            calls, self._messages = self._messages, None
        if calls is not None:  # the acknowledgements and answers queued go first (before a TEARDOWN)
            calls.close(wait=CALL_TIMEOUT)
        if teardown:
            try:
                self._call(sub.call("TEARDOWN", self.framework_id))  # type: ignore[arg-type]
            except (OSError, RuntimeError) as exc:
                log.warning("TEARDOWN not sent (%s): Mesos ends the framework after its failover_timeout", exc)
        with self._lock:
            self._closing, stream = True, self._stream
        _shut(stream)
        if self._detector is not None:
            self._detector.stop()
        if self._sender is not None:
            self._sender.close()
        self._sender = None
        with self._call_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def abort(self) -> None:
        """Stop without tearing the framework down (pymesos' abort tears it down: not here)."""
        self.stop(failover=True)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        """Its thread still reads or waits to subscribe again."""
        return self._thread is not None and self._thread.is_alive()

    def run(self) -> None:
        self.start()
        self.join()

    @property
    def stopped(self) -> bool:
        """The driver ended: stopped, or on what no retry fixes (said to ``error``)."""
        return self._stopping or self._ended_on_error

    # ------------------------------------------------------------------ calls (pymesos' names)
    def launchTasks(self, offer_ids: Any, tasks: list[dict[str, Any]], filters: dict[str, Any] | None = None) -> None:  # noqa: N802
        if not tasks:
            return self.declineOffer(offer_ids, filters)
        self.acceptOffers(offer_ids, [{"type": "LAUNCH", "launch": {"task_infos": tasks}}], filters)

    def acceptOffers(self, offer_ids: Any, operations: list[dict[str, Any]], filters: dict[str, Any] | None = None) -> None:  # noqa: N802
        if not operations:
            return self.declineOffer(offer_ids, filters)
        body = {"offer_ids": sub.offer_ids(offer_ids), "operations": operations}
        if filters is not None:
            body["filters"] = filters
        self._framework_call("ACCEPT", body)

    def declineOffer(self, offer_ids: Any, filters: dict[str, Any] | None = None) -> None:  # noqa: N802
        body: dict[str, Any] = {"offer_ids": sub.offer_ids(offer_ids)}
        if filters is not None:
            body["filters"] = filters
        self._framework_call("DECLINE", body)

    def reviveOffers(self, roles: Any = ()) -> None:  # noqa: N802
        self._framework_call("REVIVE", {"roles": [roles] if isinstance(roles, str) else list(roles)} if roles else None)

    def suppressOffers(self, roles: Any = ()) -> None:  # noqa: N802
        self._framework_call("SUPPRESS", {"roles": [roles] if isinstance(roles, str) else list(roles)} if roles else None)

    def killTask(self, task_id: dict[str, str], agent_id: dict[str, str] | None = None) -> None:  # noqa: N802
        self._framework_call("KILL", {"task_id": task_id, **({"agent_id": agent_id} if agent_id else {})})

    def acknowledgeStatusUpdate(self, status: dict[str, Any]) -> None:  # noqa: N802
        """Handed to the pipelined sender (as the ClusterSpec's answers are): a round trip per
        update on the event thread held every event behind it, two per task of a gang."""
        ack = sub.acknowledgement(status)
        if ack is not None:
            self._pipelined_call("ACKNOWLEDGE", ack, (status.get("task_id") or {}).get("value", ""))

    def reconcileTasks(self, tasks: list[dict[str, Any]]) -> None:  # noqa: N802
        self._framework_call("RECONCILE", {"tasks": tasks})

    def sendFrameworkMessage(self, executor_id: dict[str, str], agent_id: dict[str, str], data: str) -> None:  # noqa: N802
        self._framework_call("MESSAGE", {"agent_id": agent_id, "executor_id": executor_id, "data": data})

    def acceptInverseOffers(self, inverse_offer_ids: Any, filters: dict[str, Any] | None = None) -> None:  # noqa: N802
        body: dict[str, Any] = {"inverse_offer_ids": sub.offer_ids(inverse_offer_ids)}
        if filters is not None:
            body["filters"] = filters
        self._framework_call("ACCEPT_INVERSE_OFFERS", body)

    def declineInverseOffer(self, inverse_offer_ids: Any, filters: dict[str, Any] | None = None) -> None:  # noqa: N802
        body: dict[str, Any] = {"inverse_offer_ids": sub.offer_ids(inverse_offer_ids)}
        if filters is not None:
            body["filters"] = filters
        self._framework_call("DECLINE_INVERSE_OFFERS", body)

    declineInverseOffers = declineInverseOffer  # noqa: N815

    def send_message_pipelined(self, executor_id: dict[str, str], agent_id: dict[str, str], data: str) -> None:
        """A MESSAGE call handed to the sender's thread (``CallSender``: queued calls go out in one
        pipeline): a big gang's executors each ask for the ClusterSpec, and answering them one round
        trip at a time on the event thread held up the status updates behind them. Dropped while
        there is no subscription, as ``_framework_call``; a refusal is logged."""
        self._pipelined_call("MESSAGE", {"agent_id": agent_id, "executor_id": executor_id, "data": data},
                             executor_id.get("value", ""))

    def _pipelined_call(self, kind: str, payload: dict[str, Any], about: str) -> None:
        """A framework call queued for the calls' sender (one thread, one kept-alive connection: what
        is queued meanwhile goes out in one pipeline), in the order queued; ``about`` names its task
        or executor in the log of a call that was refused or not delivered."""
        with self._lock:
            if not self.connected or self.framework_id is None or self.master is None or self._stopping:
                log.debug("%s dropped: not subscribed", kind)
                return
            body = json.dumps(sub.call(kind, self.framework_id, payload)).encode()
            headers, master = self._headers(), self.master
            if self._messages is None:
                self._messages = CallSender("tfmesos-calls", PIPELINED_CALL_TIMEOUT)
            sender = self._messages

        def answered(result: list[CallResponse] | Exception) -> None:
            # After stop() the master may have forgotten the framework (TEARDOWN): nothing to say.
            say = log.debug if self._stopping else log.warning
            if isinstance(result, Exception):
                say("%s for %s not delivered: %s", kind, about, result)
            elif not 200 <= result[0].status < 300:
                say("%s for %s refused: %s %s", kind, about, result[0].status,
                    result[0].read()[:300].decode(errors="replace"))

        sender.submit(master, API, [body], headers, answered)

    def launch_many(self, launches: list[tuple[str, list[dict[str, Any]], dict[str, Any]]],
                    answer: Callable[[list[str | None] | Exception], None]) -> None:
        """One ACCEPT (LAUNCH) per (offer id, task infos, filters), pipelined on a connection of
        their own (``CallSender``); ``answer`` gets, per call, None or why it was refused (or the
        exception that stopped them all)."""
        with self._lock:
            if not self.connected or self.framework_id is None or self.master is None:
                raise RuntimeError("Not connected yet")
            bodies = [json.dumps(sub.launch_call(self.framework_id, offer_id, infos, filters)).encode()
                      for offer_id, infos, filters in launches]
            headers, master = self._headers(), self.master
            if self._sender is None:
                self._sender = CallSender("tfmesos-launches", PIPELINED_CALL_TIMEOUT)
            sender = self._sender

        def answered(result: list[CallResponse] | Exception) -> None:
            answer(result if isinstance(result, Exception) else [
                None if 200 <= r.status < 300 else f"{r.status} {r.read()[:300].decode(errors='replace')}"
                for r in result])

        sender.submit(master, API, bodies, headers, answered)

    def _framework_call(self, kind: str, payload: dict[str, Any] | None) -> None:
        """A call of the subscribed framework; while there is no subscription it is dropped, as
        Mesos drops what a disconnected framework sends (reconciliation answers for it)."""
        with self._lock:
            if not self.connected or self.framework_id is None:
                log.debug("%s dropped: not subscribed", kind)
                return
            body = sub.call(kind, self.framework_id, payload)
        self._call(body)

    def _call(self, body: dict[str, Any]) -> None:
        """One call on the kept-alive connection. A refusal raises RuntimeError with the status and
        the master's answer, never the call (an ACCEPT carries the tasks' environment)."""
        with self._call_lock:
            with self._lock:
                master, headers = self.master, self._headers()
            if master is None:
                raise RuntimeError("Not connected yet")
            host, port = master.rsplit(":", 1)
            if self._conn is None or (self._conn.host, self._conn.port) != (host, int(port)):
                if self._conn is not None:
                    self._conn.close()
                self._conn = CallConnection(host, int(port), timeout=CALL_TIMEOUT)
            try:
                self._conn.request("POST", API, json.dumps(body).encode(), headers)
                resp = self._conn.getresponse()
            except (OSError, ValueError) as exc:
                self._conn.close()
                log.warning("%s to %s not delivered: %s", body["type"], master, exc)
                return  # the stream's end says the master is away; reconciliation covers the rest
        if not 200 <= resp.status < 300:
            raise RuntimeError(f"Failed to send request {resp.status}: {resp.read()[:300].decode(errors='replace')}")

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.stream_id:
            headers["Mesos-Stream-Id"] = self.stream_id
        if self._credential:
            headers["Authorization"] = self._credential
        return headers

    # ------------------------------------------------------------------ the master
    def _leader_changed(self, address: str | None) -> None:
        """ZooKeeper names another leader (or none): drop the stream to the old one."""
        with self._lock:
            self._detected, self._redirect = address, None
            stream = self._stream if self.master != address else None
            self._wake.notify_all()
        _shut(stream)

    def _target(self) -> str | None:
        with self._lock:
            return self._redirect or (self._detected if self.url.detected else self.url.address)

    # ------------------------------------------------------------------ the stream's thread
    def _run(self) -> None:
        quick = redirects = 0
        while True:
            with self._lock:
                while not self._stopping and self._target() is None:  # no leader in ZooKeeper yet
                    self._wake.wait()
                if self._stopping:
                    return
                target = self._target()
            subscribed_for: float | None = None
            try:
                subscribed_for = self._subscribe(target)  # type: ignore[arg-type]
                kind, detail = sub.RETRY, "the master closed the stream"
            except StreamEnded as ended:
                kind, detail = ended.kind, ended.detail
                subscribed_for = getattr(ended, "subscribed_for", None)
            except (OSError, ValueError) as exc:  # no master there, a dead link, not HTTP
                kind, detail = sub.RETRY, _why(exc)
                subscribed_for = getattr(exc, "subscribed_for", None)
            except Exception:  # noqa: BLE001 - a bug of ours: logged, and the link is tried again
                log.exception("the scheduler driver's stream failed")
                kind, detail = sub.RETRY, "an error in the driver"
            was_connected = self._drop_stream()
            if self._stopping:
                return
            if was_connected:
                _callback(self.sched, "disconnected", self)
            if kind == sub.REFUSED:
                self._ended_on_error = True
                log.debug("the driver ends: %s", detail)
                if detail:  # an ERROR event said it already
                    _callback(self.sched, "error", self, detail)
                return
            with self._lock:
                if kind == sub.REDIRECT:
                    redirects += 1
                    self._redirect = detail
                elif self._redirect is not None:
                    redirects, self._redirect = 0, None  # the master it named is not there: ask again
            log.info("%s at %s: %s", "redirected" if kind == sub.REDIRECT else "lost the Mesos master", target, detail)
            quick = sub.quick_failures_after(quick, subscribed_for)
            # A first redirect is followed at once; a master that keeps redirecting is backed off.
            delay = 0.0 if kind == sub.REDIRECT and redirects == 1 else sub.reconnect_delay(quick, _jitter())
            with self._lock:
                if delay and not self._stopping:
                    self._wake.wait(delay)

    def _subscribe(self, master: str) -> float:
        """Connect to ``master``, SUBSCRIBE, and hand the events over until the stream ends;
        returns how long it was subscribed. StreamEnded for an answer other than the stream."""
        host, port = master.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), CONNECT_TIMEOUT)
        subscribed_at: float | None = None
        reader: Any = None
        try:
            with self._lock:
                if self._stopping:
                    return 0.0
                self._stream, self.master = sock, master
                body = json.dumps(sub.subscribe_call(self.framework_info, self.framework_id)).encode()
            head = [f"POST {API} HTTP/1.1", f"Host: {master}", "Content-Type: application/json",
                    "Accept: application/json", "Connection: close", f"Content-Length: {len(body)}"]
            if self._credential:
                head.append(f"Authorization: {self._credential}")
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
            reader = sock.makefile("rb")
            status, headers = recordio.response_head(reader)
            kind = sub.answer_kind(status)
            if kind == sub.REDIRECT:
                raise StreamEnded(kind, sub.redirect_target(headers.get("location", ""), master))
            if kind != sub.STREAM:
                text = recordio.body(reader, headers).decode("utf-8", "replace")
                reason = _REASONS.get(status, "")
                raise StreamEnded(kind, sub.refusal(status, reason, text) if kind == sub.REFUSED
                                  else f"HTTP {status} {reason}".strip())
            if not recordio.is_chunked(headers):
                raise StreamEnded(sub.RETRY, "the master's event stream is not chunked")
            stream_id = headers.get("mesos-stream-id", "")
            for event in recordio.events(reader):
                if event.get("type") == "SUBSCRIBED":
                    subscribed_at = time.monotonic()
                    self._subscribed(sock, master, stream_id, event.get("subscribed") or {})
                elif event.get("type") == "ERROR":  # a refused subscription, or a fatal error
                    message = (event.get("error") or {}).get("message", "")
                    _callback(self.sched, "error", self, message)
                    raise StreamEnded(sub.REFUSED, "")  # Mesos closes the stream after it; no retry
                elif subscribed_at is None:
                    log.warning("an event before SUBSCRIBED: %.200s", event)
                else:
                    self._dispatch(event)
                if self._closing:  # not on _stopping: a TEARDOWN may still be on its way, on this subscription
                    break
            return 0.0 if subscribed_at is None else time.monotonic() - subscribed_at
        except (StreamEnded, OSError, ValueError) as exc:
            if subscribed_at is not None:
                exc.subscribed_for = time.monotonic() - subscribed_at  # type: ignore[union-attr]
            raise
        finally:
            if reader is not None:
                reader.close()  # the socket's descriptor closes with its last file
            sock.close()

    def _subscribed(self, sock: socket.socket, master: str, stream_id: str, info: dict[str, Any]) -> None:
        framework_id = (info.get("framework_id") or {}).get("value")
        if not framework_id:
            raise ValueError("SUBSCRIBED without a framework id")
        self.heartbeat_interval = info.get("heartbeat_interval_seconds")
        # A silent stream is dead after a few heartbeats (pymesos would wait forever).
        sock.settimeout(sub.stream_timeout(self.heartbeat_interval, self.heartbeat_misses))
        host, _, port = master.rpartition(":")
        self.version = (info.get("master_info") or {}).get("version")
        master_info = {"hostname": host, "port": int(port), "version": self.version}
        with self._lock:
            self.framework_id, self.stream_id, self.connected = framework_id, stream_id, True
            again, self._registered_once = self._registered_once, True
        if again:
            _callback(self.sched, "reregistered", self, master_info)
        else:
            _callback(self.sched, "registered", self, {"value": framework_id}, master_info)

    def _dispatch(self, event: dict[str, Any]) -> None:
        try:
            found = sub.callback(event)
        except (KeyError, TypeError) as exc:
            log.warning("an event without %s: %.300s", exc, event)
            return
        if found is None:
            if event.get("type") not in ("OFFERS", "INVERSE_OFFERS"):
                log.warning("an event not understood: %.300s", event)
            return
        name, args = found
        _callback(self.sched, name, self, *args)
        if name == "statusUpdate" and self.implicit_acknowledgements:
            try:
                self.acknowledgeStatusUpdate(args[0])
            except RuntimeError as exc:  # the master sends it again: the ack goes with the next
                log.warning("acknowledgement refused: %s", exc)

    def _drop_stream(self) -> bool:
        """Forget the stream (and its calls' connection); whether it had been subscribed."""
        with self._lock:
            was, self.connected, self.stream_id, self._stream = self.connected, False, None, None
        with self._call_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        return was


_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 406: "Not Acceptable", 415: "Unsupported Media Type",
            501: "Not Implemented", 503: "Service Unavailable"}


def _callback(sched: Any, name: str, *args: Any) -> None:
    """The scheduler's callback, if it has one; its exception is logged, not raised into the
    driver (pymesos would end the driver, and tear the framework down)."""
    method = getattr(sched, name, None)
    if method is None:
        log.debug("the scheduler has no %s", name)
        return
    try:
        method(*args)
    except Exception:  # noqa: BLE001
        log.exception("the scheduler's %s failed", name)


def _shut(sock: socket.socket | None) -> None:
    """Wake a read on ``sock`` (the stream's thread then ends or moves on)."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _why(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout):
        return "no heartbeat from the master in time" if getattr(exc, "subscribed_for", None) is not None \
            else "the master did not answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _jitter() -> float:
    return int.from_bytes(os.urandom(2), "big") / 65535
