"""One live job per service name on a master.

Two jobs with the same ``service.name`` would share a state path (ZooKeeper node or state
directory), task id prefix and checkpoint default, so a second one could adopt, kill or
reconcile the first one's tasks. Before subscribing, ``tfmesos run`` asks the master which
frameworks are connected and refuses to start a second job under a name already running.
"""
from __future__ import annotations

from typing import Any

from ..mesos.operator import master_state
from ..options.load import OptionsError


def running_frameworks(master: str, principal: str = "", secret: str = "") -> list[dict[str, Any]]:
    """The master's connected frameworks, or [] when it cannot tell us."""
    state = master_state(master, principal, secret)
    return [f for f in (state or {}).get("frameworks", []) if f.get("active")]


def refuse_duplicate(frameworks: list[dict[str, Any]], name: str, own_framework_id: str | None, master: str) -> None:
    """OptionsError naming the running job when another live framework already has ``name``."""
    for framework in frameworks:
        if framework.get("name") != name or framework.get("id") == own_framework_id:
            continue
        roles = framework.get("roles") or [framework.get("role", "*")]
        principal = framework.get("principal")
        who = f"role {', '.join(roles)}" + (f", principal {principal}" if principal else "")
        raise OptionsError([
            f"$.service.name: a job named {name!r} is already running on {master} as framework "
            f"{framework.get('id')} ({who}): expected another service.name, or wait until that job ends"])
