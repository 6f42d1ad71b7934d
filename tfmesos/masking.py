"""Environment values are secrets until proven otherwise: shown as their names only.

Used by ``--dry-run``, by every message that could echo an ``env`` entry, and before the job's
options are persisted (the state keeps a digest of the full options, not the values).
"""
from __future__ import annotations

import copy
from typing import Any

HIDDEN = "<hidden>"


def mask_entry(entry: Any) -> Any:
    """``NAME=value`` as ``NAME=<hidden>``; anything else (not an env entry) as a placeholder."""
    if isinstance(entry, str) and "=" in entry:
        return f"{entry.split('=', 1)[0]}={HIDDEN}"
    if isinstance(entry, list):  # a whole env list echoed in a message
        return [mask_entry(e) for e in entry]
    if isinstance(entry, dict):  # env written as a mapping by mistake
        return {key: HIDDEN for key in entry}
    return HIDDEN if isinstance(entry, str) else entry


def is_env_path(path: list[Any]) -> bool:
    """``$.job.env...`` or ``$.roles.<role>.env...``"""
    return (path[:2] == ["job", "env"]) or (len(path) >= 3 and path[0] == "roles" and path[2] == "env")


def mask_options(options: dict[str, Any]) -> dict[str, Any]:
    """A copy of resolved options with every ``job.env`` and role ``env`` value hidden."""
    out = copy.deepcopy(options)
    job = out.get("job")
    if isinstance(job, dict) and isinstance(job.get("env"), list):
        job["env"] = [mask_entry(e) for e in job["env"]]
    roles = out.get("roles")
    if isinstance(roles, dict):
        for role in roles.values():
            if isinstance(role, dict) and isinstance(role.get("env"), list):
                role["env"] = [mask_entry(e) for e in role["env"]]
    return out


def unmask_options(masked: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``masked`` (``mask_options``') with each hidden env value taken, by name, from the same list
    of ``given`` (the job's env, or the same role's); a value ``given`` lacks stays hidden."""
    out = copy.deepcopy(masked)

    def values(env: Any) -> dict[str, str]:
        return dict(e.split("=", 1) for e in env if isinstance(e, str) and "=" in e) if isinstance(env, list) else {}

    def filled(env: Any, known: dict[str, str]) -> Any:
        if not isinstance(env, list):
            return env
        return [f"{name}={known[name]}" if value == HIDDEN and name in known else f"{name}={value}"
                for name, value in (e.split("=", 1) if isinstance(e, str) and "=" in e else (e, HIDDEN) for e in env)]

    if isinstance(out.get("job"), dict):
        out["job"]["env"] = filled(out["job"].get("env"), values((given.get("job") or {}).get("env")))
    for name, role in (out.get("roles") or {}).items():
        if isinstance(role, dict):
            role["env"] = filled(role.get("env"), values(((given.get("roles") or {}).get(name) or {}).get("env")))
    return out


def env_of(options: dict[str, Any]) -> dict[str, Any]:
    """The env lists alone of resolved options (``job.env``, each role's ``env``), values and all,
    in the options' own shape: what ``unmask_options`` takes as ``given``."""
    roles = options.get("roles") if isinstance(options.get("roles"), dict) else {}
    return {"job": {"env": list((options.get("job") or {}).get("env") or [])},
            "roles": {name: {"env": list(role.get("env") or [])} for name, role in roles.items()
                      if isinstance(role, dict) and role.get("env")}}
