"""Choose the agents' port ranges so that several embedded masters on one host do not collide.

Every logical agent shares 127.0.0.1, and tasks bind the ports they are given (TensorFlow binds
0.0.0.0). Two masters advertising the same default range would hand out the same ports, so a
master started without an explicit range takes a random block whose ports are all free now,
from TFMESOS_LOCAL_PORTS (``FIRST-LAST``, default 20000-31999): give masters that run side by
side (users, CI jobs, a test suite's workers) disjoint ranges and they never pick the same ports.
"""
from __future__ import annotations

import os
import random
import socket
from typing import Mapping

ENV = "TFMESOS_LOCAL_PORTS"
# Below Linux's ephemeral range (32768+), where clients' ports come from.
LOW, HIGH = 20000, 32000
_MIN_PORT = 1024  # below it binding needs privileges


def port_range(environ: Mapping[str, str] = os.environ) -> tuple[int, int]:
    """``[low, high)``: where blocks are picked, TFMESOS_LOCAL_PORTS (inclusive, as Mesos writes
    ranges) or the default. ValueError names the variable and what was expected."""
    text = environ.get(ENV, "").strip()
    if not text:
        return LOW, HIGH
    first, sep, last = text.partition("-")
    try:
        low, high = int(first), int(last) + 1
    except ValueError:
        low = high = 0
    if not sep or not _MIN_PORT <= low < high <= 65536:
        raise ValueError(f"{ENV}={text[:40]!r}: expected FIRST-LAST, two ports from {_MIN_PORT} to 65535 with "
                         f"FIRST <= LAST, e.g. {LOW}-{HIGH - 1}")
    return low, high


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port_block(size: int, rng: random.Random | None = None, tries: int = 50,
                    ports: tuple[int, int] | None = None) -> int:
    """First port of ``size`` consecutive ports that are all free right now, within ``ports``
    (``[low, high)``; default: ``port_range()``)."""
    rng = rng or random.Random()
    low, high = ports or port_range()
    if size > high - low:
        raise ValueError(f"{size} ports do not fit in [{low}, {high - 1}] ({ENV}): fewer agents, or a wider range")
    for _ in range(tries):
        first = rng.randrange(low, high - size + 1)
        if all(_free(p) for p in range(first, first + size)):
            return first
    raise RuntimeError(f"no block of {size} free ports found in [{low}, {high - 1}] ({ENV})")
