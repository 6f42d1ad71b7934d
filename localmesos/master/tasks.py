"""Tasks and executors as the master books them, and what agents report about them.

``TaskBook`` follows each task's state (``Master::updateTask``), frees its resources once it is
terminal, forgets it once its terminal update is acknowledged, and relays the agents' status
updates, executor messages and executor exits to the frameworks.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from ..resources import Resources
from .cluster import AgentRecord, Cluster
from .framework import Framework, Task
from .status_updates import StatusUpdate


def master_status(task_id: str, state: str, message: str, reason: str, agent_id: str | None = None,
                  executor_id: str | None = None, container_status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A master-generated TaskStatus: SOURCE_MASTER and never a uuid."""
    status: dict[str, Any] = {"task_id": {"value": task_id}, "state": state, "message": message,
                              "source": "SOURCE_MASTER", "reason": reason}
    if agent_id is not None:
        status["agent_id"] = {"value": agent_id}
    if executor_id is not None:
        status["executor_id"] = {"value": executor_id}
    status["timestamp"] = time.time()
    if container_status is not None:
        status["container_status"] = container_status
    return status


def send_update(framework: Framework, status: dict[str, Any]) -> None:
    framework.send({"type": "UPDATE", "update": {"status": status}})


class TaskBook:
    def __init__(self, cluster: Cluster, left_agent: Callable[[AgentRecord], None]) -> None:
        self._cluster = cluster
        self._left_agent = left_agent  # a task left the agent's books (a draining agent may be drained)

    # -- the books ------------------------------------------------------------
    def add(self, framework: Framework, record: AgentRecord, task: Task) -> None:
        framework.tasks[task.task_id] = task
        record.tasks[(framework.id, task.task_id)] = task

    def update(self, task: Task, status: dict[str, Any], latest_state: str | None = None) -> None:
        """Master::updateTask: track the latest state, free resources once terminal."""
        was_terminal = task.terminal
        if not was_terminal:
            task.state = latest_state or status["state"]
        entry = {k: v for k, v in status.items() if k != "data"}
        if task.statuses and task.statuses[-1]["state"] == status["state"]:
            task.statuses[-1] = entry
        else:
            task.statuses.append(entry)
        task.latest_status = entry
        if not was_terminal and task.terminal:
            record = self._cluster.agents.get(task.agent_id)
            if record is not None:
                record.release(task.resources.unallocate())

    def remove(self, task: Task) -> None:
        framework = self._cluster.frameworks.get(task.framework_id)
        record = self._cluster.agents.get(task.agent_id)
        if framework is not None and framework.tasks.pop(task.task_id, None) is not None:
            framework.completed_tasks.append(task)
        if record is not None:
            record.tasks.pop((task.framework_id, task.task_id), None)
            if not task.terminal:
                record.release(task.resources.unallocate())
            self._left_agent(record)

    def end(self, task: Task, status: dict[str, Any]) -> None:
        """The master ends the task itself (agent gone, framework removed): booked and forgotten."""
        self.update(task, status)
        self.remove(task)

    def remove_executor(self, record: AgentRecord, framework: Framework | None, executor_id: str) -> None:
        framework_id = framework.id if framework is not None else None
        for fid, executors in list(record.executors.items()):
            if framework_id is not None and fid != framework_id:
                continue
            info = executors.pop(executor_id, None)
            if info is None:
                continue
            record.release(Resources.from_json(info.get("resources", [])).unallocate())
            if not executors:
                del record.executors[fid]
        if framework is not None:
            framework.executors.pop((record.agent.id, executor_id), None)

    # -- agent -> master --------------------------------------------------------
    def status_update(self, agent_id: str, update: StatusUpdate, latest_state: str) -> None:
        record = self._cluster.agents.get(agent_id)
        if record is None:
            return  # removed agent: dropped, like Master::statusUpdate
        framework = self._cluster.frameworks.get(update.framework_id)
        task = record.tasks.get((update.framework_id, update.task_id))
        if framework is not None and framework.connected:
            if task is not None:
                task.status_update_state = update.state
                task.status_update_uuid = update.uuid
            send_update(framework, update.status)
        if task is not None:
            self.update(task, {**update.status, "timestamp": update.status_timestamp}, latest_state)

    def executor_message(self, agent_id: str, framework_id: str, executor_id: str, data: str) -> None:
        framework = self._cluster.frameworks.get(framework_id)
        if agent_id in self._cluster.agents and framework is not None and framework.connected:
            framework.send({"type": "MESSAGE", "message": {
                "agent_id": {"value": agent_id}, "executor_id": {"value": executor_id}, "data": data}})

    def exited_executor(self, agent_id: str, framework_id: str, executor_id: str, status: int) -> None:
        record = self._cluster.agents.get(agent_id)
        if record is None or executor_id not in record.executors.get(framework_id, {}):
            return
        framework = self._cluster.frameworks.get(framework_id)
        self.remove_executor(record, framework, executor_id)
        if framework is not None and framework.connected:
            framework.send({"type": "FAILURE", "failure": {
                "agent_id": {"value": agent_id}, "executor_id": {"value": executor_id}, "status": status}})
