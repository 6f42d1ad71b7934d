"""The agent's record of one executor run (a 'container') and its tasks."""
from __future__ import annotations

import asyncio
import enum
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .httpserver import EventStream
from .procs import ManagedProcess
from .schemas import TERMINAL_STATES


class ExecutorState(enum.Enum):
    REGISTERING = "REGISTERING"
    RUNNING = "RUNNING"
    TERMINATING = "TERMINATING"
    TERMINATED = "TERMINATED"


@dataclass(eq=False)
class AgentTask:
    info: dict[str, Any]  # TaskInfo as delivered to the executor
    state: str = "TASK_STAGING"
    statuses: list[dict[str, Any]] = field(default_factory=list)

    @property
    def task_id(self) -> str:
        return self.info["task_id"]["value"]

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass
class Termination:
    """Why the agent ends a container (Mesos ContainerTermination)."""

    state: str
    reason: str
    message: str


@dataclass(eq=False)
class Executor:
    framework_id: str
    executor_id: str
    container_id: str
    info: dict[str, Any]  # ExecutorInfo (framework_id filled in)
    directory: Path
    checkpoint: bool
    command_task: bool  # synthesised for a TaskInfo.command task
    shutdown_grace_period: float
    state: ExecutorState = ExecutorState.REGISTERING
    process: ManagedProcess | None = None
    stream: EventStream | None = None
    queued: dict[str, AgentTask] = field(default_factory=dict)
    launched: dict[str, AgentTask] = field(default_factory=dict)
    terminated: dict[str, AgentTask] = field(default_factory=dict)
    completed: deque[AgentTask] = field(default_factory=lambda: deque(maxlen=200))
    gpus: list[int] = field(default_factory=list)
    ever_sent_task: bool = False
    launching: bool = False  # sandbox/fetch/spawn in progress
    checkpoint_path: Path | None = None  # recovery record of this container
    registration_timer: asyncio.TimerHandle | None = None
    kill_timer: asyncio.TimerHandle | None = None
    pending_termination: Termination | None = None
    launched_at: float = field(default_factory=time.time)

    def find_task(self, task_id: str) -> AgentTask | None:
        return self.queued.get(task_id) or self.launched.get(task_id) or self.terminated.get(task_id)

    def all_tasks(self) -> list[AgentTask]:
        return [*self.queued.values(), *self.launched.values(), *self.terminated.values()]

    def incomplete_tasks(self) -> list[AgentTask]:
        return [t for t in (*self.queued.values(), *self.launched.values()) if not t.terminal]

    def update_task_state(self, task_id: str, state: str) -> str | None:
        """Executor::updateTaskState; returns an error for updates after a terminal one."""
        task = self.queued.get(task_id) or self.launched.get(task_id)
        if task is None:
            if task_id in self.terminated:
                return f"task {task_id} is already terminal"
            return None  # unknown task: the update is forwarded anyway
        task.state = state
        if state in TERMINAL_STATES:
            self.queued.pop(task_id, None)
            self.launched.pop(task_id, None)
            self.terminated[task_id] = task
        return None

    def task_acknowledged_terminal(self, task_id: str) -> None:
        task = self.terminated.pop(task_id, None)
        if task is not None:
            self.completed.append(task)

    def send(self, event: dict[str, Any]) -> bool:
        """Deliver an executor event; Mesos drops events for a disconnected executor."""
        if self.stream is None or self.stream.closed:
            return False
        self.stream.send(event)
        return True

    def cancel_timers(self) -> None:
        for timer in (self.registration_timer, self.kill_timer):
            if timer is not None:
                timer.cancel()
        self.registration_timer = None
        self.kill_timer = None

    def container_status(self, ip: str) -> dict[str, Any]:
        status: dict[str, Any] = {
            "container_id": {"value": self.container_id},
            "network_infos": [{"ip_addresses": [{"protocol": "IPv4", "ip_address": ip}]}],
        }
        if self.process is not None:
            status["executor_pid"] = self.process.pid
        return status
