"""The streamed task's output and progress as the console shows them, every line once: from the
executor's messages, and from its sandbox (``output.log``, ``progress.json``, read through the
agent's files API like ``tfmesos logs``) for what the messages missed: after a master failover or
a scheduler restart (an adoption), at the task's end, and where a message skips ahead."""
from __future__ import annotations

import json
import logging
import threading
import urllib.error
from typing import TYPE_CHECKING, Any, Callable

from ..mesos.agent_files import CHUNK, AgentFiles, LogError
from ..mesos.messages import OUTPUT_LOG, PROGRESS_FILE, OutputLines, Progress
from .output_cursor import read_window, take, whole_lines
from .task_logs import Attempt

if TYPE_CHECKING:
    from .job_shell import JobShell

log = logging.getLogger("tfmesos.scheduler.output_catchup")

READ_ERRORS = (LogError, urllib.error.URLError, OSError, ValueError, KeyError)


class OutputCatchUp:
    """``sandbox(task_id)`` -> (agent address, sandbox directory) or LogError; ``show(task_id,
    lines)`` prints; ``progress(task_id, values)`` takes the latest reported values."""

    def __init__(self, sandbox: Callable[[str], tuple[str, str]], show: Callable[[str, list[str]], None],
                 progress: Callable[[str, dict[str, Any]], None]):
        self._sandbox, self._show, self._progress = sandbox, show, progress
        self._shown: dict[str, int] = {}  # task id -> bytes of its output.log shown
        self._lock = threading.Lock()  # messages, status updates and a resume's thread come in together

    def message(self, msg: OutputLines) -> None:
        with self._lock:
            shown = self._shown.get(msg.task_id, 0)
            decided = take(shown, msg.offset, msg.lines)
            if decided.gap is not None:
                self._read_back(msg.task_id, *decided.gap)
            if decided.lines:
                self._show(msg.task_id, list(decided.lines))
            self._shown[msg.task_id] = max(self._shown.get(msg.task_id, 0), decided.shown_to)

    def catch_up(self, task_id: str) -> None:
        """Show what the task wrote that no message brought, and take its latest progress."""
        with self._lock:
            self._read_back(task_id, self._shown.get(task_id, 0), None)
            try:
                address, directory = self._sandbox(task_id)
                data, _ = AgentFiles(address, 5.0).read(f"{directory}/{PROGRESS_FILE}", 0, CHUNK)
                values = json.loads(data)
            except READ_ERRORS as exc:
                log.debug("no progress of %s in its sandbox: %s", task_id, exc)
                return
        if isinstance(values, dict) and values:
            self._progress(task_id, values)

    def _read_back(self, task_id: str, start: int, end: int | None) -> None:
        """Show output.log's whole lines in [start, end) (end None: up to what is there now)."""
        try:
            address, directory = self._sandbox(task_id)
            files, path = AgentFiles(address, 5.0), f"{directory}/{OUTPUT_LOG}"
            size = files.read(path, -1)[1] if end is None else end
            at, skipped = read_window(start, size)
            if skipped:
                self._show(task_id, [f"({skipped} bytes of output not shown here: tfmesos logs has them)"])
            data = b""
            while at + len(data) < size:
                chunk, _ = files.read(path, at + len(data), min(CHUNK, size - at - len(data)))
                if not chunk:
                    break
                data += chunk
        except READ_ERRORS as exc:
            if end is not None:  # a gap a message showed: say that lines are missing
                self._show(task_id, [f"({end - start} bytes of output missed: tfmesos logs has them; {exc})"])
                self._shown[task_id] = max(self._shown.get(task_id, 0), end)
            else:
                log.info("cannot catch up with %s's output: %s", task_id, exc)
            return
        lines, used = whole_lines(data, skipped > 0)
        if lines:
            self._show(task_id, lines)
        self._shown[task_id] = max(self._shown.get(task_id, 0), at + used)


class StreamedOutput:
    """The streamed tasks' output for one job's shell: their current attempts, their sandboxes
    (through the task's places), the catch-up after a re-registration or at a task's end, and the
    executors' output messages, each line shown once (``OutputCatchUp``)."""

    def __init__(self, shell: JobShell):
        self.shell = shell
        self.catchup = OutputCatchUp(self._sandbox_of, shell.hooks.output, self._progress_read_back)

    def streamed_task_ids(self) -> list[str]:
        """The current attempts of the tasks that stream their output (launched ones)."""
        shell = self.shell
        with shell.cond:
            return [rec.task_id for key in shell.spec.streamed_keys
                    if (rec := shell.job.tasks.get(key)) is not None and rec.task_id]

    def message(self, msg: OutputLines) -> None:
        self.catchup.message(msg)

    def catch_up(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self.catchup.catch_up(task_id)

    def _sandbox_of(self, task_id: str) -> tuple[str, str]:
        shell = self.shell
        with shell.cond:
            key = shell.job.key_of(task_id)
            rec = shell.job.tasks.get(key) if key is not None else None
            agent_id = shell.places.agent_of(task_id, rec.agent_id if rec else "")
        return shell.logs.sandbox(Attempt(task_id, agent_id))

    def _progress_read_back(self, task_id: str, values: dict[str, Any]) -> None:
        self.shell.events.executor_said(Progress(task_id, values))
