"""MultiWorkerMirroredStrategy custom loop with PreemptionCheckpointHandler, as TensorFlow's
documentation of the handler writes it, with no tfmesos code: a SIGTERM to any worker makes every
worker save at the step they agree on and exit 42; started again, training resumes there.

Environment: TF_CONFIG; TFMESOS_CHECKPOINT_DIR (shared by the workers); TRAIN_STEPS and
STEPS_PER_EPOCH; STEP_LOG (steplog.py: every step each worker ran); RESUMED_STEPS (steplog.py's
resumed_end: a resumed attempt ends that many steps past the save, at an epoch's end).
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from steplog import StepLog, digits, resumed_end  # noqa: E402

TRAIN_STEPS = int(os.environ.get("TRAIN_STEPS", "300"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "50"))
GLOBAL_BATCH_SIZE = 64

strategy = tf.distribute.MultiWorkerMirroredStrategy()
resolver = strategy.cluster_resolver
x, y = digits()
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat().batch(GLOBAL_BATCH_SIZE)
iterator = iter(strategy.experimental_distribute_dataset(dataset))

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    optimizer = tf.keras.optimizers.Adam(0.01)
    optimizer.build(model.trainable_variables)  # its slots exist before the handler restores them
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
    # Restores the latest checkpoint, if any, and watches SIGTERM from here on.
    preemption_handler = tf.distribute.experimental.PreemptionCheckpointHandler(
        resolver, checkpoint, os.environ["TFMESOS_CHECKPOINT_DIR"])


@tf.function
def train_step(iterator):
    def step_fn(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = tf.nn.compute_average_loss(
                tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True),
                global_batch_size=GLOBAL_BATCH_SIZE)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step_fn, args=(next(iterator),)), axis=None)


log = StepLog(resolver.task_type, resolver.task_id)
print(f"starting at step {preemption_handler.total_run_calls}", flush=True)
TRAIN_STEPS = resumed_end(preemption_handler.total_run_calls, TRAIN_STEPS, STEPS_PER_EPOCH)
for epoch in range(preemption_handler.total_run_calls // STEPS_PER_EPOCH, TRAIN_STEPS // STEPS_PER_EPOCH):
    for step in range(preemption_handler.total_run_calls % STEPS_PER_EPOCH, STEPS_PER_EPOCH):
        # A single step per run(): the handler saves between two of them.
        preemption_handler.run(train_step, iterator)
        log(epoch * STEPS_PER_EPOCH + step)
print(f"trained {TRAIN_STEPS} steps; optimizer iterations {int(optimizer.iterations.numpy())}", flush=True)
