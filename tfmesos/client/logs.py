"""Task logs read through the Mesos agent's files API, as on any Mesos cluster.

The scheduler side (``TaskLogs``) finds a task attempt's sandbox from the agent's ``/state``
(``executors[]``/``completed_executors[]`` ``.directory``; one executor per task, named by the
task id) and reads ``stdout``/``stderr`` there with ``/files/read``. Sandboxes of finished and
relaunched attempts stay readable as long as the agent keeps them. The client side
(``cmd_logs``) is ``tfmesos logs ROLE:INDEX``, which talks only to the scheduler's API
(``GET /v1/logs/ROLE:INDEX``): the agents need not be reachable from where it runs.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from ..api.token import token_header
from ..core.job import ENDED_PHASES
from ..core.status import StatusSnapshot

FILES = ("stdout", "stderr")
CHUNK = 64 * 1024  # what one /files/read answers at most (16 pages)
FOLLOW_POLL_SECONDS = 1.0


class LogError(Exception):
    """A log that cannot be read; ``status`` is the HTTP status the API answers with."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status


def _get_json(url: str, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(urllib.request.Request(url, headers=token_header()), timeout=timeout) as resp:
        # Mesos sends file bytes as they are: keep what is not UTF-8 as lone surrogates.
        return json.loads(resp.read().decode("utf-8", "surrogateescape"))


def to_bytes(data: str) -> bytes:
    return data.encode("utf-8", "surrogateescape")


class AgentFiles:
    """One Mesos agent's ``/state`` and ``/files/read``."""

    def __init__(self, address: str, timeout: float = 10.0):
        self.address, self.timeout = address, timeout

    def state(self) -> dict[str, Any]:
        return _get_json(f"http://{self.address}/state", self.timeout)

    def read(self, path: str, offset: int, length: int | None = None) -> tuple[bytes, int]:
        """(bytes, offset) at ``offset``; offset -1 answers (b"", size of the file)."""
        query = {"path": path, "offset": offset}
        if length is not None:
            query["length"] = length
        try:
            body = _get_json(f"http://{self.address}/files/read?{urllib.parse.urlencode(query)}", self.timeout)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise LogError(404, f"{path} is not on agent {self.address} (sandbox removed?)") from None
            raise LogError(502, f"agent {self.address} answered {exc.code} for {path}") from None
        return to_bytes(body["data"]), int(body["offset"])


def sandbox_index(agent_state: dict[str, Any], framework_id: str) -> dict[str, str]:
    """Executor id -> sandbox of a framework's executors in an agent's /state, running or completed."""
    found: dict[str, str] = {}
    for framework in agent_state.get("frameworks", []) + agent_state.get("completed_frameworks", []):
        if framework.get("id") != framework_id:
            continue
        for executor in framework.get("executors", []) + framework.get("completed_executors", []):
            if executor.get("id") and executor.get("directory"):
                found.setdefault(executor["id"], executor["directory"])
    return found


def sandbox_directory(agent_state: dict[str, Any], framework_id: str, executor_id: str) -> str | None:
    """The sandbox of an executor (one per task, named by the task id) in an agent's /state."""
    return sandbox_index(agent_state, framework_id).get(executor_id)


def read_tail(files: AgentFiles, path: str, nbytes: int) -> str | None:
    """The last ``nbytes`` of a file from its first whole line (None when it cannot be read)."""
    try:
        _, size = files.read(path, -1)
        start = max(0, size - nbytes)
        data, _ = files.read(path, start, size - start) if size > start else (b"", start)
    except (LogError, urllib.error.URLError, OSError, ValueError):
        return None
    if start > 0:
        data = data[data.find(b"\n") + 1:]
    return data.decode("utf-8", "surrogateescape")


def sandbox_directories(where: dict[str, str], framework_id: str, seconds: float = 5.0,
                        timeout: float = 2.0) -> dict[str, str]:
    """The sandbox of each task id in ``where`` (task id -> agent address), asking each agent's
    /state once, for at most ``seconds`` in all; what an agent did not answer is left out."""
    found: dict[str, str] = {}
    deadline = time.monotonic() + seconds
    by_agent: dict[str, list[str]] = {}
    for task_id, address in where.items():
        by_agent.setdefault(address, []).append(task_id)
    for address, task_ids in by_agent.items():
        if time.monotonic() >= deadline:
            break
        try:
            state = AgentFiles(address, timeout).state()
        except (urllib.error.URLError, OSError, ValueError):
            continue
        index = sandbox_index(state, framework_id)
        found.update((task_id, index[task_id]) for task_id in task_ids if task_id in index)
    return found


def agent_address_from_offer(offer: dict[str, Any]) -> str | None:
    """Offers carry the agent's URL (Offer.url): the files API is there."""
    address = (offer.get("url") or {}).get("address") or {}
    host = address.get("ip") or address.get("hostname")
    return f"{host}:{address['port']}" if host and address.get("port") else None


def agent_address_from_master(master: str, agent_id: str, timeout: float = 10.0) -> str | None:
    """Fallback after a scheduler restart, before any offer from that agent: the master's /state."""
    for slave in _get_json(f"http://{master}/state", timeout).get("slaves", []):
        if slave.get("id") == agent_id:
            pid = slave.get("pid", "")  # slave(1)@IP:PORT
            return pid.split("@", 1)[1] if "@" in pid else f"{slave['hostname']}:{slave['port']}"
    return None


def tail_offset(files: AgentFiles, path: str, size: int, lines: int) -> int:
    """Where the last ``lines`` lines of the file start (reading backwards a chunk at a time)."""
    if lines <= 0:
        return size
    end, seen = size, 0
    while end > 0:
        start = max(0, end - CHUNK)
        data, _ = files.read(path, start, end - start)
        # A final newline ends the last line; it does not start one more.
        stop = len(data) - 1 if end == size and data.endswith(b"\n") else len(data)
        pos = stop
        while True:
            pos = data.rfind(b"\n", 0, pos)
            if pos < 0:
                break
            seen += 1
            if seen == lines:
                return start + pos + 1
        end = start
    return 0


@dataclass(frozen=True)
class Attempt:
    task_id: str
    agent_id: str


class TaskLogs:
    """The scheduler's reader of its tasks' logs (behind ``GET /v1/logs/ROLE:INDEX``)."""

    def __init__(self, attempts: Callable[[str], list[Attempt]], agent_address: Callable[[str], str | None],
                 framework_id: Callable[[], str | None]):
        self._attempts, self._agent_address, self._framework_id = attempts, agent_address, framework_id
        self._sandboxes: dict[str, tuple[str, str]] = {}  # task id -> (agent address, directory)
        self._lock = threading.Lock()
        self._reads = threading.Condition()  # notified at every read (linger)
        self._last_read = float("-inf")  # time.monotonic() of the last read

    def sandbox(self, attempt: Attempt) -> tuple[str, str]:
        with self._lock:
            known = self._sandboxes.get(attempt.task_id)
        if known:
            return known
        address = self._agent_address(attempt.agent_id)
        if not address:
            raise LogError(503, f"the address of agent {attempt.agent_id} is not known yet")
        framework_id = self._framework_id() or ""
        try:
            directory = sandbox_directory(AgentFiles(address).state(), framework_id, attempt.task_id)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise LogError(502, f"cannot reach agent {address}: {exc}") from None
        if not directory:
            raise LogError(404, f"agent {address} has no sandbox of {attempt.task_id} (not started, or removed)")
        with self._lock:
            self._sandboxes[attempt.task_id] = (address, directory)
        return address, directory

    def linger(self) -> None:
        """At the job's end, before the API goes: if a follower (``tfmesos logs --follow``, the
        page) read in the last poll interval, wait up to two intervals for its next read, which
        takes what the tasks wrote last (it would otherwise find the API gone)."""
        with self._reads:
            start = time.monotonic()
            if start - self._last_read > 2 * FOLLOW_POLL_SECONDS:
                return
            self._reads.wait_for(lambda: self._last_read > start, timeout=2.5 * FOLLOW_POLL_SECONDS)

    def read(self, task: str, query: dict[str, str]) -> dict[str, Any]:
        """One chunk of a task's log. Query: file (stdout|stderr), attempt (task id; default the
        latest), offset (default: the end, less ``tail`` lines), length, tail (lines)."""
        try:
            return self._read(task, query)
        finally:
            with self._reads:
                self._last_read = time.monotonic()
                self._reads.notify_all()

    def _read(self, task: str, query: dict[str, str]) -> dict[str, Any]:
        try:
            attempts = self._attempts(task)
        except ValueError as exc:
            raise LogError(400, str(exc)) from None
        if not attempts:
            raise LogError(404, f"{task} has not been launched yet")
        name = query.get("file", "stdout")
        if name not in FILES:
            raise LogError(400, f"file: {name!r}: expected one of {', '.join(FILES)}")
        wanted = query.get("attempt")
        chosen = attempts[-1] if not wanted else next((a for a in attempts if a.task_id == wanted), None)
        if chosen is None:
            raise LogError(404, f"attempt: {wanted!r} is not an attempt of {task}: expected one of "
                                f"{', '.join(a.task_id for a in attempts)}")
        try:
            offset = int(query["offset"]) if "offset" in query else None
            length = min(int(query.get("length", CHUNK)), CHUNK)
            tail = int(query.get("tail", 0))
        except ValueError as exc:
            raise LogError(400, f"offset, length and tail must be integers: {exc}") from None
        address, directory = self.sandbox(chosen)
        files = AgentFiles(address)
        path = f"{directory}/{name}"
        try:
            _, size = files.read(path, -1)
            if offset is None:
                offset = tail_offset(files, path, size, tail) if tail else size
            data, _ = files.read(path, offset, length) if offset < size else (b"", offset)
        except (urllib.error.URLError, OSError) as exc:
            raise LogError(502, f"cannot read {path} on agent {address}: {exc}") from None
        return {
            "task": task,
            "task_id": chosen.task_id,
            "attempts": [a.task_id for a in attempts],
            "latest": chosen.task_id == attempts[-1].task_id,
            "agent": address,
            "file": name,
            "path": path,
            "size": size,
            "offset": offset,
            "next_offset": offset + len(data),
            "data": data.decode("utf-8", "surrogateescape"),
        }


# ---------------------------------------------------------------------- the command line
def api_address(args: argparse.Namespace) -> str:
    from ..options.load import OptionsError

    api = getattr(args, "api", None) or os.environ.get("TFMESOS_API", "")
    if not api:
        raise OptionsError(["--api: missing: expected HOST:PORT of the scheduler's API (printed by 'tfmesos run')"])
    from ..scheduler.reach import parse_host_port

    parse_host_port(api, "--api")  # a plain refusal of a malformed address, not an InvalidURL
    return api


def fetch_chunk(api: str, task: str, query: dict[str, Any]) -> dict[str, Any]:
    url = f"http://{api}/v1/logs/{urllib.parse.quote(task)}?{urllib.parse.urlencode(query)}"
    try:
        return _get_json(url, timeout=30)
    except urllib.error.HTTPError as exc:
        try:
            text = json.loads(exc.read()).get("error", str(exc))
        except ValueError:
            text = str(exc)
        raise LogError(exc.code, text) from None


def _status(api: str) -> StatusSnapshot | None:
    """The job's /v1/status, or None when the scheduler does not answer (or serves a status of
    a newer version than this tfmesos reads)."""
    try:
        return StatusSnapshot.from_json(_get_json(f"http://{api}/v1/status"))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _job_over(api: str) -> bool:
    snap = _status(api)
    return snap is None or snap.phase in ENDED_PHASES  # gone: nothing more will be written


def _task_state(snap: StatusSnapshot | None, task: str) -> str | None:
    """The task's state in a /v1/status snapshot, None when the job has no such task."""
    return next((t.state for t in snap.tasks if t.name == task), None) if snap is not None else None


def _first_chunk(api: str, task: str, query: dict[str, Any], follow: bool, stop: threading.Event,
                 err: Any) -> dict[str, Any]:
    """The first chunk; with ``follow``, a task not started yet is waited for (said once)."""
    noted = False
    while True:
        try:
            return fetch_chunk(api, task, query)
        except LogError as exc:
            if exc.status not in (404, 503) or not follow:
                raise
            snap = _status(api)
            state = _task_state(snap, task)
            if snap is None or state is None or snap.phase in ENDED_PHASES:
                raise
            if not noted:
                err.write(f"tfmesos logs: waiting for {task} to start (job {snap.phase}, task {state})\n")
                err.flush()
                noted = True
        if stop.wait(FOLLOW_POLL_SECONDS):
            raise LogError(404, f"{task} did not start")


def stream_log(api: str, task: str, file: str, tail: int | None, follow: bool, out: Any,
               stop: threading.Event | None = None, err: Any = None) -> int:
    """Write a task's log to ``out`` (a binary stream); with ``follow``, keep writing what comes,
    and go on with the next attempt when the task is relaunched. Returns the bytes written."""
    stop = stop or threading.Event()
    err = err or sys.stderr
    written = 0
    query: dict[str, Any] = {"file": file}
    query.update({"tail": tail} if tail is not None else {"offset": 0})
    chunk = _first_chunk(api, task, query, follow, stop, err)
    last = False  # the read after the job's end: what it has is all there will be
    while True:
        data = to_bytes(chunk["data"])
        out.write(data)
        out.flush()
        written += len(data)
        base = {"file": file, "attempt": chunk["task_id"]}
        if chunk["next_offset"] < chunk["size"]:
            chunk = fetch_chunk(api, task, {**base, "offset": chunk["next_offset"]})
            continue
        if not follow or last:
            return written
        if not chunk["latest"]:
            newer = chunk["attempts"][chunk["attempts"].index(chunk["task_id"]) + 1]
            out.write(f"--- {task} relaunched as {newer} ---\n".encode())
            chunk = fetch_chunk(api, task, {"file": file, "attempt": newer, "offset": 0})
            continue
        over = stop.wait(FOLLOW_POLL_SECONDS) or _job_over(api)
        try:
            chunk = fetch_chunk(api, task, {**base, "offset": chunk["next_offset"]})
        except (urllib.error.URLError, OSError):
            if over or _job_over(api):
                return written  # the scheduler left with the job (it lingers for a last read: TaskLogs.linger)
            raise
        last = over  # read after the end: written out to its last byte, then done


# ---------------------------------------------------------------------- a finished job's logs
class LocalFiles:
    """A sandbox on this machine, read the way ``AgentFiles`` reads one through its agent."""

    def read(self, path: str, offset: int, length: int | None = None) -> tuple[bytes, int]:
        try:
            with open(path, "rb") as f:
                if offset < 0:
                    return b"", os.fstat(f.fileno()).st_size
                f.seek(offset)
                return f.read(CHUNK if length is None else length), offset
        except OSError as exc:
            raise LogError(404, f"{path}: {exc.strerror}") from None


def kept_log(attempt: dict[str, Any], framework_id: str, file: str, tail: int | None, out: Any) -> str:
    """Write an ended job's task log, as its record locates it (``history.log_attempts``), to
    ``out``: through the agent's files API while the agent answers, else from the sandbox path
    when it is on this machine. Returns where it was read; LogError when neither works."""
    agent, directory, task_id = attempt.get("agent"), attempt.get("directory"), attempt["task_id"]
    why = "the job's record names no agent for it"
    if agent:
        try:
            files: AgentFiles | LocalFiles = AgentFiles(agent)
            directory = directory or sandbox_directory(files.state(), framework_id, task_id)  # type: ignore[union-attr]
            if not directory:
                raise LogError(404, f"agent {agent} has no sandbox of {task_id} any more")
            _copy(files, f"{directory}/{file}", tail, out)
            return f"agent {agent}"
        except LogError as exc:
            why = str(exc)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            why = f"agent {agent} does not answer ({getattr(exc, 'reason', exc)})"
    if directory and os.path.isdir(directory):
        _copy(LocalFiles(), os.path.join(directory, file), tail, out)
        return f"{directory} on this machine"
    kept = (attempt.get("tail") or {}).get(file)
    if kept is not None:
        lines = kept.splitlines(keepends=True)
        out.write(to_bytes("".join(lines[-tail:] if tail is not None and tail > 0 else lines)))
        out.flush()
        return "the job's record (its sandbox is gone: the end of the log kept when the job ended)"
    where = (f"; its sandbox {directory} is not on this machine (the embedded master of a local 'tfmesos run' "
             "removes its sandboxes when the run ends: --keep-serving SECONDS keeps them readable meanwhile)"
             if directory else "")
    raise LogError(404, f"the log of {task_id} is gone: {why}{where}")


def _copy(files: AgentFiles | LocalFiles, path: str, tail: int | None, out: Any) -> None:
    _, size = files.read(path, -1)
    offset = tail_offset(files, path, size, tail) if tail is not None else 0  # type: ignore[arg-type]
    while offset < size:
        data, _ = files.read(path, offset, min(CHUNK, size - offset))
        if not data:
            break
        out.write(data)
        offset += len(data)
    out.flush()


def cmd_logs(args: argparse.Namespace) -> int:
    if len(args.what) > 2:
        print(f"tfmesos logs: {' '.join(args.what)!r}: expected ROLE:INDEX or NAME ROLE:INDEX", file=sys.stderr)
        return 2
    name, task = (None, args.what[0]) if len(args.what) == 1 else args.what
    file = "stderr" if args.stderr else "stdout"
    if name is not None:
        from ..store.records import live_api_of

        api = live_api_of(args, name)
        if api is None:
            return _cmd_kept_logs(args, name, task, file)
    else:
        api = api_address(args)
    try:
        written = stream_log(api, task, file, args.tail, args.follow, sys.stdout.buffer)
    except LogError as exc:
        starting = exc.status == 503 or "not been launched" in str(exc) or "not started" in str(exc)
        hint = "; the job is still placing or starting it: --follow waits for its output" if starting and not args.follow else ""
        print(f"tfmesos logs: {exc}{hint}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"tfmesos logs: cannot reach the scheduler at {api}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    if not written and not args.follow:
        state = _task_state(_status(api), task)
        print(f"tfmesos logs: {task}'s {file} is empty so far" + (f" (task {state})" if state else "")
              + "; --follow waits for what it writes", file=sys.stderr)
    return 0


def _cmd_kept_logs(args: argparse.Namespace, name: str, task: str, file: str) -> int:
    from .history import log_attempts, when
    from ..store.records import newest_end

    rec = newest_end(args, name)
    attempts = log_attempts(rec, task)
    if not attempts:
        known = ", ".join(((rec.get("end") or {}).get("logs") or {})) or "none"
        print(f"tfmesos logs: {task}: not a task of job {name!r}'s last run: expected one of {known}", file=sys.stderr)
        return 1
    try:
        source = kept_log(attempts[-1], rec.get("framework_id") or "", file, args.tail, sys.stdout.buffer)
    except LogError as exc:
        print(f"tfmesos logs: {exc}", file=sys.stderr)
        return 1
    # On stderr: which run this was (a job of that name may be running again: --api reads that one).
    print(f"tfmesos logs: {task} of the run of {name} that ended {when((rec.get('end') or {}).get('at'))}, "
          f"read from {source}", file=sys.stderr)
    return 0


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser("logs", help="print a task's stdout or stderr from its Mesos sandbox (a running job's, or "
                                    "with NAME, the last run's of that job once it ended)")
    p.add_argument("what", nargs="+", metavar="[NAME] ROLE:INDEX",
                   help="e.g. worker:1 (the job at --api), or pss-digits chief:0 (that job, running or ended)")
    p.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    p.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing what the task writes, across relaunches")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    add_record_flags(p)
    p.set_defaults(func=cmd_logs)


def add_record_flags(p: argparse.ArgumentParser) -> None:
    """Where ended jobs' records are kept: what `tfmesos run` was given."""
    p.add_argument("--state-dir", help="the state directory 'tfmesos run' used (default ~/.tfmesos/state)")
    p.add_argument("--zk", help="zk://HOST:PORT/PATH when 'tfmesos run' kept its state in ZooKeeper")
