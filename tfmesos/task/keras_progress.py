"""``tfmesos.KerasProgress()``: a Keras callback that feeds ``model.fit``'s progress to tfmesos.

Passed to ``model.fit(callbacks=[...])``, it sends the global step (epoch x steps per epoch +
batch), the total and the batch loss through ``tfmesos.report`` at most every ``every_seconds``,
and each epoch's logs (loss, accuracy, validation metrics) at its end: the page's progress bar and
loss chart, ``tfmesos status`` and the metrics, with no report call in the script. Outside tfmesos
it does nothing (``report`` returns at once).

The step is sent when each epoch begins (after a restart: the epoch BackupAndRestore resumed at,
so the progress goes on from there, never back to step 0) and when its last batch ends, whatever
the interval: the time its validation and checkpoints take falls between two reports of the
same step, which the page's steps/s chart leaves out, instead of dragging one stretch towards 0.
Likewise the fit's first batch, which traces the train step (seconds): its end is sent as the step
the fit began at, so that steps/s counts from when the traced step runs.

It subclasses ``tf.keras.callbacks.Callback`` as the script sees it (tf-keras under
TF_USE_LEGACY_KERAS=1, else Keras 3), made when first asked for: importing ``tfmesos`` stays light.
"""
from __future__ import annotations

import time
from typing import Any

from .report import report

_classes: dict[type, type] = {}


def _resolved(logs: Any) -> dict[str, Any]:
    """Logs as plain values: under ParameterServerStrategy a batch's logs are a RemoteValue of
    the step that is scheduled, fetched (waited for) only when they are sent."""
    if logs is not None and hasattr(logs, "fetch"):
        logs = logs.fetch()
    return dict(logs) if isinstance(logs, dict) else {}


def _progress_class(base: type) -> type:
    class KerasProgress(base):  # type: ignore[misc, valid-type]
        def __init__(self, every_seconds: float = 1.0):
            super().__init__()
            # Raw logs (tensors, RemoteValues): Keras would otherwise turn every batch's logs into
            # numbers for this callback, a sync per batch; only what is sent is converted.
            self._supports_tf_logs = True
            self.every_seconds = every_seconds
            self._epoch = 0
            self._last = 0.0
            self._tracing = True  # the fit's first batch has not ended

        def _steps(self) -> int | None:
            return (self.params or {}).get("steps")

        def _total(self) -> int | None:
            steps, epochs = self._steps(), (self.params or {}).get("epochs")
            return steps * epochs if steps and epochs else None

        def on_train_begin(self, logs: Any = None) -> None:
            self._last, self._tracing = time.monotonic(), True

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._epoch = epoch  # BackupAndRestore makes fit start at the epoch it restored
            steps = self._steps()
            report(step=epoch * steps if steps else None, total_steps=self._total())

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = time.monotonic()
            steps = self._steps()
            if self._tracing:  # its time went to tracing: the fit's first step, as at its begin
                self._last, self._tracing = now, False
                report(step=self._epoch * steps + batch if steps else batch, total_steps=self._total())
                return
            if now - self._last < self.every_seconds and not (steps and batch + 1 == steps):
                return
            self._last = now
            step = self._epoch * steps + batch + 1 if steps else batch + 1
            report(step=step, total_steps=self._total(), loss=_resolved(logs).get("loss"))

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            steps = self._steps()
            values = {k: v for k, v in _resolved(logs).items() if k not in ("step", "total_steps", "epoch")}
            report(step=(epoch + 1) * steps if steps else None, total_steps=self._total(), epoch=epoch + 1, **values)

    KerasProgress.__qualname__ = KerasProgress.__name__
    KerasProgress.__module__ = __name__
    return KerasProgress


def KerasProgress(every_seconds: float = 1.0) -> Any:
    """A callback for ``model.fit`` that reports progress to tfmesos (see the module's text)."""
    import tensorflow as tf

    base = tf.keras.callbacks.Callback
    if base not in _classes:
        _classes[base] = _progress_class(base)
    return _classes[base](every_seconds)
