"""Reading a Mesos event stream (a SUBSCRIBE's answer), for both drivers: the response's status and
headers, then the events, RecordIO records ("LENGTH\\nJSON") carried in HTTP chunks whose
boundaries are unrelated to the records'. The executor imports this cold for every task: the
standard library's ``json`` only.
"""
from __future__ import annotations

import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

MAX_LINE = 65536  # a longer status or header line is not HTTP


def _line(reader: Any) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if not line:
        raise ConnectionError("the peer closed the connection")
    if len(line) > MAX_LINE:
        raise ConnectionError("the peer sent a line too long for HTTP")
    return line.rstrip(b"\r\n")


def response_head(reader: Any) -> tuple[int, dict[str, str]]:
    """The status code and the headers (names lower-cased, values as sent) of an HTTP response."""
    version, _, rest = _line(reader).decode("latin-1").partition(" ")
    code = rest.partition(" ")[0]
    if not version.startswith("HTTP/") or not code.isdigit():
        raise ConnectionError(f"not an HTTP response: {version} {rest}"[:200])
    headers = {}
    while line := _line(reader):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(code), headers


def is_chunked(headers: dict[str, str]) -> bool:
    return "chunked" in headers.get("transfer-encoding", "").lower()


def body(reader: Any, headers: dict[str, str], limit: int = 4096) -> bytes:
    """At most ``limit`` bytes of a non-streaming answer's body (a refusal's text)."""
    if is_chunked(headers):
        size = int(_line(reader).split(b";", 1)[0], 16)
        return reader.read(min(size, limit))
    length = headers.get("content-length", "")
    return reader.read(min(int(length), limit)) if length.isdigit() else reader.read(limit)


def events(reader: Any) -> Iterator[dict[str, Any]]:
    """The events of a chunked stream, in order, until its last chunk (then the iteration ends)."""
    buffer = bytearray()
    while True:
        size = int(_line(reader).split(b";", 1)[0], 16)
        if size == 0:
            return  # the stream's end
        chunk = reader.read(size + 2)  # its CRLF too
        if len(chunk) < size + 2:
            raise ConnectionError("the peer closed the connection mid-chunk")
        buffer += chunk[:size]
        start = 0
        while (newline := buffer.find(b"\n", start)) >= 0:
            end = newline + 1 + int(buffer[start:newline])
            if len(buffer) < end:
                break
            yield json.loads(buffer[newline + 1:end])
            start = end
        del buffer[:start]
