"""What a subscribed framework's calls do: ACCEPT (launches), DECLINE, REVIVE, SUPPRESS, KILL,
SHUTDOWN, ACKNOWLEDGE, RECONCILE, MESSAGE, TEARDOWN, ACCEPT_INVERSE_OFFERS, DECLINE_INVERSE_OFFERS.
``scheduler_api`` checks the HTTP side first."""
from __future__ import annotations

import asyncio
from typing import Any

from ..config import MasterConfig
from ..http.auth import Acls
from ..http.protojson import b64decode, b64encode
from ..http.schemas import SCHEMAS, TERMINAL_STATES
from ..resources import Resources
from ..roles import validate_role
from .allocator import Allocator, refuse_timeout
from .cluster import AgentRecord, Cluster, post
from .framework import Framework, Task
from .inverse_offers import InverseOfferBook
from .offers import OfferBook
from .subscriptions import Subscriptions
from .tasks import TaskBook, master_status, send_update
from .validation import validate_offers, validate_task


class SchedulerCalls:
    def __init__(self, cluster: Cluster, config: MasterConfig, loop: asyncio.AbstractEventLoop, acls: Acls | None,
                 offers: OfferBook, inverse_offers: InverseOfferBook, tasks: TaskBook, subscriptions: Subscriptions,
                 allocator: Allocator) -> None:
        self._cluster = cluster
        self._config = config
        self._loop = loop
        self._acls = acls
        self._offers = offers
        self._inverse_offers = inverse_offers
        self._tasks = tasks
        self._subscriptions = subscriptions
        self._allocator = allocator

    def teardown(self, framework: Framework) -> None:
        self._subscriptions.remove(framework)

    def accept(self, framework: Framework, accept: dict[str, Any]) -> None:
        cluster = self._cluster
        offer_ids = [o["value"] for o in accept.get("offer_ids", [])]
        operations = accept.get("operations", [])
        error = validate_offers(offer_ids, cluster, framework)
        if error is not None:
            for offer_id in offer_ids:
                offer = cluster.offers.get(offer_id)
                if offer is not None:
                    self._offers.remove(offer, rescind=False)
            lost = "TASK_DROPPED" if framework.partition_aware else "TASK_LOST"
            for task in _launch_tasks(operations):
                send_update(framework, master_status(
                    task["task_id"]["value"], lost, f"Task launched with invalid offers: {error}",
                    "REASON_INVALID_OFFERS", task["agent_id"]["value"]))
            return

        offers = [cluster.offers[offer_id] for offer_id in offer_ids]
        record = cluster.agents[offers[0].agent_id]
        role = offers[0].role
        offered = Resources()
        for offer in offers:
            offered = offered + offer.resources
            self._offers.forget(offer)
        remaining = offered  # allocated to ``role``

        for operation in operations:
            kind = operation.get("type")
            if kind == "LAUNCH":
                tasks = operation.get("launch", {}).get("task_infos", [])
                if "id" in operation:
                    for task in tasks:
                        self._task_error(framework, task, "The `id` field cannot be set on LAUNCH operations")
                    continue
                for task in tasks:
                    remaining = self._launch(framework, record, role, task, remaining)
            elif kind == "LAUNCH_GROUP":
                for task in operation.get("launch_group", {}).get("task_group", {}).get("tasks", []):
                    self._task_error(framework, task, "LAUNCH_GROUP is not supported by the embedded agent",
                                     "REASON_TASK_GROUP_INVALID")
            # Other operations (RESERVE, CREATE, ...) need resource providers; dropped like
            # Mesos drops operations without an ``id``.

        self._offers.recover(record, remaining.unallocate(), framework, role,
                             refuse_timeout(accept.get("filters"), self._config.allocation_interval))

    def _launch(self, framework: Framework, record: AgentRecord, role: str, task: dict[str, Any],
                remaining: Resources) -> Resources:
        task = dict(task)
        if "resources" in task:
            task["resources"] = _inject_allocation(task["resources"], role)
        if "executor" in task:
            executor = dict(task["executor"])
            executor.setdefault("framework_id", {"value": framework.id})
            if "resources" in executor:
                executor["resources"] = _inject_allocation(executor["resources"], role)
            task["executor"] = SCHEMAS.ordered("ExecutorInfo", executor)
        agent_id = record.agent.id
        # The user the task runs as: its command's, else its executor's, else the framework's.
        user = (task.get("command", {}).get("user") or task.get("executor", {}).get("command", {}).get("user")
                or framework.info.get("user", ""))
        if self._acls is not None and not self._acls.may_run_task(framework.info.get("principal"), user):
            self._task_error(framework, task, "Not authorized to launch task", "REASON_TASK_UNAUTHORIZED")
            return remaining
        error, consumed = validate_task(
            task, framework, agent_id, remaining,
            lambda executor_id: record.executors.get(framework.id, {}).get(executor_id))
        if error is not None:
            self._task_error(framework, task, error)
            return remaining
        task_resources = Resources.from_json(task.get("resources", []))
        executor_id = None
        if "executor" in task:
            executor_id = task["executor"]["executor_id"]["value"]
            if executor_id not in record.executors.get(framework.id, {}):
                record.executors.setdefault(framework.id, {})[executor_id] = task["executor"]
                framework.executors[(agent_id, executor_id)] = task["executor"]
                record.used = record.used + Resources.from_json(task["executor"].get("resources", [])).unallocate()
        self._tasks.add(framework, record, Task(
            task_id=task["task_id"]["value"], name=task["name"], framework_id=framework.id, agent_id=agent_id,
            executor_id=executor_id, resources=task_resources, role=role, info=task))
        record.used = record.used + task_resources.unallocate()  # taken from the agent by the offer
        post(self._loop, record.agent.run_task, framework.info, task)
        return remaining - consumed

    def _task_error(self, framework: Framework, task: dict[str, Any], message: str,
                    reason: str = "REASON_TASK_INVALID") -> None:
        send_update(framework, master_status(
            task["task_id"]["value"], "TASK_ERROR", message, reason, task["agent_id"]["value"]))

    def decline(self, framework: Framework, decline: dict[str, Any]) -> None:
        timeout = refuse_timeout(decline.get("filters"), self._config.allocation_interval)
        for offer_id in (o["value"] for o in decline.get("offer_ids", [])):
            offer = self._cluster.offers.get(offer_id)
            if offer is None or offer.framework_id != framework.id:
                continue
            self._offers.remove(offer, rescind=False, filter_timeout=timeout)

    def answer_inverse_offers(self, call: dict[str, Any], accepted: bool) -> None:
        """ACCEPT_INVERSE_OFFERS / DECLINE_INVERSE_OFFERS: advisory; unknown ids are ignored."""
        ids = [o["value"] for o in call.get("inverse_offer_ids", [])]
        self._inverse_offers.answer(ids, accepted, call.get("filters"))

    def revive(self, framework: Framework, revive: dict[str, Any]) -> None:
        roles = revive.get("roles") or framework.roles
        if any(validate_role(role) or role not in framework.roles for role in roles):
            return  # Mesos drops the whole call
        self._allocator.revive(framework, roles)

    def suppress(self, framework: Framework, suppress: dict[str, Any]) -> None:
        roles = suppress.get("roles") or framework.roles
        if any(validate_role(role) or role not in framework.roles for role in roles):
            return
        framework.suppressed_roles |= set(roles)

    def kill(self, framework: Framework, kill: dict[str, Any]) -> None:
        task_id = kill["task_id"]["value"]
        agent_id = kill.get("agent_id", {}).get("value")
        task = framework.tasks.get(task_id)
        if task is None:
            entry: dict[str, Any] = {"task_id": kill["task_id"]}
            if agent_id is not None:
                entry["agent_id"] = kill["agent_id"]
            self.reconcile(framework, {"tasks": [entry]})
            return
        if agent_id is not None and agent_id != task.agent_id:
            return
        record = self._cluster.agents.get(task.agent_id)
        if record is not None:
            post(self._loop, record.agent.kill_task, framework.id, task_id, kill.get("kill_policy"))

    def shutdown(self, framework: Framework, shutdown: dict[str, Any]) -> None:
        record = self._cluster.agents.get(shutdown["agent_id"]["value"])
        if record is not None:
            post(self._loop, record.agent.shutdown_executor, framework.id, shutdown["executor_id"]["value"])

    def acknowledge(self, framework: Framework, acknowledge: dict[str, Any]) -> None:
        record = self._cluster.agents.get(acknowledge["agent_id"]["value"])
        if record is None:
            return
        task_id = acknowledge["task_id"]["value"]
        uuid = b64encode(b64decode(acknowledge["uuid"]))
        task = record.tasks.get((framework.id, task_id))
        if task is not None and task.status_update_state in TERMINAL_STATES and task.status_update_uuid == uuid:
            self._tasks.remove(task)  # the terminal update is acknowledged: forget the task
        post(self._loop, record.agent.acknowledge, framework.id, task_id, uuid)

    def reconcile(self, framework: Framework, reconcile: dict[str, Any]) -> None:
        entries = reconcile.get("tasks", [])
        if not entries:
            for task in list(framework.tasks.values()):
                send_update(framework, _reconciled(task))
            return
        unknown = "TASK_LOST"
        aware = framework.partition_aware
        for entry in entries:
            task_id = entry["task_id"]["value"]
            agent_id = entry.get("agent_id", {}).get("value")
            task = framework.tasks.get(task_id)
            if task is not None:
                status = _reconciled(task)
            elif agent_id is not None and agent_id in self._cluster.agents:
                status = master_status(task_id, "TASK_GONE" if aware else unknown,
                                       "Reconciliation: Task is unknown to the agent", "REASON_RECONCILIATION",
                                       agent_id)
            elif agent_id is not None and agent_id in self._cluster.gone_agents:
                status = master_status(task_id, "TASK_GONE_BY_OPERATOR" if aware else unknown,
                                       "Reconciliation: Task is gone", "REASON_RECONCILIATION", agent_id)
            else:
                status = master_status(task_id, "TASK_UNKNOWN" if aware else unknown,
                                       "Reconciliation: Task is unknown", "REASON_RECONCILIATION", agent_id)
            send_update(framework, status)

    def message(self, framework: Framework, message: dict[str, Any]) -> None:
        record = self._cluster.agents.get(message["agent_id"]["value"])
        if record is not None:
            post(self._loop, record.agent.framework_message, framework.id, message["executor_id"]["value"],
                 message["data"])


def _reconciled(task: Task) -> dict[str, Any]:
    state = task.status_update_state or task.state
    latest = task.latest_status or {}
    container_status = next((s["container_status"] for s in reversed(task.statuses)
                             if "container_status" in s), None)
    status = master_status(task.task_id, state, "Reconciliation: Latest task state", "REASON_RECONCILIATION",
                           task.agent_id, task.executor_id, container_status)
    if "healthy" in latest:
        status["healthy"] = latest["healthy"]
    return status


def _inject_allocation(resources: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    """protobuf::injectAllocationInfo: resources without allocation_info get the offer's."""
    return [r if "allocation_info" in r else {**r, "allocation_info": {"role": role}} for r in resources]


def _launch_tasks(operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    for operation in operations:
        if operation.get("type") == "LAUNCH":
            tasks += operation.get("launch", {}).get("task_infos", [])
        elif operation.get("type") == "LAUNCH_GROUP":
            tasks += operation.get("launch_group", {}).get("task_group", {}).get("tasks", [])
    return tasks
