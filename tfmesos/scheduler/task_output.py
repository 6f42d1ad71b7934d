"""What a failed task printed, when it never got to report it itself."""
from __future__ import annotations

import urllib.error
from typing import Any, Callable

from ..core.state.tasks import TaskRecord
from ..core.task_state import TASK_DROPPED, TASK_ERROR, TASK_FAILED, TASK_GONE, TASK_LOST
from ..mesos.agent_files import LogError

TAIL_LINES = 10
FAILED_STATES = frozenset({TASK_FAILED, TASK_LOST, TASK_ERROR, TASK_DROPPED, TASK_GONE})


def sandbox_stderr_tail(read: Callable[[str, dict[str, str]], dict[str, Any]], rec: TaskRecord) -> str:
    """The last lines of the sandbox's stderr of a task that failed without an exit code of its own
    (its executor ended before the task ran: a ``job.python`` that does not exist, an image without
    tfmesos), read through the agent's files API like ``tfmesos logs``, so it works on a real Mesos
    agent as on the embedded one; "" when there is none or it cannot be read."""
    if rec.state not in FAILED_STATES or rec.exit_code is not None or not rec.task_id:
        return ""
    try:
        return read(str(rec.key), {"file": "stderr", "tail": str(TAIL_LINES)})["data"].rstrip("\n")
    except (LogError, urllib.error.URLError, OSError, KeyError, ValueError):
        return ""
