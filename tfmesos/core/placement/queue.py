"""A job that fits the cluster but not now waits, queued: what it says, and how long it may wait.

A job is queued when its placement is held back and the master's figures say it fits the cluster
as built (core/placement/fit.py) or a Mesos role's quota holds it (core/placement/quota.py). Then the placement timeout
ends one attempt only: held offers go back and a new attempt gathers again, with no failure; only
``policies.queue_timeout_seconds`` (0: no bound) ends the wait with a failure.

No gang starves: tfmesos jobs are placed in submission order. A job gives back its offers while an
older tfmesos job (the master's state says which) is still being placed, for at most
``YIELD_MAX_SECONDS`` behind each; and a gang that has waited long holds its partial offers longer
(``hold_limit``), up to ``HOLD_MAX_SECONDS``, so what frees up piece by piece gathers into it. Two
gangs that each hold part of the cluster still give way to each other within that bound.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from .fit import Framework, amounts, names_of

# A queued gang's hold grows by its wait (one second more per AGING_FACTOR seconds queued), up to this.
HOLD_MAX_SECONDS = 60.0
AGING_FACTOR = 4.0
# How long a job waits behind one older job that is still being placed (older_waiting).
YIELD_MAX_SECONDS = 60.0
# The filter of offers given back while behind: long, so the master offers them to the older job
# rather than back to every younger one each second (a REVIVE clears it once the wait ends).
BEHIND_REFUSE_SECONDS = 10.0


def queued_reason(need: Mapping[str, float], figures: Mapping[str, Any], behind: str = "") -> str:
    """'queued: needs ...; free ... of ...; held by ...' from core/placement/fit.py's ``holders``
    figures; ``behind``: an older job it gives way to. "" when nothing but the job's own tasks (still
    ending, in a whole-job restart) holds what it needs: it is not queued behind anyone's work, and
    saying so would contradict the figures ("needs cpus 1.8; free cpus 8 of cpus 8")."""
    names = [n for n in names_of(need) if need.get(n, 0.0) > 0] or ["cpus"]
    if not behind and not any(figures["others"].get(n, 0.0) > 0 or figures["reserved_for_others"].get(n, 0.0) > 0
                              for n in names):
        return ""
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
    ending = figures.get("own_ending") or {}
    if any(ending.get(n, 0.0) > 0 for n in names):
        parts.append(f"held by this job's own tasks {amounts(ending, names)}")
    if behind:
        parts.append(f"behind {behind}, submitted earlier and still being placed")
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


def older_waiting(me: str, frameworks: Iterable[Framework], now: float, seen: dict[str, float]) -> str | None:
    """The name of an older tfmesos job that is still being placed (it runs no task), which this
    one waits behind: jobs are placed in submission order, so small young jobs cannot take every
    freed resource from under an old gang. Bounded: behind one job at most ``YIELD_MAX_SECONDS``
    (``seen``: when each was first found waiting, kept by the caller), so a job stuck for its own
    reasons (its role's quota) holds up no one for ever."""
    mine = next((f for f in frameworks if f.id == me), None)
    if mine is None:
        return None
    for f in sorted(frameworks, key=lambda f: f.registered):
        if f.id == me or not f.placing or f.registered >= mine.registered:
            continue
        first = seen.setdefault(f.id, now)
        if now - first < YIELD_MAX_SECONDS:
            return f.name
    return None
