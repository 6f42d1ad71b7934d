"""Whether the job wants offers: SUPPRESS once nothing waits, REVIVE when a task waits again, and
the filters a decline sets (short while resources are still needed, so offers come back soon)."""
from __future__ import annotations

from ..actions import Action, Revive, Suppress
from ..state.record import JobState, Transient
from ..task_state import PENDING

# Offer filters: short while we still need resources (so they come back soon), long otherwise.
REFUSE_WHILE_PENDING = 2.0
REFUSE_WHEN_IDLE = 3600.0


def suppress_if_idle(job: JobState, tr: Transient) -> list[Action]:
    if tr.suppressed or any(r.state == PENDING for r in job.tasks.values()) or tr.held:
        return []
    tr.suppressed = True
    return [Suppress()]


def revive(tr: Transient) -> list[Action]:
    if tr.suppressed:
        tr.suppressed = False
        return [Revive()]
    return []
