"""Validation with Mesos' messages (src/master/validation.cpp): FrameworkInfo on SUBSCRIBE, ACCEPT calls.

Offer-level errors make every task of the call TASK_LOST / REASON_INVALID_OFFERS;
task-level errors make that task alone TASK_ERROR / REASON_TASK_INVALID.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Protocol

from .framework import Framework, Offer
from ..http.protojson import b64decode
from ..resources import ResourceError, Resources
from ..roles import validate_role

NAME_MAX = 255


class MasterView(Protocol):
    offers: dict[str, Offer]


def validate_offers(offer_ids: list[str], master: MasterView, framework: Framework) -> str | None:
    if not offer_ids:
        return "No offers specified"
    seen: set[str] = set()
    for offer_id in offer_ids:
        if offer_id in seen:
            return f"Duplicate offer {offer_id} in offer list"
        seen.add(offer_id)
    for offer_id in offer_ids:
        if offer_id not in master.offers:
            return f"Offer {offer_id} is no longer valid"
    for offer_id in offer_ids:
        offer = master.offers[offer_id]
        if offer.framework_id != framework.id:
            return (f"Offer {offer_id} has invalid framework {offer.framework_id} "
                    f"while framework {framework.id} is expected")
    role: str | None = None
    for offer_id in offer_ids:
        offer = master.offers[offer_id]
        if role is None:
            role = offer.role
        elif offer.role != role:
            return (f"Aggregated offers must be allocated to the same role. Offer {offer_id} uses role "
                    f"'{offer.role} but another is using role '{role}")
    agent_id: str | None = None
    for offer_id in offer_ids:
        offer = master.offers[offer_id]
        if agent_id is None:
            agent_id = offer.agent_id
        elif offer.agent_id != agent_id:
            return (f"Aggregated offers must belong to one single agent. Offer {offer_id} uses agent "
                    f"{offer.agent_id} and agent {agent_id}")
    return None


def validate_id(value: str) -> str | None:
    """common::validation::validateID."""
    if not value:
        return "ID must not be empty"
    if len(value) > NAME_MAX:
        return f"ID must not be greater than {NAME_MAX} characters"
    if value in (".", ".."):
        return f"'{value}' is disallowed"
    if any(ord(c) < 32 or ord(c) == 127 or c in "/\\" for c in value):
        return f"'{value}' contains invalid characters"
    return None


def _gpus_error(resources: Resources) -> str | None:
    gpus = resources.scalar("gpus")
    if int(round(gpus * 1000)) % 1000 != 0:
        return "Invalid 'gpus' resource: The 'gpus' resource must be an unsigned integer"
    return None


def _resources(raw: list[dict[str, Any]]) -> tuple[Resources | None, str | None]:
    try:
        resources = Resources.from_json(raw)
    except ResourceError as error:
        return None, f"Invalid resources: {error}"
    gpus = _gpus_error(resources)
    if gpus:
        return None, gpus
    return resources, None


def _non_negative_duration(value: dict[str, Any] | None) -> bool:
    return value is None or int(value.get("nanoseconds", 0)) >= 0


def secret_error(secret: dict[str, Any]) -> str | None:
    """common::validation::validateSecret (a Secret without a type, UNKNOWN, passes)."""
    kind = secret.get("type", "UNKNOWN")
    if kind == "REFERENCE":
        if "reference" not in secret:
            return "Secret of type REFERENCE must have the 'reference' field set"
        if "value" in secret:
            return ("Secret '" + secret["reference"].get("name", "") + "' of type REFERENCE must not have the "
                    "'value' field set")
    elif kind == "VALUE":
        if "value" not in secret:
            return "Secret of type VALUE must have the 'value' field set"
        if "reference" in secret:
            return "Secret of type VALUE must not have the 'reference' field set"
    return None


def _environment_error(command: dict[str, Any]) -> str | None:
    for variable in (command.get("environment") or {}).get("variables", []):
        kind = variable.get("type", "VALUE")
        if kind == "SECRET":
            if "secret" not in variable:
                return "Environment variable '" + variable["name"] + "' of type 'SECRET' must have a secret set"
            if "value" in variable:
                return ("Environment variable '" + variable["name"] + "' of type 'SECRET' must not have a "
                        "value set")
            error = secret_error(variable["secret"])
            if error:
                return "Environment variable '" + variable["name"] + "' specifies an invalid secret: " + error
            if b"\0" in b64decode((variable["secret"].get("value") or {}).get("data", "")):
                return ("Environment variable '" + variable["name"] + "' specifies a secret containing null bytes, "
                        "which is not allowed in the environment")
        elif kind == "UNKNOWN":
            return "Environment variable of type 'UNKNOWN' is not allowed"
        else:
            if "secret" in variable:
                return ("Environment variable '" + variable["name"] + "' of type 'VALUE' must not have a "
                        "secret set")
            if "value" not in variable:
                return "Environment variable '" + variable["name"] + "' of type 'VALUE' must have a value set"
    return None


_VOLUME_SOURCES = {"DOCKER_VOLUME": "docker_volume", "HOST_PATH": "host_path", "SANDBOX_PATH": "sandbox_path",
                   "SECRET": "secret", "CSI_VOLUME": "csi_volume"}


def _container_error(container: dict[str, Any]) -> str | None:
    """common::validation::validateContainerInfo's volume checks (validateVolume)."""
    for volume in container.get("volumes", []):
        if sum(key in volume for key in ("host_path", "image", "source")) != 1:
            return "Invalid volume: Only one of them should be set: 'host_path', 'image' and 'source'"
        if "source" in volume:
            kind = volume["source"].get("type", "UNKNOWN")
            field = _VOLUME_SOURCES.get(kind)
            if field is None:
                return "Invalid volume: 'source.type' is unknown"
            if field not in volume["source"]:
                return f"Invalid volume: 'source.{field}' is not set for {kind} volume"
            if kind == "CSI_VOLUME" and "static_provisioning" not in volume["source"]["csi_volume"]:
                return "Invalid volume: 'source.csi_volume.static_provisioning' is not set for CSI volume"
    return None


def validate_task(task: dict[str, Any], framework: Framework, agent_id: str, available: Resources,
                  existing_executor: Callable[[str], dict[str, Any] | None]) -> tuple[str | None, Resources]:
    """Validate one TaskInfo against the offer remainder.

    Returns (error, consumed resources).  ``existing_executor(executor_id)``
    gives the ExecutorInfo of an executor already running on the agent.
    """
    task_id = task["task_id"]["value"]
    error = validate_id(task_id)
    if error:
        return f"Task has an invalid TaskID: {error}", Resources()
    if task_id in framework.tasks:
        return f"Task has duplicate ID: {task_id}", Resources()
    if task["agent_id"]["value"] != agent_id:
        return f"Task uses invalid agent {task['agent_id']['value']} while agent {agent_id} is expected", Resources()
    if not _non_negative_duration((task.get("kill_policy") or {}).get("grace_period")):
        return "Task's 'kill_policy.grace_period' must be non-negative", Resources()
    if not _non_negative_duration(task.get("max_completion_time")):
        return "Task's `max_completion_time` must be non-negative", Resources()
    if not task.get("resources"):
        return "Task uses no resources", Resources()
    resources, error = _resources(task["resources"])
    if error or resources is None:
        return f"Task uses invalid resources: {error}", Resources()
    if len(resources.allocation_roles()) > 1:
        roles = sorted(r or "" for r in resources.allocation_roles())
        return ("Invalid task resources: The resources have multiple allocation roles ("
                + ", ".join(f"'{r}'" for r in roles) + ") but only one allocation role is allowed"), Resources()
    if "command" in task:
        error = _environment_error(task["command"])
        if error:
            return f"Task's `CommandInfo` is invalid: {error}", Resources()
    if "container" in task:
        error = _container_error(task["container"])
        if error:
            return f"Task's `ContainerInfo` is invalid: {error}", Resources()

    if ("executor" in task) == ("command" in task):
        return ("Task should have at least one (but not both) of CommandInfo or ExecutorInfo present",
                Resources())
    total = resources
    if "executor" in task:
        executor = task["executor"]
        executor_id = executor["executor_id"]["value"]
        if executor.get("type") == "DEFAULT" and "command" in executor:
            return "'ExecutorInfo.command' must not be set for 'DEFAULT' executor", Resources()
        if executor.get("type") == "CUSTOM" and "command" not in executor:
            return "'ExecutorInfo.command' must be set for 'CUSTOM' executor", Resources()
        error = validate_id(executor_id)
        if error:
            return error, Resources()
        if not _non_negative_duration(executor.get("shutdown_grace_period")):
            return "ExecutorInfo's 'shutdown_grace_period' must be non-negative", Resources()
        if "command" in executor:
            error = _environment_error(executor["command"])
            if error:
                return f"Executor's `CommandInfo` is invalid: {error}", Resources()
        if "container" in executor:
            error = _container_error(executor["container"])
            if error:
                return f"Executor's `ContainerInfo` is invalid: {error}", Resources()
        if executor.get("framework_id", {}).get("value") != framework.id:
            actual = executor.get("framework_id", {}).get("value", "")
            return f"ExecutorInfo has an invalid FrameworkID (Actual: {actual} vs Expected: {framework.id})", \
                Resources()
        executor_resources, error = _resources(executor.get("resources", []))
        if error or executor_resources is None:
            return f"Executor uses invalid resources: {error}", Resources()
        existing = existing_executor(executor_id)
        if existing is not None and _canonical(existing) != _canonical(executor):
            return ("ExecutorInfo is not compatible with existing ExecutorInfo with same ExecutorID.\n"
                    "------------------------------------------------------------\n"
                    "Existing ExecutorInfo:\n" + _canonical(existing) + "\n"
                    "------------------------------------------------------------\n"
                    "ExecutorInfo:\n" + _canonical(executor) + "\n"
                    "------------------------------------------------------------\n"), Resources()
        if executor.get("type", "CUSTOM") not in ("CUSTOM",) and "type" in executor:
            return "'ExecutorInfo.type' must be 'CUSTOM'", Resources()
        if "command" not in executor:
            return "'ExecutorInfo.command' must be set", Resources()
        if existing is None:
            total = total + executor_resources
    if not available.contains(total):
        return (f"Total resources {total.stringify('given')} required by task and its executor is more than "
                f"available {available.stringify('offer')}"), Resources()
    return None, total


def _canonical(executor: dict[str, Any]) -> str:
    """Compare ExecutorInfos field by field (resources by value, not spelling)."""
    value = dict(executor)
    if "resources" in value:
        value["resources"] = Resources.from_json(value["resources"]).unallocate().to_json("refined")
    if "data" in value:
        value["data"] = b64decode(value["data"]).hex()
    return json.dumps(value, sort_keys=True)


def validate_framework(info: dict[str, Any]) -> str | None:
    """validation::framework::validate (roles, id, failover_timeout)."""
    multi_role = any(c.get("type") == "MULTI_ROLE" for c in info.get("capabilities", []))
    if multi_role and "role" in info:
        return "'FrameworkInfo.role' must not be set when the framework is MULTI_ROLE capable"
    if not multi_role and info.get("roles"):
        return "'FrameworkInfo.roles' must not be set when the framework is not MULTI_ROLE capable"
    if multi_role:
        roles = info.get("roles", [])
        duplicates = {r for r in roles if roles.count(r) > 1}
        if duplicates:
            return "'FrameworkInfo.roles' contains duplicate items: " + "{ " + ", ".join(sorted(duplicates)) + " }"
        for role in roles:
            error = validate_role(role)
            if error:
                return f"'FrameworkInfo.roles' contains invalid role: {error}"
    else:
        error = validate_role(info.get("role", "*"))
        if error:
            return f"'FrameworkInfo.role' is not a valid role: {error}"
    framework_id = info.get("id", {}).get("value", "")
    if framework_id:
        error = validate_id(framework_id)
        if error:
            return error
    timeout = info.get("failover_timeout", 0.0)
    if timeout != timeout or abs(timeout) > 2 ** 63 / 1e9:  # Duration::create fails
        return f"The framework failover_timeout ({timeout:g}) is invalid"
    return None
