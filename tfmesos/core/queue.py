"""A job that fits the cluster but not now waits, queued: what it says, and how long it may wait.

A job is queued when its placement is held back and the master's figures say it fits the cluster
as built (core/fit.py) or a Mesos role's quota holds it (core/quota.py). Then the placement timeout
ends one attempt only: held offers go back and a new attempt gathers again, with no failure; only
``policies.queue_timeout_seconds`` (0: no bound) ends the wait with a failure.

A gang that has waited long holds its partial offers longer (``hold_limit``), up to
``HOLD_MAX_SECONDS``: small jobs then cannot take every freed resource from under it for ever,
and two gangs that each hold part of the cluster still give way to each other within that bound.
"""
from __future__ import annotations

from typing import Any, Mapping

from .fit import NAMES, amounts

# A queued gang's hold grows by its wait (one second more per AGING_FACTOR seconds queued), up to this.
HOLD_MAX_SECONDS = 60.0
AGING_FACTOR = 4.0


def queued_reason(need: Mapping[str, float], figures: Mapping[str, Any]) -> str:
    """'queued: needs ...; free ... of ...; held by ...' from core/fit.py's ``holders`` figures."""
    names = [n for n in NAMES if need.get(n, 0.0) > 0] or ["cpus"]
    parts = [f"queued (the cluster fits the job, but not now): needs {amounts(need, names)}",
             f"free {amounts(figures['free'], names, zeros=True)} of {amounts(figures['usable'], names)}"]
    if any(figures["others"].get(n, 0.0) > 0 for n in names):
        held = f"held by other frameworks {amounts(figures['others'], names)}"
        named = figures.get("frameworks") or []
        if named:
            shown = ", ".join(f"{name} ({role}) {amounts(a, names)}" for name, role, a in named[:3])
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            held += f": {shown}{more}"
        parts.append(held)
    if any(figures["reserved_for_others"].get(n, 0.0) > 0 for n in names):
        parts.append(f"reserved for other roles {amounts(figures['reserved_for_others'], names)}")
    return "; ".join(parts)


def queue_timed_out(queued_since: float | None, now: float, queue_timeout: float) -> str | None:
    """The failure once a queued job has waited ``queue_timeout`` seconds (0: never), else None."""
    if queued_since is None or not queue_timeout or now - queued_since < queue_timeout:
        return None
    return (f"queued for {now - queued_since:.0f} s, longer than policies.queue_timeout_seconds "
            f"({queue_timeout:g}s): the cluster fits the job, but not while other work holds it")


def hold_limit(jittered: float, queued_for: float) -> float:
    """How long a queued gang holds a partial placement: its jittered base, longer as it ages."""
    return min(HOLD_MAX_SECONDS, jittered + max(0.0, queued_for) / AGING_FACTOR)
