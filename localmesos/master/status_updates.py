"""The agent's task status update manager (reliable, ordered, per task).

Per task, updates form a queue: only the oldest unacknowledged one is sent to
the master; it is re-sent after ``retry_min`` seconds, doubling up to
``retry_max``, until the scheduler acknowledges its uuid; then the next one
goes out.  After the terminal update is acknowledged the stream is dropped.
"""
from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..http.schemas import TERMINAL_STATES

log = logging.getLogger(__name__)


@dataclass
class StatusUpdate:
    framework_id: str
    status: dict[str, Any]  # TaskStatus JSON as the scheduler will see it (has uuid)
    executor_id: str | None = None
    # The TaskStatus' own timestamp (what /state shows); the event carries the
    # agent's time of the update instead, as Mesos' evolve(StatusUpdate) does.
    status_timestamp: float = 0.0

    @property
    def task_id(self) -> str:
        return self.status["task_id"]["value"]

    @property
    def uuid(self) -> str:
        return self.status["uuid"]

    @property
    def state(self) -> str:
        return self.status["state"]


@dataclass
class _Stream:
    pending: deque[StatusUpdate] = field(default_factory=deque)
    received: set[str] = field(default_factory=set)
    acknowledged: set[str] = field(default_factory=set)
    timer: asyncio.TimerHandle | None = None
    interval: float = 0.0

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class StatusUpdateManager:
    def __init__(self, loop: asyncio.AbstractEventLoop, forward: Callable[[StatusUpdate], None],
                 retry_min: float, retry_max: float) -> None:
        self._loop = loop
        self._forward = forward
        self._retry_min = retry_min
        self._retry_max = retry_max
        self._streams: dict[tuple[str, str], _Stream] = {}

    def update(self, update: StatusUpdate) -> bool:
        """Queue an update; False for a duplicate (the executor is still acked)."""
        key = (update.framework_id, update.task_id)
        stream = self._streams.setdefault(key, _Stream())
        if update.uuid in stream.acknowledged or update.uuid in stream.received:
            return False
        stream.received.add(update.uuid)
        stream.pending.append(update)
        if len(stream.pending) == 1:
            self._send(key, stream, self._retry_min)
        return True

    def acknowledge(self, framework_id: str, task_id: str, uuid: str) -> bool:
        """Scheduler ACK; only the uuid of the update in flight counts."""
        key = (framework_id, task_id)
        stream = self._streams.get(key)
        if stream is None or not stream.pending or stream.pending[0].uuid != uuid:
            return False
        acked = stream.pending.popleft()
        stream.acknowledged.add(uuid)
        stream.cancel_timer()
        if acked.state in TERMINAL_STATES:
            del self._streams[key]
            return True
        if stream.pending:
            self._send(key, stream, self._retry_min)
        return True

    def has_pending(self, framework_id: str, task_id: str) -> bool:
        stream = self._streams.get((framework_id, task_id))
        return bool(stream and stream.pending)

    def resume(self, framework_id: str | None = None) -> None:
        """Re-send every stream's head now (the framework (re)subscribed)."""
        for key, stream in self._streams.items():
            if framework_id is not None and key[0] != framework_id:
                continue
            if stream.pending:
                stream.cancel_timer()
                self._send(key, stream, self._retry_min)

    def remove_framework(self, framework_id: str) -> None:
        for key in [k for k in self._streams if k[0] == framework_id]:
            self._streams.pop(key).cancel_timer()

    def close(self) -> None:
        for stream in self._streams.values():
            stream.cancel_timer()
        self._streams.clear()

    def _send(self, key: tuple[str, str], stream: _Stream, interval: float) -> None:
        stream.interval = interval
        stream.timer = self._loop.call_later(interval, self._retry, key)
        self._forward(stream.pending[0])

    def _retry(self, key: tuple[str, str]) -> None:
        stream = self._streams.get(key)
        if stream is None or not stream.pending:
            return
        stream.timer = None
        log.info("resending status update %s of task %s", stream.pending[0].uuid, key[1])
        self._send(key, stream, min(stream.interval * 2, self._retry_max))
