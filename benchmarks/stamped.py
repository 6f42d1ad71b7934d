"""``python -m benchmarks.stamped ARGS...``: the real ``tfmesos`` command line (``tfmesos.client.cli.main``)
with every line it writes to stdout prefixed by the wall-clock time of the write.

The scheduler's console stamps its lines with a 0.1 s resolution relative to its own start
(``[tfmesos   12.3s] ...``); the benchmarks need absolute times with millisecond resolution to
compare them with other processes (the moment a task was killed, a sandbox file's mtime, the
chief's ``first step at <unix time>``). Nothing else changes: same entry point, same process
(so its RSS and CPU time are the scheduler's own, embedded master included when there is one).

``BENCH_FIRST_PORT=N`` (set by the benchmarks) moves the embedded master's offered port ranges
from 31000 to N: the machine is shared, and the test suites of other people run embedded masters
on 31000-32999 at the same time; a TensorFlow server that finds its port taken would fail the run.
Only the numbers of the ports change.

At exit it prints ``@bench rusage user=<s> sys=<s>``: this process's own CPU time, not its
children's (the executors and tasks the embedded agents spawn are children). Not its peak RSS:
Linux carries ``ru_maxrss`` over ``execve``, so it would be the benchmark's own (the monitors
sample the RSS instead).
"""
from __future__ import annotations

import os
import resource
import sys
import threading
import time
from typing import TextIO


class StampedStdout:
    """A text stream that writes ``<unix time> <line>`` for every complete line it is given."""

    def __init__(self, raw: TextIO):
        self._raw = raw
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            now = time.time()
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self._raw.write(f"{now:.6f} {line}\n")
            if lines:
                self._raw.flush()
        return len(text)

    def flush(self) -> None:
        self._raw.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str):  # encoding, fileno, ... of the real stream
        return getattr(self._raw, name)


def main(argv: list[str]) -> int:
    # Before tfmesos is imported: tfmesos.scheduler.runner binds sys.stdout as a default argument.
    sys.stdout = StampedStdout(sys.__stdout__)
    first_port = os.environ.get("BENCH_FIRST_PORT")
    if first_port:
        from localmesos import local_master

        original = local_master.LocalMaster.__init__

        def init(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            kwargs.setdefault("first_port", int(first_port))
            original(self, *args, **kwargs)

        local_master.LocalMaster.__init__ = init  # type: ignore[method-assign]
    from tfmesos.client.cli import main as cli_main

    try:
        return cli_main(argv)
    finally:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        sys.stdout.write(f"@bench rusage user={ru.ru_utime:.3f} sys={ru.ru_stime:.3f}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
