"""Multi-worker training with Keras, as TensorFlow's tutorial writes it, on scikit-learn's digits.

The tutorial ("Multi-worker training with Keras", tensorflow.org/tutorials/distribute/multi_worker_with_keras)
with MNIST replaced by the bundled 8x8 digits (nothing is downloaded) and two tfmesos lines: the
backup directory is $TFMESOS_CHECKPOINT_DIR, and tfmesos.KerasProgress() feeds the status page.

Every worker runs this script with its own TF_CONFIG (tfmesos sets it). MultiWorkerMirroredStrategy
keeps a copy of the model on each worker and sums the gradients across workers every step.
BackupAndRestore saves the training state at the end of every epoch; when a worker dies and the
job comes back, model.fit goes on from the last epoch it saved instead of epoch 1. Worker 0 (the
chief here) saves the trained model; the other workers write theirs to a temporary directory that
is deleted, as the tutorial does (saving may need every worker).

Keras: tfmesos gives tasks TF_USE_LEGACY_KERAS=1 (job.legacy_keras), so tf.keras is tf-keras, whose
model.fit runs under MultiWorkerMirroredStrategy; Keras 3's does not.
Longer training: EPOCHS and STEPS_PER_EPOCH (environment, e.g. job.env in options.json).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

try:
    from tfmesos import KerasProgress
except ImportError:  # run by hand without tfmesos
    KerasProgress = None

EPOCHS = int(os.environ.get("EPOCHS", "10"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "20"))
PER_WORKER_BATCH_SIZE = 32


def digits_dataset(batch_size: int) -> tuple[tf.data.Dataset, tuple[np.ndarray, np.ndarray]]:
    """The training set as a repeated, shuffled dataset, and the held-out test set."""
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        (x / 16.0).astype(np.float32), y.astype(np.int64), test_size=0.2, random_state=0, stratify=y)
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train)).repeat().batch(batch_size)
    return train, (x_test, y_test)


def build_and_compile_model() -> tf.keras.Model:
    model = tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.Adam(learning_rate=0.01),
                  metrics=["accuracy"])
    return model


def _is_chief(task_type: str | None, task_id: int | None, cluster: dict) -> bool:
    # Worker 0 is the chief when the cluster has no "chief" task (the tutorial's rule).
    return task_type is None or task_type == "chief" or (
        task_type == "worker" and task_id == 0 and "chief" not in cluster)


def write_filepath(filepath: str, task_type: str | None, task_id: int | None, cluster: dict) -> str:
    """The chief writes to ``filepath``; the others to a temporary directory (deleted after)."""
    if _is_chief(task_type, task_id, cluster):
        return filepath
    return os.path.join(tempfile.mkdtemp(prefix=f"worker{task_id}-"), os.path.basename(filepath))


def main() -> None:
    tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    cluster = tf_config.get("cluster", {})
    num_workers = len(cluster.get("worker", [])) or 1

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # before any other TensorFlow op
    global_batch_size = PER_WORKER_BATCH_SIZE * num_workers
    train, (x_test, y_test) = digits_dataset(global_batch_size)

    with strategy.scope():
        model = build_and_compile_model()

    checkpoint_dir = os.environ.get("TFMESOS_CHECKPOINT_DIR") or tempfile.mkdtemp(prefix="keras-mwms-")
    callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(checkpoint_dir, "backup"))]
    if KerasProgress is not None:
        callbacks.append(KerasProgress())
    model.fit(train, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, callbacks=callbacks, verbose=2)

    task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
    _, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    if _is_chief(task_type, task_id, cluster):
        print(f"final test accuracy: {accuracy:.4f}", flush=True)

    model_path = write_filepath(os.path.join(checkpoint_dir, "model.keras"), task_type, task_id, cluster)
    model.save(model_path)
    if not _is_chief(task_type, task_id, cluster):
        shutil.rmtree(os.path.dirname(model_path), ignore_errors=True)


if __name__ == "__main__":
    main()
