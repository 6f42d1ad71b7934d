"""What `tfmesos run` prints: progress lines with the time since start, the chief's output
indented under them, repeated lines collapsed, TensorFlow's start-up noise folded into one line
per task (``--tf-noise`` shows it; the task's logs keep it), and the summary last: what arrives
once the summary began (a late event or output line) is left to the logs and the record."""
from __future__ import annotations

import threading
import time
from typing import Any, TextIO

from ..api.status_text import progress_text
from ..core.status import Progress
from ..core.tensorflow.start_up_noise import is_start_up_noise

PROGRESS_LINE_SECONDS = 5.0  # the console shows training progress at most this often



class Console:
    """Progress lines with the time since start; the chief's output indented under them."""

    def __init__(self, out: TextIO, quiet: bool = False, tf_noise: bool = False):
        self.out, self.quiet, self.tf_noise, self.t0 = out, quiet, tf_noise, time.monotonic()
        self._lock = threading.Lock()
        self._last, self._repeats = "", 0
        self._progress_shown = float("-inf")
        self._folded: set[str] = set()  # tasks whose start-up noise was folded (said once each)
        self._summing_up = False  # the summary has begun: nothing but it is printed any more

    def summary(self, lines: list[str]) -> None:
        """The job's summary: the job's events, output and progress that come later are not shown
        (the record keeps the events, the logs the output)."""
        with self._lock:
            self._summing_up = True
        for text in lines:
            self.line(text)

    def progress(self, task: str, progress: dict[str, Any]) -> None:
        """A progress bar line, at most every few seconds (and when training reaches its total)."""
        now = time.monotonic()
        step, total = progress.get("step"), progress.get("total_steps")
        last = step is not None and step == total
        if self.quiet or self._summing_up or (now - self._progress_shown < PROGRESS_LINE_SECONDS and not last):
            return
        self._progress_shown = now
        self.line("progress " + progress_text(task, Progress.from_json(progress)))

    def line(self, text: str) -> None:
        """One line; the same line again, right after it, is counted, not printed (no flood from a
        retry loop): the count follows it once something else is printed."""
        with self._lock:
            if text == self._last:
                self._repeats += 1
                return
            self._said_repeats()
            self._last = text
            self.out.write(f"[tfmesos {time.monotonic() - self.t0:6.1f}s] {text}\n")
            self.out.flush()

    def _said_repeats(self) -> None:
        """Before anything else is printed (with the lock held): how often the last line came again,
        under it. A line that comes after something else is printed again."""
        if self._repeats:
            times = "once more" if self._repeats == 1 else f"{self._repeats} more times"
            self.out.write(f"[tfmesos {time.monotonic() - self.t0:6.1f}s] (the line above repeated {times})\n")
        self._last, self._repeats = "", 0

    def event(self, text: str) -> None:
        """The job's events; none after the summary began (said lines, ``line``, still are)."""
        if not self.quiet and not self._summing_up:
            self.line(text)

    def output(self, task_id: str, lines: list[str]) -> None:
        parts = task_id.split(".")  # <service>.<role>.<index>.<seq>
        name = f"{parts[-3]}:{parts[-2]}" if len(parts) >= 4 else task_id
        with self._lock:
            if self._summing_up:
                return
            for line in lines:
                if not self.tf_noise and is_start_up_noise(line):
                    if name not in self._folded:
                        self._folded.add(name)
                        self._said_repeats()
                        self.out.write(f"  {name} | (TensorFlow's start-up messages folded: tfmesos run --tf-noise "
                                       f"shows them, tfmesos logs {name} --stderr has them)\n")
                    continue
                self._said_repeats()  # a task's line comes between: the count stays under its line
                self.out.write(f"  {name} | {line}\n")
            self.out.flush()
