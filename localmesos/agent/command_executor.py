"""The built-in command executor (``mesos-executor``), emulated in-process.

Real Mesos runs one ``mesos-executor`` process per command task which forks
the task.  Here the agent forks the task itself (own process group) and reports the
same updates the command executor would: TASK_STARTING, TASK_RUNNING, then
TASK_FINISHED / TASK_FAILED / TASK_KILLED with "Command exited with status N"
or "Command terminated with signal <name>", all from SOURCE_EXECUTOR with
``executor_id`` = task id.  Kill = SIGTERM to the process tree, SIGKILL after
the kill policy's grace period.
"""
from __future__ import annotations

import asyncio
import signal
import time
from typing import Any, Callable

from .procs import ManagedProcess, describe_exit
from ..http.protojson import b64encode
from ..ids import IdGenerator

Report = Callable[[dict[str, Any]], None]


class CommandRunner:
    def __init__(self, loop: asyncio.AbstractEventLoop, task_id: str, report: Report,
                 killing_state: bool) -> None:
        self._loop = loop
        self._task_id = task_id
        self._report = report
        self._killing_state = killing_state  # framework has TASK_KILLING_STATE
        self._process: ManagedProcess | None = None
        self._killed = False
        self._escalation: asyncio.TimerHandle | None = None
        self._escalation_deadline = 0.0
        self.terminated = False

    def status(self, state: str, message: str | None = None) -> dict[str, Any]:
        status: dict[str, Any] = {"task_id": {"value": self._task_id}, "state": state}
        if message is not None:
            status["message"] = message
        status["source"] = "SOURCE_EXECUTOR"
        status["executor_id"] = {"value": self._task_id}
        status["timestamp"] = time.time()
        status["uuid"] = b64encode(IdGenerator.status_uuid())
        return status

    def starting(self) -> None:
        self._report(self.status("TASK_STARTING"))

    def running(self, process: ManagedProcess) -> None:
        self._process = process
        self._report(self.status("TASK_RUNNING"))

    def kill(self, grace_period: float) -> None:
        if self.terminated or self._process is None:
            return
        deadline = time.monotonic() + grace_period
        if self._killed:
            # A repeated kill may only shorten the escalation (Mesos semantics).
            if deadline >= self._escalation_deadline:
                return
            if self._escalation is not None:
                self._escalation.cancel()
        else:
            self._killed = True
            if self._killing_state:
                self._report(self.status("TASK_KILLING"))
            self._process.signal_tree(signal.SIGTERM)
        self._escalation_deadline = deadline
        self._escalation = self._loop.call_later(grace_period, self._escalate)

    def _escalate(self) -> None:
        self._escalation = None
        if self._process is not None and not self.terminated:
            self._process.signal_tree(signal.SIGKILL)

    def exited(self, process: ManagedProcess) -> None:
        """The task process was reaped: send the terminal update."""
        if self.terminated:
            return
        self.terminated = True
        if self._escalation is not None:
            self._escalation.cancel()
            self._escalation = None
        code = process.returncode if process.returncode is not None else -signal.SIGKILL
        if self._killed:
            state = "TASK_KILLED"
        elif code == 0:
            state = "TASK_FINISHED"
        else:
            state = "TASK_FAILED"
        self._report(self.status(state, "Command " + describe_exit(code)))
        if process.tree_alive():
            # Orphans of the task (its group, strays left by a kill -9) die with the container.
            process.signal_tree(signal.SIGKILL)
