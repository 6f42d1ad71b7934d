"""A Keras callback that appends every batch (step) fit ran to STEP_LOG (steplog.py), as
epoch x steps per epoch + batch, all the steps of a batch when steps_per_execution > 1. Put it
before tfmesos.BackupAndRestore: a batch is logged when it ended, before a save there exits.

It is also the gate of RESUMED_STEPS (steplog.py's resumed_end): a fit that resumed from a save
stops at the end of the epoch that many steps past it. ``end`` is the step fit trained to."""
from __future__ import annotations

import tensorflow as tf

from steplog import StepLog, resumed_end


class LogSteps(tf.keras.callbacks.Callback):
    def __init__(self, role: str, index: int):
        super().__init__()
        self._supports_tf_logs = True  # raw logs: allowed at batch level under ParameterServerStrategy
        self._log = StepLog(role, index)
        self._epoch = 0
        self._first: int | None = None
        self._start: int | None = None  # the step this attempt started at
        self.end = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self._first is None:
            self._start = self._step(batch)
            print(f"starting at step {self._start}", flush=True)
        self._first = batch

    def on_train_batch_end(self, batch, logs=None):
        self._log(*range(self._step(self._first), self._step(batch) + 1))

    def on_epoch_end(self, epoch, logs=None):
        steps = self.params["steps"]
        self.end = (epoch + 1) * steps
        if self._start is not None and self.end >= resumed_end(self._start, self.params["epochs"] * steps, steps):
            self.model.stop_training = True

    def _step(self, batch: int) -> int:
        return self._epoch * self.params["steps"] + batch
