"""Whether a held-back job waits for its Mesos roles' quota: the scheduler's policy of asking.

Mesos does not tell a framework that quota holds it back: while a placing job is held back
(core/quota.py's ``ask_about_quota``), the scheduler asks the master for each Mesos role's quota
and allocation (mesos/operator.py's ``role_quota``), at most once every ``QUOTA_PROBE_EVERY``
seconds, and the core judges the answer (``quota_shortfall``). A job held back by quota then says
so at once and waits, instead of failing at its placement timeout for want of offers.
"""
from __future__ import annotations

from typing import Callable

from ..core.job import PLACING, Job
from ..core.quota import ask_about_quota, quota_shortfall

QUOTA_PROBE_EVERY = 1.0  # seconds between quota questions to the master while placement waits

# A Mesos role -> (its quota limits, its allocation), from the master; None when it cannot say.
QuotaProbe = Callable[[str], "tuple[dict[str, float], dict[str, float]] | None"]


class QuotaWatch:
    def __init__(self, probe: QuotaProbe, mesos_roles: tuple[str, ...], mesos_role: str) -> None:
        self.probe, self.mesos_roles, self.mesos_role = probe, mesos_roles, mesos_role
        self._asked_at = float("-inf")
        self._waiting = False  # the job waits for quota now

    def check(self, job: Job, now: float) -> bool:
        """Ask when it is time; True when the job's placement was deferred for quota, or given a
        full placement window again once the quota has room (the shell acts on the job then)."""
        if job.phase != PLACING or not ask_about_quota(now - job.placing_since, bool(job.last_unplaced)):
            return False
        if now - self._asked_at < QUOTA_PROBE_EVERY:
            return False
        self._asked_at = now
        # A job of several Mesos roles is held back by quota only when every one of them is.
        held, demand = job.held_totals(), job.pending_demand()
        shortfalls = []
        for mesos_role in self.mesos_roles:
            answer = self.probe(mesos_role)
            shortfalls.append(None if answer is None else quota_shortfall(mesos_role, answer[0], answer[1], held, demand))
        shortfall = "; ".join(shortfalls) if all(shortfalls) else None  # type: ignore[arg-type]
        if shortfall is not None:
            job.defer_placement(shortfall, now)
        elif self._waiting:
            # The quota has room again: a full placement window to gather the offers.
            job.defer_placement(f"role {self.mesos_role}'s quota has room again: placing the job", now)
        else:
            return False
        self._waiting = shortfall is not None
        return True
