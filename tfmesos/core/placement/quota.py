"""Is a job held back by its Mesos role's quota? (Mesos does not say so to the framework.)"""
from __future__ import annotations

from .fit import figure

# A placing job is held back once this long has passed without a placement: two of the master's
# allocation intervals (1 s by default) bring every agent's offer, so waiting longer says nothing.
HELD_BACK_AFTER_SECONDS = 2.0


def ask_about_quota(placing_for: float, unplaced: bool) -> bool:
    """Whether to ask the master if quota holds the job back: at once when a placement round left
    tasks unplaced, and once no round placed the job for two allocation intervals (a Mesos role over its
    limit gets no offers at all, so there may be no round to fail)."""
    return unplaced or placing_for >= HELD_BACK_AFTER_SECONDS


def quota_shortfall(mesos_role: str, limits: dict[str, float], allocated: dict[str, float],
                    held: dict[str, float], pending: dict[str, float]) -> str | None:
    """Why the pending tasks cannot get offers under Mesos role ``mesos_role``'s quota limit, or None.

    ``allocated`` is the Mesos role's whole allocation (other jobs of that role, and the offers this
    job holds: ``held``). The job fits once ``limit - (allocated - held)`` covers ``pending``.
    """
    short = []
    for name in limits:  # every resource the quota limits, by name
        if pending.get(name, 0.0) <= 0:
            continue
        others = max(0.0, allocated.get(name, 0.0) - held.get(name, 0.0))
        room = limits[name] - others
        if room + 1e-9 < pending[name]:
            short.append(f"{name} {figure(pending[name])} needed, limit {figure(limits[name])}, "
                         f"{figure(others)} held by others")
    if not short:
        return None
    return (f"waiting for role {mesos_role}'s quota (not for offers): " + "; ".join(short)
            + "; the job is placed once the role's other work ends")
