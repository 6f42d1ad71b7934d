"""The steps a training process ran, appended to the file named by STEP_LOG as "role index step"
lines (one ``write`` each, O_APPEND: processes may share the file). Without STEP_LOG, nothing.

RESUMED_STEPS (``resumed_end``) is the tests' gate: an attempt that resumed from a save trains on
that many steps past it and ends, so that a test whose event (a drain, an update) must land mid-
training gives the first attempt a large margin of steps but trains it only until the event."""
from __future__ import annotations

import os


class StepLog:
    def __init__(self, role: str, index: int):
        path = os.environ.get("STEP_LOG")
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None
        self._prefix = f"{role} {index} "

    def __call__(self, *steps: int) -> None:
        if self._fd is not None and steps:
            os.write(self._fd, "".join(f"{self._prefix}{step}\n" for step in steps).encode())


def resumed_end(start: int, total: int, every: int) -> int:
    """The step an attempt that starts at ``start`` trains to: ``total``, or, when it resumed from
    a save (start > 0) and RESUMED_STEPS is set, the first multiple of ``every`` (an epoch, a
    checkpoint) at least RESUMED_STEPS past ``start``, if that is sooner. Every worker of an MWMS
    job resumes at the same saved step, so they agree on it."""
    more = int(os.environ.get("RESUMED_STEPS", "0"))
    if start <= 0 or more <= 0:
        return total
    return min(total, -(-(start + more) // every) * every)


def digits() -> tuple:
    """scikit-learn's 8x8 digits scaled to [0, 1] (float32, int64): nothing is downloaded."""
    import numpy as np
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return (x / 16.0).astype(np.float32), y.astype(np.int64)
