"""localmesos: an embedded single-node Mesos master (+ logical agents) speaking the v1 HTTP APIs.

A program of its own, inside tfmesos' repository: it imports nothing of tfmesos, and the same
pymesos scheduler and executor code runs against it and against a real Mesos 1.12 cluster.

    from localmesos import LocalMaster
    with LocalMaster(agents=2) as master:       # port=0: any free port
        ...  # MesosSchedulerDriver(sched, framework, master.address)

Module map (each folder's ``__init__`` maps its own modules):

- Here: ``local_master`` (``LocalMaster``: the master and its agents on an event-loop thread),
  ``cli`` + ``__main__`` (``python -m localmesos``, ``tfmesos local-master``), ``config``
  (``MasterConfig``, ``QuotaConfig``, ``Tuning``), ``ports`` (a free block of task ports), and
  Mesos' data rules both sides share: ``resources`` (resource arithmetic), ``roles`` (role
  names), ``ids`` (id formats), ``durations`` (stout Duration text).
- ``http/``: the HTTP server, protobuf-JSON, schemas, call decoding, authentication.
- ``master/``: frameworks, offers, allocation, the scheduler and operator APIs, the web UI.
- ``agent/``: sandboxes, the executor API, containers, the fork server, files, recovery.

The package's own names (LocalMaster, Tuning, main, and the PATH rule of a task: task_path,
DEFAULT_PATH) load their modules on first use, and each module imports what only some requests
need (URIs to fetch, processes to kill, the web UI) where it is needed: a tiny run imports no more
than it takes to start the master, answer SUBSCRIBE and launch.
"""
from __future__ import annotations

__all__ = ["DEFAULT_PATH", "LocalMaster", "Tuning", "main", "task_path"]


def __getattr__(name: str) -> object:
    # Each name is loaded on first use: a program that only reads a rule (tfmesos' command line the
    # agent flags, tfrun a task's PATH) never loads the master, its event loop or its agents.
    if name == "LocalMaster":
        from .local_master import LocalMaster

        return LocalMaster
    if name == "Tuning":
        from .config import Tuning

        return Tuning
    if name == "main":
        from .cli import main

        return main
    if name in ("task_path", "DEFAULT_PATH"):  # the PATH a task gets, as the agents set it
        from .agent import sandbox

        return getattr(sandbox, name)
    raise AttributeError(f"module 'localmesos' has no attribute {name!r}")
