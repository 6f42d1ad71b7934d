"""The steps a training process ran, appended to the file named by STEP_LOG as "role index step"
lines (one ``write`` each, O_APPEND: processes may share the file). Without STEP_LOG, nothing."""
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


def digits() -> tuple:
    """scikit-learn's 8x8 digits scaled to [0, 1] (float32, int64): nothing is downloaded."""
    import numpy as np
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return (x / 16.0).astype(np.float32), y.astype(np.int64)
