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
from urllib.parse import urlparse

from ..errors import UnreachableError, UsageError, cut, redact_url

DEFAULT_CONNECT_TIMEOUT = 30.0
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
    if master.startswith("https://"):
        raise UsageError("--master", f"{cut(redact_url(master))!r} uses https", "pymesos speaks plain HTTP only: expected HOST:PORT")
    if master.startswith("http://"):
        master = master[len("http://"):].rstrip("/")
    return str(parse_host_port(master, "--master", 5050, "expected local, HOST:PORT, HOST (port 5050) or zk://HOST:PORT/PATH"))


def why_unreachable(exc: BaseException) -> str:
    """A failed connection's reason in a few words (for one-line errors)."""
    if isinstance(exc, socket.timeout):
        return "no answer"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def probe_http(where: HostPort, path: str, timeout: float, what: str, check: str,
               headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET ``path``, retrying refused connections with backoff until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    delay, last = 0.2, "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise UnreachableError(f"cannot reach {what} at {where}", f"{last} (tried for {timeout:g} s)", check)
        conn = http.client.HTTPConnection(where.host, where.port, timeout=min(left, 10.0))
        try:
            conn.request("GET", path, headers=headers or {})
            resp = conn.getresponse()
            return resp.status, resp.read(65536)
        except socket.gaierror as exc:
            # A name that does not resolve will not start resolving in the next seconds.
            raise UnreachableError(f"cannot reach {what} at {where}", f"unknown host ({exc.strerror})", check) from None
        except (OSError, http.client.HTTPException) as exc:
            last = why_unreachable(exc)
        finally:
            conn.close()
        time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
        delay = min(delay * 2, 2.0)


def probe_master(master: HostPort, timeout: float) -> str:
    """The master's version, once ``GET /version`` answers; what pymesos needs before SUBSCRIBE."""
    check = "check --master and that the Mesos master runs and is reachable from here"
    status, body = probe_http(master, "/version", timeout, "the Mesos master", check)
    try:
        version = json.loads(body)["version"]
    except (ValueError, KeyError, TypeError):
        version = None
    if status != 200 or not isinstance(version, str):
        raise UnreachableError(
            f"{master} is not a Mesos master", f"GET /version answered HTTP {status} {cut(body[:80].decode('latin-1'))!r}", check
        )
    return version


def leading_master_in_zk(url: str, flag: str, timeout: float) -> HostPort:
    """The leading master registered under a ``zk://`` path (lowest ``json.info_`` sequence)."""
    servers, path = parse_zk_url(url, flag)
    hosts = ",".join(map(str, servers))
    deadline = time.monotonic() + timeout
    with zk_session(hosts, timeout, flag) as client:
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
            time.sleep(0.5)


class zk_session:  # noqa: N801 - used as a context manager, reads like a function
    """A kazoo client that is connected within ``timeout`` or an ``UnreachableError``; always closed."""

    def __init__(self, hosts: str, timeout: float, flag: str):
        from kazoo.client import KazooClient

        self.hosts, self.timeout, self.flag = hosts, timeout, flag
        self.client = KazooClient(hosts=hosts, timeout=min(timeout, 10.0))

    def __enter__(self):  # type: ignore[no-untyped-def]
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            self.client.start(timeout=self.timeout)
        except KazooTimeoutError:
            self.close()
            raise UnreachableError(
                f"cannot reach ZooKeeper at {self.hosts}", f"no session within {self.timeout:g} s",
                f"check {self.flag} and that ZooKeeper runs and is reachable from here",
            ) from None
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.stop()
        self.client.close()


def check_master(master: str, timeout: float) -> str:
    """Validate and reach ``--master`` within ``timeout``; returns the address to give pymesos."""
    master = normalize_master(master)
    if master.startswith(("zk://", "zoo://")):
        leader = leading_master_in_zk("zk://" + master.split("://", 1)[1], "--master", timeout)
        probe_master(leader, timeout)
    else:
        host, port = master.rsplit(":", 1)
        probe_master(HostPort(host, int(port)), timeout)
    return master
