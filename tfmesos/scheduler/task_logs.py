"""The scheduler's log service: a task attempt's stdout/stderr read from its sandbox through the
agent's files API, behind ``GET /v1/logs/ROLE:INDEX`` (the client never needs to reach the agents)."""
from __future__ import annotations

import threading
import time
import urllib.error
from dataclasses import dataclass
from typing import Any, Callable

from ..api.follow import FOLLOW_POLL_SECONDS
from ..mesos.agent_files import FILES, CHUNK, LogError, AgentFiles, sandbox_directory, tail_offset


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
