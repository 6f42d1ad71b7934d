"""The agent's records: its frameworks, their executor runs ('containers') and tasks."""
from __future__ import annotations

import asyncio
import enum
import json
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..http.server import EventStream
from .procs import ManagedProcess
from ..http.schemas import TERMINAL_STATES


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
    _info_json: str | None = field(default=None, repr=False)

    @property
    def task_id(self) -> str:
        return self.info["task_id"]["value"]

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def checkpoint_json(self) -> str:
        """``{"info": ..., "state": ...}`` as JSON; the TaskInfo (fixed once delivered) is encoded once."""
        if self._info_json is None:
            self._info_json = json.dumps(self.info)
        return f'{{"info": {self._info_json}, "state": {json.dumps(self.state)}}}'


@dataclass
class Termination:
    """Why the agent ends a container (Mesos ContainerTermination)."""

    state: str
    reason: str
    message: str


@dataclass(eq=False)
class AgentFramework:
    """A framework as the agent knows it: its FrameworkInfo and its containers here."""

    info: dict[str, Any]
    executors: dict[str, Executor] = field(default_factory=dict)
    completed_executors: deque[Executor] = field(default_factory=lambda: deque(maxlen=150))
    terminating: bool = False

    @property
    def id(self) -> str:
        return self.info["id"]["value"]

    def has_capability(self, name: str) -> bool:
        return any(c.get("type") == name for c in self.info.get("capabilities", []))

    @property
    def partition_aware(self) -> bool:
        return self.has_capability("PARTITION_AWARE")


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
    _checkpoint_head: tuple[tuple[Any, ...], str] = ((), "")  # (what it was made from, JSON)

    def checkpoint_text(self, fixed: Callable[[], dict[str, Any]], basis: tuple[Any, ...]) -> str:
        """The recovery record as JSON: ``fixed()`` plus the live tasks.  Written on every status
        update, so ``fixed()`` is encoded again only when an object of ``basis`` was replaced."""
        made_from, head = self._checkpoint_head
        if len(made_from) != len(basis) or any(a is not b for a, b in zip(made_from, basis)):
            head = json.dumps(fixed())[:-1]  # without the closing brace
            self._checkpoint_head = (basis, head)
        tasks = ", ".join(t.checkpoint_json() for t in self.incomplete_tasks())
        return f'{head}, "tasks": [{tasks}]}}'

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
