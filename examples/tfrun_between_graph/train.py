"""A TF1-style between-graph training script of the kind douban/tfmesos' tfrun ran.

Every task runs this file with its place in the cluster on the command line:

    tfrun -w 2 -s 1 -- python train.py --ps_hosts {ps_hosts} --worker_hosts {worker_hosts} \\
        --job_name {job_name} --task_index {task_index}

Parameter servers serve until they are killed; workers train asynchronously (through
tf.compat.v1's replica_device_setter) until the shared global step reaches --steps; worker 0
initialises the variables and prints the test accuracy at the end. Data: scikit-learn's digits.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

tf.disable_eager_execution()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ps_hosts", required=True)
    p.add_argument("--worker_hosts", required=True)
    p.add_argument("--job_name", required=True)
    p.add_argument("--task_index", type=int, required=True)
    p.add_argument("--steps", type=int, default=int(os.environ.get("TRAIN_STEPS", "300")))
    a = p.parse_args()
    cluster = tf.train.ClusterSpec({"ps": a.ps_hosts.split(","), "worker": a.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=a.job_name, task_index=a.task_index)
    if a.job_name == "ps":
        print(f"ps:{a.task_index} serving", flush=True)
        server.join()  # until tfrun kills it
        return 0

    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        (x / 16.0).astype(np.float32), y.astype(np.int64), test_size=0.2, random_state=0, stratify=y)
    worker = f"/job:worker/task:{a.task_index}"
    with tf.device(tf.train.replica_device_setter(worker_device=worker, cluster=cluster)):
        step = tf.train.get_or_create_global_step()
        features = tf.placeholder(tf.float32, [None, 64])
        labels = tf.placeholder(tf.int64, [None])
        init = tf.glorot_uniform_initializer(seed=0)
        w1 = tf.get_variable("w1", [64, 64], initializer=init)
        b1 = tf.get_variable("b1", [64], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("w2", [64, 10], initializer=init)
        b2 = tf.get_variable("b2", [10], initializer=tf.zeros_initializer())
        logits = tf.matmul(tf.nn.relu(tf.matmul(features, w1) + b1), w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    uninitialized = tf.report_uninitialized_variables() if a.task_index else None
    # Talk to the parameter servers and this worker only: peers need not be up.
    config = tf.ConfigProto(device_filters=["/job:ps", worker])
    rng = np.random.default_rng(a.task_index)
    with tf.Session(server.target, config=config) as sess:
        if a.task_index == 0:
            sess.run(tf.global_variables_initializer())
        else:
            while len(sess.run(uninitialized)):  # worker 0 initialises the shared variables
                time.sleep(0.2)
        print(f"worker:{a.task_index} training", flush=True)
        done = 0
        while done < a.steps:
            batch = rng.integers(0, len(x_train), 64)
            _, done = sess.run([train_op, step], {features: x_train[batch], labels: y_train[batch]})
        print(f"worker:{a.task_index} stopped at global step {done}", flush=True)
        if a.task_index == 0:
            acc = sess.run(accuracy, {features: x_test, labels: y_test})
            print(f"final test accuracy: {acc:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
