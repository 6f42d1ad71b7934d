"""The agents as the master keeps them: registration, executors re-adopted after a restart, health
(pings, unreachable, back again), their removal (MARK_AGENT_GONE, a machine taken DOWN) and the
operator's dynamic reservations."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from ..agent.agent import Agent
from ..agent.recovery import agent_entry, save_agents
from ..config import MasterConfig
from ..resources import Resources
from .allocator import Allocator
from .cluster import AgentRecord, Cluster, post
from .framework import Task
from .inverse_offers import InverseOfferBook
from .offers import OfferBook
from .subscriptions import Subscriptions
from .tasks import TaskBook, master_status, send_update

log = logging.getLogger(__name__)


class AgentBook:
    def __init__(self, cluster: Cluster, config: MasterConfig, loop: asyncio.AbstractEventLoop,
                 offers: OfferBook, inverse_offers: InverseOfferBook, tasks: TaskBook, subscriptions: Subscriptions,
                 allocator: Allocator, readmitted: Callable[[AgentRecord], None]) -> None:
        self._cluster = cluster
        self._config = config
        self._loop = loop
        self._offers = offers
        self._inverse_offers = inverse_offers
        self._tasks = tasks
        self._subscriptions = subscriptions
        self._allocator = allocator
        self._readmitted = readmitted  # its drain and its machine's unavailability, again
        self._ping_timer: asyncio.TimerHandle | None = None
        self._stops: set[asyncio.Task] = set()  # agents marked gone, stopping

    # -- registration -------------------------------------------------------------
    def add(self, agent: Agent) -> None:
        self._cluster.agents[agent.id] = AgentRecord.of(agent)
        self._allocator.trigger()

    def recover_executor(self, agent_id: str, framework_info: dict[str, Any], executor_info: dict[str, Any],
                         tasks: list[tuple[dict[str, Any], str]]) -> None:
        """An agent re-adopted a running executor after a restart (agent re-registration).

        Its framework is rebuilt as 'recovered' until the scheduler subscribes
        again with its id; the failover timeout is not known any more.
        """
        record = self._cluster.agents[agent_id]
        framework_id = framework_info["id"]["value"]
        framework = self._cluster.frameworks.get(framework_id)
        if framework is None:
            framework = self._subscriptions.new_framework(framework_id, framework_info, recovered=True)
        executor_id = executor_info["executor_id"]["value"]
        record.executors.setdefault(framework_id, {})[executor_id] = executor_info
        framework.executors[(agent_id, executor_id)] = executor_info
        record.hold(Resources.from_json(executor_info.get("resources", [])).unallocate())
        for info, state in tasks:
            resources = Resources.from_json(info.get("resources", []))
            roles = resources.allocation_roles() - {None}
            task = Task(task_id=info["task_id"]["value"], name=info.get("name", ""), framework_id=framework_id,
                        agent_id=agent_id, executor_id=executor_id, resources=resources,
                        role=next(iter(roles)) if roles else "*", info=info, state=state)
            self._tasks.add(framework, record, task)
            record.hold(resources.unallocate())

    def entries(self) -> list[dict[str, Any]]:
        """What ``agents.json`` keeps of each agent across a restart of the master."""
        return [agent_entry(r.agent.id, r.agent.port, r.agent.configured, r.total)
                for r in self._cluster.agents.values()]

    # -- health (Master::markUnreachable, Master::_reregisterSlave) -----------------
    def start_pings(self) -> None:
        self._ping_timer = self._loop.call_later(self._config.tuning.agent_ping_timeout, self._ping)

    async def stop(self) -> None:
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        grace = self._config.tuning.stop_grace_period
        cluster = self._cluster
        records = list(cluster.agents.values()) + [record for record, _ in cluster.unreachable_agents.values()]
        await asyncio.gather(*[record.agent.stop(grace) for record in records], *self._stops)

    def _ping(self) -> None:
        """Every --agent_ping_timeout: was the last ping answered (a stopped agent answers once it
        continues), then ping again. max_agent_ping_timeouts unanswered in a row: unreachable, 3 to 4
        periods after the agent stopped (3.1 s at 1 s x 3 in trace 12)."""
        tuning = self._config.tuning
        for record in list(self._cluster.agents.values()):
            missed = record.ping_pending and record.agent.paused
            record.missed_pings = record.missed_pings + 1 if missed else 0
            if record.missed_pings >= tuning.max_agent_ping_timeouts:
                self.mark_unreachable(record.agent.id, "health check timed out")
            else:
                record.ping_pending = record.agent.paused
        self._ping_timer = self._loop.call_later(tuning.agent_ping_timeout, self._ping)

    def mark_unreachable(self, agent_id: str, message: str) -> None:
        """The agent is removed and its tasks with it: TASK_LOST (TASK_UNREACHABLE to a PARTITION_AWARE
        framework), REASON_AGENT_REMOVED, then FAILURE (trace 12). Its tasks are kept for its return."""
        record = self._cluster.agents.pop(agent_id)
        now = time.time()
        self._cluster.unreachable_agents[agent_id] = (record, now)
        log.warning("marking agent %s unreachable: %s", agent_id, message)
        for task in list(record.tasks.values()):
            framework = self._cluster.frameworks.get(task.framework_id)
            if framework is None:
                continue
            framework.tasks.pop(task.task_id, None)
            state = "TASK_UNREACHABLE" if framework.partition_aware else "TASK_LOST"
            status = master_status(task.task_id, state, message, "REASON_AGENT_REMOVED", agent_id)
            status["unreachable_time"] = {"nanoseconds": int(now * 1e9)}
            if framework.connected:
                send_update(framework, status)
        self._removed(record)

    def _removed(self, record: AgentRecord) -> None:
        """What every removal of an agent does: its executors go, its offers and inverse offers are
        rescinded, frameworks hear FAILURE (trace 17)."""
        cluster = self._cluster
        agent_id = record.agent.id
        for framework_id, executors in list(record.executors.items()):
            framework = cluster.frameworks.get(framework_id)
            for executor_id in list(executors):
                if framework is not None:
                    framework.executors.pop((agent_id, executor_id), None)
        for offer_id in list(record.offers):
            offer = cluster.offers[offer_id]
            self._offers.forget(offer)
            framework = cluster.frameworks.get(offer.framework_id)
            if framework is not None:
                framework.send({"type": "RESCIND", "rescind": {"offer_id": {"value": offer.id}}})
        self._inverse_offers.set_unavailability(agent_id, None)  # rescinds its inverse offers
        for framework in cluster.connected_frameworks():
            framework.send({"type": "FAILURE", "failure": {"agent_id": {"value": agent_id}}})

    def reregister(self, agent: Agent) -> None:
        """An agent that was marked unreachable is back. Mesos 1.12 re-admits it with the tasks it
        still runs and tells their frameworks their latest state, 'Unreachable agent re-reregistered'
        (REASON_AGENT_REREGISTERED, trace 12); it kills nothing, partition-aware or not: a framework
        that replaced a lost task kills the old one. Frameworks removed meanwhile are shut down there."""
        cluster = self._cluster
        entry = cluster.unreachable_agents.pop(agent.id, None)
        if entry is None:
            return  # never marked: the master saw nothing
        old, _ = entry
        record = cluster.agents[agent.id] = AgentRecord.of(agent)
        running = agent.live_tasks()
        gone = {fid for fid, _ in old.tasks} | set(old.executors)
        gone -= set(cluster.frameworks)
        for framework_id in gone:
            post(self._loop, agent.shutdown_framework, framework_id)
        for framework_id, executors in old.executors.items():
            framework = cluster.frameworks.get(framework_id)
            for executor_id, info in executors.items():
                if framework is None or agent.find_executor(framework_id, executor_id) is None:
                    continue
                record.executors.setdefault(framework_id, {})[executor_id] = info
                framework.executors[(agent.id, executor_id)] = info
                record.hold(Resources.from_json(info.get("resources", [])).unallocate())
        for key, task in old.tasks.items():
            framework = cluster.frameworks.get(task.framework_id)
            state = running.get(key)
            if framework is None or state is None:
                continue  # it ended meanwhile: its own update follows
            task.state = state
            self._tasks.add(framework, record, task)
            record.hold(task.resources.unallocate())
            latest = task.latest_status or {}
            status = master_status(task.task_id, state, "Unreachable agent re-reregistered",
                                   "REASON_AGENT_REREGISTERED", agent.id,
                                   container_status=latest.get("container_status"))
            if framework.connected:
                send_update(framework, status)
        log.warning("agent %s re-registered after being unreachable", agent.id)
        self._readmitted(record)
        self._allocator.trigger()

    # -- operator API ---------------------------------------------------------------
    def mark_gone(self, agent_id: str) -> tuple[int, str]:
        cluster = self._cluster
        if agent_id in cluster.gone_agents:
            return 200, ""
        record = cluster.agents.get(agent_id)
        if record is None:
            return 404, f"Agent '{agent_id}' not found"
        cluster.gone_agents[agent_id] = time.time()
        self._remove(record, "Agent has been marked gone")
        return 200, ""

    def take_down(self, record: AgentRecord, cause: str) -> None:
        """Master::removeSlave for a machine taken DOWN: the agent is told to shut down (it exits)."""
        self._remove(record, f"Agent {record.agent.hostname} removed: {cause}")

    def _remove(self, record: AgentRecord, message: str) -> None:
        """Its tasks end (TASK_LOST, or for a PARTITION_AWARE framework TASK_GONE_BY_OPERATOR), it is
        removed and stopped."""
        cluster = self._cluster
        agent_id = record.agent.id
        del cluster.agents[agent_id]
        for task in list(record.tasks.values()):
            framework = cluster.frameworks.get(task.framework_id)
            if framework is None:
                continue
            if framework.partition_aware:
                state, reason = "TASK_GONE_BY_OPERATOR", "REASON_AGENT_REMOVED_BY_OPERATOR"
            else:
                state, reason = "TASK_LOST", "REASON_AGENT_REMOVED"
            status = master_status(task.task_id, state, message, reason, agent_id, task.executor_id)
            self._tasks.end(task, status)
            if framework.connected:
                send_update(framework, status)
        self._removed(record)
        cluster.deactivated.discard(agent_id)
        cluster.draining.pop(agent_id, None)
        stop = self._loop.create_task(record.agent.stop(self._config.tuning.executor_shutdown_grace_period))
        self._stops.add(stop)
        stop.add_done_callback(self._stops.discard)

    def convert_resources(self, agent_id: str, source: Resources, target: Resources) -> tuple[int, str]:
        """RESERVE_RESOURCES / UNRESERVE_RESOURCES: free ``source`` on the agent becomes ``target``.

        Outstanding offers on the agent are rescinded first, as Mesos does when it needs them.
        """
        record = self._cluster.agents.get(agent_id)
        if record is None:
            return 400, f"Agent '{agent_id}' not found"  # Mesos: BadRequest, unknown agent
        self._offers.remove_all(record.offers, rescind=True)
        if not record.available.contains(source):
            return 409, (f"Invalid operation: {source.stringify('agent')} is not available on agent {agent_id} "
                         f"(free: {record.available.stringify('agent')})")
        record.total = record.total - source + target
        record.available = record.available - source + target
        save_agents(self._config.work_dir, self.entries())  # kept across a restart, as Mesos' agent does
        self._allocator.trigger()
        return 202, ""
