"""Where the scheduler keeps its framework id and job state between restarts.

ZooKeeper on a cluster (the scheduler may come back on another machine), a directory on a
laptop. Writes are atomic: a crash leaves either the old or the new state, never half. A task's
end is appended to the record's journal instead of rewriting the record (store/format.py, format 3).

A directory also holds ``live/<name>.json`` while a job of that name runs from this machine:
its API's address (``tfmesos status NAME`` needs no --api then).

Beside the running job's record, each store keeps the final records of the last ``ENDS_KEPT``
jobs of its name (``keep_end``, read back newest first by ``ends``): ``tfmesos status NAME`` and
``tfmesos jobs`` answer from them once the scheduler is gone. In a directory they are
``history/<name>/<end time in ms>-<framework id>.json``; in ZooKeeper the sequential children
of ``<chroot>/<name>/history``.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Protocol
from urllib.parse import urlparse

from ..errors import UnreachableError, redact_url
from .format import decode, encode, encode_entry, replay

ENDS_KEPT = 10  # final records kept per job name (docs/commands.md: "After the end")
DEFAULT_STATE_DIR = "~/.tfmesos/state"


class StateStore(Protocol):
    """load() returns the record in today's format, its journal replayed; save() takes one made by
    format.record() and starts an empty journal; append() adds a format.journal_entry.
    Every store keeps format's bytes and reads them back through format.decode (store/format.py)."""

    def load(self) -> dict[str, Any] | None: ...
    def save(self, state: dict[str, Any]) -> None: ...
    def append(self, entry: dict[str, Any]) -> None: ...
    def clear(self) -> None: ...
    def keep_end(self, state: dict[str, Any], kept: int = ENDS_KEPT) -> None: ...
    def ends(self) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...
    @property
    def where(self) -> str: ...


# The nodes ZkStore keeps under a job's path: a job name with such a segment would meet another's.
STORE_NODES = frozenset({"state", "history", "state-journal"})


def file_name(name: str) -> str:
    """A job's name as DirStore names its files and folders ('/' as '__')."""
    return name.replace("/", "__")


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        # A full disk or a vanished directory: no half-written temporary file stays behind.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _end_key(state: dict[str, Any]) -> str:
    """Sorts as the ends happened: the end time in milliseconds, zero-padded, then the framework."""
    at = (state.get("end") or {}).get("at") or 0
    return f"{int(at * 1000):015d}-{state.get('framework_id') or 'local'}"


def _decoded(raws: Iterable[bytes]) -> list[dict[str, Any]]:
    """Kept ends that read (one written by a newer tfmesos, or cut short, is left out)."""
    out = []
    for raw in raws:
        try:
            out.append(decode(raw))
        except ValueError:  # StateFormatError included
            continue
    return out


class DirStore:
    def __init__(self, directory: str | Path, name: str):
        self.path = Path(directory).expanduser() / (file_name(name) + ".json")
        self.journal = self.path.with_suffix(".journal")
        self.history = self.path.parent / "history" / file_name(name)
        self.live = self.path.parent / "live" / (file_name(name) + ".json")

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
        _write_atomically(self.path, encode(state))
        self.journal.unlink(missing_ok=True)  # its generation is over (left behind, it is ignored)

    def append(self, entry: dict[str, Any]) -> None:
        with open(self.journal, "ab") as f:
            f.write(encode_entry(entry))
            f.flush()
            os.fsync(f.fileno())

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        self.journal.unlink(missing_ok=True)

    def keep_end(self, state: dict[str, Any], kept: int = ENDS_KEPT) -> None:
        _write_atomically(self.history / (_end_key(state) + ".json"), encode(state))
        for old in self._end_files()[:-kept]:
            old.unlink(missing_ok=True)

    def _end_files(self) -> list[Path]:
        return sorted(self.history.glob("*.json")) if self.history.is_dir() else []

    def ends(self) -> list[dict[str, Any]]:
        return _decoded(p.read_bytes() for p in reversed(self._end_files()))

    def announce(self, api: str) -> None:
        """While a job runs from this machine: where its API is (``tfmesos status NAME`` without
        --api finds it), with this process' id, so that a marker left by a crash is told apart."""
        _write_atomically(self.live, json.dumps({"api": api, "pid": os.getpid()}).encode())

    def withdraw(self) -> None:
        with contextlib.suppress(OSError):
            if json.loads(self.live.read_bytes()).get("pid") == os.getpid():  # not a newer run's
                self.live.unlink()

    def announced(self) -> str | None:
        """The API of a job of this name running from this machine (its process alive), or None."""
        try:
            marker = json.loads(self.live.read_bytes())
            os.kill(int(marker["pid"]), 0)
            return str(marker["api"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def close(self) -> None:
        pass


class ZkStore:
    """State in one znode ``<chroot>/<service name>/state`` (kazoo; ``zk://h1:2181,h2:2181/path``),
    its journal in sequential children of ``.../state-journal``."""

    def __init__(self, url: str, name: str, timeout: float = 15.0):
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError

        parsed = urlparse(url)
        if parsed.scheme != "zk" or not parsed.netloc:
            raise ValueError(f"--zk: {redact_url(url)!r} is invalid: expected zk://HOST:PORT[,HOST:PORT]/PATH")
        self._url = redact_url(url)  # shown in messages: a password stays out of them
        self.node = f"{parsed.path.rstrip('/')}/{name}/state"
        self.journal = self.node + "-journal"
        self.history = f"{parsed.path.rstrip('/')}/{name}/history"
        self._zk = KazooClient(hosts=parsed.netloc, timeout=timeout)
        try:
            self._zk.start(timeout=timeout)
        except KazooTimeoutError:
            self._zk.stop()
            self._zk.close()
            raise UnreachableError(f"cannot reach ZooKeeper at {self._url}", f"no session within {timeout:g} s",
                                   "check --zk and that ZooKeeper runs and is reachable from here") from None

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

    def keep_end(self, state: dict[str, Any], kept: int = ENDS_KEPT) -> None:
        self._zk.create(f"{self.history}/h-", encode(state), sequence=True, makepath=True)
        for child in self._end_nodes()[:-kept]:
            self._zk.delete(f"{self.history}/{child}")

    def _end_nodes(self) -> list[str]:
        return sorted(self._zk.get_children(self.history)) if self._zk.exists(self.history) else []

    def ends(self) -> list[dict[str, Any]]:
        return _decoded(self._zk.get(f"{self.history}/{child}")[0] for child in reversed(self._end_nodes()))

    def names(self, depth: int = 4) -> list[str]:
        """Every job name under this store's path that has a record or kept ends (a name with
        '/' is a path of nodes: looked for ``depth`` levels down)."""
        root = urlparse(self._url).path.rstrip("/")
        found, level = [], [""]
        for _ in range(depth + 1):  # the root's children are one level down: names of 1..depth segments
            below = []
            for name in level:
                node = f"{root}/{name}".rstrip("/") or "/"
                children = self._zk.get_children(node) if self._zk.exists(node) else []
                if name and {"state", "history"} & set(children):  # a record, or kept ends
                    found.append(name)
                below += [f"{name}/{c}".lstrip("/") for c in children if c not in STORE_NODES]
            level = below
        return sorted(found)

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()


def open_store(zk: str, state_dir: str, name: str) -> StateStore:
    if zk:
        return ZkStore(zk, name)
    return DirStore(state_dir or DEFAULT_STATE_DIR, name)


def dir_names(state_dir: str) -> list[str]:
    """Every job name with a record or kept ends in a state directory (as stored: '/' as '__')."""
    root = Path(state_dir or DEFAULT_STATE_DIR).expanduser()
    running = {p.stem for p in root.glob("*.json")}
    ended = {p.name for p in (root / "history").iterdir() if p.is_dir()} if (root / "history").is_dir() else set()
    return sorted(running | ended)
