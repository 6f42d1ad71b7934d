"""What offers decide: gather a gang (hold offers until every pending task fits at once, then
launch them all), place relaunched tasks as offers come, give offers back (to an older job being
placed, after the hold limit), and say why a job cannot be placed. The one writer of the placement
diagnostics and of the queue's state (queued, since when, behind whom)."""
from __future__ import annotations

from typing import Iterable

from .. import phase
from ..actions import Action, Decline, Launch, TaskLaunch
from ..phase import ENDED_PHASES, FINISHING, PLACING, RUNNING
from ..placement import offer_hold, offer_interest
from ..placement.fit import amounts, names_of, no_offer_hint
from ..placement.matching import Demand, Placement, place
from ..placement.offer_interest import REFUSE_WHEN_IDLE, REFUSE_WHILE_PENDING
from ..placement.offers import Offer
from ..placement.queue import BEHIND_REFUSE_SECONDS
from ..spec import TaskKey, add
from ..state import notices, tasks
from ..state.record import JobState, Transient
from ..state.tasks import TaskRecord
from ..task_state import PENDING
from .cluster_spec_sync import addresses_changed, inline_cluster_spec, sync_cluster_specs
from . import maintenance, planned_stop
from .recovery import restart_for_peer

NO_OFFER_NOTE_SECONDS = 15.0  # no offer at all by then: say why that may be, long before the placement timeout


def hold_for(tr: Transient, now: float) -> float:
    """How long the partial gang held now may be held."""
    return offer_hold.limit(tr.hold, tr.queued_since, now)


def offers(job: JobState, tr: Transient, offers: Iterable[Offer], now: float) -> list[Action]:
    offers = list(offers)
    for o in offers:
        if tr.largest_seen is None or (o.scalars.cpus, o.scalars.mem, o.scalars.gpus) > (
            tr.largest_seen.scalars.cpus, tr.largest_seen.scalars.mem, tr.largest_seen.scalars.gpus
        ):
            tr.largest_seen = o
    if job.phase == FINISHING or job.phase in ENDED_PHASES:
        return [Decline(tuple(o.id for o in offers), REFUSE_WHEN_IDLE)]
    # Draining, deactivated, in (or near) a maintenance window: never placed on.
    closing = maintenance.unusable(job, offers, now)
    leaving = [o.id for o in offers if o.agent_id in tr.leaving or o.id in closing]
    offers = maintenance.preferred(job, offers, now)  # no window in the job's expected run: first
    if leaving:
        offers = [o for o in offers if o.agent_id not in tr.leaving and o.id not in closing]
        return [Decline(tuple(leaving), REFUSE_WHEN_IDLE)] + (_offers(job, tr, offers, now) if offers else [])
    return _offers(job, tr, offers, now)


def _offers(job: JobState, tr: Transient, offers: list[Offer], now: float) -> list[Action]:
    if job.phase == PLACING and tr.behind:
        # Submission order: an older job is still being placed; the offers go back to it.
        release = offer_hold.release_all(tr.hold) + tuple(o.id for o in offers)
        return [Decline(release, BEHIND_REFUSE_SECONDS)]
    if job.phase == PLACING:
        return _gang(job, tr, offers, now)
    return _relaunch(job, tr, offers, now)


def _waiting(job: JobState, tr: Transient) -> bool:
    """Whether the job still wants offers: a task waits for a placement, or offers are held."""
    return bool(tr.hold.held) or any(r.state == PENDING for r in job.tasks.values())


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
        offer_interest.declined(tr.interest, while_backing_off=bool(waiting))
        return [Decline(tuple(o.id for o in offers), REFUSE_WHILE_PENDING)]
    offer_hold.take(tr.hold, offers, now)
    placement = place(_demands(job, waiting), tr.hold.held.values())
    if placement.complete:
        actions = _launch(job, tr, placement, now)
        used = placement.offers_used()
        unused = tuple(oid for oid in offer_hold.release_all(tr.hold) if oid not in used)
        phase.move(job, RUNNING, now, "the gang is placed")
        tr.placement_wait = now - min(job.placing_since, tr.queued_since or now)
        tr.queued_since, tr.queued = None, ""
        if unused:
            actions.append(Decline(unused, REFUSE_WHEN_IDLE))
        actions += offer_interest.suppress_if_idle(tr.interest, lambda: _waiting(job, tr))
        return actions
    tr.last_unplaced = placement.unplaced
    release = offer_hold.keep_only(tr.hold, placement.offers_used())
    return [Decline(release, REFUSE_WHILE_PENDING)] if release else []


def _relaunch(job: JobState, tr: Transient, offers: list[Offer], now: float) -> list[Action]:
    pending = [r for r in job.tasks.values() if r.state == PENDING]
    # While a planned stop settles, what it relaunches waits to be placed together (a
    # parameter-server chief with the worker whose new address it must know).
    ready = [] if planned_stop.settling(job) else [r for r in pending if r.not_before <= now]
    if not ready:
        # Backing off: a short filter, or these offers would be gone when the backoff ends.
        refuse = REFUSE_WHILE_PENDING if pending else REFUSE_WHEN_IDLE
        offer_interest.declined(tr.interest, while_backing_off=bool(pending))
        return [Decline(tuple(o.id for o in offers), refuse)] + offer_interest.suppress_if_idle(
            tr.interest, lambda: _waiting(job, tr))
    placement = place(_demands(job, ready), offers)
    actions = _launch(job, tr, placement, now)
    used = placement.offers_used()
    unused = tuple(o.id for o in offers if o.id not in used)
    if unused:
        actions.append(Decline(unused, REFUSE_WHILE_PENDING if placement.unplaced else REFUSE_WHEN_IDLE))
    return actions + offer_interest.suppress_if_idle(tr.interest, lambda: _waiting(job, tr))


def _launch(job: JobState, tr: Transient, placement: Placement, now: float) -> list[Action]:
    per_offer: dict[str, list[TaskLaunch]] = {}
    offer_of: dict[str, tuple[str, str]] = {}
    moved: list[TaskKey] = []
    for a in placement.assignments:
        rec = job.tasks[a.key]
        if tasks.launch(job, rec, a.agent_id, a.hostname, a.port, now):
            moved.append(a.key)
        per_offer.setdefault(a.offer_id, []).append(TaskLaunch(a.key, rec.task_id, a.port, a.resources, rec.restarts))
        offer_of[a.offer_id] = (a.agent_id, a.hostname)
    if moved:
        addresses_changed(job)
    # A small gang's TaskInfos carry the ClusterSpec; a big one's do not (it made a gang's launch
    # grow with its square): each new executor asks for it (cluster_spec_sync).
    inline = inline_cluster_spec(job, tr, (job.tasks[a.key] for a in placement.assignments))
    actions: list[Action] = [
        Launch(oid, offer_of[oid][0], offer_of[oid][1], tuple(ts), inline) for oid, ts in per_offer.items()
    ]
    if job.phase == RUNNING:
        # Relaunched tasks at new addresses: the framework says which running peers cannot use
        # them before they restart themselves (TensorFlow: a parameter-server job's chief).
        relaunched = [k for k in moved
                      if job.tasks[k].restarts or job.tasks[k].requested_restarts or job.tasks[k].planned_stops]
        launched_now = {a.key for a in placement.assignments}  # they know every address already
        for peer in job.spec.profile.restart_when_moved(job.spec, relaunched) if relaunched else ():
            actions += restart_for_peer(job, tr, peer.role, now, peer.why, skip=launched_now)
    return actions + sync_cluster_specs(job, tr)


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


def queue(job: JobState, tr: Transient, reason: str, now: float) -> None:
    """The placing job fits the cluster but waits for room (core/placement/queue.py): say so when it starts
    waiting or why changes kind, and keep the figures for the status."""
    if job.phase != PLACING:
        return
    if tr.queued_since is None or reason.split(":")[0] != tr.queued.split(":")[0]:
        notices.note(job, tr, reason)
    tr.queued_since = now if tr.queued_since is None else tr.queued_since
    tr.queued = reason


def wait_behind(job: JobState, tr: Transient, older: str) -> list[Action]:
    """Give offers back while ``older`` (a job submitted earlier) is being placed ("": none);
    when it no longer is, REVIVE clears the filters of the offers given back."""
    was, tr.behind = tr.behind, older if job.phase == PLACING else ""
    if was and not tr.behind:
        return offer_interest.revive_now(tr.interest)
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


def note_no_offer(job: JobState, tr: Transient, now: float) -> None:
    """No offer at all after a while: say once why that may be, long before the placement timeout."""
    if job.phase == PLACING and tr.largest_seen is None and not tr.no_offer_noted and (
            now - job.placing_since >= NO_OFFER_NOTE_SECONDS):
        tr.no_offer_noted = True
        notices.note(job, tr, f"still waiting after {NO_OFFER_NOTE_SECONDS:g} s: " + no_offer_hint(job.spec.gpus_needed))
