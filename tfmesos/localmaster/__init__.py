"""Embedded single-node Mesos master (+ logical agents) speaking the v1 HTTP APIs.

Independent of the rest of tfmesos: the same pymesos scheduler and executor
code runs against it and against a real Mesos 1.12 cluster.

    from tfmesos.localmaster import LocalMaster
    with LocalMaster(agents=2) as master:       # port=0: any free port
        ...  # MesosSchedulerDriver(sched, framework, master.address)

Module map: ``local_master`` (public class, event-loop thread), ``cli``;
``httpserver`` (HTTP/1.1 + RecordIO streams); ``scheduler_api``,
``executor_api``, ``operator_api``, ``master_api`` (endpoints);
``master`` (frameworks, offers, tasks), ``allocator``, ``validation``;
``agent``, ``containers``, ``command_executor``, ``status_updates``,
``sandbox``, ``fetcher``, ``procs`` (processes); ``resources``,
``protojson`` + ``schemas`` (Mesos' JSON->protobuf rules), ``state_json``,
``recovery`` (restart with the same work_dir).
"""
from .cli import main
from .config import Tuning
from .local_master import LocalMaster

__all__ = ["LocalMaster", "Tuning", "main"]
