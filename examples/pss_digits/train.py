"""Asynchronous parameter-server training of a small MLP on scikit-learn's digits.

This script is the chief (coordinator) of a ParameterServerStrategy job. The
parameter servers and workers only run TensorFlow servers (``python -m
tfmesos.task.tfserver``); the chief builds the model on the parameter servers, ships
training steps to the workers with a ClusterCoordinator and evaluates at the end.

Environment (set by tfmesos):
  TF_CONFIG               the cluster and this task (type "chief")
  TFMESOS_CHECKPOINT_DIR  where checkpoints go; a rerun resumes from the latest.
                          Empty: a throwaway directory, no resume.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402  (after the log level is set)
import tensorflow as tf  # noqa: E402

try:  # progress for tfmesos' console, status page and metrics; nothing happens outside tfmesos
    from tfmesos import report
except ImportError:  # tfmesos is not installed where the script runs by hand
    def report(**values: object) -> bool:
        return False

# Overridable so that tests can make training last long enough to kill a task in the middle.
TOTAL_STEPS = int(os.environ.get("TRAIN_STEPS", "400"))
CHECKPOINT_EVERY = int(os.environ.get("CHECKPOINT_EVERY", "100"))
# For benchmarks/: FIRST_STEP_MARK=1 waits for the first step after (re)start and prints
# "first step at <unix time>", the moment the job is training. Off by default.
FIRST_STEP_MARK = os.environ.get("FIRST_STEP_MARK", "") == "1"
BATCH_SIZE = 64
LEARNING_RATE = 0.01
SEED = 0

Split = tuple[np.ndarray, np.ndarray]


def digits_split() -> tuple[Split, Split]:
    """The bundled 8x8 digits scaled to [0, 1], split 80/20 with a fixed seed."""
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        (x / 16.0).astype(np.float32), y.astype(np.int64),
        test_size=0.2, random_state=SEED, stratify=y)
    return (x_train, y_train), (x_test, y_test)


def build_model() -> keras.Model:
    return keras.Sequential([
        keras.Input(shape=(64,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])


def train(scratch_dir: str) -> int:
    keras.utils.set_random_seed(SEED)
    (x_train, y_train), (x_test, y_test) = digits_split()

    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.TFConfigClusterResolver())
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    with strategy.scope():  # variables are placed on the parameter servers
        model = build_model()
        optimizer = keras.optimizers.Adam(LEARNING_RATE)
        # Create the slot variables now so that a restore fills them in directly.
        optimizer.build(model.trainable_variables)
    finished = tf.Variable(0, dtype=tf.int64, trainable=False)  # on the chief

    def dataset_fn(_: tf.distribute.InputContext) -> tf.data.Dataset:
        # Every worker gets the whole (tiny) training set, shuffled and repeated;
        # the chief decides how many steps run, not the end of the data.
        data = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        return data.shuffle(len(x_train)).repeat().batch(BATCH_SIZE).prefetch(2)

    per_worker_iterator = iter(coordinator.create_per_worker_dataset(
        strategy.distribute_datasets_from_function(dataset_fn)))

    @tf.function
    def train_step(iterator: tf.types.experimental.distributed.Iterator) -> tf.Tensor:
        def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        x, y = next(iterator)
        return strategy.run(replica_step, args=(x, y))

    # Without a checkpoint directory the checkpoints go to scratch and are dropped.
    checkpoint_dir = os.environ.get("TFMESOS_CHECKPOINT_DIR", "") or scratch_dir
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=finished)
    manager = tf.train.CheckpointManager(checkpoint, checkpoint_dir, max_to_keep=2)
    # By default every parameter server would write (and read) its own shard; doing all
    # checkpoint I/O on the chief means only the chief needs the checkpoint directory.
    io_on_chief = tf.train.CheckpointOptions(
        experimental_io_device="/job:chief/replica:0/task:0/device:CPU:0")

    if manager.latest_checkpoint:
        checkpoint.restore(
            manager.latest_checkpoint, options=io_on_chief).assert_existing_objects_matched()
        print(f"resumed from step {int(finished.numpy())}", flush=True)

    started = time.monotonic()
    done = int(finished.numpy())
    marked = not FIRST_STEP_MARK
    report(step=done, total_steps=TOTAL_STEPS)
    # Loss curves for TensorBoard, beside the checkpoints (tensorboard.enabled shows them).
    summaries = tf.summary.create_file_writer(os.path.join(checkpoint_dir, "summaries"))
    while done < TOTAL_STEPS:
        # Steps run asynchronously on whichever worker is free; one that was on a
        # worker that died is rescheduled on another. join() waits for the chunk, so
        # the checkpoint after it holds every step it counts.
        chunk = min(CHECKPOINT_EVERY, TOTAL_STEPS - done)
        for _ in range(chunk):
            last_loss = coordinator.schedule(train_step, args=(per_worker_iterator,))
            if not marked:
                last_loss.fetch()
                print(f"first step at {time.time():.3f}", flush=True)
                marked = True
        coordinator.join()
        done += chunk
        finished.assign(done)
        manager.save(checkpoint_number=done, options=io_on_chief)
        loss = float(last_loss.fetch())
        print(f"step {done} loss {loss:.4f}", flush=True)
        report(step=done, loss=loss, total_steps=TOTAL_STEPS)
        with summaries.as_default():
            tf.summary.scalar("loss", loss, step=done)
        summaries.flush()
    print(f"training took {time.monotonic() - started:.1f} s", flush=True)

    predictions = np.argmax(model(x_test, training=False).numpy(), axis=1)
    accuracy = float(np.mean(predictions == y_test))
    print(f"final test accuracy: {accuracy:.4f}", flush=True)
    report(step=done, total_steps=TOTAL_STEPS, accuracy=accuracy)
    with summaries.as_default():
        tf.summary.scalar("test_accuracy", accuracy, step=done)
    summaries.close()
    return 0


def main() -> int:
    if not os.environ.get("TF_CONFIG"):
        print("train.py is the chief of a ParameterServerStrategy job and needs a TF_CONFIG "
              "with chief, worker and ps tasks; run it with tfmesos", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pss-digits-") as scratch_dir:
        return train(scratch_dir)


if __name__ == "__main__":
    sys.exit(main())
