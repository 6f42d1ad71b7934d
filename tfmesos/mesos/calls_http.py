"""The HTTP connection the drivers send their calls on (ACCEPT, ACKNOWLEDGE, UPDATE, ...).

pymesos opens an ``http.client.HTTPConnection`` per driver and, for every call, uses only
``request``, ``getresponse`` (``status``, ``read()``) and ``close``. http.client parses each
response's header block with the ``email`` package: about half of a call's CPU, and a big gang
makes four calls per task in the scheduler and three in each executor. ``CallConnection`` offers
the same four members over one keep-alive socket and reads a response the way Mesos writes it
(status line, headers, a ``Content-Length`` or chunked body), so pymesos' own ``_send`` (stream
id, credentials, error handling) is unchanged. The scheduler's pymesos driver gets it from
``_get_conn`` (``mesos/driver.py``); the executor's own driver (``executor_driver.py``) uses it
directly, and so this module imports nothing but ``threading`` and ``tcp`` (``_socket``: the
executor's cold start pays no ``socket`` import) at load time.
"""
from __future__ import annotations

import threading

from . import tcp

TYPE_CHECKING = False
if TYPE_CHECKING:  # the executor imports this module cold for every task: no typing, logging, queue
    from typing import Any, Callable


def address(host: str, port: int) -> tuple[Any, int]:  # Any: typeshed says str, the socket module takes bytes too
    """For ``tcp.connect`` (``socket.create_connection``'s): an ASCII host as bytes. Given a str,
    getaddrinfo encodes it with the ``idna`` codec, whose import (unicodedata, stringprep) costs
    each cold executor ~1 ms and 0.2 MiB; an ASCII name or address is the same bytes either way."""
    return (host.encode("ascii") if host.isascii() else host), port


MAX_LINE = 65536  # a longer status or header line is not an HTTP response
PIPELINE_DEPTH = 32  # requests sent ahead of their answers


class CallResponse:
    """What pymesos reads of a response: ``status``, ``reason`` and the body by ``read()``."""

    def __init__(self, status: int, reason: str, headers: dict[str, str], body: bytes) -> None:
        self.status, self.reason, self.headers, self._body = status, reason, headers, body

    def read(self) -> bytes:
        return self._body

    def getheader(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


class CallConnection:
    """One request at a time on a kept-alive connection, (re)opened on demand like http.client's.
    A failed request or response closes it; pymesos then reconnects on its next call."""

    def __init__(self, host: str, port: int, timeout: float | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self._sock: tcp.Socket | None = None
        self._file: Any = None
        self._close_after = False

    def request(self, method: str, path: str, body: bytes | str | None = b"",
                headers: dict[str, str] | None = None) -> None:
        self._send(self._message(method, path, body, headers))

    def pipelined(self, method: str, path: str, bodies: list[bytes], headers: dict[str, str] | None = None,
                  depth: int = PIPELINE_DEPTH) -> list[CallResponse]:
        """Send ``bodies`` as requests without waiting for each answer (HTTP/1.1 pipelining, which
        libprocess answers in order), at most ``depth`` unanswered; the responses, in order.
        A gang's ACCEPTs then cost the master's processing, not a round trip each."""
        responses: list[CallResponse] = []
        sent = 0
        while len(responses) < len(bodies):
            batch = []
            while sent < len(bodies) and sent - len(responses) < depth:
                batch.append(self._message(method, path, bodies[sent], headers))
                sent += 1
            if batch:
                self._send(b"".join(batch))
            responses.append(self.getresponse())
            if self._sock is None and len(responses) < len(bodies):  # the server closed it
                raise ConnectionError(f"{self.host}:{self.port} closed the connection after "
                                      f"{len(responses)} of {len(bodies)} pipelined requests")
        return responses

    def getresponse(self) -> CallResponse:
        """The next response; the connection is closed after it where the server closes it."""
        if self._file is None:
            raise ConnectionError("no request was sent")
        try:
            response = self._read_response()
        except (OSError, ValueError):
            self.close()
            raise
        if self._close_after:
            self.close()
        return response

    def close(self) -> None:
        for closable in (self._file, self._sock):
            if closable is not None:
                try:
                    closable.close()
                except OSError:
                    pass
        self._sock = self._file = None

    # -- internals
    def _message(self, method: str, path: str, body: bytes | str | None, headers: dict[str, str] | None) -> bytes:
        data = body.encode() if isinstance(body, str) else (body or b"")
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}", f"Content-Length: {len(data)}"]
        head += [f"{name}: {value}" for name, value in (headers or {}).items()]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data

    def _send(self, data: bytes) -> None:
        """One write (a request's headers and body in one segment), connecting first if need be."""
        if self._sock is None:
            self._connect()
        assert self._sock is not None
        try:
            self._sock.sendall(data)
        except OSError:
            self.close()
            raise

    def _connect(self) -> None:
        sock = tcp.connect(address(self.host, self.port), self.timeout, nodelay=True)
        self._sock, self._file, self._close_after = sock, tcp.reader(sock), False

    def _line(self) -> bytes:
        line = self._file.readline(MAX_LINE + 1)
        if not line:
            raise ConnectionError(f"{self.host}:{self.port} closed the connection")
        if len(line) > MAX_LINE:
            raise ValueError("response line too long")
        return line.rstrip(b"\r\n")

    def _read_response(self) -> CallResponse:
        version, _, rest = self._line().decode("latin-1").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or not code.isdigit():
            raise ValueError(f"not an HTTP response: {version} {rest}"[:200])
        headers: dict[str, str] = {}
        while line := self._line():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        status = int(code)
        connection = headers.get("connection", "").lower()
        self._close_after = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        if status in (204, 304) or 100 <= status < 200:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            body = self._exactly(int(headers["content-length"]))
        else:  # no length: the body runs to the end of the connection
            body, self._close_after = self._file.read(), True
        return CallResponse(status, reason, headers, body)

    def _exactly(self, size: int) -> bytes:
        data = self._file.read(size)
        if len(data) < size:
            raise ConnectionError(f"{self.host}:{self.port} closed the connection mid-response")
        return data

    def _chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self._line().split(b";", 1)[0], 16)
            if size == 0:
                while self._line():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            parts.append(self._exactly(size))
            self._exactly(2)  # the chunk's CRLF


class CallSender:
    """Pipelined batches of calls sent in order by a thread of their own, on a connection of their
    own: a big gang's ACCEPTs stream to the master while the driver's thread goes on reading
    events and acknowledging status updates (an update unacknowledged for 10 s is sent again).
    ``answer`` gets the batch's responses, or the exception that ended it."""

    def __init__(self, name: str, timeout: float = 30.0) -> None:
        import queue

        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._conn: CallConnection | None = None
        self._timeout = timeout
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, address: str, path: str, bodies: list[bytes], headers: dict[str, str],
               answer: Callable[[list[CallResponse] | Exception], None]) -> None:
        self._queue.put((address, path, bodies, headers, answer))

    def close(self, wait: float = 0.0) -> None:
        """No more calls: what is queued still goes out; ``wait``: seconds to wait for that."""
        self._queue.put(None)
        if wait > 0:
            self._thread.join(wait)

    def _run(self) -> None:
        import itertools
        import queue

        closing = False
        while not closing and (item := self._queue.get()) is not None:
            # Whatever else is queued by now goes in the same pipeline (a burst of single calls,
            # e.g. a big gang's executors each asking for the ClusterSpec: one round trip, not one each).
            batch = [item]
            while True:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    closing = True
                    break
                batch.append(more)
            for _, run in itertools.groupby(batch, lambda i: (i[0], i[1], sorted(i[3].items()))):
                self._send(list(run))
        if self._conn is not None:
            self._conn.close()

    def _send(self, items: list[tuple[str, str, list[bytes], dict[str, str], Callable[..., None]]]) -> None:
        """Items of one address, path and headers, in one pipeline; each answer gets its own responses."""
        address, path, _, headers, _ = items[0]
        host, port = address.split(":", 1)
        if self._conn is None or (self._conn.host, self._conn.port) != (host, int(port)):
            if self._conn is not None:
                self._conn.close()
            self._conn = CallConnection(host, int(port), timeout=self._timeout)
        bodies = [body for item in items for body in item[2]]
        try:
            result: list[CallResponse] | Exception = self._conn.pipelined("POST", path, bodies, headers)
        except Exception as exc:  # noqa: BLE001 - handed to the callers' callbacks
            result = exc
        at = 0
        for _, _, own, _, answer in items:
            try:
                answer(result if isinstance(result, Exception) else result[at:at + len(own)])
            except Exception:  # noqa: BLE001 - a callback's failure must not stop later batches
                import logging

                logging.getLogger("tfmesos.mesos.calls_http").exception("handling the answers to %d calls failed", len(own))
            at += len(own)
