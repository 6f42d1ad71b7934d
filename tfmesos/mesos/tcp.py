"""TCP connections for the executor's calls and event stream, on ``_socket`` (the C module the
``socket`` module wraps): the executor starts cold for every task, and ``socket``'s import (its
enum conversions of every AF_/SOCK_/MSG_/AI_ constant, with ``selectors`` and ``array``) is ~13M
instructions, ~2 ms, of each one's CPU. What the drivers used of ``socket``: ``create_connection``
(``connect``), ``makefile("rb")`` (``reader``), ``SHUT_RDWR`` and ``TCP_NODELAY``; the sockets are
``socket.socket``'s own base class, with the same methods and errors.
"""
from __future__ import annotations

import _socket
import io

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Socket = _socket.socket
SHUT_RDWR = _socket.SHUT_RDWR


def connect(address: tuple[Any, int], timeout: float | None, nodelay: bool = False) -> Socket:
    """``socket.create_connection(address, timeout)``: each address the host resolves to, in
    order, until one connects; the last one's error otherwise. ``nodelay``: TCP_NODELAY (a call
    goes out as one segment, answered at once)."""
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _, where in _socket.getaddrinfo(host, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(where)
            if nodelay:
                sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error if error is not None else OSError("getaddrinfo returns an empty list")


class _Received(io.RawIOBase):
    """The socket's incoming bytes as a raw stream (socket.SocketIO's reading half). After a
    timeout the buffered reader's state is unknown: no more reads (as SocketIO refuses them)."""

    def __init__(self, sock: Socket) -> None:
        self._sock, self._timed_out = sock, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._timed_out:
            raise OSError("cannot read from timed out object")
        try:
            return self._sock.recv_into(buffer)
        except TimeoutError:
            self._timed_out = True
            raise


def reader(sock: Socket) -> io.BufferedReader:
    """``sock.makefile("rb")``: a buffered reader of what arrives. Closing it leaves the socket
    open (the caller closes that)."""
    return io.BufferedReader(_Received(sock))
