"""A Mesos agent's files API as every Mesos agent serves it: ``/files/read`` of a sandbox found
through the agent's ``/state`` (``executors[]``/``completed_executors[]`` ``.directory``; one executor
per task, named by the task id). Read by the scheduler's log service and final record, and by
``tfmesos logs`` for a finished job's kept sandboxes."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


FILES = ("stdout", "stderr")
CHUNK = 64 * 1024  # what one /files/read answers at most (16 pages)


class LogError(Exception):
    """A log that cannot be read; ``status`` is the HTTP status the API answers with."""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = status


def get_json(url: str, timeout: float = 10.0, headers: dict[str, str] | None = None) -> Any:
    """A GET answered with JSON. Only the caller's headers go out: the scheduler API's token is
    for the scheduler, never for a Mesos master or agent."""
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as resp:
        # Mesos sends file bytes as they are: keep what is not UTF-8 as lone surrogates.
        return json.loads(resp.read().decode("utf-8", "surrogateescape"))


def to_bytes(data: str) -> bytes:
    return data.encode("utf-8", "surrogateescape")


class AgentFiles:
    """One Mesos agent's ``/state`` and ``/files/read``."""

    def __init__(self, address: str, timeout: float = 10.0):
        self.address, self.timeout = address, timeout

    def state(self) -> dict[str, Any]:
        return get_json(f"http://{self.address}/state", self.timeout)

    def read(self, path: str, offset: int, length: int | None = None) -> tuple[bytes, int]:
        """(bytes, offset) at ``offset``; offset -1 answers (b"", size of the file)."""
        query = {"path": path, "offset": offset}
        if length is not None:
            query["length"] = length
        try:
            body = get_json(f"http://{self.address}/files/read?{urllib.parse.urlencode(query)}", self.timeout)
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
    for slave in get_json(f"http://{master}/state", timeout).get("slaves", []):
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
