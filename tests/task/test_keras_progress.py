"""tfmesos.KerasProgress() in one process, run as a child Python with real TensorFlow and
tf.keras.callbacks.BackupAndRestore: what it reports, read from its report file (issue 39: after a
restart the progress went back to 'step 0/1600 (0%) ... epoch 28', and the page's steps/s dropped
towards 0 at every epoch's end)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STEPS, EPOCHS = 5, 4
FIT = f"""
import os, sys, time
import numpy as np
import tensorflow as tf
import tfmesos


class Dies(tf.keras.callbacks.Callback):  # a worker killed after epoch 2's backup
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1 and sys.argv[1] == "die":
            os._exit(3)


class Validates(tf.keras.callbacks.Callback):  # the time an epoch's end takes (validation, checkpoints)
    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.3)


x = np.random.default_rng(0).random((64, 4), dtype=np.float32)
model = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
backup = tf.keras.callbacks.BackupAndRestore(os.path.join(os.getcwd(), "backup"))
model.fit(tf.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(8), epochs={EPOCHS},
          steps_per_epoch={STEPS}, verbose=0, callbacks=[tfmesos.KerasProgress(every_seconds=60), Validates(), backup,
                                                       Dies()])
"""


def _fit(tmp_path: Path, how: str, reports: Path) -> list[dict]:
    reports.touch()  # the executor's FIFO stands here: report() opens it, never creates it
    done = subprocess.run([sys.executable, "-c", FIT, how], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2",
                               "TF_USE_LEGACY_KERAS": "1", "TFMESOS_REPORT_FILE": str(reports)})
    assert done.returncode == (3 if how == "die" else 0), done.stderr[-3000:]
    return [json.loads(line) for line in reports.read_text().splitlines()]


def test_progress_goes_on_from_the_resumed_epoch_and_each_epochs_end_repeats_its_last_step(tmp_path):
    first = _fit(tmp_path, "die", tmp_path / "first.jsonl")
    again = _fit(tmp_path, "run", tmp_path / "again.jsonl")
    steps = [r["step"] for r in again if "step" in r]
    assert steps[0] == 2 * STEPS, f"the resumed epoch's first step, not 0: {again}"
    assert min(steps) == 2 * STEPS and steps == sorted(steps), again
    # Each epoch: its begin, its last batch and its end (with the epoch's logs), whatever the interval;
    # the fit's first batch (tracing the step) as the step it began at.
    assert [(r["step"], "epoch" in r) for r in first] == [
        (0, False), (0, False), (STEPS, False), (STEPS, True), (STEPS, False), (2 * STEPS, False), (2 * STEPS, True)]
    assert [r["step"] for r in again][:3] == [2 * STEPS, 2 * STEPS, 3 * STEPS], again
    assert all(r["total_steps"] == STEPS * EPOCHS for r in first + again)
    # The page's rule (steps/s between consecutive reports whose step grew) leaves the epoch's end out.
    with_steps = [r for r in again if "step" in r]
    grew = [(a, b) for a, b in zip(with_steps, with_steps[1:]) if b["step"] > a["step"]]
    assert all("epoch" not in a for a, _ in grew), "no stretch starts before an epoch's validation and ends after"


def test_keras_3_reports_the_same_way(tmp_path):
    (tmp_path / "r.jsonl").touch()
    done = subprocess.run([sys.executable, "-c", FIT.replace("input_shape=(4,)", "shape=(4,)").replace(
        "tf.keras.layers.InputLayer(", "tf.keras.Input("), "run"], capture_output=True, text=True, timeout=300,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2",
                           "TFMESOS_REPORT_FILE": str(tmp_path / "r.jsonl")})
    assert done.returncode == 0, done.stderr[-3000:]
    reports = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["step"] for r in reports][:4] == [0, 0, STEPS, STEPS] and "epoch" in reports[3], reports
