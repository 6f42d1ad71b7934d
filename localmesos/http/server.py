"""A small asyncio HTTP/1.1 server: keep-alive calls plus chunked event streams.

One event loop serves every listening socket (the master and all logical
agents), so idle agents cost a socket, not a thread.  Handlers run inside the
loop and return either a :class:`Response` or a :class:`StreamResponse`; a
stream stays open (RecordIO records in HTTP chunks) until either side closes.
"""
from __future__ import annotations

import asyncio
import json
import logging
import socket
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Union
from urllib.parse import parse_qs, urlsplit

log = logging.getLogger(__name__)

_REASONS = {
    200: "OK", 202: "Accepted", 307: "Temporary Redirect", 400: "Bad Request", 401: "Unauthorized",
    403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
    413: "Request Entity Too Large", 415: "Unsupported Media Type", 500: "Internal Server Error",
    501: "Not Implemented", 503: "Service Unavailable",
}
TEXT_PLAIN = "text/plain; charset=utf-8"
APPLICATION_JSON = "application/json"
APPLICATION_PROTOBUF = "application/x-protobuf"
_MAX_HEADER_BYTES = 64 * 1024
_MAX_BODY_BYTES = 64 * 1024 * 1024


class Headers:
    """Case-insensitive header map that remembers the original spelling."""

    def __init__(self, items: list[tuple[str, str]] | None = None) -> None:
        self._items: dict[str, tuple[str, str]] = {}
        for name, value in items or []:
            self[name] = value

    def __setitem__(self, name: str, value: str) -> None:
        self._items[name.lower()] = (name, value)

    def get(self, name: str, default: str | None = None) -> str | None:
        item = self._items.get(name.lower())
        return item[1] if item else default

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._items

    def items(self) -> list[tuple[str, str]]:
        return list(self._items.values())


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes = b""

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def wants_close(self) -> bool:
        connection = (self.headers.get("Connection") or "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" not in connection
        return "close" in connection

    def accepts(self, media_type: str) -> bool:
        """libprocess Request::acceptsMediaType: no header accepts everything."""
        accept = self.headers.get("Accept")
        if accept is None:
            return True
        main, _, sub = media_type.partition("/")
        for part in accept.split(","):
            pieces = [p.strip() for p in part.split(";")]
            candidate = pieces[0].lower()
            quality = 1.0
            for param in pieces[1:]:
                name, _, value = param.partition("=")
                if name.strip() == "q":
                    try:
                        quality = float(value)
                    except ValueError:
                        quality = 0.0
            if quality <= 0:
                continue
            if candidate in ("*/*", f"{main}/*", media_type):
                return True
        return False


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def text(cls, status: int, text: str, headers: list[tuple[str, str]] | None = None) -> "Response":
        """Error replies: libprocess sends text/plain bodies with a length."""
        return cls(status, text.encode("utf-8"), [("Content-Type", TEXT_PLAIN)] + (headers or []))

    @classmethod
    def json(cls, status: int, value: Any) -> "Response":
        body = json.dumps(value).encode("utf-8")
        return cls(status, body, [("Content-Type", APPLICATION_JSON)])

    @classmethod
    def empty(cls, status: int) -> "Response":
        # pymesos reads replies on a keep-alive connection: always send a length.
        return cls(status)


class _Output:
    """What a connection sends, gathered until the loop's next turn and written at once: a burst
    (a gang's status updates on a scheduler's stream, the answers to pipelined calls, a
    subscription's head with its first events) costs the peers one send and one wake-up, not one
    per message. ``flush()`` first where the connection is closed."""

    __slots__ = ("_writer", "_parts", "_loop", "on_error")

    _BIG = 64 * 1024  # a write this large goes out at once (the next drain() then holds the sender back)

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._parts: list[bytes] = []
        self._loop = asyncio.get_running_loop()
        self.on_error: Callable[[], None] | None = None

    def write(self, data: bytes) -> None:
        if not self._parts:
            self._loop.call_soon(self.flush)
        self._parts.append(data)
        if len(data) >= self._BIG:
            self.flush()

    def flush(self) -> None:
        if not self._parts:
            return
        data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
        self._parts.clear()
        try:
            self._writer.write(data)
        except (ConnectionError, RuntimeError):
            if self.on_error is not None:
                self.on_error()

    def close(self) -> None:
        self.flush()
        self._writer.close()


class EventStream:
    """The writing end of a chunked RecordIO stream."""

    def __init__(self, out: _Output) -> None:
        self._out = out
        out.on_error = self._mark_closed
        self.closed = False
        self._on_close: list[Callable[["EventStream"], None]] = []

    def on_close(self, callback: Callable[["EventStream"], None]) -> None:
        if self.closed:
            callback(self)
        else:
            self._on_close.append(callback)

    def send(self, event: dict[str, Any]) -> None:
        if self.closed:
            return
        record = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        frame = str(len(record)).encode("ascii") + b"\n" + record
        self._out.write(b"%x\r\n%s\r\n" % (len(frame), frame))

    def close(self) -> None:
        """End the stream (last chunk) and drop the connection."""
        if self.closed:
            return
        self._out.on_error = None
        try:
            self._out.write(b"0\r\n\r\n")
            self._out.close()
        except (ConnectionError, RuntimeError):
            pass
        self._mark_closed()

    def _mark_closed(self) -> None:
        if self.closed:
            return
        self.closed = True
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # a callback bug must not kill the connection task
                log.exception("stream close callback failed")


@dataclass
class StreamResponse:
    """A 200 chunked stream; ``on_open`` runs once the head has been queued."""

    headers: list[tuple[str, str]]
    on_open: Callable[[EventStream], None]


Handler = Callable[[Request], Union[Response, StreamResponse, Awaitable[Union[Response, StreamResponse]]]]


class HttpServer:
    """One listening socket on the shared loop."""

    def __init__(self, handler: Handler, name: str) -> None:
        self._handler = handler
        self._name = name
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[_Output] = set()
        self._streams: set[EventStream] = set()
        self.port = 0
        # Set while requests may be handled: a stopped agent's requests wait (see agent/freeze.py).
        self.gate: asyncio.Event | None = None

    async def start(self, sock: socket.socket) -> None:
        self._server = await asyncio.start_server(self._serve, sock=sock, limit=_MAX_HEADER_BYTES)
        self.port = sock.getsockname()[1]

    async def close(self) -> None:
        """Stop listening, end streams and drop open connections."""
        if self._server is not None:
            self._server.close()
        for stream in list(self._streams):
            stream.close()
        for out in list(self._connections):
            out.close()
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        out = _Output(writer)
        self._connections.add(out)
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except _BadRequest as error:
                    _write(out, Response.text(400, str(error)), close=True)
                    break
                if request is None:
                    break
                if self.gate is not None:
                    await self.gate.wait()
                try:
                    result = self._handler(request)
                    if asyncio.iscoroutine(result):
                        result = await result
                except Exception:
                    log.exception("%s: handler failed for %s %s", self._name, request.method, request.path)
                    result = Response.text(500, "500 Internal Server Error.")
                if isinstance(result, StreamResponse):
                    await self._stream(reader, out, result)
                    break
                close = request.wants_close()
                _write(out, result, close=close)
                if close:
                    break
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            self._connections.discard(out)
            try:
                out.close()
            except (ConnectionError, RuntimeError):  # gone, or the loop already closing
                pass

    async def _stream(self, reader: asyncio.StreamReader, out: _Output, response: StreamResponse) -> None:
        head = ["HTTP/1.1 200 OK", "Transfer-Encoding: chunked"]
        head += [f"{name}: {value}" for name, value in response.headers]
        out.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        stream = EventStream(out)
        self._streams.add(stream)
        stream.on_close(self._streams.discard)
        response.on_open(stream)
        # The client never sends more on a subscription; EOF means it went away.
        try:
            while not stream.closed:
                data = await reader.read(65536)
                if not data:
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            stream._mark_closed()


class _BadRequest(Exception):
    pass


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as error:
        if error.partial.strip():
            raise _BadRequest("Malformed request") from None
        return None
    lines = head.decode("latin-1").split("\r\n")
    try:
        method, target, version = lines[0].split(" ", 2)
    except ValueError:
        raise _BadRequest("Malformed request line") from None
    headers = Headers()
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest("Malformed header")
        headers[name.strip()] = value.strip()
    body = b""
    if (headers.get("Transfer-Encoding") or "").lower() == "chunked":
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    else:
        length = int(headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            raise _BadRequest("Request body too large")
        if length:
            body = await reader.readexactly(length)
    return Request(method.upper(), target, version, headers, body)


def _write(out: _Output, response: Response, close: bool) -> None:
    reason = _REASONS.get(response.status, "Unknown")
    head = [f"HTTP/1.1 {response.status} {reason}"]
    head += [f"{name}: {value}" for name, value in response.headers]
    head.append(f"Content-Length: {len(response.body)}")
    if close:
        head.append("Connection: close")
    out.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + response.body)


def bind_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock
