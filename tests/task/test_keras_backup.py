"""tfmesos.BackupAndRestore in one process (no cluster: the default strategy), run as a child
Python with real TensorFlow: a notice in the middle of fit saves at a batch and exits 42, and fit
started again resumes at the next batch and trains the rest once. The multi-worker and
parameter-server cases are tests/e2e/test_planned_stops.py."""
from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

from tfmesos.task import notice

ROOT = Path(__file__).resolve().parents[2]
FIT = """
import os, sys
import numpy as np
import tensorflow as tf
import tfmesos
from tfmesos.task import notice

notice_path, log_path = sys.argv[1], sys.argv[2]


class Steps(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        step = self.epoch * 20 + batch
        with open(log_path, "a") as log:
            log.write(f"{step}\\n")
        if step == 27 and not os.path.exists(notice_path):  # stands in for the executor
            notice.write(notice_path, notice.Notice("restart", "restart"))


backup = tfmesos.BackupAndRestore(os.path.join(os.path.dirname(log_path), "backup"))
x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
model = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(8), epochs=4, steps_per_epoch=20,
          verbose=0, callbacks=[Steps(), backup])
print("iterations", int(model.optimizer.iterations.numpy()))
"""


def _fit(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", FIT, str(tmp_path / "notice.json"), str(tmp_path / "steps.log")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2",
                               "TMPDIR": str(tmp_path), **notice.task_env(str(tmp_path / "notice.json"), {}), **env})


def test_a_notice_mid_fit_saves_at_a_batch_exits_42_and_fit_resumes_at_the_next(tmp_path: Path) -> None:
    first = _fit(tmp_path, TF_USE_LEGACY_KERAS="1")
    assert first.returncode == notice.PLANNED_EXIT, first.stderr[-3000:]
    # Told at the end of step 27 (epoch 2, batch 8): the next batch is the one agreed on, saved at.
    assert "tfmesos: planned stop (restart): saved at epoch 2, batch 9; exiting 42" in first.stderr
    assert [int(line) for line in (tmp_path / "steps.log").read_text().split()] == list(range(29))
    (tmp_path / "notice.json").unlink()  # a new task: no notice
    second = _fit(tmp_path, TF_USE_LEGACY_KERAS="1")
    assert second.returncode == 0, second.stderr[-3000:]
    counts = collections.Counter(int(line) for line in (tmp_path / "steps.log").read_text().split())
    assert sorted(counts) == list(range(80)) and set(counts.values()) == {1}  # none twice, none missing
    assert "iterations 80" in second.stdout


def test_with_keras_3_it_says_what_it_needs(tmp_path: Path) -> None:
    done = _fit(tmp_path, TF_USE_LEGACY_KERAS="0")
    assert done.returncode == 1 and "tfmesos.BackupAndRestore needs tf-keras" in done.stderr
    assert "TF_USE_LEGACY_KERAS=1" in done.stderr
