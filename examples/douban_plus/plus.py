# coding: utf-8
# douban/tfmesos' examples/plus.py, ported to TensorFlow 2 with the fewest changes: the only
# edits are the two import lines (TF1's API lives in tensorflow.compat.v1, and graph mode must
# be switched on) and tf.app.run()'s absence. Run: python plus.py MESOS_MASTER (HOST:PORT).
from __future__ import print_function

import sys
import logging
import tensorflow.compat.v1 as tf  # was: import tensorflow as tf
from tfmesos import cluster

tf.disable_eager_execution()  # new: TF1 graphs and sessions, as the original assumed


def main(argv):
    jobs_def = [
        {
            "name": "ps",
            "num": 2
        },
        {
            "name": "worker",
            "num": 2
        },
    ]
    mesos_master = sys.argv[1]
    with cluster(jobs_def, master=mesos_master, quiet=False) as c:
        with tf.device('/job:ps/task:0'):
            a = tf.constant(10)

        with tf.device('/job:ps/task:1'):
            b = tf.constant(32)

        with tf.device("/job:worker/task:1"):
            op = a + b

        with tf.Session(c.targets['/job:worker/task:0']) as sess:
            print(sess.run(op))


if __name__ == '__main__':
    logging.basicConfig()
    main(sys.argv)
