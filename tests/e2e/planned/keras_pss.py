"""The chief of a ParameterServerStrategy job: Keras model.fit with tfmesos.BackupAndRestore. On
a planned stop (the notice file, or SIGTERM to the chief) it waits for the steps it scheduled,
saves at that batch and exits 42; started again, fit resumes at the next batch. The ps and the
workers run tfmesos' built-in server (python -m tfmesos.task.tfserver).

Environment: TF_CONFIG; TF_USE_LEGACY_KERAS=1; TFMESOS_CHECKPOINT_DIR; TFMESOS_NOTICE_FILE;
EPOCHS, STEPS_PER_EPOCH and STEPS_PER_EXECUTION; STEP_LOG (steplog.py: the steps the chief
scheduled, logged once the batch ended); RESUMED_STEPS (keras_steps.py).
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
STEPS_PER_EXECUTION = int(os.environ.get("STEPS_PER_EXECUTION", "1"))
GLOBAL_BATCH_SIZE = 64


def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    x, y = digits()
    batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).repeat().batch(batch_size)


backup = tfmesos.BackupAndRestore(os.path.join(os.environ["TFMESOS_CHECKPOINT_DIR"], "backup"))
strategy = tf.distribute.ParameterServerStrategy(tf.distribute.cluster_resolver.TFConfigClusterResolver())
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.InputLayer(input_shape=(64,)),
                                 tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  steps_per_execution=STEPS_PER_EXECUTION)


class ResumedAt(tf.keras.callbacks.Callback):
    """The optimizer's step count (tf-keras adds to it atomically) once the backup is restored:
    the updates the saved state holds."""

    def __init__(self):
        super().__init__()
        self._supports_tf_logs = True

    def on_train_batch_begin(self, batch, logs=None):
        if not getattr(self, "said", False):
            print(f"restored applied steps {int(self.model.optimizer.iterations.numpy())}", flush=True)
            self.said = True


steps = LogSteps("chief", 0)
model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH,
          verbose=0, callbacks=[ResumedAt(), steps, backup])
print(f"trained {steps.end} steps; applied steps {int(model.optimizer.iterations.numpy())}",
      flush=True)
