"""What offers decide: gather a gang (hold offers until every pending task fits at once, then
launch them all), place relaunched tasks as offers come, give offers back (to an older job being
placed, after the hold limit), and say why a job cannot be placed."""
from __future__ import annotations

import random
from typing import Iterable

from ..actions import Action, Decline, Launch, Revive, TaskLaunch
from ..placement.fit import amounts, names_of, no_offer_hint
from ..placement.matching import Demand, Placement, place
from ..placement.offer_interest import REFUSE_WHEN_IDLE, REFUSE_WHILE_PENDING, suppress_if_idle
from ..placement.offers import Offer
from ..placement.queue import BEHIND_REFUSE_SECONDS, hold_limit
from ..spec import TaskKey, add
from .. import phase
from ..phase import ENDED_PHASES, FINISHING, PLACING, RUNNING
from ..state.record import HOLD_SECONDS, JobState, TaskRecord, Transient
from ..task_state import PENDING, TASK_STAGING
from .cluster_spec_sync import spec_message, sync_specs
from .recovery import restart_for_peer


def jittered_hold(rng: random.Random) -> float:
    """Hold limits differ between jobs and attempts, so competing jobs do not release in step."""
    return HOLD_SECONDS * (0.5 + rng.random())


def hold_for(tr: Transient, now: float) -> float:
    return hold_limit(tr.hold_limit, now - tr.queued_since if tr.queued_since is not None else 0.0)


def offers(job: JobState, tr: Transient, offers: Iterable[Offer], now: float) -> list[Action]:
    offers = list(offers)
    for o in offers:
        if tr.largest_seen is None or (o.scalars.cpus, o.scalars.mem, o.scalars.gpus) > (
            tr.largest_seen.scalars.cpus, tr.largest_seen.scalars.mem, tr.largest_seen.scalars.gpus
        ):
            tr.largest_seen = o
    if job.phase == FINISHING or job.phase in ENDED_PHASES:
        return [Decline(tuple(o.id for o in offers), REFUSE_WHEN_IDLE)]
    if job.phase == PLACING and tr.behind:
        # Submission order: an older job is still being placed; the offers go back to it.
        release, tr.held = tuple(tr.held) + tuple(o.id for o in offers), {}
        return [Decline(release, BEHIND_REFUSE_SECONDS)]
    if job.phase == PLACING:
        return _gang(job, tr, offers, now)
    return _relaunch(job, tr, offers, now)


def _demands(job: JobState, records: Iterable[TaskRecord]) -> list[Demand]:
    out = []
    for rec in records:
        role = job.spec.role(rec.key.role)
        assert role is not None
        prefer = rec.agent_id if rec.agent_id and rec.agent_id != rec.avoid_agent else None
        out.append(Demand(rec.key, role.demand, prefer, rec.port if prefer else None, rec.avoid_agent or None))
    return out


def _gang(job: JobState, tr: Transient, offers: list[Offer], now: float) -> list[Action]:
    waiting = [r for r in job.tasks.values() if r.state == PENDING]
    busy = any(r.live for r in job.tasks.values())
    if busy or not waiting or any(r.not_before > now for r in waiting):
        # Still killing the previous generation, or backing off: nothing to gather yet.
        # (tick revives when the backoff ends, which clears this short filter at once.)
        tr.declined_in_backoff = bool(waiting)
        return [Decline(tuple(o.id for o in offers), REFUSE_WHILE_PENDING)]
    for o in offers:
        tr.held[o.id] = o
    if not tr.held_since:
        tr.held_since = now
    placement = place(_demands(job, waiting), tr.held.values())
    if placement.complete:
        actions = _launch(job, tr, placement, now)
        used = placement.offers_used()
        unused = tuple(oid for oid in tr.held if oid not in used)
        tr.held.clear()
        tr.held_since = 0.0
        phase.move(job, RUNNING, now, "the gang is placed")
        tr.placement_wait = now - min(job.placing_since, tr.queued_since or now)
        tr.queued_since, tr.queued = None, ""
        if unused:
            actions.append(Decline(unused, REFUSE_WHEN_IDLE))
        actions += suppress_if_idle(job, tr)
        return actions
    tr.last_unplaced = placement.unplaced
    keep = placement.offers_used()
    release = tuple(oid for oid in tr.held if oid not in keep)
    for oid in release:
        del tr.held[oid]
    if not tr.held:
        tr.held_since = 0.0
    return [Decline(release, REFUSE_WHILE_PENDING)] if release else []


def _relaunch(job: JobState, tr: Transient, offers: list[Offer], now: float) -> list[Action]:
    pending = [r for r in job.tasks.values() if r.state == PENDING]
    ready = [r for r in pending if r.not_before <= now]
    if not ready:
        # Backing off: a short filter, or these offers would be gone when the backoff ends.
        refuse = REFUSE_WHILE_PENDING if pending else REFUSE_WHEN_IDLE
        tr.declined_in_backoff = bool(pending)
        return [Decline(tuple(o.id for o in offers), refuse)] + suppress_if_idle(job, tr)
    placement = place(_demands(job, ready), offers)
    actions = _launch(job, tr, placement, now)
    used = placement.offers_used()
    unused = tuple(o.id for o in offers if o.id not in used)
    if unused:
        actions.append(Decline(unused, REFUSE_WHILE_PENDING if placement.unplaced else REFUSE_WHEN_IDLE))
    return actions + suppress_if_idle(job, tr)


def _new_task_id(job: JobState, key: TaskKey) -> str:
    job.launch_seq += 1
    return f"{job.spec.service.name.replace('/', '_')}.{key.role}.{key.index}.{job.launch_seq}"


def _launch(job: JobState, tr: Transient, placement: Placement, now: float) -> list[Action]:
    per_offer: dict[str, list[TaskLaunch]] = {}
    offer_of: dict[str, tuple[str, str]] = {}
    moved: list[TaskKey] = []
    for a in placement.assignments:
        rec = job.tasks[a.key]
        old_endpoint = rec.endpoint
        rec.task_id = _new_task_id(job, a.key)
        job.by_task_id[rec.task_id] = a.key
        rec.state, rec.agent_id, rec.hostname, rec.port = TASK_STAGING, a.agent_id, a.hostname, a.port
        rec.launched_at, rec.spec_version_sent, rec.killing_since = now, 0, 0.0
        rec.avoid_agent = ""
        # The previous attempt's end is not this one's: shown again only once this one has ended.
        rec.exit_code, rec.reason, rec.message, rec.log_tail, rec.exception = None, "", "", "", ""
        if rec.endpoint != old_endpoint:
            moved.append(a.key)
        per_offer.setdefault(a.offer_id, []).append(TaskLaunch(a.key, rec.task_id, a.port, a.resources, rec.restarts))
        offer_of[a.offer_id] = (a.agent_id, a.hostname)
    if moved:
        job.spec_version += 1
    # Every address known now (the normal gang placement): the ClusterSpec goes in the TaskInfo,
    # which Mesos delivers with the task, unlike a best-effort framework message.
    spec = spec_message(job, tr)
    if spec is not None:
        for launches in per_offer.values():
            for t in launches:
                job.tasks[t.key].spec_version_sent = job.spec_version
    actions: list[Action] = [
        Launch(oid, offer_of[oid][0], offer_of[oid][1], tuple(ts), spec) for oid, ts in per_offer.items()
    ]
    if job.phase == RUNNING:
        # Relaunched tasks at new addresses: the framework says which running peers cannot use
        # them before they restart themselves (TensorFlow: a parameter-server job's chief).
        relaunched = [k for k in moved if job.tasks[k].restarts or job.tasks[k].requested_restarts]
        for peer in job.spec.profile.restart_when_moved(job.spec, relaunched) if relaunched else ():
            actions += restart_for_peer(job, tr, peer.role, now, peer.why)
    return actions + sync_specs(job, tr)


# ------------------------------------------------------------------ held back by quota
def pending_demand(job: JobState) -> dict[str, float]:
    """Every resource of the tasks waiting for a placement, by name (executors included)."""
    total: dict[str, float] = {}
    for rec in job.tasks.values():
        if rec.state == PENDING:
            role = job.spec.role(rec.key.role)
            assert role is not None
            add(total, role.demand)
    return total


def held_totals(tr: Transient) -> dict[str, float]:
    total: dict[str, float] = {}
    for o in tr.held.values():
        add(total, o.scalars)
    return total


def queue(job: JobState, tr: Transient, reason: str, now: float) -> None:
    """The placing job fits the cluster but waits for room (core/queue.py): say so when it starts
    waiting or why changes kind, and keep the figures for the status."""
    if job.phase != PLACING:
        return
    if tr.queued_since is None or reason.split(":")[0] != tr.queued.split(":")[0]:
        job.note(reason)
    tr.queued_since = now if tr.queued_since is None else tr.queued_since
    tr.queued = reason


def wait_behind(job: JobState, tr: Transient, older: str) -> list[Action]:
    """Give offers back while ``older`` (a job submitted earlier) is being placed ("": none);
    when it no longer is, REVIVE clears the filters of the offers given back."""
    was, tr.behind = tr.behind, older if job.phase == PLACING else ""
    if was and not tr.behind:
        tr.suppressed = False
        return [Revive()]
    return []


def explain_unplaced(job: JobState, tr: Transient) -> str:
    waiting = [r.key for r in job.tasks.values() if r.state == PENDING]
    unplaced = tr.last_unplaced or tuple(waiting)
    lines = [f"job cannot be placed within placement_timeout_seconds ({job.spec.policies.placement_timeout_seconds:g}s)"]
    per_role: dict[str, int] = {}
    for key in unplaced:
        per_role[key.role] = per_role.get(key.role, 0) + 1
    for role_name in job.spec.profile.role_order:
        if role_name in per_role:
            role = job.spec.role(role_name)
            assert role is not None
            d = role.demand
            lines.append(
                f"{role_name}: {per_role[role_name]} of {role.count} task(s) unplaced, each needs "
                f"{amounts(d)}, 1 port (executor included)"
            )
    o = tr.largest_seen
    if o is None:
        lines.append(no_offer_hint(job.spec.gpus_needed))
    else:
        lines.append(
            f"largest offer seen: agent {o.agent_id} ({o.hostname}) "
            f"{amounts(o.scalars, names_of(o.scalars, *(r.demand for r in job.spec.roles)), zeros=True)}, "
            f"{o.port_count} ports"
        )
    return "; ".join(lines)


def rescinded(tr: Transient, offer_id: str) -> None:
    tr.held.pop(offer_id, None)
