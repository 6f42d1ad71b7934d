"""The offers a placing job holds while it gathers its gang, and how long it may hold them: the one
place that takes, keeps and gives back held offers (``OfferHold``'s fields are written here only).

A partial gang holds its offers until every pending task fits at once, but only for its hold limit
(``HOLD_SECONDS``, jittered per job and attempt, longer as a queued job ages: core/placement/queue.py),
so that two jobs that each hold half of a cluster cannot block each other forever. ``held_since`` is
when the current hold began: 0 exactly when nothing is held.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import ClassVar, Iterable

from ..spec import add
from .offers import Offer
from .queue import hold_limit

HOLD_SECONDS = 8.0


@dataclass
class OfferHold:
    OWNER: ClassVar[str] = "placement.offer_hold"  # the one module that writes its fields (tests/test_state_owners.py)

    held: dict[str, Offer] = field(default_factory=dict)  # by offer id, in the order taken
    held_since: float = 0.0
    hold_limit: float = HOLD_SECONDS  # this attempt's jittered base (new_limit)


def new_limit(hold: OfferHold, rng: random.Random) -> None:
    """Hold limits differ between jobs and attempts, so competing jobs do not release in step."""
    hold.hold_limit = HOLD_SECONDS * (0.5 + rng.random())


def limit(hold: OfferHold, queued_since: float | None, now: float) -> float:
    """How long this hold may last: the jittered base, longer for a job queued since ``queued_since``."""
    return hold_limit(hold.hold_limit, now - queued_since if queued_since is not None else 0.0)


def take(hold: OfferHold, offers: Iterable[Offer], now: float) -> None:
    for o in offers:
        hold.held[o.id] = o
    if hold.held and not hold.held_since:
        hold.held_since = now


def keep_only(hold: OfferHold, keep: set[str] | frozenset[str]) -> tuple[str, ...]:
    """Give back every held offer not in ``keep``: their ids."""
    release = tuple(oid for oid in hold.held if oid not in keep)
    for oid in release:
        del hold.held[oid]
    if not hold.held:
        hold.held_since = 0.0
    return release


def release_all(hold: OfferHold) -> tuple[str, ...]:
    """Give back every held offer (the gang launched, given way, or the job ends): their ids."""
    ids = tuple(hold.held)
    hold.held.clear()
    hold.held_since = 0.0
    return ids


def rescind(hold: OfferHold, offer_id: str) -> None:
    """Mesos took the offer back (or the connection that carried it dropped)."""
    hold.held.pop(offer_id, None)
    if not hold.held:
        hold.held_since = 0.0


def totals(hold: OfferHold) -> dict[str, float]:
    """Every resource held, by name."""
    total: dict[str, float] = {}
    for o in hold.held.values():
        add(total, o.scalars)
    return total
