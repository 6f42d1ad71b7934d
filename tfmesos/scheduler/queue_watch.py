"""Asking the master, while a job is placed, whether it can ever fit and what holds it back.

Mesos tells a framework neither that a job is larger than the cluster nor that quota or other
frameworks hold it back. While a placing job is held back (core/placement/quota.py's ``ask_about_quota``)
the scheduler reads the master's state (agents' totals and usage, frameworks) and its Mesos roles'
quota, at most once every ``ASK_EVERY`` seconds; the core judges: a job that never fits fails at
once (core/placement/fit.py), one held by quota or by others' work is queued with the figures (core/placement/queue.py).
"""
from __future__ import annotations

from typing import Callable

from ..core.actions import Action
from ..core.placement.fit import Agent, Framework, Need, holders, never_fits
from ..core.job.job import Job
from ..core.phase import PLACING, RUNNING
from ..core.task_state import PENDING
from ..core.placement.queue import older_waiting, queued_reason
from ..core.placement.quota import HELD_BACK_AFTER_SECONDS, ask_about_quota, quota_shortfall

ASK_EVERY = 1.0  # seconds between questions to the master while placement waits (as the quota probe did)
# While the job runs: which agents drain or are deactivated (the master has no event for it). A
# drain of an agent the job uses is seen at once in its tasks' TASK_KILLING; this keeps placement
# off the others.
LEAVING_ASK_EVERY = 5.0

# A Mesos role -> (its quota limits, its allocation), from the master; None when it cannot say.
QuotaProbe = Callable[[str], "tuple[dict[str, float], dict[str, float]] | None"]
# The agents and the frameworks (id, name, Mesos role, used + offered), from the master; None when it cannot say.
ClusterProbe = Callable[[], "tuple[list[Agent], list[Framework]] | None"]
Answers = tuple  # (the cluster probe's answer, the quota probe's answer per Mesos role)


def job_needs(job: Job) -> list[Need]:
    """What the job's waiting tasks need, per TensorFlow role (executor included)."""
    counts: dict[str, int] = {}
    for rec in job.tasks.values():
        if rec.state == PENDING:
            counts[rec.key.role] = counts.get(rec.key.role, 0) + 1
    needs = []
    for role_name, count in counts.items():
        role = job.spec.role(role_name)
        assert role is not None
        needs.append(Need(role_name, count, role.demand))
    return needs


class QueueWatch:
    def __init__(self, quota_probe: QuotaProbe | None, cluster_probe: ClusterProbe | None,
                 mesos_roles: tuple[str, ...], framework_id: Callable[[], str | None] = lambda: None) -> None:
        self.quota_probe, self.cluster_probe, self.mesos_roles = quota_probe, cluster_probe, mesos_roles
        self.framework_id = framework_id
        self._asked_at = float("-inf")
        self._never: str | None = None  # the last probe's "never fits": a second one in a row fails the job
        self._fits = False  # the job has fitted the cluster as built once: not asked again
        self._behind_since: dict[str, float] = {}  # older jobs waited behind, since when (core/placement/queue.py)
        self._placing = True  # the last due() found the job placing: quotas asked too

    def due(self, job: Job, now: float) -> bool:
        """Whether to ask the master now: at once, then every ASK_EVERY s while placement is held
        back; every LEAVING_ASK_EVERY s while the job runs (the agents leaving)."""
        self._placing = job.phase == PLACING
        if job.phase == RUNNING and self.cluster_probe is not None:
            if now - self._asked_at < LEAVING_ASK_EVERY:
                return False
            self._asked_at = now
            return True
        if job.phase != PLACING or now - self._asked_at < ASK_EVERY:
            return False
        if self._asked_at != float("-inf") and not ask_about_quota(now - job.placing_since, bool(job.last_unplaced)):
            return False
        self._asked_at = now
        return True

    def ask(self) -> Answers:
        """The master's answers (HTTP: the shell calls this without holding the job's lock)."""
        cluster = self.cluster_probe() if self.cluster_probe is not None else None
        placing = self._placing and self.quota_probe is not None
        quotas = [self.quota_probe(role) for role in self.mesos_roles] if placing else []  # type: ignore[misc]
        return cluster, quotas

    def judge(self, job: Job, now: float, answers: Answers) -> list[Action] | None:
        """The actions to apply: the agents leaving told to the job; when placing, the job's
        failure or its queued status changed."""
        cluster, quotas = answers
        leaving: list[Action] = []
        if cluster is not None:
            leaving = job.agents_leaving({a.id: (a.hostname, a.leaving) for a in cluster[0] if a.leaving}, now)
            cluster = ([a for a in cluster[0] if not a.leaving], cluster[1])
        if job.phase != PLACING or any(rec.live for rec in job.tasks.values()):
            # Running, or a whole-job restart (an update) still stopping its tasks: what holds the
            # resources is the job itself, not a queue.
            return leaving or None
        judged = self._judge_placing(job, now, cluster, quotas)
        return leaving + judged if leaving and judged is not None else (judged if judged is not None else leaving or None)

    def _judge_placing(self, job: Job, now: float, cluster, quotas) -> list[Action] | None:
        needs = job_needs(job) if not self._fits else []
        if cluster is not None and not self._fits:
            # Until it has fitted once: the cluster as built does not shrink, and a big gang's trial
            # packing onto every agent is not worth repeating each second.
            never = never_fits(needs, cluster[0], self.mesos_roles)
            if never is not None and self._never is not None:
                return job.abort(never, now)  # seen twice, ASK_EVERY apart: not an agent still registering
            self._never, self._fits = never, never is None
            if never is not None:
                return None
        ours, actions = self.framework_id() or "", []
        if cluster is not None:
            # Submission order: behind an older job still being placed, this one gives its offers back.
            actions = job.wait_behind(older_waiting(ours, cluster[1], now, self._behind_since) or "")
        if not job.behind and not job.last_unplaced and now - job.placing_since < HELD_BACK_AFTER_SECONDS:
            return actions or None  # placement has not been tried yet
        held, demand = job.held_totals(), job.pending_demand()
        # A job of several Mesos roles is held back by quota only when every one of them is.
        shortfalls = [None if answer is None else quota_shortfall(role, answer[0], answer[1], held, demand)
                      for role, answer in zip(self.mesos_roles, quotas)]
        if shortfalls and all(shortfalls):
            job.queue("; ".join(shortfalls), now)  # type: ignore[arg-type]
        elif cluster is not None:
            others = [f for f in cluster[1] if f.id != ours]
            own = next((f.holds for f in cluster[1] if f.id == ours), None) if ours else None
            reason = queued_reason(demand, holders(cluster[0], self.mesos_roles, held, others, own), job.behind)
            if reason:  # else only its own tasks, still ending, hold what it needs: no queue
                job.queue(reason, now)
        else:
            return None
        return actions
