"""Reaching the outside parties before anything starts, each within a deadline.

pymesos retries an unreachable master for a day with its warnings muted, and kazoo waits on a
dead ZooKeeper as long as it is asked to: here every address is checked for its form first,
then probed once with a bounded wait, and a failure becomes one ``UnreachableError`` line that
says what was tried, where, what happened and what to check.
"""
from __future__ import annotations

import http.client
import json
import re
import socket
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlparse

from ..errors import UnreachableError, UsageError, cut, redact_url

DEFAULT_CONNECT_TIMEOUT = 30.0
FIRST_TRY_SECONDS = 0.8  # the first try's own bound: what is in the way is said within a second
Say = Callable[[str], None]  # where a wait says what it is trying and why it has not got it yet


def _quiet(text: str) -> None:
    """A wait nobody watches (the client commands probe once, quietly)."""


class _Waiting:
    """Says once what a wait is trying and, each time it changes, why it has not got it yet."""

    def __init__(self, say: Say, what: str, timeout: float):
        self.say, self.what, self.timeout, self.said = say, what, timeout, ""

    def why(self, reason: str) -> None:
        if reason != self.said:
            self.said = reason
            self.say(f"waiting for {self.what}: {reason}; trying again for up to {self.timeout:g} s (--connect-timeout)")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")


@dataclass(frozen=True)
class HostPort:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_host_port(text: str, flag: str, default_port: int | None = None, expected: str = "") -> HostPort:
    """``HOST:PORT`` (or ``HOST`` when there is a default port), else a ``UsageError`` naming ``flag``."""
    expected = expected or "expected HOST:PORT" + (f" or HOST (port {default_port})" if default_port else "")
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, str(default_port or "")
    if not _HOST.match(host or "") or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(flag, f"{cut(redact_url(text))!r} is not an address", expected)
    return HostPort(host, int(port))


def parse_zk_url(url: str, flag: str) -> tuple[list[HostPort], str]:
    """``zk://HOST:PORT[,HOST:PORT...]/PATH`` into its servers and its path."""
    expected = "expected zk://HOST:PORT[,HOST:PORT]/PATH"
    parsed = urlparse(url)
    if parsed.scheme != "zk" or not parsed.netloc or parsed.path in ("", "/"):
        raise UsageError(flag, f"{cut(redact_url(url))!r} is not a ZooKeeper URL", expected)
    servers = [parse_host_port(part, flag, 2181) for part in parsed.netloc.split(",")]
    return servers, parsed.path.rstrip("/")


def normalize_master(master: str) -> str:
    """The form pymesos understands (``HOST:PORT`` or ``zk://...``), or a ``UsageError`` for --master."""
    if master.startswith(("zk://", "zoo://")):
        parse_zk_url("zk://" + master.split("://", 1)[1], "--master")
        return master
    expected = "expected local, HOST:PORT, HOST (port 5050), http://HOST:PORT or zk://HOST:PORT/PATH"
    if master.startswith("https://"):
        raise UsageError("--master", f"{cut(redact_url(master))!r} uses https", "the driver speaks plain HTTP only: expected HOST:PORT")
    scheme, sep, rest = master.partition("://")
    if sep and scheme != "http":
        raise UsageError("--master", f"{cut(redact_url(master))!r}: the scheme {cut(scheme)!r} is not one tfmesos reads", expected)
    if sep:
        address, slash, path = rest.partition("/")
        if path.strip("/"):
            raise UsageError("--master", f"{cut(redact_url(master))!r}: a master is an address, not the path "
                             f"{cut('/' + path)!r}", expected)
        master = address
    return str(parse_host_port(master, "--master", 5050, expected))


def why_unreachable(exc: BaseException) -> str:
    """A failed connection's reason in a few words (for one-line errors)."""
    if isinstance(exc, socket.timeout):
        return "timed out, no answer"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def probe_http(where: HostPort, path: str, timeout: float, what: str, check: str,
               headers: dict[str, str] | None = None, say: Say = _quiet) -> tuple[int, bytes]:
    """GET ``path``, retrying refused connections with backoff until ``timeout`` seconds have passed;
    ``say`` hears why each failed try failed (when that changes)."""
    deadline = time.monotonic() + timeout
    delay, last = 0.2, "no answer"
    waiting = _Waiting(say, f"{what} at {where}", timeout)
    per_try = FIRST_TRY_SECONDS
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise UnreachableError(f"cannot reach {what} at {where}", f"{last} (tried for {timeout:g} s)", check)
        conn = http.client.HTTPConnection(where.host, where.port, timeout=min(left, per_try))
        per_try = 10.0
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read(65536)
        except socket.gaierror as exc:
            # A name that does not resolve will not start resolving in the next seconds.
            raise UnreachableError(f"cannot reach {what} at {where}", f"unknown host ({exc.strerror})", check) from None
        except (OSError, http.client.HTTPException) as exc:
            last = why_unreachable(exc)
            waiting.why(last)
        finally:
            conn.close()
        time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 2, 2.0)


def probe_master(master: HostPort, timeout: float, say: Say = _quiet) -> str:
    """The master's version, once ``GET /version`` answers; what pymesos needs before SUBSCRIBE."""
    check = "check --master and that the Mesos master runs and is reachable from here"
    status, body = probe_http(master, "/version", timeout, "the Mesos master", check, say=say)
    try:
        version = json.loads(body)["version"]
    except (ValueError, KeyError, TypeError):
        version = None
    if status != 200 or not isinstance(version, str):
        raise UnreachableError(
            f"{master} is not a Mesos master", f"GET /version answered HTTP {status} {cut(body[:80].decode('latin-1'))!r}", check
        )
    return version


def leading_master_in_zk(url: str, flag: str, timeout: float, say: Say = _quiet) -> HostPort:
    """The leading master registered under a ``zk://`` path (lowest ``json.info_`` sequence)."""
    servers, path = parse_zk_url(url, flag)
    hosts = ",".join(map(str, servers))
    deadline = time.monotonic() + timeout
    with zk_session(hosts, timeout, flag, say) as client:
        waiting = _Waiting(say, f"the Mesos master's leader in ZooKeeper at {hosts}{path}", timeout)
        while True:
            children = client.get_children(path) if client.exists(path) else []
            infos = sorted(c for c in children if c.startswith("json.info_"))
            if infos:
                data, _ = client.get(f"{path}/{infos[0]}")
                address = json.loads(data).get("address", {})
                return HostPort(address.get("ip") or address.get("hostname"), int(address["port"]))
            if time.monotonic() > deadline:
                raise UnreachableError(
                    f"no Mesos master in ZooKeeper at {hosts}{path}", f"no json.info_ node within {timeout:g} s",
                    f"check the path in {flag} (usually /mesos) and that a master runs",
                )
            waiting.why("no leader in ZooKeeper yet (no json.info_ node)")
            time.sleep(0.5)


class zk_session:  # noqa: N801 - used as a context manager, reads like a function
    """A kazoo client that is connected within ``timeout`` or an ``UnreachableError``; always closed."""

    def __init__(self, hosts: str, timeout: float, flag: str, say: Say = _quiet):
        from kazoo.client import KazooClient

        self.hosts, self.timeout, self.flag, self.say = hosts, timeout, flag, say
        self.client = KazooClient(hosts=hosts, timeout=min(timeout, 10.0))

    def __enter__(self):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + self.timeout
        connected = self.client.start_async()  # kazoo's start() would wait in silence
        waiting = _Waiting(self.say, f"ZooKeeper at {self.hosts}", self.timeout)
        step = FIRST_TRY_SECONDS
        while not connected.wait(max(0.0, min(step, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                self.close()
                raise UnreachableError(
                    f"cannot reach ZooKeeper at {self.hosts}", f"no session within {self.timeout:g} s",
                    f"check {self.flag} and that ZooKeeper runs and is reachable from here",
                ) from None
            waiting.why(_why_no_session(self.hosts))
            step = 2.0
        if not self.client.connected:  # the event is also set when kazoo gives up (an auth failure)
            self.close()
            raise UnreachableError(f"cannot reach ZooKeeper at {self.hosts}", "the session did not start",
                                   f"check {self.flag}")
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def _why_no_session(hosts: str) -> str:
    """Why a ZooKeeper session has not started: what a plain connection to each server meets."""
    reasons = []
    for server in hosts.split(","):
        host, _, port = server.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
            reasons.append(f"{server} accepts connections, no session yet")
        except OSError as exc:
            reasons.append(f"{server} {why_unreachable(exc)}")
    return "; ".join(reasons)


def check_master(master: str, timeout: float, say: Say = _quiet) -> str:
    """Validate and reach ``--master`` within ``timeout``; returns the address to give pymesos.
    ``say`` hears, from the first failed try on, what is tried and why it has not worked yet."""
    master = normalize_master(master)
    if master.startswith(("zk://", "zoo://")):
        leader = leading_master_in_zk("zk://" + master.split("://", 1)[1], "--master", timeout, say)
        probe_master(leader, timeout, say)
    else:
        host, port = master.rsplit(":", 1)
        probe_master(HostPort(host, int(port)), timeout, say)
    return master
