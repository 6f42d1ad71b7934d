"""Progress from a training script to the scheduler: ``tfmesos.report(step=..., loss=...)``.

The task side writes one JSON line per call into a FIFO in its sandbox, named by
``TFMESOS_REPORT_FILE`` (set by the executor). Outside tfmesos the variable is unset and
``report`` does nothing; it never blocks training (a full pipe drops the report).
The executor's end of the FIFO is ``tfmesos.executor.report_pipe``.
"""
from __future__ import annotations

import errno
import json
import math
import os
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and logging are not imported at run time: the executor imports
    from typing import Any  # REPORT_ENV from here for every task it starts cold

REPORT_ENV = "TFMESOS_REPORT_FILE"
_MAX_LINE = 4096  # PIPE_BUF: one write of at most this many bytes reaches the reader whole

_fd: int | None = None
_lock = threading.Lock()


def _plain(value: Any) -> Any:
    """JSON scalars only: numpy and TensorFlow scalars become numbers; NaN and infinities, which
    JSON lacks, their names ("nan", "inf", "-inf"): a loss gone NaN is news, not a missing value."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "item"):
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    if value is None or isinstance(value, (bool, str, int)):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)[:200]
    return number if math.isfinite(number) else repr(number)


def report(step: int | None = None, loss: float | None = None, total_steps: int | None = None,
           **metrics: Any) -> bool:
    """Tell tfmesos how training goes. Returns whether the values were handed over (False
    outside tfmesos or when the executor is not reading)."""
    global _fd
    path = os.environ.get(REPORT_ENV)
    if not path:
        return False
    values = {k: _plain(v) for k, v in (("step", step), ("loss", loss), ("total_steps", total_steps)) if v is not None}
    values.update({str(k): _plain(v) for k, v in metrics.items()})
    line = (json.dumps(values, separators=(",", ":")) + "\n").encode()
    if len(line) > _MAX_LINE:
        return False
    with _lock:
        try:
            if _fd is None:
                _fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            return os.write(_fd, line) == len(line)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ENXIO, errno.EPIPE, errno.ENOENT):
                import logging

                logging.getLogger("tfmesos.report").debug("tfmesos.report: %s", exc)
            if exc.errno != errno.EAGAIN and _fd is not None:
                os.close(_fd)
                _fd = None
            return False
