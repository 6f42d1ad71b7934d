"""A planned stop, as a task sees it: ``tfmesos.notice()``, ``tfmesos.stop_requested()``.

tfmesos announces a planned stop (an agent draining, a maintenance window, ``tfmesos update``, a
graceful restart) by writing a small JSON document to the file named by ``TFMESOS_NOTICE_FILE``,
atomically, before it sends SIGTERM to the task's process group; SIGKILL follows after the stop
grace. A task that must save without being stopped (a ParameterServerStrategy chief when a worker
leaves) gets the file alone. The whole contract is in docs/developers/architecture.md ("Planned
stop: the notice"); the executor writes the file with ``write`` and sets ``task_env``'s variables.

Training scripts import this module (``tfmesos.notice`` loads it alone), so it imports nothing of
tfmesos and only the standard library; checking costs one failed ``open`` while no notice is there.
"""
from __future__ import annotations

import atexit
import json
import os
import signal
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

NOTICE_ENV = "TFMESOS_NOTICE_FILE"
# TensorFlow's PreemptionCheckpointHandler (and tf-keras) ask the GCE metadata server whether they
# run on GCP, by name, with a 5 s timeout that does not cover the name lookup. Port 0 of the
# loopback refuses at once (nothing can listen on port 0): 0.6 ms a probe (7 ms at most in 100),
# against 3.9 ms median and 3 in 100 at 5 s unset (benchmarks/planned_stop.py). On GCE it also
# keeps the handler from switching to its GCP behaviour, which ignores SIGTERM on CPU VMs.
METADATA_ENV = "GCE_METADATA_IP"
CLOSED_METADATA_ADDRESS = "127.0.0.1:0"
# PreemptionCheckpointHandler's exit code off GCP: after a notice, "saved and stopped as planned".
PLANNED_EXIT = 42
VERSION = 1
KINDS = ("drain", "maintenance", "update", "restart")


class NoticeError(ValueError):
    """A notice document that does not follow the contract; the message names the field."""


class Notice:
    """One planned stop: why, of which kind, and when SIGKILL comes (unix seconds; None: no
    deadline known). ``kind`` is one of KINDS, or "unknown" for a file this version cannot read.
    (A plain class, not a dataclass: the executor imports this module cold, and dataclasses
    costs it 6 ms.)"""

    __slots__ = ("reason", "kind", "deadline")

    def __init__(self, reason: str, kind: str, deadline: float | None = None):
        self.reason, self.kind, self.deadline = reason, kind, deadline

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Notice) and (self.reason, self.kind, self.deadline) == (
            other.reason, other.kind, other.deadline)

    def __hash__(self) -> int:
        return hash((self.reason, self.kind, self.deadline))

    def __repr__(self) -> str:
        return f"Notice(reason={self.reason!r}, kind={self.kind!r}, deadline={self.deadline!r})"

    def seconds_left(self, now: float | None = None) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - (time.time() if now is None else now)

    def to_json(self) -> str:
        return json.dumps({"v": VERSION, "reason": self.reason, "kind": self.kind, "deadline": self.deadline},
                          separators=(",", ":"))


def parse(text: str) -> Notice:
    """A notice document read strictly: NoticeError names the first field that is wrong."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise NoticeError(f"notice: not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise NoticeError("notice: expected a JSON object")
    if doc.get("v") != VERSION:
        raise NoticeError(f"notice: v: expected {VERSION}, got {doc.get('v')!r}")
    reason, kind, deadline = doc.get("reason"), doc.get("kind"), doc.get("deadline")
    if not isinstance(reason, str) or not reason:
        raise NoticeError(f"notice: reason: expected a non-empty string, got {reason!r}")
    if kind not in KINDS:
        raise NoticeError(f"notice: kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if deadline is not None and (isinstance(deadline, bool) or not isinstance(deadline, (int, float))):
        raise NoticeError(f"notice: deadline: expected unix seconds or null, got {deadline!r}")
    return Notice(reason, kind, None if deadline is None else float(deadline))


def write(path: str, notice: Notice) -> None:
    """Write ``notice`` to ``path`` atomically (a temporary file beside it, then a rename): a task
    reading at any moment sees no file or the whole document. The executor's side of the contract."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as out:
        out.write(notice.to_json() + "\n")
    os.replace(temporary, path)


def task_env(notice_path: str, env: dict[str, str]) -> dict[str, str]:
    """The variables a task is started with for this contract (the job's own ``env`` wins)."""
    added = {NOTICE_ENV: notice_path, METADATA_ENV: CLOSED_METADATA_ADDRESS}
    return {name: value for name, value in added.items() if name not in env}


_found: Notice | None = None


def notice(path: str | None = None) -> Notice | None:
    """The planned stop announced to this task, or None. Outside tfmesos (no TFMESOS_NOTICE_FILE)
    always None. Once seen, a notice stays: the file is never taken back for a running task."""
    global _found
    if _found is not None and path is None:
        return _found
    where = path or os.environ.get(NOTICE_ENV)
    if not where:
        return None
    try:
        with open(where) as source:
            text = source.read()
    except FileNotFoundError:
        return None
    except OSError as exc:  # there, but unreadable: still a stop announced
        found = Notice(f"notice file {where} unreadable: {exc.strerror}", "unknown")
    else:
        try:
            found = parse(text)
        except NoticeError as exc:
            found = Notice(f"{exc} (in {where})", "unknown")
    if path is None:
        _found = found
    return found


# ---------------------------------------------------------------- SIGTERM as a request to save
_sigterm_at: float | None = None
_previous: Any = None
_installed = False


def _on_sigterm(signum: int, frame: Any) -> None:
    global _sigterm_at
    if _sigterm_at is None:
        _sigterm_at = time.time()
    # A Python handler installed before (TensorFlow's PreemptionCheckpointHandler's, a framework's)
    # hears of it too; the default action (die at once) and SIG_IGN are what this one replaces.
    if callable(_previous):
        _previous(signum, frame)


def watch_sigterm() -> bool:
    """Make SIGTERM a request to save rather than death: the signal is recorded (see
    ``sigterm_received`` and ``stop_requested``) and the script carries on to its next step. Call it
    on the main thread, early (a SIGTERM before it kills as usual); calling again does nothing.
    Returns whether the handler is in place (False off the main thread, where Python cannot)."""
    global _installed, _previous
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    _previous = signal.signal(signal.SIGTERM, _on_sigterm)
    _installed = True
    return True


def sigterm_received() -> float | None:
    """When the first SIGTERM arrived since ``watch_sigterm`` (unix seconds), or None."""
    return _sigterm_at


def stop_requested() -> bool:
    """Whether this task should save at its next step and stop: a notice is there, or a SIGTERM
    arrived since ``watch_sigterm``. Cheap enough to ask every step."""
    return _sigterm_at is not None or notice() is not None


def describe() -> str:
    """What asked for the stop, for a log line."""
    found = notice()
    if found is not None:
        return found.reason
    # Neither here: a peer's, agreed on through TensorFlow's coordination service.
    return "SIGTERM" if _sigterm_at is not None else "a peer's notice"


_leaving: list[int] = []


def exit_planned(saved: str = "", code: int = PLANNED_EXIT) -> None:
    """Leave after a save made for a planned stop: one line on stderr, then ``sys.exit(code)``
    (PLANNED_EXIT unless told otherwise; tfmesos counts it as a planned stop, not a failure).
    ``finally`` blocks and every atexit handler run as usual; the interpreter's own teardown of
    TensorFlow's objects after them (measured 1 to 5 s for a ParameterServerStrategy chief, time
    taken from the grace) is skipped: see ``_skip_teardown``."""
    what = f": {saved}" if saved else ""
    print(f"tfmesos: planned stop ({describe()}){what}; exiting {code}", file=sys.stderr, flush=True)
    if not _leaving:
        # Registered last, so called first: it runs the others itself, then leaves.
        atexit.register(_skip_teardown)
    _leaving[:] = [code]
    sys.exit(code)


def _skip_teardown() -> None:
    """Run every other atexit handler (TensorFlow's join of an async checkpoint save among them),
    flush, and leave with the planned code rather than tear TensorFlow down object by object."""
    if len(_leaving) != 1:
        return  # called again by the run below
    _leaving.append(-1)
    run_others = getattr(atexit, "_run_exitfuncs", None)
    if run_others is None:
        return  # another Python: the usual exit, only slower
    run_others()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(_leaving[0])


def termination_config(**overrides: Any) -> Any:
    """A ``tf.distribute.experimental.TerminationConfig`` for PreemptionCheckpointHandler that
    watches the notice as well as SIGTERM (its own watcher sees SIGTERM only) and exits
    PLANNED_EXIT. Installs ``watch_sigterm``: with a watcher function TensorFlow installs none.
    Only needed where a task may get the file without SIGTERM; the tutorial's handler needs nothing."""
    import tensorflow as tf

    watch_sigterm()
    settings: dict[str, Callable[..., Any] | float | None] = {
        "termination_watcher_fn": stop_requested, "exit_fn": lambda: exit_planned()}
    settings.update(overrides)
    return tf.distribute.experimental.TerminationConfig(**settings)
