"""The executor's end of ``tfmesos.report``: the FIFO a task's reports arrive on.

It reads with blocking reads (no polling) and forwards the latest values as a framework message,
at most every ``FORWARD_SECONDS``. The task side, and the FIFO's name (``REPORT_ENV``), are
``tfmesos.task.report``.
"""
from __future__ import annotations

import json
import os
import threading
import time

from ..mesos.messages import PROGRESS_FILE, Progress
from ..task.report import REPORT_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: every executor imports this module
    from typing import Any, Callable

FORWARD_SECONDS = 0.5
_CLOSE = b"\x00close"  # the executor's last line to its own reader

__all__ = ["REPORT_ENV", "FORWARD_SECONDS", "PROGRESS_FILE", "ReportPipe", "progress_message"]


def progress_message(task_id: str, values: dict[str, Any]) -> Progress:
    return Progress(task_id, values)


class ReportPipe:
    """The executor's end: a FIFO it reads, forwarding merged values to ``send``.

    Read by a thread of its own (``threaded``), or by the caller's loop: it waits for ``fileno()``
    to be readable and calls ``read_ready()`` (the executor's main thread does, while it waits
    for the task's exit: no thread per task for reports)."""

    def __init__(self, path: str, send: Callable[[dict[str, Any]], None], threaded: bool = True,
                 keep: str | None = None):
        self.path, self._send, self._keep = path, send, keep
        self._latest: dict[str, Any] = {}  # every value reported, merged (what ``keep`` holds)
        if os.path.exists(path):
            os.unlink(path)
        os.mkfifo(path, 0o600)
        # Read and write: the pipe never reports end-of-file between writers, and a writer's
        # non-blocking open always finds a reader.
        self._fd = os.open(path, os.O_RDWR)
        self._buffer = b""
        self._pending: dict[str, Any] = {}
        self._last_sent = 0.0
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if threaded:
            self.read_in_thread()

    def read_in_thread(self) -> None:
        """From now on read by a thread of its own (the caller cannot wait on the FIFO)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._read, name="tfmesos-report", daemon=True)
            self._thread.start()

    def fileno(self) -> int:
        return self._fd

    def read_ready(self) -> bool:
        """Take what one read returns (the FIFO is readable); False once the close line came."""
        try:
            chunk = os.read(self._fd, 65536)
        except OSError:
            return False
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            if raw == _CLOSE:
                return False  # everything written before it has been taken (a FIFO keeps order)
            if raw.strip():
                self._take(raw)
        return True

    def _read(self) -> None:
        while self.read_ready():
            pass

    def _take(self, raw: bytes) -> None:
        try:
            values = json.loads(raw)
        except ValueError:
            return
        if not isinstance(values, dict):
            return
        with self._lock:
            self._pending.update(values)
            if self._timer is None:
                delay = max(0.0, self._last_sent + FORWARD_SECONDS - time.monotonic())
                self._timer = threading.Timer(delay, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        with self._lock:
            values, self._pending = self._pending, {}
            self._timer = None
            self._last_sent = time.monotonic()
            if values and self._keep:
                self._keep_latest(values)
        if values:
            self._send(values)

    def _keep_latest(self, values: dict[str, Any]) -> None:
        self._latest.update(values)
        tmp = self._keep + ".tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(self._latest, f)
            os.replace(tmp, self._keep)  # atomic: a reader never sees half
        except (OSError, TypeError, ValueError):
            pass

    def close(self) -> None:
        """After the task ended: forward what is left, stop reading, remove the FIFO."""
        if self._thread is not None:
            try:
                os.write(self._fd, _CLOSE + b"\n")
            except OSError:
                pass
            self._thread.join(timeout=2)
        else:  # what is left in the FIFO (no close line: with no reader, a full FIFO would block it)
            os.set_blocking(self._fd, False)
            while self.read_ready():
                pass
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self.flush()
        os.close(self._fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass
