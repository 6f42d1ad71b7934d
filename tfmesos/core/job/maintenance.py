"""Maintenance windows: Mesos' inverse offers (a machine wanted back for a window) and offers'
``unavailability``, decided over plain data (core/placement/maintenance.py). The one writer of
the inverse offers the job holds.

- A machine whose window opens within ``policies.maintenance_margin_seconds`` (or is open): the
  job's tasks there are moved at a checkpoint, a planned stop of kind "maintenance"
  (core/job/planned_stop.py: each told, killed with its stop grace, relaunched elsewhere, no
  failure counted). Before that, nothing is done: the training goes on.
- Once nothing of the job runs there, the inverse offer is accepted (ACCEPT_INVERSE_OFFERS):
  Mesos shows the machine given back in /maintenance/status.
- An unanswered inverse offer is not sent again (measured on Mesos 1.12), so the clock
  (``next_deadline``) brings the margin's start, not the master.
- Placement never uses a machine whose window is open or opens within the margin, and puts
  machines whose window opens before the job's expected end (``active_deadline_seconds``
  after its start; unknown: any window) last.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from ..actions import AcceptInverseOffers, Action
from ..phase import RUNNING
from ..placement import maintenance
from ..placement.maintenance import InverseOffer
from ..placement.offers import Offer
from ..state import notices
from ..state.record import JobState, Transient
from . import planned_stop

MAINTENANCE = "maintenance"  # the notice's kind (tfmesos.task.notice.KINDS)


def inverse_offers(job: JobState, tr: Transient, offers: Iterable[InverseOffer], now: float) -> list[Action]:
    """Mesos wants these agents back for their windows: the newest per agent is kept."""
    for offer in offers:
        tr.inverse_offers[offer.agent_id] = offer
    return tick(job, tr, now)


def rescinded(tr: Transient, inverse_offer_id: str) -> None:
    """An inverse offer withdrawn (the schedule changed: a new one follows, or the window is gone)."""
    for agent_id in [a for a, o in tr.inverse_offers.items() if o.id == inverse_offer_id]:
        del tr.inverse_offers[agent_id]


def tick(job: JobState, tr: Transient, now: float) -> list[Action]:
    """Move the job's tasks off machines whose window is near; give back those it has left."""
    if not tr.inverse_offers or job.terminal:
        return []
    margin = job.spec.policies.maintenance_margin_seconds
    actions: list[Action] = []
    given_back: list[str] = []
    for agent_id, offer in list(tr.inverse_offers.items()):
        on_it = [r for r in job.tasks.values() if r.live and r.agent_id == agent_id]
        if not on_it:
            given_back.append(offer.id)
            del tr.inverse_offers[agent_id]
            notices.note(job, tr, f"agent {offer.hostname or agent_id}: maintenance window "
                                  f"{offer.window.describe(now)}, nothing of the job there: given back")
            continue
        moving = [r.key for r in on_it if not r.stopping]
        if moving and job.phase == RUNNING and offer.window.near(now, margin):
            why = f"agent {offer.hostname or agent_id} maintenance (window {offer.window.describe(now)})"
            actions += planned_stop.stop_gracefully(job, tr, moving, why, now, MAINTENANCE)
    if given_back:
        actions.append(AcceptInverseOffers(tuple(given_back)))
    return actions


def next_deadline(job: JobState, tr: Transient, now: float) -> float | None:
    """When a window comes within the margin on a machine the job still runs on (None: none)."""
    margin = job.spec.policies.maintenance_margin_seconds
    times = [o.window.start - margin for o in tr.inverse_offers.values() if o.window.start - margin > now]
    return min(times) if times else None


def unusable(job: JobState, offers: Sequence[Offer], now: float) -> set[str]:
    """The offers of machines whose window is open or opens within the margin: never placed on."""
    margin = job.spec.policies.maintenance_margin_seconds
    return {o.id for o in offers if not maintenance.usable(o, now, margin)}


def preferred(job: JobState, offers: Sequence[Offer], now: float) -> list[Offer]:
    """Machines with no window in the job's expected run first (see the module)."""
    deadline = job.spec.policies.active_deadline_seconds
    return maintenance.preferred(offers, now, job.started_at + deadline if deadline else None)
