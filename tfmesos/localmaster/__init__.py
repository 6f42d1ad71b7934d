"""Embedded single-node Mesos master (+ logical agents) speaking the v1 HTTP APIs.

Independent of the rest of tfmesos: the same pymesos scheduler and executor
code runs against it and against a real Mesos cluster.
"""
from .cli import main
from .config import Tuning
from .local_master import LocalMaster

__all__ = ["LocalMaster", "Tuning", "main"]
