"""Whether the job wants offers: SUPPRESS once nothing waits, REVIVE when a task waits again, and
the filters a decline sets (short while resources are still needed, so offers come back soon).
The one place that decides both calls (``OfferInterest``'s fields are written here only)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

from ..actions import Action, Revive, Suppress

# Offer filters: short while we still need resources (so they come back soon), long otherwise.
REFUSE_WHILE_PENDING = 2.0
REFUSE_WHEN_IDLE = 3600.0


@dataclass
class OfferInterest:
    OWNER: ClassVar[str] = "placement.offer_interest"  # the one module that writes its fields

    # Written in the record for its readers, but a loaded job asks for offers again (False).
    suppressed: bool = False
    declined_in_backoff: bool = False  # offers were refused while a task backed off: their filter must go


def suppress_if_idle(interest: OfferInterest, waiting: Callable[[], bool]) -> list[Action]:
    """SUPPRESS once no task waits for a placement and no offer is held (``waiting`` says, asked
    only when it matters: it walks the job's tasks)."""
    if interest.suppressed or waiting():
        return []
    interest.suppressed = True
    return [Suppress()]


def suppress(interest: OfferInterest) -> list[Action]:
    """The job ends: no offer is wanted again."""
    if interest.suppressed:
        return []
    interest.suppressed = True
    return [Suppress()]


def revive(interest: OfferInterest) -> list[Action]:
    """A task waits again: REVIVE if offers were suppressed."""
    if interest.suppressed:
        interest.suppressed = False
        return [Revive()]
    return []


def revive_now(interest: OfferInterest) -> list[Action]:
    """REVIVE whatever was asked before: it also clears the filters of offers declined (a new
    framework id after a subscription, offers given back to an older job)."""
    interest.suppressed = False
    return [Revive()]


def declined(interest: OfferInterest, while_backing_off: bool) -> None:
    """Offers were declined: while a task backs off, their short filter must be cleared when it ends."""
    interest.declined_in_backoff = while_backing_off


def backoff_over(interest: OfferInterest) -> list[Action]:
    """A backing-off task is ready: REVIVE at once if offers were declined meanwhile, else as usual."""
    if interest.declined_in_backoff:
        interest.declined_in_backoff = False
        return revive_now(interest)
    return revive(interest)
