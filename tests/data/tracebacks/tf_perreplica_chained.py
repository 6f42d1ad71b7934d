import atexit, sys
import tensorflow as tf
from tensorflow.python.distribute.values import PerReplica


class Iterator:
    def __del__(self):  # fails at shutdown, after the traceback: Python prints "Exception ignored in"
        raise RuntimeError("iterator closed twice")


held = Iterator()
atexit.register(lambda: print("2026-11-27 21:00:00.000000: W tensorflow/core/kernels/data/generator_dataset_op.cc:108] "
                              "Error occurred when finalizing GeneratorDataset iterator: FAILED_PRECONDITION: Python interpreter state is not initialized.",
                              file=sys.stderr))


def train_step():
    values = PerReplica(tuple(tf.random.uniform([32, 10]) for _ in range(2)))
    return tf.constant(values)


def fit():
    try:
        return {}["loss"]
    except KeyError:
        return train_step()


fit()
