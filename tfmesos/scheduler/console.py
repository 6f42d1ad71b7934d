"""What `tfmesos run` prints: progress lines with the time since start, the chief's output
indented under them, repeated lines collapsed."""
from __future__ import annotations

import threading
import time
from typing import Any, TextIO

from ..api.status_text import progress_text
from ..core.status import Progress

PROGRESS_LINE_SECONDS = 5.0  # the console shows training progress at most this often



class Console:
    """Progress lines with the time since start; the chief's output indented under them."""

    def __init__(self, out: TextIO, quiet: bool = False):
        self.out, self.quiet, self.t0 = out, quiet, time.monotonic()
        self._lock = threading.Lock()
        self._last, self._repeats = "", 0
        self._progress_shown = float("-inf")

    def progress(self, task: str, progress: dict[str, Any]) -> None:
        """A progress bar line, at most every few seconds (and when training reaches its total)."""
        now = time.monotonic()
        step, total = progress.get("step"), progress.get("total_steps")
        last = step is not None and step == total
        if self.quiet or (now - self._progress_shown < PROGRESS_LINE_SECONDS and not last):
            return
        self._progress_shown = now
        self.line("progress " + progress_text(task, Progress.from_json(progress)))

    def line(self, text: str) -> None:
        """One line; the same line again is counted, not printed (no flood from a retry loop)."""
        with self._lock:
            if text == self._last:
                self._repeats += 1
                return
            if self._repeats:
                self.out.write(f"[tfmesos {time.monotonic() - self.t0:6.1f}s] (the line above repeated {self._repeats} more times)\n")
            self._last, self._repeats = text, 0
            self.out.write(f"[tfmesos {time.monotonic() - self.t0:6.1f}s] {text}\n")
            self.out.flush()

    def event(self, text: str) -> None:
        if not self.quiet:
            self.line(text)

    def output(self, task_id: str, lines: list[str]) -> None:
        parts = task_id.split(".")  # <service>.<role>.<index>.<seq>
        name = f"{parts[-3]}:{parts[-2]}" if len(parts) >= 4 else task_id
        with self._lock:
            for line in lines:
                self.out.write(f"  {name} | {line}\n")
            self.out.flush()
