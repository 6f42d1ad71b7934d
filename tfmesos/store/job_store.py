"""One job's record in its store, typed: what a scheduler reads back to resume a job, and how it
writes the job as it changes.

- ``saved()`` is the record as kept (a ``JobRecord``; a ``UsageError`` when it cannot be read),
  ``resume()`` the ``Job`` it holds and its framework id, once the options given now are the ones
  it ran with (``resumable_with``).
- ``record(job, framework_id, changed)`` is the journal policy: one task's end is appended (O(1));
  the whole record is rewritten when a task id is new, when one event changed other tasks too (a
  whole-job restart: ``Job.take_others_changed``), when the job is over, or once the journal
  holds as many entries as the job has tasks (``JOURNAL_MIN`` at least), so that loading replays
  a bounded journal. Each whole record starts a new generation (format.py, format 3).
- ``options_digest`` says which options a job ran with, so that a later run resumes it only with
  the same ones. After ``tfmesos update`` (``updated``) the record holds the update's options and
  the digest of those the scheduler was started with (format 6): a scheduler started again with
  either resumes the job with the update's (``options_to_resume``). The record keeps env names
  only; the update's env values are kept apart, readable by the job's user only
  (``StateStore.keep_env``), and fill them in.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from typing import Any

from ..core.job.job import Job
from ..core.spec import JobSpec, TaskKey
from ..errors import UsageError, cut
from ..masking import env_of, mask_options, unmask_options
from ..options.load import OptionsError, without_defaults
from .format import JobRecord, StateFormatError, journal_entry
from .state_store import ZK_AUTH_ENV, StateStore

JOURNAL_MIN = 16
DIGEST_PREFIX = "d2-"  # digests of the options without their defaults (tfmesos 0.1.0 hashed them all)


def options_digest(options: dict[str, Any]) -> str:
    """Which options a recorded job ran with: schema defaults left out, so that a newer tfmesos
    with more options resumes a job an older one recorded."""
    chosen = json.dumps(without_defaults(options), sort_keys=True)
    return DIGEST_PREFIX + hashlib.sha256(chosen.encode()).hexdigest()[:16]


def resumable_with(saved: JobRecord | dict[str, Any], options: dict[str, Any]) -> bool:
    """Whether a recorded job is the one these options describe."""
    rec = saved if isinstance(saved, JobRecord) else None
    digest = (rec.options_digest if rec else saved.get("options_digest")) or ""  # type: ignore[union-attr]
    if digest.startswith(DIGEST_PREFIX):
        return digest == options_digest(options)
    # Recorded by 0.1.0, whose digest covered every default of its own schema: compare the options
    # it kept (env values hidden on both sides), defaults left out.
    kept = rec.options if rec else saved.get("options")  # type: ignore[union-attr]
    return kept is not None and without_defaults(kept) == without_defaults(mask_options(options))


class JobStore:
    """A ``StateStore`` holding one job's record for the options it runs with; without one
    (``tfmesos.cluster()``, a run without --state-dir or --zk) nothing is recorded while the job
    runs, and ``final`` still makes the record kept once it ended."""

    def __init__(self, store: StateStore | None, options: dict[str, Any], keep_finished: bool = False,
                 deployment: str | None = None, launched_digest: str | None = None):
        self.store = store
        self.keep_finished = keep_finished  # record the end rather than have it cleared (Marathon)
        self.deployment = deployment  # the Marathon app and version this run is (marathon_app.deployment)
        self._digest = options_digest(options)  # written with every record: computed once
        self._options = mask_options(options)  # env values stay out of the state
        self._launched = launched_digest  # after an update: the digest of the options the job was started with
        self.env_kept = False  # the last update's env values kept apart (StateStore.keep_env)
        self._generations = itertools.count(time.time_ns()).__next__  # unique across restarts
        # The journal: the generation of the last whole record, the task ids it knew (launch_seq),
        # entries appended since, the job's events written so far.
        self._gen: int | None = None
        self._saved_seq = -1
        self._journal_len = 0
        self._events_saved = 0

    @property
    def where(self) -> str:
        return self.store.where if self.store is not None else "(no state store)"

    @property
    def persists(self) -> bool:
        return self.store is not None

    def saved(self) -> JobRecord | None:
        """The record kept (older formats upgraded, its journal replayed), or None (no store, or
        nothing recorded); a UsageError naming where it is when this tfmesos cannot read it."""
        if self.store is None:
            return None
        try:
            raw = self.store.load()
            return None if raw is None else JobRecord.from_json(raw)
        except StateFormatError as exc:  # a newer format, or not a job record
            raise UsageError(f"the job's state in {self.where}", str(exc)) from None
        except ValueError as exc:  # not JSON: a file edited or cut short by hand
            raise UsageError(f"the job's state in {self.where}", f"unreadable ({cut(str(exc), 100)})",
                             "remove it to start the job afresh") from None

    def updated(self, options: dict[str, Any]) -> None:
        """``tfmesos update``: the job runs with ``options`` from now on, recorded with the next write,
        beside the digest of the options it was started with (kept from the first update on)."""
        if self._launched is None:
            self._launched = self._digest
        self._digest, self._options = options_digest(options), mask_options(options)
        if self.store is not None:  # the values the record leaves out, for a restart with the first options
            self.env_kept = self.store.keep_env(env_of(options))

    def options_to_resume(self, saved: JobRecord, options: dict[str, Any]) -> dict[str, Any]:
        """The options a recorded job resumes with: ``options`` when they are the ones it runs with
        (or another job's: ``resume`` refuses those); the update's, kept in the record, when
        ``options`` are those its scheduler was started with before an update, their hidden env
        values taken by name from those the store kept apart (``StateStore.kept_env``), else from
        ``options``. OptionsError when the update set env values that neither holds (ZooKeeper
        without TFMESOS_ZK_AUTH keeps none)."""
        if resumable_with(saved, options) or not saved.launched_digest or saved.options is None:
            return options
        if saved.launched_digest != options_digest(options):
            return options
        env = self.store.kept_env() if self.store is not None else None
        for given in ([env] if env else []) + [options]:
            kept = unmask_options(saved.options, given)
            if options_digest(kept) == saved.options_digest:
                return kept
        raise OptionsError(
            [f"$.job.env: the job {saved.options.get('service', {}).get('name')!r} recorded in {self.where} was "
             "updated (tfmesos update) with environment values that its record does not keep (it keeps their "
             f"names only; the update's values are kept apart in a state directory, or in ZooKeeper with {ZK_AUTH_ENV} "
             "set): expected the options given to that update, to resume it with them"])

    def resume(self, saved: JobRecord, spec: JobSpec, options: dict[str, Any], seed: int = 0) -> tuple[Job, str | None]:
        """The job a running record holds and its framework id; OptionsError when these options
        are not the ones it ran with."""
        if not resumable_with(saved, options):
            raise OptionsError(
                [f"$.service.name: a job named {spec.service.name!r} is still recorded in {self.where} "
                 f"(framework {saved.framework_id}) with other options: expected the same options to resume it, "
                 "or another service name"])
        return Job.from_dict(spec, saved.job, seed=seed), saved.framework_id

    def record(self, job: Job, framework_id: str, changed: TaskKey | None = None) -> None:
        """Write the job after a durable change; ``changed``: the one task it was about, if any.
        Once the job is over and finished jobs are kept, the record says finished."""
        if self.store is None:
            return
        others_changed = job.take_others_changed()  # a whole-job restart: more than one task to write
        if (changed is not None and not others_changed and self._gen is not None and job.launch_seq == self._saved_seq
                and not job.terminal and self._journal_len < max(JOURNAL_MIN, len(job.tasks))):
            # One task ended and no task id is new: O(1) on disk instead of every task again.
            self.store.append(journal_entry(self._gen, job.own_fields(), job.events[self._events_saved:],
                                            job.task_dict(changed)))
            self._journal_len += 1
        else:
            self._gen = self._generations()
            self.store.save(JobRecord(framework_id, self._digest, self._options, job.to_dict(),
                                      finished=self.keep_finished and job.terminal, journal_gen=self._gen,
                                      deployment=self.deployment, launched_digest=self._launched).to_json())
            self._saved_seq, self._journal_len = job.launch_seq, 0
        self._events_saved = len(job.events)

    def final(self, job: Job, framework_id: str | None, end: dict[str, Any]) -> JobRecord:
        """The record kept of a job that ended (``end``: format.end_of)."""
        return JobRecord(framework_id, self._digest, self._options, job.to_dict(), finished=True, end=end,
                         deployment=self.deployment, launched_digest=self._launched)
