"""Which of a streamed task's output lines the console has not shown yet, by byte offset in the
sandbox's ``output.log`` (every line the executor forwarded, in order). A message says where its
first line starts: one seen again is dropped, one that starts past what was shown leaves a gap,
read back from the sandbox first (messages are best effort: a master failover, a scheduler
restart, a full batch lose some)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

CATCH_UP_MAX_BYTES = 256 * 1024  # at most this much is read back at once: the rest is in `tfmesos logs`


@dataclass(frozen=True)
class Take:
    gap: tuple[int, int] | None  # bytes [start, end) of output.log to read and show first
    lines: tuple[str, ...]  # then these lines of the message
    shown_to: int  # what has been shown afterwards


def line_size(line: str) -> int:
    """Bytes the line takes in output.log (the executor writes it with a newline)."""
    return len(line.encode("utf-8", "surrogateescape")) + 1


def take(shown_to: int, offset: int, lines: Sequence[str]) -> Take:
    """A message's lines against what was shown up to ``shown_to``; offset -1 (an executor that
    keeps no output.log): shown as they come."""
    if offset < 0:
        return Take(None, tuple(lines), shown_to)
    fresh, at = [], offset
    for line in lines:
        at += line_size(line)
        if at > shown_to:
            fresh.append(line)
    return Take((shown_to, offset) if offset > shown_to else None, tuple(fresh), max(shown_to, at))


def read_window(shown_to: int, end: int) -> tuple[int, int]:
    """Where a catch-up of [shown_to, end) starts reading, and how many bytes it skips (a gap
    larger than CATCH_UP_MAX_BYTES: its last part only, from the first whole line on)."""
    start = max(shown_to, end - CATCH_UP_MAX_BYTES)
    return start, start - shown_to


def whole_lines(data: bytes, skipped: bool) -> tuple[list[str], int]:
    """The whole lines in ``data`` (a last one without its newline is still being written: left
    for later) and the bytes they take; after a skip, the first (partial) line is dropped too."""
    end = data.rfind(b"\n") + 1
    first = data.find(b"\n") + 1 if skipped else 0
    body = data[first:end] if end > first else b""
    lines = body.decode("utf-8", "surrogateescape").split("\n")[:-1]
    return lines, end
