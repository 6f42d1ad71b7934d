"""What a stop signal (SIGINT, SIGTERM, SIGHUP) means, as plain data: the shell's handlers
(tfmesos/scheduler/signals.py) only count them and carry out the step decided here.

The first signal stops the job: every task is killed, the framework torn down, the summary
printed, and the process exits 128 + that signal's number (130 for Ctrl-C, 143 for SIGTERM,
129 for SIGHUP). A second one, while that takes its time, says what it waits for. A third
gives up at once: every process this run started is killed and the process exits.
"""
from __future__ import annotations

STOP, EXPLAIN, GIVE_UP = "stop", "explain", "give up"


def step(received: int) -> str:
    """The step for the ``received``-th stop signal (1 for the first)."""
    if received <= 1:
        return STOP
    return EXPLAIN if received == 2 else GIVE_UP


def exit_code(signum: int) -> int:
    """The shell's convention for a process ended by a signal."""
    return 128 + signum


def cause(signal_name: str) -> str:
    """Why the job stopped, as its summary and events say it: 'stopped by SIGINT (Ctrl-C)'."""
    return f"stopped by {signal_name}" + (" (Ctrl-C)" if signal_name == "SIGINT" else "")
