"""One live run per job name: the claim a run holds on its ``service.name`` while it runs.

Two runs of one name would share the state directory's ``live/<name>.json`` marker and
``live/<name>.token``, the job's record and its task ids; the second one's end removed the first
one's marker and token, and left it running unreachable. So a run claims its name before anything
else, and a second run of a name that is claimed is refused at once, naming the one that runs.

- In a state directory: an exclusive ``flock`` on ``live/<name>.lock``, held by an open descriptor
  of the scheduler's process from the run's start to its end. Taking it is the atomic test: of two
  runs started at once exactly one gets it. The kernel lets go of it when that process ends, in any
  way (``kill -9`` and the OOM killer too), so a scheduler that is gone never holds a name.
- With ZooKeeper (``--zk``): an ephemeral node ``<chroot>/<name>/live`` of the scheduler's
  ZooKeeper session (state_store's ``ZkStore.claim``). ZooKeeper removes it when that session ends;
  after a ``kill -9`` that is the session timeout later, so a node naming a process of this host
  that is gone is taken over at once.

Who holds a name is said by its live marker (``Holder``): the scheduler's pid and that process'
start time (a pid the kernel has given to another process since is told apart from it), its host,
its API once it listens, and the job's last state, refreshed while it runs: ``tfmesos status`` and
``jobs`` read it, without locking anything, and tell at once a run whose scheduler is gone.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError


def process_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot, /proc/PID/stat's 22nd field), or None
    when there is no such process, or it is a zombie (it has ended; only its parent's wait is left)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after the command's name, which may hold anything
    if not fields or fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def flock_holder(fd: int) -> int | None:
    """The pid of the process holding the ``flock`` on the file open at ``fd``, from the kernel's
    /proc/locks ("1: FLOCK  ADVISORY  WRITE 123 fe:00:4567 0 EOF"; "->" lines are waiters), or
    None when no such lock is listed (let go of meanwhile, or /proc is not there)."""
    st = os.fstat(fd)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key and fields[4].isdigit():
            return int(fields[4])
    return None


def process_alive(pid: int, start: int | None) -> bool:
    """Whether the process that had pid ``pid`` and started at ``start`` still runs (``start``
    None, a marker of an older tfmesos: whether some process of that pid runs)."""
    if pid <= 0:
        return False
    now = process_start(pid)
    return now is not None and (start is None or now == start)


@dataclass(frozen=True)
class Holder:
    """A live marker: the run that holds (or held) a name."""
    name: str
    pid: int
    start: int | None = None  # process_start(pid) when it claimed the name
    host: str = ""
    since: float = 0.0  # when it claimed the name (epoch seconds)
    api: str | None = None  # HOST:PORT once its API listens
    master: str = ""  # "embedded", or the master it was given
    last: dict[str, Any] = field(default_factory=dict)  # the job's last state: see LiveMarker.refresh

    @classmethod
    def here(cls, name: str, master: str = "") -> "Holder":
        pid = os.getpid()
        return cls(name, pid, process_start(pid), socket.gethostname(), time.time(), None, master)

    @classmethod
    def from_json(cls, data: dict[str, Any], fallback_name: str = "") -> "Holder":
        last = data.get("last")
        start = data.get("start")
        return cls(str(data.get("name") or fallback_name), int(data["pid"]),
                   int(start) if start is not None else None, str(data.get("host") or ""),
                   float(data.get("since") or 0.0), str(data["api"]) if data.get("api") else None,
                   str(data.get("master") or ""), last if isinstance(last, dict) else {})

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def on_this_host(self) -> bool:
        return not self.host or self.host == socket.gethostname()

    def alive(self) -> bool:
        """Its scheduler still runs (on this host; another host's is not ours to tell: True)."""
        return process_alive(self.pid, self.start) if self.on_this_host else True

    def describe(self) -> str:
        """'scheduler pid 123 on this machine since 14:02:03, API 127.0.0.1:4000'"""
        if not self.pid:  # the lock is held, its marker not written yet (or unreadable)
            return "a scheduler that is starting"
        where = "on this machine" if self.on_this_host else f"on {self.host}"
        if not self.since:  # found by its lock (flock_holder): its marker is not written yet
            return f"scheduler pid {self.pid} {where}, starting"
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        api = f"API {self.api}" if self.api else "no API listening (starting, or ending)"
        return f"scheduler pid {self.pid} {where} since {since}, {api}"


def read_marker(path: Path, fallback_name: str = "") -> Holder | None:
    """The live marker at ``path``, or None when there is none (or it cannot be read)."""
    try:
        return Holder.from_json(json.loads(path.read_bytes()), fallback_name)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


class NameTaken(UsageError):
    """A run of the name is live: refused, naming it, its API and how to stop it."""

    def __init__(self, holder: Holder, where: str):
        self.holder = holder
        stop = f"'tfmesos kill {holder.name}'" + (" (or Ctrl-C where it runs)" if holder.on_this_host else "")
        super().__init__(f"job {holder.name!r}", f"a run of it is live ({holder.describe()}; {where})",
                         f"stop it first with {stop}, or give this run another service.name: a name runs once "
                         "at a time")


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class DirClaim:
    """The claim on a name in a state directory: the lock held, the live marker written (see the
    module). ``taken_over``: the marker of an earlier run whose scheduler is gone, found and replaced."""

    def __init__(self, live_dir: Path, file_name: str, holder: Holder):
        self.lock_path = live_dir / f"{file_name}.lock"
        self.marker = live_dir / f"{file_name}.json"
        self.holder = holder
        self.taken_over: Holder | None = None
        self._fd: int | None = None

    @classmethod
    def take(cls, live_dir: Path, file_name: str, holder: Holder) -> "DirClaim":
        """The name's claim, or NameTaken naming the live run; OSError when the directory cannot
        hold a lock (the caller goes on without one)."""
        claim = cls(live_dir, file_name, holder)
        claim.lock()
        return claim

    def lock(self) -> None:
        """Take the lock and write the marker (NameTaken when a live run holds the name)."""
        live_dir = self.lock_path.parent
        live_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        while True:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                try:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise
                    held = read_marker(self.marker, self.holder.name) or self._starting(fd)
                finally:
                    os.close(fd)
                raise NameTaken(held, f"state directory {live_dir.parent}") from None
            try:  # the file locked may have been removed by the run that let go of it meanwhile
                same = os.fstat(fd).st_ino == os.stat(self.lock_path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        previous = read_marker(self.marker, self.holder.name)
        if previous is not None and previous.pid != self.holder.pid:
            self.taken_over = previous  # its scheduler let go of the lock: it is gone
        self.write()

    def _starting(self, fd: int) -> Holder:
        """The holder of a lock whose marker is not written yet (two runs started at once): named
        by the kernel's record of the lock, so the refusal still says which process runs."""
        pid = flock_holder(fd) or 0  # 0: let go of meanwhile, "a scheduler that is starting"
        return Holder(self.holder.name, pid, process_start(pid) if pid else None)  # no host: this one

    def write(self, **changes: Any) -> None:
        """The marker rewritten whole with ``changes`` (api, last): a reader never sees half."""
        if self._fd is None:
            return
        if changes:
            self.holder = Holder(**{**self.holder.to_json(), **changes})
        _write_atomically(self.marker, json.dumps(self.holder.to_json()).encode())

    def release(self, keep_marker: bool = False) -> None:
        """Let go of the name: the marker removed (unless ``keep_marker``), then the lock file, then
        the lock. Only ever ours: a later run's marker and lock are never touched."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if not keep_marker:
                with contextlib.suppress(OSError):
                    self.marker.unlink()
            with contextlib.suppress(OSError):
                self.lock_path.unlink()  # while locked: whoever opens it next makes a new one
        finally:
            os.close(fd)


def take_dir_claim(state_dir: str | Path, file_name: str, holder: Holder) -> DirClaim:
    """``DirClaim.take`` in ``<state_dir>/live``."""
    return DirClaim.take(Path(state_dir).expanduser() / "live", file_name, holder)
