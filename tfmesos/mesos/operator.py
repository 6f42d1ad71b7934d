"""Read-only questions to a Mesos master's HTTP endpoints (``/state``, operator API ``/api/v1``).

Used for what the scheduler API does not tell a framework: which other frameworks are live,
its role's quota, and the agents' totals and usage (does a job fit the cluster at all; what holds it). Every failure is reported as None: these answers only improve messages
and checks, they never decide a job's fate on their own.
"""
from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from typing import Any

from ..core.placement.fit import Agent, Framework
from ..core.spec import add

log = logging.getLogger("tfmesos.mesos.operator")

# The FrameworkInfo label that marks a tfmesos job in the master's state (core/placement/queue.py's older_waiting).
QUEUE_LABEL = "tfmesos.job"


def _request(master: str, path: str, principal: str, secret: str, body: dict[str, Any] | None,
             timeout: float) -> Any:
    if master.startswith("zk://"):
        return None  # the leader is found by pymesos; these checks are skipped there
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://{master}{path}", data=data)
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json")
    if principal and secret:
        token = base64.b64encode(f"{principal}:{secret}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        log.warning("could not read %s%s: %s", master, path, exc)
        return None


def master_state(master: str, principal: str = "", secret: str = "", timeout: float = 5.0) -> dict[str, Any] | None:
    return _request(master, "/state", principal, secret, None, timeout)


def role_quota(master: str, role: str, principal: str = "", secret: str = "",
               timeout: float = 2.0) -> tuple[dict[str, float], dict[str, float]] | None:
    """(limits, allocated) scalars of ``role`` from GET_QUOTA and GET_ROLES; None without a limit."""
    quota = _request(master, "/api/v1", principal, secret, {"type": "GET_QUOTA"}, timeout)
    configs = ((quota or {}).get("get_quota", {}).get("status", {}).get("configs", []))
    config = next((c for c in configs if c.get("role") == role), None)
    if not config or not config.get("limits"):
        return None
    limits = {name: float(v.get("value", 0.0)) for name, v in config["limits"].items()}
    roles = _request(master, "/api/v1", principal, secret, {"type": "GET_ROLES"}, timeout)
    allocated: dict[str, float] = {}
    for entry in (roles or {}).get("get_roles", {}).get("roles", []):
        if entry.get("name") == role:
            for resource in entry.get("resources", []):
                if resource.get("type") == "SCALAR":
                    name = resource["name"]
                    allocated[name] = allocated.get(name, 0.0) + float(resource["scalar"]["value"])
    return limits, allocated


def _amounts(summary: Any) -> dict[str, float]:
    """The scalars of a ``/state`` resources summary ({"cpus": 2.0, "ports": "[...]", ...})."""
    if not isinstance(summary, dict):
        return {}
    return {name: float(v) for name, v in summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def _leaving(agent: dict[str, Any]) -> str:
    """Whether nothing may be placed on an agent of ``/state`` (traces 13 and 15): "draining"
    (``drain_info`` DRAINING, then DRAINED), "deactivated", or "". (A deactivated agent shows
    ``active: false``; the master has no event for either: it is polled.)"""
    if (agent.get("drain_info") or {}).get("state") in ("DRAINING", "DRAINED"):
        return "draining"
    return "deactivated" if agent.get("deactivated") else ""


def cluster_state(master: str, principal: str = "", secret: str = "",
                  timeout: float = 2.0) -> tuple[list[Agent], list[Framework]] | None:
    """The agents (totals, used, offered, reservations per role) and the frameworks (id, name, role,
    used + offered) from the master's ``/state``, which the embedded master and Mesos both serve
    (the operator API's GET_AGENTS carries the same agent figures, and nothing of the frameworks').
    Agents draining or deactivated are listed with ``leaving`` saying so."""
    state = _request(master, "/state", principal, secret, None, timeout)
    if not isinstance(state, dict):
        return None
    agents = [Agent(str(s.get("id", "")), str(s.get("hostname", "")), _amounts(s.get("resources")),
                    _amounts(s.get("used_resources")), _amounts(s.get("offered_resources")),
                    {role: _amounts(r) for role, r in (s.get("reserved_resources") or {}).items()}, _leaving(s))
              for s in state.get("slaves", []) if s.get("active", True) or _leaving(s)]
    frameworks = []
    for f in state.get("frameworks", []):
        used, offered = _amounts(f.get("used_resources")), _amounts(f.get("offered_resources"))
        role = f.get("role") or ",".join(f.get("roles") or ()) or "*"
        labels = {label.get("key") for label in f.get("labels") or () if isinstance(label, dict)}
        frameworks.append(Framework(str(f.get("id", "")), str(f.get("name", "")), role,
                                    add(dict(used), offered),
                                    float(f.get("registered_time") or 0.0),
                                    QUEUE_LABEL in labels and bool(f.get("active", True)) and not f.get("tasks")))
    return agents, frameworks
