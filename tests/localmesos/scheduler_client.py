"""Test helpers: a recorder-style raw HTTP client for the v1 APIs.

Like the tool that recorded the golden traces: one long-lived
``http.client`` connection for SUBSCRIBE, a fresh connection for every other
call.  Events are parsed from the RecordIO stream by a reader thread and
queued; the raw frames are kept too.
"""
from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
EOF = None  # marker in the event queue: the master closed the stream


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any  # parsed JSON, text, or None for an empty body


def _split(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


def http_call(address: str, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None, timeout: float = 10.0) -> Reply:
    host, port = _split(address)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        payload = response.read()
        result_headers = {k: v for k, v in response.getheaders()}
        if not payload:
            parsed: Any = None
        else:
            try:
                parsed = json.loads(payload)
            except ValueError:
                parsed = payload.decode("utf-8", errors="replace")
        return Reply(response.status, result_headers, parsed)
    finally:
        connection.close()


class EventStreamClient:
    """Reads a chunked RecordIO subscription stream in a thread."""

    def __init__(self, response: http.client.HTTPResponse, connection: http.client.HTTPConnection) -> None:
        self.response = response
        self._connection = connection
        self.events: "queue.Queue[dict[str, Any] | None]" = queue.Queue()
        self.raw_frames: list[bytes] = []
        self.received: list[dict[str, Any]] = []
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True, name="raw-stream-reader")
        self._thread.start()

    def _read(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = self.response.read1(65536)
                if not chunk:
                    break
                buffer += chunk
                while True:
                    newline = buffer.find(b"\n")
                    if newline < 0:
                        break
                    length = int(buffer[:newline])
                    if len(buffer) < newline + 1 + length:
                        break
                    frame = buffer[: newline + 1 + length]
                    record = json.loads(buffer[newline + 1: newline + 1 + length])
                    buffer = buffer[newline + 1 + length:]
                    self.raw_frames.append(frame)
                    self.received.append(record)
                    self.events.put(record)
        except (OSError, http.client.HTTPException, ValueError, AttributeError):
            pass  # AttributeError: http.client after the connection was closed
        finally:
            self.closed.set()
            self.events.put(EOF)

    def next(self, timeout: float = 10.0, heartbeats: bool = False) -> dict[str, Any] | None:
        """Next event (None on EOF); HEARTBEATs are skipped unless asked for."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no event within %.1fs" % timeout)
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                raise TimeoutError("no event within %.1fs" % timeout) from None
            if event is EOF:
                self.events.put(EOF)  # keep reporting EOF
                return None
            if heartbeats or event.get("type") != "HEARTBEAT":
                return event

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10.0) -> dict[str, Any]:
        """Skip events until one matches (HEARTBEATs included in the search)."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.next(max(deadline - time.monotonic(), 0.001), heartbeats=True)
            if event is None:
                raise AssertionError("stream closed while waiting")
            if predicate(event):
                return event

    def expect_silence(self, seconds: float, types: tuple[str, ...] = ("OFFERS",)) -> None:
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                event = self.events.get(timeout=remaining)
            except queue.Empty:
                return
            if event is not EOF and event.get("type") in types:
                raise AssertionError(f"unexpected {event['type']}: {event}")
            if event is EOF:
                self.events.put(EOF)
                return

    def close(self) -> None:
        """Drop the connection (the master sees EOF) and stop the reader."""
        sock = self._connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(5)
        self.response.close()
        self._connection.close()


def open_stream(address: str, path: str, body: Any, headers: dict[str, str] | None = None,
                timeout: float = 30.0) -> tuple[int, dict[str, str], EventStreamClient | None, Any]:
    """POST a SUBSCRIBE and return (status, headers, stream or None, error body)."""
    host, port = _split(address)
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    connection.request("POST", path, body=json.dumps(body).encode(), headers=headers or dict(JSON_HEADERS))
    response = connection.getresponse()
    response_headers = {k: v for k, v in response.getheaders()}
    if response.status != 200:
        payload = response.read().decode("utf-8", errors="replace")
        connection.close()
        return response.status, response_headers, None, payload
    return 200, response_headers, EventStreamClient(response, connection), None


class RawScheduler:
    """A scheduler speaking raw v1 HTTP, like the trace recorder."""

    def __init__(self, address: str, auth: str | None = None) -> None:
        self.address = address
        self.auth = auth
        self.stream: EventStreamClient | None = None
        self.stream_id: str | None = None
        self.framework_id: str | None = None
        self.subscribe_status = 0
        self.subscribe_headers: dict[str, str] = {}

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = dict(JSON_HEADERS)
        if self.auth:
            headers["Authorization"] = self.auth
        headers.update(extra or {})
        return headers

    def subscribe(self, framework_info: dict[str, Any], framework_id: str | None = None,
                  expect_subscribed: bool = True) -> dict[str, Any] | None:
        body: dict[str, Any] = {"type": "SUBSCRIBE", "subscribe": {"framework_info": dict(framework_info)}}
        if framework_id:
            body["framework_id"] = {"value": framework_id}
            body["subscribe"]["framework_info"]["id"] = {"value": framework_id}
        status, headers, stream, error = open_stream(self.address, "/api/v1/scheduler", body, self._headers())
        self.subscribe_status, self.subscribe_headers = status, headers
        if stream is None:
            raise AssertionError(f"SUBSCRIBE failed: {status} {error}")
        self.stream = stream
        self.stream_id = headers.get("Mesos-Stream-Id")
        first = stream.next(timeout=10, heartbeats=True)
        if expect_subscribed:
            assert first is not None and first["type"] == "SUBSCRIBED", first
            self.framework_id = first["subscribed"]["framework_id"]["value"]
        return first

    def call(self, body: dict[str, Any], stream_id: str | None | bool = True,
             headers: dict[str, str] | None = None) -> Reply:
        extra = dict(headers or {})
        if stream_id is True and self.stream_id:
            extra["Mesos-Stream-Id"] = self.stream_id
        elif isinstance(stream_id, str):
            extra["Mesos-Stream-Id"] = stream_id
        return http_call(self.address, "POST", "/api/v1/scheduler", body, self._headers(extra))

    def framework_call(self, kind: str, payload: dict[str, Any] | None = None, **kwargs: Any) -> Reply:
        body: dict[str, Any] = {"framework_id": {"value": self.framework_id}, "type": kind}
        if payload is not None:
            body[kind.lower()] = payload
        return self.call(body, **kwargs)

    def acknowledge(self, status: dict[str, Any]) -> Reply:
        reply = self.framework_call("ACKNOWLEDGE", {
            "agent_id": status["agent_id"], "task_id": status["task_id"], "uuid": status["uuid"]})
        assert reply.status == 202, reply
        return reply

    def next_offers(self, timeout: float = 10.0) -> list[dict[str, Any]]:
        assert self.stream is not None
        event = self.stream.wait_for(lambda e: e["type"] == "OFFERS", timeout)
        return event["offers"]["offers"]

    def next_update(self, timeout: float = 10.0, ack: bool = True,
                    task_id: str | None = None) -> dict[str, Any]:
        assert self.stream is not None
        event = self.stream.wait_for(
            lambda e: e["type"] == "UPDATE" and (task_id is None or e["update"]["status"]["task_id"]["value"]
                                                 == task_id), timeout)
        status = event["update"]["status"]
        if ack and "uuid" in status:
            self.acknowledge(status)
        return status

    def teardown(self) -> Reply:
        return self.framework_call("TEARDOWN")

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02,
               message: str = "condition") -> Any:
    """Poll a condition with a deadline (no bare sleeps as synchronisation)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {message}")
        time.sleep(interval)


def framework_info(name: str, **extra: Any) -> dict[str, Any]:
    """The recorder's FrameworkInfo (traces 01-08)."""
    info: dict[str, Any] = {"user": "root", "name": name, "roles": ["*"],
                            "capabilities": [{"type": "MULTI_ROLE"}, {"type": "GPU_RESOURCES"}],
                            "failover_timeout": 60.0, "checkpoint": True}
    info.update(extra)
    return info


def scalar(name: str, value: float) -> dict[str, Any]:
    return {"name": name, "type": "SCALAR", "scalar": {"value": value}, "role": "*", "allocation_info": {"role": "*"}}


def port_range(begin: int, end: int) -> dict[str, Any]:
    return {"name": "ports", "type": "RANGES", "ranges": {"range": [{"begin": begin, "end": end}]}, "role": "*",
            "allocation_info": {"role": "*"}}


def command_task(task_id: str, agent_id: str, command: str, port: int | None = None, cpus: float = 0.1,
                 mem: float = 32, **extra: Any) -> dict[str, Any]:
    resources = [scalar("cpus", cpus), scalar("mem", mem)]
    if port is not None:
        resources.append(port_range(port, port))
    task = {"name": task_id, "task_id": {"value": task_id}, "agent_id": {"value": agent_id},
            "resources": resources, "command": {"shell": True, "value": command}}
    task.update(extra)
    return task


def launch(scheduler: RawScheduler, offer: dict[str, Any], tasks: list[dict[str, Any]],
           refuse_seconds: float | None = None) -> Reply:
    accept: dict[str, Any] = {"offer_ids": [offer["id"]],
                              "operations": [{"type": "LAUNCH", "launch": {"task_infos": tasks}}]}
    if refuse_seconds is not None:
        accept["filters"] = {"refuse_seconds": refuse_seconds}
    return scheduler.framework_call("ACCEPT", accept)


@dataclass
class Collected:
    by_task: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, status: dict[str, Any]) -> None:
        self.by_task.setdefault(status["task_id"]["value"], []).append(status)

    def states(self, task_id: str) -> list[str]:
        return [s["state"] for s in self.by_task.get(task_id, [])]
