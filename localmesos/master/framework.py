"""The master's records: frameworks, their tasks and their offers."""
from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..http.server import EventStream
from ..resources import Resources
from ..http.schemas import TERMINAL_STATES


@dataclass
class Offer:
    id: str
    framework_id: str
    agent_id: str
    role: str
    resources: Resources  # allocated to ``role``


@dataclass(eq=False)
class Task:
    """Master-side task (Mesos ``Task``)."""

    task_id: str
    name: str
    framework_id: str
    agent_id: str
    executor_id: str | None  # None for command tasks
    resources: Resources
    role: str
    info: dict[str, Any]
    state: str = "TASK_STAGING"
    status_update_state: str | None = None
    status_update_uuid: str | None = None
    statuses: list[dict[str, Any]] = field(default_factory=list)
    latest_status: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass
class OfferFilter:
    refused: Resources  # unallocated
    expires_at: float


@dataclass(eq=False)
class Framework:
    id: str
    info: dict[str, Any]
    stream: EventStream | None = None
    stream_id: str | None = None
    active: bool = False
    registered_time: float = field(default_factory=time.time)
    reregistered_time: float = 0.0
    unregistered_time: float = 0.0
    tasks: dict[str, Task] = field(default_factory=dict)
    completed_tasks: deque[Task] = field(default_factory=lambda: deque(maxlen=1000))
    offers: dict[str, Offer] = field(default_factory=dict)
    # (agent_id, executor_id) -> ExecutorInfo JSON of running custom executors.
    executors: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    suppressed_roles: set[str] = field(default_factory=set)
    filters: dict[tuple[str, str], list[OfferFilter]] = field(default_factory=dict)
    heartbeat_timer: asyncio.TimerHandle | None = None
    failover_timer: asyncio.TimerHandle | None = None
    removed: bool = False
    recovered: bool = False  # rebuilt from agents after a master restart, not yet re-subscribed

    def __post_init__(self) -> None:
        if not self.reregistered_time:
            self.reregistered_time = self.registered_time

    @property
    def connected(self) -> bool:
        return self.stream is not None and not self.stream.closed

    @property
    def capabilities(self) -> set[str]:
        return {c.get("type") for c in self.info.get("capabilities", []) if c.get("type")}

    def has_capability(self, name: str) -> bool:
        return name in self.capabilities

    @property
    def partition_aware(self) -> bool:
        return self.has_capability("PARTITION_AWARE")

    @property
    def roles(self) -> list[str]:
        return roles_of(self.info)

    def send(self, event: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.send(event)

    def used_resources(self) -> Resources:
        total = Resources()
        for task in self.tasks.values():
            if not task.terminal:
                total = total + task.resources
        for info in self.executors.values():
            total = total + Resources.from_json(info.get("resources", []))
        return total

    def offered_resources(self) -> Resources:
        total = Resources()
        for offer in self.offers.values():
            total = total + offer.resources
        return total


def roles_of(info: dict[str, Any]) -> list[str]:
    """protobuf::framework::getRoles of a FrameworkInfo."""
    if any(c.get("type") == "MULTI_ROLE" for c in info.get("capabilities", [])):
        return list(info.get("roles", []))
    return [info.get("role", "*")]


def ordered_info(info: dict[str, Any]) -> dict[str, Any]:
    """FrameworkInfo as Mesos echoes it to executors: declaration order, id included."""
    order = ("user", "name", "id", "failover_timeout", "checkpoint", "role", "roles", "hostname", "principal",
             "webui_url", "capabilities", "labels", "offer_filters")
    ordered = {k: info[k] for k in order if k in info}
    ordered.update({k: v for k, v in info.items() if k not in ordered})
    return ordered
