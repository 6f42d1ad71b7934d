"""Read-only questions to a Mesos master's HTTP endpoints (``/state``, operator API ``/api/v1``).

Used for what the scheduler API does not tell a framework: which other frameworks are live,
and its role's quota. Every failure is reported as None: these answers only improve messages
and checks, they never decide a job's fate on their own.
"""
from __future__ import annotations

import base64
import json
import logging
import urllib.error
import urllib.request
from typing import Any

log = logging.getLogger("tfmesos.mesos.operator")


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
