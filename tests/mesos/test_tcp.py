"""The executor's TCP connections on ``_socket`` (tfmesos/mesos/tcp.py): what the drivers used of
``socket.create_connection`` and ``makefile("rb")``, against real sockets."""
from __future__ import annotations

import socket
import threading

import pytest

from tfmesos.mesos import tcp


def test_it_connects_reads_lines_and_exact_sizes_and_sees_the_end() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")

    threading.Thread(target=serve, daemon=True).start()
    sock = tcp.connect((b"127.0.0.1", port), 5, nodelay=True)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        reader = tcp.reader(sock)
        assert reader.readline(100) == b"HTTP/1.1 200 OK\r\n"
        assert reader.readline(100) == b"Content-Length: 5\r\n"
        assert reader.readline(100) == b"\r\n"
        assert reader.read(5) == b"hello"
        assert reader.read(1) == b""  # the server closed it
    finally:
        sock.close()
        server.close()


def test_a_refused_connection_raises_the_error_socket_would() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.close()  # nothing listens there now
    with pytest.raises(ConnectionRefusedError):
        tcp.connect((b"127.0.0.1", port), 5)


def test_after_a_timeout_the_reader_refuses_to_read_on() -> None:
    """A timed-out read may have left part of a line in the buffer: no read after it (SocketIO's rule)."""
    server = socket.create_server(("127.0.0.1", 0))
    sock = tcp.connect((b"127.0.0.1", server.getsockname()[1]), 0.2)
    conn, _ = server.accept()
    try:
        reader = tcp.reader(sock)
        with pytest.raises(TimeoutError):
            reader.readline()
        conn.sendall(b"late\n")
        with pytest.raises(OSError, match="timed out"):
            reader.readline()
    finally:
        conn.close()
        sock.close()
        server.close()
