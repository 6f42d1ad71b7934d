"""The persisted job record: its one shape and its format number.

A scheduler restarted after an upgrade (Marathon restarts the app with the new version) must
read what the old one wrote: every record carries ``format``; an older format is upgraded on
load, a newer one is refused with a message, never half-read.

- Format 1 (tfmesos 0.1.0, no ``format`` field): a running job was
  ``{framework_id, options_digest, options, job}``, a job finished under Marathon
  ``{finished: true, options_digest, job}``.
- Format 2: ``{format, framework_id, options_digest, options, finished, job}`` for both, with
  ``job`` as ``Job.to_dict()`` makes it and ``options`` with env values hidden.
"""
from __future__ import annotations

import json
from typing import Any, Callable

FORMAT = 2


class StateFormatError(ValueError):
    """A record this tfmesos cannot read: a newer format, or not a job record at all."""


def record(framework_id: str | None, options_digest: str, options: dict[str, Any] | None,
           job: dict[str, Any], finished: bool = False) -> dict[str, Any]:
    """The record to persist, running or finished: the same shape."""
    return {"format": FORMAT, "framework_id": framework_id, "options_digest": options_digest,
            "options": options, "finished": finished, "job": job}


def _from_1(old: dict[str, Any]) -> dict[str, Any]:
    return record(old.get("framework_id"), old.get("options_digest", ""), old.get("options"), old["job"],
                  bool(old.get("finished")))


_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_1}


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
