"""tfmesos: run distributed TensorFlow training jobs on Mesos and DC/OS."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: every executor imports this package cold, and typing is ~5 ms
    from typing import Any

__version__ = "0.1.0"
__all__ = ["report", "KerasProgress", "notice", "stop_requested", "watch_sigterm", "exit_planned", "PLANNED_EXIT",
           "BackupAndRestore", "cluster", "ClusterError", "Job"]
# A planned stop, seen from the training script (tfmesos/task/notice.py: stdlib only, like report).
_NOTICE_NAMES = ("notice", "stop_requested", "watch_sigterm", "exit_planned", "PLANNED_EXIT")


def __getattr__(name: str) -> Any:
    # Lazy: ``import tfmesos`` (every executor and training script does) stays light;
    # ``tfmesos.report`` loads only its small module;
    # ``tfmesos.cluster`` and ``from tfmesos import cluster`` load the scheduler side only when asked for.
    if name == "report":  # tfmesos.report(step=..., loss=...): progress for the scheduler
        from .task.report import report

        return report
    if name == "KerasProgress":  # model.fit(callbacks=[tfmesos.KerasProgress()]): the same, from Keras
        from .task.keras_progress import KerasProgress

        return KerasProgress
    if name in _NOTICE_NAMES:  # tfmesos.notice(), tfmesos.stop_requested(): a planned stop announced
        from .task import notice as module

        return getattr(module, name)
    if name == "BackupAndRestore":  # tf.keras' BackupAndRestore that also saves at the batch on notice
        from .task.keras_backup import BackupAndRestore

        return BackupAndRestore
    if name in ("cluster", "ClusterError"):
        from .client import cluster as module

        return getattr(module, name)
    if name == "Job":  # douban/tfmesos' jobs_def entry: `from tfmesos import Job, cluster` keeps working
        from .client.douban import Job

        return Job
    raise AttributeError(f"module 'tfmesos' has no attribute {name!r}")
