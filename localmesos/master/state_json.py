"""``GET /state`` of the master and of each agent, in Mesos' JSON shapes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..durations import format_duration
from ..resources import Resources

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from ..agent.containers import AgentFramework, AgentTask, Executor
    from .framework import Framework, Task
    from .cluster import AgentRecord, Cluster
    from .master import Master

VERSION = "1.12.0"
BUILD = {"build_date": "", "build_time": 0.0, "build_user": "tfmesos-localmaster"}
AGENT_CAPABILITIES = ("MULTI_ROLE", "HIERARCHICAL_ROLE", "RESERVATION_REFINEMENT", "RESOURCE_PROVIDER",
                      "RESIZE_VOLUME", "AGENT_OPERATION_FEEDBACK", "AGENT_DRAINING", "TASK_RESOURCE_LIMITS")


def version_json() -> dict[str, Any]:
    """GET /version: a purely numeric version, which pymesos needs."""
    return {**BUILD, "version": VERSION}


def master_state(master: "Master") -> dict[str, Any]:
    config = master.config
    cluster = master.cluster
    info = master.master_info()
    leader_info = {"id": info["id"], "pid": info["pid"], "port": info["port"], "hostname": info["hostname"]}
    return {
        "version": VERSION,
        **BUILD,
        "start_time": master.start_time,
        "elected_time": master.start_time,
        "id": info["id"],
        "pid": info["pid"],
        "hostname": info["hostname"],
        "capabilities": [c["type"] for c in info["capabilities"]],
        "activated_slaves": float(sum(1 for agent_id in cluster.agents if agent_id not in cluster.deactivated)),
        "deactivated_slaves": float(sum(1 for agent_id in cluster.agents if agent_id in cluster.deactivated)),
        "unreachable_slaves": float(len(cluster.unreachable_agents)),
        "leader": info["pid"],
        "leader_info": leader_info,
        "flags": {
            "allocation_interval": format_duration(config.allocation_interval),
            "authenticate_http_frameworks": "true" if config.credentials else "false",
            "filter_gpu_resources": "true",
            "hostname": config.host,
            "http_authenticators": "basic",
            "ip": config.host,
            "max_completed_frameworks": str(config.tuning.max_completed_frameworks),
            "max_completed_tasks_per_framework": str(config.tuning.max_completed_tasks_per_framework),
            "min_allocatable_resources": "cpus:0.01|mem:32",
            "port": str(master.port),
            "registry": "in_memory",
            "work_dir": str(config.work_dir),
        },
        "slaves": [_slave(record, cluster) for record in cluster.agents.values()],
        "recovered_slaves": [],
        "frameworks": [_framework(master, f) for f in cluster.frameworks.values()],
        "completed_frameworks": [_framework(master, f) for f in cluster.completed_frameworks],
        "orphan_tasks": [],
        "unregistered_frameworks": [],
    }


def _slave(record: "AgentRecord", cluster: "Cluster") -> dict[str, Any]:
    agent = record.agent
    deactivated = agent.id in cluster.deactivated
    return {
        "id": agent.id,
        "hostname": agent.hostname,
        "port": agent.port,
        "attributes": {},
        "pid": agent.pid,
        "registered_time": record.registered_time,
        "resources": record.total.summary(),
        "used_resources": record.used.summary(),
        "offered_resources": record.offered.summary(),
        "reserved_resources": {role: record.total.filter(lambda k, role=role: k.role == role).summary()
                               for role in sorted(record.total.reserved_roles())},
        "unreserved_resources": record.total.unreserved().summary(),
        "active": not deactivated,
        "deactivated": deactivated,
        "version": VERSION,
        "capabilities": list(AGENT_CAPABILITIES),
        **drain_fields(agent.id, cluster, time_info=False),
    }


def drain_fields(agent_id: str, cluster: "Cluster", time_info: bool) -> dict[str, Any]:
    """``drain_info`` and the estimated drain start (a TimeInfo in GET_AGENTS, seconds in /state)."""
    drain = cluster.draining.get(agent_id)
    if drain is None:
        return {}
    if time_info:
        return {"drain_info": drain.config_json(),
                "estimated_drain_start_time": {"nanoseconds": int(drain.started * 1e9)}}
    return {"drain_info": drain.config_json(), "estimated_drain_start_time_seconds": drain.started}


def _framework(master: "Master", framework: "Framework") -> dict[str, Any]:
    info = framework.info
    used = framework.used_resources()
    offered = framework.offered_resources()
    result: dict[str, Any] = {
        "id": framework.id,
        "name": info.get("name", ""),
        "used_resources": used.summary(),
        "offered_resources": offered.summary(),
        "capabilities": sorted(framework.capabilities, key=_capability_order(info)),
        "hostname": info.get("hostname", ""),
        "webui_url": info.get("webui_url", ""),
        "active": framework.active,
        "connected": framework.connected,
        "recovered": framework.recovered,
        "user": info.get("user", ""),
        "failover_timeout": float(info.get("failover_timeout", 0.0)),
        "checkpoint": bool(info.get("checkpoint", False)),
        "registered_time": framework.registered_time,
        "unregistered_time": framework.unregistered_time,
    }
    if "principal" in info:
        result["principal"] = info["principal"]
    result["resources"] = (used + offered).summary()
    if framework.reregistered_time != framework.registered_time:
        result["reregistered_time"] = framework.reregistered_time
    if framework.has_capability("MULTI_ROLE"):
        result["roles"] = list(info.get("roles", []))
    else:
        result["role"] = info.get("role", "*")
    result["tasks"] = [task_json(t) for t in framework.tasks.values()]
    result["unreachable_tasks"] = []
    result["completed_tasks"] = [task_json(t) for t in framework.completed_tasks]
    result["offers"] = [{
        "id": offer.id,
        "framework_id": offer.framework_id,
        "allocation_info": {"role": offer.role},
        "slave_id": offer.agent_id,
        "resources": offer.resources.summary(),
    } for offer in framework.offers.values()]
    executors = []
    for (agent_id, executor_id), executor_info in framework.executors.items():
        entry = executor_info_json(executor_info)
        entry["slave_id"] = agent_id
        # Extension: where the sandbox is (real Mesos has it only in the agent's /state).
        record = master.cluster.agents.get(agent_id)
        run = record.agent.find_executor(framework.id, executor_id) if record else None
        if run is not None:
            entry["directory"] = str(run.directory)
        executors.append(entry)
    result["executors"] = executors
    if "labels" in info:
        result["labels"] = (info["labels"] or {}).get("labels", [])
    result["offer_constraints"] = {}
    return result


def _capability_order(info: dict[str, Any]):  # type: ignore[no-untyped-def]
    order = [c.get("type") for c in info.get("capabilities", [])]
    return lambda name: order.index(name) if name in order else len(order)


def task_json(task: "Task") -> dict[str, Any]:
    info = task.info
    result: dict[str, Any] = {
        "id": task.task_id,
        "name": task.name,
        "framework_id": task.framework_id,
        "executor_id": task.executor_id or "",
        "slave_id": task.agent_id,
        "state": task.state,
        "resources": task.resources.summary(),
        "role": task.role,
        "statuses": [_status_json(s) for s in task.statuses],
    }
    if "user" in (info.get("command") or {}):
        result["user"] = info["command"]["user"]
    if "labels" in info:
        result["labels"] = (info["labels"] or {}).get("labels", [])
    for key in ("discovery", "container", "health_check"):
        if key in info:
            result[key] = info[key]
    return result


def _status_json(status: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"state": status["state"], "timestamp": status.get("timestamp", 0.0)}
    if "labels" in status:
        entry["labels"] = (status["labels"] or {}).get("labels", [])
    if "container_status" in status:
        container = status["container_status"]
        entry["container_status"] = {k: container[k] for k in ("container_id", "network_infos", "cgroup_info")
                                     if k in container}
    if "healthy" in status:
        entry["healthy"] = status["healthy"]
    return entry


def executor_info_json(info: dict[str, Any]) -> dict[str, Any]:
    resources = Resources.from_json(info.get("resources", []))
    command = info.get("command", {})
    entry: dict[str, Any] = {
        "executor_id": info["executor_id"]["value"],
        "name": info.get("name", ""),
        "framework_id": info.get("framework_id", {}).get("value", ""),
        "command": {
            **({"shell": command["shell"]} if "shell" in command else {}),
            **({"value": command["value"]} if "value" in command else {}),
            "argv": command.get("arguments", []),
            **({"environment": command["environment"]} if "environment" in command else {}),
            "uris": [{"value": u["value"], "executable": bool(u.get("executable", False))}
                     for u in command.get("uris", [])],
        },
        "resources": resources.summary(),
    }
    roles = resources.allocation_roles() - {None}
    if roles:
        entry["role"] = next(iter(roles))
    if "labels" in info:
        entry["labels"] = (info["labels"] or {}).get("labels", [])
    if "type" in info:
        entry["type"] = info["type"]
    return entry


# -- agent /state ---------------------------------------------------------------
def agent_state(agent: "Agent", master_hostname: str) -> dict[str, Any]:
    frameworks, completed = [], []
    for framework, executors, finished in agent.state_executors():
        entry = _agent_framework(framework, executors, finished)
        (completed if framework.terminating else frameworks).append(entry)
    return {
        "version": VERSION,
        **BUILD,
        "start_time": agent.registered_time,
        "id": agent.id,
        "pid": agent.pid,
        "hostname": agent.hostname,
        "capabilities": list(AGENT_CAPABILITIES),
        "resources": agent.total.summary(),
        "attributes": {},
        "master_hostname": master_hostname,
        "flags": {
            "work_dir": str(agent.work_dir),
            "executor_registration_timeout": format_duration(agent.tuning.executor_registration_timeout),
            "executor_shutdown_grace_period": format_duration(agent.tuning.executor_shutdown_grace_period),
            "port": str(agent.port),
        },
        "frameworks": frameworks,
        "completed_frameworks": completed,
    }


def _agent_framework(framework: "AgentFramework", executors: list["Executor"],
                     finished: list["Executor"]) -> dict[str, Any]:
    info = framework.info
    entry: dict[str, Any] = {
        "id": framework.id,
        "name": info.get("name", ""),
        "user": info.get("user", ""),
        "failover_timeout": float(info.get("failover_timeout", 0.0)),
        "checkpoint": bool(info.get("checkpoint", False)),
        "hostname": info.get("hostname", ""),
        "capabilities": [c.get("type") for c in info.get("capabilities", [])],
    }
    if any(c.get("type") == "MULTI_ROLE" for c in info.get("capabilities", [])):
        entry["roles"] = list(info.get("roles", []))
    else:
        entry["role"] = info.get("role", "*")
    entry["executors"] = [_agent_executor(framework.id, e) for e in executors]
    entry["completed_executors"] = [_agent_executor(framework.id, e) for e in finished]
    return entry


def _agent_executor(framework_id: str, executor: "Executor") -> dict[str, Any]:
    resources = Resources.from_json(executor.info.get("resources", []))
    for task in executor.all_tasks():
        resources = resources + Resources.from_json(task.info.get("resources", []))
    entry: dict[str, Any] = {
        "id": executor.executor_id,
        "name": executor.info.get("name", ""),
        "source": executor.info.get("source", ""),
        "container": executor.container_id,
        "directory": str(executor.directory),
        "resources": resources.summary(),
        "tasks": [_agent_task(framework_id, executor, t) for t in executor.launched.values()],
        "queued_tasks": [_agent_task(framework_id, executor, t) for t in executor.queued.values()],
        "completed_tasks": [_agent_task(framework_id, executor, t)
                            for t in (*executor.terminated.values(), *executor.completed)],
    }
    if "type" in executor.info:
        entry["type"] = executor.info["type"]
    if "labels" in executor.info:
        entry["labels"] = (executor.info["labels"] or {}).get("labels", [])
    return entry


def _agent_task(framework_id: str, executor: "Executor", task: "AgentTask") -> dict[str, Any]:
    info = task.info
    return {
        "id": task.task_id,
        "name": info.get("name", ""),
        "framework_id": framework_id,
        "executor_id": "" if executor.command_task else executor.executor_id,
        "slave_id": info.get("agent_id", {}).get("value", ""),
        "state": task.state,
        "resources": Resources.from_json(info.get("resources", [])).summary(),
        "statuses": [],
    }

