# %% [markdown]
# # ParameterServerStrategy from a notebook
#
# This file is a notebook written as cells (`# %%`, as Jupytext and VS Code read it); run it
# cell by cell, or as a script: `python examples/notebook_pss/notebook.py`. The parameter
# servers and workers run on Mesos (an embedded master here; pass `master="HOST:PORT"` or set
# MESOS_MASTER for a real one); this process is the coordinator. Nothing is downloaded: the
# data is scikit-learn's bundled digits.

# %% Start the cluster: 1 parameter server, 2 workers, each a TensorFlow server on Mesos.
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tfmesos

STEPS = int(os.environ.get("TRAIN_STEPS", "300"))

ctx = tfmesos.cluster(
    {"ps": {"count": 1, "cpus": 0.3, "mem": 768}, "worker": {"count": 2, "cpus": 0.4, "mem": 768}},
    master=os.environ.get("MESOS_MASTER"),
    quiet=False,
)
c = ctx.__enter__()  # in a notebook; a script would write `with tfmesos.cluster(...) as c:`
print(c.targets)

# %% Train with ParameterServerStrategy: this process coordinates, the workers compute.
x, y = load_digits(return_X_y=True)
x_train, x_test, y_train, y_test = train_test_split(
    (x / 16.0).astype(np.float32), y.astype(np.int64), test_size=0.2, random_state=0, stratify=y)

strategy = tf.distribute.experimental.ParameterServerStrategy(c.resolver())
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
with strategy.scope():  # the variables live on the parameter server
    w1 = tf.Variable(tf.random.stateless_normal((64, 64), seed=(0, 1)) * 0.1)
    b1 = tf.Variable(tf.zeros(64))
    w2 = tf.Variable(tf.random.stateless_normal((64, 10), seed=(0, 2)) * 0.1)
    b2 = tf.Variable(tf.zeros(10))
    optimizer = tf.keras.optimizers.Adam(0.01)
    params = [w1, b1, w2, b2]
    optimizer.build(params)


def logits_of(features):
    return tf.matmul(tf.nn.relu(tf.matmul(features, w1) + b1), w2) + b2


def dataset_fn(_):
    data = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    return data.shuffle(len(x_train), seed=0).repeat().batch(64)


iterator = iter(coordinator.create_per_worker_dataset(strategy.distribute_datasets_from_function(dataset_fn)))


@tf.function
def train_step(it):
    def step(features, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits_of(features)))
        optimizer.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    return strategy.run(step, args=next(it))


for _ in range(STEPS):
    loss = coordinator.schedule(train_step, args=(iterator,))
coordinator.join()
print(f"loss after {STEPS} steps: {float(loss.fetch()):.4f}")

# %% Evaluate here, with the trained variables read from the parameter server.
accuracy = float(np.mean(np.argmax(logits_of(x_test).numpy(), axis=1) == y_test))
print(f"test accuracy: {accuracy:.4f}")

# %% Leave: every task is killed and the framework torn down.
ctx.__exit__(None, None, None)
print("cluster closed")
