"""What changes when ``tfmesos run`` is a Marathon app (the DC/OS package) rather than a command.

Marathon restarts an app whose process exits, for any reason, and it stops one with SIGTERM when
it moves, upgrades or removes it. So, under Marathon:

- a job that ended must not end the process (Marathon would start it, and the job, again): its
  record says finished (written with the job's last ``Persist``, see ``JobStore.record``)
  and the scheduler serves the final status, health included, until the app is removed;
- a scheduler started on a finished record only serves that status, when the record is of this
  deployment of the app (a restart); a new install under the same name, or the app changed (either
  gives it a new version), runs the job anew (``serves_recorded_end``);
- SIGTERM while the job runs on a real cluster is a restart, not a stop: the scheduler leaves and
  the next instance re-subscribes with the recorded framework id. (Outside Marathon, and on the
  embedded master, SIGTERM stops the job like Ctrl-C: see ``signals``.)

``runner.py`` runs the job and calls these at those three points.
"""
from __future__ import annotations

import os
import signal
from typing import Any, Callable

from ..api import routes
from .http_api import ApiServer, Operations
from .console import Console
from .signals import SignalWakeup
from ..core.status import StatusSnapshot

MARATHON_APP = "MARATHON_APP_ID"  # set by Marathon in every app's environment
MARATHON_VERSION = "MARATHON_APP_VERSION"  # the app definition's version: new at each install or change

Snapshot = Callable[[], StatusSnapshot]
# Starts the API of a job that is over: (status snapshot, what POST /v1/shutdown calls, operations).
StartApi = Callable[[Snapshot, Callable[[], None], Operations], ApiServer]


def under_marathon() -> bool:
    return bool(os.environ.get(MARATHON_APP))


def deployment() -> str | None:
    """Which deployment of the app this process is (``APP_ID@VERSION``), recorded with the job; None
    outside Marathon."""
    if not under_marathon():
        return None
    return f"{os.environ[MARATHON_APP]}@{os.environ.get(MARATHON_VERSION, '')}"


def serves_recorded_end(recorded: str | None) -> bool:
    """Whether a scheduler started on a finished record serves its end rather than run the job
    again: under Marathon, when the record is of this deployment (Marathon restarted the app). A
    record of another one (the app installed again, or changed) is a job to run anew; one written
    before deployments were recorded (format < 5) cannot tell, and keeps serving its end."""
    return under_marathon() and (recorded is None or recorded == deployment())


def keeps_finished(persisting: bool) -> bool:
    """Whether an ended job is recorded finished instead of forgotten: under Marathon, when the
    job's state is persisted at all."""
    return persisting and under_marathon()


def leaves_on_sigterm(local: bool) -> bool:
    """Whether SIGTERM while a job runs makes the scheduler leave the job to the next instance
    (Marathon restarting the app on a real cluster) rather than stop it: with the embedded
    master, which dies with us, or outside Marathon, it stops the job."""
    return not local and under_marathon()


def serve_recorded_end(name: str, saved: dict[str, Any], final: StatusSnapshot, start_api: StartApi,
                       console: Console, ops: Operations) -> int:
    """A scheduler started on a finished record: the job is not run again, its end is served."""
    console.event(f"job {name!r} already ended ({saved['job'].get('phase')}); serving its status")
    return serve_until_removed(start_api, lambda: final, console, ops)


def serve_until_removed(start_api: StartApi, snapshot: Snapshot, console: Console, ops: Operations,
                        code: int = 0) -> int:
    """Keep answering /v1/health and /v1/status until the app is removed (SIGTERM, or POST
    /v1/shutdown); then exit with the job's ``code``."""
    stop = SignalWakeup(signal.SIGTERM)
    try:
        api = start_api(snapshot, stop.set, ops)
        try:
            console.line(f"job over; status stays on http://{api.address}{routes.STATUS} until the app is removed")
            stop.wait()
        finally:
            api.stop()
    finally:
        stop.close()
    return code
