"""The master: frameworks, offers, tasks and the scheduler-facing semantics.

Everything here runs on the single event loop thread, so there is no
locking; messages to agents are posted with ``call_soon`` to keep the
asynchronous ordering of real Mesos (master -> agent -> master).
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..agent.agent import Agent
from .allocator import Allocator, refuse_timeout
from ..http.auth import Acls
from ..config import MasterConfig, QuotaConfig
from .framework import Framework, Offer, Task
from ..http.server import APPLICATION_JSON, EventStream, StreamResponse
from ..ids import IdGenerator
from ..http.protojson import b64decode, b64encode
from ..agent.recovery import agent_entry, save_agents
from ..resources import Resources
from ..roles import validate_role
from ..http.schemas import SCHEMAS, TERMINAL_STATES
from .status_updates import StatusUpdate
from .validation import validate_framework, validate_offers, validate_task

log = logging.getLogger(__name__)

VERSION = "1.12.0"
MASTER_CAPABILITIES = ("AGENT_UPDATE", "AGENT_DRAINING", "QUOTA_V2")


@dataclass(eq=False)
class AgentRecord:
    """The master's view of a registered agent (Mesos ``Slave``)."""

    agent: Agent
    total: Resources
    available: Resources  # neither offered nor used (unallocated form)
    offered: Resources = field(default_factory=Resources)
    used: Resources = field(default_factory=Resources)
    tasks: dict[tuple[str, str], Task] = field(default_factory=dict)
    executors: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    offers: set[str] = field(default_factory=set)
    registered_time: float = field(default_factory=time.time)
    missed_pings: int = 0
    ping_pending: bool = False  # the last ping found the agent stopped

    def take(self, resources: Resources) -> None:
        self.available = self.available - resources

    def give_back(self, resources: Resources) -> None:
        self.available = self.available + resources


class Master:
    def __init__(self, config: MasterConfig, loop: asyncio.AbstractEventLoop, ids: IdGenerator) -> None:
        self.config = config
        self.loop = loop
        self.ids = ids
        self.port = config.port
        self.start_time = time.time()
        self.agents: dict[str, AgentRecord] = {}
        self.gone_agents: dict[str, float] = {}
        # Marked unreachable (missed their pings), with when: their tasks wait for them here.
        self.unreachable_agents: dict[str, tuple[AgentRecord, float]] = {}
        self._ping_timer: asyncio.TimerHandle | None = None
        self.frameworks: dict[str, Framework] = {}
        self.completed_frameworks: deque[Framework] = deque(maxlen=config.tuning.max_completed_frameworks)
        self.offers: dict[str, Offer] = {}
        self.allocator = Allocator(self, loop, config.allocation_interval)
        # Multi-team settings; the operator API changes them at run time.
        self.weights: dict[str, float] = dict(config.weights)
        self.quotas: dict[str, QuotaConfig] = dict(config.quotas)
        self.acls = Acls.from_json(config.acls) if config.acls is not None else None
        self._agent_stops: set[asyncio.Task] = set()

    # -- lifecycle ----------------------------------------------------------
    def add_agent(self, agent: Agent) -> None:
        self.agents[agent.id] = AgentRecord(agent, agent.total, agent.total.copy())
        self.allocator.trigger()

    def start(self) -> None:
        self.allocator.start()
        self._ping_timer = self.loop.call_later(self.config.tuning.agent_ping_timeout, self._ping_agents)

    def recover_executor(self, agent_id: str, framework_info: dict[str, Any], executor_info: dict[str, Any],
                         tasks: list[tuple[dict[str, Any], str]]) -> None:
        """An agent re-adopted a running executor after a restart (agent re-registration).

        Its framework is rebuilt as 'recovered' until the scheduler subscribes
        again with its id; the failover timeout is not known any more.
        """
        record = self.agents[agent_id]
        framework_id = framework_info["id"]["value"]
        framework = self.frameworks.get(framework_id)
        if framework is None:
            framework = Framework(framework_id, _ordered_info(framework_info), recovered=True)
            framework.completed_tasks = deque(maxlen=self.config.tuning.max_completed_tasks_per_framework)
            self.frameworks[framework_id] = framework
        executor_id = executor_info["executor_id"]["value"]
        record.executors.setdefault(framework_id, {})[executor_id] = executor_info
        framework.executors[(agent_id, executor_id)] = executor_info
        executor_resources = Resources.from_json(executor_info.get("resources", [])).unallocate()
        record.used = record.used + executor_resources
        record.take(executor_resources)
        for info, state in tasks:
            resources = Resources.from_json(info.get("resources", []))
            roles = resources.allocation_roles() - {None}
            task = Task(task_id=info["task_id"]["value"], name=info.get("name", ""), framework_id=framework_id,
                        agent_id=agent_id, executor_id=executor_id, resources=resources,
                        role=next(iter(roles)) if roles else "*", info=info, state=state)
            framework.tasks[task.task_id] = task
            record.tasks[(framework_id, task.task_id)] = task
            record.used = record.used + resources.unallocate()
            record.take(resources.unallocate())

    async def stop(self) -> None:
        self.allocator.stop()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        for framework in list(self.frameworks.values()):
            for timer in (framework.heartbeat_timer, framework.failover_timer):
                if timer is not None:
                    timer.cancel()
            if framework.stream is not None:
                framework.stream.close()
        grace = self.config.tuning.stop_grace_period
        records = list(self.agents.values()) + [record for record, _ in self.unreachable_agents.values()]
        stops = [record.agent.stop(grace) for record in records]
        await asyncio.gather(*stops, *self._agent_stops)

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def master_info(self) -> dict[str, Any]:
        host = self.config.host
        packed = struct.unpack("<I", socket.inet_aton(host))[0]
        return {
            "id": self.ids.master_id,
            "ip": packed,
            "port": self.port,
            "pid": f"master@{self.address}",
            "hostname": host,
            "version": VERSION,
            "address": {"hostname": host, "ip": host, "port": self.port},
            "capabilities": [{"type": c} for c in MASTER_CAPABILITIES],
        }

    def _post(self, function: Callable[..., Any], *args: Any) -> None:
        agent = getattr(function, "__self__", None)
        if isinstance(agent, Agent):  # a message to an agent waits while it is stopped
            self.loop.call_soon(agent.deliver, function, *args)
        else:
            self.loop.call_soon(function, *args)

    # -- agent health (Master::markUnreachable, Master::_reregisterSlave) ---
    def _ping_agents(self) -> None:
        """Every --agent_ping_timeout: was the last ping answered (a stopped agent answers once it
        continues), then ping again. max_agent_ping_timeouts unanswered in a row: unreachable, 3 to 4
        periods after the agent stopped (3.1 s at 1 s x 3 in trace 12)."""
        tuning = self.config.tuning
        for record in list(self.agents.values()):
            missed = record.ping_pending and record.agent.paused
            record.missed_pings = record.missed_pings + 1 if missed else 0
            if record.missed_pings >= tuning.max_agent_ping_timeouts:
                self.mark_unreachable(record.agent.id, "health check timed out")
            else:
                record.ping_pending = record.agent.paused
        self._ping_timer = self.loop.call_later(tuning.agent_ping_timeout, self._ping_agents)

    def mark_unreachable(self, agent_id: str, message: str) -> None:
        """The agent is removed and its tasks with it: TASK_LOST (TASK_UNREACHABLE to a PARTITION_AWARE
        framework), REASON_AGENT_REMOVED, then FAILURE (trace 12). Its tasks are kept for its return."""
        record = self.agents.pop(agent_id)
        now = time.time()
        self.unreachable_agents[agent_id] = (record, now)
        log.warning("marking agent %s unreachable: %s", agent_id, message)
        for task in list(record.tasks.values()):
            framework = self.frameworks.get(task.framework_id)
            if framework is None:
                continue
            framework.tasks.pop(task.task_id, None)
            state = "TASK_UNREACHABLE" if framework.partition_aware else "TASK_LOST"
            status = _master_status(task.task_id, state, message, "REASON_AGENT_REMOVED", agent_id)
            status["unreachable_time"] = {"nanoseconds": int(now * 1e9)}
            if framework.connected:
                framework.send({"type": "UPDATE", "update": {"status": status}})
        self._agent_removed(record)

    def _agent_removed(self, record: AgentRecord) -> None:
        """What every removal of an agent does: its executors and offers go, frameworks hear FAILURE."""
        agent_id = record.agent.id
        for framework_id, executors in list(record.executors.items()):
            framework = self.frameworks.get(framework_id)
            for executor_id in list(executors):
                if framework is not None:
                    framework.executors.pop((agent_id, executor_id), None)
        for offer_id in list(record.offers):
            offer = self.offers[offer_id]
            self._forget_offer(offer)
            framework = self.frameworks.get(offer.framework_id)
            if framework is not None:
                framework.send({"type": "RESCIND", "rescind": {"offer_id": {"value": offer.id}}})
        for framework in self.frameworks.values():
            if framework.connected:
                framework.send({"type": "FAILURE", "failure": {"agent_id": {"value": agent_id}}})

    def reregister_agent(self, agent: Agent) -> None:
        """An agent that was marked unreachable is back. Mesos 1.12 re-admits it with the tasks it
        still runs and tells their frameworks their latest state, 'Unreachable agent re-reregistered'
        (REASON_AGENT_REREGISTERED, trace 12); it kills nothing, partition-aware or not: a framework
        that replaced a lost task kills the old one. Frameworks removed meanwhile are shut down there."""
        entry = self.unreachable_agents.pop(agent.id, None)
        if entry is None:
            return  # never marked: the master saw nothing
        old, _ = entry
        record = AgentRecord(agent, agent.total, agent.total.copy())
        self.agents[agent.id] = record
        running = agent.live_tasks()
        gone = {fid for fid, _ in old.tasks} | set(old.executors)
        gone -= set(self.frameworks)
        for framework_id in gone:
            self._post(agent.shutdown_framework, framework_id)
        for framework_id, executors in old.executors.items():
            framework = self.frameworks.get(framework_id)
            for executor_id, info in executors.items():
                if framework is None or agent.find_executor(framework_id, executor_id) is None:
                    continue
                record.executors.setdefault(framework_id, {})[executor_id] = info
                framework.executors[(agent.id, executor_id)] = info
                resources = Resources.from_json(info.get("resources", [])).unallocate()
                record.used = record.used + resources
                record.take(resources)
        for key, task in old.tasks.items():
            framework = self.frameworks.get(task.framework_id)
            state = running.get(key)
            if framework is None or state is None:
                continue  # it ended meanwhile: its own update follows
            task.state = state
            framework.tasks[task.task_id] = task
            record.tasks[key] = task
            record.used = record.used + task.resources.unallocate()
            record.take(task.resources.unallocate())
            latest = task.latest_status or {}
            status = _master_status(task.task_id, state, "Unreachable agent re-reregistered",
                                    "REASON_AGENT_REREGISTERED", agent.id,
                                    container_status=latest.get("container_status"))
            if framework.connected:
                framework.send({"type": "UPDATE", "update": {"status": status}})
        log.warning("agent %s re-registered after being unreachable", agent.id)
        self.allocator.trigger()

    # -- subscription -------------------------------------------------------
    def subscribe(self, subscribe: dict[str, Any], principal: str | None) -> StreamResponse:
        stream_id = self.ids.stream_id()

        def on_open(stream: EventStream) -> None:
            self._subscribe(stream, stream_id, subscribe, principal)

        return StreamResponse([("Content-Type", APPLICATION_JSON), ("Mesos-Stream-Id", stream_id)], on_open)

    def _subscribe(self, stream: EventStream, stream_id: str, subscribe: dict[str, Any],
                   principal: str | None) -> None:
        info = dict(subscribe["framework_info"])
        if principal is not None and "principal" not in info:
            info["principal"] = principal
        error = validate_framework(info)
        framework_id = info.get("id", {}).get("value", "")
        if error is None and framework_id and any(f.id == framework_id for f in self.completed_frameworks):
            error = "Framework has been removed"
        if error is None:
            roles = set(_roles_of(info))
            invalid = set(subscribe.get("suppressed_roles", [])) - roles
            if invalid:
                error = f"Suppressed roles {_stringify_set(invalid)} are not contained in the set of roles"
        if error is None:
            error = self._unauthorized_roles(info, framework_id)
        if error is not None:
            _refuse(stream, error)
            return

        if not framework_id:
            framework_id = self.ids.framework_id()
            info["id"] = {"value": framework_id}
            framework = Framework(framework_id, _ordered_info(info))
            framework.completed_tasks = deque(maxlen=self.config.tuning.max_completed_tasks_per_framework)
            framework.suppressed_roles = set(subscribe.get("suppressed_roles", []))
            self.frameworks[framework_id] = framework
            self._connect(framework, stream, stream_id)
            self.allocator.trigger()
            return

        framework = self.frameworks.get(framework_id)
        if framework is None:
            # Unknown id (e.g. after a master restart): rebuild it from the FrameworkInfo.
            framework = Framework(framework_id, _ordered_info(info))
            framework.completed_tasks = deque(maxlen=self.config.tuning.max_completed_tasks_per_framework)
            self.frameworks[framework_id] = framework
        else:
            # user and checkpoint are immutable; a principal change is an error.
            info["user"] = framework.info["user"]
            if "checkpoint" in framework.info or "checkpoint" in info:
                info["checkpoint"] = framework.info.get("checkpoint", False)
            if info.get("principal") != framework.info.get("principal"):
                _refuse(stream, "Changing framework's principal is not allowed.")
                return
            framework.info = _ordered_info(info)
            framework.reregistered_time = time.time()
            framework.recovered = False
        framework.suppressed_roles = set(subscribe.get("suppressed_roles", []))
        if framework.connected:
            old = framework.stream
            framework.stream = None  # the old stream's close must not disconnect us
            old.send({"type": "ERROR", "error": {"message": "Framework failed over"}})  # type: ignore[union-attr]
            old.close()  # type: ignore[union-attr]
        for offer in list(framework.offers.values()):
            self._remove_offer(offer, rescind=False)
        was_active = framework.active
        self._connect(framework, stream, stream_id)
        if not was_active:
            self.allocator.trigger()
        for record in self.agents.values():
            self._post(record.agent.update_framework, framework.info)

    def _unauthorized_roles(self, info: dict[str, Any], framework_id: str) -> str | None:
        """The ACLs' register_frameworks verdict on the roles in ``info`` (None: allowed)."""
        if self.acls is None:
            return None
        roles = _roles_of(info)
        if all(self.acls.may_register(info.get("principal"), role) for role in roles):
            return None
        # Mesos' words (trace 09-authz), the framework id empty when new.
        return f"Not authorized to register framework {framework_id} with roles {_stringify_set(set(roles))}"

    def _connect(self, framework: Framework, stream: EventStream, stream_id: str) -> None:
        if framework.failover_timer is not None:
            framework.failover_timer.cancel()
            framework.failover_timer = None
        framework.stream = stream
        framework.stream_id = stream_id
        framework.active = True
        framework.unregistered_time = 0.0
        stream.on_close(lambda closed: self._stream_closed(framework.id, closed))
        stream.send({"type": "SUBSCRIBED", "subscribed": {
            "framework_id": {"value": framework.id},
            "heartbeat_interval_seconds": float(self.config.heartbeat_interval),
            "master_info": self.master_info(),
        }})
        self._heartbeat(framework, stream)

    def _heartbeat(self, framework: Framework, stream: EventStream) -> None:
        if framework.stream is not stream or stream.closed:
            return
        stream.send({"type": "HEARTBEAT"})
        framework.heartbeat_timer = self.loop.call_later(
            self.config.heartbeat_interval, self._heartbeat, framework, stream)

    def _stream_closed(self, framework_id: str, stream: EventStream) -> None:
        """The scheduler's connection dropped: deactivate and start the failover timer."""
        framework = self.frameworks.get(framework_id)
        if framework is None or framework.stream is not stream:
            return
        framework.stream = None
        framework.active = False
        framework.unregistered_time = time.time()
        if framework.heartbeat_timer is not None:
            framework.heartbeat_timer.cancel()
            framework.heartbeat_timer = None
        for offer in list(framework.offers.values()):
            self._remove_offer(offer, rescind=False)
        timeout = float(framework.info.get("failover_timeout", 0.0))
        framework.failover_timer = self.loop.call_later(
            timeout, self._failover_expired, framework_id, framework.reregistered_time)

    def _failover_expired(self, framework_id: str, reregistered_time: float) -> None:
        framework = self.frameworks.get(framework_id)
        if framework is None or framework.connected or framework.reregistered_time != reregistered_time:
            return
        log.info("framework %s did not fail over in time; removing it", framework_id)
        self.remove_framework(framework)

    def remove_framework(self, framework: Framework) -> None:
        """TEARDOWN or failover timeout: kill everything, forget the id for good."""
        framework.removed = True
        framework.active = False
        for timer in (framework.heartbeat_timer, framework.failover_timer):
            if timer is not None:
                timer.cancel()
        framework.heartbeat_timer = framework.failover_timer = None
        for offer in list(framework.offers.values()):
            self._remove_offer(offer, rescind=False)
        for record in self.agents.values():
            self._post(record.agent.shutdown_framework, framework.id)
        for task in list(framework.tasks.values()):
            status = _master_status(task.task_id, "TASK_KILLED", f"Framework {framework.id} removed",
                                    "REASON_FRAMEWORK_REMOVED", task.agent_id, task.executor_id)
            self._update_task(task, status)
            self._remove_task(task)
        for (agent_id, executor_id) in list(framework.executors):
            record = self.agents.get(agent_id)
            if record is not None:
                self._remove_executor(record, framework, executor_id)
        framework.executors.clear()
        framework.filters.clear()
        if framework.stream is not None:
            stream, framework.stream = framework.stream, None
            stream.close()
        if not framework.unregistered_time:
            framework.unregistered_time = time.time()
        self.frameworks.pop(framework.id, None)
        self.completed_frameworks.append(framework)

    # -- scheduler calls ----------------------------------------------------
    def teardown(self, framework: Framework) -> None:
        self.remove_framework(framework)

    def update_framework(self, framework: Framework, call: dict[str, Any]) -> tuple[int, str]:
        info = dict(call["framework_info"])
        error = validate_framework(info)
        if error is None and info.get("principal") != framework.info.get("principal"):
            error = "Changing framework's principal is not allowed."
        if error is None and info["user"] != framework.info["user"]:
            error = (f"Updating 'FrameworkInfo.user' is unsupported; attempted to update from "
                     f"'{framework.info['user']}' to '{info['user']}'")
        if error is None and bool(info.get("checkpoint")) != bool(framework.info.get("checkpoint")):
            error = (f"Updating 'FrameworkInfo.checkpoint' is unsupported; attempted to update from "
                     f"'{_bool(framework.info.get('checkpoint'))}' to '{_bool(info.get('checkpoint'))}'")
        invalid = set(call.get("suppressed_roles", [])) - set(_roles_of(info))
        if error is None and invalid:
            error = f"Suppressed roles {_stringify_set(invalid)} are not contained in the set of roles"
        if error is not None:
            return 400, error
        refusal = self._unauthorized_roles(info, framework.id)
        if refusal is not None:
            return 403, refusal
        framework.info = _ordered_info(info)
        framework.suppressed_roles = set(call.get("suppressed_roles", []))
        for offer in [o for o in framework.offers.values() if o.role not in framework.roles]:
            self._remove_offer(offer, rescind=True)
        for record in self.agents.values():
            self._post(record.agent.update_framework, framework.info)
        self.allocator.trigger()
        return 200, ""

    def accept(self, framework: Framework, accept: dict[str, Any]) -> None:
        offer_ids = [o["value"] for o in accept.get("offer_ids", [])]
        operations = accept.get("operations", [])
        error = validate_offers(offer_ids, self, framework)
        if error is not None:
            for offer_id in offer_ids:
                offer = self.offers.get(offer_id)
                if offer is not None:
                    self._remove_offer(offer, rescind=False)
            lost = "TASK_DROPPED" if framework.partition_aware else "TASK_LOST"
            for task in _launch_tasks(operations):
                self._send_master_update(framework, _master_status(
                    task["task_id"]["value"], lost, f"Task launched with invalid offers: {error}",
                    "REASON_INVALID_OFFERS", task["agent_id"]["value"]))
            return

        offers = [self.offers[offer_id] for offer_id in offer_ids]
        record = self.agents[offers[0].agent_id]
        role = offers[0].role
        offered = Resources()
        for offer in offers:
            offered = offered + offer.resources
            self._forget_offer(offer)
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

        self._recover(record, remaining.unallocate(), framework, role,
                      refuse_timeout(accept.get("filters"), self.config.allocation_interval))

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
        if self.acls is not None and not self.acls.may_run_task(framework.info.get("principal"), user):
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
        master_task = Task(
            task_id=task["task_id"]["value"], name=task["name"], framework_id=framework.id, agent_id=agent_id,
            executor_id=executor_id, resources=task_resources, role=role, info=task)
        framework.tasks[master_task.task_id] = master_task
        record.tasks[(framework.id, master_task.task_id)] = master_task
        record.used = record.used + task_resources.unallocate()
        self._post(record.agent.run_task, framework.info, task)
        return remaining - consumed

    def _task_error(self, framework: Framework, task: dict[str, Any], message: str,
                    reason: str = "REASON_TASK_INVALID") -> None:
        self._send_master_update(framework, _master_status(
            task["task_id"]["value"], "TASK_ERROR", message, reason, task["agent_id"]["value"]))

    def decline(self, framework: Framework, decline: dict[str, Any]) -> None:
        timeout = refuse_timeout(decline.get("filters"), self.config.allocation_interval)
        for offer_id in (o["value"] for o in decline.get("offer_ids", [])):
            offer = self.offers.get(offer_id)
            if offer is None or offer.framework_id != framework.id:
                continue
            self._remove_offer(offer, rescind=False, filter_timeout=timeout)

    def revive(self, framework: Framework, revive: dict[str, Any]) -> None:
        roles = revive.get("roles") or framework.roles
        if any(validate_role(role) or role not in framework.roles for role in roles):
            return  # Mesos drops the whole call
        self.allocator.revive(framework, roles)

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
        record = self.agents.get(task.agent_id)
        if record is not None:
            self._post(record.agent.kill_task, framework.id, task_id, kill.get("kill_policy"))

    def shutdown(self, framework: Framework, shutdown: dict[str, Any]) -> None:
        record = self.agents.get(shutdown["agent_id"]["value"])
        if record is not None:
            self._post(record.agent.shutdown_executor, framework.id, shutdown["executor_id"]["value"])

    def acknowledge(self, framework: Framework, acknowledge: dict[str, Any]) -> None:
        record = self.agents.get(acknowledge["agent_id"]["value"])
        if record is None:
            return
        task_id = acknowledge["task_id"]["value"]
        uuid = b64encode(b64decode(acknowledge["uuid"]))
        task = record.tasks.get((framework.id, task_id))
        if task is not None and task.status_update_state in TERMINAL_STATES and task.status_update_uuid == uuid:
            self._remove_task(task)  # the terminal update is acknowledged: forget the task
        self._post(record.agent.acknowledge, framework.id, task_id, uuid)

    def reconcile(self, framework: Framework, reconcile: dict[str, Any]) -> None:
        entries = reconcile.get("tasks", [])
        if not entries:
            for task in list(framework.tasks.values()):
                self._send_master_update(framework, self._reconciled(task))
            return
        unknown = "TASK_LOST"
        for entry in entries:
            task_id = entry["task_id"]["value"]
            agent_id = entry.get("agent_id", {}).get("value")
            task = framework.tasks.get(task_id)
            if task is not None:
                status = self._reconciled(task)
            elif agent_id is not None and agent_id in self.agents:
                status = _master_status(task_id, "TASK_GONE" if framework.partition_aware else unknown,
                                        "Reconciliation: Task is unknown to the agent", "REASON_RECONCILIATION",
                                        agent_id)
            elif agent_id is not None and agent_id in self.gone_agents:
                status = _master_status(task_id, "TASK_GONE_BY_OPERATOR" if framework.partition_aware else unknown,
                                        "Reconciliation: Task is gone", "REASON_RECONCILIATION", agent_id)
            else:
                status = _master_status(task_id, "TASK_UNKNOWN" if framework.partition_aware else unknown,
                                        "Reconciliation: Task is unknown", "REASON_RECONCILIATION", agent_id)
            self._send_master_update(framework, status)

    def _reconciled(self, task: Task) -> dict[str, Any]:
        state = task.status_update_state or task.state
        latest = task.latest_status or {}
        container_status = next((s["container_status"] for s in reversed(task.statuses)
                                 if "container_status" in s), None)
        status = _master_status(task.task_id, state, "Reconciliation: Latest task state", "REASON_RECONCILIATION",
                                task.agent_id, task.executor_id, container_status)
        if "healthy" in latest:
            status["healthy"] = latest["healthy"]
        return status

    def message(self, framework: Framework, message: dict[str, Any]) -> None:
        record = self.agents.get(message["agent_id"]["value"])
        if record is not None:
            self._post(record.agent.framework_message, framework.id, message["executor_id"]["value"],
                       message["data"])

    # -- agent -> master ----------------------------------------------------
    def status_update(self, agent_id: str, update: StatusUpdate, latest_state: str) -> None:
        record = self.agents.get(agent_id)
        if record is None:
            return  # removed agent: dropped, like Master::statusUpdate
        framework = self.frameworks.get(update.framework_id)
        task = record.tasks.get((update.framework_id, update.task_id))
        if framework is not None and framework.connected:
            if task is not None:
                task.status_update_state = update.state
                task.status_update_uuid = update.uuid
            framework.send({"type": "UPDATE", "update": {"status": update.status}})
        if task is not None:
            self._update_task(task, {**update.status, "timestamp": update.status_timestamp}, latest_state)

    def executor_message(self, agent_id: str, framework_id: str, executor_id: str, data: str) -> None:
        framework = self.frameworks.get(framework_id)
        if agent_id in self.agents and framework is not None and framework.connected:
            framework.send({"type": "MESSAGE", "message": {
                "agent_id": {"value": agent_id}, "executor_id": {"value": executor_id}, "data": data}})

    def exited_executor(self, agent_id: str, framework_id: str, executor_id: str, status: int) -> None:
        record = self.agents.get(agent_id)
        if record is None or executor_id not in record.executors.get(framework_id, {}):
            return
        framework = self.frameworks.get(framework_id)
        self._remove_executor(record, framework, executor_id)
        if framework is not None and framework.connected:
            framework.send({"type": "FAILURE", "failure": {
                "agent_id": {"value": agent_id}, "executor_id": {"value": executor_id}, "status": status}})

    # -- operator API -------------------------------------------------------
    def mark_agent_gone(self, agent_id: str) -> tuple[int, str]:
        if agent_id in self.gone_agents:
            return 200, ""
        record = self.agents.get(agent_id)
        if record is None:
            return 404, f"Agent '{agent_id}' not found"
        self.gone_agents[agent_id] = time.time()
        del self.agents[agent_id]
        for task in list(record.tasks.values()):
            framework = self.frameworks.get(task.framework_id)
            if framework is None:
                continue
            if framework.partition_aware:
                state, reason = "TASK_GONE_BY_OPERATOR", "REASON_AGENT_REMOVED_BY_OPERATOR"
            else:
                state, reason = "TASK_LOST", "REASON_AGENT_REMOVED"
            status = _master_status(task.task_id, state, "Agent has been marked gone", reason, agent_id,
                                    task.executor_id)
            self._update_task(task, status)
            self._remove_task(task)
            if framework.connected:
                framework.send({"type": "UPDATE", "update": {"status": status}})
        self._agent_removed(record)
        stop = self.loop.create_task(record.agent.stop(self.config.tuning.executor_shutdown_grace_period))
        self._agent_stops.add(stop)
        stop.add_done_callback(self._agent_stops.discard)
        return 200, ""

    def convert_agent_resources(self, agent_id: str, source: Resources, target: Resources) -> tuple[int, str]:
        """RESERVE_RESOURCES / UNRESERVE_RESOURCES: free ``source`` on the agent becomes ``target``.

        Outstanding offers on the agent are rescinded first, as Mesos does when it needs them.
        """
        record = self.agents.get(agent_id)
        if record is None:
            return 400, f"Agent '{agent_id}' not found"  # Mesos: BadRequest, unknown agent
        for offer_id in list(record.offers):
            self._remove_offer(self.offers[offer_id], rescind=True)
        if not record.available.contains(source):
            return 409, (f"Invalid operation: {source.stringify('agent')} is not available on agent {agent_id} "
                         f"(free: {record.available.stringify('agent')})")
        record.total = record.total - source + target
        record.available = record.available - source + target
        save_agents(self.config.work_dir, self.agent_entries())  # kept across a restart, as Mesos' agent does
        self.allocator.trigger()
        return 202, ""

    def agent_entries(self) -> list[dict[str, Any]]:
        return [agent_entry(r.agent.id, r.agent.port, r.agent.configured, r.total) for r in self.agents.values()]

    # -- offers -------------------------------------------------------------
    def create_offer(self, framework: Framework, record: AgentRecord, role: str, resources: Resources) -> Offer:
        offer = Offer(self.ids.offer_id(), framework.id, record.agent.id, role, resources.allocate(role))
        record.take(resources)
        record.offered = record.offered + resources
        record.offers.add(offer.id)
        framework.offers[offer.id] = offer
        self.offers[offer.id] = offer
        return offer

    def send_offers(self, framework_id: str, offers: list[Offer]) -> None:
        framework = self.frameworks[framework_id]
        style = "refined" if framework.has_capability("RESERVATION_REFINEMENT") else "offer"
        rendered = []
        for offer in offers:
            record = self.agents[offer.agent_id]
            entry: dict[str, Any] = {
                "id": {"value": offer.id},
                "framework_id": {"value": framework_id},
                "agent_id": {"value": offer.agent_id},
                "hostname": record.agent.hostname,
                "url": record.agent.url(),
                "resources": offer.resources.to_json(style),
            }
            executors = record.executors.get(framework_id)
            if executors:
                entry["executor_ids"] = [{"value": e} for e in executors]
            entry["allocation_info"] = {"role": offer.role}
            rendered.append(entry)
        framework.send({"type": "OFFERS", "offers": {"offers": rendered}})

    def _forget_offer(self, offer: Offer) -> None:
        """Drop the offer record; its resources stay with the caller."""
        self.offers.pop(offer.id, None)
        framework = self.frameworks.get(offer.framework_id)
        if framework is not None:
            framework.offers.pop(offer.id, None)
        record = self.agents.get(offer.agent_id)
        if record is not None:
            record.offers.discard(offer.id)
            record.offered = record.offered - offer.resources.unallocate()

    def _remove_offer(self, offer: Offer, rescind: bool, filter_timeout: float = 0.0) -> None:
        self._forget_offer(offer)
        framework = self.frameworks.get(offer.framework_id)
        record = self.agents.get(offer.agent_id)
        if rescind and framework is not None:
            framework.send({"type": "RESCIND", "rescind": {"offer_id": {"value": offer.id}}})
        if record is not None:
            self._recover(record, offer.resources.unallocate(), framework, offer.role, filter_timeout)

    def _recover(self, record: AgentRecord, resources: Resources, framework: Framework | None, role: str,
                 filter_timeout: float) -> None:
        if resources.empty():
            return
        record.give_back(resources)
        if framework is not None and filter_timeout > 0:
            self.allocator.add_filter(framework, role, record.agent.id, resources, filter_timeout)

    # -- tasks --------------------------------------------------------------
    def _send_master_update(self, framework: Framework, status: dict[str, Any]) -> None:
        framework.send({"type": "UPDATE", "update": {"status": status}})

    def _update_task(self, task: Task, status: dict[str, Any], latest_state: str | None = None) -> None:
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
            record = self.agents.get(task.agent_id)
            if record is not None:
                released = task.resources.unallocate()
                record.used = record.used - released
                record.give_back(released)

    def _remove_task(self, task: Task) -> None:
        framework = self.frameworks.get(task.framework_id)
        record = self.agents.get(task.agent_id)
        if record is not None:
            record.tasks.pop((task.framework_id, task.task_id), None)
            if not task.terminal:
                released = task.resources.unallocate()
                record.used = record.used - released
                record.give_back(released)
        if framework is not None and framework.tasks.pop(task.task_id, None) is not None:
            framework.completed_tasks.append(task)

    def _remove_executor(self, record: AgentRecord, framework: Framework | None, executor_id: str) -> None:
        framework_id = framework.id if framework is not None else None
        for fid, executors in list(record.executors.items()):
            if framework_id is not None and fid != framework_id:
                continue
            info = executors.pop(executor_id, None)
            if info is None:
                continue
            released = Resources.from_json(info.get("resources", [])).unallocate()
            record.used = record.used - released
            record.give_back(released)
            if not executors:
                del record.executors[fid]
        if framework is not None:
            framework.executors.pop((record.agent.id, executor_id), None)

    # -- bookkeeping used by the allocator and /state -----------------------
    def cluster_totals(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for record in self.agents.values():
            for name in ("cpus", "mem", "disk", "gpus"):
                totals[name] = totals.get(name, 0.0) + record.total.scalar(name)
        return totals

    def role_allocations(self) -> dict[str, dict[str, float]]:
        """Scalars offered to or used by each role (tasks, executors, outstanding offers)."""
        allocated: dict[str, Resources] = {}
        for framework in self.frameworks.values():
            pieces = [o.resources for o in framework.offers.values()]
            pieces += [t.resources for t in framework.tasks.values() if not t.terminal]
            pieces += [Resources.from_json(info.get("resources", [])) for info in framework.executors.values()]
            for resources in pieces:
                for role in resources.allocation_roles() - {None}:
                    mine = resources.filter(lambda k, role=role: k.allocation_role == role)
                    allocated[role] = allocated.get(role, Resources()) + mine  # type: ignore[index]
        return {role: resources.scalars() for role, resources in allocated.items()}

    def unreserved_available(self) -> dict[str, float]:
        """Unreserved scalars neither used nor offered, over every agent (quota headroom)."""
        free: dict[str, float] = {}
        for record in self.agents.values():
            for name, amount in record.available.unreserved().scalars().items():
                free[name] = free.get(name, 0.0) + amount
        return free

    def unallocated_reservations(self, roles: set[str]) -> dict[str, dict[str, float]]:
        """Reserved scalars of ``roles`` that nobody holds (they count against quota)."""
        result: dict[str, dict[str, float]] = {}
        for record in self.agents.values():
            for role in record.available.reserved_roles() & roles:
                book = result.setdefault(role, {})
                for name, amount in record.available.filter(lambda k, role=role: k.role == role).scalars().items():
                    book[name] = book.get(name, 0.0) + amount
        return result

    def framework_allocation(self, framework: Framework) -> dict[str, float]:
        allocated = framework.used_resources() + framework.offered_resources()
        return {name: allocated.scalar(name) for name in ("cpus", "mem", "disk", "gpus")}


def _master_status(task_id: str, state: str, message: str, reason: str, agent_id: str | None = None,
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


def _roles_of(info: dict[str, Any]) -> list[str]:
    if any(c.get("type") == "MULTI_ROLE" for c in info.get("capabilities", [])):
        return list(info.get("roles", []))
    return [info.get("role", "*")]


def _ordered_info(info: dict[str, Any]) -> dict[str, Any]:
    """FrameworkInfo as Mesos echoes it to executors: declaration order, id included."""
    order = ("user", "name", "id", "failover_timeout", "checkpoint", "role", "roles", "hostname", "principal",
             "webui_url", "capabilities", "labels", "offer_filters")
    ordered = {k: info[k] for k in order if k in info}
    ordered.update({k: v for k, v in info.items() if k not in ordered})
    return ordered


def _refuse(stream: EventStream, message: str) -> None:
    stream.send({"type": "ERROR", "error": {"message": message}})
    stream.close()


def _stringify_set(values: set[str]) -> str:
    return "{ " + ", ".join(sorted(values)) + " }"


def _bool(value: Any) -> str:
    return "true" if value else "false"
