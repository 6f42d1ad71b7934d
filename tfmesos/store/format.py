"""The persisted job record: its one shape and its format number.

A scheduler restarted after an upgrade (Marathon restarts the app with the new version) must
read what the old one wrote: every record carries ``format``; an older format is upgraded on
load, a newer one is refused with a message, never half-read.

- Format 1 (tfmesos 0.1.0, no ``format`` field): a running job was
  ``{framework_id, options_digest, options, job}``, a job finished under Marathon
  ``{finished: true, options_digest, job}``.
- Format 2: ``{format, framework_id, options_digest, options, finished, job}`` for both, with
  ``job`` as ``Job.to_dict()`` makes it and ``options`` with env values hidden.
- Format 3: format 2 plus ``journal_gen``, and a journal after the record: entries
  ``{gen, job, events, task}`` appended when one task changed (its end), each replacing that
  task's entry and the job's own fields (``Job.own_fields()``: all but tasks, task ids and
  events) and adding the events since the previous write. Appending is O(1) where rewriting
  every task was O(tasks) per task end. Loading replays the entries of the record's
  generation in order; writing the whole record starts a new generation, so entries left
  from an older one (a crash between the two writes) are ignored, as is a torn last entry.
- Format 4: format 3 plus ``end``, null while the job runs and, in the record kept of a job that
  ended (``tfmesos status NAME``, ``tfmesos jobs``), ``{at, progress, logs, api, master}``: when
  it ended, its last reported values, where each attempt's log is (``{"ROLE:INDEX": [{task_id,
  agent, directory}, ...]}``, newest attempt last; the newest attempt of the first tasks also
  carries ``tail``, ``{stdout, stderr}``: the end of each file), and the addresses of its API and master. The
  job's ``series`` (``[[at, step, loss], ...]``, core/state/series.py) is kept in ``job`` from this
  format on; older records have none.
- Format 5: format 4 plus ``deployment``: under Marathon, the app and the version of its
  definition the job ran under (``"APP_ID@VERSION"``), null elsewhere and in older records. A
  finished record is served only by a restart of that deployment; a new install or a changed app
  runs the job anew (scheduler/marathon_app.py).
- Format 6: format 5 plus ``launched_digest``: once ``tfmesos update`` gave the job new options
  (``options`` and ``options_digest`` are then the update's), the digest of the options its
  scheduler was started with, so that a scheduler started again with those resumes the job with
  the update's (env values, hidden in the record, taken from the options given by name); null
  for a job never updated, and in older records.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable

from ..core.job.codec import EVENTS_KEPT

FORMAT = 6


class StateFormatError(ValueError):
    """A record this tfmesos cannot read: a newer format, or not a job record at all."""


@dataclass(frozen=True)
class JobRecord:
    """The one definition of what a store keeps of a job, running or ended (format ``FORMAT``):
    its JSON is ``{"format": FORMAT, <these fields>}``; an older format is upgraded to it by
    ``decode``. A field added here is a new format, with an upgrade step (tests/store/test_format.py)."""

    FORMAT: ClassVar[int] = FORMAT
    framework_id: str | None
    options_digest: str  # store/job_store.py: options_digest
    options: dict[str, Any] | None  # env values hidden (masking.mask_options)
    job: dict[str, Any]  # Job.to_dict()
    finished: bool = False  # an ended job kept under Marathon (or in the history of ends)
    journal_gen: int = 0  # the generation whose journal entries apply (format 3)
    end: dict[str, Any] | None = None  # end_of(...) once the job ended and its record is kept (format 4)
    deployment: str | None = None  # the Marathon app and version it ran under (format 5)
    launched_digest: str | None = None  # after an update: the digest of the options it was started with (format 6)

    def to_json(self) -> dict[str, Any]:
        return {"format": self.FORMAT, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}

    @classmethod
    def from_json(cls, raw: Any) -> "JobRecord":
        """A stored record (bytes, text or parsed JSON) of any format this tfmesos reads."""
        data = decode(raw)
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def record(framework_id: str | None, options_digest: str, options: dict[str, Any] | None,
           job: dict[str, Any], finished: bool = False, journal_gen: int = 0,
           end: dict[str, Any] | None = None, deployment: str | None = None,
           launched_digest: str | None = None) -> dict[str, Any]:
    """The record to persist (JobRecord's JSON), running or finished: the same shape."""
    return JobRecord(framework_id, options_digest, options, job, finished, journal_gen, end, deployment,
                     launched_digest).to_json()


def end_of(at: float, progress: dict[str, Any] | None, logs: dict[str, list[dict[str, Any]]],
           api: str | None, master: str | None, user: str | None = None) -> dict[str, Any]:
    """The ``end`` of a record kept after the job ended (format 4); ``user``: who ran its scheduler
    (``tfmesos jobs`` lists that user's; ends kept before it was recorded have none)."""
    end = {"at": at, "progress": progress, "logs": logs, "api": api, "master": master}
    return {**end, "user": user} if user else end


def journal_entry(gen: int, job_fields: dict[str, Any], new_events: list[str],
                  task: dict[str, Any]) -> dict[str, Any]:
    return {"gen": gen, "job": job_fields, "events": new_events, "task": task}


def encode_entry(entry: dict[str, Any]) -> bytes:
    """One journal entry as a line (no newline inside: compact JSON escapes them)."""
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def replay(state: dict[str, Any], entries: Iterable[bytes]) -> dict[str, Any]:
    """``state`` (decoded) with the journal entries of its generation applied in order."""
    gen = state.get("journal_gen", 0)
    job = state["job"]
    where: dict[tuple, int] | None = None
    for raw in entries:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue  # a torn last entry: the write it belonged to never completed
        if not isinstance(entry, dict) or entry.get("gen") != gen:
            continue
        job.update(entry["job"])
        job["events"] = (job["events"] + entry["events"])[-EVENTS_KEPT:]
        task = entry["task"]
        if where is None:
            where = {tuple(t["key"]): i for i, t in enumerate(job["tasks"])}
        index = where.get(tuple(task["key"]))
        if index is not None:
            job["tasks"][index] = task
    return state


def _from_1(old: dict[str, Any]) -> dict[str, Any]:
    return record(old.get("framework_id"), old.get("options_digest", ""), old.get("options"), old["job"],
                  bool(old.get("finished")))


def _from_2(old: dict[str, Any]) -> dict[str, Any]:
    return {**old, "format": 3, "journal_gen": 0}


def _from_3(old: dict[str, Any]) -> dict[str, Any]:
    return {**old, "format": 4, "end": None}


def _from_4(old: dict[str, Any]) -> dict[str, Any]:
    return {**old, "format": 5, "deployment": None}


def _from_5(old: dict[str, Any]) -> dict[str, Any]:
    return {**old, "format": 6, "launched_digest": None}


_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_1, 2: _from_2, 3: _from_3, 4: _from_4,
                                                                    5: _from_5}


def encode(state: dict[str, Any]) -> bytes:
    """The bytes every store keeps (a directory's file, a ZooKeeper node): compact UTF-8 JSON."""
    return json.dumps(state, separators=(",", ":")).encode()


def decode(raw: Any) -> dict[str, Any]:
    """A stored record (its bytes, text or parsed JSON) in today's format, older ones upgraded
    step by step. Raises StateFormatError, or ValueError for what is not JSON at all."""
    if isinstance(raw, (bytes, str)):
        raw = json.loads(raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("job"), dict):
        raise StateFormatError("not a tfmesos job record (expected an object with a 'job' object)")
    found = raw.get("format", 1)
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise StateFormatError(f"format {found!r} is invalid: expected a whole number >= 1")
    if found > FORMAT:
        raise StateFormatError(f"it is in format {found}, newer than this tfmesos reads (format {FORMAT}); "
                               "run the tfmesos version that wrote it, or remove the state to start afresh")
    while found < FORMAT:
        raw = _UPGRADES[found](raw)
        found += 1
    return raw
