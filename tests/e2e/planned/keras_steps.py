"""A Keras callback that appends every batch (step) fit ran to STEP_LOG (steplog.py), as
epoch x steps per epoch + batch, all the steps of a batch when steps_per_execution > 1. Put it
before tfmesos.BackupAndRestore: a batch is logged when it ended, before a save there exits."""
from __future__ import annotations

import tensorflow as tf

from steplog import StepLog


class LogSteps(tf.keras.callbacks.Callback):
    def __init__(self, role: str, index: int):
        super().__init__()
        self._supports_tf_logs = True  # raw logs: allowed at batch level under ParameterServerStrategy
        self._log = StepLog(role, index)
        self._epoch = 0
        self._first: int | None = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self._first is None:
            print(f"starting at step {self._step(batch)}", flush=True)
        self._first = batch

    def on_train_batch_end(self, batch, logs=None):
        self._log(*range(self._step(self._first), self._step(batch) + 1))

    def _step(self, batch: int) -> int:
        return self._epoch * self.params["steps"] + batch
