"""How a job's success is said: the cause names the tasks whose end decided it, as the success
rule counts them ('chief:0 finished', 'all 3 workers finished'), never one task of several."""
from __future__ import annotations

from typing import Sequence

from .spec import TaskKey


def success_cause(keys: Sequence[TaskKey]) -> str:
    """The cause of a success decided by ``keys`` (the spec's success tasks, all finished)."""
    roles: dict[str, list[int]] = {}
    for key in keys:
        roles.setdefault(key.role, []).append(key.index)
    parts = [f"{role}:{indexes[0]}" if len(indexes) == 1 else f"{len(indexes)} {role}s"
             for role, indexes in roles.items()]
    return ("all " if len(parts) == 1 and len(keys) > 1 else "") + " and ".join(parts) + " finished"
