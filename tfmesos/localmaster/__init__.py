"""Embedded single-node Mesos master (+ logical agents) speaking the v1 HTTP APIs.

Independent of the rest of tfmesos: the same pymesos scheduler and executor
code runs against it and against a real Mesos 1.12 cluster.

    from tfmesos.localmaster import LocalMaster
    with LocalMaster(agents=2) as master:       # port=0: any free port
        ...  # MesosSchedulerDriver(sched, framework, master.address)

Module map (every module of this folder):

- Entry points: ``local_master`` (``LocalMaster``: the master and its agents on an
  event-loop thread), ``cli`` + ``__main__`` (``tfmesos local-master``), ``config``
  (``MasterConfig``, ``QuotaConfig``, ``Tuning``), ``ports`` (a free block of task ports),
  ``zk_contender`` (announcing the master in ZooKeeper).
- HTTP: ``httpserver`` (HTTP/1.1 + RecordIO event streams), ``calls`` (decoding a call
  body), ``auth`` (Basic authentication, ACLs); the master's ``master_api`` (routes),
  ``scheduler_api``, ``operator_api``, ``metrics``, ``web_ui`` (its page at ``/`` and a sandbox browser); the agents' ``executor_api`` (routes
  and executor-call checks), ``files_api``; ``state_json`` (``/state`` of both).
- Master: ``master`` (frameworks, offers, tasks), ``framework`` (its records),
  ``allocator`` (allocation rounds, weights, quota), ``validation`` (framework and ACCEPT
  checks, Mesos' messages), ``roles`` (role names), ``ids`` (id formats).
- Agents: ``agent`` (one agent's bookkeeping), ``containers`` (its records: frameworks,
  executor runs, tasks), ``executor_sessions`` (the agent's half of the v1 executor API),
  ``status_updates`` (reliable per-task updates), ``command_executor`` (the built-in
  command executor), ``sandbox`` (layout, executor environment), ``fetcher`` (URIs),
  ``procs`` (process groups, exits, kills), ``forkserver`` + ``zygote`` (Python executors
  forked from a warm interpreter instead of exec'd), ``recovery`` (checkpoints; what a restart with
  the same work_dir adopts or kills).
- Mesos' data rules: ``resources`` (resource arithmetic), ``protojson`` + ``schemas``
  (JSON -> protobuf as Mesos parses it), ``durations`` (stout Duration text).
"""
from .cli import main
from .config import Tuning
from .local_master import LocalMaster

__all__ = ["LocalMaster", "Tuning", "main"]
