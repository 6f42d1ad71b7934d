"""What the job tells a person: its events, kept in the record (the status page, ``tfmesos status``,
the history) and shown by the front-ends. The one module that writes ``JobState.events``."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .record import JobState


def note(job: JobState, text: str) -> None:
    """One of the job's events."""
    job.events.append(text)
