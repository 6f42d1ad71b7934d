"""Synchronous multi-worker training of a small MLP on scikit-learn's digits.

Every worker runs this script. MultiWorkerMirroredStrategy keeps a copy of the
model on each worker; every step each worker takes its share of the global batch
and the gradients are summed across workers (all-reduce) before the update.

Environment (set by tfmesos):
  TF_CONFIG               the cluster ("worker" list, optionally a "chief") and this task
  TFMESOS_CHECKPOINT_DIR  where the chief (worker 0 when there is no chief) keeps
                          checkpoints; every worker restores from it, so all of them
                          must be able to read it. Empty: no resume.
Without TF_CONFIG the script trains alone in one process.
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
TOTAL_STEPS = int(os.environ.get("TRAIN_STEPS", "300"))
CHECKPOINT_EVERY = int(os.environ.get("CHECKPOINT_EVERY", "100"))
REPORT_EVERY = 20  # steps between progress reports (tfmesos.report) and loss summaries
GLOBAL_BATCH_SIZE = 64
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


def is_chief(resolver: tf.distribute.cluster_resolver.ClusterResolver) -> bool:
    """The task that owns the checkpoints: the chief, else worker 0, else a lone process."""
    if not resolver.task_type:
        return True
    if resolver.task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return resolver.task_type == "worker" and resolver.task_id == 0 and not has_chief


def train(scratch_dir: str) -> int:
    # The strategy must exist before any other TensorFlow op runs.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    chief = is_chief(resolver)
    keras.utils.set_random_seed(SEED)  # same initial weights on every worker
    (x_train, y_train), (x_test, y_test) = digits_split()

    with strategy.scope():
        model = build_model()
        optimizer = keras.optimizers.Adam(LEARNING_RATE)
        optimizer.build(model.trainable_variables)  # slots exist before a restore
        finished = tf.Variable(0, dtype=tf.int64, trainable=False)

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        # Each worker reads its own shard and batches its share of the global batch.
        data = tf.data.Dataset.from_tensor_slices((x_train, y_train))
        data = data.shard(context.num_input_pipelines, context.input_pipeline_id)
        batch_size = context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
        return data.shuffle(len(x_train)).repeat().batch(batch_size).prefetch(2)

    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))

    @tf.function
    def train_step(batches: tf.types.experimental.distributed.Iterator) -> tf.Tensor:
        def replica_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=logits)
                # Scale by the global batch: the optimizer sums gradients over workers.
                loss = tf.nn.compute_average_loss(
                    per_example, global_batch_size=GLOBAL_BATCH_SIZE)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        x, y = next(batches)
        per_replica = strategy.run(replica_step, args=(x, y))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    @tf.function
    def summed_over_workers(value: tf.Tensor) -> tf.Tensor:
        per_replica = strategy.run(lambda: tf.identity(value))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    # Every worker must save (saving may need collectives), but only the chief's
    # copy is kept; the others write to a directory that is deleted at the end.
    checkpoint_dir = os.environ.get("TFMESOS_CHECKPOINT_DIR", "")
    own_dir = checkpoint_dir if chief and checkpoint_dir else scratch_dir
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=finished)
    manager = tf.train.CheckpointManager(checkpoint, own_dir, max_to_keep=2)

    latest = tf.train.latest_checkpoint(checkpoint_dir) if checkpoint_dir else None
    if latest:
        checkpoint.restore(latest).assert_existing_objects_matched()
    done = int(finished.numpy())
    # Workers that resumed from different steps would run different numbers of
    # steps and hang in a collective; fail fast instead.
    if int(summed_over_workers(tf.constant(done)).numpy()) != done * strategy.num_replicas_in_sync:
        print(f"workers disagree on the step to resume from ({done} here): "
              f"is {checkpoint_dir} readable by every worker?", file=sys.stderr)
        return 1
    if latest:
        print(f"resumed from step {done}", flush=True)

    started = time.monotonic()
    report(step=done, total_steps=TOTAL_STEPS)
    # Loss curves for TensorBoard, beside the chief's checkpoints (tensorboard.enabled shows them).
    summaries = (tf.summary.create_file_writer(os.path.join(checkpoint_dir, "summaries"))
                 if chief and checkpoint_dir else tf.summary.create_noop_writer())
    while done < TOTAL_STEPS:
        loss = train_step(iterator)
        done += 1
        if done % REPORT_EVERY == 0 or done == TOTAL_STEPS:
            report(step=done, loss=float(loss), total_steps=TOTAL_STEPS)
            with summaries.as_default():
                tf.summary.scalar("loss", float(loss), step=done)
        if done % CHECKPOINT_EVERY == 0 or done == TOTAL_STEPS:
            finished.assign(done)
            manager.save(checkpoint_number=done)
            if chief:
                print(f"step {done} loss {float(loss):.4f}", flush=True)
    # The weights are identical on every worker; the chief alone reports.
    if chief:
        print(f"training took {time.monotonic() - started:.1f} s", flush=True)
        predictions = np.argmax(model(x_test, training=False).numpy(), axis=1)
        accuracy = float(np.mean(predictions == y_test))
        print(f"final test accuracy: {accuracy:.4f}", flush=True)
        report(step=done, total_steps=TOTAL_STEPS, accuracy=accuracy)
    summaries.close()
    return 0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="mwms-digits-") as scratch_dir:
        return train(scratch_dir)


if __name__ == "__main__":
    sys.exit(main())
