"""Keras model.fit under MultiWorkerMirroredStrategy with tfmesos.BackupAndRestore: on a planned
stop (the notice file or SIGTERM) every worker saves at the same batch and exits 42; started
again, fit resumes at the next batch.

Environment: TF_CONFIG; TF_USE_LEGACY_KERAS=1; TFMESOS_CHECKPOINT_DIR (shared by the workers);
TFMESOS_NOTICE_FILE; EPOCHS and STEPS_PER_EPOCH; STEP_LOG (steplog.py); RESUMED_STEPS (keras_steps.py).
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import tfmesos  # noqa: E402
from keras_steps import LogSteps  # noqa: E402
from steplog import digits  # noqa: E402

EPOCHS = int(os.environ.get("EPOCHS", "6"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "50"))
PER_WORKER_BATCH_SIZE = 32

strategy = tf.distribute.MultiWorkerMirroredStrategy()
workers = strategy.num_replicas_in_sync
x, y = digits()
data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x), seed=0).repeat().batch(PER_WORKER_BATCH_SIZE * workers)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(64,)),
                                 tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

backup = tfmesos.BackupAndRestore(os.path.join(os.environ["TFMESOS_CHECKPOINT_DIR"], "backup"))
resolver = strategy.cluster_resolver
steps = LogSteps(resolver.task_type, resolver.task_id)
model.fit(data, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, verbose=0, callbacks=[steps, backup])
print(f"trained {steps.end} steps; optimizer iterations {int(model.optimizer.iterations.numpy())}",
      flush=True)
