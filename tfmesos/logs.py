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
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from .api_token import token_header
from .core.job import ENDED_PHASES

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


def sandbox_directory(agent_state: dict[str, Any], framework_id: str, executor_id: str) -> str | None:
    """The sandbox of an executor in an agent's /state, running or completed."""
    for framework in agent_state.get("frameworks", []) + agent_state.get("completed_frameworks", []):
        if framework.get("id") != framework_id:
            continue
        for executor in framework.get("executors", []) + framework.get("completed_executors", []):
            if executor.get("id") == executor_id:
                return executor.get("directory")
    return None


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

    def read(self, task: str, query: dict[str, str]) -> dict[str, Any]:
        """One chunk of a task's log. Query: file (stdout|stderr), attempt (task id; default the
        latest), offset (default: the end, less ``tail`` lines), length, tail (lines)."""
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
    from .options import OptionsError

    api = getattr(args, "api", None) or os.environ.get("TFMESOS_API", "")
    if not api:
        raise OptionsError(["--api: missing: expected HOST:PORT of the scheduler's API (printed by 'tfmesos run')"])
    from .reach import parse_host_port

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


def _job_over(api: str) -> bool:
    try:
        return _get_json(f"http://{api}/v1/status")["phase"] in ENDED_PHASES
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return True  # the scheduler is gone: nothing more will be written


def stream_log(api: str, task: str, file: str, tail: int | None, follow: bool, out: Any,
               stop: threading.Event | None = None) -> None:
    """Write a task's log to ``out`` (a binary stream); with ``follow``, keep writing what comes,
    and go on with the next attempt when the task is relaunched."""
    stop = stop or threading.Event()
    query: dict[str, Any] = {"file": file}
    query.update({"tail": tail} if tail is not None else {"offset": 0})
    chunk = fetch_chunk(api, task, query)
    while True:
        out.write(to_bytes(chunk["data"]))
        out.flush()
        base = {"file": file, "attempt": chunk["task_id"]}
        if chunk["next_offset"] < chunk["size"]:
            chunk = fetch_chunk(api, task, {**base, "offset": chunk["next_offset"]})
            continue
        if not follow:
            return
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
                return  # the scheduler left with the job: its last lines were read already
            raise
        if over:  # one last read (just done): what was written before the end
            out.write(to_bytes(chunk["data"]))
            out.flush()
            return


def cmd_logs(args: argparse.Namespace) -> int:
    api = api_address(args)
    try:
        stream_log(api, args.task, "stderr" if args.stderr else "stdout", args.tail, args.follow, sys.stdout.buffer)
    except LogError as exc:
        print(f"tfmesos logs: {exc}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"tfmesos logs: cannot reach the scheduler at {api}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def add_subcommand(sub: Any) -> None:
    p = sub.add_parser("logs", help="print a task's stdout or stderr from its Mesos sandbox")
    p.add_argument("task", metavar="ROLE:INDEX", help="e.g. worker:1")
    p.add_argument("--api", help="HOST:PORT of the scheduler API (or TFMESOS_API)")
    p.add_argument("--stderr", action="store_true", help="stderr instead of stdout")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing what the task writes, across relaunches")
    p.add_argument("--tail", type=int, metavar="N", help="only the last N lines")
    p.set_defaults(func=cmd_logs)
