"""``tfmesos.BackupAndRestore(backup_dir)``: tf.keras' BackupAndRestore that also saves at the batch
when a planned stop is announced, then stops the task; the next ``fit`` resumes at the next batch.

It is the job's ``tf.keras.callbacks.BackupAndRestore`` (same arguments, same files, same resume
at the last epoch after a crash), plus, on notice (the notice file or SIGTERM, see
tfmesos/task/notice.py):

- MultiWorkerMirroredStrategy (and a single worker): every worker must save at the same batch
  although only one may have been told. That is what TensorFlow's PreemptionCheckpointHandler
  does, and what tf-keras' ``BackupAndRestore(save_before_preemption=True)`` wires into fit, on
  GCP only. This callback makes the same wiring with a TerminationConfig that works anywhere: the
  first worker told proposes "the batch after this one" through the coordination service, every
  worker saves BackupAndRestore's state there and exits PLANNED_EXIT (42).
- ParameterServerStrategy (only the chief runs fit; tf-keras' BackupAndRestore saves per epoch
  there): the chief waits for the steps it has scheduled (``ClusterCoordinator.join``), saves at
  that batch and exits PLANNED_EXIT.

Either way fit then resumes at the batch after the saved one (tf-keras' batch-level resume, the
one its preemption saves use). Needs tf-keras (``TF_USE_LEGACY_KERAS=1``, tfmesos' default);
TensorFlow is imported when the callback is made, so ``import tfmesos`` stays light.
"""
from __future__ import annotations

import shutil
import tempfile
from typing import Any, Callable

from . import notice

_classes: dict[type, type] = {}
# One PreemptionCheckpointHandler per process: its keys in the coordination service outlive it
# (a second handler would find "stop watching" there, or fail to claim the stop), so a script
# that calls fit twice reuses it; ``_save`` points at the running fit's state.
_handler: Any = None
_save: list[Callable[[], None]] = []
_saved: list[str] = []  # what the save was, for the exit's line


def _planned_save() -> None:
    _save[0]()


def _planned_exit() -> None:
    notice.exit_planned(_saved[0] if _saved else "")


def _is_pss(strategy: Any) -> bool:
    import tensorflow as tf

    return isinstance(strategy, (tf.distribute.ParameterServerStrategy,
                                 tf.distribute.experimental.ParameterServerStrategy))


def _handler_for(strategy: Any) -> Any:
    """The process' PreemptionCheckpointHandler: it watches ``notice.stop_requested`` (the file or
    SIGTERM) rather than SIGTERM alone, saves through ``_planned_save`` and exits PLANNED_EXIT."""
    global _handler
    if _handler is None:
        import tensorflow as tf

        # It restores its checkpoint when made, and BackupAndRestore has just restored the same
        # state: give it an empty one of its own (it saves through save_fn, never through this).
        scratch = tempfile.mkdtemp(prefix="tfmesos-handler-")
        try:
            unused = tf.train.CheckpointManager(tf.train.Checkpoint(), scratch, max_to_keep=1)
            _handler = tf.distribute.experimental.PreemptionCheckpointHandler(
                getattr(strategy, "cluster_resolver", None), unused,
                termination_config=notice.termination_config(save_fn=_planned_save, exit_fn=_planned_exit))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    # Every worker counts this fit's batches from 0: the proposed "batch after this one" is the
    # same batch everywhere whatever each restored.
    _handler._run_counter = 0
    return _handler


def _backup_class(base: type) -> type:
    class BackupAndRestore(base):  # type: ignore[misc, valid-type]
        def __init__(self, backup_dir: str, save_freq: Any = "epoch", delete_checkpoint: bool = True):
            super().__init__(backup_dir, save_freq=save_freq, delete_checkpoint=delete_checkpoint)
            notice.watch_sigterm()  # made on the main thread, before fit: a SIGTERM asks for a save
            self._pss = False
            self._claimed = False
            self._epoch = self._batch = 0

        def _implements_train_batch_hooks(self) -> bool:
            return True  # the stop is looked for at every batch

        def on_train_begin(self, logs: Any = None) -> None:
            super().on_train_begin(logs)  # restores the backup, if any
            state = self._training_state
            # tf-keras' resume at the saved batch (initial epoch and step from the backup), the
            # path its preemption saves take; it needs the saved batch right, which this keeps.
            state._enable_save_before_preemption = True
            steps = (self.params or {}).get("steps")
            if steps and int(state._ckpt_saved_epoch.numpy()) >= 0 > int(state._ckpt_saved_batch.numpy()):
                state._ckpt_saved_batch.assign(steps - 1)  # an epoch's backup without its batch: the next epoch
            self._pss = _is_pss(self.model.distribute_strategy)
            if self._pss:
                return
            del _save[:]
            _save.append(lambda: self._save_for_stop(state))
            state.preemption_handler = _handler_for(self.model.distribute_strategy)
            self.model._preemption_handler = state.preemption_handler  # errors reach every worker

        def _save_for_stop(self, state: Any) -> None:
            state.back_up(epoch=self._epoch)
            _saved[:] = [f"saved at epoch {self._epoch + 1}, batch {self._batch + 1}"]

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._epoch = epoch
            super().on_epoch_begin(epoch, logs)

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            pass  # the saved batch is set at the batch's end: its last step, steps_per_execution > 1 too

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            state = self._training_state
            self._batch = batch
            if not self._pss:
                state._ckpt_saved_batch.assign(batch)
                if not self._claimed and notice.stop_requested():
                    # Tell the handler now rather than at its watcher's next poll (once a second):
                    # it proposes the next batch to every worker before this batch's check.
                    self._claimed = True
                    claim = getattr(state.preemption_handler, "_maybe_set_received_own_sigterm", None)
                    if claim is not None:
                        claim()
                super().on_train_batch_end(batch, logs)  # the handler: agree, save, exit
                return
            if notice.stop_requested():
                # Only the chief runs fit: wait for every step it scheduled, then save there.
                self.model._cluster_coordinator.join()
                state._ckpt_saved_batch.assign(batch)
                state.back_up(epoch=self._epoch)
                notice.exit_planned(f"saved at epoch {self._epoch + 1}, batch {batch + 1}")

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            if self._pss:  # the epoch's backup resumes at the next epoch (PSS never set the batch)
                steps = (self.params or {}).get("steps")
                if steps:
                    self._training_state._ckpt_saved_batch.assign(steps - 1)
            super().on_epoch_end(epoch, logs)

        def on_train_end(self, logs: Any = None) -> None:
            if getattr(self.model, "_preemption_handler", None) is _handler:
                self.model._preemption_handler = None
            super().on_train_end(logs)

    BackupAndRestore.__qualname__ = BackupAndRestore.__name__
    BackupAndRestore.__module__ = __name__
    return BackupAndRestore


def BackupAndRestore(backup_dir: str, save_freq: Any = "epoch", delete_checkpoint: bool = True) -> Any:
    """``tf.keras.callbacks.BackupAndRestore(backup_dir, save_freq, delete_checkpoint)`` that also
    saves at the batch on a planned stop and exits PLANNED_EXIT (see the module's text). Make it
    on the main thread, before ``fit``: it starts watching SIGTERM."""
    import tensorflow as tf

    base = tf.keras.callbacks.BackupAndRestore
    if not hasattr(base, "_backup"):  # Keras 3's has another shape, and fit no strategy support
        raise RuntimeError(
            "tfmesos.BackupAndRestore needs tf-keras: tf.keras here is Keras 3 "
            f"({getattr(tf.keras, '__version__', '?')}); start the task with TF_USE_LEGACY_KERAS=1 "
            "(tfmesos' default, job.legacy_keras) and tf-keras installed")
    if base not in _classes:
        _classes[base] = _backup_class(base)
    return _classes[base](backup_dir, save_freq=save_freq, delete_checkpoint=delete_checkpoint)
