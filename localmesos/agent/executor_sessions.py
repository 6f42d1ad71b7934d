"""The agent's half of the v1 executor API: subscriptions, heartbeats, updates and messages.

``executor_api`` checks the HTTP call (src/slave/http.cpp ``Http::executor``)
and hands a valid call for a known executor to :class:`ExecutorSessions`,
which the agent owns.  A SUBSCRIBE opens the executor's event stream
(SUBSCRIBED, then LAUNCH for the tasks queued meanwhile, HEARTBEAT every
``EXECUTOR_HEARTBEAT_INTERVAL``); a re-subscribing executor (after an agent
restart) reports its unacknowledged updates and tasks.  UPDATE is accepted
and ACKNOWLEDGED; MESSAGE goes on to the master.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Protocol

from .containers import AgentFramework, Executor, ExecutorState
from ..http.server import APPLICATION_JSON, EventStream, StreamResponse

EXECUTOR_HEARTBEAT_INTERVAL = 30 * 60.0  # DEFAULT_EXECUTOR_HEARTBEAT_INTERVAL


class AgentSide(Protocol):
    """What the sessions need of their agent."""

    terminating: bool
    frameworks: dict[str, AgentFramework]

    def agent_info(self) -> dict[str, Any]: ...

    def accept_status(self, executor: Executor | None, framework_id: str, status: dict[str, Any],
                      source: str) -> None: ...

    def agent_update(self, executor: Executor, task_id: str, state: str, reason: str, message: str) -> None: ...

    def shutdown_executor(self, framework_id: str, executor_id: str) -> None: ...


class ExecutorSessions:
    def __init__(self, agent: AgentSide, loop: asyncio.AbstractEventLoop,
                 to_master: Callable[[str, str, str], None]) -> None:
        self._agent = agent
        self._loop = loop
        self._to_master = to_master  # (framework_id, executor_id, data) of an executor's MESSAGE
        # Each open stream's next HEARTBEAT, cancelled when it closes: a pending timer holds its
        # executor (tasks and all) for the 30-minute interval after the executor has gone.
        self._heartbeats: dict[EventStream, asyncio.TimerHandle] = {}

    def subscribe(self, executor: Executor, subscribe: dict[str, Any]) -> StreamResponse:
        agent = self._agent
        framework = agent.frameworks[executor.framework_id]

        def on_open(stream: EventStream) -> None:
            if agent.terminating or framework.terminating or executor.state in (
                    ExecutorState.TERMINATING, ExecutorState.TERMINATED):
                stream.send({"type": "SHUTDOWN"})
                stream.close()
                return
            if executor.stream is not None:
                executor.stream.close()
            executor.stream = stream
            stream.on_close(lambda closed: self._stream_closed(executor, closed))
            self._heartbeats[stream] = self._loop.call_later(EXECUTOR_HEARTBEAT_INTERVAL, self._heartbeat, executor, stream)
            first = executor.state is ExecutorState.REGISTERING
            executor.state = ExecutorState.RUNNING
            if executor.registration_timer is not None:
                executor.registration_timer.cancel()
                executor.registration_timer = None
            resent = [update["status"] for update in subscribe.get("unacknowledged_updates", [])]
            for status in resent:
                self._status(executor, status)
            if not first:
                self._drop_unknown_staging(executor, subscribe.get("unacknowledged_tasks", []))
            if not executor.ever_sent_task and not executor.queued:
                agent.shutdown_executor(executor.framework_id, executor.executor_id)
                return
            stream.send({"type": "SUBSCRIBED", "subscribed": {
                "executor_info": executor.info,
                "framework_info": framework.info,
                "agent_info": agent.agent_info(),
                "container_id": {"value": executor.container_id},
            }})
            for task_id, task in list(executor.queued.items()):
                del executor.queued[task_id]
                executor.launched[task_id] = task
                executor.ever_sent_task = True
                stream.send({"type": "LAUNCH", "launch": {"task": task.info}})
            # Mesos acknowledges the updates a subscribing executor sends again, as it does every
            # update it takes (after SUBSCRIBED): the executor forgets them only then.
            for status in resent:
                stream.send({"type": "ACKNOWLEDGED", "acknowledged": {"task_id": status["task_id"],
                                                                       "uuid": status["uuid"]}})

        return StreamResponse([("Content-Type", APPLICATION_JSON)], on_open)

    def update(self, executor: Executor, status: dict[str, Any]) -> None:
        self._status(executor, status)
        executor.send({"type": "ACKNOWLEDGED", "acknowledged": {
            "task_id": status["task_id"], "uuid": status["uuid"]}})

    def message(self, executor: Executor, data: str) -> None:
        self._loop.call_soon(self._to_master, executor.framework_id, executor.executor_id, data)

    def _heartbeat(self, executor: Executor, stream: EventStream) -> None:
        self._heartbeats.pop(stream, None)
        if executor.stream is stream and not stream.closed:
            stream.send({"type": "HEARTBEAT"})
            self._heartbeats[stream] = self._loop.call_later(EXECUTOR_HEARTBEAT_INTERVAL, self._heartbeat, executor, stream)

    def _stream_closed(self, executor: Executor, stream: EventStream) -> None:
        timer = self._heartbeats.pop(stream, None)
        if timer is not None:
            timer.cancel()
        # HTTP executors may reconnect (pymesos does when MESOS_CHECKPOINT is set).
        if executor.stream is stream:
            executor.stream = None

    def _drop_unknown_staging(self, executor: Executor, unacknowledged: list[dict[str, Any]]) -> None:
        """Tasks sent while the agent restarted that the executor never saw are lost (or dropped)."""
        known = {t["task_id"]["value"] for t in unacknowledged}
        framework = self._agent.frameworks[executor.framework_id]
        state = "TASK_DROPPED" if framework.partition_aware else "TASK_LOST"
        for task in list(executor.launched.values()):
            if task.state == "TASK_STAGING" and task.task_id not in known:
                self._agent.agent_update(executor, task.task_id, state, "REASON_AGENT_RESTARTED",
                                         "Task launched during agent restart")

    def _status(self, executor: Executor, status: dict[str, Any]) -> None:
        self._agent.accept_status(executor, executor.framework_id, status, "SOURCE_EXECUTOR")
