"""Where the scheduler keeps its framework id and job state between restarts.

ZooKeeper on a cluster (the scheduler may come back on another machine), a directory on a
laptop. Writes are atomic: a crash leaves either the old or the new state, never half. A task's
end is appended to the record's journal instead of rewriting the record (state_format, format 3).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from .state_format import decode, encode, encode_entry, replay


class StateStore(Protocol):
    """load() returns the record in today's format, its journal replayed; save() takes one made by
    state_format.record() and starts an empty journal; append() adds a state_format.journal_entry.
    Every store keeps state_format's bytes and reads them back through state_format.decode."""

    def load(self) -> dict[str, Any] | None: ...
    def save(self, state: dict[str, Any]) -> None: ...
    def append(self, entry: dict[str, Any]) -> None: ...
    def clear(self) -> None: ...
    def close(self) -> None: ...
    @property
    def where(self) -> str: ...


class DirStore:
    def __init__(self, directory: str | Path, name: str):
        self.path = Path(directory).expanduser() / (name.replace("/", "__") + ".json")
        self.journal = self.path.with_suffix(".journal")

    @property
    def where(self) -> str:
        return str(self.path)

    def load(self) -> dict[str, Any] | None:
        try:
            state = decode(self.path.read_bytes())
        except FileNotFoundError:
            return None
        try:
            entries = self.journal.read_bytes().splitlines()
        except FileNotFoundError:
            entries = []
        return replay(state, entries)

    def save(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".state-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(encode(state))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            # A full disk or a vanished directory: no half-written temporary file stays behind.
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.journal.unlink(missing_ok=True)  # its generation is over (left behind, it is ignored)

    def append(self, entry: dict[str, Any]) -> None:
        with open(self.journal, "ab") as f:
            f.write(encode_entry(entry))
            f.flush()
            os.fsync(f.fileno())

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        self.journal.unlink(missing_ok=True)

    def close(self) -> None:
        pass


class ZkStore:
    """State in one znode ``<chroot>/<service name>/state`` (kazoo; ``zk://h1:2181,h2:2181/path``),
    its journal in sequential children of ``.../state-journal``."""

    def __init__(self, url: str, name: str, timeout: float = 15.0):
        from kazoo.client import KazooClient

        parsed = urlparse(url)
        if parsed.scheme != "zk" or not parsed.netloc:
            raise ValueError(f"--zk: {url!r} is invalid: expected zk://HOST:PORT[,HOST:PORT]/PATH")
        self._url = url
        self.node = f"{parsed.path.rstrip('/')}/{name}/state"
        self.journal = self.node + "-journal"
        self._zk = KazooClient(hosts=parsed.netloc, timeout=timeout)
        self._zk.start(timeout=timeout)

    @property
    def where(self) -> str:
        return f"{self._url.rstrip('/')} node {self.node}"

    def load(self) -> dict[str, Any] | None:
        if not self._zk.exists(self.node):
            return None
        data, _ = self._zk.get(self.node)
        if not data:
            return None
        return replay(decode(data), (self._zk.get(f"{self.journal}/{child}")[0] for child in self._entries()))

    def _entries(self) -> list[str]:
        if not self._zk.exists(self.journal):
            return []
        return sorted(self._zk.get_children(self.journal))  # sequence numbers: in append order

    def save(self, state: dict[str, Any]) -> None:
        data = encode(state)
        if self._zk.exists(self.node):
            self._zk.set(self.node, data)
        else:
            self._zk.create(self.node, data, makepath=True)
        for child in self._entries():  # its generation is over (left behind, they are ignored)
            self._zk.delete(f"{self.journal}/{child}")

    def append(self, entry: dict[str, Any]) -> None:
        self._zk.create(f"{self.journal}/e-", encode_entry(entry), sequence=True, makepath=True)

    def clear(self) -> None:
        if self._zk.exists(self.journal):
            self._zk.delete(self.journal, recursive=True)
        if self._zk.exists(self.node):
            self._zk.delete(self.node)

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()


def open_store(zk: str, state_dir: str, name: str) -> StateStore:
    if zk:
        return ZkStore(zk, name)
    return DirStore(state_dir or "~/.tfmesos/state", name)
