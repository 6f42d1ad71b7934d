"""CallConnection (mesos/calls_http.py) against a real HTTP/1.1 server on loopback: keep-alive,
the body forms a server may use, pipelined requests answered in order, and a server that hangs
up. Python's http.server reads each request from the connection's buffer, as libprocess does,
so pipelined requests reach it back to back."""
from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from tfmesos.mesos.calls_http import CallConnection


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[tuple[int, str, bytes, str | None]] = []  # (client port, path, body, stream id)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.client_address[1], self.path, body, self.headers.get("Mesos-Stream-Id")))
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"ab", b"cde"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/close":
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
        elif body.startswith(b"bad"):
            reply = b"Failed to validate: " + body
            self.send_response(400)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        else:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    _Handler.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield "127.0.0.1", srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_calls_share_one_kept_alive_connection_and_read_each_body_form(server: tuple[str, int]) -> None:
    conn = CallConnection(*server, timeout=5)
    conn.request("POST", "/api/v1/scheduler", b'{"type": "REVIVE"}', {"Mesos-Stream-Id": "s-1"})
    first = conn.getresponse()
    assert (first.status, first.read()) == (202, b"")
    conn.request("POST", "/api/v1/scheduler", "bad call", {})  # pymesos' executor sends str bodies
    refused = conn.getresponse()
    assert (refused.status, refused.read()) == (400, b"Failed to validate: bad call")
    conn.request("POST", "/chunked", b"", {})
    assert conn.getresponse().read() == b"abcde"
    ports = {port for port, *_ in _Handler.seen}
    assert len(ports) == 1, "every call went over the same connection"
    assert _Handler.seen[0][1:] == ("/api/v1/scheduler", b'{"type": "REVIVE"}', "s-1")
    conn.close()


def test_a_server_that_closes_gets_a_new_connection_on_the_next_call(server: tuple[str, int]) -> None:
    conn = CallConnection(*server, timeout=5)
    conn.request("POST", "/close", b"x", {})
    assert conn.getresponse().status == 202
    conn.request("POST", "/api/v1/scheduler", b"y", {})
    assert conn.getresponse().status == 202
    assert len({port for port, *_ in _Handler.seen}) == 2


def test_pipelined_requests_are_answered_in_order_with_each_refusal_in_its_place(server: tuple[str, int]) -> None:
    conn = CallConnection(*server, timeout=5)
    bodies = [b"bad %d" % i if i % 7 == 3 else b"ok %d" % i for i in range(100)]
    responses = conn.pipelined("POST", "/api/v1/scheduler", bodies, {"Mesos-Stream-Id": "s-2"}, depth=8)
    assert [r.status for r in responses] == [400 if i % 7 == 3 else 202 for i in range(100)]
    assert responses[3].read() == b"Failed to validate: bad 3"
    assert [body for _, _, body, _ in _Handler.seen] == bodies
    assert len({port for port, *_ in _Handler.seen}) == 1


def test_a_hang_up_in_the_middle_of_a_pipeline_is_an_error_not_a_silent_loss(server: tuple[str, int]) -> None:
    conn = CallConnection(*server, timeout=5)
    with pytest.raises(ConnectionError, match="after 1 of 3"):
        conn.pipelined("POST", "/close", [b"a", b"b", b"c"], {})


def test_single_calls_queued_while_the_sender_is_busy_go_out_in_order_each_answered_with_its_own(server: tuple[str, int]) -> None:
    """A big gang's executors each asking for the ClusterSpec: one MESSAGE per answer, queued while
    the sender is busy, then sent together in one pipeline, in order; each caller gets its own response."""
    from tfmesos.mesos.calls_http import CallSender

    sender = CallSender("test-sender")
    address = f"{server[0]}:{server[1]}"
    answers: dict[int, list] = {}
    done = threading.Event()
    gate = threading.Event()

    def answer(i: int):
        def answered(result) -> None:
            if i == 0:
                gate.wait(5)  # the sender is busy: the next calls queue up behind this one
            answers[i] = [(r.status, r.read()) for r in result]
            if len(answers) == 41:
                done.set()
        return answered

    sender.submit(address, "/api/v1/scheduler", [b"first"], {"H": "1"}, answer(0))
    for i in range(1, 41):
        sender.submit(address, "/api/v1/scheduler", [b"bad %d" % i if i == 5 else b"m %d" % i], {"H": "1"}, answer(i))
    gate.set()
    assert done.wait(10)
    sender.close()
    assert answers[5] == [(400, b"Failed to validate: bad 5")]
    assert all(answers[i] == [(202, b"")] for i in range(41) if i != 5)
    assert [body for _, _, body, _ in _Handler.seen] == [b"first"] + [b"bad 5" if i == 5 else b"m %d" % i for i in range(1, 41)]
    assert len({port for port, *_ in _Handler.seen}) == 1
