"""Where the scheduler keeps its framework id and job state between restarts.

ZooKeeper on a cluster (the scheduler may come back on another machine), a directory on a
laptop. Writes are atomic: a crash leaves either the old or the new state, never half. A task's
end is appended to the record's journal instead of rewriting the record (store/format.py, format 3).

A directory also holds ``live/<name>.json`` while a job of that name runs from this machine:
its scheduler (pid, start time), its API's address (``tfmesos status NAME`` needs no --api then)
and the job's last state; ``live/<name>.lock`` is the run's claim on the name (store/name_claim.py:
one live run per name).

While a job runs, its API's token (the one its scheduler made, when none was given) is kept
where its owner's ``tfmesos kill|restart NAME`` finds it and nobody else can read it: in the
directory as ``live/<name>.token``, mode 0600 from its creation (mkstemp, then a rename); in
ZooKeeper as ``<chroot>/<name>/api-token`` with a digest ACL that only the ZooKeeper user of
TFMESOS_ZK_AUTH (``user:password``) may read. Without that variable the token is not written to
ZooKeeper at all: on an open ZooKeeper any client could read it.

After ``tfmesos update``, the values of the env the update gave (the record keeps env names
only: masking.py) are kept the same way, for a scheduler that resumes the job with the options
it was first started with (store/job_store.py): in the directory as ``<name>.env`` beside the
record, mode 0600; in ZooKeeper as ``<chroot>/<name>/update-env`` under the digest ACL of
TFMESOS_ZK_AUTH's user, and not at all without that variable. They go with the record
(``clear``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol
from urllib.parse import urlparse

from ..errors import UnreachableError, UsageError, redact_url
from .format import decode, encode, encode_entry, replay
from .name_claim import Holder, read_marker

ENDS_KEPT = 10  # final records kept per job name (docs/commands.md: "After the end")
DEFAULT_STATE_DIR = "~/.tfmesos/state"


class StateStore(Protocol):
    """load() returns the record in today's format, its journal replayed; save() takes one made by
    format.record() and starts an empty journal; append() adds a format.journal_entry.
    Every store keeps format's bytes and reads them back through format.decode (store/format.py)."""

    def load(self) -> dict[str, Any] | None: ...
    def save(self, state: dict[str, Any]) -> None: ...
    def keep_env(self, env: dict[str, Any]) -> bool: ...
    def kept_env(self) -> dict[str, Any] | None: ...
    def append(self, entry: dict[str, Any]) -> None: ...
    def clear(self) -> None: ...
    def keep_end(self, state: dict[str, Any], kept: int = ENDS_KEPT) -> None: ...
    def ends(self) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...
    @property
    def where(self) -> str: ...


# The nodes ZkStore keeps under a job's path: a job name with such a segment would meet another's.
STORE_NODES = frozenset({"state", "history", "state-journal", "api-token", "update-env", "live"})
ZK_AUTH_ENV = "TFMESOS_ZK_AUTH"  # user:password of the ZooKeeper digest scheme (the token node's ACL)


def zk_auth(environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """(user, password) from TFMESOS_ZK_AUTH, None when unset; UsageError naming the variable when
    it is not ``user:password`` (the password is never quoted)."""
    text = environ.get(ZK_AUTH_ENV, "").strip()
    if not text:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password or any(ord(c) < 32 for c in text):
        raise UsageError(ZK_AUTH_ENV, "is not user:password", "expected the ZooKeeper digest user and its password, "
                         "as user:password")
    return user, password


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
        self.name = name
        self.path = Path(directory).expanduser() / (file_name(name) + ".json")
        self.journal = self.path.with_suffix(".journal")
        self.history = self.path.parent / "history" / file_name(name)
        self.live = self.path.parent / "live" / (file_name(name) + ".json")
        self.token_file = self.live.with_suffix(".token")
        self.env_file = self.path.with_suffix(".env")

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
        self.env_file.unlink(missing_ok=True)

    def keep_env(self, env: dict[str, Any]) -> bool:
        """An update's env (``masking.env_of``), readable by this user only (mkstemp: 0600)."""
        _write_atomically(self.env_file, json.dumps(env).encode())
        return True

    def kept_env(self) -> dict[str, Any] | None:
        try:
            env = json.loads(self.env_file.read_bytes())
        except (OSError, ValueError):
            return None
        return env if isinstance(env, dict) else None

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
        --api finds it), with this process' id and start time, so that a marker left by a crash is
        told apart (a run writes it through its name's claim: ``name_claim.DirClaim``)."""
        self.live.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_atomically(self.live, json.dumps({**Holder.here(self.name).to_json(), "api": api}).encode())

    def withdraw(self) -> None:
        with contextlib.suppress(OSError):
            if json.loads(self.live.read_bytes()).get("pid") == os.getpid():  # not a newer run's
                self.live.unlink()

    def announced(self) -> str | None:
        """The API of a job of this name running from this machine (its process alive), or None."""
        marker = _live_marker(self.live)
        return marker.api if marker else None

    def gone(self) -> Holder | None:
        """The live marker of a run of this name whose scheduler is gone (it ended without
        withdrawing it: ``kill -9``, the OOM killer, a crash), or None."""
        holder = read_marker(self.live, self.name)
        return holder if holder is not None and not holder.alive() else None

    def keep_token(self, token: str) -> None:
        """The job's API token, readable by this user only (mkstemp makes the file 0600; the
        rename puts it in place whole)."""
        self.live.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _write_atomically(self.token_file, token.encode())

    def token(self) -> str | None:
        try:
            return self.token_file.read_text().strip() or None
        except (OSError, UnicodeDecodeError):
            return None

    def drop_token(self, token: str) -> None:
        """Remove the kept token, unless a newer run of the job wrote its own since."""
        if self.token() == token:
            with contextlib.suppress(OSError):
                self.token_file.unlink()

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
        self.token_node = f"{parsed.path.rstrip('/')}/{name}/api-token"
        self.env_node = f"{parsed.path.rstrip('/')}/{name}/update-env"
        self.live_node = f"{parsed.path.rstrip('/')}/{name}/live"
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
        if self._zk.exists(self.env_node):  # deleting needs the parent's ACL, not the node's
            self._zk.delete(self.env_node)

    def keep_env(self, env: dict[str, Any]) -> bool:
        """An update's env (``masking.env_of``) in a node only TFMESOS_ZK_AUTH's user can read;
        False (not kept) without that variable: an open node would hand the values to anyone."""
        auth = zk_auth()
        if auth is None:
            return False
        self._keep_private(self.env_node, json.dumps(env).encode(), auth)
        return True

    def kept_env(self) -> dict[str, Any] | None:
        auth = zk_auth()
        data = self._private(self.env_node, auth) if auth is not None else None
        try:
            env = json.loads(data) if data else None
        except ValueError:
            return None
        return env if isinstance(env, dict) else None

    def _keep_private(self, node: str, data: bytes, auth: tuple[str, str]) -> None:
        """``data`` in ``node``, which only ``auth``'s digest user can read, write or change the ACL
        of. A node there already (a former run's, or one that another client made to be written
        into) is replaced, not written into: its ACL is not ours to trust."""
        from kazoo.exceptions import NoNodeError
        from kazoo.security import make_digest_acl

        self._zk.add_auth("digest", f"{auth[0]}:{auth[1]}")
        with contextlib.suppress(NoNodeError):
            self._zk.delete(node)
        # The job's nodes above it stay as open as the rest of its state (makepath would give them
        # this ACL too, and lock every other job out of the chroot).
        self._zk.ensure_path(node.rsplit("/", 1)[0])
        self._zk.create(node, data, acl=[make_digest_acl(*auth, all=True)])

    def _private(self, node: str, auth: tuple[str, str]) -> bytes | None:
        """What ``node`` holds, read as ``auth``'s user; None when there is none or it cannot read it."""
        from kazoo.exceptions import NoAuthError, NoNodeError

        self._zk.add_auth("digest", f"{auth[0]}:{auth[1]}")
        try:
            data, _ = self._zk.get(node)
        except (NoNodeError, NoAuthError):
            return None
        return data

    def keep_end(self, state: dict[str, Any], kept: int = ENDS_KEPT) -> None:
        self._zk.create(f"{self.history}/h-", encode(state), sequence=True, makepath=True)
        for child in self._end_nodes()[:-kept]:
            self._zk.delete(f"{self.history}/{child}")

    def _end_nodes(self) -> list[str]:
        return sorted(self._zk.get_children(self.history)) if self._zk.exists(self.history) else []

    def ends(self) -> list[dict[str, Any]]:
        return _decoded(self._zk.get(f"{self.history}/{child}")[0] for child in reversed(self._end_nodes()))

    def keep_token(self, token: str, auth: tuple[str, str]) -> None:
        """The job's API token in its own node that only ``auth``'s digest user can read."""
        self._keep_private(self.token_node, token.encode(), auth)

    def token(self, auth: tuple[str, str]) -> str | None:
        """The kept token, read as ``auth``'s user; None when there is none or it cannot read it."""
        data = self._private(self.token_node, auth)
        return data.decode(errors="replace").strip() or None if data else None

    def drop_token(self, token: str, auth: tuple[str, str]) -> None:
        if self.token(auth) == token:
            from kazoo.exceptions import NoNodeError

            with contextlib.suppress(NoNodeError):
                self._zk.delete(self.token_node)

    def claim(self, holder: Holder) -> Holder | None:
        """This run's claim on its name (store/name_claim.py): an ephemeral node of this client's
        session, ``<chroot>/<name>/live``. None once it is ours; else the holder it names (a node
        that vanished meanwhile is tried again)."""
        from kazoo.exceptions import NodeExistsError, NoNodeError

        self._zk.ensure_path(self.live_node.rsplit("/", 1)[0])
        while True:
            try:
                self._zk.create(self.live_node, json.dumps(holder.to_json()).encode(), ephemeral=True)
                return None
            except NodeExistsError:
                try:
                    data, _ = self._zk.get(self.live_node)
                except NoNodeError:
                    continue
            try:
                return Holder.from_json(json.loads(data), holder.name)
            except (ValueError, KeyError, TypeError, AttributeError):
                return Holder(holder.name, 0)

    def update_claim(self, holder: Holder) -> None:
        """The claim's node says ``holder`` now (its API, once it listens), if it is still ours."""
        from kazoo.exceptions import NoNodeError

        with contextlib.suppress(NoNodeError):
            if self._owns(self.live_node):
                self._zk.set(self.live_node, json.dumps(holder.to_json()).encode())

    def drop_claim(self, stale: bool = False) -> None:
        """Remove the claim's node: ours (at the end), or with ``stale`` that of a session whose
        scheduler is known to be gone (a process of this host that has ended: its session has not
        timed out yet)."""
        from kazoo.exceptions import NoNodeError

        with contextlib.suppress(NoNodeError):
            if stale or self._owns(self.live_node):
                self._zk.delete(self.live_node)

    def wait_claim_gone(self, timeout: float) -> bool:
        """Whether the claim's node is gone within ``timeout`` (a watch, no polling)."""
        import threading

        gone = threading.Event()
        if not self._zk.exists(self.live_node, watch=lambda event: gone.set()):
            return True
        return gone.wait(timeout) and not self._zk.exists(self.live_node)

    def _owns(self, node: str) -> bool:
        stat = self._zk.exists(node)
        return stat is not None and stat.ephemeralOwner == self._zk.client_id[0]

    @property
    def session_timeout(self) -> float:
        """Seconds after which ZooKeeper ends a session whose client is gone (its ephemeral nodes too)."""
        return getattr(self._zk, "_session_timeout", 15000) / 1000.0  # kazoo's negotiated value, in ms

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


@dataclass(frozen=True)
class LiveJob:
    """A job running from this machine, as its ``live`` marker says: its name and API's address."""
    name: str
    api: str
    pid: int


def _live_marker(path: Path) -> LiveJob | None:
    """The marker at ``path`` when its API listens and its process is alive and this user's (a
    signal to another user's process is refused: with a shared HOME, their jobs are not ours to act
    on). Alive: the same process, its start time told (a pid the kernel gave another one since is not it)."""
    holder = read_marker(path, path.stem.replace("__", "/"))  # markers before the name was in them
    if holder is None or not holder.api or not holder.alive():
        return None
    try:
        os.kill(holder.pid, 0)
    except OSError:
        return None
    return LiveJob(holder.name, holder.api, holder.pid)


def _own_markers(state_dir: str) -> list[Path]:
    """This user's live markers in ``state_dir``, by name ([] where the folder cannot be read)."""
    live = Path(state_dir or DEFAULT_STATE_DIR).expanduser() / "live"
    try:
        return sorted(p for p in live.glob("*.json") if p.stat().st_uid == os.getuid())
    except OSError:
        return []


def gone_runs(state_dir: str) -> list[Holder]:
    """This user's live markers in ``state_dir`` whose scheduler is gone, by name."""
    found = (read_marker(p, p.stem.replace("__", "/")) for p in _own_markers(state_dir))
    return [h for h in found if h is not None and not h.alive()]


def live_jobs(state_dir: str) -> list[LiveJob]:
    """This user's jobs running from this machine that announced their API in ``state_dir``, by name."""
    return [job for job in map(_live_marker, _own_markers(state_dir)) if job is not None]


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


def live_names(state_dir: str) -> list[str]:
    """The job names (as stored) with a live marker in a state directory: jobs running from this
    machine, or that a crash left a marker of (``announced`` tells them apart)."""
    live = Path(state_dir or DEFAULT_STATE_DIR).expanduser() / "live"
    return sorted(p.stem for p in live.glob("*.json")) if live.is_dir() else []
