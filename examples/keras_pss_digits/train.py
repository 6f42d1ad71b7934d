"""Parameter server training with Keras model.fit, as TensorFlow's tutorial writes it, on digits.

The tutorial ("Parameter server training with ParameterServerStrategy",
tensorflow.org/tutorials/distribute/parameter_server_training), its model.fit part, with the
synthetic data replaced by scikit-learn's bundled 8x8 digits (nothing is downloaded) and two
tfmesos lines: the working directory is $TFMESOS_CHECKPOINT_DIR, and tfmesos.KerasProgress()
feeds the status page.

Roles (options.json): the ps and worker tasks run tfmesos' built-in TensorFlow server
("server": true), so this script runs on two tasks only:
- chief: the coordinator. model.fit with a dataset function (DatasetCreator) and steps_per_epoch
  sends the steps to the workers asynchronously; the variables live on the ps. Callbacks:
  TensorBoard, ModelCheckpoint (a checkpoint per epoch, for the evaluator), BackupAndRestore
  (a relaunched chief goes on from the last epoch) and KerasProgress.
- evaluator: tf.keras.utils.SidecarEvaluator, the tutorial's side-car evaluation: it evaluates
  every new checkpoint the chief writes, on the held-out test set, until the last epoch's.

Keras: tfmesos gives tasks TF_USE_LEGACY_KERAS=1 (job.legacy_keras): tf.keras is tf-keras.
Longer training: EPOCHS and STEPS_PER_EPOCH (environment, e.g. job.env in options.json).
"""
from __future__ import annotations

import os
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

EPOCHS = int(os.environ.get("EPOCHS", "6"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "50"))
GLOBAL_BATCH_SIZE = 64


def digits() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        (x / 16.0).astype(np.float32), y.astype(np.int64), test_size=0.2, random_state=0, stratify=y)
    return (x_train, y_train), (x_test, y_test)


def build_and_compile_model() -> tf.keras.Model:
    model = tf.keras.Sequential([
        tf.keras.layers.InputLayer(input_shape=(64,)),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    # The rate decays over the run. Asynchronous steps apply gradients of slightly older weights
    # (staler on a busy machine); the last steps, small, cannot throw the finished model off.
    learning_rate = tf.keras.optimizers.schedules.CosineDecay(0.01, decay_steps=EPOCHS * STEPS_PER_EPOCH, alpha=0.1)
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], steps_per_execution=10)
    return model


def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    """Runs on every worker: its shard of the training set, repeated, in its share of the batch."""
    (x_train, y_train), _ = digits()
    batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH_SIZE)
    dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(len(x_train)).repeat()
    dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.batch(batch_size).prefetch(2)


class PrintEvaluation(tf.keras.callbacks.Callback):
    """The evaluator's result for each checkpoint, on its output."""

    def on_test_end(self, logs=None):
        logs = logs or {}
        print(f"evaluated checkpoint of epoch {self.model.optimizer.iterations.numpy() // STEPS_PER_EPOCH}: "
              f"loss {logs.get('loss', float('nan')):.4f} accuracy {logs.get('accuracy', float('nan')):.4f}",
              flush=True)


def run_evaluator(working_dir: str) -> None:
    _, (x_test, y_test) = digits()
    model = build_and_compile_model()
    data = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(256)
    tf.keras.utils.SidecarEvaluator(
        model=model, data=data, checkpoint_dir=os.path.join(working_dir, "ckpt"),
        steps=None,  # the whole test set
        max_evaluations=EPOCHS,  # stop after the checkpoint of the last epoch (ckpt-<EPOCHS>)
        callbacks=[PrintEvaluation()],
    ).start()


def run_coordinator(cluster_resolver: tf.distribute.cluster_resolver.ClusterResolver, working_dir: str) -> None:
    num_ps = len(cluster_resolver.cluster_spec().as_dict().get("ps", []))
    variable_partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=(256 << 10), max_shards=max(num_ps, 1))
    strategy = tf.distribute.ParameterServerStrategy(cluster_resolver, variable_partitioner=variable_partitioner)

    with strategy.scope():
        model = build_and_compile_model()

    callbacks = [
        tf.keras.callbacks.TensorBoard(log_dir=os.path.join(working_dir, "log")),
        # ckpt-<epoch>, weights only: what SidecarEvaluator reads.
        tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(working_dir, "ckpt", "ckpt-{epoch}"),
                                           save_weights_only=True),
        tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(working_dir, "backup")),
    ]
    if KerasProgress is not None:
        callbacks.append(KerasProgress())
    model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn),
              epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, callbacks=callbacks, verbose=2)

    _, (x_test, y_test) = digits()
    predictions = np.argmax(model(x_test, training=False).numpy(), axis=1)
    print(f"final test accuracy: {float(np.mean(predictions == y_test)):.4f}", flush=True)


def main() -> None:
    cluster_resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    working_dir = os.environ.get("TFMESOS_CHECKPOINT_DIR") or tempfile.mkdtemp(prefix="keras-pss-")
    if cluster_resolver.task_type in ("worker", "ps"):
        # Outside tfmesos (with "server": false): this task serves, as in the tutorial.
        server = tf.distribute.Server(cluster_resolver.cluster_spec(), job_name=cluster_resolver.task_type,
                                      task_index=cluster_resolver.task_id, protocol="grpc", start=True)
        server.join()
    elif cluster_resolver.task_type == "evaluator":
        run_evaluator(working_dir)
    else:
        run_coordinator(cluster_resolver, working_dir)


if __name__ == "__main__":
    main()
