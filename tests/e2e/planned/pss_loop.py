"""The chief of a ParameterServerStrategy custom loop (ClusterCoordinator), as
examples/pss_digits/train.py, with tfmesos' recipe for planned stops: SIGTERM is watched from the
start; at the first step after a notice (the file, or SIGTERM to the chief) the chief waits for
the steps it scheduled, saves there and exits 42; started again, it resumes at the next step.

Environment: TF_CONFIG; TFMESOS_CHECKPOINT_DIR; TFMESOS_NOTICE_FILE; TRAIN_STEPS and
CHECKPOINT_EVERY; STEP_LOG (steplog.py: the steps the chief scheduled, logged once it has
waited for them); RESUMED_STEPS (steplog.py's resumed_end: a resumed attempt ends that many steps
past the save, at a checkpoint).
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import tfmesos  # noqa: E402
from steplog import StepLog, digits, resumed_end  # noqa: E402

tfmesos.watch_sigterm()  # first thing, on the main thread: a SIGTERM asks for a save

TRAIN_STEPS = int(os.environ.get("TRAIN_STEPS", "300"))
CHECKPOINT_EVERY = int(os.environ.get("CHECKPOINT_EVERY", "100"))
BATCH_SIZE = 64

strategy = tf.distribute.ParameterServerStrategy(tf.distribute.cluster_resolver.TFConfigClusterResolver())
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.Adam(0.01)
    optimizer.build(model.trainable_variables)
    # Updates applied, counted on the ps with an atomic add: the proof that each step was applied
    # once. (Keras 3's optimizer.iterations adds by a read and a write, and loses counts when two
    # workers step at once.)
    applied = tf.Variable(0, dtype=tf.int64, trainable=False)
finished = tf.Variable(0, dtype=tf.int64)  # steps done, on the chief


def dataset_fn(_: tf.distribute.InputContext) -> tf.data.Dataset:
    x, y = digits()
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).repeat().batch(BATCH_SIZE)


iterator = iter(coordinator.create_per_worker_dataset(strategy.distribute_datasets_from_function(dataset_fn)))


@tf.function
def train_step(iterator):
    def step_fn(features, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
                labels, model(features, training=True), from_logits=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        applied.assign_add(1)
        return loss

    return strategy.run(step_fn, args=next(iterator))


checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=finished, applied=applied)
manager = tf.train.CheckpointManager(checkpoint, os.environ["TFMESOS_CHECKPOINT_DIR"], max_to_keep=2)
if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint).assert_existing_objects_matched()
done = int(finished.numpy())
print(f"starting at step {done}; restored applied steps {int(applied.numpy())}", flush=True)
TRAIN_STEPS = resumed_end(done, TRAIN_STEPS, CHECKPOINT_EVERY)
log = StepLog("chief", 0)
scheduled = done
while done < TRAIN_STEPS:
    coordinator.schedule(train_step, args=(iterator,))
    scheduled += 1
    if tfmesos.stop_requested():  # a planned stop: save at this step and go
        coordinator.join()
        log(*range(done, scheduled))
        finished.assign(scheduled)
        manager.save(checkpoint_number=scheduled)
        tfmesos.exit_planned(f"saved at step {scheduled}")
    if scheduled % CHECKPOINT_EVERY == 0 or scheduled == TRAIN_STEPS:
        coordinator.join()
        log(*range(done, scheduled))
        done = scheduled
        finished.assign(done)
        manager.save(checkpoint_number=done)
print(f"trained {TRAIN_STEPS} steps; applied steps {int(applied.numpy())}", flush=True)
