"""A tf.function whose traced body raises: TensorFlow reports it as "in user code:" with the
frames of the traced code and the exception's own line under them."""
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf


@tf.function
def step(x):
    return tf.matmul(x, tf.ones([3, 4]))


step(tf.ones([2, 5]))
