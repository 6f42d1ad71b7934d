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
"""
from .cli import main
from .config import Tuning
from .local_master import LocalMaster

__all__ = ["LocalMaster", "Tuning", "main"]
