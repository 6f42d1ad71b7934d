"""Choose the agents' port ranges so that several embedded masters on one host do not collide.

Every logical agent shares 127.0.0.1, and tasks bind the ports they are given (TensorFlow binds
0.0.0.0). Two masters advertising the same default range would hand out the same ports, so a
master started without an explicit range takes a random block whose ports are all free now.
"""
from __future__ import annotations

import random
import socket

LOW, HIGH = 20000, 32000  # below Linux's ephemeral range (32768+), where clients' ports come from


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port_block(size: int, rng: random.Random | None = None, tries: int = 50) -> int:
    """First port of ``size`` consecutive ports that are all free right now."""
    rng = rng or random.Random()
    if size > HIGH - LOW:
        raise ValueError(f"{size} ports do not fit in [{LOW}, {HIGH})")
    for _ in range(tries):
        first = rng.randrange(LOW, HIGH - size + 1)
        if all(_free(p) for p in range(first, first + size)):
            return first
    raise RuntimeError(f"no block of {size} free ports found in [{LOW}, {HIGH})")
