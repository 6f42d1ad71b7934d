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
