"""``POST /api/v1`` on the master (operator API).

Emulated: GET_AGENTS; MARK_AGENT_GONE; DRAIN_AGENT / DEACTIVATE_AGENT / REACTIVATE_AGENT; the
maintenance calls (``maintenance_api``); RESERVE_RESOURCES / UNRESERVE_RESOURCES (dynamic
reservations); GET_QUOTA / UPDATE_QUOTA; GET_ROLES; GET_WEIGHTS / UPDATE_WEIGHTS. Answers follow
traces 11 and 13-17.
"""
from __future__ import annotations

from typing import Any

from ..http.calls import decode_call, method_not_allowed
from ..config import QuotaConfig
from ..http.server import Request, Response
from .agents_json import get_agents
from .maintenance_api import MaintenanceApi
from .master import Master
from ..resources import ResourceError, Resources
from ..roles import validate_role
from .usage import cluster_totals, role_allocations

# master::Call types real Mesos implements.
_KNOWN_TYPES = {
    "GET_HEALTH", "GET_FLAGS", "GET_VERSION", "GET_METRICS", "GET_LOGGING_LEVEL", "SET_LOGGING_LEVEL",
    "LIST_FILES", "READ_FILE", "GET_STATE", "GET_AGENTS", "GET_FRAMEWORKS", "GET_EXECUTORS",
    "GET_OPERATIONS", "GET_TASKS", "GET_ROLES", "GET_WEIGHTS", "UPDATE_WEIGHTS", "GET_MASTER",
    "SUBSCRIBE", "RESERVE_RESOURCES", "UNRESERVE_RESOURCES", "CREATE_VOLUMES", "DESTROY_VOLUMES",
    "GROW_VOLUME", "SHRINK_VOLUME", "GET_MAINTENANCE_STATUS", "GET_MAINTENANCE_SCHEDULE",
    "UPDATE_MAINTENANCE_SCHEDULE", "START_MAINTENANCE", "STOP_MAINTENANCE", "DRAIN_AGENT",
    "DEACTIVATE_AGENT", "REACTIVATE_AGENT", "GET_QUOTA", "UPDATE_QUOTA", "SET_QUOTA", "REMOVE_QUOTA",
    "TEARDOWN", "MARK_AGENT_GONE",
}
_NEEDS = {"MARK_AGENT_GONE": "mark_agent_gone", "RESERVE_RESOURCES": "reserve_resources",
          "UNRESERVE_RESOURCES": "unreserve_resources", "UPDATE_QUOTA": "update_quota",
          "UPDATE_WEIGHTS": "update_weights", "DRAIN_AGENT": "drain_agent", "DEACTIVATE_AGENT": "deactivate_agent",
          "REACTIVATE_AGENT": "reactivate_agent", "UPDATE_MAINTENANCE_SCHEDULE": "update_maintenance_schedule",
          "START_MAINTENANCE": "start_maintenance", "STOP_MAINTENANCE": "stop_maintenance"}


class OperatorApi:
    def __init__(self, master: Master) -> None:
        self._master = master
        self._maintenance = MaintenanceApi(master.maintenance)

    def handle(self, request: Request) -> Response:
        if request.method != "POST":
            return method_not_allowed(request)
        call = decode_call(request, "OperatorCall")
        if isinstance(call, Response):
            return call
        kind = call.get("type")
        if kind not in _KNOWN_TYPES:
            return Response.text(400, "Failed to validate master::Call: Expecting 'type' to be present")
        field = _NEEDS.get(kind)
        if field is not None and field not in call:
            return Response.text(400, f"Failed to validate master::Call: Expecting '{field}' to be present")
        handler = getattr(self, "_" + kind.lower(), None)
        if handler is None:
            return Response.text(501, f"{kind} is not implemented by the embedded master")
        return handler(call[field] if field else {})

    # -- agents -------------------------------------------------------------
    def _get_agents(self, _: dict[str, Any]) -> Response:
        return Response.json(200, get_agents(self._master))

    def _mark_agent_gone(self, body: dict[str, Any]) -> Response:
        return _answer(self._master.agent_book.mark_gone(body["agent_id"]["value"]))

    def _drain_agent(self, body: dict[str, Any]) -> Response:
        grace = body.get("max_grace_period")
        grace_ns = None if grace is None else grace.get("seconds", 0) * 1_000_000_000 + grace.get("nanos", 0)
        return _answer(self._master.drains.drain(body["agent_id"]["value"], grace_ns, body.get("mark_gone", False)))

    def _deactivate_agent(self, body: dict[str, Any]) -> Response:
        return _answer(self._master.drains.deactivate(body["agent_id"]["value"]))

    def _reactivate_agent(self, body: dict[str, Any]) -> Response:
        return _answer(self._master.drains.reactivate(body["agent_id"]["value"]))

    # -- maintenance ----------------------------------------------------------
    def _get_maintenance_schedule(self, _: dict[str, Any]) -> Response:
        return self._maintenance.get_schedule()

    def _update_maintenance_schedule(self, body: dict[str, Any]) -> Response:
        return self._maintenance.update_schedule(body)

    def _get_maintenance_status(self, _: dict[str, Any]) -> Response:
        return self._maintenance.get_status()

    def _start_maintenance(self, body: dict[str, Any]) -> Response:
        return self._maintenance.start(body)

    def _stop_maintenance(self, body: dict[str, Any]) -> Response:
        return self._maintenance.stop(body)

    def _reserve_resources(self, body: dict[str, Any]) -> Response:
        return self._change_reservation(body, reserve=True)

    def _unreserve_resources(self, body: dict[str, Any]) -> Response:
        return self._change_reservation(body, reserve=False)

    def _change_reservation(self, body: dict[str, Any], reserve: bool) -> Response:
        """Dynamic reservations: unreserved <-> reserved to a role, on an agent's free resources."""
        try:
            wanted = Resources.from_json(body.get("resources", []))
        except ResourceError as exc:
            return Response.text(400, f"Invalid resources: {exc}")
        if wanted.empty():
            return Response.text(400, "Invalid resources: none given")
        for key, _ in wanted:
            if key.role == "*" or key.allocation_role is not None:
                return Response.text(400, "Invalid resources: expected dynamically reserved resources "
                                          "(reservations with type DYNAMIC and a role), without allocation_info")
            error = validate_role(key.role)
            if error:
                return Response.text(400, f"Invalid reservation: {error}")
        source = wanted.pop_reservation() if reserve else wanted
        target = wanted if reserve else wanted.pop_reservation()
        status, message = self._master.agent_book.convert_resources(body["agent_id"]["value"], source, target)
        return Response.empty(202) if status == 202 else Response.text(status, message)

    # -- quota and weights --------------------------------------------------
    def _get_quota(self, _: dict[str, Any]) -> Response:
        quotas = sorted(self._master.cluster.quotas.items())
        status: dict[str, Any] = {}
        infos = [{"role": role, "guarantee": _scalar_resources(q.guarantees)} for role, q in quotas if q.guarantees]
        if infos:
            status["infos"] = infos
        if quotas:
            status["configs"] = [_quota_config(role, q) for role, q in quotas]
        return Response.json(200, {"type": "GET_QUOTA", "get_quota": {"status": status}})

    def _update_quota(self, body: dict[str, Any]) -> Response:
        updates: dict[str, QuotaConfig] = {}
        for config in body.get("quota_configs", []):
            role = config["role"]
            error = validate_role(role) or ("Invalid role: quota cannot be set for role '*'" if role == "*" else None)
            try:
                guarantees = _quantities(config.get("guarantees"), "guarantees")
                limits = _quantities(config.get("limits"), "limits")
            except ValueError as exc:
                error = error or str(exc)
            if error:
                return Response.text(400, f"Invalid QuotaConfig: {error}")
            over = [n for n, amount in guarantees.items() if limits and n in limits and amount > limits[n]]
            if over:
                return Response.text(400, f"Invalid QuotaConfig: role '{role}' has guarantees greater than its "
                                          f"limits for {', '.join(sorted(over))}")
            updates[role] = QuotaConfig(guarantees, limits)
        if not body.get("force"):
            totals = cluster_totals(self._master.cluster.agents.values())
            guaranteed: dict[str, float] = {}
            for role, quota in {**self._master.cluster.quotas, **updates}.items():
                for name, amount in quota.guarantees.items():
                    guaranteed[name] = guaranteed.get(name, 0.0) + amount
            short = [n for n, amount in guaranteed.items() if amount > totals.get(n, 0.0) + 1e-9]
            if short:
                return Response.text(400, "Invalid QuotaConfig: total quota guarantees exceed the cluster's "
                                          f"capacity for {', '.join(sorted(short))} (use 'force' to set anyway)")
        for role, quota in updates.items():
            if quota.guarantees or quota.limits:
                self._master.cluster.quotas[role] = quota
            else:
                self._master.cluster.quotas.pop(role, None)
        self._master.allocator.trigger()
        return Response.empty(200)

    def _get_weights(self, _: dict[str, Any]) -> Response:
        infos = [{"weight": w, "role": role} for role, w in sorted(self._master.cluster.weights.items())]
        return Response.json(200, {"type": "GET_WEIGHTS", "get_weights": {"weight_infos": infos}})

    def _update_weights(self, body: dict[str, Any]) -> Response:
        infos = body.get("weight_infos", [])
        for info in infos:
            role = info.get("role", "")
            error = validate_role(role) if role else "Role names cannot be the empty string"
            if error or not info["weight"] > 0:
                return Response.text(400, f"Invalid weight for role '{role}': "
                                          f"{error or 'weight must be greater than zero'}")
        for info in infos:
            self._master.cluster.weights[info["role"]] = float(info["weight"])
        self._master.allocator.trigger()
        return Response.empty(200)

    def _get_roles(self, _: dict[str, Any]) -> Response:
        cluster = self._master.cluster
        frameworks: dict[str, list[str]] = {}
        for framework in cluster.frameworks.values():
            for role in framework.roles:
                frameworks.setdefault(role, []).append(framework.id)
        allocated = role_allocations(cluster.frameworks)
        reserved = {role for record in cluster.agents.values() for role in record.total.reserved_roles()}
        names = (set(frameworks) | set(cluster.weights) | set(cluster.quotas) | reserved | set(allocated)) - {"*"}
        roles = []
        for name in sorted(names):
            entry: dict[str, Any] = {"name": name, "weight": cluster.weights.get(name, 1.0)}
            if frameworks.get(name):
                entry["frameworks"] = [{"value": f} for f in frameworks[name]]
            if allocated.get(name):
                entry["resources"] = _scalar_resources(allocated[name])
            roles.append(entry)
        return Response.json(200, {"type": "GET_ROLES", "get_roles": {"roles": roles}})


def _answer(outcome: tuple[int, str]) -> Response:
    """(200, "") is an empty 200; anything else Mesos' refusal as text."""
    status, message = outcome
    return Response.empty(status) if status == 200 else Response.text(status, message)


def _scalar_resources(amounts: dict[str, float]) -> list[dict[str, Any]]:
    return [{"name": n, "type": "SCALAR", "scalar": {"value": float(v)}} for n, v in sorted(amounts.items())]


def _quota_config(role: str, quota: QuotaConfig) -> dict[str, Any]:
    config: dict[str, Any] = {"role": role}
    if quota.guarantees:
        config["guarantees"] = {n: {"value": float(v)} for n, v in sorted(quota.guarantees.items())}
    if quota.limits:
        config["limits"] = {n: {"value": float(v)} for n, v in sorted(quota.limits.items())}
    return config


def _quantities(raw: Any, field: str) -> dict[str, float]:
    """QuotaConfig's ``map<string, Value.Scalar>``."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f"'{field}' must map resource names to {{\"value\": number}}")
    result: dict[str, float] = {}
    for name, scalar in raw.items():
        value = scalar.get("value") if isinstance(scalar, dict) else None
        if not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"'{field}.{name}' must be {{\"value\": number >= 0}}")
        result[name] = float(value)
    return result
